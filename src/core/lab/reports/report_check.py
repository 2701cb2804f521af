"""The numbers a report.json may hold: every reader checks them before it believes them.

``alisio.core.lab.reports.report_json.decode_report`` checks the shape (msgspec); this module checks what types cannot state, so a report edited
by hand, truncated by a tool or written by a buggy version is refused with the file and the field instead of
reaching the statistics (which raise on impossible counts) or, worse, being compared as if it were true.

Rules a report keeps (``build_report`` never writes one that breaks them; a property test holds it to that):

- counts are integers >= 0; per task ``judged = passes + fails + budgetExceeded`` and
  ``runs = judged + errored``; reasons, when listed, add up to ``budgetExceeded`` / ``errored``;
- rates, estimates and ratios are finite numbers; rates and estimates lie in [0, 1]; ``successRate`` is
  ``passes / judged`` (absent when nothing was judged) and lies inside its interval; observed pass@k and
  pass^k agree with the counts;
- measured figures (turns, tool calls, wall time, tokens, costs) are >= 0 and ``tokens.total`` is
  ``input + output``;
- task ids are unique; the summary's totals are the sums of its tasks; ``k`` is at least 1.

``report_problems`` lists every violation as ``(field path, message)`` with wire (camelCase) names;
``describe`` turns one into the line users see (``task fix-add: judged: at least 0, got -3``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from alisio.core.lab.reports.report import Estimated, MeasuredBlock, Report, Summary, TaskReport
from alisio.core.shape import FieldPath, Problem, json_repr

__all__ = ["describe", "report_problems"]

_TOLERANCE = 1e-9
"""Rates are stored as floats: ``passes / judged`` read back may differ in the last bits, never more."""

Number = int | float | None


def report_problems(report: Report) -> list[Problem]:
    """Every impossible number of ``report`` (see the module docstring), in document order; ``[]`` if none."""
    problems = _conditions(report)
    seen: set[str] = set()
    for index, task in enumerate(report.tasks):
        where: FieldPath = ("tasks", index)
        if task.task_id in seen:
            problems.append(((*where, "taskId"), f"duplicate task id {json_repr(task.task_id)}"))
        seen.add(task.task_id)
        problems += _task(task, where)
    return problems + _summary(report.summary, report.tasks)


def describe(problem: Problem, report: Report) -> str:
    """One line: ``task <id>: <field>: <what>`` for a task's field, else ``<field path>: <what>``."""
    path, message = problem
    if len(path) > 2 and path[0] == "tasks" and isinstance(path[1], int) and path[2] != "taskId":
        task_id = report.tasks[path[1]].task_id
        shown = task_id if _PLAIN.fullmatch(task_id) else json_repr(task_id)
        return f"task {shown}: {_dotted(path[2:])}: {message}"
    return f"{_dotted(path)}: {message}"


_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def _dotted(path: FieldPath) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path).lstrip(".")


# --- field rules ------------------------------------------------------------------------------------------


def _at_least(where: FieldPath, fields: Iterable[tuple[str, Number]], low: float = 0) -> list[Problem]:
    """Each present number must be finite and >= ``low``."""
    problems: list[Problem] = []
    for name, value in fields:
        if value is None:
            continue
        if not math.isfinite(value):
            problems.append(((*where, name), f"must be a finite number, got {value}"))
        elif value < low:
            problems.append(((*where, name), f"at least {low:g}, got {value}"))
    return problems


def _unit(where: FieldPath, fields: Iterable[tuple[str, float | None]]) -> list[Problem]:
    """Each present number must be finite and in [0, 1]."""
    return [
        ((*where, name), f"must be a number in [0, 1], got {value}")
        for name, value in fields
        if value is not None and not (math.isfinite(value) and 0.0 <= value <= 1.0)
    ]


def _sum_of(where: FieldPath, name: str, total: int, parts: Iterable[tuple[str, int]]) -> list[Problem]:
    """``total`` must equal the sum of ``parts``: an impossible count otherwise."""
    named = list(parts)
    if total == sum(value for _, value in named):
        return []
    terms = " + ".join(part for part, _ in named)
    values = " + ".join(str(value) for _, value in named)
    return [((*where, name), f"{total} is not {terms} ({values})")]


