"""Properties of the anytime-valid sequential tests (``alisio.core.stats.sequential``): the e-values against an
independent exact implementation, the stopping rules, the confidence sequences, the alpha boundary and the
symmetry between arms. Each test states the property it checks."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from alisio.core.stats.betting import BETS, pair_bounds
from alisio.core.stats.sequential import (
    SequentialDesign,
    against_baseline,
    crosses,
    design_problem,
    scan_pairs,
    threshold,
    two_arm,
    until_width,
    width_problem,
)
from alisio.core.stats.sequential_kernel import REASONS, baseline_nulls, rate_bounds

runs = st.lists(st.booleans(), min_size=0, max_size=60)
pairs = st.integers(0, 60).flatmap(
    lambda n: st.tuples(
        st.lists(st.booleans(), min_size=n, max_size=n), st.lists(st.booleans(), min_size=n, max_size=n)
    )
)
sides = st.sampled_from(["two-sided", "improved", "not-worse"])


def _design(
    side: str = "two-sided", tasks: int = 1, max_k: int = 60, min_k: int = 5, margin: float = 0.1
) -> SequentialDesign:
    return SequentialDesign(
        tasks=tasks,
        max_k=max_k,
        min_k=min_k,
        side=side,
        margin=margin if side == "not-worse" else 0.0,  # type: ignore[arg-type]
    )


EXACT_BETS = tuple(Fraction(g, 21) for g in range(1, 21))
"""The bet fractions of the mixture as exact rationals (the module's ``BETS`` are their floats)."""


def _exact_running_max(baseline: list[bool], candidate: list[bool], m: Fraction, two_sided: bool) -> Fraction:
    """Independently, in exact rationals: the running maximum over looks t >= 0 of the mixture wealth
    mean_u prod_{j <= t} (1 + lam_u (D_j - m)), lam_u = u/(1 + m) long and -u/(1 - m) short; the look t = 0 is
    the starting wealth 1."""
    lams = [u / (1 + m) for u in EXACT_BETS] + ([-u / (1 - m) for u in EXACT_BETS] if two_sided else [])
    wealth = [Fraction(1)] * len(lams)
    best = Fraction(1)
    for b, c in zip(baseline, candidate, strict=False):
        wealth = [w * (1 + lam * (int(c) - int(b) - m)) for w, lam in zip(wealth, lams, strict=True)]
        sides = (
            [sum(wealth[: len(EXACT_BETS)]), sum(wealth[len(EXACT_BETS) :])] if two_sided else [sum(wealth)]
        )
        best = max(best, Fraction(max(sides)) / len(EXACT_BETS))
    return best


def test_the_bets_are_the_exact_fractions() -> None:
    """The float grid of bets is the rational grid g/21 the exact reference uses."""
    assert tuple(float(u) for u in EXACT_BETS) == BETS


@settings(max_examples=40, deadline=None)
@given(pairs, sides)
def test_the_e_value_matches_an_exact_pair_by_pair_product(
    data: tuple[list[bool], list[bool]], side: str
) -> None:
    """The statistic is the running maximum over looks of the mixture wealth, its start 1 included, which an
    independent pair-by-pair product in fractions reproduces to 1e-9 (relative), for every side (two-sided:
    the larger of long and short); with no pairs it is the starting wealth 1."""
    baseline, candidate = data
    m = Fraction(-1, 10) if side == "not-worse" else Fraction(0)
    expected = _exact_running_max(baseline, candidate, m, side == "two-sided")
    got = two_arm(_design(side, max_k=60, min_k=1), baseline, candidate)
    assert math.isclose(got.statistic, float(expected), rel_tol=1e-9)


@settings(max_examples=40, deadline=None)
@given(pairs, st.integers(0, 30), sides)
@example(([True], [False]), 0, "improved")  # the statistic fell below the empty prefix's 1 (issue 30)
def test_a_stopped_task_stays_stopped_for_every_longer_prefix(
    data: tuple[list[bool], list[bool]], cut: int, side: str
) -> None:
    """Monotone stopping: if a prefix has stopped, every longer prefix with the same start is stopped too, and
    "decided" stays decided with the same direction."""
    baseline, candidate = data
    design = _design(side, max_k=40, min_k=3)
    n = min(cut, len(baseline))
    short = two_arm(design, baseline[:n], candidate[:n])
    full = two_arm(design, baseline, candidate)
    if short.stopped:
        assert full.stopped
        if short.reason == "decided":
            assert full.reason == "decided" and full.direction == short.direction
    assert full.statistic >= short.statistic * (1 - 1e-12)


@settings(max_examples=60, deadline=None)
@given(pairs)
def test_two_sided_is_symmetric_between_arms(data: tuple[list[bool], list[bool]]) -> None:
    """Swapping the arms mirrors the two-sided test: same stop, same statistic, improved <-> regressed, and
    the interval reflected about 0."""
    baseline, candidate = data
    design = _design("two-sided", max_k=40)
    a, b = two_arm(design, baseline, candidate), two_arm(design, candidate, baseline)
    assert (a.stopped, a.reason, a.runs) == (b.stopped, b.reason, b.runs)
    assert math.isclose(a.statistic, b.statistic, rel_tol=1e-9)
    swap = {"improved": "regressed", "regressed": "improved", None: None}
    assert b.direction == swap[a.direction]
    if a.interval is not None and b.interval is not None:
        assert math.isclose(a.interval[0], -b.interval[1], abs_tol=1e-9)
        assert math.isclose(a.interval[1], -b.interval[0], abs_tol=1e-9)


@settings(max_examples=60, deadline=None)
@given(pairs, sides)
def test_each_looks_sequence_holds_the_empirical_mean(data: tuple[list[bool], list[bool]], side: str) -> None:
    """At every look the confidence set contains the observed mean difference (a fixed bet's wealth at the
    sample mean is prod(1 + lam (D_j - mean)) <= exp(lam sum(D_j - mean)) = 1, below any threshold), lies in
    [-1, 1], and the reported interval is the running intersection of those sets."""
    baseline, candidate = data
    design = _design(side, max_k=60)
    plus, zero, minus = _counts(baseline, candidate)
    lows, highs = pair_bounds(plus, zero, minus, math.log(threshold(design)), upper=side == "two-sided")
    for t in range(len(baseline)):
        mean = (plus[t] - minus[t]) / (t + 1)
        assert -1.0 <= lows[t] <= mean + 1e-12 and mean - 1e-12 <= highs[t] <= 1.0
    got = two_arm(design, baseline, candidate)
    if not baseline:
        assert got.interval is None
        return
    assert got.interval == (max(lows), min(highs)) or max(lows) > min(highs)


def _counts(baseline: list[bool], candidate: list[bool]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = np.asarray(candidate, dtype=int) - np.asarray(baseline, dtype=int)
    return (
        np.cumsum(d == 1).astype(float),
        np.cumsum(d == 0).astype(float),
        np.cumsum(d == -1).astype(float),
    )


@pytest.mark.parametrize("side", ["improved", "not-worse"])
def test_the_statistic_starts_at_one_and_a_first_pair_against_the_bet_leaves_it_there(side: str) -> None:
    """The running maximum includes K_0 = 1: one pair against the bet (baseline passed, candidate failed)
    multiplies the one-sided (long) wealth by 1 - mean(u) = 0.5, yet the statistic stays 1, as it is with no
    pair at all; so an empty prefix's statistic is never above a longer prefix's (the case Hypothesis
    found: a stopped task's statistic must not fall)."""
    design = _design(side, max_k=40, min_k=3)
    assert two_arm(design, [], []).statistic == 1.0
    assert two_arm(design, [True], [False]).statistic == 1.0
    assert two_arm(design, [True, True], [False, False]).statistic == 1.0


def test_ten_wins_in_a_row_decide_improved_and_ten_losses_regressed() -> None:
    """Ten pairs where only the candidate passes give e-value >= 40 (two-sided, one task): improved; the mirror
    image is regressed; equal outcomes never decide."""
    design = _design("two-sided", max_k=50)
    up = two_arm(design, [False] * 10, [True] * 10)
    assert (up.stopped, up.reason, up.direction) == (True, "decided", "improved")
    assert up.threshold == 40.0 and up.statistic >= 40.0
    down = two_arm(design, [True] * 10, [False] * 10)
    assert (down.reason, down.direction) == ("decided", "regressed")
    same = two_arm(design, [True, False] * 10, [True, False] * 10)
    assert same.reason != "decided" and same.statistic == 1.0


def test_nothing_stops_before_min_k_and_everything_stops_at_max_k() -> None:
    """min_k: no stop before it even with overwhelming evidence; max_k: a task still open stops there."""
    design = _design("two-sided", max_k=12, min_k=8, tasks=1)
    early = two_arm(design, [False] * 7, [True] * 7)
    assert not early.stopped and early.reason is None
    assert two_arm(design, [False] * 8, [True] * 8).reason == "decided"
    lazy = SequentialDesign(tasks=1, max_k=12, min_k=8, futility=0.0)
    mixed = [True, False, False, True] * 3
    assert two_arm(lazy, mixed, [not x for x in mixed]).reason in ("max-k", "futility")


def test_futility_stops_when_deciding_has_become_impossible() -> None:
    """With 2 pairs left and e-value 1, no continuation reaches 40: futility even at level 0."""
    design = SequentialDesign(tasks=1, max_k=12, min_k=5, futility=0.0)
    same = [True] * 10
    got = two_arm(design, same, same)
    assert got.reason == "futility" and got.runs == 10


@pytest.mark.parametrize("side", ["two-sided", "improved", "not-worse"])
def test_the_alpha_boundary_decides_at_equality(side: str) -> None:
    """An e-value exactly at 1/alpha decides (Ville's bound includes equality: P(sup K >= 1/a) <= a), one ulp
    below it does not; the predicate is used with the design's own threshold."""
    assert crosses(40.0, 40.0) and not crosses(math.nextafter(40.0, 0.0), 40.0)
    baseline, candidate = [False] * 9, [True] * 9
    stat = two_arm(_design(side, max_k=50, min_k=1), baseline, candidate).statistic
    factor = 2.0 if side == "two-sided" else 1.0
    alpha = factor / stat
    if factor / alpha != stat:  # the float round trip must land exactly on the statistic
        pytest.skip("alpha does not round-trip")
    at = SequentialDesign(
        alpha=alpha, tasks=1, max_k=50, min_k=9, side=side, margin=0.1 if side == "not-worse" else 0.0
    )  # type: ignore[arg-type]
    assert threshold(at) == stat
    assert two_arm(at, baseline, candidate).reason == "decided"
    above = SequentialDesign(
        alpha=math.nextafter(alpha, 0.0), tasks=1, max_k=50, min_k=9, side=side, margin=at.margin
    )  # type: ignore[arg-type]
    assert threshold(above) > stat
    assert two_arm(above, baseline, candidate).reason != "decided"


def test_against_a_baseline_and_until_width_work_on_clear_cases() -> None:
    """A candidate passing 20 of 20 against a baseline of 25/50 is improved; failing 20 of 20 is regressed;
    one arm stops for width once its sequence is narrower than W."""
    design = _design("two-sided", max_k=50)
    assert against_baseline(design, 25, 50, [True] * 20).direction == "improved"
    assert against_baseline(design, 25, 50, [False] * 20).direction == "regressed"
    got = until_width(0.05, 1, 0.5, 200, 5, [True, False] * 50)
    assert got.reason == "width" and got.statistic < 0.5
    assert got.interval is not None and got.interval[0] < 0.5 < got.interval[1]


def test_design_problems_are_one_line_messages() -> None:
    """Invalid designs are named (the CLI prints these); valid ones give None."""
    assert design_problem(SequentialDesign(tasks=1)) is None
    assert "--max-k (3) must be at least --min-k (5)" in (
        design_problem(SequentialDesign(tasks=1, max_k=3)) or ""
    )
    assert "alpha" in (design_problem(SequentialDesign(tasks=1, alpha=1.5)) or "")
    with pytest.raises(ValueError, match="max-k"):
        two_arm(SequentialDesign(tasks=1, max_k=2000), [], [])
    assert width_problem(0.2) is None and width_problem(1.0) is None
    assert width_problem(0.0) == "--until-width must be in (0, 1] (0.2 is ±10 points), got 0"
    with pytest.raises(ValueError, match="until-width"):
        until_width(0.05, 1, 1.5, 50, 5, [True])


@settings(max_examples=6, deadline=None)
@given(st.lists(pairs, min_size=1, max_size=4), sides)
def test_the_vectorised_scan_is_the_cli_looking_after_every_pair(
    rows: list[tuple[list[bool], list[bool]]], side: str
) -> None:
    """``scan_pairs`` over many tasks at once (what the simulation runs) stops each task at the first prefix at
    which ``two_arm`` (what the CLI calls after every pair) says stopped, for the same reason and direction."""
    design = _design(side, max_k=40, min_k=3)
    rows = [(b[:40], c[:40]) for b, c in rows]
    width = max(len(b) for b, _ in rows)
    diffs = np.zeros((len(rows), width), dtype=np.int64)
    for i, (b, c) in enumerate(rows):
        diffs[i, : len(b)] = np.asarray(c, dtype=int) - np.asarray(b, dtype=int)
    stop, code, direction = scan_pairs(design, diffs)
    for i, (b, c) in enumerate(rows):
        first = next((t for t in range(len(b) + 1) if two_arm(design, b[:t], c[:t]).stopped), None)
        if first is None:
            assert code[i] == 0 or stop[i] > len(b)  # padding past the row's end may stop it later
            continue
        at = two_arm(design, b[:first], c[:first])
        assert stop[i] == first and REASONS[code[i] - 1] == at.reason
        names = ("improved", "regressed") if side == "two-sided" else (side,)
        assert (names[direction[i]] if direction[i] >= 0 else None) == at.direction


baselines = st.integers(1, 60).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))


