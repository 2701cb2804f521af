"""The pipeline's part of shards and plans: the slice a ``--shard I/N`` command runs, the plan.json it writes
(the plan's digest, the shard's block), a ``--plan FILE`` checked against what the command would run, and a
shard's earlier output replaced.

- ``sliced``: the command's runs are the shard's slice of the plan (``alisio.core.lab.plans.shards.slice_plan``);
  the headline, the progress and the report count those.
- ``plan_manifest``: plan.json gets the plan's digest, and for a shard its index, count, slicing and the runs
  it owns, so ``eval merge`` can prove the shards partition one plan.
- ``check_planned``: ``eval run --plan FILE`` runs only what the plan says: each field that differs from what
  this command would run (the suite's content, the configuration hash, the model, the endpoint...) is one line,
  and nothing runs.
- ``take_over_shard``: a shard run again into its own ``--out`` directory replaces its earlier output (the
  same plan's same shard) without ``--force``, and says so; a shard of another plan there is refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
from returns.result import Failure, Success

from alisio.core.lab.plans.manifest import RunManifest, decode_manifest
from alisio.core.lab.plans.plan_key import plan_differences, plan_digest, verdict_rule
from alisio.core.lab.plans.shards import ShardBlock, ShardChoice, owned_runs, slice_plan
from alisio.core.lab.reports.origin import ReusedRuns, RunOrigin, ShardOf
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.suites.schedule import RunSpec
from alisio.shell.errors import CommandError
from alisio.shell.lab.directory import clear_out
from alisio.shell.lab.model import LabStart
from alisio.shell.lab.request import LabRequest
from alisio.shell.lab.resume import PLAN_JSON
from alisio.shell.lab.store import read_regular

__all__ = [
    "arm_origin",
    "check_planned",
    "earlier_shard",
    "plan_manifest",
    "planned_for",
    "replaces_shard",
    "sliced",
    "take_over_shard",
]


def sliced(request: LabRequest, start: LabStart, plan: Sequence[RunSpec]) -> LabStart:
    """``start`` with the shard's runs (``--shard I/N``), or as it is.

    Raises:
        CommandError: the plan has fewer (task, repetition) slots than shards (nothing was run).
    """
    if request.shard is None:
        return start
    match slice_plan(plan, request.shard):
        case Success(owned):
            return dataclasses.replace(start, shard=request.shard, owned=owned)
        case Failure(message):
            raise CommandError(message, "nothing was run")
    raise AssertionError("unreachable")  # pragma: no cover


def plan_manifest(manifest: RunManifest, start: LabStart, plan: Sequence[RunSpec]) -> RunManifest:
    """plan.json with the plan's digest and, for a shard, its block (index, count, slicing, runs owned)."""
    digest = plan_digest(manifest, plan)
    shard = None
    if start.shard is not None and start.owned is not None:
        choice = start.shard
        shard = ShardBlock(
            digest=digest,
            index=choice.index,
            count=choice.count,
            slicing=choice.slicing,
            weights=choice.weights,
            balance_from=choice.balance_from,
            planned_runs=len(plan),
            verdict_rule=verdict_rule(manifest),
            runs=owned_runs(start.owned),
        )
    return msgspec.structs.replace(manifest, digest=digest, shard=shard)


def check_planned(request: LabRequest, current: RunManifest) -> None:
    """``--plan FILE``: refuse, one line per field, a command that would not run the plan's runs.

    Raises:
        CommandError: what differs (nothing was run).
    """
    planned = request.planned
    if planned is None:
        return
    where = f"--plan {request.planned_from}" if request.planned_from else "--plan"
    lines = [
        f"{where}: {what} differs: {before} in the plan, {now} now"
        for what, before, now in plan_differences(planned, current)
        if what != "the rates" and (what != "the plan digest" or planned.digest is not None)
    ]
    if lines:
        raise CommandError(*lines, "nothing was run: a slice of a plan must run what the plan planned")


def earlier_shard(directory: Path) -> RunManifest | None:
    """The plan.json of ``directory`` when it is a shard's (``None``: none, unreadable, or not a shard)."""
    try:
        data = read_regular(directory / PLAN_JSON)
    except OSError:
        return None
    decoded = decode_manifest(data, str(directory / PLAN_JSON))
    if isinstance(decoded, Success) and decoded.unwrap().shard is not None:
        manifest: RunManifest = decoded.unwrap()
        return manifest
    return None


def replaces_shard(out: Path | None, shard: ShardChoice | None) -> bool:
    """Whether ``--out`` holds an earlier output of this shard (same index and count), which the command may
    replace without ``--force`` (its plan is checked once the plan is known, ``take_over_shard``)."""
    if out is None or shard is None:
        return False
    earlier = earlier_shard(out)
    return (
        earlier is not None
        and earlier.shard is not None
        and (
            earlier.shard.index,
            earlier.shard.count,
        )
        == (shard.index, shard.count)
    )


def take_over_shard(
    request: LabRequest,
    directory: Path,
    current: RunManifest,
    subdirs: Sequence[str],
    files: Sequence[str],
    say: Callable[[str], None],
) -> None:
    """Remove the earlier output of the same shard of the same plan from ``--out`` (under the lock), saying so.

    Raises:
        CommandError: ``--out`` holds a shard of another plan (nothing was run; nothing removed).
    """
    out = request.output.out
    if request.shard is None or request.resume is not None or request.output.force or out is None:
        return
    earlier = earlier_shard(directory)
    if earlier is None or earlier.shard is None:
        return
    shard = earlier.shard
    if shard.digest != current.digest:
        raise CommandError(
            f"--out {out} holds shard {shard.index} of {shard.count} of another plan (plan {shard.digest[:16]}, "
            f"this one {(current.digest or '')[:16]}): pass --force to replace it, or choose another directory; "
            "nothing was run"
        )
    say(
        f"replacing the earlier output of shard {shard.index} of {shard.count} in {out} (run {earlier.run_id})"
    )
    clear_out(directory, "--out", subdirs, files)


def planned_for(start: LabStart, variant: str | None) -> int:
    """How many runs one arm plans: its share of the shard, or tasks x k."""
    if start.owned is not None:
        return sum(1 for spec in start.owned if spec.variant == variant)
    return len(start.tasks) * start.k


def arm_origin(
    manifest: RunManifest | None, variant: str | None, records: Sequence[RunRecord]
) -> RunOrigin | None:
    """report.json's ``origin`` of one arm: the shard it is, and the runs it reused (``None``: neither)."""
    if manifest is None:
        return None
    shard = manifest.shard
    of = None
    if shard is not None:
        of = ShardOf(
            index=shard.index, count=shard.count, planned_runs=shard.planned_runs, digest=shard.digest
        )
    keys = {(r.variant, r.task_id, r.repetition) for r in records if r.variant == variant}
    reused = []
    for source in manifest.reused:
        count = sum(1 for run in source.runs if run.variant == variant and run.key in keys)
        if count:
            reused.append(ReusedRuns(run_id=source.run_id, runs=count))
    if of is None and not reused:
        return None
    return RunOrigin(shard=of, reused=tuple(reused))