# --- blocks -----------------------------------------------------------------------------------------------


def _conditions(report: Report) -> list[Problem]:
    conditions = report.conditions
    where: FieldPath = ("conditions",)
    problems = _at_least(where, [("k", conditions.k)], low=1)
    problems += _at_least(
        (*where, "compaction"), [("maxContextChars", conditions.compaction.max_context_chars)]
    )
    problems += _unit((*where, "compaction"), [("threshold", conditions.compaction.threshold)])
    if conditions.rates is not None:
        rates = conditions.rates
        named: list[tuple[str, Number]] = [("inputRate", rates.input_rate), ("outputRate", rates.output_rate)]
        named += [("cachedInputRate", rates.cached_input_rate), ("cacheWriteRate", rates.cache_write_rate)]
        problems += _at_least((*where, "rates"), [*named, ("reasoningRate", rates.reasoning_rate)])
    return problems + _at_least((), [("plannedRuns", report.planned_runs)])


def _task(task: TaskReport, where: FieldPath) -> list[Problem]:
    counts = [
        ("runs", task.runs),
        ("judged", task.judged),
        ("passes", task.passes),
        ("fails", task.fails),
        ("budgetExceeded", task.budget_exceeded),
        ("errored", task.errored),
    ]
    problems = _at_least(where, counts)
    if problems:  # the sums below would only repeat a negative count
        return problems
    problems += _sum_of(
        where,
        "judged",
        task.judged,
        [("passes", task.passes), ("fails", task.fails), ("budgetExceeded", task.budget_exceeded)],
    )
    problems += _sum_of(where, "runs", task.runs, [("judged", task.judged), ("errored", task.errored)])
    for name, reasons, total in (
        ("budgetReasons", task.budget_reasons, task.budget_exceeded),
        ("errorReasons", task.error_reasons, task.errored),
    ):
        problems += [
            p for i, r in enumerate(reasons) for p in _at_least((*where, name, i), [("count", r.count)])
        ]
        if reasons and sum(r.count for r in reasons) != total:
            problems.append(
                ((*where, name), f"the counts add up to {sum(r.count for r in reasons)}, not {total}")
            )
    problems += _rates(task, where)
    problems += _unit(
        where, [("passAtKEstimate", task.pass_at_k_estimate), ("passHatKEstimate", task.pass_hat_k_estimate)]
    )
    problems += _at_least(
        where,
        [
            ("cachedInputRatio", task.cached_input_ratio),
            ("cachedInputRuns", task.cached_input_runs),
            ("cachedInputTokens", task.cached_input_tokens),
            ("contextUsed", task.context_used),
        ],
    )
    if task.context_used is not None and task.context_used > task.judged:
        problems.append(
            ((*where, "contextUsed"), f"{task.context_used} is more than the {task.judged} judged runs")
        )
    if task.cached_input_runs > task.judged:
        problems.append(
            (
                (*where, "cachedInputRuns"),
                f"{task.cached_input_runs} is more than the {task.judged} judged runs",
            )
        )
    return (
        problems
        + _measured(task.measured, (*where, "measured"))
        + _estimated(task.estimated, (*where, "estimated"))
    )


def _rates(task: TaskReport, where: FieldPath) -> list[Problem]:
    """successRate, its interval and the observed pass@k / pass^k against the counts."""
    rate, interval = task.success_rate, task.interval
    problems = _unit(where, [("successRate", rate)])
    if interval is not None:
        problems += _unit((*where, "interval"), [("low", interval.low), ("high", interval.high)])
        if interval.low > interval.high:
            problems.append(((*where, "interval"), f"low {interval.low} is above high {interval.high}"))
    if problems:
        return problems
    if rate is not None and task.judged == 0:
        problems.append(((*where, "successRate"), f"{rate} with no judged run (it must be absent)"))
    elif rate is not None and abs(rate - task.passes / task.judged) > _TOLERANCE:
        problems.append(
            ((*where, "successRate"), f"{rate} is not passes / judged ({task.passes}/{task.judged})")
        )
    elif (
        rate is not None
        and interval is not None
        and not interval.low - _TOLERANCE <= rate <= interval.high + _TOLERANCE
    ):
        problems.append(
            ((*where, "interval"), f"[{interval.low}, {interval.high}] does not hold successRate {rate}")
        )
    if task.pass_at_k is not None and task.pass_at_k != (task.passes > 0):
        problems.append(((*where, "passAtK"), f"{str(task.pass_at_k).lower()} with {task.passes} passes"))
    if task.pass_hat_k is not None and task.pass_hat_k != (task.passes == task.judged):
        problems.append(
            (
                (*where, "passHatK"),
                f"{str(task.pass_hat_k).lower()} with {task.passes} of {task.judged} passing",
            )
        )
    return problems


