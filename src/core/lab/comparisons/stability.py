"""Which tasks flap: ``alisio eval stability`` over several stored reports of the same suite version.

Input: each report's label, suite id and version, and its runs (``RunRecord``, from runs.jsonl). For every
task:

- its pass rate per report and pooled over all of them, each with a 95% Wilson interval (judged runs only:
  ``error`` runs count nowhere);
- a **flip**: a report in which the task's pass^k and pass@k disagree (some of its runs passed, some did
  not), or whose rate lies outside the pooled interval (the task moved between reports). The **flip rate**
  is the share of the reports holding the task in which it flipped; a task with a flip rate above 0 is
  unstable;
- how alike its judged runs were over all the reports (as the reliability profile of one report: the
  coefficient of variation of tokens, tool calls and wall time, and the tool-call sequences' similarity);
- for an unstable task, a first hint of the cause, from its failed runs: what decided them (the budget of a
  ``budget_exceeded`` run, else the verifiers that failed or errored) and the incidents they had in common
  ("fails only by maxWallMs", "check timeout in 4 of 5 failures", "fails only after compaction").

Tasks are sorted from most to least unstable: flip rate, then the pooled rate's closeness to 0.5, then id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.lab.reports.profile import consistency
from alisio.core.lab.reports.profile_block import TaskConsistency
from alisio.core.lab.runs.records import RunRecord, RunStatus, VerifierStatus
from alisio.core.stats.rates import Interval, wilson_interval

__all__ = [
    "ReportRate",
    "ReportRuns",
    "Stability",
    "TaskStability",
    "failure_hints",
    "render_stability",
    "stability",
]


class ReportRuns(Frozen, frozen=True, kw_only=True):
    """One stored report: what ``stability`` reads of it."""

    label: str
    """How the report is named in the output (its run id or directory)."""
    suite_id: str
    suite_version: str
    runs: tuple[RunRecord, ...]


class ReportRate(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One task in one report."""

    report: str
    passes: int
    judged: int
    rate: float | None = None
    interval: Interval | None = None
    flipped: bool = False
    why: str = ""
    """Why it counts as a flip: "mixed" (pass^k and pass@k disagree) or "moved" (outside the pooled interval)."""


