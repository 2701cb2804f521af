"""Markdown for comparisons: comparison.md and ``alisio eval compare``.

What a comparison shows is decided by ``alisio.core.lab.view_compare`` (shared with comparison.html and the
CI summary); this module lays it out as Markdown: both conditions, the warnings, a verdict per task (the
clear verdicts in bold), the rule that made them, the per-task tests, measured and estimated deltas apart,
the suite summary and the limits footnote.
"""

from __future__ import annotations

from alisio.core.lab.compare import Comparison
from alisio.core.lab.render import markdown_table
from alisio.core.lab.view import Table
from alisio.core.lab.view_compare import ComparisonView, comparison_view

__all__ = ["BOLD_OUTCOMES", "comparison_table_rows", "render_comparison_markdown"]

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
    lines = [f"# {view.title}", ""]
    for notice in view.notices:
        lines += [f"> {notice.text}", ""]

    def code(value: str, is_code: bool) -> str:
        return f"`{value}`" if is_code else value

    rows = [[c.name, code(c.baseline, c.code), code(c.candidate, c.code)] for c in view.conditions]
    lines += markdown_table(("Condition", "Baseline", "Candidate"), rows)
    if view.warnings:
        lines += ["", "Warnings:", *(f"- {w}" for w in view.warnings)]
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
