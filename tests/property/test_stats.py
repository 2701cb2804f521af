"""Properties of alisio.core.stats.rates: Wilson intervals, pass@k / pass^k, medians, variances, task-clustered means.

Reference values were checked against statsmodels, scipy and 50-digit mpmath; the oracles here are 50-digit
``decimal`` for Wilson and exact ``fractions`` for pass@k.
"""

from __future__ import annotations

import json
import math
import statistics
from decimal import Decimal, localcontext
from fractions import Fraction
from math import comb
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from alisio.core.stats.rates import (
    Z95,
    ClusteredMean,
    Interval,
    IntervalMethod,
    median,
    pass_at_k,
    pass_at_k_estimate,
    pass_hat_k,
    pass_hat_k_estimate,
    sample_variance,
    suite_rate,
    t_quantile,
    task_clustered_mean,
    wilson_bounds,
    wilson_interval,
)
from tests.property.strategies_stats import (
    counts,
    interior_counts,
    outcomes,
    pass_counts,
    wall_times,
)


def wilson(x: int, n: int) -> Interval:
    """The interval, asserting it exists (n >= 1)."""
    interval = wilson_interval(x, n)
    assert interval is not None
    return interval


def wilson_oracle(x: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The textbook Wilson bounds in 50-digit decimal arithmetic, with the same z (no clamping, no ends)."""
    with localcontext() as ctx:
        ctx.prec = 50
        zd = Decimal(z)
        z2 = zd * zd
        dx, dn = Decimal(x), Decimal(n)
        center = (dx + z2 / 2) / (dn + z2)
        half = zd * (dx * (dn - dx) / dn + z2 / 4).sqrt() / (dn + z2)
        return float(center - half), float(center + half)


# --- Wilson: the numbers users read ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "n", "low_pct", "high_pct"),
    [(3, 5, 23.1, 88.2), (4, 5, 37.6, 96.4), (1, 5, 3.6, 62.4), (5, 5, 56.6, 100.0)],
)
def test_documented_percentages(x: int, n: int, low_pct: float, high_pct: float) -> None:
    """The spec's intervals (3/5 about 23%-88%, 4/5 [37.6%, 96.4%], ...) rounded to 0.1% are reproduced."""
    interval = wilson(x, n)
    assert round(interval.low * 100, 1) == low_pct
    assert round(interval.high * 100, 1) == high_pct


@pytest.mark.parametrize(
    ("x", "n", "low", "high"),
    [
        (3, 5, 0.2307242813, 0.8823792258),
        (4, 5, 0.3755346298, 0.9637758914),
        (1, 5, 0.03622410863, 0.6244653702),
        (5, 5, 0.5655175352, 1.0),
        (0, 5, 0.0, 0.4344824648),
        (0, 1, 0.0, 0.7934506856),
        (1, 1, 0.2065493144, 1.0),
        (3, 1000, 0.001020783881, 0.008783014054),
        (0, 100, 0.0, 0.03699349821),
        (9, 10, 0.5958499732, 0.9821237869),
        (50, 100, 0.4038315304, 0.5961684696),
    ],
)
def test_reference_values_to_1e9(x: int, n: int, low: float, high: float) -> None:
    """The 50-digit reference bounds of the statistics notes (§0, §1.3, §1.4) hold to rel 1e-9."""
    interval = wilson(x, n)
    assert math.isclose(interval.low, low, rel_tol=1e-9, abs_tol=0.0)
    assert math.isclose(interval.high, high, rel_tol=1e-9, abs_tol=0.0)


@pytest.mark.parametrize(("x", "n"), [(10, 10), (16, 16), (7, 7), (9, 9), (12, 12), (0, 21), (0, 3), (0, 7)])
def test_ends_exact_where_the_textbook_formula_misses(x: int, n: int) -> None:
    """10/10 and 16/16 reach 1.0 exactly, 0/21 and 0/3 start at 0.0 exactly (float formula: ±1 ulp off)."""
    interval = wilson(x, n)
    if x == 0:
        assert interval.low == 0.0
    if x == n:
        assert interval.high == 1.0


def test_uses_the_exact_quantile_not_1_96() -> None:
    """4/5 matches z = 1.959963984540054, and differs by more than 1e-6 from what z = 1.96 would give."""
    low_196, high_196 = wilson_oracle(4, 5, z=1.96)
    interval = wilson(4, 5)
    assert abs(interval.low - low_196) > 1e-6
    assert abs(interval.high - high_196) > 1e-7
    assert Z95 == 1.959963984540054


def test_no_runs_no_interval() -> None:
    """0 judged runs (every run errored) gives no interval: None, never NaN, never an exception."""
    assert wilson_interval(0, 0) is None


@given(counts())
def test_matches_the_50_digit_oracle(xn: tuple[int, int]) -> None:
    """Away from the exact ends, both bounds equal the 50-digit textbook values to rel 1e-12."""
    x, n = xn
    interval = wilson(x, n)
    low, high = wilson_oracle(x, n)
    if x > 0:
        assert math.isclose(interval.low, low, rel_tol=1e-12)
    if x < n:
        assert math.isclose(interval.high, high, rel_tol=1e-12)


# --- Wilson: properties (statistics notes §6, Wilson 1-12) -----------------------------------------------


@given(counts())
@example((0, 21))
@example((10, 10))
def test_bounds_bracket_the_observed_rate(xn: tuple[int, int]) -> None:
    """0 <= low <= p̂ <= high <= 1, strictly inside when 0 < x < n."""
    x, n = xn
    interval = wilson(x, n)
    rate = x / n
    assert 0.0 <= interval.low <= rate <= interval.high <= 1.0
    if 0 < x < n:
        assert interval.low < rate < interval.high


@given(counts())
def test_exact_ends_iff_extreme(xn: tuple[int, int]) -> None:
    """low == 0.0 iff x == 0, and high == 1.0 iff x == n."""
    x, n = xn
    interval = wilson(x, n)
    assert (interval.low == 0.0) == (x == 0)
    assert (interval.high == 1.0) == (x == n)


@given(counts(min_n=1))
def test_monotone_in_passes(xn: tuple[int, int]) -> None:
    """For fixed n, one more pass strictly raises both bounds (up to the exact 1.0 end)."""
    x, n = xn
    if x == n:
        x -= 1
    if x < 0:
        return
    before, after = wilson(x, n), wilson(x + 1, n)
    assert after.low > before.low
    assert after.high > before.high


@given(counts(max_n=1999))
def test_monotone_in_runs(xn: tuple[int, int]) -> None:
    """For fixed passes, one more run never raises the lower bound and strictly lowers the upper bound."""
    x, n = xn
    before, after = wilson(x, n), wilson(x, n + 1)
    assert after.low <= before.low
    assert after.high < before.high


@given(counts())
def test_symmetric_under_pass_fail_swap(xn: tuple[int, int]) -> None:
    """low(x, n) ≈ 1 − high(n − x, n) to 1e-12 (not bit-exact in floats)."""
    x, n = xn
    assert math.isclose(wilson(x, n).low, 1.0 - wilson(n - x, n).high, abs_tol=1e-12)


@given(counts(max_n=200), st.integers(2, 10))
def test_width_shrinks_at_the_same_rate(xn: tuple[int, int], k: int) -> None:
    """k times the passes over k times the runs (same p̂) gives a strictly narrower interval."""
    x, n = xn
    narrow, wide = wilson(k * x, k * n), wilson(x, n)
    assert narrow.high - narrow.low < wide.high - wide.low


def test_width_does_not_always_shrink_with_one_more_run() -> None:
    """1/1 is narrower than 1/2: why the width property is stated at the same p̂ only."""
    one_of_one, one_of_two = wilson(1, 1), wilson(1, 2)
    assert one_of_one.high - one_of_one.low < one_of_two.high - one_of_two.low


def test_widest_at_half_and_max_width_falls_with_n() -> None:
    """For each n <= 400 the widest x is ⌊n/2⌋ or ⌈n/2⌉; that width falls with n from n = 2 on (not 1 → 2)."""
    max_widths = [math.nan]
    for n in range(1, 401):
        low, high = wilson_bounds(np.arange(n + 1), n)
        width = high - low
        widest = set(np.flatnonzero(width == width.max()).tolist())
        assert widest <= {n // 2, (n + 1) // 2}
        max_widths.append(float(width.max()))
    assert max_widths[2] > max_widths[1]
    assert all(max_widths[n + 1] < max_widths[n] for n in range(2, 400))


@given(counts())
def test_midpoint_pulled_toward_one_half(xn: tuple[int, int]) -> None:
    """The interval's midpoint lies between p̂ and 1/2 (Wilson shrinks the centre toward 1/2)."""
    x, n = xn
    interval = wilson(x, n)
    mid = (interval.low + interval.high) / 2
    rate = x / n
    eps = 1e-15
    assert min(rate, 0.5) - eps <= mid <= max(rate, 0.5) + eps


@given(interior_counts())
def test_bounds_solve_the_score_equation(xn: tuple[int, int]) -> None:
    """Each bound b satisfies n(p̂ − b)² = z²·b(1 − b), the score test at the edge of rejection."""
    x, n = xn
    rate = x / n
    for b in (wilson(x, n).low, wilson(x, n).high):
        assert math.isclose(n * (rate - b) ** 2, Z95 * Z95 * b * (1 - b), rel_tol=1e-8)


@given(st.integers(1, 5000))
def test_closed_forms_at_the_ends(n: int) -> None:
    """high(0, n) = z²/(n + z²) and low(n, n) = n/(n + z²)."""
    z2 = Z95 * Z95
    assert math.isclose(wilson(0, n).high, z2 / (n + z2), rel_tol=1e-12)
    assert math.isclose(wilson(n, n).low, n / (n + z2), rel_tol=1e-12)


def test_other_confidence_levels_use_the_normal_quantile() -> None:
    """confidence=0.9 uses NormalDist().inv_cdf(0.95) and gives a narrower interval than 0.95."""
    z90 = statistics.NormalDist().inv_cdf(0.95)
    at_90 = wilson_interval(0, 10, confidence=0.9)
    assert at_90 is not None
    assert math.isclose(at_90.high, z90 * z90 / (10 + z90 * z90), rel_tol=1e-12)
    at_90_mid, at_95_mid = wilson_interval(3, 5, confidence=0.9), wilson(3, 5)
    assert at_90_mid is not None
    assert at_95_mid.low < at_90_mid.low < at_90_mid.high < at_95_mid.high


@pytest.mark.parametrize(
    ("x", "n"),
    [(-1, 5), (6, 5), (0, -1), (True, 5), (1, True), (1.0, 5), (1, 5.0), (np.float64(1), 5), ("1", 5)],
)
def test_invalid_counts_raise(x: object, n: object) -> None:
    """Negative counts, passes > n, bool, float, numpy-float or string counts raise ValueError."""
    with pytest.raises(ValueError):
        wilson_interval(x, n)  # type: ignore[arg-type]


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.5, 1.5, math.nan])
def test_invalid_confidence_raises(confidence: float) -> None:
    """A confidence outside (0, 1) raises ValueError."""
    with pytest.raises(ValueError):
        wilson_interval(1, 5, confidence=confidence)


