"""Properties of alisio.core.lab.suites.schedule: every (task, repetition) exactly once, seeded and deterministic order."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.lab.suites.schedule import MAX_K, RunSpec, ScheduleError, plan_runs, select_tasks
from alisio.core.lab.suites.suite import Suite
from tests.property.strategies_lab import ks, seeds, task_id_lists
from tests.property.strategies_suite import suites


@given(task_id_lists, ks, seeds)
def test_every_pair_runs_exactly_once(task_ids: list[str], k: int, seed: int) -> None:
    """The plan holds each (task, repetition < k) pair once, with seed + repetition."""
    plan = plan_runs(task_ids, k, seed).unwrap()
    pairs = Counter((spec.task_id, spec.repetition) for spec in plan)
    assert pairs == Counter({(task_id, r): 1 for task_id in task_ids for r in range(k)})
    assert all(spec.seed == seed + spec.repetition for spec in plan)
    assert all(spec.variant is None for spec in plan)


@given(task_id_lists, ks, seeds)
def test_same_seed_same_order(task_ids: list[str], k: int, seed: int) -> None:
    """Planning twice with the same inputs gives the same order."""
    assert plan_runs(task_ids, k, seed) == plan_runs(task_ids, k, seed)


@given(task_id_lists, ks, seeds, st.text(min_size=1, max_size=5))
def test_variant_is_stamped_and_order_unchanged(task_ids: list[str], k: int, seed: int, variant: str) -> None:
    """A variant id is carried on every spec without changing the order."""
    plain = plan_runs(task_ids, k, seed).unwrap()
    stamped = plan_runs(task_ids, k, seed, variant=variant).unwrap()
    assert [(s.task_id, s.repetition) for s in stamped] == [(s.task_id, s.repetition) for s in plain]
    assert {s.variant for s in stamped} <= {variant}


def test_the_order_is_pinned() -> None:
    """Seed 0 over two tasks and k = 2 gives this order (a changed order would change every report's run order)."""
    plan = plan_runs(["a", "b"], 2, 0).unwrap()
    assert [(s.task_id, s.repetition) for s in plan] == [("b", 0), ("a", 0), ("a", 1), ("b", 1)]


def test_different_seeds_reorder() -> None:
    """The seed changes the order (for ten tasks, seeds 0 and 1 differ)."""
    ids = [f"t{i}" for i in range(10)]
    assert plan_runs(ids, 1, 0).unwrap() != plan_runs(ids, 1, 1).unwrap()


@given(task_id_lists, st.integers(max_value=0), seeds)
def test_k_below_one_is_refused(task_ids: list[str], k: int, seed: int) -> None:
    """k < 1 is a ScheduleError, not an empty plan."""
    assert isinstance(plan_runs(task_ids, k, seed), Failure)


@given(task_id_lists, st.integers(min_value=MAX_K + 1, max_value=10**12), seeds)
def test_k_above_the_bound_is_refused_before_planning(task_ids: list[str], k: int, seed: int) -> None:
    """k > MAX_K is a ScheduleError naming the bound (no plan of k x tasks specs is built)."""
    result = plan_runs(task_ids, k, seed)
    assert isinstance(result, Failure) and str(MAX_K) in str(result.failure())


@given(task_id_lists, ks, st.integers(max_value=-1))
def test_negative_seed_is_refused(task_ids: list[str], k: int, seed: int) -> None:
    """A negative seed is a ScheduleError naming it."""
    result = plan_runs(task_ids, k, seed)
    assert isinstance(result, Failure)
    assert str(seed) in str(result.failure())


def test_repeated_task_id_is_refused() -> None:
    """A repeated id would run a task 2k times: refused."""
    assert isinstance(plan_runs(["a", "a"], 1, 0), Failure)


@given(suites())
def test_no_selection_means_every_task(suite: Suite) -> None:
    """Without --tasks every task runs, in suite order."""
    assert select_tasks(suite, None) == Success(suite.tasks)


@given(suites(), st.data())
def test_selection_keeps_the_order_given(suite: Suite, data: st.DataObject) -> None:
    """--tasks picks the named tasks in the order named; suiteId/taskId names the same task."""
    ids = [t.id for t in suite.tasks]
    picked = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=4, unique=True))
    named = [f"{suite.suite_id}/{i}" if n % 2 else i for n, i in enumerate(picked)]
    chosen = select_tasks(suite, named).unwrap()
    assert [t.id for t in chosen] == picked


@given(suites(), st.data(), st.booleans())
def test_a_task_named_twice_is_refused(suite: Suite, data: st.DataObject, qualified: bool) -> None:
    """A task named twice (plainly or as suiteId/taskId) is an error naming it, never run once silently."""
    task_id = data.draw(st.sampled_from([t.id for t in suite.tasks]))
    again = f"{suite.suite_id}/{task_id}" if qualified else task_id
    result = select_tasks(suite, [task_id, again])
    assert isinstance(result, Failure)
    assert task_id in result.failure().message and "more than once" in result.failure().message


@given(suites())
def test_unknown_task_lists_the_known_ones(suite: Suite) -> None:
    """An unknown id is an error naming it, the suite and every known task id."""
    result = select_tasks(suite, [suite.tasks[0].id, "no-such-task!"])
    assert isinstance(result, Failure)
    error = result.failure()
    assert isinstance(error, ScheduleError)
    assert "no-such-task!" in error.message
    assert suite.suite_id in error.message
    assert all(t.id in error.message for t in suite.tasks)


@given(suites())
def test_empty_selection_is_an_error(suite: Suite) -> None:
    """--tasks with only blanks selects nothing: an error, not an empty run."""
    assert isinstance(select_tasks(suite, [" ", ""]), Failure)


def test_run_spec_round_trips() -> None:
    """A RunSpec is camelCase on the wire and omits an absent variant."""
    import msgspec

    spec = RunSpec(task_id="a", repetition=1, seed=3)
    assert msgspec.json.encode(spec) == b'{"taskId":"a","repetition":1,"seed":3}'
