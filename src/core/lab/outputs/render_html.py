"""report.html: the report as one self-contained page, from the same view as report.md.

What is shown is decided by ``alisio.core.lab.outputs.view`` (the answer, the conditions, notices, tables,
summary, the runs that did not pass and the grid). This module lays it out with
``alisio.core.lab.outputs.html_page``, the answer first (the suite rate with its interval, the runs, what made
them), then the tasks and the grid, the conditions after them; and it adds what only a page can: a forest
plot per task (the success rate and its 95% Wilson interval on a 0-100% axis, pass@k, pass^k and errored
runs in their own columns) with a "first divergence" line for each task whose runs both passed and
failed (linking the two runs), a task x repetition grid coloured by status whose cells link to each run's
transcript, and the transcripts themselves, collapsed (``<details>``), cut to fit the page
(``alisio.core.lab.outputs.html_transcript``), an ``edit_file`` shown as a diff.

Rules it keeps: no script and nothing loaded (the page shell's Content-Security-Policy); every string
escaped; every number as report.md prints it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from alisio.core.lab.outputs.failing import FailingRun, shell_word, show_command
from alisio.core.lab.outputs.formats import verifier_kind_text
from alisio.core.lab.outputs.html_filter import (
    FILTER_SCRIPT,
    filter_form_html,
    groups_html,
    run_attributes,
    script_source,
)
from alisio.core.lab.outputs.html_page import (
    STATUS_LETTER,
    Bar,
    anchor,
    attr,
    axis_svg,
    conditions_html,
    esc,
    forest_svg,
    legend_html,
    notices_html,
    page,
    paragraphs_html,
    status_class,
    table_html,
)
from alisio.core.lab.outputs.html_transcript import TranscriptView, transcript_html, unavailable
from alisio.core.lab.outputs.progress import why_not_passed
from alisio.core.lab.outputs.view import RATE_COLUMN, GridCell, GridRow, ReportView, report_view
from alisio.core.lab.reports.report import Report
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.trajectories.contrast import TaskDivergence
from alisio.core.share.secrets import redact
from alisio.core.text import plural

__all__ = ["REPORT_HTML", "divergences_html", "forest_table_html", "grid_html", "render_report_html"]

REPORT_HTML = "report.html"

_VERIFIER_DETAIL_CHARS = 2_000


def forest_table_html(report: Report, view: ReportView) -> str:
    """The tasks table with a forest plot column: one row per task, the rate and interval drawn."""
    header = list(view.tasks.header)
    head = [f"<th>{esc(header[0])}</th>", f'<th class="plot">{axis_svg()}</th>']
    head += [f"<th>{esc(h)}</th>" for h in header[1:]]
    rows = []
    for task, row in zip(report.tasks, view.tasks.rows, strict=True):
        bar = Bar(rate=task.success_rate, interval=task.interval, label=f"{task.task_id}: {row[RATE_COLUMN]}")
        cells = [f'<td class="nw">{esc(row[0])}</td>', f'<td class="plot">{forest_svg([bar])}</td>']
        cells += [
            f'<td class="nw">{esc(cell)}</td>' if i == RATE_COLUMN else f"<td>{esc(cell)}</td>"
            for i, cell in enumerate(row)
            if i > 0
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f'<table class="forest" id="forest"><thead><tr>{"".join(head)}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _cell(task_id: str, cell: GridCell, record: RunRecord | None, known: tuple[tuple[str, str], ...]) -> str:
    who = f"{cell.variant} " if cell.variant is not None else ""
    name = f"{who}{task_id} rep {cell.repetition}"
    if record is None:
        title = f"{name}: no record (the command stopped before it finished)"
        return f'<span class="cell s-none" title="{attr(title)}">·</span>'
    why = why_not_passed(record)
    title = f"{name}: {record.status}" + (f": {redact(why, known)}" if why else "")
    page = f"{cell.variant}/{REPORT_HTML}" if cell.variant is not None else ""
    href = f"{page}#{anchor(task_id, cell.repetition)}"
    letter = STATUS_LETTER[record.status]
    return f'<a class="cell {status_class(record.status)}" href="{attr(href)}" title="{attr(title)}">{letter}</a>'


def grid_html(
    grid: Sequence[GridRow], records: Sequence[RunRecord], known: tuple[tuple[str, str], ...] = ()
) -> str:
    """The task x repetition grid: a coloured, lettered cell per run, linking to its transcript (for
    variants, each repetition's cells side by side, linking into each variant's report.html)."""
    by_key: dict[tuple[str | None, str, int], RunRecord] = {}
    for r in records:
        by_key.setdefault((r.variant, r.task_id, r.repetition), r)
    first = grid[0].cells if grid else ()
    per_rep = sum(1 for c in first if c.repetition == 0) or 1
    reps = len(first) // per_rep
    head = "".join(
        f'<th colspan="{per_rep}">{rep}</th>' + ('<th class="sep"></th>' if per_rep > 1 else "")
        for rep in range(reps)
    )
    rows = []
    for row in grid:
        cells = []
        for index, c in enumerate(row.cells):
            record = by_key.get((c.variant, row.task_id, c.repetition))
            cells.append(f"<td>{_cell(row.task_id, c, record, known)}</td>")
            if per_rep > 1 and index % per_rep == per_rep - 1:
                cells.append('<td class="sep"></td>')
        rows.append(f'<tr><td class="task">{esc(row.task_id)}</td>{"".join(cells)}</tr>')
    return (
        f'<table class="grid" id="grid"><thead><tr><th>task \\ rep</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _run_link(run: FailingRun) -> str:
    return f'<a href="#{anchor(run.task_id, run.repetition)}">{esc(run.task_id)} rep {run.repetition}</a>'


def _failing_html(view: ReportView, records: Sequence[RunRecord]) -> str:
    if view.failing_total == 0:
        return "<p>Every run passed.</p>"
    by_key = {(r.task_id, r.repetition): r for r in records}
    items = []
    for group in view.failing:
        run = group.first
        record = by_key.get((run.task_id, run.repetition))
        if len(group.runs) == 1:
            parts = [f"{_run_link(run)}: {esc(run.label)}"]
        else:
            links = ", ".join(_run_link(r) for r in group.runs)
            parts = [f"<b>{esc(group.heading)}</b><div>runs: {links}</div>"]
        for v in run.verifiers:
            more = f" (+{v.more_lines} more lines)" if v.more_lines else ""
            parts.append(
                f"<div>verifier <b>{esc(v.id)}</b> ({esc(v.kind)}): {esc(str(v.status))}{esc(more)}</div>"
            )
            if v.detail:
                parts.append(f"<pre>{esc(chr(10).join(v.detail))}</pre>")
        if run.divergence is not None:
            parts.append(f"<div>diverged from the cassette at {esc(run.divergence)}</div>")
        if run.divergence_lines:
            parts.append(f"<pre>{esc(chr(10).join(run.divergence_lines))}</pre>")
        if run.errors:
            parts.append(f"<pre>{esc(chr(10).join('error: ' + e for e in run.errors))}</pre>")
        opening = "open it" if len(group.runs) == 1 else "open the first"
        parts.append(f"<div>{opening}: <code>{esc(run.show)}</code></div>")
        items.append(f"<li{'' if record is None else run_attributes(record)}>{''.join(parts)}</li>")
    rest = view.failing_total - sum(len(group.runs) for group in view.failing)
    tail = (
        f'<p class="note">{rest} more run{"" if rest == 1 else "s"} did not pass: see the grid and runs.jsonl.</p>'
        if rest
        else ""
    )
    return f'<ul class="failing" id="failing">{"".join(items)}</ul>{tail}'


def _verifiers_html(record: RunRecord, known: tuple[tuple[str, str], ...]) -> str:
    if not record.verifiers:
        return ""
    rows = []
    for v in record.verifiers:
        detail = redact(v.detail[: _VERIFIER_DETAIL_CHARS + 256], known)[:_VERIFIER_DETAIL_CHARS]
        cut = " […]" if len(v.detail) > _VERIFIER_DETAIL_CHARS else ""
        rows.append(
            f"<tr><td>{esc(v.id)}</td><td>{esc(verifier_kind_text(v))}</td><td>{esc(str(v.status))}</td>"
            f"<td><pre>{esc(detail + cut)}</pre></td></tr>"
        )
    head = "<tr><th>verifier</th><th>kind</th><th>status</th><th>detail</th></tr>"
    return f'<table class="verifiers"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _run_html(
    record: RunRecord, run_id: str, transcript: TranscriptView, known: tuple[tuple[str, str], ...]
) -> str:
    m = record.measured
    label = FailingRun(
        task_id=record.task_id,
        repetition=record.repetition,
        status=record.status,
        reason=record.reason,
        show="",
    ).label
    turns = "turn" if m.turns == 1 else "turns"
    summary = (
        f'<span class="swatch {status_class(record.status)}"></span>{esc(record.task_id)} rep {record.repetition}'
        f" · {esc(label)} · {m.turns} {turns} · {plural(m.tool_calls, 'tool call')} · {m.wall_ms / 1000:.1f} s"
    )
    show = show_command(run_id, record.task_id, record.repetition)
    errors = "".join(f"<pre>error: {esc(redact(e, known))}</pre>" for e in record.errors)
    body = (
        f'<div class="body" id="{anchor(record.task_id, record.repetition)}">'
        f"<p>In a terminal: <code>{esc(show)}</code></p>{_verifiers_html(record, known)}{errors}"
        f"{transcript_html(transcript, show)}</div>"
    )
    return (
        f'<details class="run {status_class(record.status)}"{run_attributes(record)}><summary>{summary}'
        f"</summary>{body}</details>"
    )


def _sequential_html(report: Report) -> list[str]:
    """The section of a sequential report's stops (none for a fixed-k report)."""
    from alisio.core.lab.outputs.render_seq import sequential_table, sequential_totals

    table = sequential_table(report)
    if table is None or report.sequential is None:
        return []
    block = report.sequential
    return [
        f"<section><h2>Sequential stopping</h2>{table_html(table)}<p>{esc(sequential_totals(block))}.</p>"
        f'<p class="note">Method: {esc(block.method)}. The confidence-sequence interval is the valid one '
        "under this stopping; the runs in flight when a task stopped were waited for and are included.</p>"
        "</section>"
    ]