def test_numpy_integers_accepted_and_plain_floats_returned() -> None:
    """numpy integer counts work, and the bounds are plain Python floats."""
    interval = wilson_interval(np.int64(3), np.uint8(5))  # type: ignore[arg-type]
    assert interval == wilson(3, 5)
    assert interval is not None
    assert type(interval.low) is float
    assert type(interval.high) is float


def test_interval_rejects_reversed_or_nan_bounds() -> None:
    """An Interval with low > high or a NaN bound cannot be built."""
    with pytest.raises(ValueError):
        Interval(low=0.6, high=0.4)
    with pytest.raises(ValueError):
        Interval(low=math.nan, high=0.4)


# --- Wilson, vectorised ---------------------------------------------------------------------------------


@given(st.lists(counts(), min_size=1, max_size=50))
def test_vectorised_equals_scalar_bit_for_bit(pairs: list[tuple[int, int]]) -> None:
    """wilson_bounds over arrays gives exactly the scalar bounds, element by element."""
    xs = np.array([x for x, _ in pairs])
    ns = np.array([n for _, n in pairs])
    low, high = wilson_bounds(xs, ns)
    assert low.dtype == np.float64
    assert high.dtype == np.float64
    for i, (x, n) in enumerate(pairs):
        assert (float(low[i]), float(high[i])) == (wilson(x, n).low, wilson(x, n).high)


