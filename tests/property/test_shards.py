"""Properties of shards and their merge (``alisio.core.lab.plans.shards``, ``plan_key``, ``merge``): the slices
partition every plan; a merge of the shards of a random plan, its runs finished in any order and the
outputs given in any order, some of them twice, gives the report (and for variants the comparison) of the
unsharded run, field by field; and what keeps outputs from being one plan's shards is named."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.lab.comparisons.variants import VariantInfo, compare_infos
from alisio.core.lab.plans.manifest import ManifestVariant, RunManifest
from alisio.core.lab.plans.merge import ShardOutput, merge_shards, plan_of_manifest
from alisio.core.lab.plans.plan_key import arm_keys, plan_digest, planned_runs, run_fingerprint
from alisio.core.lab.plans.shards import (
    ShardBlock,
    ShardChoice,
    TaskWeight,
    owned_runs,
    parse_shard,
    slice_plan,
)
from alisio.core.lab.reports.report import AnswerSource
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.lab.suites.schedule import RunSpec
from tests.property.strategies_report import conditions, measured

_task_lists = st.lists(
    st.from_regex(r"[a-z][a-z0-9-]{0,6}", fullmatch=True), min_size=1, max_size=5, unique=True
)


@st.composite
def plans(draw: st.DrawFn) -> RunManifest:
    """A plan.json of a plain run or of a variants job, with its digest."""
    variants = draw(st.sampled_from([(), ("base", "cand"), ("a", "b", "c")]))
    manifest = RunManifest(
        run_id="plan",
        created_at="2026-01-01T00:00:00.000Z",
        suite_id="demo",
        suite_version="1.0.0",
        suite_hash="h" * 64,
        tasks=tuple(draw(_task_lists)),
        k=draw(st.integers(min_value=1, max_value=7)),
        seed=draw(st.integers(min_value=0, max_value=2**20)),
        mode=AnswerSource.LIVE,
        provider="scripted",
        model="scripted",
        config_hash="c" * 64,
        granted=("read", "write"),
        variants=tuple(ManifestVariant(id=v, config_hash=f"{v}-hash") for v in variants),
    )
    return msgspec.structs.replace(
        manifest, digest=plan_digest(manifest, plan_of_manifest(manifest).unwrap())
    )


def _slots(specs: Sequence[RunSpec]) -> Counter[tuple[str, int]]:
    return Counter((s.task_id, s.repetition) for s in specs)


def _weights(draw: st.DrawFn, tasks: Sequence[str]) -> tuple[TaskWeight, ...]:
    picked = draw(st.lists(st.sampled_from(list(tasks)), unique=True))
    return tuple(TaskWeight(task_id=t, ms=draw(st.integers(min_value=1, max_value=10**6))) for t in picked)


@given(plans(), st.data())
def test_the_slices_partition_the_plan_and_spread_each_tasks_repetitions(
    manifest: RunManifest, data: st.DataObject
) -> None:
    """Every spec of the plan in exactly one shard, in plan order; a slot's variants together; evenly cut, the
    shards' slot counts and each task's repetitions per shard differ by at most one."""
    plan = plan_of_manifest(manifest).unwrap()
    slots = len(_slots(plan))
    count = data.draw(st.integers(min_value=1, max_value=slots))
    weights = data.draw(st.booleans()) and _weights(data.draw, manifest.tasks)
    slices = [
        slice_plan(plan, ShardChoice(index=i, count=count, weights=weights or ())).unwrap()
        for i in range(1, count + 1)
    ]
    pooled = [spec for part in slices for spec in part]
    assert sorted(pooled, key=plan.index) == list(plan) and len(pooled) == len(plan)
    for part in slices:
        assert list(part) == sorted(part, key=plan.index)  # plan order
        assert all(
            n == max(1, len(manifest.variants)) for n in _slots(part).values()
        )  # a slot's variants together
    if not weights:
        sizes = [len(_slots(part)) for part in slices]
        assert max(sizes) - min(sizes) <= 1
        for task in manifest.tasks:
            per_shard = [sum(1 for t, _ in _slots(part) if t == task) for part in slices]
            assert max(per_shard) - min(per_shard) <= 1
    again = slice_plan(plan, ShardChoice(index=1, count=count, weights=weights or ())).unwrap()
    assert again == slices[0]  # deterministic


@given(plans())
def test_more_shards_than_slots_is_refused_in_one_line(manifest: RunManifest) -> None:
    plan = plan_of_manifest(manifest).unwrap()
    slots = len(_slots(plan))
    found = slice_plan(plan, ShardChoice(index=1, count=slots + 1))
    assert isinstance(found, Failure) and f"at most {slots}" in found.failure()


@given(st.integers(min_value=1, max_value=10_000), st.data())
def test_shard_flags_parse_from_one_and_bad_ones_say_why(count: int, data: st.DataObject) -> None:
    index = data.draw(st.integers(min_value=1, max_value=count))
    assert parse_shard(f"{index}/{count}") == Success((index, count))
    assert isinstance(parse_shard(f"0/{count}"), Failure)
    assert isinstance(parse_shard(f"{count + 1}/{count}"), Failure)
    assert isinstance(parse_shard(f"{index}-{count}"), Failure)


def _record(spec: RunSpec, draw: st.DrawFn, manifest: RunManifest) -> RunRecord:
    status = draw(st.sampled_from(list(RunStatus)))
    hashes = {v.id: v.config_hash for v in manifest.variants}
    return RunRecord(
        task_id=spec.task_id,
        repetition=spec.repetition,
        seed=spec.seed,
        status=status,
        reason={RunStatus.BUDGET_EXCEEDED: "maxTurns", RunStatus.ERROR: "provider_network"}.get(status),
        measured=draw(measured()),
        variant=spec.variant,
        config_hash=hashes.get(spec.variant or "", manifest.config_hash),
    )


def _outputs(
    draw: st.DrawFn, manifest: RunManifest, records: Sequence[RunRecord], count: int
) -> list[ShardOutput]:
    """Each shard's output (its records in a drawn order), some twice (an older copy given too), shuffled."""
    plan = plan_of_manifest(manifest).unwrap()
    by_key = {(r.variant, r.task_id, r.repetition): r for r in records}
    outputs = []
    for index in range(1, count + 1):
        mine = slice_plan(plan, ShardChoice(index=index, count=count)).unwrap()
        block = ShardBlock(
            digest=manifest.digest or "",
            index=index,
            count=count,
            planned_runs=len(plan),
            runs=owned_runs(mine),
        )
        own = draw(st.permutations([by_key[(s.variant, s.task_id, s.repetition)] for s in mine]))
        stamp = f"2026-01-02T00:00:{index:02d}.000Z"
        shard = msgspec.structs.replace(manifest, shard=block, run_id=f"run-{index}", created_at=stamp)
        outputs.append(ShardOutput(directory=f"dir-{index}", manifest=shard, records=tuple(own)))
        if draw(st.booleans()):  # an older output of the same shard, with none of its runs
            older = msgspec.structs.replace(
                shard, created_at="2026-01-01T23:59:59.000Z", run_id=f"old-{index}"
            )
            outputs.append(ShardOutput(directory=f"old-{index}", manifest=older, records=()))
    return draw(st.permutations(outputs))


