"""``eval variants``: read compare.json before the first run, and write the comparison after the last
(comparison.json, comparison.md and comparison.html at the root).

The runs themselves go through the lab's one pipeline (``alisio.shell.lab.pipeline``): each variant is an
arm with its own measured configuration, report directory ``<root>/<variant-id>/`` and run id
``<runId>/<variant-id>``, interleaved over the same tasks, repetitions and seeds
(``alisio.core.lab.variants.interleave``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec
from returns.result import Failure

from alisio.core.harness.config import MeasuredConfig
from alisio.core.lab.records import RunRecord
from alisio.core.lab.render_html_compare import render_variants_html
from alisio.core.lab.report import Report
from alisio.core.lab.variants import (
    VariantsComparison,
    VariantsPlan,
    check_suite,
    compare_variants,
    parse_variants,
    render_variants_markdown,
)
from alisio.shell.lab.errors import LabError
from alisio.shell.lab.store import write_bytes_atomic
from alisio.shell.lab.suites import LoadedSuite

__all__ = ["COMPARISON_HTML", "COMPARISON_JSON", "COMPARISON_MD", "read_variants", "write_comparison"]

COMPARISON_JSON = "comparison.json"
COMPARISON_MD = "comparison.md"
COMPARISON_HTML = "comparison.html"


def read_variants(path: Path, base: MeasuredConfig, loaded: LoadedSuite) -> VariantsPlan:
    """compare.json at ``path``, validated against ``base`` and the suite being run.

    Raises:
        LabError: the file cannot be read, is invalid (naming the variant, the key and why), or names
            another suite.
    """
    try:
        data = path.read_bytes()
    except OSError as error:
        raise LabError(f"--variants {path}: cannot read: {error.strerror or error}") from None
    source = str(path)
    parsed = parse_variants(data, source, base).bind(
        lambda plan: check_suite(plan, loaded.suite.suite_id, loaded.directory.name, source)
    )
    if isinstance(parsed, Failure):
        raise LabError(str(parsed.failure()), "nothing was run: fix the variants file")
    plan: VariantsPlan = parsed.unwrap()
    return plan


def write_comparison(
    plan: VariantsPlan,
    reports: Sequence[Report],
    root: Path,
    records: Sequence[Sequence[RunRecord]] = (),
    known: tuple[tuple[str, str], ...] = (),
) -> VariantsComparison:
    """Compare the variants' reports and write comparison.json, comparison.md and comparison.html at ``root``.

    Args:
        plan: the variants, baseline first.
        reports: their reports, in the same order.
        root: the command's report directory (each variant's report directory is below it).
        records: each variant's records, in the same order (the page's interleaved grid; none: an empty grid).
        known: exact credentials kept out of the page.

    Raises:
        LabError: the reports cannot be compared (a bug: they share their suite).
    """
    compared = compare_variants(plan.variants, reports)
    if isinstance(compared, Failure):
        raise LabError(f"the variants' reports cannot be compared: {compared.failure()}")
    comparison: VariantsComparison = compared.unwrap()
    write_bytes_atomic(root / COMPARISON_JSON, msgspec.json.encode(comparison))
    write_bytes_atomic(root / COMPARISON_MD, render_variants_markdown(comparison).encode())
    ids = [variant.id for variant in plan.variants]
    arms = list(zip(ids, records, strict=True)) if records else [(variant, ()) for variant in ids]
    task_ids = sorted({task.task_id for report in reports for task in report.tasks})
    k = reports[0].conditions.k if reports else 1
    page = render_variants_html(comparison, arms, task_ids, k, known)
    write_bytes_atomic(root / COMPARISON_HTML, page.encode())
    return comparison