def test_vectorised_broadcasts_and_keeps_exact_ends() -> None:
    """A scalar n broadcasts over an array of passes; the ends are exactly 0.0 and 1.0."""
    low, high = wilson_bounds([0, 5, 10], 10)
    assert low[0] == 0.0
    assert high[2] == 1.0
    assert math.isclose(float(low[1]), wilson(5, 10).low, rel_tol=0)


@pytest.mark.parametrize(
    ("xs", "ns"),
    [
        ([1, 2], [5, 0]),
        ([1, 6], [5, 5]),
        ([-1, 2], [5, 5]),
        ([1.0, 2.0], [5, 5]),
        ([True, False], [5, 5]),
        ([1, 2, 3], [5, 5]),
    ],
)
def test_vectorised_rejects_invalid_counts(xs: list[object], ns: list[object]) -> None:
    """Any n == 0, passes > n, negative, float, bool or mismatched shape raises ValueError."""
    with pytest.raises(ValueError):
        wilson_bounds(xs, ns)


# --- pass@k and pass^k ----------------------------------------------------------------------------------


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(comb(n - c, k), comb(n, k))


def exact_pass_hat_k(n: int, c: int, k: int) -> Fraction:
    return Fraction(comb(c, k), comb(n, k))


def human_eval_product(n: int, c: int, k: int) -> float:
    """openai/human-eval's float product form: 1 − ∏_{j=n−c+1}^{n} (1 − k/j), 1.0 when n − c < k."""
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / j for j in range(n - c + 1, n + 1))