@settings(max_examples=60)
@given(plans(), st.data())
def test_a_merge_of_the_shards_reports_what_the_unsharded_run_reports(
    manifest: RunManifest, data: st.DataObject
) -> None:
    """The merged records are the unsharded run's in plan order: each arm's report and the variants' comparison
    equal, field by field; the newest output of a shard given twice is used and the older named."""
    plan = plan_of_manifest(manifest).unwrap()
    records = [_record(spec, data.draw, manifest) for spec in plan]
    count = data.draw(st.integers(min_value=1, max_value=len(_slots(plan))))
    outputs = _outputs(data.draw, manifest, records, count)
    merged = merge_shards(outputs, allow_partial=False).unwrap()
    assert merged.records == tuple(records) and merged.never_run == 0 and merged.missing == ()
    arms: list[str | None] = [v.id for v in manifest.variants] or [None]
    reports, wholes = [], []
    for arm in arms:
        mine = [r for r in records if r.variant == arm]
        condition = conditions(k=manifest.k)
        whole = build_report(mine, condition, planned_runs=len(mine))
        pooled = build_report(
            [r for r in merged.records if r.variant == arm], condition, planned_runs=len(mine)
        )
        assert msgspec.to_builtins(pooled) == msgspec.to_builtins(whole)
        reports.append(pooled)
        wholes.append(whole)
        (listed,) = [shards for variant, shards in merged.shards if variant == arm]
        assert [m.index for m in listed] == list(range(1, count + 1))
        assert all(m.directory == f"dir-{m.index}" for m in listed)
        assert {m.index for m in listed if m.left_out} == {
            o.manifest.shard.index for o in outputs if o.directory.startswith("old")
        }  # type: ignore[union-attr]
    if manifest.variants:
        infos = [VariantInfo(id=v.id, config_hash=v.config_hash, overrides=()) for v in manifest.variants]
        assert msgspec.to_builtins(compare_infos(infos, reports).unwrap()) == msgspec.to_builtins(
            compare_infos(infos, wholes).unwrap()
        )


