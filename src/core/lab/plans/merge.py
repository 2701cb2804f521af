"""``alisio eval merge``: prove that shard outputs are one plan, cut into its shards, then pool their runs.

Rules this module keeps:

- Every input is a shard's output (its plan.json has a ``shard`` block). Every one is the same plan as the
  first: each field ``alisio.core.lab.plans.plan_key.plan_differences`` compares (the suite's id, version and
  content hash, the configuration hash, the agent, the model, the endpoint, the mode, the seed, k, the
  verdict rule... and the plan's digest), the number of shards and the slicing. A difference is one line
  naming the shard, its directory and the field: ``shard 3 (DIR): the model differs: a in shard 1 (DIR1),
  b here``.
- The plan is made again from the first manifest (its tasks, k, seed and variants) and must give its digest;
  each shard's runs must be the slice ``alisio.core.lab.plans.shards.slice_plan`` cuts for its index: so the shards
  partition the plan, and a run owned twice, or by no shard, is named.
- A shard given more than once (a retried CI job, a shard run again): the newest output (by its plan.json's
  createdAt, the later argument on a tie) is used, and the merge says which it left out.
- Each shard's records must be its own runs: a record of a run it does not own, a second record of one run,
  or a record measured under another configuration hash than its arm's is refused. A run with no record (a
  shard that did not finish, a shard missing) is refused too, unless ``allow_partial``: then the merge holds
  what is there and says which runs were never run, counted apart, never as failures.
- The pooled records come in plan order: the report built from them (``alisio.core.lab.reports.report_build``) is the
  report the unsharded run would have written, but for timings, run ids and the shard list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.lab.comparisons.variants import interleave
from alisio.core.lab.plans.manifest import RunManifest
from alisio.core.lab.plans.plan_key import plan_differences, plan_digest
from alisio.core.lab.plans.shards import ShardBlock, slice_plan
from alisio.core.lab.reports.origin import MergedShard
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.suites.schedule import RunSpec, plan_runs

__all__ = ["MergePlan", "ShardOutput", "merge_shards", "plan_of_manifest"]


class ShardOutput(Frozen, frozen=True, kw_only=True):
    """One shard output given to the merge: where it is, its plan.json and its records (every arm's)."""

    directory: str
    """As people should read it (the argument, or the run id's directory)."""
    manifest: RunManifest
    records: tuple[RunRecord, ...]


class MergePlan(Frozen, frozen=True, kw_only=True):
    """What the merge writes: the whole plan's plan.json, the pooled records, the shards each arm came from."""

    manifest: RunManifest
    """The first shard's plan.json without its shard block (the whole plan: a resume runs what is missing)."""
    plan: tuple[RunSpec, ...]
    records: tuple[RunRecord, ...]
    """Every record of the chosen outputs, in plan order."""
    shards: tuple[tuple[str | None, tuple[MergedShard, ...]], ...]
    """Per arm (variant id, ``None`` for a plain run): the shards it was built from, by index."""
    never_run: int
    """Planned runs without a record (``allow_partial`` only)."""
    missing: tuple[str, ...]
    """What is missing, one phrase each (``shard 3 of 4``, ``2 runs of shard 4``), empty when nothing is."""


def plan_of_manifest(manifest: RunManifest) -> Result[tuple[RunSpec, ...], str]:
    """The plan a plan.json describes (plain or interleaved variants; not sequential), made again."""
    if manifest.sequential is not None:
        return Failure("a sequential plan cannot be sharded")
    ids = [v.id for v in manifest.variants]
    made = (
        plan_runs(manifest.tasks, manifest.k, manifest.seed)
        if not ids
        else interleave(ids, manifest.tasks, manifest.k, manifest.seed)
    )
    return made.alt(str)


def _label(output: ShardOutput) -> str:
    shard = output.manifest.shard
    assert shard is not None
    return f"shard {shard.index} ({output.directory})"


def _same_plan(outputs: Sequence[ShardOutput]) -> list[str]:
    """One line per field in which an output differs from the first (module docstring)."""
    first = outputs[0]
    head = first.manifest.shard
    assert head is not None
    lines = []
    for output in outputs[1:]:
        shard = output.manifest.shard
        assert shard is not None
        found = [(w, a, b) for w, a, b in plan_differences(first.manifest, output.manifest)]
        if shard.count != head.count:
            found.append(("the number of shards", str(head.count), str(shard.count)))
        if (shard.slicing, shard.weights) != (head.slicing, head.weights):
            found.append(("the slicing", _slicing(head), _slicing(shard)))
        named = [f for f in found if f[0] != "the plan digest"] or found  # a field says more than the digest
        for what, theirs, ours in named:
            lines.append(f"{_label(output)}: {what} differs: {theirs} in {_label(first)}, {ours} here")
    return lines


def _slicing(shard: ShardBlock) -> str:
    return f"balanced by {shard.balance_from}" if shard.weights else "even"


def _newest(outputs: Sequence[ShardOutput]) -> tuple[dict[int, ShardOutput], dict[int, list[str]]]:
    """The output used for each index (the newest) and the directories of those left out."""
    chosen: dict[int, tuple[str, int]] = {}
    for position, output in enumerate(outputs):
        shard = output.manifest.shard
        assert shard is not None
        stamp = (output.manifest.created_at, position)
        if shard.index not in chosen or stamp > chosen[shard.index]:
            chosen[shard.index] = stamp
    used = {index: outputs[position] for index, (_, position) in chosen.items()}
    left_out: dict[int, list[str]] = {}
    for output in outputs:
        shard = output.manifest.shard
        assert shard is not None
        if used[shard.index] is not output:
            left_out.setdefault(shard.index, []).append(output.directory)
    return used, left_out


def _partition(plan: Sequence[RunSpec], used: Mapping[int, ShardOutput]) -> list[str]:
    """Each used shard owns exactly the slice of its index, so no run is owned twice or by no shard."""
    lines = []
    owner: dict[tuple[str | None, str, int], int] = {}
    for index, output in sorted(used.items()):
        shard = output.manifest.shard
        assert shard is not None
        for run in shard.runs:
            if run.key in owner:
                lines.append(f"{run} is owned by shard {owner[run.key]} and by {_label(output)}")
            owner.setdefault(run.key, index)
        match slice_plan(plan, shard.choice()):
            case Success(mine):
                expected = [(s.variant, s.task_id, s.repetition) for s in mine]
                if [r.key for r in shard.runs] != expected:
                    lines.append(
                        f"{_label(output)}: the runs it owns are not the slice of shard {index} of the plan"
                    )
            case Failure(message):
                lines.append(f"{_label(output)}: {message}")
    return lines[:10]


def _records(output: ShardOutput) -> tuple[list[str], list[str]]:
    """A shard's records against its manifest: what is refused, and the runs it owns without a record."""
    shard = output.manifest.shard
    assert shard is not None
    owned = {run.key: run for run in shard.runs}
    hashes = {v.id: v.config_hash for v in output.manifest.variants}
    seen: set[tuple[str | None, str, int]] = set()
    refused = []
    for record in output.records:
        key = (record.variant, record.task_id, record.repetition)
        where = f"{_label(output)}: runs.jsonl holds {'variant ' + record.variant + ' ' if record.variant else ''}task {record.task_id} rep {record.repetition}"
        if key not in owned:
            refused.append(f"{where}, which its plan.json does not own")
        elif key in seen:
            refused.append(f"{where} twice")
        elif record.config_hash and record.config_hash != hashes.get(
            record.variant or "", output.manifest.config_hash
        ):
            refused.append(f"{where}, measured under configuration {record.config_hash[:16]}, not its plan's")
        seen.add(key)
    missing = [str(run) for key, run in owned.items() if key not in seen]
    return refused, missing


def _checked(
    outputs: Sequence[ShardOutput],
) -> Result[tuple[tuple[RunSpec, ...], dict[int, ShardOutput], dict[int, list[str]]], tuple[str, ...]]:
    """The plan made again, the output used for each index and those left out; or what keeps them from
    being shards of one plan."""
    not_shards = [
        f"{o.directory}: not a shard's output (its plan.json has no shard block: it ran the whole plan)"
        for o in outputs
        if o.manifest.shard is None
    ]
    if not_shards or not outputs:
        return Failure(tuple(not_shards) or ("no shard output given",))
    problems = _same_plan(outputs)
    if problems:
        return Failure(tuple(problems))
    first = outputs[0].manifest
    made = plan_of_manifest(first)
    if isinstance(made, Failure) or (
        first.digest is not None and plan_digest(first, made.unwrap()) != first.digest
    ):
        return Failure(
            (f"{_label(outputs[0])}: this alisio does not make its plan again (the plan digest differs)",)
        )
    plan = made.unwrap()
    used, left_out = _newest(outputs)
    problems = _partition(plan, used)
    return Failure(tuple(problems)) if problems else Success((plan, used, left_out))


def _gaps(used: Mapping[int, ShardOutput], count: int) -> Result[tuple[str, ...], tuple[str, ...]]:
    """What is missing (a shard, runs of a shard), or the records refused."""
    problems: list[str] = []
    gaps = [f"shard {i} of {count}" for i in range(1, count + 1) if i not in used]
    for _, output in sorted(used.items()):
        refused, missing = _records(output)
        problems += refused
        if missing:
            owned = len(output.manifest.shard.runs) if output.manifest.shard else 0
            gaps.append(f"{len(missing)} of the {owned} runs of {_label(output)} (first: {missing[0]})")
    if problems:
        more = (f"... and {len(problems) - 10} more",) if len(problems) > 10 else ()
        return Failure((*problems[:10], *more))
    return Success(tuple(gaps))


def _shard_lists(
    arms: Sequence[str | None], used: Mapping[int, ShardOutput], left_out: Mapping[int, list[str]]
) -> tuple[tuple[str | None, tuple[MergedShard, ...]], ...]:
    return tuple(
        (
            arm,
            tuple(
                MergedShard(
                    index=index,
                    run_id=o.manifest.run_id,
                    created_at=o.manifest.created_at,
                    runs=sum(1 for r in o.records if r.variant == arm),
                    directory=o.directory,
                    left_out=tuple(left_out.get(index, ())),
                )
                for index, o in sorted(used.items())
            ),
        )
        for arm in arms
    )


def merge_shards(outputs: Sequence[ShardOutput], allow_partial: bool) -> Result[MergePlan, tuple[str, ...]]:
    """Check ``outputs`` and pool their records (module docstring); the refusal is one line per problem."""
    checked = _checked(outputs)
    if isinstance(checked, Failure):
        return Failure(checked.failure())
    plan, used, left_out = checked.unwrap()
    first = outputs[0].manifest
    assert first.shard is not None
    gaps = _gaps(used, first.shard.count)
    if isinstance(gaps, Failure):
        return Failure(gaps.failure())
    missing = gaps.unwrap()
    if missing and not allow_partial:
        return Failure(
            (
                *(f"missing: {m}" for m in missing),
                "nothing was merged: run what is missing (eval run --resume SHARD_DIR continues a shard), or merge "
                "what is there with --allow-partial",
            )
        )
    order = {(s.variant, s.task_id, s.repetition): n for n, s in enumerate(plan)}
    pooled = sorted(
        (r for o in used.values() for r in o.records),
        key=lambda r: order[(r.variant, r.task_id, r.repetition)],
    )
    reused = tuple(block for o in sorted(used.items()) for block in o[1].manifest.reused)
    return Success(
        MergePlan(
            manifest=msgspec.structs.replace(first, shard=None, runs=(), reused=reused),
            plan=plan,
            records=tuple(pooled),
            shards=_shard_lists([v.id for v in first.variants] or [None], used, left_out),
            never_run=len(plan) - len(pooled),
            missing=missing,
        )
    )