def estimates(n: int, c: int, k: int) -> tuple[float, float]:
    at, hat = pass_at_k_estimate(n, c, k), pass_hat_k_estimate(n, c, k)
    assert at is not None
    assert hat is not None
    return at, hat


# §3.3 exact fractions: (n, c) -> {k: (pass@k, pass^k)}
REFERENCE = {
    (5, 1): {1: ("1/5", "1/5"), 2: ("2/5", "0"), 3: ("3/5", "0"), 5: ("1", "0")},
    (5, 2): {1: ("2/5", "2/5"), 2: ("7/10", "1/10"), 3: ("9/10", "0"), 5: ("1", "0")},
    (5, 3): {1: ("3/5", "3/5"), 2: ("9/10", "3/10"), 3: ("1", "1/10"), 5: ("1", "0")},
    (5, 4): {1: ("4/5", "4/5"), 2: ("1", "3/5"), 3: ("1", "2/5"), 5: ("1", "0")},
    (10, 2): {1: ("1/5", "1/5"), 2: ("17/45", "1/45"), 3: ("8/15", "0"), 5: ("7/9", "0")},
    (10, 3): {1: ("3/10", "3/10"), 2: ("8/15", "1/15"), 3: ("17/24", "1/120"), 5: ("11/12", "0")},
    (10, 4): {1: ("2/5", "2/5"), 2: ("2/3", "2/15"), 3: ("5/6", "1/30"), 5: ("41/42", "0")},
    (10, 5): {1: ("1/2", "1/2"), 2: ("7/9", "2/9"), 3: ("11/12", "1/12"), 5: ("251/252", "1/252")},
    (10, 6): {1: ("3/5", "3/5"), 2: ("13/15", "1/3"), 3: ("29/30", "1/6"), 5: ("1", "1/42")},
    (10, 7): {1: ("7/10", "7/10"), 2: ("14/15", "7/15"), 3: ("119/120", "7/24"), 5: ("1", "1/12")},
    (10, 8): {1: ("4/5", "4/5"), 2: ("44/45", "28/45"), 3: ("1", "7/15"), 5: ("1", "2/9")},
    (10, 9): {1: ("9/10", "9/10"), 2: ("1", "4/5"), 3: ("1", "7/10"), 5: ("1", "1/2")},
}


@pytest.mark.parametrize(("n", "c"), list(REFERENCE))
def test_reference_fractions(n: int, c: int) -> None:
    """The exact §3.3 values (e.g. 10 runs, 5 passes: pass@5 = 251/252, pass^5 = 1/252) are reproduced."""
    for k, (at, hat) in REFERENCE[(n, c)].items():
        assert estimates(n, c, k) == (float(Fraction(at)), float(Fraction(hat)))


