"""Markdown for comparisons: comparison.md and ``alisio eval compare``.

What a comparison shows is decided by ``alisio.core.lab.outputs.view_compare`` (shared with comparison.html
and the CI summary); this module lays it out as Markdown: the answer (the verdicts counted, the suite rates
with their intervals), both conditions, the warnings, a verdict per task (the clear verdicts in bold), the
rule that made them, the per-task tests, measured and estimated deltas apart, the suite summary and the
limits footnote.
"""

from __future__ import annotations

from collections.abc import Sequence

from alisio.core.lab.comparisons.compare import Comparison, Delta, SideCounts
from alisio.core.lab.comparisons.gate import OUTCOME_LABEL
from alisio.core.lab.outputs.formats import format_pp, format_rate, visible_controls
from alisio.core.lab.outputs.render import markdown_inline, markdown_table
from alisio.core.lab.outputs.view import Table
from alisio.core.lab.outputs.view_compare import ComparisonView, comparison_view

__all__ = [
    "BOLD_OUTCOMES",
    "comparison_table_rows",
    "render_comparison_markdown",
    "render_comparison_summary",
]

BOLD_OUTCOMES = frozenset({"improved", "regressed", "changed"})
"""Outcomes printed in bold: the ones that claim something happened."""


def _table(table: Table) -> list[str]:
    rows = list(table.rows)
    if table.total and rows:
        rows[-1] = (f"**{rows[-1][0]}**", *rows[-1][1:])
    return markdown_table(table.header, rows)


def comparison_table_rows(view: ComparisonView) -> list[tuple[str, ...]]:
    """The tasks table's rows with the clear outcomes in bold."""
    return [
        (row[0], f"**{row[1]}**" if row[1] in BOLD_OUTCOMES else row[1], *row[2:]) for row in view.tasks.rows
    ]


def render_comparison_markdown(comparison: Comparison) -> str:
    """comparison.md: both conditions, warnings, a verdict per task (and the rule that made them), the
    per-task tests, measured and estimated deltas apart, the suite summary and the limits footnote.
    """
    view = comparison_view(comparison)
    lines = [f"# {view.title}", "", f"**{markdown_inline(view.answer)}**", ""]
    for notice in view.notices:
        lines += [f"> {markdown_inline(notice.text)}", ""]

    def code(value: str, is_code: bool) -> str:
        return f"`{value}`" if is_code else value

    rows = [[c.name, code(c.baseline, c.code), code(c.candidate, c.code)] for c in view.conditions]
    lines += markdown_table(("Condition", "Baseline", "Candidate"), rows)
    if view.warnings:
        lines += ["", "Warnings:", *(f"- {markdown_inline(w)}" for w in view.warnings)]
    lines += ["", "## Tasks", "", *markdown_table(view.tasks.header, comparison_table_rows(view))]
    lines += ["", view.outcomes]
    if view.verdicts:
        lines += ["", view.verdicts[0], "", *view.verdicts[1:]]
    if view.tests is not None:
        lines += ["", "## Per-task tests", "", *_table(view.tests), "", *(f"- {n}" for n in view.tests_notes)]
    lines += [
        "",
        "## Measured deltas (baseline → candidate)",
        "",
        *_table(view.measured),
        "",
        view.measured_note,
    ]
    lines += [
        "",
        "## Estimated deltas (baseline → candidate)",
        "",
        *_table(view.estimated),
        "",
        view.total_cost,
    ]
    lines += ["", "## Summary", "", *view.summary]
    lines += ["", "## Limits", "", *(f"- {line}" for line in view.limits)]
    return "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    """Text from a report (a task id, a warning naming one) as one line, its control characters visible."""
    return visible_controls(text.replace("\n", "\\n").replace("\r", "\\r"))


def _side(side: SideCounts | None) -> str:
    """``9/10 90.0%`` (``, 2 error`` when some errored), or ``absent``."""
    if side is None:
        return "absent"
    errored = f", {side.errored} error" if side.errored else ""
    return f"{side.passes}/{side.judged} {format_rate(side.success_rate, None)}{errored}"


def _change(delta: Delta | None) -> str:
    return "" if delta is None or delta.delta is None else format_pp(delta.delta)


def _plain_table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]
    ]


def render_comparison_summary(
    comparison: Comparison, *, full: str | None, gate_lines: tuple[str, ...]
) -> str:
    """What ``eval compare`` prints on a terminal: the title, warnings, a verdict per task, the outcome counts,
    the gate and where the full Markdown went; plain text (no Markdown), a screen long for a few tasks.

    Args:
        full: where comparison.md was written (``None``: it could not be, and the line says so).
        gate_lines: ``describe_gate``'s lines, or none without ``--fail-on``.
    """
    view = comparison_view(comparison)
    lines = [view.title, ""]
    lines += [f"warning: {_one_line(w)}" for w in view.warnings]
    rows = [
        (
            _one_line(t.task_id),
            OUTCOME_LABEL[t.outcome],
            _side(t.baseline),
            _side(t.candidate),
            _change(t.success_rate),
        )
        for t in comparison.tasks
    ]
    header = ("task", "verdict", "baseline", "candidate", "change")
    lines += [*([""] if view.warnings else []), *_plain_table(header, rows), ""]
    lines.append(view.outcomes)
    if view.summary and not comparison.replay:
        lines.append(view.summary[0])  # the suite difference
    lines += list(gate_lines) or ["Gate: none (--fail-on regressed or inconclusive sets one)."]
    where = f"Full comparison (Markdown): {full}" if full else "Full comparison: not written"
    return "\n".join([*lines, f"{where}; --format md prints it, --json the data."]) + "\n"
