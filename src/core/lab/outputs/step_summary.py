"""The short Markdown that ``eval run``, ``compare``, ``variants`` and ``ci`` append to ``$GITHUB_STEP_SUMMARY``.

Rules this module keeps:

- Short: a heading, the notices a reader must not miss (replay, scripted provider, interrupted), the
  conditions in one line (the agent named: ``alisio.core.lab.reports.naming``), the task table as report.md has it (``alisio.core.lab.outputs.view``) or the verdicts as
  comparison.md has them (``alisio.core.lab.outputs.view_compare``), and the suite line. No run details, no paths:
  the report files hold those.
- Every block ends with a blank line, so blocks appended by several commands to one file stay apart.
"""

from __future__ import annotations

from collections.abc import Sequence

from alisio.core.base import Frozen
from alisio.core.lab.comparisons.compare import Comparison
from alisio.core.lab.comparisons.gate import GateResult, describe_gate
from alisio.core.lab.comparisons.variants import VariantsComparison
from alisio.core.lab.outputs.render import markdown_inline, markdown_table
from alisio.core.lab.outputs.render_compare import comparison_table_rows
from alisio.core.lab.outputs.view import report_view, suite_rate_line
from alisio.core.lab.outputs.view_compare import comparison_view
from alisio.core.lab.reports.naming import mode_text, naming_brief
from alisio.core.lab.reports.report import Report
from alisio.core.text import plural

__all__ = ["CiSuiteLine", "ci_summary", "comparison_summary", "run_summary", "variants_summary"]


def _conditions_line(report: Report) -> str:
    c = report.conditions
    s = report.summary
    return (
        f"{markdown_inline(c.provider)} / {markdown_inline(c.model)}, agent {markdown_inline(naming_brief(c))}, "
        f"mode {mode_text(c)}, k = {c.k}, seed {c.seed}, config `{c.config_hash[:16]}`, "
        f"run `{c.run_id}`: {plural(s.runs, 'run')} ({s.passes} pass, {s.fails} fail, {s.budget_exceeded} "
        f"budget_exceeded, {s.errored} error)."
    )


def _report_block(report: Report, heading: str) -> list[str]:
    view = report_view(report)
    lines = [heading, ""]
    notices = [(markdown_inline(n.text), n.strong) for n in view.notices]  # a provider's message is untrusted
    lines += [f"> {'**' + text + '**' if strong else text}" for text, strong in notices]
    if view.notices:
        lines.append("")
    lines += [_conditions_line(report), ""]
    lines += markdown_table(view.tasks.header, view.tasks.rows)
    return [*lines, "", suite_rate_line(report), ""]


def run_summary(report: Report, command: str = "alisio eval run") -> str:
    """The summary of one report: ``### alisio eval run: calc-suite 1.0.0 (live)``, the table, the suite line."""
    view = report_view(report)
    title = view.title.removeprefix("Eval report: ")
    return "\n".join(_report_block(report, f"### {command}: {title}")) + "\n"


def _comparison_block(comparison: Comparison, heading: str, result: GateResult | None) -> list[str]:
    view = comparison_view(comparison)
    lines = [heading, ""]
    lines += [f"> {markdown_inline(n.text)}" for n in view.notices] + ([""] if view.notices else [])
    lines += [f"> warning: {markdown_inline(w)}" for w in view.warnings] + ([""] if view.warnings else [])
    lines += markdown_table(view.tasks.header, comparison_table_rows(view))
    lines += ["", view.outcomes]
    if view.verdicts:
        lines += ["", view.verdicts[0]]
    if result is not None:
        lines += ["", *(f"- Gate {line}." for line in describe_gate(result))]
    return [*lines, ""]


def comparison_summary(comparison: Comparison, result: GateResult | None = None) -> str:
    """The summary of ``eval compare``: the verdict table, the outcomes, the rule, and the gate when set."""
    title = comparison_view(comparison).title
    return "\n".join(_comparison_block(comparison, f"### alisio eval compare: {title}", result)) + "\n"


def variants_summary(result: VariantsComparison, reports: Sequence[tuple[str, Report]]) -> str:
    """The summary of ``eval variants``: each variant's suite line, then the baseline against each other one."""
    lines = [f"### alisio eval variants: {result.suite_id}", ""]
    rows = [
        (
            variant,
            naming_brief(report.conditions),
            f"`{report.conditions.config_hash[:16]}`",
            str(report.summary.runs),
            suite_rate_line(report),
        )
        for variant, report in reports
    ]
    lines += markdown_table(("Variant", "Agent", "Configuration", "Runs", "Suite success rate"), rows)
    lines.append("")
    for entry in result.comparisons:
        lines += _comparison_block(entry.comparison, f"#### {entry.baseline} → {entry.candidate}", None)
    return "\n".join(lines) + "\n"


class CiSuiteLine(Frozen, frozen=True, kw_only=True):
    """One suite of ``eval ci`` as its summary shows it."""

    suite: str
    status: str
    """``replayed``, ``skipped`` or ``error``."""
    replayed: int = 0
    passed: int = 0
    diverged: int = 0
    not_passing: int = 0
    note: str = ""


def ci_summary(suites: Sequence[CiSuiteLine], verdict: str) -> str:
    """The summary of ``eval ci``: a row per suite, then the command's verdict line."""
    rows = [
        (s.suite, s.status, str(s.replayed), str(s.passed), str(s.diverged), str(s.not_passing), s.note)
        for s in suites
    ]
    header = ("Suite", "Status", "Cassettes replayed", "pass", "diverged", "not passing", "Note")
    lines = ["### alisio eval ci", "", *markdown_table(header, rows), "", verdict, ""]
    return "\n".join(lines) + "\n"
