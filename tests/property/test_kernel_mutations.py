"""Properties that kill the hand mutations of the statistics kernel that the earlier tests let through: the
level 0.05 (not 0.1), the strict ``p < alpha``, Monte Carlo p-values never 0, the minimum detectable change
(its formula, minimality and symmetry, and its root at any power to 1e-9, which a coarse search or an ignored
power argument misses), the power with unequal runs per side, and Boschloo's supremum against an independent
fine search on unbalanced tables (which a 16-point grid misses). Each test states its property; the references
are written here independently. Tried by hand (change the code, see a test fail, revert): a 32- or 64-point
grid, or refining one or two of its local maxima instead of four, gave the same p-values as the kernel on 1,500
random tables up to 100 against 150 runs, and a coarser scan before the MDE's bisection (3 steps instead of
400) finds the same root (the power rises with |δ| in each direction): those changes are equivalent in
practice, and no test claims them."""

from __future__ import annotations

import math
from fractions import Fraction
from math import comb
from statistics import NormalDist

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from alisio.core.stats.exact import boschloo_p
from alisio.core.stats.paired import sign_flip_p, stratified_permutation_p
from alisio.core.stats.power import min_detectable_difference, power_two_proportions
from alisio.core.stats.verdict import ALPHA, Verdict, exact_verdict

_N = NormalDist()


@given(st.floats(0.0, 1.0), st.sampled_from([-0.4, 0.3]))
def test_the_exact_rule_decides_exactly_below_five_percent(p: float, difference: float) -> None:
    """A direction iff the adjusted p is strictly below 0.05 (the literal level: 0.07 or 0.05 itself is
    inconclusive), with the sign of the difference."""
    verdict = exact_verdict(difference, p).verdict
    decided = Verdict.IMPROVED if difference > 0 else Verdict.REGRESSED
    assert ALPHA == 0.05
    assert (verdict is decided) is (p < 0.05)
    assert exact_verdict(difference, 0.05).verdict is Verdict.INCONCLUSIVE
    assert exact_verdict(difference, 0.07).verdict is Verdict.INCONCLUSIVE
    assert exact_verdict(difference, 0.0499999).verdict is decided


@settings(max_examples=20, deadline=None)
@given(st.integers(21, 30), st.integers(50, 400))
def test_a_drawn_sign_flip_p_is_one_plus_hits_over_one_plus_draws(tasks: int, draws: int) -> None:
    """All differences +1 over more than 20 tasks: only the observed pattern and its mirror are as extreme, so
    with few draws there are no hits and the p-value is exactly 1/(1 + draws), never 0."""
    p, _, counted = sign_flip_p([Fraction(1)] * tasks, draws=draws)
    assert counted == draws and p == 1 / (1 + draws)


def test_a_drawn_stratified_p_is_never_zero() -> None:
    """The drawn stratified permutation p of the most extreme tables is (1 + 0)/(1 + draws), not 0."""
    p, _, _ = stratified_permutation_p([(0, 40, 40, 40)] * 4, draws=500, exact_support=0)
    assert p == 1 / 501


def _power(p1: float, p2: float, n1: int, n2: int) -> float:
    """The pooled two-proportion z test's power, written out again for the tests."""
    pooled = (n1 * p1 + n2 * p2) / (n1 + n2)
    null_se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    alt_se = math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)
    return _N.cdf((abs(p2 - p1) - _N.inv_cdf(0.975) * null_se) / alt_se)


@given(st.floats(0.05, 0.95), st.floats(0.05, 0.95), st.integers(1, 300), st.integers(1, 300))
def test_power_with_unequal_runs_is_the_formula(p1: float, p2: float, n1: int, n2: int) -> None:
    """With n1 != n2 the power is Φ((|Δ| − z·sqrt(p̄q̄(1/n1 + 1/n2)))/sqrt(p1q1/n1 + p2q2/n2)) with p̄ the
    run-weighted rate (not the plain mean), and swapping both rates and both sizes keeps it."""
    expected = _power(p1, p2, n1, n2)
    assert math.isclose(power_two_proportions(p1, p2, n1, n2), expected, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(power_two_proportions(p2, p1, n2, n1), expected, rel_tol=1e-9, abs_tol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.05, 0.95), st.integers(5, 150), st.integers(5, 150))
