"""What a report shows, decided once: the view model that report.md, report.html and the CI outputs render.

``report_view`` turns a Report (and, when the caller has them, its run records) into plain values: the
title, the notices, the conditions, the task, measured and estimated tables as text cells, the summary
lines, the runs that did not pass and the task x repetition grid. Each renderer only lays them out, so
Markdown and HTML can never disagree on a number or on what is left out.

Rules this module keeps:

- The answer comes first (``answer_line``: the suite rate with its interval, the runs, what made them).
- Every condition is shown: a number without its conditions is an anecdote. A replay report says replay
  measures the harness, not the model; a scripted live run says it measures no model.
- Measured and Estimated are separate tables, never summed; absent figures are "not reported" or "n/a".
- The runs that did not pass are listed grouped by message (``alisio.core.lab.outputs.failing``): at most
  ``FAILING_SHOWN`` groups (the count of the others is kept).
- The conditions that name the run (the agent, the script: ``alisio.core.lab.reports.naming``) are rows like every
  other; a scripted run's mode reads ``scripted``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from alisio.core.base import Frozen
from alisio.core.harness.prices import rate_items, rates_text
from alisio.core.lab.outputs.failing import FailureGroup, failing_runs, group_failures
from alisio.core.lab.outputs.formats import (
    NOT_REPORTED,
    SUITE_INTERVAL_NOTE,
    SUITE_RATE_NOTE,
    context_use,
    format_counts,
    format_num,
    format_rate,
    format_seconds,
    format_seconds2,
    format_usd,
    measured_note,
    pct,
    suite_interval_text,
)
from alisio.core.lab.outputs.notices import Notice, report_notices
from alisio.core.lab.reports.naming import mode_text, naming_brief, run_naming
from alisio.core.lab.reports.report import (
    AnswerSource,
    Conditions,
    MeasuredBlock,
    Report,
    TaskReport,
    Tokens,
)
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.stats.verdict import format_interval
from alisio.core.text import plural

__all__ = [
    "FAILING_SHOWN",
    "RATE_COLUMN",
    "Condition",
    "GridCell",
    "GridRow",
    "Notice",
    "ReportView",
    "Table",
    "answer_line",
    "condition_items",
    "report_view",
    "run_grid",
    "suite_rate_line",
    "variant_grid",
]

FAILING_SHOWN = 100
"""The groups of runs that did not pass listed by report.md and report.html; the others are counted."""


class Condition(Frozen, frozen=True, kw_only=True):
    """One measurement condition; ``code`` marks a value shown as code (a hash)."""

    name: str
    value: str
    code: bool = False


class Table(Frozen, frozen=True, kw_only=True):
    """A table as text cells; with ``total`` its last row is the suite's total."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    total: bool = False


class GridCell(Frozen, frozen=True, kw_only=True):
    """One planned run: its status, ``None`` when it has no record (the command stopped first)."""

    repetition: int
    status: RunStatus | None
    variant: str | None = None


class GridRow(Frozen, frozen=True, kw_only=True):
    """A task's runs in repetition order (for variants: each repetition's runs, one per variant)."""

    task_id: str
    cells: tuple[GridCell, ...]


class ReportView(Frozen, frozen=True, kw_only=True):
    """Everything a report page shows, as text; the renderers only lay it out."""

    title: str
    answer: str
    """The one line a reader came for: the suite rate with its interval, the runs, and what made them."""
    notices: tuple[Notice, ...]
    conditions: tuple[Condition, ...]
    tasks: Table
    reasons: tuple[str, ...]
    """``fix-add: budget_exceeded by maxWallMs 2``, one line per task and kind."""
    tasks_note: str
    summary: tuple[str, ...]
    """Lines; an empty line separates paragraphs."""
    measured: Table
    measured_note: str
    estimated: Table | None
    """``None`` without rates (``estimated_note`` says so)."""
    estimated_note: str
    failing: tuple[FailureGroup, ...]
    """The runs that did not pass grouped by message (``alisio.core.lab.outputs.failing``), at most
    ``FAILING_SHOWN`` groups, in the order of their first run (task and repetition order)."""
    failing_total: int
    """All the runs that did not pass (more than ``failing`` holds when the list was cut)."""
    runs_known: bool
    """Whether the records were given: without them nothing is said about single runs."""
    grid: tuple[GridRow, ...]


# --- conditions, notices, tables -----------------------------------------------------------------------------


