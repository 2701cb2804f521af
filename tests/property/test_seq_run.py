"""Properties of ``alisio.core.lab.plans.seq_run``: the sequential plan, a task's outcomes, its first stop, the
block of both arms and the sequential gate."""

from __future__ import annotations

from collections import Counter

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from alisio.core.lab.comparisons.variants import interleave
from alisio.core.lab.plans.seq_run import (
    both_arms,
    first_stop,
    look,
    outcomes,
    paired_outcomes,
    sequential_block,
    sequential_gate,
    sequential_plan,
)
from alisio.core.lab.reports.seq_block import BaselineCount, SequentialBlock, SequentialPlan, TaskStop
from alisio.core.lab.runs.records import Measured, RunRecord, RunStatus
from alisio.core.lab.suites.schedule import plan_runs

TASK_IDS = st.lists(st.sampled_from(("a", "b", "c", "d", "e")), min_size=1, max_size=5, unique=True)
OUTCOMES = st.lists(st.booleans(), max_size=30).map(tuple)


def _record(task_id: str, rep: int, status: RunStatus, variant: str | None = None) -> RunRecord:
    measured = Measured(wall_ms=1, turns=1, tool_calls=0, compactions=0, usage_complete=False)
    return RunRecord(
        task_id=task_id, repetition=rep, seed=rep, status=status, measured=measured, variant=variant
    )


@settings(max_examples=40)
@given(TASK_IDS, st.integers(1, 12), st.integers(0, 1000))
def test_the_single_arm_plan_is_every_slot_once_repetition_major(
    task_ids: list[str], k: int, seed: int
) -> None:
    """The plan holds exactly the specs of ``plan_runs`` (same task, repetition and seed), ordered by
    repetition, so each task's outcomes grow in repetition order; the same inputs give the same plan."""
    plan = sequential_plan(None, task_ids, k, seed).unwrap()
    assert Counter(plan) == Counter(plan_runs(task_ids, k, seed).unwrap())
    reps = [spec.repetition for spec in plan]
    assert reps == sorted(reps)
    assert plan == sequential_plan(None, task_ids, k, seed).unwrap()


@settings(max_examples=40)
@given(TASK_IDS, st.integers(1, 8), st.integers(0, 1000))
def test_the_two_variant_plan_runs_each_slot_back_to_back_alternating(
    task_ids: list[str], k: int, seed: int
) -> None:
    """Each (task, repetition) slot runs both variants back to back, A,B on even slots and B,A on odd ones;
    every variant gets the specs ``interleave`` gives it (the same tasks, repetitions and seeds)."""
    plan = sequential_plan(["x", "y"], task_ids, k, seed).unwrap()
    assert Counter(plan) == Counter(interleave(["x", "y"], task_ids, k, seed).unwrap())
    for index in range(0, len(plan), 2):
        first, second = plan[index], plan[index + 1]
        assert (first.task_id, first.repetition) == (second.task_id, second.repetition)
        expected = ("x", "y") if (index // 2) % 2 == 0 else ("y", "x")
        assert (first.variant, second.variant) == expected
    reps = [spec.repetition for spec in plan]
    assert reps == sorted(reps)


@given(st.dictionaries(st.integers(0, 12), st.sampled_from(list(RunStatus)), max_size=13))
def test_outcomes_are_the_judged_prefix_in_repetition_order(statuses: dict[int, RunStatus]) -> None:
    """A task's outcomes: its repetitions 0, 1, ... up to the first one missing (a run in flight ends the
    prefix), errored runs left out, pass as True and fail or budget_exceeded as False; the order records come
    in does not matter."""
    records = [_record("t", rep, status) for rep, status in statuses.items()]
    prefix = 0
    while prefix in statuses:
        prefix += 1
    expected = tuple(
        statuses[rep] is RunStatus.PASS for rep in range(prefix) if statuses[rep] is not RunStatus.ERROR
    )
    assert outcomes(records) == expected
    assert outcomes(reversed(records)) == expected


ARM = st.dictionaries(st.integers(0, 12), st.sampled_from(list(RunStatus)), max_size=13)


@given(ARM, ARM)
def test_two_arms_are_paired_by_repetition_and_a_repetition_with_an_error_is_skipped(
    base: dict[int, RunStatus], cand: dict[int, RunStatus]
) -> None:
    """Pair j is repetition j of both arms, for j up to the first repetition missing on either side; a
    repetition with an errored run on either side gives no pair (the other arm's run is not paired with a
    later repetition); records in any order give the same pairs."""
    prefix = 0
    while prefix in base and prefix in cand:
        prefix += 1
    expected = [
        (base[j] is RunStatus.PASS, cand[j] is RunStatus.PASS)
        for j in range(prefix)
        if RunStatus.ERROR not in (base[j], cand[j])
    ]
    b_records = [_record("t", rep, status, "base") for rep, status in base.items()]
    c_records = [_record("t", rep, status, "cand") for rep, status in cand.items()]
    got = paired_outcomes(b_records, c_records)
    assert got == (tuple(b for b, _ in expected), tuple(c for _, c in expected))
    assert paired_outcomes(reversed(b_records), reversed(c_records)) == got


def test_an_error_skips_its_whole_repetition() -> None:
    """Baseline pass, fail, pass and candidate error, pass, pass: one error must not shift the candidate's
    repetitions onto the baseline's earlier ones (per-arm dropping would pair (pass, pass), (fail, pass))."""
    p, f, e = RunStatus.PASS, RunStatus.FAIL, RunStatus.ERROR
    base = [_record("t", rep, s, "base") for rep, s in enumerate((p, f, p))]
    cand = [_record("t", rep, s, "cand") for rep, s in enumerate((e, p, p))]
    assert paired_outcomes(base, cand) == ((False, True), (True, True))


WIDTH = SequentialPlan(kind="width", max_k=30, min_k=5, width=0.5)
TWO_ARM = SequentialPlan(kind="two-arm", max_k=30, min_k=5, baseline="base")
AGAINST = SequentialPlan(
    kind="baseline",
    max_k=30,
    min_k=5,
    baseline="r",
    baseline_counts=(BaselineCount(task_id="t", passes=2, judged=10),),
)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from((WIDTH, TWO_ARM, AGAINST)), OUTCOMES, OUTCOMES)
def test_the_first_stop_is_the_fewest_outcomes_at_which_the_task_had_stopped(
    plan: SequentialPlan, base: tuple[bool, ...], candidate: tuple[bool, ...]
) -> None:
    """``first_stop`` is the smallest prefix length at which the look says stopped, and the task is stopped at
    every longer prefix (a stop is monotone); ``None`` exactly when the whole prefix has not stopped."""
    base = base if plan.kind == "two-arm" else ()
    top = min(len(base), len(candidate)) if plan.kind == "two-arm" else len(candidate)

    def cut(n: int) -> tuple[tuple[bool, ...], tuple[bool, ...]]:
        return (base[:n], candidate[:n]) if plan.kind == "two-arm" else ((), candidate[:n])

    at = first_stop(plan, 2, "t", (base, candidate))
    stopped = [look(plan, 2, "t", cut(n)).stopped for n in range(top + 1)]
    if at is None:
        assert not stopped[top]
    else:
        assert stopped[at] and not any(stopped[:at])
        assert all(stopped[at:])