def test_large_n_agrees_with_the_float_product() -> None:
    """n = 200, c = 3, k = 100 gives 0.876884422110553 by both routes."""
    at, _ = estimates(200, 3, 100)
    assert math.isclose(at, 0.876884422110553, rel_tol=1e-12)
    assert math.isclose(at, human_eval_product(200, 3, 100), rel_tol=1e-12)


@given(pass_counts())
def test_estimates_equal_the_exact_comb_forms(nck: tuple[int, int, int]) -> None:
    """Both estimates are the exact C(…)/C(…) values rounded once, and match human-eval's floats to 1e-12."""
    n, c, k = nck
    at, hat = estimates(n, c, k)
    assert at == float(exact_pass_at_k(n, c, k))
    assert hat == float(exact_pass_hat_k(n, c, k))
    assert math.isclose(at, human_eval_product(n, c, k), rel_tol=1e-12, abs_tol=1e-12)


@given(pass_counts())
def test_ordered_in_unit_interval(nck: tuple[int, int, int]) -> None:
    """0 <= pass^k <= pass@k <= 1."""
    at, hat = estimates(*nck)
    assert 0.0 <= hat <= at <= 1.0


@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_k_one_is_the_success_rate(nc: tuple[int, int]) -> None:
    """k = 1 gives exactly c/n for both estimates."""
    n, c = nc
    assert estimates(n, c, 1) == (c / n, c / n)


@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_k_equal_n_is_any_and_all(nc: tuple[int, int]) -> None:
    """k = n gives pass@n = [c > 0] and pass^n = [c == n]."""
    n, c = nc
    assert estimates(n, c, n) == (float(c > 0), float(c == n))


@given(pass_counts())
def test_duality(nck: tuple[int, int, int]) -> None:
    """pass^k(n, c) + pass@k(n, n − c) = 1."""
    n, c, k = nck
    _, hat = estimates(n, c, k)
    at_complement, _ = estimates(n, n - c, k)
    assert math.isclose(hat + at_complement, 1.0, rel_tol=0, abs_tol=1e-15)


@given(pass_counts())
def test_monotone_in_passes_and_k(nck: tuple[int, int, int]) -> None:
    """Both grow with c; as k grows pass@k never falls and pass^k never rises."""
    n, c, k = nck
    at, hat = estimates(n, c, k)
    if c < n:
        at_more, hat_more = estimates(n, c + 1, k)
        assert at_more >= at
        assert hat_more >= hat
    if k < n:
        at_k1, hat_k1 = estimates(n, c, k + 1)
        assert at_k1 >= at
        assert hat_k1 <= hat


@given(st.integers(0, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(n + 1, 40))))
def test_fewer_runs_than_k_is_not_estimable(nck: tuple[int, int, int]) -> None:
    """n < k gives None (n/a), not 0, not 1, not an exception."""
    n, c, k = nck
    assert pass_at_k_estimate(n, c, k) is None
    assert pass_hat_k_estimate(n, c, k) is None


@pytest.mark.parametrize(("n", "c", "k"), [(5, 6, 2), (5, 1, 0), (-1, 0, 1), (5, True, 1), (5.0, 1, 1)])
def test_estimates_reject_invalid_counts(n: object, c: object, k: object) -> None:
    """c > n, k < 1, negative, bool and float counts raise ValueError."""
    with pytest.raises(ValueError):
        pass_at_k_estimate(n, c, k)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        pass_hat_k_estimate(n, c, k)  # type: ignore[arg-type]


@given(outcomes())
def test_observed_pass_at_and_hat_k(runs: list[bool]) -> None:
    """Observed pass@k is "any run passed", pass^k "all passed"; None with no runs; with k = n runs they
    equal the unbiased estimates."""
    if not runs:
        assert pass_at_k(runs) is None
        assert pass_hat_k(runs) is None
        return
    assert pass_at_k(runs) is any(runs)
    assert pass_hat_k(runs) is all(runs)
    n, c = len(runs), sum(runs)
    assert estimates(n, c, n) == (float(any(runs)), float(all(runs)))


