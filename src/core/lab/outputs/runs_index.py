"""``alisio eval runs --html DIR``: one static page over many runs, for a CI artifact or a shared folder.

Rules this module keeps:

- One row per report (one per variant of an ``eval variants`` job), newest first: the run id, when it was
  created, the suite and version, the label, the agent, the model, the mode, the suite's success rate with
  its 95% interval (the report's own: the task-averaged rate, no interval in replay), passes over judged
  runs, the errored runs, and a note when the report is partial (interrupted, capped, a shard, merged).
- Each row links to its report.html and, for a variant, to its job's comparison.html, when they exist; the
  links are relative to the page (``href`` as given, URL-quoted by the shell), so the folder works from
  ``file://`` and moved as a whole.
- A report that cannot be read is a row saying so. Every string goes through ``esc`` or ``attr``; the page has
  the Content-Security-Policy of every alisio page and no script (``alisio.core.lab.outputs.html_page``).
"""

from __future__ import annotations

from collections.abc import Sequence

from alisio.core.base import Frozen
from alisio.core.lab.outputs.formats import pct
from alisio.core.lab.outputs.html_page import attr, esc, page
from alisio.core.lab.reports.report import Report

__all__ = ["IndexRow", "agent_name", "index_row", "render_runs_index"]


class IndexRow(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One row of the index: a report's figures as text, and its links (relative to the page)."""

    run_id: str
    created: str = ""
    suite: str = ""
    label: str = ""
    agent: str = ""
    model: str = ""
    mode: str = ""
    rate: str = ""
    counts: str = ""
    errored: str = ""
    note: str = ""
    report: str | None = None
    """The href of its report.html; ``None`` without one."""
    comparison: str | None = None
    """The href of its job's comparison.html (a variant's); ``None`` without one."""
    unreadable: bool = False


def agent_name(report: Report) -> str:
    """The agent a report names (``default``: the built-in agent, or a report written before it was named)."""
    agent = report.conditions.agent
    return agent.name if agent is not None else "default"


def _note(report: Report) -> str:
    origin = report.origin
    parts = []
    if report.capped:
        parts.append(f"stopped by {report.capped}")
    elif report.interrupted:
        parts.append("interrupted")
    if origin is not None and origin.shard is not None:
        parts.append(f"shard {origin.shard.index} of {origin.shard.count}")
    if origin is not None and origin.shards:
        parts.append(f"merged from {len(origin.shards)} shards")
    if origin is not None and origin.reused:
        parts.append(f"{sum(r.runs for r in origin.reused)} runs reused")
    return "; ".join(parts)


def index_row(run_id: str, report: Report | None, href: str | None, comparison: str | None) -> IndexRow:
    """The row of one stored run (``report`` ``None``: it could not be read)."""
    if report is None:
        return IndexRow(run_id=run_id, unreadable=True, report=href, comparison=comparison)
    c, s = report.conditions, report.summary
    rate = "n/a"
    if s.success_rate is not None:
        interval = s.success_rate.interval
        rate = pct(s.success_rate.mean) + (
            f" [{pct(interval.low)}, {pct(interval.high)}]" if interval else ""
        )
    return IndexRow(
        run_id=run_id,
        created=c.created_at,
        suite=f"{c.suite_id} {c.suite_version}",
        label=c.label or "",
        agent=agent_name(report),
        model=c.model,
        mode=str(c.mode),
        rate=rate,
        counts=f"{s.passes}/{s.judged}",
        errored=str(s.errored),
        note=_note(report),
        report=href,
        comparison=comparison,
    )


_HEADER = (
    "run",
    "created",
    "suite",
    "label",
    "agent",
    "model",
    "mode",
    "success rate [95% interval]",
    "pass/judged",
    "error",
    "note",
    "pages",
)


def _link(href: str | None, text: str) -> str:
    return f'<a href="{attr(href)}">{esc(text)}</a>' if href is not None else ""


def _row(row: IndexRow) -> str:
    links = " ".join(x for x in (_link(row.report, "report"), _link(row.comparison, "comparison")) if x)
    if row.unreadable:
        cells = [esc(row.run_id), *[""] * 9, esc("the report cannot be read"), links]
    else:
        cells = [
            esc(v)
            for v in (
                row.run_id,
                row.created,
                row.suite,
                row.label,
                row.agent,
                row.model,
                row.mode,
                row.rate,
                row.counts,
                row.errored,
                row.note,
            )
        ] + [links]
    return "<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def render_runs_index(rows: Sequence[IndexRow], title: str = "alisio runs") -> str:
    """The whole page: a heading, how many runs, and the table (module docstring)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in _HEADER)
    body = "".join(_row(row) for row in rows)
    count = f"{len(rows)} run{'s' if len(rows) != 1 else ''}, newest first."
    note = (
        "Each success rate is the report's suite rate (the mean of its tasks' rates) with its 95% interval; "
        "a partial report (interrupted, a shard) says so in its note."
    )
    html = (
        f'<h1>{esc(title)}</h1><p>{esc(count)}</p><p class="note">{esc(note)}</p>'
        f'<table class="runs"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    )
    return page(title, html)