@settings(max_examples=20, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=12), st.lists(st.booleans(), min_size=1, max_size=12))
def test_each_arm_counts_its_own_runs_and_both_arms_add_them(base: list[bool], cand: list[bool]) -> None:
    """In a two-variant block each arm's task counts its own runs and its savings against max_k, and the
    pairs its statistic used (repetitions both arms finished); the comparison's block adds the two arms' runs
    and savings and keeps the candidate's stop."""
    records = [
        _record("t", rep, RunStatus.PASS if passed else RunStatus.FAIL, variant)
        for variant, arm in (("base", base), ("cand", cand))
        for rep, passed in enumerate(arm)
    ]
    blocks = [sequential_block(TWO_ARM, ["t"], records, variant, {}) for variant in ("base", "cand")]
    for block, arm in zip(blocks, (base, cand), strict=True):
        (stop,) = block.tasks
        assert (stop.runs, stop.judged, stop.runs_saved) == (
            len(arm),
            min(len(base), len(cand)),
            30 - len(arm),
        )
    both = both_arms(blocks)
    (stop,) = both.tasks
    assert stop.runs == len(base) + len(cand)
    assert both.runs_saved == 60 - len(base) - len(cand)
    assert (stop.reason, stop.statistic) == (blocks[1].tasks[0].reason, blocks[1].tasks[0].statistic)


REASONS = st.sampled_from(("decided", "futility", "max-k", None))
DIRECTIONS = st.sampled_from(("not-worse", "improved", None))


@given(st.lists(st.tuples(REASONS, DIRECTIONS), min_size=1, max_size=6))
def test_the_sequential_gate_is_hit_unless_every_task_is_decided_not_worse(
    stops: list[tuple[str | None, str | None]],
) -> None:
    """``--fail-on worse-than:M`` under ``--sequential``: passed only when every task was decided "not worse";
    a task stopped for futility, at max-k or not stopped hits it and is named."""
    plan = SequentialPlan(kind="two-arm", side="not-worse", margin=0.1, baseline="base")
    tasks = tuple(
        TaskStop(
            task_id=f"t{i}",
            runs=5,
            judged=5,
            reason=reason,
            direction=direction,  # type: ignore[arg-type]
            statistic=1.0,
            threshold=40.0,
            stopped_at=5 if reason else None,
        )
        for i, (reason, direction) in enumerate(stops)
    )
    block = SequentialBlock(plan=plan, tasks=tasks, runs_saved=0, method="m")
    line, hit = sequential_gate(block)
    misses = [t for t in tasks if not (t.reason == "decided" and t.direction == "not-worse")]
    assert hit == bool(misses)
    assert all(t.task_id in line for t in misses[:10])
    assert ("exit 4" in line) == hit
    assert msgspec.json.decode(msgspec.json.encode(block), type=SequentialBlock) == block
