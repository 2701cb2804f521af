"""``alisio eval variants``: run configuration variants interleaved over one suite, report each, compare them.

What it does, after the same checks as ``eval run`` (``alisio.shell.lab.pipeline``: find the suite, preflight, confirm a
third-party suite):

1. ``read_variants``: read compare.json and validate it (``alisio.core.lab.variants.parse_variants``) against the user's
   measured configuration, and check it names the suite being run: every override is checked before the
   first run.
2. ``variant_labs``: one ``LabRun`` per variant, sharing tasks, k, seed, provider and grants, each with its
   own measured configuration, report directory ``<root>/<variant-id>/`` and run id ``<runId>/<variant-id>``.
3. ``run_variants``: the interleaved plan (``alisio.core.lab.variants.interleave``); each run goes through
   ``alisio.shell.lab.pipeline._run_one`` with its variant's ``LabRun`` and is appended to that variant's runs.jsonl at once.
   Ctrl-C stops after the current run; the finished runs are still reported and compared. Then each variant's
   report files, and comparison.json and comparison.md at the root (the first variant against each other).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import msgspec
from returns.result import Failure

from alisio.core.harness.config import MeasuredConfig
from alisio.core.lab.records import RunRecord
from alisio.core.lab.report import Report, build_report
from alisio.core.lab.variants import (
    VariantsComparison,
    VariantsPlan,
    check_suite,
    compare_variants,
    interleave,
    parse_variants,
    render_variants_markdown,
)
from alisio.shell.lab.pipeline import LabError, LabRun, _append, _conditions, _run_one, open_runs
from alisio.shell.lab.store import write_bytes_atomic, write_report_files
from alisio.shell.lab.suites import LoadedSuite

__all__ = [
    "COMPARISON_JSON",
    "COMPARISON_MD",
    "VariantsResult",
    "read_variants",
    "run_variants",
    "variant_labs",
]

COMPARISON_JSON = "comparison.json"
COMPARISON_MD = "comparison.md"


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


def variant_labs(base: LabRun, plan: VariantsPlan, root: Path) -> tuple[LabRun, ...]:
    """One ``LabRun`` per variant: ``base`` with the variant's configuration, directory and run id."""
    return tuple(
        dataclasses.replace(
            base, measured=variant.measured, directory=root / variant.id, run_id=f"{base.run_id}/{variant.id}"
        )
        for variant in plan.variants
    )


@dataclass(frozen=True)
class VariantsResult:
    """Each variant's records and report (plan order), their comparison, and whether Ctrl-C stopped it."""

    records: tuple[tuple[RunRecord, ...], ...]
    reports: tuple[Report, ...]
    comparison: VariantsComparison
    root: Path
    interrupted: bool


def run_variants(
    plan: VariantsPlan,
    labs: tuple[LabRun, ...],
    root: Path,
    *,
    say: Callable[[str], None],
    on_record: Callable[[RunRecord, int, int], None] = lambda record, index, total: None,
) -> VariantsResult:
    """Run every variant interleaved, write each variant's report files and the comparison at ``root``.

    Args:
        plan: the validated compare.json (baseline first).
        labs: ``variant_labs(...)``, in the plan's order.
        say: prints one line for people (stderr).
        on_record: called with each finished record, its 1-based index and the number of runs.

    Raises:
        LabError: the reports cannot be compared (a bug: they share their suite).
    """
    first = labs[0]
    ids = [variant.id for variant in plan.variants]
    specs = interleave(ids, [task.id for task in first.tasks], first.k, first.seed).unwrap()
    by_task = {task.id: task for task in first.tasks}
    by_variant = dict(zip(ids, labs, strict=True))
    records: dict[str, list[RunRecord]] = {variant_id: [] for variant_id in ids}
    encoder = msgspec.json.Encoder()
    interrupted = False
    with ExitStack() as stack:
        files: dict[str, IO[bytes]] = {}
        for variant_id, lab in by_variant.items():
            files[variant_id] = stack.enter_context(open_runs(lab.directory))
        for index, spec in enumerate(specs, start=1):
            variant_id = spec.variant or ids[0]
            try:
                record = _run_one(by_variant[variant_id], by_task[spec.task_id], spec, say)
            except KeyboardInterrupt:
                interrupted = True
                done = sum(len(kept) for kept in records.values())
                say(f"interrupted: writing the reports and the comparison of the {done} finished runs")
                break
            records[variant_id].append(record)
            _append(files[variant_id], encoder.encode(record) + b"\n")
            on_record(record, index, len(specs))
    planned = len(first.tasks) * first.k  # per variant
    reports = tuple(
        build_report(records[v], _conditions(by_variant[v]), planned_runs=planned, interrupted=interrupted)
        for v in ids
    )
    for variant_id, report in zip(ids, reports, strict=True):
        write_report_files(by_variant[variant_id].directory, report, records[variant_id])
    comparison = _write_comparison(plan, reports, root)
    return VariantsResult(
        records=tuple(tuple(records[v]) for v in ids),
        reports=reports,
        comparison=comparison,
        root=root,
        interrupted=interrupted,
    )


def _write_comparison(plan: VariantsPlan, reports: tuple[Report, ...], root: Path) -> VariantsComparison:
    """comparison.json and comparison.md at ``root``."""
    compared = compare_variants(plan.variants, reports)
    if isinstance(compared, Failure):
        raise LabError(f"the variants' reports cannot be compared: {compared.failure()}")
    comparison: VariantsComparison = compared.unwrap()
    write_bytes_atomic(root / COMPARISON_JSON, msgspec.json.encode(comparison))
    write_bytes_atomic(root / COMPARISON_MD, render_variants_markdown(comparison).encode())
    return comparison
