"""Properties of alisio.core.stats.power: runs per side and per task, minimum detectable effects, and the
validation of ``alisio eval power``'s flags. Reference sizes come from statsmodels (stats_reference.json)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.errors import PowerInputError
from alisio.core.lab.comparisons.power_plan import PowerRequest, parse_power_request, plan_power, render_power
from alisio.core.stats.exact import boschloo_p, boschloo_regions
from alisio.core.stats.power import (
    GATE,
    SUITE_MIN_TASKS,
    boschloo_power,
    min_detectable_difference,
    paired_min_detectable,
    power_two_proportions,
    runs_per_side,
    runs_per_task,
)

REFERENCE = json.loads((Path(__file__).parent / "data" / "stats_reference.json").read_text())
rates = st.integers(0, 20).map(lambda i: i / 20)
deltas = st.integers(1, 10).map(lambda i: i / 20)


def test_the_worked_example() -> None:
    """0.5 -> 0.6 needs 388 runs per side (387.34 before rounding up); 0.5 -> 0.8 needs 39."""
    plan = plan_power(parse_power_request("0.5", "0.1").unwrap())
    assert plan.runs_per_side == 388 and round(plan.runs_per_side_exact, 2) == 387.34
    assert math.ceil(runs_per_side(0.5, 0.3)) == 39


@pytest.mark.parametrize("case", REFERENCE["runs_per_side"], ids=lambda c: f"{c['p1']}-{c['p2']}")
def test_runs_per_side_match_statsmodels(case: dict[str, float]) -> None:
    """Equal to statsmodels' samplesize_proportions_2indep_onetail (two-sided, pooled null variance)."""
    assert math.isclose(runs_per_side(case["p1"], case["p2"] - case["p1"]), case["n"], rel_tol=1e-9)


@given(rates, deltas, deltas)
def test_runs_per_side_fall_as_the_change_grows(p1: float, small: float, large: float) -> None:
    """A larger change (same direction) never needs more runs."""
    assume(small < large and p1 + large <= 1.0)
    assert runs_per_side(p1, large) <= runs_per_side(p1, small)


@given(rates, deltas, st.floats(0.5, 0.99), st.floats(0.5, 0.99))
def test_runs_per_side_grow_with_the_power_wanted(p1: float, delta: float, low: float, high: float) -> None:
    """More power, or a smaller alpha, never needs fewer runs."""
    assume(p1 + delta <= 1.0 and low < high)
    assert runs_per_side(p1, delta, power=low) <= runs_per_side(p1, delta, power=high)
    assert runs_per_side(p1, delta, alpha=0.05) <= runs_per_side(p1, delta, alpha=0.01)


@given(rates, deltas)
def test_the_power_formula_inverts_the_sample_size(p1: float, delta: float) -> None:
    """At the (unrounded) runs per side, the power is 0.8; one run more never loses power."""
    assume(p1 + delta <= 1.0)
    n = runs_per_side(p1, delta)
    assume(n >= 2)
    whole = math.ceil(n)
    assert power_two_proportions(p1, p1 + delta, whole, whole) >= 0.8 - 1e-9
    assert power_two_proportions(p1, p1 + delta, whole + 1, whole + 1) >= power_two_proportions(
        p1, p1 + delta, whole, whole
    )


@settings(max_examples=50)
@given(rates, st.integers(5, 200), st.integers(5, 200))
def test_the_minimum_detectable_change_has_the_power(p1: float, n1: int, n2: int) -> None:
    """At the minimum detectable change the power is 0.8, just below it less; more runs shrink it."""
    mde = min_detectable_difference(p1, n1, n2)
    if mde is None:
        return
    up, down = p1 + mde, p1 - mde
    reached = [power_two_proportions(p1, p2, n1, n2) for p2 in (up, down) if 0.0 <= p2 <= 1.0]
    assert max(reached) >= 0.8 - 1e-6
    bigger = min_detectable_difference(p1, 2 * n1, 2 * n2)
    assert bigger is not None and bigger <= mde + 1e-9


def test_too_few_runs_detect_nothing() -> None:
    """5 runs per side from 50%: not even 50% -> 100% has 80% power (the disjoint rule agrees: only 0/5 vs 5/5)."""
    assert min_detectable_difference(0.5, 5, 5) is None
    assert min_detectable_difference(0.0, 10, 10) is not None