class TaskStability(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One task across the reports."""

    task_id: str
    passes: int
    judged: int
    rate: float | None = None
    interval: Interval | None = None
    reports: tuple[ReportRate, ...]
    flips: int
    flip_rate: float
    unstable: bool
    hints: tuple[str, ...] = ()
    consistency: TaskConsistency | None = None
    """How alike the task's judged runs were over all the reports: the CV of tokens, tool calls and wall time,
    and the mean pairwise similarity of their tool-call sequences (``alisio.core.lab.reports.profile.consistency``)."""


class Stability(Frozen, frozen=True, kw_only=True):
    """The stability of a suite's tasks over ``reports``."""

    suite_id: str
    suite_version: str
    reports: tuple[str, ...]
    tasks: tuple[TaskStability, ...]
    """Most unstable first."""
    unstable: tuple[str, ...]
    """The ids of the unstable tasks, in the same order."""


def _passed(record: RunRecord) -> bool:
    return record.status is RunStatus.PASS


def _report_rate(label: str, runs: Sequence[RunRecord], pooled: Interval | None) -> ReportRate:
    judged = [run for run in runs if run.judged]
    passes = sum(1 for run in judged if _passed(run))
    if not judged:
        return ReportRate(report=label, passes=0, judged=0)
    rate = passes / len(judged)
    mixed = 0 < passes < len(judged)
    moved = pooled is not None and not pooled.low <= rate <= pooled.high
    why = "mixed" if mixed else "moved" if moved else ""
    return ReportRate(
        report=label,
        passes=passes,
        judged=len(judged),
        rate=rate,
        interval=wilson_interval(passes, len(judged)),
        flipped=bool(why),
        why=why,
    )


def _deciders(record: RunRecord) -> tuple[str, ...]:
    """What decided a failed run: its budget, else its failing or erroring verifiers (with "timeout")."""
    if record.status is RunStatus.BUDGET_EXCEEDED:
        return (f"by {record.reason or 'a budget'}",)
    return tuple(
        f"{v.id} timeout" if "timed out" in v.detail else v.id
        for v in record.verifiers
        if v.status is not VerifierStatus.PASS
    )


def failure_hints(runs: Sequence[RunRecord]) -> tuple[str, ...]:
    """First hints of why a task fails, from its judged runs: what decided the failures, what they share."""
    judged = [run for run in runs if run.judged]
    failures = [run for run in judged if not _passed(run)]
    passes = [run for run in judged if _passed(run)]
    if not failures:
        return ()
    n = len(failures)
    hints: list[str] = []
    decided: Counter[str] = Counter(d for run in failures for d in set(_deciders(run)))
    for decider, count in decided.most_common():
        if decider.startswith("by ") and count == n:
            hints.append(f"fails only {decider}")
        else:
            hints.append(f"{decider.removeprefix('by ')} in {count} of {n} failures")
    in_failures: Counter[str] = Counter(k for run in failures for k in {i.kind for i in run.incidents})
    in_passes: Counter[str] = Counter(k for run in passes for k in {i.kind for i in run.incidents})
    for kind, count in sorted(in_failures.items(), key=lambda item: (-item[1], item[0])):
        if count == n and not in_passes[kind]:
            hints.append(f"fails only after {kind}")
        elif count * 2 > n:
            hints.append(f"{kind} in {count} of {n} failures and {in_passes[kind]} of {len(passes)} passes")
    return tuple(hints)


def _task(task_id: str, reports: Sequence[ReportRuns]) -> TaskStability:
    by_report = [(r.label, [run for run in r.runs if run.task_id == task_id]) for r in reports]
    by_report = [(label, runs) for label, runs in by_report if runs]
    judged = [run for _, runs in by_report for run in runs if run.judged]
    passes = sum(1 for run in judged if _passed(run))
    pooled = wilson_interval(passes, len(judged)) if judged else None
    rates = tuple(_report_rate(label, runs, pooled) for label, runs in by_report)
    counted = [rate for rate in rates if rate.judged]
    flips = sum(1 for rate in counted if rate.flipped)
    flip_rate = flips / len(counted) if counted else 0.0
    return TaskStability(
        task_id=task_id,
        passes=passes,
        judged=len(judged),
        rate=passes / len(judged) if judged else None,
        interval=pooled,
        reports=rates,
        flips=flips,
        flip_rate=flip_rate,
        unstable=flips > 0,
        hints=failure_hints(judged) if flips else (),
        consistency=consistency(task_id, judged) if judged else None,
    )


def _instability(task: TaskStability) -> tuple[float, float, str]:
    closeness = 1.0 if task.rate is None else abs(task.rate - 0.5)
    return (-task.flip_rate, closeness, task.task_id)


def stability(reports: Sequence[ReportRuns]) -> Result[Stability, str]:
    """The stability of every task over ``reports`` (at least two, all of one suite id and version)."""
    if len(reports) < 2:
        return Failure("needs at least two reports of the same suite version")
    first = reports[0]
    for report in reports[1:]:
        if (report.suite_id, report.suite_version) != (first.suite_id, first.suite_version):
            return Failure(
                f"{report.label} is {report.suite_id} {report.suite_version}, but {first.label} is "
                f"{first.suite_id} {first.suite_version}: stability pools reports of one suite version"
            )
    ids = sorted({run.task_id for report in reports for run in report.runs})
    tasks = tuple(sorted((_task(task_id, reports) for task_id in ids), key=_instability))
    return Success(
        Stability(
            suite_id=first.suite_id,
            suite_version=first.suite_version,
            reports=tuple(report.label for report in reports),
            tasks=tasks,
            unstable=tuple(task.task_id for task in tasks if task.unstable),
        )
    )


def _rate(passes: int, judged: int, interval: Interval | None) -> str:
    if not judged:
        return "-"
    shown = f"{passes}/{judged}"
    return shown if interval is None else f"{shown} [{interval.low:.2f}, {interval.high:.2f}]"


def _alike(c: TaskConsistency | None) -> str:
    """The four consistency cells (``n/a`` for an undefined one)."""
    values = (None,) * 4 if c is None else (c.tokens_cv, c.tool_calls_cv, c.wall_cv, c.tool_similarity)
    return " | ".join("n/a" if v is None else f"{v:.2f}" for v in values)


def render_stability(result: Stability) -> str:
    """A Markdown table (task, flip rate, pooled rate, one column per report), then the hints."""
    lines = [
        f"# Stability of {result.suite_id} {result.suite_version} over {len(result.reports)} reports",
        "",
        "| task | flip rate | pooled | CV tokens | CV tool calls | CV wall time | tool-call similarity | "
        + " | ".join(result.reports)
        + " |",
        "|---|---|---|---|---|---|---|" + "---|" * len(result.reports),
    ]
    for task in result.tasks:
        cells = {rate.report: rate for rate in task.reports}
        per_report = [
            _rate(cell.passes, cell.judged, None) + (f" ({cell.why})" if cell.flipped else "")
            if (cell := cells.get(label)) is not None
            else "-"
            for label in result.reports
        ]
        flip = f"{task.flips}/{len([r for r in task.reports if r.judged])}"
        pooled = _rate(task.passes, task.judged, task.interval)
        alike = _alike(task.consistency)
        lines.append(f"| {task.task_id} | {flip} | {pooled} | {alike} | " + " | ".join(per_report) + " |")
    lines += [
        "",
        "CV: standard deviation over mean across the task's judged runs of all the reports; tool-call similarity: "
        "the mean over pairs of runs of 2·LCS/(|a| + |b|) of their tool names (1: the same calls every time).",
        "",
    ]
    if not result.unstable:
        lines.append("No task flipped.")
    for task in result.tasks:
        if task.unstable:
            lines.append(f"- {task.task_id}: " + ("; ".join(task.hints) or "no failure to explain"))
    return "\n".join(lines) + "\n"