def _runs_html(
    records: Sequence[RunRecord],
    run: str,
    transcripts: Mapping[tuple[str, int], TranscriptView],
    known: tuple[tuple[str, str], ...],
) -> str:
    """Every run, in task and repetition order, with its transcript collapsed."""
    ordered = sorted(records, key=lambda r: (r.task_id, r.repetition))
    return "".join(
        _run_html(
            r, run, transcripts.get((r.task_id, r.repetition), unavailable("no transcript was kept")), known
        )
        for r in ordered
    )


def divergences_html(
    divergences: Sequence[TaskDivergence], run: str, known: tuple[tuple[str, str], ...]
) -> str:
    """A "first divergence" line per task with mixed outcomes, linking its passing and its failing run."""
    lines = []
    for d in divergences:
        a, b = anchor(d.task_id, d.a_repetition), anchor(d.task_id, d.b_repetition)
        command = (
            f"alisio eval diff {shell_word(run)} --task {shell_word(d.task_id)} --rep {d.a_repetition} "
            f"--rep {d.b_repetition}"
        )
        lines.append(
            f'<p class="divergence">{esc(d.task_id)}: {esc(redact(d.line, known))}. A: <a href="#{attr(a)}">'
            f'rep {d.a_repetition} ({esc(d.a_status)})</a>, B: <a href="#{attr(b)}">rep {d.b_repetition} '
            f"({esc(d.b_status)})</a>. In a terminal: <code>{esc(command)}</code></p>"
        )
    return "".join(lines)