@given(st.floats(0.01, 0.5), st.integers(2, 60), st.integers(2, 60))
def test_paired_detectable_effect_falls_with_tasks(spread: float, few: int, many: int) -> None:
    """More tasks at the same spread detect a smaller mean difference."""
    assume(few < many)
    assert paired_min_detectable(spread, many) < paired_min_detectable(spread, few)


@given(rates, deltas, st.integers(2, 40), st.floats(0.0, 0.2))
def test_runs_per_task_behave(p1: float, delta: float, tasks: int, sd: float) -> None:
    """More tasks never need more runs per task; a larger spread never needs fewer; the fewest tasks work."""
    assume(p1 + delta <= 1.0)
    k, fewest = runs_per_task(p1, delta, tasks, sd)
    k_more, _ = runs_per_task(p1, delta, tasks + 5, sd)
    k_wider, _ = runs_per_task(p1, delta, tasks, sd + 0.05)
    assert (k is None) is (tasks < fewest)
    if k is not None:
        assert k_more is not None and k_more <= k
        assert k_wider is None or k_wider >= k
    assert runs_per_task(p1, delta, fewest, sd)[0] is not None


def test_a_spread_larger_than_the_change_needs_more_tasks() -> None:
    """0.5 -> 0.6 over 20 tasks with a spread of 0.3: no k is enough, 73 tasks at least; with 0: 22 per task."""
    plan = plan_power(parse_power_request("0.5", "0.1", tasks="20", task_sd="0.3").unwrap())
    assert plan.runs_per_task is None and plan.min_tasks == 73
    assert "no number of runs per task is enough; at least 73 tasks are needed" in render_power(plan)
    plan = plan_power(parse_power_request("0.5", "0.1", tasks="20").unwrap())
    assert plan.runs_per_task == 22 and plan.task_sd == 0.0


@pytest.mark.parametrize(
    ("args", "flag", "words"),
    [
        ((None, "0.1"), "--baseline-rate", "is required"),
        (("0.5", None), "--detect", "is required"),
        (("half", "0.1"), "--baseline-rate", "expected a number, got 'half'"),
        (("1.5", "0.1"), "--baseline-rate", "must be in [0, 1], got 1.5"),
        (("0.5", "0"), "--detect", "must not be 0"),
        (("0.9", "0.2"), "--detect", "0.9 +0.2 = 1.1 is not a rate in [0, 1]"),
        (("0.5", "0.1", "0"), "--alpha", "must be in [1e-06, 0.5], got 0"),
        (("0.5", "0.1", "1e-300"), "--alpha", "must be in [1e-06, 0.5], got 1e-300"),
        (("0.5", "0.1", None, "1"), "--power", "must be in [0.01, 0.999999], got 1"),
        (("0.5", "0.1", None, "1e-298"), "--power", "must be in [0.01, 0.999999], got 1e-298"),
        (("0.5", "1e-300"), "--detect", "must be at least 0.0001 (0.01 pp) up or down, got 1e-300"),
        (("0.5", "0.1", None, None, "1"), "--tasks", "whole number of tasks from 2"),
        (("0.5", "0.1", None, None, "2.5"), "--tasks", "whole number of tasks from 2"),
        (("0.5", "0.1", None, None, "100000000000000000000"), "--tasks", "to 10000, got '1000000"),
        (("0.5", "0.1", None, None, None, "0.1"), "--task-sd", "give --tasks too"),
        (("0.5", "0.1", None, None, "5", "-1"), "--task-sd", "must be in [0, 1]"),
        (("0.5", "nan"), "--detect", "finite"),
    ],
)
def test_bad_flags_name_the_flag(args: tuple[str | None, ...], flag: str, words: str) -> None:
    """Every invalid flag is a PowerInputError naming the flag and what is wrong."""
    match parse_power_request(*args):
        case Failure(PowerInputError() as error):
            assert error.flag == flag and words in error.message
        case other:
            raise AssertionError(other)


def test_a_regression_and_the_edge_rate_are_accepted() -> None:
    """--detect may be negative, and 0.9 + 0.1 reaches 1.0 exactly (no float overshoot)."""
    assert isinstance(parse_power_request("0.6", "-0.1"), Success)
    plan = plan_power(parse_power_request("0.9", "0.1").unwrap())
    assert plan.candidate_rate == 1.0 and plan.runs_per_side == 74


