"""The human lines ``alisio eval run`` prints on stderr: one per finished run, and the per-task summary.

Pure text from records and reports; the shell prints it. A repetition is named as runs.jsonl and the reports
name it (``rep 0`` is the first; its seed is the command's seed + 0), rates as in report.md
(``100.0% [56.6%, 100.0%]``).
"""

from __future__ import annotations

from alisio.core.harness.events import IncidentKind
from alisio.core.harness.prices import rate_items
from alisio.core.lab.outputs.formats import (
    NOT_REPORTED,
    context_use,
    format_rate,
    format_seconds,
    format_usd,
)
from alisio.core.lab.reports.report import AnswerSource, Conditions, Estimated, Report
from alisio.core.lab.runs.records import RunRecord, RunStatus, VerifierStatus

__all__ = ["progress_line", "rates_line", "summary_table", "why_not_passed"]

_TEXT_TOOL_CALL = str(IncidentKind.TEXT_TOOL_CALL)
_AGENT_EXITED = str(IncidentKind.AGENT_EXITED)


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def why_not_passed(record: RunRecord) -> str:
    """What kept a run from passing, one line: the first failing verifier and its detail, or the error.

    ``check: exit 1, expected 0``; for ``error`` the first error; ``""`` for a pass or a budget stop.
    """
    if record.status is RunStatus.ERROR and record.errors:
        return _first_line(record.errors[0])
    if record.status is RunStatus.FAIL and record.reason is not None:  # verifier_tampered: what it changed
        said = next((i.message for i in record.incidents if i.kind == record.reason), "")
        return f"{record.reason}: {_first_line(said)}" if said else record.reason
    if record.status is RunStatus.FAIL:
        for verifier in record.verifiers:
            if verifier.status is not VerifierStatus.PASS:
                detail = _first_line(verifier.detail)
                return f"{verifier.id}: {detail}" if detail else f"{verifier.id}: {verifier.status}"
    return ""


def progress_line(index: int, total: int, record: RunRecord) -> str:
    """``[3/35] fix-add rep 2: fail (4 turns, 12.3 s): check: exit 1, expected 0``.

    The reason follows budget_exceeded and error; a failing run names its first failing verifier and the
    first line of its detail, an errored run its first error; a run that did not pass and has a
    ``text_tool_call`` incident names it first; an external agent that exited non-zero after a model call
    (an ``agent_exited`` incident) is named first on any line (``pass (2 turns, 1.0 s): agent exited 5``).
    """
    m = record.measured
    status = str(record.status)
    if record.status in (RunStatus.BUDGET_EXCEEDED, RunStatus.ERROR) and record.reason:
        status += f" {record.reason}"
    turns = "turn" if m.turns == 1 else "turns"
    line = f"[{index}/{total}] {record.task_id} rep {record.repetition}: {status} "
    line += f"({m.turns} {turns}, {m.wall_ms / 1000:.1f} s)"
    why = why_not_passed(record)
    if record.status is not RunStatus.PASS and any(i.kind == _TEXT_TOOL_CALL for i in record.incidents):
        # The run "completed" in one turn because the server did not parse the call: say so before the
        # verifier's detail makes it look like a wrong fix.
        why = f"{_TEXT_TOOL_CALL} (a tool call written as text); {why}" if why else _TEXT_TOOL_CALL
    exits = [i.message for i in record.incidents if i.kind == _AGENT_EXITED]
    if exits:
        why = f"{exits[0]}; {why}" if why else exits[0]
    return f"{line}: {why}" if why else line


def summary_table(report: Report) -> str:
    """A plain-text table: per task the passes over judged runs, the rate, pass@k, pass^k, errors, then the
    main-loop tokens (a replay's as recorded), the median wall time and, when rates were given, the estimated
    cost (``TaskReport.estimated``: the report's one cost computation), then a line naming its rates. With more than one task a last row,
    ``total``, has the summary: passes over judged runs, the suite rate (mean of the task rates), the mean
    pass@k and pass^k estimates, the errors, the tokens, the median wall time and the cost of every run."""
    k = report.conditions.k
    replay = report.conditions.mode is AnswerSource.REPLAY
    priced = report.conditions.rates is not None
    used = report.conditions.context is not None
    header: tuple[str, ...] = ("task", "pass/judged", "success rate")
    header += (("used context",) if used else ()) + (f"pass@{k}", f"pass^{k}", "error")
    header += ("tokens (recorded)" if replay else "tokens", "wall median") + (
        ("cost (USD)",) if priced else ()
    )
    rows = [header]
    for t in report.tasks:
        tokens = t.measured.tokens
        row: tuple[str, ...] = (
            t.task_id,
            f"{t.passes}/{t.judged}",
            format_rate(t.success_rate, t.interval),
            *((context_use(t.context_used, t.judged),) if used else ()),
            _yes_no(t.pass_at_k, t.pass_at_k_estimate),
            _yes_no(t.pass_hat_k, t.pass_hat_k_estimate),
            str(t.errored),
            NOT_REPORTED if tokens is None else f"{tokens.total:,}",
            format_seconds(t.measured.wall_ms_median),
        )
        rows.append(row + ((_cost(t.estimated),) if priced else ()))
    if len(report.tasks) > 1:
        rows.append(_total_row(report, priced, used))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(lines + ([rates_line(report.conditions)] if priced else []))


def rates_line(conditions: Conditions) -> str:
    """What the cost column is computed at: ``cost at USD per million tokens: input 2, ...; from ...``."""
    assert conditions.rates is not None
    source = f"; from {conditions.rates_from}" if conditions.rates_from else ""
    return f"cost at USD per million tokens: {', '.join(rate_items(conditions.rates))}{source}"


def _cost(estimated: Estimated | None) -> str:
    return format_usd(None if estimated is None else estimated.cost_usd)


def _total_row(report: Report, priced: bool, used: bool) -> tuple[str, ...]:
    """The summary's figures in the table's columns (see ``summary_table``)."""
    s = report.summary
    rate = s.success_rate
    tokens = s.measured.tokens
    row = (
        "total",
        f"{s.passes}/{s.judged}",
        format_rate(None if rate is None else rate.mean, None if rate is None else rate.interval),
        *((context_use(sum(t.context_used or 0 for t in report.tasks), s.judged),) if used else ()),
        _yes_no(None, s.pass_at_k_mean),
        _yes_no(None, s.pass_hat_k_mean),
        str(s.errored),
        NOT_REPORTED if tokens is None else f"{tokens.total:,}",
        format_seconds(s.measured.wall_ms_median),
    )
    return row + ((_cost(s.estimated),) if priced else ())


def _yes_no(observed: bool | None, estimate: float | None) -> str:
    if observed is not None:
        return "yes" if observed else "no"
    return f"{estimate:.2f}" if estimate is not None else "n/a"
