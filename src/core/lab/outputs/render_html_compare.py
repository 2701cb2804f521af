"""comparison.html: a comparison (``eval compare --html``) or the variants of ``eval variants`` as one page.

What is shown is decided by ``alisio.core.lab.outputs.view_compare`` (as comparison.md); this module lays it
out with ``alisio.core.lab.outputs.html_page``: the answer first (the verdicts counted, the suite rates with
their intervals), the warnings, then per task both sides' success rates and 95% intervals on one 0-100% axis
(baseline grey above, candidate blue below) beside the verdict and its reason, then the conditions (those
that differ highlighted). The variants page opens with each comparison's answer, and adds the variants with
their agents and overrides and the interleaved grid (each repetition's runs side by side, one per variant,
each cell opening the run's transcript in its variant's report.html).

Rules it keeps: no script and nothing loaded; every string escaped; the limits footnote always shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from alisio.core.base import Frozen
from alisio.core.lab.comparisons.compare import Comparison, SideCounts
from alisio.core.lab.comparisons.robustness import robustness_sentence
from alisio.core.lab.comparisons.variants import VariantsComparison, describe_overrides
from alisio.core.lab.outputs.html_page import (
    Bar,
    anchor,
    attr,
    axis_svg,
    esc,
    forest_svg,
    legend_html,
    notices_html,
    page,
    paragraphs_html,
    table_html,
)
from alisio.core.lab.outputs.render_html import REPORT_HTML, grid_html
from alisio.core.lab.outputs.view import variant_grid
from alisio.core.lab.outputs.view_compare import ComparisonView, SideCondition, answer_line, comparison_view
from alisio.core.lab.reports.naming import UNKNOWN_AGENT
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.trajectories.contrast import TaskDivergence

__all__ = [
    "SideLinks",
    "comparison_body_html",
    "linked_run",
    "render_comparison_html",
    "render_variants_html",
]


class SideLinks(Frozen, frozen=True, kw_only=True):
    """Where one side's report.html is, relative to comparison.html, and the run linked for each task."""

    report: str
    """The href of the side's report.html (relative to comparison.html, URL-quoted)."""
    runs: tuple[tuple[str, int, str], ...] = ()
    """(task id, repetition, status) of the run whose transcript each task links to."""


def linked_run(records: Sequence[RunRecord], task_id: str) -> RunRecord | None:
    """The run of ``task_id`` a comparison links to: its first run that did not pass, else its first run."""
    runs = sorted((r for r in records if r.task_id == task_id), key=lambda r: r.repetition)
    return next((r for r in runs if r.status != "pass"), runs[0] if runs else None)


def _reports_html(links: tuple[SideLinks | None, SideLinks | None]) -> str:
    parts = [
        f'{side}: <a href="{attr(link.report)}">{esc(link.report)}</a>'
        for side, link in zip(("baseline", "candidate"), links, strict=True)
        if link is not None
    ]
    return f'<p class="reports" id="reports">Reports: {" · ".join(parts)}</p>' if parts else ""


def _divergence_html(
    divergence: TaskDivergence | None, links: tuple[SideLinks | None, SideLinks | None]
) -> str:
    """The task's "first divergence" line, linking the baseline's run (A) and the candidate's (B)."""
    base, cand = links
    if divergence is None or base is None or cand is None:
        return ""
    d = divergence
    a = f"{base.report}#{anchor(d.task_id, d.a_repetition)}"
    b = f"{cand.report}#{anchor(d.task_id, d.b_repetition)}"
    return (
        f'<br><span class="divergence">{esc(d.line)}: A <a href="{attr(a)}">baseline rep {d.a_repetition} '
        f'({esc(d.a_status)})</a>, B <a href="{attr(b)}">candidate rep {d.b_repetition} ({esc(d.b_status)})</a>'
        "</span>"
    )


def _transcript_links(task_id: str, links: tuple[SideLinks | None, SideLinks | None]) -> str:
    out = []
    for side, link in zip(("baseline", "candidate"), links, strict=True):
        found = None if link is None else next((r for r in link.runs if r[0] == task_id), None)
        if link is not None and found is not None:
            href = f"{link.report}#{anchor(task_id, found[1])}"
            out.append(f'<a href="{attr(href)}">{side} rep {found[1]} ({esc(found[2])})</a>')
    return "<br>".join(out)


_BADGE = {
    "improved": "improved",
    "regressed": "regressed",
    "inconclusive": "inconclusive",
    "changed": "changed",
}