def test_the_minimum_detectable_change_is_the_smallest_with_the_power(p1: float, n1: int, n2: int) -> None:
    """The MDE is the smallest |δ|, up or down, with 80% power: at it the better direction reaches 0.8 (by
    the independent formula), 1% below it neither direction does, and it is the same for rate p and 1 − p
    (the test is symmetric under relabelling passes and fails)."""
    mde = min_detectable_difference(p1, n1, n2)
    assume(mde is not None)
    assert mde is not None

    def best(size: float) -> float:
        return max(
            (_power(p1, p1 + s * size, n1, n2) for s in (1, -1) if 0.0 <= p1 + s * size <= 1.0), default=0.0
        )

    assert best(mde) >= 0.8 - 1e-6
    assert best(mde * 0.99) < 0.8
    mirror = min_detectable_difference(1.0 - p1, n1, n2)
    assert mirror is not None and math.isclose(mirror, mde, rel_tol=1e-6)


def _reference_mde(p1: float, n1: int, n2: int, power: float) -> float | None:
    """Independently: per direction, the smallest |δ| with ``_power`` >= ``power``, by bisection to 1e-12 on
    (0, room] (``_power`` rises with |δ| in each direction), then the smaller of the two."""
    sizes = []
    for sign, room in ((1, 1.0 - p1), (-1, p1)):
        if room <= 0.0 or _power(p1, p1 + sign * room, n1, n2) < power:
            continue
        low, high = 0.0, room
        while high - low > 1e-12:
            mid = (low + high) / 2
            low, high = (low, mid) if _power(p1, p1 + sign * mid, n1, n2) >= power else (mid, high)
        sizes.append(high)
    return min(sizes) if sizes else None


@settings(max_examples=40, deadline=None)
@given(st.floats(0.05, 0.95), st.integers(5, 150), st.integers(5, 150), st.sampled_from([0.5, 0.8, 0.9]))
def test_the_minimum_detectable_change_is_the_bisected_root_at_any_power(
    p1: float, n1: int, n2: int, power: float
) -> None:
    """At any power asked (not only the default 0.8), the MDE is the independent bisection's root to 1e-9:
    a coarser search, or the power argument ignored, moves it by more than that."""
    expected = _reference_mde(p1, n1, n2, power)
    got = min_detectable_difference(p1, n1, n2, power=power)
    assert (got is None) == (expected is None)
    if got is not None and expected is not None:
        assert math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12)


def test_the_minimum_detectable_change_at_known_sizes() -> None:
    """0.5 at 39 runs per side: just under 0.3 (0.5 -> 0.8 needs 38.5 runs); 0.5 at 388: just under 0.1."""
    at_39 = min_detectable_difference(0.5, 39, 39)
    at_388 = min_detectable_difference(0.5, 388, 388)
    assert at_39 is not None and 0.29 < at_39 < 0.3
    assert at_388 is not None and 0.099 < at_388 < 0.1


def _tail_at(x1: int, n1: int, x2: int, n2: int, upper: bool, rate: float) -> float:
    """The one-sided tail at one common rate: the mass of the tables at least as extreme by Fisher's
    statistic, each table's probability Bin(a; n1, π)·Bin(c; n2, π)."""

    def fisher(a: int, c: int) -> Fraction:
        s = a + c
        lo, hi = max(0, s - n2), min(n1, s)
        cells = range(a, hi + 1) if upper else range(lo, a + 1)
        return Fraction(sum(comb(n1, i) * comb(n2, s - i) for i in cells), comb(n1 + n2, s))

    observed = fisher(x1, x2)
    return sum(
        comb(n1, a) * comb(n2, c) * rate ** (a + c) * (1 - rate) ** (n1 + n2 - a - c)
        for a in range(n1 + 1)
        for c in range(n2 + 1)
        if fisher(a, c) <= observed
    )


