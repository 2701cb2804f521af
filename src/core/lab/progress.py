"""The human lines ``alisio eval run`` prints on stderr: one per finished run, and the per-task summary.

Pure text from records and reports; the shell prints it. Repetitions show 1-based (``#1`` is repetition 0 in
runs.jsonl), rates as in report.md (``100.0% [56.6%, 100.0%]``).
"""

from __future__ import annotations

from alisio.core.lab.records import RunRecord, RunStatus
from alisio.core.lab.render import format_rate
from alisio.core.lab.report import Report

__all__ = ["progress_line", "summary_table"]


def progress_line(index: int, total: int, record: RunRecord) -> str:
    """``[3/35] fix-add #2: pass (4 turns, 12.3 s)``; the reason follows budget_exceeded and error."""
    m = record.measured
    status = str(record.status)
    if record.status in (RunStatus.BUDGET_EXCEEDED, RunStatus.ERROR) and record.reason:
        status += f" {record.reason}"
    turns = "turn" if m.turns == 1 else "turns"
    line = f"[{index}/{total}] {record.task_id} #{record.repetition + 1}: {status} "
    line += f"({m.turns} {turns}, {m.wall_ms / 1000:.1f} s)"
    if record.status is RunStatus.ERROR and record.errors:
        line += f": {record.errors[0]}"
    return line


def summary_table(report: Report) -> str:
    """A plain-text table: per task the passes over judged runs, the rate, pass@k, pass^k and errors."""
    k = report.conditions.k
    header = ("task", "pass/judged", "success rate", f"pass@{k}", f"pass^{k}", "error")
    rows = [header]
    for t in report.tasks:
        rows.append(
            (
                t.task_id,
                f"{t.passes}/{t.judged}",
                format_rate(t.success_rate, t.interval),
                _yes_no(t.pass_at_k, t.pass_at_k_estimate),
                _yes_no(t.pass_hat_k, t.pass_hat_k_estimate),
                str(t.errored),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def _yes_no(observed: bool | None, estimate: float | None) -> str:
    if observed is not None:
        return "yes" if observed else "no"
    return f"{estimate:.2f}" if estimate is not None else "n/a"