@settings(max_examples=25, deadline=None)
@given(st.floats(0.0, 1.0), st.floats(-1.0, 1.0), st.none() | st.integers(2, 40))
def test_no_plan_is_below_the_verdict_gate(p1: float, delta: float, tasks: int | None) -> None:
    """Every plan asks for at least 5 runs per side and per task: below that eval compare gives no verdict."""
    p2 = p1 + delta
    assume(0.0 <= p2 <= 1.0 and abs(delta) >= 0.05)
    plan = plan_power(PowerRequest(baseline_rate=p1, detect=delta, tasks=tasks))
    assert plan.runs_per_side >= GATE
    assert plan.runs_per_task is None or plan.runs_per_task >= GATE


def test_small_plans_use_the_exact_power_of_boschloo() -> None:
    """0.2 -> 0.8: the normal formula says 9.6; the plan is the smallest n whose exact Boschloo power reaches
    0.8 (10: at 9 it is below); 0 -> 1 is 5 runs (the gate), where 0/5 vs 5/5 always rejects."""
    plan = plan_power(PowerRequest(baseline_rate=0.2, detect=0.6))
    assert plan.runs_per_side_method == "boschloo_exact" and plan.runs_per_side == 10
    assert boschloo_power(0.2, 0.8, 10, 10) >= 0.8 > boschloo_power(0.2, 0.8, 9, 9)
    edge = plan_power(PowerRequest(baseline_rate=0.0, detect=1.0))
    assert edge.runs_per_side == 5 and boschloo_power(0.0, 1.0, 5, 5) == 1.0
    assert boschloo_power(0.5, 0.5, 6, 6) < 0.05  # the size of the test, not its power


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 12), st.integers(1, 12), st.sampled_from([0.01, 0.05, 0.1]))
def test_the_rejection_regions_are_boschloo_p_below_alpha_table_by_table(
    n1: int, n2: int, alpha: float
) -> None:
    """``boschloo_regions`` (a cut on the sorted Fisher statistics) rejects exactly the tables whose
    ``boschloo_p`` is below alpha, each toward the side its rates point to (better: c/n2 > a/n1); the exact
    power is the probability of those tables, summed here table by table."""
    better, worse = boschloo_regions(n1, n2, alpha)
    for a in range(n1 + 1):
        for c in range(n2 + 1):
            p = boschloo_p(a, n1, c, n2)
            assert p is not None
            assert bool(better[a, c] or worse[a, c]) == (p < alpha)
            assert not (better[a, c] and worse[a, c])
            if better[a, c]:
                assert c / n2 > a / n1
    p1, p2 = 0.3, 0.7
    chance = [
        [
            math.comb(n1, a) * p1**a * (1 - p1) ** (n1 - a) * math.comb(n2, c) * p2**c * (1 - p2) ** (n2 - c)
            for c in range(n2 + 1)
        ]
        for a in range(n1 + 1)
    ]
    either = sum(chance[a][c] for a in range(n1 + 1) for c in range(n2 + 1) if better[a, c] or worse[a, c])
    up = sum(chance[a][c] for a in range(n1 + 1) for c in range(n2 + 1) if better[a, c])
    assert math.isclose(boschloo_power(p1, p2, n1, n2, alpha), min(1.0, either), rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(
        boschloo_power(p1, p2, n1, n2, alpha, direction="better"), min(1.0, up), rel_tol=1e-12, abs_tol=1e-15
    )


def test_the_suite_plan_names_its_statistic_and_warns_below_six_tasks() -> None:
    """The suite plan is for a paired t test; with 5 tasks it carries a warning, with 6 it does not."""
    few = plan_power(PowerRequest(baseline_rate=0.5, detect=0.3, tasks=5))
    enough = plan_power(PowerRequest(baseline_rate=0.5, detect=0.3, tasks=SUITE_MIN_TASKS))
    assert few.suite_statistic == "paired_t" and len(few.warnings) == 1 and "5 tasks" in few.warnings[0]
    assert enough.warnings == ()
    assert "warning: with 5 tasks" in render_power(few)