def test_flaky_task_is_not_solved() -> None:
    """3 of 5 runs passing: pass@5 yes, pass^5 no (the spec's "flaky, not solved")."""
    runs = [True, False, True, True, False]
    assert pass_at_k(runs) is True
    assert pass_hat_k(runs) is False


# --- median and sample variance -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "variance", "mid"),
    [
        ([1.0, 2.0, 3.0, 4.0], 1.6666666666666667, 2.5),
        ([2.5, 3.5, 10.0], 16.583333333333332, 3.5),
        ([1000000004.0, 1000000007.0, 1000000013.0, 1000000016.0], 30.0, 1000000010.0),
        ([5.0], None, 5.0),
        ([3, 1, 2, 4], 1.6666666666666667, 2.5),
        ([0.1, 0.1, 0.1], 0.0, 0.1),
    ],
)
def test_reference_vectors(data: list[float], variance: float | None, mid: float) -> None:
    """The §5 vectors: n − 1 denominator, no cancellation near 1e9, exactly 0.0 for constant data."""
    assert sample_variance(data) == variance
    assert median(data) == mid


def test_empty_and_single() -> None:
    """No values: no median, no variance; one value: a median but no variance."""
    assert median([]) is None
    assert sample_variance([]) is None
    assert sample_variance([7.0]) is None


@pytest.mark.parametrize("bad", [[1.0, math.nan], [math.inf, 1.0], [1.0, "2"], [True, 1.0]])
def test_nan_and_non_numbers_raise(bad: list[object]) -> None:
    """NaN, infinities and non-numbers raise ValueError (filter missing wall times first)."""
    with pytest.raises(ValueError):
        median(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        sample_variance(bad)  # type: ignore[arg-type]


@given(wall_times())
def test_median_and_variance_match_statistics(values: list[float]) -> None:
    """median equals statistics.median; the variance matches statistics.variance to rel 1e-12 and is >= 0."""
    if not values:
        return
    assert median(values) == statistics.median(values)
    variance = sample_variance(values)
    if len(values) < 2:
        assert variance is None
        return
    assert variance is not None
    assert variance >= 0.0
    assert math.isclose(variance, statistics.variance(values), rel_tol=1e-12, abs_tol=1e-300)


@given(st.floats(0.0, 1e9, allow_nan=False), st.integers(2, 30))
def test_constant_data_has_zero_variance(value: float, n: int) -> None:
    """n equal wall times have variance exactly 0.0, whatever their size."""
    assert sample_variance([value] * n) == 0.0


# --- task-clustered suite mean --------------------------------------------------------------------------


def test_worked_example_clusters_by_task() -> None:
    """Baseline 3/5, 5/5, 0/5, 2/5: mean 0.5, clustered SE 0.2082, not the pooled binomial 0.1118."""
    summary = task_clustered_mean([3 / 5, 5 / 5, 0 / 5, 2 / 5])
    assert summary is not None
    assert summary.tasks == 4
    assert math.isclose(summary.mean, 0.5, rel_tol=1e-15)
    assert summary.stderr is not None
    assert math.isclose(summary.stderr, 0.2081665999, rel_tol=1e-9)
    pooled = math.sqrt(0.5 * 0.5 / 20)
    assert math.isclose(pooled, 0.1118033989, rel_tol=1e-9)
    assert summary.stderr > 1.8 * pooled


@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), max_size=30))
def test_clustered_mean_properties(rates: list[float]) -> None:
    """Mean within [min, max]; stderr = sqrt(sample variance / T), None with one task; None with none."""
    summary = task_clustered_mean(rates)
    if not rates:
        assert summary is None
        return
    assert isinstance(summary, ClusteredMean)
    assert summary.tasks == len(rates)
    assert min(rates) <= summary.mean <= max(rates)
    assert math.isclose(summary.mean, statistics.fmean(rates), rel_tol=1e-12, abs_tol=1e-300)
    if len(rates) == 1:
        assert summary.stderr is None
    else:
        assert summary.stderr is not None
        expected = math.sqrt(statistics.variance(rates) / len(rates))
        assert math.isclose(summary.stderr, expected, rel_tol=1e-12, abs_tol=1e-300)


@pytest.mark.parametrize("bad", [[0.5, 1.5], [-0.1], [math.nan]])
def test_clustered_mean_rejects_non_rates(bad: list[float]) -> None:
    """A rate outside [0, 1] or NaN raises ValueError."""
    with pytest.raises(ValueError):
        task_clustered_mean(bad)