@settings(max_examples=40)
@given(plans(), st.data())
def test_what_is_not_one_plans_shards_is_named_and_partial_merges_count_the_runs_never_run(
    manifest: RunManifest, data: st.DataObject
) -> None:
    plan = plan_of_manifest(manifest).unwrap()
    if len(_slots(plan)) < 2:
        return
    records = [_record(spec, data.draw, manifest) for spec in plan]
    outputs = [o for o in _outputs(data.draw, manifest, records, 2) if not o.directory.startswith("old")]
    other = outputs[1]
    changed = msgspec.structs.replace(other.manifest, model="another-model")
    refused = merge_shards(
        [outputs[0], ShardOutput(directory=other.directory, manifest=changed, records=other.records)], False
    )
    assert isinstance(refused, Failure)
    assert any(
        "the model differs: scripted in shard" in line and "another-model here" in line
        for line in refused.failure()
    )
    missing = merge_shards(outputs[:1], allow_partial=False)
    assert isinstance(missing, Failure) and missing.failure()[0].startswith("missing: shard")
    partial = merge_shards(outputs[:1], allow_partial=True).unwrap()
    assert partial.never_run == len(other.records) and len(partial.records) == len(outputs[0].records)
    stray = outputs[0].records + other.records[:1]
    wrong = merge_shards(
        [ShardOutput(directory="x", manifest=outputs[0].manifest, records=stray), other], False
    )
    assert isinstance(wrong, Failure) and "which its plan.json does not own" in wrong.failure()[0]


@given(plans())
def test_fingerprints_name_the_arm_task_and_repetition_not_the_seed_or_paths(manifest: RunManifest) -> None:
    plan = plan_of_manifest(manifest).unwrap()
    runs = planned_runs(manifest, plan)
    assert [(r.task_id, r.repetition, r.variant, r.seed) for r in runs] == [
        (s.task_id, s.repetition, s.variant, s.seed) for s in plan
    ]
    moved = msgspec.structs.replace(
        manifest, suite_dir="/elsewhere", seed=manifest.seed + 1, run_id="x", label="y"
    )
    keys, moved_keys = arm_keys(manifest), arm_keys(moved)
    assert keys == moved_keys
    first = manifest.variants[0].id if manifest.variants else None
    by_run = {(r.variant, r.task_id, r.repetition): r.fingerprint for r in runs}
    assert len(set(by_run.values())) == len(by_run) or len({v.config_hash for v in manifest.variants}) < len(
        manifest.variants
    )  # distinct runs of distinct arms differ
    other = msgspec.structs.replace(manifest, model="m2")
    assert run_fingerprint(arm_keys(other)[first], "t", 0) != run_fingerprint(keys[first], "t", 0)