def condition_items(c: Conditions) -> tuple[Condition, ...]:
    """The conditions in the order every report shows them."""
    rates = "none (no cost estimate)"
    if c.rates is not None:
        rates = rates_text(c.rates, c.rates_from)
    endpoint = (Condition(name="Endpoint", value=c.endpoint),) if c.endpoint is not None else ()
    compaction = f"threshold {c.compaction.threshold:g}, maxContextChars {c.compaction.max_context_chars:,}"
    return (
        Condition(name="Suite", value=f"{c.suite_id} {c.suite_version}"),
        Condition(name="Suite content hash", value=c.suite_hash, code=True),
        Condition(name="Harness version", value=c.harness_version),
        Condition(name="Configuration hash", value=c.config_hash, code=True),
        Condition(name="Provider", value=c.provider),
        Condition(name="Model", value=c.model),
        *_served(c),
        *endpoint,
        *(Condition(name=n.name, value=n.value, code=n.code) for n in run_naming(c) if n.present),
        Condition(name="Mode", value=mode_text(c)),
        Condition(name="k (repetitions per task)", value=str(c.k)),
        Condition(name="Seed (run order only)", value=str(c.seed)),
        Condition(name="Compaction", value=compaction),
        Condition(name="Rates", value=rates),
        Condition(name="Sandbox", value=c.sandbox),
        Condition(name="Run", value=f"{c.run_id} ({c.created_at})"),
        *((Condition(name="Label", value=c.label),) if c.label is not None else ()),
    )


def _served(c: Conditions) -> tuple[Condition, ...]:
    """What the responses said served them (model names, system_fingerprint), when any said."""
    if not c.served_models and not c.system_fingerprints:
        return ()
    value = ", ".join(c.served_models) or "not named"
    if c.system_fingerprints:
        value += f" (system_fingerprint {', '.join(c.system_fingerprints)})"
    return (Condition(name="Served by", value=value),)


def _pass_k(observed: bool | None, estimate: float | None, judged: int) -> str:
    """yes/no over exactly k judged runs; the unbiased estimate over more; n/a over fewer."""
    if observed is not None:
        return "yes" if observed else "no"
    if estimate is not None:
        return f"{estimate:.2f} (est.)"
    return f"n/a ({judged} judged)"


def _task_row(t: TaskReport, used: bool) -> tuple[str, ...]:
    return (
        t.task_id,
        str(t.judged),
        str(t.passes),
        str(t.fails),
        str(t.budget_exceeded),
        str(t.errored),
        format_rate(t.success_rate, t.interval),
        *((context_use(t.context_used, t.judged),) if used else ()),
        _pass_k(t.pass_at_k, t.pass_at_k_estimate, t.judged),
        _pass_k(t.pass_hat_k, t.pass_hat_k_estimate, t.judged),
        "low power" if t.low_power else "",
    )


RATE_COLUMN = 6
"""The column of the tasks table that holds the success rate (``80.0% [37.6%, 96.4%]``)."""


def _tasks_table(report: Report) -> Table:
    k = report.conditions.k
    used = report.conditions.context is not None
    live = report.conditions.mode is AnswerSource.LIVE
    rate_head = "Success rate (Wilson 95%)" if live else "Success rate (observed)"
    header = (
        "Task",
        "judged",
        "pass",
        "fail",
        "budget_exceeded",
        "error",
        rate_head,
        *(("used context",) if used else ()),
        f"pass@{k}",
        f"pass^{k}",
    )
    return Table(header=(*header, "note"), rows=tuple(_task_row(t, used) for t in report.tasks))


def _reasons(tasks: Sequence[TaskReport]) -> tuple[str, ...]:
    lines = []
    for t in tasks:
        if t.budget_reasons:
            lines.append(f"{t.task_id}: budget_exceeded by {format_counts(t.budget_reasons)}")
        if t.error_reasons:
            lines.append(f"{t.task_id}: error ({format_counts(t.error_reasons)})")
    return tuple(lines)


def _tasks_note(k: int, used: bool) -> str:
    note = (
        "judged = pass + fail + budget_exceeded; errored runs are infrastructure failures, excluded from every "
        f"rate and counted apart. pass@{k}: at least one of the {k} judged runs passed; pass^{k}: all "
        f"{k} did. Over more than {k} judged runs the column shows the unbiased estimate (est.); over fewer "
        "it is n/a."
    )
    if used:
        note += (
            " used context: of the judged runs, how many made a tool call naming one of the context's files "
            "(or calling one of its MCP servers); an agent that loads a file into its prompt on its own makes "
            "no such call."
        )
    return note


def _pass_k_line(report: Report) -> str:
    """How many tasks pass@k / pass^k held on, out of the tasks where it was observed (exactly k judged)."""
    k, s = report.conditions.k, report.summary
    observed = sum(t.pass_at_k is not None for t in report.tasks)
    line = (
        f"pass@{k}: {s.tasks_pass_at_k} of {observed} tasks; pass^{k}: {s.tasks_pass_hat_k} of {observed} "
        f"tasks (tasks with exactly {k} judged runs"
    )
    others = s.tasks - observed
    line += f"; {others} other task{'' if others == 1 else 's'} n/a or estimated)." if others else ")."
    if s.pass_at_k_mean is not None and s.pass_hat_k_mean is not None:
        line += (
            f" Mean unbiased estimate over tasks: pass@{k} {s.pass_at_k_mean:.2f}, "
            f"pass^{k} {s.pass_hat_k_mean:.2f}."
        )
    return line


