"""Markdown for reports (report.md); comparisons (comparison.md) are in ``alisio.core.lab.outputs.render_compare``.

What a report shows is decided by ``alisio.core.lab.outputs.view`` (shared with report.html); this module only lays
it out as Markdown. Rules it keeps:

- The answer comes first (the suite rate with its interval, the runs, what made them), then the notices,
  then every condition: a number without its conditions is an anecdote. A replay report says that replay
  measures the harness, not the model.
- Measured and Estimated are separate tables, never summed. Absent figures print "not reported" (provider
  numbers) or "n/a" (undefined statistics), never 0.
- Rates print as "80.0% [37.6%, 96.4%]" (95% Wilson), the same way everywhere (``alisio.core.lab.outputs.formats``).
- pass@k / pass^k print yes/no only over exactly k judged runs, the unbiased estimate with more, n/a with
  fewer.
- Given the run records, it lists the runs that did not pass; their verifier details are untrusted text, so
  they go in fenced code blocks whose fence is longer than any run of backticks inside (no Markdown or HTML
  in a detail is ever interpreted), control characters shown as escapes.
- Every other text that comes from data (task ids in tables and headings, a provider's message in the
  Interrupted notice) is inert: ``markdown_inline`` (no line break, HTML tag, link or new cell).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from alisio.core.lab.outputs.failing import FailureGroup, runs_text
from alisio.core.lab.outputs.formats import visible_controls
from alisio.core.lab.outputs.render_profile import PROFILE_NOTES, profile_lines, profile_table
from alisio.core.lab.outputs.render_seq import sequential_table, sequential_totals
from alisio.core.lab.outputs.view import ReportView, Table, condition_items, report_view
from alisio.core.lab.reports.report import Conditions, Report
from alisio.core.lab.runs.records import RunRecord

__all__ = ["conditions_rows", "fenced", "markdown_inline", "markdown_table", "render_markdown"]

_LINE_BREAK = re.compile(r"\r\n|\n|\r")


def markdown_inline(text: str) -> str:
    """``text`` as inert Markdown on one line: control characters and line breaks shown as escapes (a task id
    or a provider's message cannot start a heading, a list or a new table row), ``<`` as an entity
    (no HTML: ``<img>``, ``<script>``), ``](`` broken (no link or image), ``|`` escaped (no new cell)."""
    text = visible_controls(
        _LINE_BREAK.sub(lambda m: m.group().replace("\r", "\\r").replace("\n", "\\n"), text)
    )
    text = text.replace("<", "&lt;").replace("](", "]\\(")
    return text.replace("|", "\\|")


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table; every cell is inert text (``markdown_inline``) but for the table's own markup."""
    lines = ["| " + " | ".join(markdown_inline(cell) for cell in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(markdown_inline(cell) for cell in row) + " |" for row in rows]
    return lines


def conditions_rows(c: Conditions) -> list[tuple[str, str]]:
    """The conditions as (name, Markdown value) rows: hashes as code."""
    return [(item.name, f"`{item.value}`" if item.code else item.value) for item in condition_items(c)]


def _table(table: Table) -> list[str]:
    rows = list(table.rows)
    if table.total and rows:
        last = rows[-1]
        rows[-1] = (f"**{last[0]}**", *last[1:])
    return markdown_table(table.header, rows)


_BACKTICKS = re.compile(r"`+")


def fenced(lines: Sequence[str], info: str = "text") -> list[str]:
    """``lines`` in a fenced code block whose fence is longer than any run of backticks in them."""
    longest = max((len(run) for line in lines for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, *lines, fence]


def _failing_lines(group: FailureGroup) -> list[str]:
    run = group.first
    lines = [f"### {markdown_inline(group.heading)}", ""]
    if len(group.runs) > 1:
        lines += [f"Runs: {markdown_inline(runs_text(group.runs))}.", ""]
    body: list[str] = []
    for v in run.verifiers:
        more = f" (+{v.more_lines} more lines)" if v.more_lines else ""
        lines.append(f"- verifier {markdown_inline(v.id)} ({v.kind}): {v.status}{more}")
        body += [visible_controls(f"{v.id}: {line}") for line in v.detail]
    if run.incidents:
        counted = ", ".join(f"{kind} {count}" for kind, count in run.incidents)
        lines.append(f"- incidents: {markdown_inline(counted)}")
        body += [visible_controls(f"incident {line}") for line in run.incident_lines]
    if run.divergence is not None:
        lines.append(f"- diverged from the cassette at {run.divergence}")
    body += [visible_controls(f"diverged: {line}") for line in run.divergence_lines]
    body += [visible_controls(f"error: {line}") for line in run.errors]
    if body:
        lines += ["", *fenced(body)]
    opening = "Open it" if len(group.runs) == 1 else "Open the first"
    return [*lines, "", f"{opening}: {_code(run.show)}", ""]


def _code(text: str) -> str:
    """``text`` as an inline code span (on one line, controls escaped, fenced past its own backticks)."""
    text = visible_controls(_LINE_BREAK.sub(" ", text))
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    return f"{fence} {text} {fence}" if fence != "`" else f"`{text}`"


def _failing_section(view: ReportView) -> list[str]:
    if not view.runs_known or view.failing_total == 0:
        return []
    total = view.failing_total
    lines = ["", "## Runs that did not pass", ""]
    noun = "run" if total == 1 else "runs"
    lines += [
        f"{total} {noun} did not pass (fail, budget_exceeded or error), in task and repetition order; runs with "
        "the same message are listed once, and each verifier that did not pass shows the first lines of its "
        "detail.",
        "",
    ]
    for group in view.failing:
        lines += _failing_lines(group)
    rest = total - sum(len(group.runs) for group in view.failing)
    if rest:
        lines += [f"{rest} more run{'' if rest == 1 else 's'} did not pass: see runs.jsonl.", ""]
    return lines[:-1]


def _sequential_markdown(report: Report) -> list[str]:
    """report.md's section ``## Sequential stopping`` (none for a fixed-k report)."""
    table = sequential_table(report)
    if table is None or report.sequential is None:
        return []
    block = report.sequential
    return [
        "",
        "## Sequential stopping",
        "",
        *markdown_table(table.header, table.rows),
        "",
        sequential_totals(block) + ".",
        "",
        f"Method: {block.method}. The confidence-sequence interval is the valid one under this stopping; the "
        "runs in flight when a task stopped were waited for and are included.",
    ]


def _profile_markdown(report: Report) -> list[str]:
    """report.md's section ``## Reliability profile`` (k >= 2, not replay)."""
    table = profile_table(report)
    if table is None or report.reliability is None:
        return []
    advice, *cost = profile_lines(report.reliability)
    lines = ["", "## Reliability profile", "", advice, "", *markdown_table(table.header, table.rows)]
    if cost:
        lines += ["", *cost]
    return [*lines, "", *(f"- {note}" for note in PROFILE_NOTES)]


def render_markdown(
    report: Report,
    records: Sequence[RunRecord] | None = None,
    known: tuple[tuple[str, str], ...] = (),
    *,
    show_as: str | None = None,
) -> str:
    """report.md: conditions, tasks, summary, the Measured and Estimated tables apart, then (given the run
    records) the runs that did not pass.

    Args:
        report: the report.
        records: its run records (``None``: no run is listed).
        known: exact credentials to redact from the runs' details (``alisio.core.share.secrets``).
        show_as: what the ``eval show`` commands are given: the run id (default) or the report's directory.
    """
    view = report_view(report, records, known, show_as=show_as)
    lines = [f"# {view.title}", "", f"**{markdown_inline(view.answer)}**", ""]
    for notice in view.notices:
        text = markdown_inline(notice.text)  # a provider's message is untrusted
        lines += [f"> **{text}**" if notice.strong else f"> {text}", ""]
    lines += markdown_table(("Condition", "Value"), conditions_rows(report.conditions))
    lines += ["", "## Tasks", "", *_table(view.tasks)]
    if view.reasons:
        lines += ["", *(f"- {markdown_inline(line)}" for line in view.reasons)]
    lines += ["", view.tasks_note, *_sequential_markdown(report), "", "## Summary", "", *view.summary]
    lines += _profile_markdown(report)
    lines += ["", "## Measured", "", *_table(view.measured), "", view.measured_note, "", "## Estimated", ""]
    if view.estimated is None:
        lines.append(view.estimated_note)
    else:
        lines += [*_table(view.estimated), "", view.estimated_note]
    lines += _failing_section(view)
    lines += _advisory_section(report)
    return "\n".join(lines) + "\n"


def _advisory_section(report: Report) -> list[str]:
    """The tasks' advisory notes: what no check decided (an imported skill eval's expectations)."""
    noted = [task for task in report.tasks if task.advisory]
    if not noted:
        return []
    lines = ["", "## Advisory notes", "", "Not checked and never counted: read them against the runs.", ""]
    for task in noted:
        lines += [f"- {markdown_inline(task.task_id)}: {markdown_inline(note)}" for note in task.advisory]
    return lines