def _exact_region(x1: int, n1: int, x2: int, n2: int, upper: bool) -> list[tuple[int, int]]:
    """The tables at least as extreme as (x1, x2) by Fisher's one-sided statistic, compared exactly."""

    def fisher(a: int, c: int) -> Fraction:
        s = a + c
        lo, hi = max(0, s - n2), min(n1, s)
        cells = range(a, hi + 1) if upper else range(lo, a + 1)
        return Fraction(sum(comb(n1, i) * comb(n2, s - i) for i in cells), comb(n1 + n2, s))

    observed = fisher(x1, x2)
    return [(a, c) for a in range(n1 + 1) for c in range(n2 + 1) if fisher(a, c) <= observed]


def _reference_supremum(region: list[tuple[int, int]], n1: int, n2: int) -> float:
    """sup over π of the region's probability: 20,001 rates, then each local maximum of that grid refined by
    ternary search to 1e-13 (an independent search, far finer than the kernel's grid)."""
    import numpy as np

    total = n1 + n2
    counts = np.array([a + c for a, c in region], dtype=float)
    log_c = np.array([math.log(comb(n1, a) * comb(n2, c)) for a, c in region])

    def mass(rates: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            lp, lq = np.log(rates)[:, None], np.log1p(-rates)[:, None]
            terms = np.where(counts > 0, counts * lp, 0.0) + np.where(
                total - counts > 0, (total - counts) * lq, 0.0
            )
        return np.exp(log_c + terms).sum(axis=1)

    grid = np.linspace(0.0, 1.0, 20_001)
    values = mass(grid)
    best = float(values.max())
    inner = np.flatnonzero((values[1:-1] > values[:-2]) & (values[1:-1] >= values[2:])) + 1
    for i in inner[np.argsort(values[inner])[::-1][:8]]:  # the 8 highest local maxima (plateaus count once)
        low, high = float(grid[i - 1]), float(grid[i + 1])
        while high - low > 1e-13:
            a, b = low + (high - low) / 3, high - (high - low) / 3
            fa, fb = mass(np.array([a, b]))
            low, high = (low, b) if fa >= fb else (a, high)
        best = max(best, float(mass(np.array([(low + high) / 2]))[0]))
    return min(1.0, best)


def _reference_boschloo(x1: int, n1: int, x2: int, n2: int) -> float:
    tails = [_reference_supremum(_exact_region(x1, n1, x2, n2, upper), n1, n2) for upper in (False, True)]
    return min(1.0, 2.0 * min(tails))


@settings(max_examples=15, deadline=None)
@given(
    st.sampled_from([1, 2, 3, 4, 6, 10]).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.sampled_from([20, 40, 100]).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
)
@example((4, 6), (14, 100))  # a 16-point grid gives 0.005990 instead of 0.006019 here
@example((23, 30), (5, 100))
@example((1, 1), (34, 40))
def test_boschloo_is_the_exact_supremum_on_unbalanced_tables(
    base: tuple[int, int], cand: tuple[int, int]
) -> None:
    """Against an independent search of the supremum (exact regions, a 20,001-point grid and ternary
    refinement): equal to 1e-9 relative on unbalanced tables, where the tail over π has narrow or several
    peaks that a coarse grid misses (a 16-point grid differs on 0.3% of random tables, by up to 0.5%)."""
    p = boschloo_p(base[0], base[1], cand[0], cand[1])
    assert p is not None
    assert math.isclose(p, _reference_boschloo(base[0], base[1], cand[0], cand[1]), rel_tol=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 9).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.integers(1, 9).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.floats(0.0, 1.0),
)
def test_boschloo_is_a_supremum_at_every_rate(
    base: tuple[int, int], cand: tuple[int, int], rate: float
) -> None:
    """The p-value is twice a supremum over the common rate, so it is at least twice the smaller one-sided
    tail at *any* rate, including rates between the points of a coarse grid."""
    p = boschloo_p(base[0], base[1], cand[0], cand[1])
    assert p is not None
    tails = [_tail_at(base[0], base[1], cand[0], cand[1], upper, rate) for upper in (False, True)]
    assert p >= min(1.0, 2.0 * min(tails)) - 1e-9
