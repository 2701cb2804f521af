"""The sentences a report's reader must see before its numbers, decided once (report.md, report.html).

In order: what the numbers measure (a replay measures the harness; a scripted run no model), whether the
command stopped early, errored runs run again, then whether the verdicts can be trusted: the suite's
self-check (``alisio.core.lab.reports.trust.self_check_line``: always said, "not self-checked" included), each task
whose untouched fixture passes (a warning), and, for a report made by ``eval rejudge``, what was judged again
and which verdicts changed. Reports written before a block existed (``None``) say nothing of it.
"""

from __future__ import annotations

from alisio.core.base import Frozen
from alisio.core.lab.outputs.formats import REPLAY_NOTICE, SCRIPTED_NOTICE, SCRIPTED_PROVIDER
from alisio.core.lab.reports.origin import origin_lines
from alisio.core.lab.reports.report import AnswerSource, Conditions, Report, finished_runs
from alisio.core.lab.reports.trust import change_line, noop_passing_line, rejudge_line, self_check_line

__all__ = ["CHANGES_SHOWN", "Notice", "report_notices", "scripted"]

CHANGES_SHOWN = 20
"""The changed verdicts a rejudged report lists one by one (the others are counted)."""


class Notice(Frozen, frozen=True, kw_only=True):
    """A sentence the reader must see before the numbers; ``strong`` ones are warnings (interrupted)."""

    text: str
    strong: bool = False


def scripted(c: Conditions) -> bool:
    """The report's runs played a ``--script`` (live mode, the scripted provider): no model was measured."""
    return c.mode is AnswerSource.LIVE and c.provider == SCRIPTED_PROVIDER


def _trust(report: Report) -> list[Notice]:
    out: list[Notice] = []
    block = report.rejudge
    if block is not None:
        out.append(Notice(text=rejudge_line(block), strong=bool(block.changed)))
        out += [Notice(text=change_line(change)) for change in block.changed[:CHANGES_SHOWN]]
        if len(block.changed) > CHANGES_SHOWN:
            out.append(
                Notice(text=f"... and {len(block.changed) - CHANGES_SHOWN} more (report.json lists them).")
            )
    check = report.self_check
    if check is not None:
        out.append(Notice(text=self_check_line(check)))
        out += [Notice(text=noop_passing_line(task_id), strong=True) for task_id in check.noop_passing]
    return out


def report_notices(report: Report) -> tuple[Notice, ...]:
    """The report's notices, in the module docstring's order."""
    c = report.conditions
    out: list[Notice] = []
    if c.mode is AnswerSource.REPLAY:
        out.append(Notice(text=f"{REPLAY_NOTICE} A green replay says nothing about model quality."))
    if scripted(c):
        out.append(Notice(text=SCRIPTED_NOTICE))
    if report.interrupted:
        why, done = (f" ({report.stopped})" if report.stopped else ""), finished_runs(report)
        text = f"Interrupted after {done}{why}: tasks that never ran are missing."
        if report.capped is not None:  # a cap stopped it: the runs not started are not run, not failed
            text = f"Stopped by {report.capped} after {done}{why}: the runs not started are not run."
        out.append(Notice(text=text, strong=True))
    out += [
        Notice(text=t, strong=s) for t, s in origin_lines(report.origin, report.planned_runs, report.retried)
    ]
    return tuple(out + _trust(report))
