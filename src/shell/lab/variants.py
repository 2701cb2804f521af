"""``eval variants``: read compare.json before the first run, and compare the variants' reports after the
last (``alisio.shell.lab.outputs`` writes comparison.json, comparison.md and comparison.html at the root).

The runs themselves go through the lab's one pipeline (``alisio.shell.lab.pipeline``): each variant is an
arm with its own measured configuration, report directory ``<root>/<variant-id>/`` and run id
``<runId>/<variant-id>``, interleaved over the same tasks, repetitions and seeds
(``alisio.core.lab.comparisons.variants.interleave``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

import msgspec

from alisio.core.harness.config import MeasuredConfig
from alisio.core.lab.comparisons.variants import (
    VariantsComparison,
    VariantsPlan,
    check_suite,
    compare_variants,
    parse_variants,
)
from alisio.core.lab.plans.seq_run import both_arms
from alisio.core.lab.reports.report import Report
from alisio.shell.errors import CommandError, expect
from alisio.shell.lab.store import read_regular
from alisio.shell.lab.suites import LoadedSuite

__all__ = ["VARIANTS_MAX_BYTES", "compare_arms", "read_variants"]

VARIANTS_MAX_BYTES: Final = 16 << 20
"""The largest variants file read (``--variants``, or the one a resumed job's plan.json names): 16 MiB, as a
suite.json; a larger one, a device or a FIFO is refused before anything is read into memory."""


def read_variants(path: Path, base: MeasuredConfig, loaded: LoadedSuite) -> VariantsPlan:
    """compare.json at ``path``, validated against ``base`` and the suite being run.

    Raises:
        CommandError: the file cannot be read (it is not a regular file, such as ``/dev/zero`` or a FIFO, or
            is larger than ``VARIANTS_MAX_BYTES``), is invalid (naming the variant, the key and why), or names
            another suite.
    """
    try:
        data = read_regular(path, VARIANTS_MAX_BYTES, "a variants file")
    except OSError as error:
        raise CommandError(f"variants file {path}: cannot read: {error.strerror or error}") from None
    source = str(path)
    parsed = parse_variants(data, source, base).bind(
        lambda plan: check_suite(plan, loaded.suite.suite_id, loaded.directory.name, source)
    )
    return expect(parsed, "", "nothing was run: fix the variants file")


def compare_arms(plan: VariantsPlan, reports: Sequence[Report]) -> VariantsComparison:
    """Compare the variants' reports (``plan``'s order, baseline first); the outputs table writes it.

    Raises:
        CommandError: the reports cannot be compared (a bug: they share their suite).
    """
    compared = expect(compare_variants(plan.variants, reports), "the variants' reports cannot be compared")
    blocks = [report.sequential for report in reports if report.sequential is not None]
    return msgspec.structs.replace(compared, sequential=both_arms(blocks) if blocks else None)