def _bar(side: SideCounts | None, cls: str, label: str) -> Bar:
    if side is None:
        return Bar(rate=None, cls=cls, label=f"{label}: absent")
    return Bar(rate=side.success_rate, interval=side.interval, cls=cls, label=label)


def _conditions_html(conditions: Sequence[SideCondition]) -> str:
    rows = []
    for c in conditions:
        differs = ' class="differs"' if c.baseline != c.candidate else ""
        values = [f"<code>{esc(v)}</code>" if c.code else esc(v) for v in (c.baseline, c.candidate)]
        rows.append(f"<tr{differs}><th>{esc(c.name)}</th><td>{values[0]}</td><td>{values[1]}</td></tr>")
    head = "<tr><th>Condition</th><th>Baseline</th><th>Candidate</th></tr>"
    return f'<table class="conditions" id="conditions"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _tasks_html(
    comparison: Comparison,
    view: ComparisonView,
    links: tuple[SideLinks | None, SideLinks | None],
    divergences: Sequence[TaskDivergence] = (),
) -> str:
    header = view.tasks.header
    linked = any(link is not None and link.runs for link in links)
    head = f'<th>{esc(header[0])}</th><th class="plot">{axis_svg()}</th>'
    head += "".join(f"<th>{esc(h)}</th>" for h in header[1:]) + ("<th>Transcripts</th>" if linked else "")
    rows = []
    for task, row in zip(comparison.tasks, view.tasks.rows, strict=True):
        bars = [
            _bar(task.baseline, "baseline", f"baseline {row[2]}"),
            _bar(task.candidate, "candidate", f"candidate {row[3]}"),
        ]
        badge = f'<span class="badge {_BADGE.get(row[1], "other")}">{esc(row[1])}</span>'
        cells = [f'<td class="nw">{esc(row[0])}</td>', f'<td class="plot">{forest_svg(bars)}</td>']
        cells += [f'<td class="nw">{badge}</td>', *(f"<td>{esc(cell)}</td>" for cell in row[2:])]
        if linked:
            found = next((d for d in divergences if d.task_id == task.task_id), None)
            links_html = _transcript_links(task.task_id, links) + _divergence_html(found, links)
            cells.append(f'<td class="nw">{links_html}</td>')
        rows.append(f'<tr class="task">{"".join(cells)}</tr>')
    key = (
        '<p class="legend"><span class="item"><span class="swatch base"></span>'
        'baseline (upper bar)</span><span class="item"><span class="swatch cand">'
        "</span>candidate (lower bar)</span>point: success rate; bar: its 95% Wilson interval</p>"
    )
    table = f'<table class="forest compare" id="forest"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    return key + table


def comparison_body_html(
    comparison: Comparison,
    level: int = 2,
    links: tuple[SideLinks | None, SideLinks | None] = (None, None),
    divergences: Sequence[TaskDivergence] = (),
) -> str:
    """A comparison's sections (without the page around them): the answer, the warnings, the verdicts, then the
    conditions (those that differ highlighted) and the rest; ``level`` is the heading level of its sections;
    ``links`` lead to each side's report.html and, per task, to a run's transcript there; ``divergences``
    add a "first divergence" line to the tasks where one side passed and the other failed."""
    view = comparison_view(comparison)
    h = f"h{level}"
    warnings = (
        "".join(f'<p class="notice">warning: {esc(w)}</p>' for w in view.warnings) if view.warnings else ""
    )
    tests = ""
    if view.tests is not None:
        notes = paragraphs_html([f"- {n}" for n in view.tests_notes], "note")
        tests = f"<{h}>Per-task tests</{h}>{table_html(view.tests)}{notes}"
    limits = "".join(f"<li>{esc(line)}</li>" for line in view.limits)
    parts = [
        f'<p class="answer">{esc(view.answer)}</p>',
        notices_html(view.notices),
        warnings,
        _reports_html(links),
        f"<{h}>Tasks</{h}>{_tasks_html(comparison, view, links, divergences)}<p>{esc(view.outcomes)}</p>",
        paragraphs_html(view.verdicts, "note") if view.verdicts else "",
        f"<{h}>Conditions</{h}>{_conditions_html(view.conditions)}",
        tests,
        f"<{h}>Summary</{h}>{paragraphs_html(view.summary)}",
        f"<{h}>Measured deltas (baseline → candidate)</{h}>{table_html(view.measured)}"
        f'<p class="note">{esc(view.measured_note)}</p>',
        f"<{h}>Estimated deltas (baseline → candidate)</{h}>{table_html(view.estimated)}<p>{esc(view.total_cost)}</p>",
        f'<{h}>Limits</{h}><ul class="limits">{limits}</ul>',
    ]
    return "".join(parts)