@settings(max_examples=30, deadline=None)
@given(runs, baselines, st.integers(0, 40), sides)
def test_against_a_baseline_stops_monotonically_and_decides_beyond_the_baselines_bound(
    candidate: list[bool], base: tuple[int, int], cut: int, side: str
) -> None:
    """Against a stored baseline: a stopped prefix stays stopped (decided stays decided, same direction), and
    a decision means the candidate's confidence sequence has cleared the baseline's exact bound: its lower end
    above the upper bound (minus the margin for not-worse) when improved or not-worse, its upper end below the
    lower bound when regressed."""
    design = _design(side, max_k=60)
    short = against_baseline(design, *base, candidate[:cut])
    full = against_baseline(design, *base, candidate)
    if short.stopped:
        assert full.stopped
        if short.reason == "decided":
            assert (full.reason, full.direction) == ("decided", short.direction)
    nulls = baseline_nulls(design, *base)
    if full.reason == "decided" and full.interval is not None:
        if full.direction == "regressed":
            assert full.interval[1] <= nulls[1] + 1e-9
        elif nulls[0] > 0.0:
            assert full.interval[0] >= nulls[0] - 1e-9


@settings(max_examples=40, deadline=None)
@given(runs, baselines)
def test_against_a_baseline_is_symmetric_under_swapping_passes_and_fails(
    candidate: list[bool], base: tuple[int, int]
) -> None:
    """Two-sided, swapping passes and fails on both sides mirrors the test: improved <-> regressed, the same
    stop and e-value, the candidate's interval reflected about 1/2."""
    design = _design("two-sided", max_k=60)
    a = against_baseline(design, *base, candidate)
    b = against_baseline(design, base[1] - base[0], base[1], [not x for x in candidate])
    swap = {"improved": "regressed", "regressed": "improved", None: None}
    assert (a.stopped, a.reason, a.runs, swap[a.direction]) == (b.stopped, b.reason, b.runs, b.direction)
    assert math.isclose(a.statistic, b.statistic, rel_tol=1e-7)
    if a.interval is not None and b.interval is not None:
        assert math.isclose(a.interval[0], 1 - b.interval[1], abs_tol=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.booleans(), min_size=0, max_size=120), st.sampled_from([0.2, 0.3, 0.5]), st.integers(0, 120)
)
def test_until_width_stops_monotonically_and_its_sequence_holds_each_looks_mean(
    outcomes: list[bool], width: float, cut: int
) -> None:
    """One arm: every look's confidence set holds that look's observed rate (the wealth at the sample mean is at
    most 1) and lies in [0, 1]; the reported interval is their running intersection, narrower than W when the
    task stopped for width; a stopped prefix stays stopped; swapping passes and fails mirrors the interval."""
    table_low, table_high = rate_bounds(0.05, 1, 120)
    for t in range(1, len(outcomes) + 1):
        s = sum(outcomes[:t])
        assert 0.0 <= table_low[t, s] <= s / t <= table_high[t, s] <= 1.0
    got = until_width(0.05, 1, width, 120, 5, outcomes)
    if got.reason == "width":
        assert got.statistic < width and got.interval is not None
    if until_width(0.05, 1, width, 120, 5, outcomes[:cut]).stopped:
        assert got.stopped
    mirror = until_width(0.05, 1, width, 120, 5, [not x for x in outcomes])
    assert (mirror.stopped, mirror.reason, mirror.runs) == (got.stopped, got.reason, got.runs)
    if got.interval is not None and mirror.interval is not None:
        assert math.isclose(got.interval[0], 1 - mirror.interval[1], abs_tol=1e-9)