def _profile_html(report: Report) -> list[str]:
    """The section of the reliability profile (k >= 2, not replay)."""
    from alisio.core.lab.outputs.render_profile import PROFILE_NOTES, profile_lines, profile_table

    table = profile_table(report)
    if table is None or report.reliability is None:
        return []
    advice, *cost = profile_lines(report.reliability)
    notes = "".join(f'<p class="note">{esc(note)}</p>' for note in PROFILE_NOTES)
    return [
        f"<section><h2>Reliability profile</h2><p>{esc(advice)}</p>{table_html(table)}"
        f"{paragraphs_html(cost)}{notes}</section>"
    ]


def _advisory_html(report: Report) -> list[str]:
    """The tasks' advisory notes (an imported skill eval's expectations): shown, never counted."""
    items = [f"<li>{esc(task.task_id)}: {esc(note)}</li>" for task in report.tasks for note in task.advisory]
    if not items:
        return []
    return [
        '<section id="advisory"><h2>Advisory notes</h2><p class="note">Not checked and never counted: read '
        f"them against the runs.</p><ul>{''.join(items)}</ul></section>"
    ]


def render_report_html(
    report: Report,
    records: Sequence[RunRecord],
    transcripts: Mapping[tuple[str, int], TranscriptView],
    known: tuple[tuple[str, str], ...] = (),
    *,
    show_as: str | None = None,
    divergences: Sequence[TaskDivergence] = (),
) -> str:
    """report.html: the report's page.

    Args:
        report: the report.
        records: its run records (any order).
        transcripts: each run's transcript as the page shows it, keyed by (task, repetition)
            (``alisio.core.lab.outputs.html_transcript.transcript_view``); a missing key says there is none.
        known: exact credentials to redact from the runs' text.
        show_as: what the ``eval show`` commands are given: the run id (default) or the report's directory.
        divergences: the tasks with both passing and failing runs, where a passing one and a failing one part
            (``alisio.core.lab.trajectories.contrast.task_divergences``): a line each under the tasks.

    Returns:
        The page, one self-contained HTML document.
    """
    view = report_view(report, records, known, show_as=show_as)
    c = report.conditions
    runs = _runs_html(records, show_as or c.run_id, transcripts, known)
    reasons = paragraphs_html([f"- {line}" for line in view.reasons]) if view.reasons else ""
    estimated = (
        f'{table_html(view.estimated)}<p class="note">{esc(view.estimated_note)}</p>'
        if view.estimated is not None
        else f"<p>{esc(view.estimated_note)}</p>"
    )
    body = [
        f'<header><h1>{esc(view.title)}</h1><p class="answer" id="answer">{esc(view.answer)}</p>'
        f"{notices_html(view.notices)}</header>",
        f"<section><h2>Tasks</h2>{forest_table_html(report, view)}{reasons}"
        f"{divergences_html(divergences, show_as or c.run_id, known)}"
        f'<p class="note">{esc(view.tasks_note)} The plot shows each success rate (point) and its 95% '
        "interval (bar) on a 0-100% axis.</p></section>",
        *_sequential_html(report),
        f"<section><h2>Runs</h2>{legend_html()}{grid_html(view.grid, records, known)}"
        '<p class="note">Each cell is one run; it opens that run\'s transcript below.</p></section>',
        f"<section><h2>Conditions</h2>{conditions_html(view.conditions)}</section>",
        f"<section><h2>Summary</h2>{paragraphs_html(view.summary)}</section>",
        *_profile_html(report),
        f"<section><h2>Runs that did not pass</h2>{groups_html(records)}{_failing_html(view, records)}</section>",
        f'<section><h2>Measured</h2>{table_html(view.measured)}<p class="note">{esc(view.measured_note)}</p></section>',
        f"<section><h2>Estimated</h2>{estimated}</section>",
        *_advisory_html(report),
        f'<section id="transcripts"><h2>Transcripts</h2>{filter_form_html(records)}<p class="note">Collapsed; '
        "a cell of the grid opens one. Texts are cut to fit the page (each cut is stated); the whole "
        f"transcripts are in runs/ beside this page.</p>{runs}</section>",
        f"<footer>alisio {esc(c.harness_version)} · run {esc(c.run_id)} · {esc(c.created_at)} · the numbers are "
        "those of report.json beside this page</footer>",
    ]
    return page(view.title, "\n".join(body), (FILTER_SCRIPT, script_source(FILTER_SCRIPT)))