def suite_rate_line(report: Report) -> str:
    """``Suite success rate: 60.0% [..] (95% t interval, ...), task-clustered standard error ..., over 3 tasks.``"""
    s = report.summary
    if s.success_rate is None:
        return "Suite success rate: n/a (no judged runs)."
    se = "n/a (one task)" if s.success_rate.stderr is None else f"{s.success_rate.stderr * 100:.1f} pp"
    if report.conditions.mode is AnswerSource.REPLAY:
        se = "none in replay"
    interval = suite_interval_text(s.success_rate)
    return (
        f"Suite success rate: {pct(s.success_rate.mean)}{' ' + interval if interval else ''}, "
        f"task-clustered standard error {se}, over {plural(s.success_rate.tasks, 'task')}."
    )


def answer_line(report: Report) -> str:
    """``65.7% [35.6%, 95.9%] suite success rate over 7 tasks: 46 of 68 judged runs passed, 2 error (excluded);
    model m, agent alisio 0.4.0, live.``: the answer first, in one line."""
    c, s = report.conditions, report.summary
    who = f"model {c.model}, agent {naming_brief(c)}, {mode_text(c)}"
    errored = f"{s.errored} error (excluded)"
    if s.success_rate is None:
        return f"No judged run ({plural(s.runs, 'run')}, {errored}); {who}."
    interval = format_interval(s.success_rate.interval) if s.success_rate.interval is not None else ""
    rate = f"{pct(s.success_rate.mean)}{' ' + interval if interval else ''} suite success rate over "
    rate += plural(s.success_rate.tasks, "task")
    return f"{rate}: {s.passes} of {plural(s.judged, 'judged run')} passed{', ' + errored if s.errored else ''}; {who}."


def _summary_lines(report: Report) -> tuple[str, ...]:
    s = report.summary
    lines = [suite_rate_line(report), "", SUITE_RATE_NOTE]
    if s.success_rate is not None and s.success_rate.interval is not None:
        lines.append(SUITE_INTERVAL_NOTE)
    lines += [
        "",
        f"Runs: {s.runs} ({s.judged} judged: {s.passes} pass, {s.fails} fail, {s.budget_exceeded} "
        f"budget_exceeded; {s.errored} error, excluded from every rate).",
        _pass_k_line(report),
    ]
    if s.low_power_tasks:
        lines.append(
            f"Low power: {s.low_power_tasks} task(s) with fewer than 5 judged runs; no claim about them."
        )
    return tuple(lines)


def _tokens(tokens: Tokens | None, runs: int | None = None, judged: int = 0) -> str:
    if tokens is None:
        return NOT_REPORTED
    over = f"; {runs}/{judged} runs" if runs is not None else ""
    return f"{tokens.total:,} ({tokens.input:,} in, {tokens.output:,} out{over})"


def _measured_row(name: str, m: MeasuredBlock, cached: str, judged: int = 0) -> tuple[str, ...]:
    return (
        name,
        str(m.turns),
        str(m.tool_calls),
        str(m.compactions),
        format_counts(m.incidents),
        format_seconds(m.wall_ms_median),
        "n/a" if m.first_event_ms_median is None else f"{m.first_event_ms_median / 1000:,.2f} s",
        format_seconds2(m.wall_ms_variance),
        format_seconds(m.ms_per_success),
        _tokens(m.tokens, m.tokens_runs, judged),
        format_num(m.tokens_per_success, absent=NOT_REPORTED if m.tokens is None else "n/a"),
        cached,
    )


def _task_cached(t: TaskReport) -> str:
    if t.cached_input_runs == 0:
        return NOT_REPORTED
    return f"{format_rate(t.cached_input_ratio, None)} ({t.cached_input_runs}/{t.judged} runs)"


def _measured_table(report: Report) -> Table:
    s = report.summary
    if s.cached_input is None:
        suite_cached = NOT_REPORTED
    else:
        ci = s.cached_input
        suite_cached = (
            f"{format_rate(ci.ratio, None)} ({ci.tokens:,} of {ci.input_tokens:,} input tokens; "
            f"{ci.runs_reporting}/{ci.runs_judged} runs)"
        )
    header: tuple[str, ...] = ("Task", "turns", "tool calls", "compactions", "incidents", "wall median")
    header += ("first event median", "wall variance", "time/success")
    if report.conditions.mode is AnswerSource.REPLAY:
        header += ("tokens (recorded)", "tokens/success (recorded)", "cached input (recorded)")
    else:
        header += ("tokens", "tokens/success", "cached input")
    rows = [_measured_row(t.task_id, t.measured, _task_cached(t), t.judged) for t in report.tasks]
    suite = _measured_row("suite", s.measured, suite_cached, s.judged)
    return Table(header=header, rows=(*rows, suite), total=True)


