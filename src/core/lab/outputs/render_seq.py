"""How a sequential report shows its stops: one table (terminal, report.md: ``alisio.core.lab.render``, report.html), a totals line and the
method note.

Per task: the runs it took, the look at which it stopped and the runs that were in flight then (waited for and
included), why it stopped, the statistic at the final look against what it needed, the anytime-valid interval
(the confidence sequence: the one that is valid under this stopping) with the Wilson interval beside it for
reference only (one arm and against a baseline, where the interval is of the rate: Wilson's does not hold when
the stop depends on the data), and the runs and
tokens saved against running every task to ``--max-k``.
"""

from __future__ import annotations

from alisio.core.lab.outputs.formats import format_pp, pct
from alisio.core.lab.outputs.view import Table
from alisio.core.lab.reports.report import Report, TaskReport
from alisio.core.lab.reports.seq_block import SequentialBlock, TaskStop, describe_plan
from alisio.core.stats.rates import Interval
from alisio.core.stats.verdict import format_interval

__all__ = [
    "comparison_lines",
    "decision_table",
    "method_brief",
    "sequential_lines",
    "sequential_table",
    "sequential_totals",
    "stop_phrase",
    "task_note",
]


def stop_phrase(stop: TaskStop, block: SequentialBlock) -> str:
    """``decided: improved``, ``futility``, ``max-k (50)``, ``width below 0.3``, ``not stopped``."""
    if stop.reason == "decided":
        return f"decided: {stop.direction}"
    if stop.reason == "max-k":
        return f"max-k ({block.plan.max_k})"
    if stop.reason == "width":
        return f"width below {block.plan.width:g}"
    if stop.reason == "futility":
        return "futility (inconclusive)"
    return "not stopped (the command ended first)"


def _statistic(stop: TaskStop, block: SequentialBlock) -> str:
    if block.plan.kind == "width":
        return f"width {stop.statistic:.3f} (stops below {stop.threshold:g})"
    return f"e = {stop.statistic:.3g} (decides at {stop.threshold:.3g})"


def _of_rate(block: SequentialBlock) -> bool:
    """The interval is of the success rate (one arm; against a baseline, the candidate's), not a difference."""
    return block.plan.kind in ("width", "baseline")


def _interval(interval: Interval | None, block: SequentialBlock) -> str:
    if interval is None:
        return "n/a"
    if _of_rate(block):
        return format_interval(interval)
    return f"[{format_pp(interval.low)}, {format_pp(interval.high)}]"


def _stopped(stop: TaskStop) -> str:
    if stop.stopped_at is None:
        return "-"
    after = f" (+{stop.after_stop} in flight)" if stop.after_stop else ""
    return f"at {stop.stopped_at}{after}"


def _wilson(task: TaskReport | None) -> str:
    if task is None or task.interval is None or task.success_rate is None:
        return "n/a"
    return f"{pct(task.success_rate)} {format_interval(task.interval)}"


def sequential_table(report: Report) -> Table | None:
    """The stops of a sequential report (``None``: a fixed-k report)."""
    block = report.sequential
    if block is None:
        return None
    width = _of_rate(block)
    what = "rate" if width else "difference"
    header: tuple[str, ...] = ("task", "runs", "stopped", "why", "statistic", f"valid interval ({what}, CS)")
    header += ("Wilson (for reference)",) if width else ()
    header += ("runs saved", "tokens saved (est.)")
    tasks = {task.task_id: task for task in report.tasks}
    rows = []
    for stop in block.tasks:
        row: tuple[str, ...] = (stop.task_id, str(stop.runs), _stopped(stop), stop_phrase(stop, block))
        row += (_statistic(stop, block), _interval(stop.interval, block))
        row += (_wilson(tasks.get(stop.task_id)),) if width else ()
        row += (str(stop.runs_saved), "n/a" if stop.tokens_saved is None else f"{stop.tokens_saved:,}")
        rows.append(row)
    return Table(header=header, rows=tuple(rows))


def sequential_totals(block: SequentialBlock, arms: int = 1) -> str:
    """``sequential (--until-width 0.3, --max-k 50, --min-k 5): 42 of 100 runs saved against running every
    task to --max-k (about 5,754 tokens, estimated)``; ``arms``: the variants the block's counts are over."""
    planned = block.plan.max_k * len(block.tasks) * arms
    tokens = "" if block.tokens_saved is None else f" (about {block.tokens_saved:,} tokens, estimated)"
    over = " over both variants" if arms == 2 else ""
    return (
        f"sequential ({describe_plan(block.plan)}): {block.runs_saved} of {planned} runs saved{over} against "
        f"running every task to --max-k{tokens}"
    )


def decision_table(block: SequentialBlock) -> Table:
    """A two-variant run's decisions per task (runs over both variants)."""
    header = (
        "task",
        "runs (both)",
        "stopped (pairs)",
        "why",
        "statistic",
        "valid interval (difference, CS)",
        "runs saved",
        "tokens saved (est.)",
    )
    rows = tuple(
        (
            stop.task_id,
            str(stop.runs),
            _stopped(stop),
            stop_phrase(stop, block),
            _statistic(stop, block),
            _interval(stop.interval, block),
            str(stop.runs_saved),
            "n/a" if stop.tokens_saved is None else f"{stop.tokens_saved:,}",
        )
        for stop in block.tasks
    )
    return Table(header=header, rows=rows)


def _text_table(table: Table) -> list[str]:
    rows = [table.header, *table.rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(table.header))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def method_brief(block: SequentialBlock, where: str) -> str:
    """The terminal's ``method:`` line, a few words (``where``: the file that gives the method in full)."""
    plan = block.plan
    guarantee = f"family-wise error <= {plan.alpha:g}, valid under optional stopping"
    if plan.kind == "width":
        what = f"betting confidence sequences until width {plan.width or 0:g}"
    elif plan.kind == "baseline":
        what = f"the baseline's counts against a betting confidence sequence, {guarantee}"
    else:
        what = f"betting e-processes on the paired differences, {guarantee}"
    return f"method: {what} (in full in {where})"


def sequential_lines(report: Report) -> list[str]:
    """The terminal's closing lines of a sequential report: the table, the totals and the method in brief."""
    table = sequential_table(report)
    if table is None or report.sequential is None:
        return []
    block = report.sequential
    return ["", *_text_table(table), sequential_totals(block), method_brief(block, "report.md")]


def comparison_lines(block: SequentialBlock | None) -> list[str]:
    """The terminal's closing lines of ``eval variants --sequential``: the decisions over both variants."""
    if block is None:
        return []
    table = decision_table(block)
    return ["", *_text_table(table), sequential_totals(block, arms=2), method_brief(block, "comparison.md")]


def task_note(block: SequentialBlock | None, task_id: str) -> str:
    """``eval show``'s line over a run of a sequential report: how its task stopped (empty otherwise)."""
    stop = next((s for s in (block.tasks if block else ()) if s.task_id == task_id), None)
    if block is None or stop is None:
        return ""
    return f"sequential ({describe_plan(block.plan)}): task {task_id} took {stop.runs} runs, {stop_phrase(stop, block)}\n"
