"""Properties of alisio.core.stats.paired: the suite difference paired by task, its t interval, the permutation
p-value stratified by task (checked against an exact-fraction enumeration of the label permutations), and the
sign-flip p-value (against brute force and scipy's reference values)."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alisio.core.stats.paired import (
    EXACT_FLIPS_UP_TO,
    PermutationMethod,
    paired_difference,
    sign_flip_p,
    stratified_permutation_p,
)
from alisio.core.stats.rates import IntervalMethod, t_quantile

REFERENCE = json.loads((Path(__file__).parent / "data" / "stats_reference.json").read_text())


@st.composite
def paired_tasks(draw: st.DrawFn, min_tasks: int = 1, max_tasks: int = 8) -> list[tuple[int, int, int, int]]:
    """Tasks judged on both sides: (baseline passes, judged, candidate passes, judged)."""
    out = []
    for _ in range(draw(st.integers(min_tasks, max_tasks))):
        bn, cn = draw(st.integers(1, 12)), draw(st.integers(1, 12))
        out.append((draw(st.integers(0, bn)), bn, draw(st.integers(0, cn)), cn))
    return out


def brute_sign_flip(diffs: list[Fraction]) -> Fraction:
    """Share of the 2^T sign patterns with |Σ ± d_i| >= |Σ d_i|, in exact arithmetic."""
    observed = abs(sum(diffs))
    patterns = list(itertools.product((1, -1), repeat=len(diffs)))
    hits = sum(abs(sum(s * d for s, d in zip(signs, diffs, strict=True))) >= observed for signs in patterns)
    return Fraction(hits, len(patterns))


def brute_stratified(tasks: list[tuple[int, int, int, int]]) -> Fraction:
    """P(|Σ D_i| >= |Σ d_i|) when each task's passes are split between the sides at random (the candidate's
    share hypergeometric), by enumerating every split of every task with exact fractions."""
    observed = abs(sum(Fraction(c, cn) - Fraction(b, bn) for b, bn, c, cn in tasks))
    laws = []
    for b, bn, c, cn in tasks:
        s, total = b + c, bn + cn
        laws.append(
            [
                (
                    Fraction(x, cn) - Fraction(s - x, bn),
                    Fraction(math.comb(cn, x) * math.comb(bn, s - x), math.comb(total, s)),
                )
                for x in range(max(0, s - bn), min(s, cn) + 1)
            ]
        )
    hits = Fraction(0)
    for combo in itertools.product(*laws):
        if abs(sum(d for d, _ in combo)) >= observed:
            hits += math.prod((w for _, w in combo), start=Fraction(1))
    return hits


def test_the_worked_example() -> None:
    """d = (-0.4, +0.4, 0): mean 0, half-width t(0.975, 2) · 0.4 / sqrt(3) = 0.9937, exact p = 1."""
    result = paired_difference([(10, 10, 6, 10), (2, 10, 6, 10), (5, 10, 5, 10)])
    assert result is not None
    assert result.mean == 0.0 and result.interval_method is IntervalMethod.T and result.df == 2
    assert round(result.interval.high, 4) == 0.9937 and round(result.interval.low, 4) == -0.9937
    assert math.isclose(result.interval.high, t_quantile(0.975, 2) * 0.4 / math.sqrt(3), rel_tol=1e-12)
    assert math.isclose(result.p_value, 1.0, rel_tol=1e-12) and result.p_method is PermutationMethod.EXACT


def test_the_four_task_example_of_the_notes() -> None:
    """3/5 5/5 0/5 2/5 -> 5/5 5/5 1/5 4/5: mean +0.25, t interval [-0.055, 0.555]; the stratified
    permutation p is 0.0767 (the sign-flip p of the notes' §4.6 is 0.25)."""
    result = paired_difference([(3, 5, 5, 5), (5, 5, 5, 5), (0, 5, 1, 5), (2, 5, 4, 5)])
    assert result is not None
    assert result.mean == 0.25 and result.stderr is not None and round(result.stderr, 4) == 0.0957
    assert (round(result.interval.low, 3), round(result.interval.high, 3)) == (-0.055, 0.555)
    assert round(result.p_value, 4) == 0.0767
    assert math.isclose(
        result.p_value, float(brute_stratified([(3, 5, 5, 5), (5, 5, 5, 5), (0, 5, 1, 5), (2, 5, 4, 5)]))
    )
    assert sign_flip_p([Fraction(2, 5), Fraction(0), Fraction(1, 5), Fraction(2, 5)])[0] == 0.25


def test_one_task_all_fail_against_all_pass() -> None:
    """0/5 -> 5/5: only the two extreme splits of the 5 passes are as far from 0, so p = 2/C(10, 5) = 1/126.
    (The sign-flip test could never go below 1 with one task.)"""
    p, method, _ = stratified_permutation_p([(0, 5, 5, 5)])
    assert method is PermutationMethod.EXACT and math.isclose(p, 1 / 126, rel_tol=1e-12)


@settings(max_examples=60, deadline=None)
@given(paired_tasks(max_tasks=4))
def test_stratified_p_is_exact_against_enumeration(tasks: list[tuple[int, int, int, int]]) -> None:
    """The p-value is the exact-fraction probability, over every within-task split of the passes, of a sum
    at least as far from 0 as observed (to float rounding), for any runs per side, equal or not."""
    result = paired_difference(tasks)
    assert result is not None and result.p_method is PermutationMethod.EXACT
    assert math.isclose(result.p_value, float(brute_stratified(tasks)), rel_tol=1e-9, abs_tol=1e-12)


def test_drawn_stratified_p_is_seeded_close_to_exact_and_never_zero() -> None:
    """Forced to draw (exact_support=0): the same p every time, within 0.01 of the exact law, and the
    Monte Carlo p is (1 + hits)/(1 + draws), so never 0 even for the most extreme tables."""
    tasks = [(i % 5, 5, (i * 7) % 20, 20) for i in range(12)]
    exact, method, _ = stratified_permutation_p(tasks)
    first = stratified_permutation_p(tasks, exact_support=0)
    assert method is PermutationMethod.EXACT and first == stratified_permutation_p(tasks, exact_support=0)
    assert first[1] is PermutationMethod.MONTE_CARLO and abs(first[0] - exact) < 0.01
    extreme = stratified_permutation_p([(0, 50, 50, 50)] * 3, exact_support=0, draws=1000)
    assert extreme[0] == 1 / 1001


@pytest.mark.parametrize("case", REFERENCE["sign_flip"], ids=lambda c: str(len(c["diffs"])))
def test_sign_flip_matches_scipy(case: dict[str, list[float] | float]) -> None:
    """The exact sign-flip p-value equals scipy.stats.permutation_test (one sample, all sign patterns)."""
    diffs = [Fraction(d).limit_denominator(100) for d in case["diffs"]]  # type: ignore[union-attr]
    p, method, _ = sign_flip_p(diffs)
    assert method is PermutationMethod.EXACT and math.isclose(p, case["p"], rel_tol=1e-12)  # type: ignore[arg-type]


@pytest.mark.parametrize("case", REFERENCE["t_intervals"][4:], ids=lambda c: str(len(c["values"])))
def test_t_interval_matches_scipy(case: dict[str, list[float]]) -> None:
    """The paired t interval equals scipy.stats.t.interval on the same differences."""
    diffs = [Fraction(d).limit_denominator(100) for d in case["values"]]
    tasks = [(0, 10, int(d * 10), 10) if d >= 0 else (int(-d * 10), 10, 0, 10) for d in diffs]
    result = paired_difference(tasks)
    assert result is not None
    low, high = case["interval"]
    assert math.isclose(result.interval.low, max(-1.0, low), abs_tol=1e-12)
    assert math.isclose(result.interval.high, min(1.0, high), abs_tol=1e-12)


@settings(max_examples=60)
@given(paired_tasks(max_tasks=8))
def test_sign_flip_p_is_exact_against_brute_force(tasks: list[tuple[int, int, int, int]]) -> None:
    """Up to 8 tasks: the sign-flip p-value is exactly the brute-force share of the 2^T sign patterns."""
    diffs = [Fraction(c, cn) - Fraction(b, bn) for b, bn, c, cn in tasks]
    p, method, _ = sign_flip_p(diffs)
    assert method is PermutationMethod.EXACT
    assert p == float(brute_sign_flip(diffs))


@given(paired_tasks(max_tasks=10))
def test_the_interval_is_never_a_point_and_contains_the_mean(tasks: list[tuple[int, int, int, int]]) -> None:
    """The interval contains the mean difference, lies in [-1, 1], and has width > 0 (pooled when all d are equal)."""
    result = paired_difference(tasks)
    assert result is not None
    assert -1.0 <= result.interval.low <= result.mean <= result.interval.high <= 1.0
    assert result.interval.high > result.interval.low
    same = len({Fraction(c, cn) - Fraction(b, bn) for b, bn, c, cn in tasks}) == 1
    assert (result.interval_method is IntervalMethod.POOLED_NEWCOMBE) is same
    assert 0.0 < result.p_value <= 1.0
    excludes = result.interval.low > 0.0 or result.interval.high < 0.0
    assert result.interval_agrees == (excludes == (result.p_value < 0.05))


def test_the_t_interval_can_exclude_zero_where_the_exact_test_does_not() -> None:
    """The t interval is an approximation and the permutation p decides: six tasks at 0/5 on the baseline
    against 0, 3, 3, 0, 3, 2 of 20 on the candidate give the t interval [+1.4, +16.9] pp, which excludes 0,
    while the exact p is 0.12 (a baseline of 5 runs at 0/5 is weak evidence of a low rate); ``interval_agrees``
    is False there."""
    tasks = [(0, 5, c, 20) for c in (0, 3, 3, 0, 3, 2)]
    result = paired_difference(tasks)
    assert result is not None
    assert round(result.interval.low, 3) == 0.014 and round(result.interval.high, 3) == 0.169
    assert round(result.p_value, 2) == 0.12
    assert result.interval_agrees is False
    """All 5/5 on both sides: the standard error is 0, so the interval is Newcombe's over 15 vs 15 runs."""
    result = paired_difference([(5, 5, 5, 5)] * 3)
    assert result is not None
    assert result.stderr == 0.0 and result.interval_method is IntervalMethod.POOLED_NEWCOMBE
    assert round(result.interval.high, 4) == 0.2039 and result.min_detectable is None


def test_above_twenty_tasks_the_sign_flip_p_value_is_drawn_seeded_and_close_to_exact() -> None:
    """Sign flips, 21 tasks: 100,000 seeded draws, the same p-value every time, within 0.01 of the exact 2^21
    count."""
    tasks = [(i % 6, 5, (i * 5 + 3) % 6, 5) for i in range(EXACT_FLIPS_UP_TO + 1)]
    diffs = [Fraction(c, cn) - Fraction(b, bn) for b, bn, c, cn in tasks]
    p_first, m_first, n_first = sign_flip_p(diffs)
    assert m_first is PermutationMethod.MONTE_CARLO and n_first == 100_000
    assert p_first == sign_flip_p(diffs)[0]
    exact, method, count = sign_flip_p(diffs[:-1])  # 20 tasks: the exact branch
    assert method is PermutationMethod.EXACT and count == 2**20
    scaled = [int(d * 5) for d in diffs]
    observed = abs(sum(scaled))
    sums = [0]
    for v in scaled:  # the 2^21 exact sums, for the oracle
        sums = [s + v for s in sums] + [s - v for s in sums]
    exact21 = sum(abs(s) >= observed for s in sums) / len(sums)
    assert abs(p_first - exact21) < 0.01
    assert 0.0 < exact <= 1.0


def test_no_tasks_no_difference() -> None:
    """No task judged on both sides: None."""
    assert paired_difference([]) is None


def test_a_side_without_judged_runs_is_refused() -> None:
    """A task without judged runs on a side has no rate: ValueError (the caller filters it out)."""
    with pytest.raises(ValueError):
        paired_difference([(0, 0, 1, 5)])