def _estimated(report: Report) -> tuple[Table | None, str]:
    if report.conditions.rates is None:
        return None, 'No rates given (--input-rate/--output-rate or [prices."MODEL"]): no cost is estimated.'
    rows = [
        (
            t.task_id,
            format_usd(None if t.estimated is None else t.estimated.cost_usd),
            format_usd(None if t.estimated is None else t.estimated.cost_per_success_usd),
        )
        for t in report.tasks
    ]
    est = report.summary.estimated
    total = (
        "suite",
        format_usd(None if est is None else est.cost_usd),
        format_usd(None if est is None else est.cost_per_success_usd),
    )
    table = Table(header=("Task", "cost (USD)", "cost/success (USD)"), rows=(*rows, total), total=True)
    source = f" ({report.conditions.rates_from})" if report.conditions.rates_from else ""
    note = f"Estimated at USD per million tokens{source}: {', '.join(rate_items(report.conditions.rates))}. "
    note += "Each kind of token is priced at its own rate. n/a where tokens were not reported."
    return table, note


# --- single runs ---------------------------------------------------------------------------------------------


def run_grid(task_ids: Sequence[str], records: Iterable[RunRecord], k: int) -> tuple[GridRow, ...]:
    """Each task's runs by repetition, ``0 .. max(k, highest repetition + 1) - 1``; a run without a record is
    a cell without a status. The first record of a (task, repetition) counts."""
    status: dict[tuple[str, int], RunStatus] = {}
    for r in records:
        status.setdefault((r.task_id, r.repetition), r.status)
    ids = list(task_ids) + sorted({task for task, _ in status} - set(task_ids))
    width = max([k, *(rep + 1 for _, rep in status)])
    return tuple(
        GridRow(
            task_id=task,
            cells=tuple(GridCell(repetition=rep, status=status.get((task, rep))) for rep in range(width)),
        )
        for task in ids
    )


def variant_grid(
    task_ids: Sequence[str], records: Sequence[tuple[str, Sequence[RunRecord]]], k: int
) -> tuple[GridRow, ...]:
    """The interleaved grid of ``eval variants``: per task, each repetition's runs side by side, one per
    variant in the variants' order (``records``: each variant's id and records)."""
    grids = [(variant, run_grid(task_ids, mine, k)) for variant, mine in records]
    ids = list(dict.fromkeys(row.task_id for _, grid in grids for row in grid))
    rows_of = [(variant, {row.task_id: row for row in grid}) for variant, grid in grids]
    width = max((len(row.cells) for _, grid in grids for row in grid), default=k)
    out = []
    for task in ids:
        cells = []
        for rep in range(width):
            for variant, rows in rows_of:
                row = rows.get(task)
                status = row.cells[rep].status if row is not None and rep < len(row.cells) else None
                cells.append(GridCell(repetition=rep, status=status, variant=variant))
        out.append(GridRow(task_id=task, cells=tuple(cells)))
    return tuple(out)


def report_view(
    report: Report,
    records: Sequence[RunRecord] | None = None,
    known: tuple[tuple[str, str], ...] = (),
    *,
    show_as: str | None = None,
) -> ReportView:
    """What report.md and report.html show of ``report``.

    Args:
        report: the report.
        records: its run records, when the caller has them (``None``: no run is listed, the grid is empty).
        known: exact credentials to redact from the runs' text.
        show_as: what ``alisio eval show`` is given to open the runs: the run id (the default, for a report
            stored in the data directory) or the report directory's path (a report written with ``--out``).
    """
    c = report.conditions
    failing: tuple[FailureGroup, ...] = ()
    total = 0
    grid: tuple[GridRow, ...] = ()
    if records is not None:
        runs, total = failing_runs(records, show_as or c.run_id, known)
        failing = group_failures(runs)[:FAILING_SHOWN]
        grid = run_grid([t.task_id for t in report.tasks], records, c.k)
    estimated, estimated_note = _estimated(report)
    return ReportView(
        title=f"Eval report: {c.suite_id} {c.suite_version} ({mode_text(c)})",
        answer=answer_line(report),
        notices=report_notices(report),
        conditions=condition_items(c),
        tasks=_tasks_table(report),
        reasons=_reasons(report.tasks),
        tasks_note=_tasks_note(c.k, c.context is not None),
        summary=_summary_lines(report),
        measured=_measured_table(report),
        measured_note=measured_note(c.mode),
        estimated=estimated,
        estimated_note=estimated_note,
        failing=failing,
        failing_total=total,
        runs_known=records is not None,
        grid=grid,
    )