def render_comparison_html(
    comparison: Comparison,
    links: tuple[SideLinks | None, SideLinks | None] = (None, None),
    divergences: Sequence[TaskDivergence] = (),
) -> str:
    """comparison.html of ``eval compare --html``: the comparison as one self-contained page, linking to
    each side's report.html and each task's transcripts there when ``links`` says where they are, with a
    "first divergence" line where a task passed on one side and failed on the other (``divergences``)."""
    view = comparison_view(comparison)
    body_html = comparison_body_html(comparison, links=links, divergences=divergences)
    body = f"<header><h1>{esc(view.title)}</h1></header>{body_html}"
    return page(view.title, body)


def _variants_table(result: VariantsComparison) -> str:
    rows = []
    for info in result.variants:
        role = "baseline" if info.id == result.baseline else "candidate"
        link = f'<a href="{attr(info.id)}/{REPORT_HTML}">{esc(info.id)}/{REPORT_HTML}</a>'
        rows.append(
            f"<tr><td>{esc(info.id)}</td><td>{role}</td><td>{esc(info.agent or UNKNOWN_AGENT)}</td>"
            f"<td><code>{esc(info.config_hash[:16])}</code></td>"
            f"<td>{esc(describe_overrides(info.overrides, info.model))}</td><td>{link}</td></tr>"
        )
    head = (
        "<tr><th>Variant</th><th>Role</th><th>Agent</th><th>Configuration hash</th><th>Overrides</th>"
        "<th>Report</th></tr>"
    )
    return f'<table id="variants"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _sequential_section(result: VariantsComparison) -> list[str]:
    """The decisions of ``--sequential`` (none for a fixed k), before the fixed-k verdicts that peek."""
    from alisio.core.lab.outputs.render_seq import decision_table, sequential_totals

    block = result.sequential
    if block is None:
        return []
    return [
        f"<section><h2>Sequential decisions</h2>{table_html(decision_table(block))}"
        f'<p>{esc(sequential_totals(block, arms=2))}.</p><p class="note">Method: {esc(block.method)}. These '
        "decisions are the valid ones: the fixed-k verdicts below re-read the same runs as if their number had "
        "been fixed in advance, which it was not.</p></section>"
    ]


def render_variants_html(
    result: VariantsComparison,
    records: Sequence[tuple[str, Sequence[RunRecord]]],
    task_ids: Sequence[str],
    k: int,
    known: tuple[tuple[str, str], ...] = (),
) -> str:
    """comparison.html of ``eval variants``: the variants, the interleaved grid, then the baseline against
    each other variant.

    Args:
        result: the comparison of the variants.
        records: each variant's id and records, in the variants' order.
        task_ids: the tasks, in report order.
        k: repetitions per task.
        known: exact credentials to redact from the runs' text (cell tooltips).
    """
    title = f"Variants: {result.suite_id}"
    order = ", ".join(variant for variant, _ in records)
    grid = variant_grid(task_ids, records, k)
    every = [record for _, mine in records for record in mine]
    answers = "".join(
        f'<p class="answer">{esc(entry.baseline)} → {esc(entry.candidate)}: {esc(answer_line(entry.comparison))}</p>'
        for entry in result.comparisons
    )
    sections = [
        f"<header><h1>{esc(title)}</h1>{answers}</header>",
        f'<section><h2>Variants</h2>{_variants_table(result)}<p class="note">The variants ran interleaved over '
        "the same tasks, repetitions and seeds (A, B, then B, A...): this spreads provider drift over the arms, "
        "it does not remove it.</p></section>",
        f'<section><h2>Runs</h2>{legend_html()}{grid_html(grid, every, known)}<p class="note">Each repetition '
        f"shows one run per variant, in this order: {esc(order)}. A cell opens that run's transcript in its "
        "variant's report.html.</p></section>",
    ]
    sections += _sequential_section(result)
    if result.robustness:
        items = "".join(f"<li>{esc(robustness_sentence(row))}</li>" for row in result.robustness)
        sections.append(
            f'<section id="robustness"><h2>Robustness under injected faults</h2><ul>{items}</ul></section>'
        )
    for entry in result.comparisons:
        heading = f"{entry.baseline} → {entry.candidate}"
        sections.append(
            f'<section class="comparison"><h2>{esc(heading)}</h2>{comparison_body_html(entry.comparison, 3)}</section>'
        )
    return page(title, "\n".join(sections))
