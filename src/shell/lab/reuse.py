"""``eval run|variants --reuse RUN|DIR``: take the stored runs that measured what the command would measure
instead of running them again (``alisio.core.lab.plans.reuse`` decides which).

- RUN|DIR names a stored run as ``eval show`` takes it: a report directory, a variants job's root (each of
  its variants may serve an arm), one variant (``<runId>/<variant>``), or a run id. It must hold plan.json
  (every ``eval run``, ``eval variants`` and ``eval merge`` writes one).
- The taken records are appended to the command's runs.jsonl and their transcripts copied beside them before
  the first run; plan.json names them (``reused``), so every report says ``12 of 40 runs reused from <run
  id>`` and a resume keeps them.
- An arm that can take nothing says why, one line naming each field that differs; when no arm can take
  anything the command is refused (exit 1, nothing run): ``--reuse`` asked for runs it cannot have.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import msgspec
from returns.result import Failure, Success

from alisio.core.lab.plans.manifest import ReusedFrom, RunManifest
from alisio.core.lab.plans.reuse import ReusePick, pick_reused
from alisio.core.lab.plans.shards import ShardRun
from alisio.core.lab.reports.origin import ReusedRuns, reused_line
from alisio.core.lab.runs.records import RunRecord, encode_runs
from alisio.core.lab.runs.transcript import transcript_path
from alisio.core.lab.suites.schedule import RunSpec
from alisio.shell.config_home import data_dir
from alisio.shell.errors import CommandError
from alisio.shell.lab.model import LabStart, Resumed
from alisio.shell.lab.request import LabRequest
from alisio.shell.lab.resume import PLAN_JSON, read_manifest, write_manifest
from alisio.shell.lab.store import RUNS_JSONL, read_runs
from alisio.shell.lab.stored import run_directory

__all__ = ["ReuseSource", "reusable", "reuse_runs", "reuse_source"]


class ReuseSource:
    """A stored run ``--reuse`` names: its plan.json, and the directory of each arm it offers."""

    def __init__(self, ref: str, run_id: str, manifest: RunManifest, arms: Mapping[str | None, Path]) -> None:
        self.ref, self.run_id, self.manifest, self.arms = ref, run_id, manifest, dict(arms)

    def records(self) -> dict[str | None, tuple[RunRecord, ...]]:
        """Each offered arm's records (an arm without runs.jsonl offers none).

        Raises:
            CommandError: a runs.jsonl cannot be read (naming it).
        """
        found: dict[str | None, tuple[RunRecord, ...]] = {}
        for arm, directory in self.arms.items():
            if not (directory / RUNS_JSONL).exists():
                found[arm] = ()
                continue
            match read_runs(directory / RUNS_JSONL):
                case Success(records):
                    found[arm] = tuple(r for r in records if r.variant == arm)
                case Failure(error):
                    raise CommandError(f"--reuse {self.ref}: {error}", "nothing was run")
        return found


def reuse_source(ref: str, data_root: Path) -> ReuseSource:
    """The stored run ``ref`` names (module docstring).

    Raises:
        CommandError: no such run, or it holds no plan.json.
    """
    directory = run_directory(ref, data_root)
    if (directory / PLAN_JSON).is_file():
        manifest = read_manifest(directory)
        arms: dict[str | None, Path] = {None: directory}
        if manifest.variants:
            arms = {v.id: directory / v.id for v in manifest.variants}
        return ReuseSource(ref, manifest.run_id, manifest, arms)
    if (directory.parent / PLAN_JSON).is_file() and (directory / RUNS_JSONL).is_file():
        manifest = read_manifest(directory.parent)
        if any(v.id == directory.name for v in manifest.variants):
            return ReuseSource(
                ref, f"{manifest.run_id}/{directory.name}", manifest, {directory.name: directory}
            )
    raise CommandError(
        f"--reuse {ref}: {directory} holds no {PLAN_JSON}, so what its runs measured is not known (eval run, eval "
        "variants and eval merge write it; older reports have none)",
        "nothing was run",
    )


def reusable(source: ReuseSource, current: RunManifest, todo: Sequence[RunSpec]) -> ReusePick:
    """What ``source`` offers the runs ``todo`` (nothing is written)."""
    return pick_reused(source.manifest, source.records(), current, todo)


def _refuse_or_warn(pick: ReusePick, ref: str, say: Callable[[str], None]) -> None:
    """No arm can take anything: refused, naming why; else each arm that takes nothing says why.

    Raises:
        CommandError: no arm matches (nothing was run).
    """

    def named(arm: str | None) -> str:
        return f"variant {arm}: " if arm is not None else ""

    if not pick.sources:
        lines = [f"--reuse {ref}: {named(arm)}{line}" for arm, why in pick.mismatched for line in why]
        raise CommandError(
            *lines, "nothing was run: --reuse takes only runs that measured what this command measures"
        )
    for arm, why in pick.mismatched:
        say(f"--reuse {ref}: {named(arm)}nothing reused: {'; '.join(why)}")
    if pick.errored:
        say(f"--reuse {ref}: {pick.errored} of its matching runs ended error: they run again")


def _adopt(start: LabStart, source: ReuseSource, pick: ReusePick) -> None:
    """Copy the taken runs' transcripts beside the command's, then append their records to its runs.jsonl.

    Raises:
        CommandError: a file cannot be read or written (nothing was run).
    """
    arms = {arm.variant: arm.directory for arm in start.arms}
    theirs = dict(pick.sources)
    try:
        for record in pick.records:
            name = transcript_path(record.task_id, record.repetition)
            origin = source.arms[theirs[record.variant]] / name
            target = arms[record.variant] / name
            if origin.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
                try:
                    os.link(origin, target)
                except OSError:
                    shutil.copyfile(origin, target)
        for variant, directory in arms.items():
            mine = [r for r in pick.records if r.variant == variant]
            if mine:
                directory.mkdir(parents=True, exist_ok=True)
                with (directory / RUNS_JSONL).open("ab") as handle:
                    handle.write(encode_runs(mine))
                    handle.flush()
                    os.fsync(handle.fileno())
    except OSError as error:
        raise CommandError(
            f"--reuse {source.ref}: cannot copy its runs: {error.strerror or error}", "nothing was run"
        ) from None


def reuse_runs(
    request: LabRequest,
    start: LabStart,
    current: RunManifest,
    resumed: Resumed | None,
    todo: Sequence[RunSpec],
    say: Callable[[str], None],
) -> Resumed | None:
    """Take the runs ``--reuse`` offers ``todo`` (the plan, or a shard's slice) before the first run: they are
    kept, the others run.

    Raises:
        CommandError: with ``--resume`` (a resume keeps what it has), or nothing can be reused (nothing was run).
    """
    if request.reuse is None:
        return resumed
    if resumed is not None:
        raise CommandError("--reuse starts a new run: --resume continues one with the runs it has")
    source = reuse_source(request.reuse, data_dir(request.env))
    pick = reusable(source, current, todo)
    _refuse_or_warn(pick, request.reuse, say)
    _adopt(start, source, pick)
    block = ReusedFrom(
        run_id=source.run_id,
        directory=str(source.arms[pick.sources[0][1]]),
        runs=tuple(
            ShardRun(task_id=r.task_id, repetition=r.repetition, variant=r.variant) for r in pick.records
        ),
    )
    stored = msgspec.structs.replace(current, reused=(block,) if pick.records else ())
    write_manifest(start.root, stored)
    say(
        reused_line([ReusedRuns(run_id=source.run_id, runs=len(pick.records))], start.planned)
        + " (same plan fingerprint)"
    )
    taken = {(r.variant, r.task_id, r.repetition) for r in pick.records}
    left = tuple(s for s in todo if (s.variant, s.task_id, s.repetition) not in taken)
    return Resumed(stored=stored, todo=left, kept=pick.records, retried={}, reused=pick.records)
