"""What ``alisio eval variants`` writes of its arms: the progress line of a run with its variant, and
comparison.md (the variants with their agents, overrides and hashes, then the baseline against each variant).

The variants' model, plan and comparison are ``alisio.core.lab.comparisons.variants``'.
"""

from __future__ import annotations

from alisio.core.lab.comparisons.robustness import robustness_sentence
from alisio.core.lab.comparisons.variants import VariantsComparison, describe_overrides
from alisio.core.lab.outputs.progress import progress_line
from alisio.core.lab.outputs.render import markdown_table
from alisio.core.lab.outputs.render_compare import render_comparison_markdown
from alisio.core.lab.outputs.render_seq import decision_table, sequential_totals
from alisio.core.lab.outputs.render_tradeoff import tradeoff_markdown
from alisio.core.lab.outputs.view_compare import context_subject
from alisio.core.lab.reports.naming import UNKNOWN_AGENT
from alisio.core.lab.reports.seq_block import SequentialBlock
from alisio.core.lab.runs.records import RunRecord
from alisio.core.text import plural

__all__ = ["render_variants_markdown", "variant_progress_line"]


def variant_progress_line(index: int, total: int, record: RunRecord) -> str:
    """``[3/20] early-compaction fix-add #2: pass (4 turns, 12.3 s)``: ``progress_line`` with the variant."""
    line = progress_line(index, total, record)
    if record.variant is None:
        return line
    head, _, rest = line.partition("] ")
    return f"{head}] {record.variant} {rest}"


def _demoted(markdown: str) -> list[str]:
    """Headings one level deeper, so each comparison nests under the document title."""
    return [f"#{line}" if line.startswith("#") else line for line in markdown.splitlines()]


def _sequential_context(result: VariantsComparison, block: SequentialBlock) -> list[str]:
    """``The context agents-md helped on 1 task, hurt on 0, no verdict on 1 (sequential decisions, FWER 5%).``
    when the two variants' contexts differ: the decided tasks by direction, every other one (futility,
    undecided at --max-k, interrupted) without a verdict."""
    subject = context_subject(result.comparisons[0].comparison) if result.comparisons else None
    if subject is None:
        return []
    helped = sum(1 for t in block.tasks if t.reason == "decided" and t.direction == "improved")
    hurt = sum(1 for t in block.tasks if t.reason == "decided" and t.direction == "regressed")
    none = len(block.tasks) - helped - hurt
    alpha = f"{block.plan.alpha:.0%}"
    return [
        "",
        f"{subject} helped on {plural(helped, 'task')}, hurt on {hurt}, no verdict on {none} "
        f"(sequential decisions, FWER {alpha}).",
    ]


def _sequential_section(block: SequentialBlock, result: VariantsComparison) -> list[str]:
    """The sequential decisions of a two-variant ``--sequential`` run, before the (peeking) fixed-k verdicts."""
    table = decision_table(block)
    return [
        "",
        "## Sequential decisions",
        "",
        *markdown_table(table.header, table.rows),
        "",
        sequential_totals(block, arms=2) + ".",
        "",
        f"Method: {block.method}. These decisions are the valid ones: the fixed-k verdicts below re-read the "
        "same runs as if their number had been fixed in advance, which it was not.",
        *_sequential_context(result, block),
    ]


def render_variants_markdown(result: VariantsComparison) -> str:
    """comparison.md: the variants with their overrides and hashes, then the baseline against each variant."""
    lines = [f"# Variants: {result.suite_id}", ""]
    header = ("Variant", "Role", "Agent", "Configuration hash", "Overrides")
    rows = [
        (
            info.id,
            "baseline" if info.id == result.baseline else "candidate",
            info.agent or UNKNOWN_AGENT,
            info.config_hash[:16],
            describe_overrides(info.overrides, info.model),
        )
        for info in result.variants
    ]
    lines += markdown_table(header, rows)
    lines += [
        "",
        "The variants ran interleaved over the same tasks, repetitions and seeds (A, B, then B, A...): this "
        "spreads provider drift over the arms, it does not remove it.",
    ]
    if result.sequential is not None:
        lines += _sequential_section(result.sequential, result)
    tradeoff = tradeoff_markdown(result.rate_cost)
    if tradeoff:
        lines += ["", *tradeoff]
    if result.robustness:
        lines += [
            "",
            "## Robustness under injected faults",
            "",
            *(f"- {robustness_sentence(row)}." for row in result.robustness),
        ]
    for entry in result.comparisons:
        title, *body = _demoted(render_comparison_markdown(entry.comparison))
        lines += ["", f"## {entry.baseline} → {entry.candidate}: {title.lstrip('# ')}", *body]
    return "\n".join(lines) + "\n"