# --- Student's t and the suite interval -----------------------------------------------------------------

LIBRARY_VALUES = json.loads((Path(__file__).parent / "data" / "stats_reference.json").read_text())


@pytest.mark.parametrize("case", LIBRARY_VALUES["t_quantiles"], ids=lambda c: f"{c['prob']}-{c['df']}")
def test_t_quantile_matches_scipy(case: dict[str, float]) -> None:
    """t_quantile equals scipy.stats.t.ppf to 1e-10 relative (df 1-40, 60, 100, 250, 1000)."""
    assert math.isclose(t_quantile(case["prob"], int(case["df"])), case["value"], rel_tol=1e-10)


@given(st.integers(1, 300), st.floats(0.55, 0.999))
def test_t_quantile_is_above_the_normal_and_symmetric(df: int, prob: float) -> None:
    """t quantiles exceed the normal's (heavier tails), shrink as df grows, and t(1 − p) = −t(p)."""
    z = statistics.NormalDist().inv_cdf(prob)
    assert t_quantile(prob, df) >= z - 1e-12
    assert t_quantile(prob, df + 1) <= t_quantile(prob, df) + 1e-12
    assert math.isclose(t_quantile(1 - prob, df), -t_quantile(prob, df), rel_tol=1e-9)


def test_t_quantile_closed_forms() -> None:
    """df = 1 is Cauchy (tan), df = 2 is c·sqrt(2/(1 − c²)) with c = 2p − 1."""
    assert math.isclose(t_quantile(0.975, 1), math.tan(math.pi * 0.475), rel_tol=1e-12)
    assert math.isclose(t_quantile(0.975, 2), 0.95 * math.sqrt(2 / (1 - 0.95**2)), rel_tol=1e-12)


@pytest.mark.parametrize("case", LIBRARY_VALUES["t_intervals"][:4], ids=lambda c: str(len(c["values"])))
def test_suite_rate_t_interval_matches_scipy(case: dict[str, list[float]]) -> None:
    """The suite interval is scipy's t.interval(0.95, T − 1, mean, sem), clamped to [0, 1]."""
    fractions = [Fraction(v).limit_denominator(20) for v in case["values"]]
    summary = suite_rate([f.numerator for f in fractions], [f.denominator for f in fractions])
    assert summary is not None and summary.interval is not None
    assert summary.interval_method is IntervalMethod.T
    low, high = case["interval"]
    assert math.isclose(summary.interval.low, max(0.0, low), abs_tol=1e-12)
    assert math.isclose(summary.interval.high, min(1.0, high), abs_tol=1e-12)


@given(st.lists(counts(max_n=30), min_size=1, max_size=12))
def test_suite_interval_is_never_a_point(tasks: list[tuple[int, int]]) -> None:
    """The suite interval contains the mean and has width > 0; pooled Wilson exactly when all rates are equal."""
    summary = suite_rate([p for p, _ in tasks], [n for _, n in tasks])
    assert summary is not None and summary.interval is not None
    assert 0.0 <= summary.interval.low <= summary.mean <= summary.interval.high <= 1.0
    assert summary.interval.high > summary.interval.low
    same = len({Fraction(p, n) for p, n in tasks}) == 1
    assert (summary.interval_method is IntervalMethod.POOLED_WILSON) is same


def test_all_tasks_at_five_of_five_use_the_pooled_wilson_interval() -> None:
    """All 5/5 over 3 tasks: the standard error is exactly 0, the interval is Wilson's 15/15, not [1, 1]."""
    summary = suite_rate([5, 5, 5], [5, 5, 5])
    assert summary is not None and summary.stderr == 0.0
    assert summary.interval == wilson_interval(15, 15)
    assert summary.interval_method is IntervalMethod.POOLED_WILSON


def test_old_reports_without_the_interval_still_decode() -> None:
    """A ClusteredMean written before the interval existed decodes, with no interval."""
    import msgspec

    old = msgspec.json.decode(b'{"mean": 0.5, "stderr": 0.1, "tasks": 4}', type=ClusteredMean)
    assert old.interval is None and old.interval_method is None