def _measured(block: MeasuredBlock, where: FieldPath) -> list[Problem]:
    problems = _at_least(
        where,
        [
            ("turns", block.turns),
            ("toolCalls", block.tool_calls),
            ("compactions", block.compactions),
            ("wallMsTotal", block.wall_ms_total),
            ("wallMsMedian", block.wall_ms_median),
            ("wallMsVariance", block.wall_ms_variance),
            ("msPerSuccess", block.ms_per_success),
            ("tokensPerSuccess", block.tokens_per_success),
            ("tokensRuns", block.tokens_runs),
        ],
    )
    problems += [
        p
        for i, c in enumerate(block.incidents)
        for p in _at_least((*where, "incidents", i), [("count", c.count)])
    ]
    tokens = block.tokens
    if tokens is not None:
        at = (*where, "tokens")
        fields = [
            ("input", tokens.input),
            ("output", tokens.output),
            ("total", tokens.total),
            ("reasoning", tokens.reasoning),
        ]
        negative = _at_least(at, fields)
        problems += negative or _sum_of(
            at, "total", tokens.total, [("input", tokens.input), ("output", tokens.output)]
        )
    return problems


def _estimated(block: Estimated | None, where: FieldPath) -> list[Problem]:
    if block is None:
        return []
    return _at_least(where, [("costUsd", block.cost_usd), ("costPerSuccessUsd", block.cost_per_success_usd)])


def _summary(summary: Summary, tasks: tuple[TaskReport, ...]) -> list[Problem]:
    where: FieldPath = ("summary",)
    totals = [
        ("runs", summary.runs, sum(t.runs for t in tasks)),
        ("judged", summary.judged, sum(t.judged for t in tasks)),
        ("passes", summary.passes, sum(t.passes for t in tasks)),
        ("fails", summary.fails, sum(t.fails for t in tasks)),
        ("budgetExceeded", summary.budget_exceeded, sum(t.budget_exceeded for t in tasks)),
        ("errored", summary.errored, sum(t.errored for t in tasks)),
        ("tasks", summary.tasks, len(tasks)),
    ]
    problems: list[Problem] = [
        ((*where, name), f"{value} is not the sum over the tasks ({expected})")
        for name, value, expected in totals
        if value != expected
    ]
    for name, value in (
        ("lowPowerTasks", summary.low_power_tasks),
        ("tasksPassAtK", summary.tasks_pass_at_k),
        ("tasksPassHatK", summary.tasks_pass_hat_k),
    ):
        if not 0 <= value <= len(tasks):
            problems.append(((*where, name), f"{value} is not a number of tasks (0 to {len(tasks)})"))
    problems += _unit(
        where, [("passAtKMean", summary.pass_at_k_mean), ("passHatKMean", summary.pass_hat_k_mean)]
    )
    clustered = summary.success_rate
    if clustered is not None:
        at = (*where, "successRate")
        problems += _unit(at, [("mean", clustered.mean)]) + _at_least(
            at, [("stderr", clustered.stderr), ("tasks", clustered.tasks)]
        )
    cached = summary.cached_input
    if cached is not None:
        at = (*where, "cachedInput")
        problems += _at_least(
            at,
            [
                ("tokens", cached.tokens),
                ("inputTokens", cached.input_tokens),
                ("ratio", cached.ratio),
                ("runsReporting", cached.runs_reporting),
                ("runsJudged", cached.runs_judged),
            ],
        )
    return (
        problems
        + _measured(summary.measured, (*where, "measured"))
        + _estimated(summary.estimated, (*where, "estimated"))
    )
