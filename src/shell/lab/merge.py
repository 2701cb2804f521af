"""``alisio eval merge SHARD_DIR... --out DIR``: read shard outputs, prove they are one plan
(``alisio.core.lab.plans.merge``), and write the whole plan's report from their pooled runs.

- Each SHARD_DIR is a shard's report directory (a variants job's root for ``eval variants --shard``) or its
  run id. Its plan.json, each arm's runs.jsonl (a torn last line is dropped with a warning, as a resume
  drops it) and report.json (for the conditions the plan does not hold: the compaction settings, the rates
  and where they came from, the agent) are read.
- ``--out DIR`` gets an ordinary report directory: plan.json (the whole plan, so ``eval run --resume DIR``
  runs what an ``--allow-partial`` merge is missing), runs.jsonl in plan order, each run's transcript (a hard
  link to the shard's where the file system allows, else a copy), report.json, report.md and report.html
  built from the pooled records; a variants job one per variant plus comparison.json, comparison.md and
  comparison.html. ``--out`` is checked, refused and ``--force``d as ``eval run``'s is, locked while it is
  written, and registered (``eval runs`` lists it). ``--junit FILE`` and the step summary are written as
  the unsharded command writes them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import msgspec
from returns.result import Failure, Success

from alisio.core.lab.comparisons.variants import VariantInfo, VariantsComparison, compare_infos
from alisio.core.lab.plans.manifest import RunManifest, whole_lines
from alisio.core.lab.plans.merge import MergePlan, ShardOutput, merge_shards
from alisio.core.lab.reports.origin import ReusedRuns, RunOrigin
from alisio.core.lab.reports.report import Report
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.runs.records import RunRecord, decode_runs
from alisio.core.lab.runs.transcript import transcript_path
from alisio.shell.config_home import data_dir
from alisio.shell.errors import CommandError
from alisio.shell.lab.directory import clear_out, created_at_for, lock_directory, prepare_out, run_id_for
from alisio.shell.lab.outputs import report_files, write_comparison_files, write_report_files
from alisio.shell.lab.registry import register_directory
from alisio.shell.lab.resume import PLAN_JSON, RETRIED, read_manifest, write_manifest
from alisio.shell.lab.selfcheck_store import with_stored_check
from alisio.shell.lab.store import RUNS_JSONL, read_regular, read_report, write_bytes_atomic
from alisio.shell.lab.stored import run_directory

__all__ = ["MergedArm", "MergedJob", "ShardRead", "merge_outputs", "read_shard"]


@dataclass(frozen=True)
class ShardRead:
    """One shard output as read: where each arm is, its report (``None`` when it wrote none), its records."""

    output: ShardOutput
    arms: Mapping[str | None, Path]
    reports: Mapping[str | None, Report | None]


@dataclass(frozen=True)
class MergedArm:
    """One arm of the merged job: its directory, records (plan order) and report."""

    variant: str | None
    directory: Path
    records: tuple[RunRecord, ...]
    report: Report


@dataclass(frozen=True)
class MergedJob:
    """What ``eval merge`` wrote."""

    root: Path
    arms: tuple[MergedArm, ...]
    comparison: VariantsComparison | None
    merged: MergePlan


def _arm_records(path: Path, variant: str | None, say: Callable[[str], None]) -> tuple[RunRecord, ...]:
    try:
        data = read_regular(path)
    except FileNotFoundError:
        return ()
    except OSError as error:
        raise CommandError(f"{path}: cannot read: {error.strerror or error}", "nothing was merged") from None
    whole, torn = whole_lines(data)
    if torn:
        say(f"warning: {path}: the last line was cut off (a write was interrupted); it is left out")
    decoded = decode_runs(whole, str(path))
    if isinstance(decoded, Failure):
        raise CommandError(str(decoded.failure()), "nothing was merged")
    records: tuple[RunRecord, ...] = decoded.unwrap()
    stray = next((r for r in records if r.variant != variant), None)
    if stray is not None:
        raise CommandError(f"{path}: a record of another arm (task {stray.task_id} rep {stray.repetition})")
    return records


def read_shard(ref: str, data_root: Path, say: Callable[[str], None]) -> ShardRead:
    """The shard output ``ref`` names (module docstring).

    Raises:
        CommandError: no such directory or run, no plan.json (naming the variants root for a variant's
            directory), or a file that cannot be read.
    """
    directory = run_directory(ref, data_root)
    if not (directory / PLAN_JSON).is_file():
        if (directory.parent / PLAN_JSON).is_file():
            raise CommandError(
                f"{ref}: one variant of the job in {directory.parent}: give the job's directory"
            )
        raise CommandError(f"{ref}: {directory} holds no {PLAN_JSON}: not the output of eval run --shard")
    manifest = read_manifest(directory)
    arms: dict[str | None, Path] = {None: directory}
    if manifest.variants:
        arms = {v.id: directory / v.id for v in manifest.variants}
    records = tuple(r for arm, where in arms.items() for r in _arm_records(where / RUNS_JSONL, arm, say))
    reports: dict[str | None, Report | None] = {}
    for arm, where in arms.items():
        read = read_report(where)
        reports[arm] = read.unwrap() if isinstance(read, Success) else None
    output = ShardOutput(directory=str(directory), manifest=manifest, records=records)
    return ShardRead(output=output, arms=arms, reports=reports)


def _link(origin: Path, target: Path, made: set[Path]) -> None:
    """``target`` as a hard link to ``origin`` (a copy across file systems); nothing when ``origin`` is gone.
    ``made``: the directories created so far (each is made once)."""
    if target.parent not in made:
        target.parent.mkdir(parents=True, exist_ok=True)
        made.add(target.parent)
    try:
        os.link(origin, target)
    except FileNotFoundError:
        return  # a run without a transcript (an older version's): nothing to link
    except FileExistsError:
        target.unlink()
        os.link(origin, target)
    except OSError:
        shutil.copyfile(origin, target)


def _conditions_of(
    shards: Sequence[ShardRead], used: set[str], variant: str | None, arm: str | None
) -> Report:
    for shard in shards:
        report = shard.reports.get(variant)
        if shard.output.directory in used and report is not None:
            return report
    raise CommandError(
        f"no shard given holds a report.json{f' of variant {arm}' if arm else ''} (each shard writes one when it "
        "ends, even stopped): its conditions (compaction, rates, agent) are not known; nothing was merged"
    )


def _arm_report(
    merged: MergePlan,
    shards: Sequence[ShardRead],
    variant: str | None,
    run_id: str,
    created_at: str,
    label: str | None,
) -> tuple[tuple[RunRecord, ...], Report]:
    """One arm's pooled records and their report, with the conditions of the shards' reports."""
    used = {m.directory for arm, listed in merged.shards if arm == variant for m in listed}
    base = _conditions_of(shards, used, variant, variant)
    records = tuple(r for r in merged.records if r.variant == variant)
    conditions = msgspec.structs.replace(
        base.conditions,
        run_id=run_id if variant is None else f"{run_id}/{variant}",
        created_at=created_at,
        label=label if label is not None else base.conditions.label,
    )
    planned = sum(1 for s in merged.plan if s.variant == variant)
    stopped = f"merged with --allow-partial: missing {'; '.join(merged.missing)}" if merged.missing else None
    retried = sum(
        r.retried for s in shards if s.output.directory in used and (r := s.reports.get(variant)) is not None
    )
    report = build_report(
        records,
        conditions,
        planned_runs=planned,
        interrupted=stopped is not None,
        stopped=stopped,
        retried=retried,
    )
    keys = {(r.variant, r.task_id, r.repetition) for r in records}
    reused = [
        ReusedRuns(run_id=b.run_id, runs=n)
        for b in merged.manifest.reused
        if (n := sum(1 for run in b.runs if run.variant == variant and run.key in keys))
    ]
    shard_list = next(listed for arm, listed in merged.shards if arm == variant)
    origin = RunOrigin(shards=shard_list, digest=merged.manifest.digest, reused=tuple(reused))
    return records, msgspec.structs.replace(report, origin=origin)


def _write_arm(arm: MergedArm, shards: Sequence[ShardRead], known: tuple[tuple[str, str], ...]) -> None:
    """The arm's transcripts (linked from the shard that ran each run), its retried runs, then its report files.

    Raises:
        OSError: a file cannot be linked, copied or written.
    """
    sources = {s.output.directory: s for s in shards}
    owner: dict[tuple[str | None, str, int], Path] = {}
    used = [sources[m.directory] for m in (arm.report.origin.shards if arm.report.origin else ())]
    for shard in used:
        block = shard.output.manifest.shard
        assert block is not None
        owner.update((run.key, shard.arms[arm.variant]) for run in block.runs)
    made: set[Path] = set()
    for record in arm.records:
        name = transcript_path(record.task_id, record.repetition)
        _link(owner[(record.variant, record.task_id, record.repetition)] / name, arm.directory / name, made)
    retried = [
        shard.arms[arm.variant] / RETRIED for shard in used if (shard.arms[arm.variant] / RETRIED).is_dir()
    ]
    if retried:  # the errored records a shard's --retry-errors set apart, kept and counted nowhere
        lines = b"".join(read_regular(d / RUNS_JSONL) for d in retried if (d / RUNS_JSONL).is_file())
        (arm.directory / RETRIED).mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(arm.directory / RETRIED / RUNS_JSONL, lines)
        for folder in retried:
            for path in sorted((folder / "runs").rglob("*.jsonl")):
                _link(path, arm.directory / RETRIED / path.relative_to(folder), made)
    write_report_files(arm.directory, arm.report, arm.records, known, show_as=str(arm.directory.absolute()))


def _compared(merged: MergePlan, arms: Sequence[MergedArm]) -> VariantsComparison | None:
    """The baseline variant against each other one, as ``eval variants`` compares them (``None``: a plain run)."""
    if not merged.manifest.variants:
        return None
    infos = [
        VariantInfo(id=v.id, config_hash=v.config_hash, overrides=v.overrides, model=v.model)
        for v in merged.manifest.variants
    ]
    compared = compare_infos(infos, [a.report for a in arms])
    if isinstance(compared, Failure):
        raise CommandError(f"the variants' reports cannot be compared: {compared.failure()}")
    comparison: VariantsComparison = compared.unwrap()
    return comparison


def _write(
    out: Path,
    manifest: RunManifest,
    job: MergedJob,
    shards: Sequence[ShardRead],
    force: bool,
    env: Mapping[str, str],
) -> None:
    """Everything the merge writes into ``out``, under its lock (``--force``: the report it held removed first).

    Raises:
        CommandError: a file cannot be written, or ``out`` holds what no report wrote.
    """
    from alisio.shell.lab.cassettes import credentials_of

    variants = [v.id for v in manifest.variants]
    files = report_files()
    known = credentials_of(env, None)
    with lock_directory(out):
        if force:
            clear_out(out, "--out", variants, files)
        try:
            write_manifest(out, manifest)
            for arm in job.arms:
                _write_arm(arm, shards, known)
            if job.comparison is not None:
                arms = [(a.variant or "", a.records) for a in job.arms]
                write_comparison_files(out, job.comparison, arms, manifest.k, known)
        except OSError as error:
            raise CommandError(f"{out}: cannot write the merged report: {error.strerror or error}") from None


def merge_outputs(
    refs: Sequence[str],
    out: Path,
    *,
    force: bool,
    allow_partial: bool,
    label: str | None,
    env: Mapping[str, str],
    say: Callable[[str], None],
) -> MergedJob:
    """Read, check and merge the shard outputs ``refs`` into ``out`` (module docstring).

    Raises:
        CommandError: what keeps them from being one plan's shards, what is missing (without
            ``allow_partial``), ``--out`` holding a report (without ``force``) or not writable; nothing is
            written then.
    """
    root = data_dir(env)
    shards = [read_shard(ref, root, say) for ref in refs]
    match merge_shards([s.output for s in shards], allow_partial):
        case Success(merged):
            pass
        case Failure(lines):
            raise CommandError(*lines)
    for shard in shards:
        if Path(shard.output.directory).resolve() == out.resolve():
            raise CommandError(
                f"--out {out} is a shard's own directory: merge into another one; nothing was merged"
            )
    variants = [v.id for v in merged.manifest.variants]
    prepare_out(out, "--out", force, variants, report_files())
    now = datetime.now(UTC)
    run_id, created_at = run_id_for(now), created_at_for(now)
    arms = []
    for variant in variants or [None]:
        directory = out if variant is None else out / variant
        records, report = _arm_report(merged, shards, variant, run_id, created_at, label)
        report = with_stored_check(report, root)  # the suite's self-check, as any report of it says
        arms.append(MergedArm(variant=variant, directory=directory, records=records, report=report))
    job = MergedJob(root=out, arms=tuple(arms), comparison=_compared(merged, arms), merged=merged)
    named = label if label is not None else merged.manifest.label
    manifest = msgspec.structs.replace(merged.manifest, run_id=run_id, created_at=created_at, label=named)
    register_directory(root, out)
    _write(out, manifest, job, shards, force, env)
    return job
