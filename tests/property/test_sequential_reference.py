"""Reference checks of the sequential kernel against independent computations: the futility chances by
enumerating every continuation (a Polya urn, one outcome at a time), Clopper-Pearson's bounds by their closed
forms and defining equations in exact rationals, and the exact type-I error of the two-arm test under
optional stopping by dynamic programming over every path (no simulation)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alisio.core.stats.betting import clopper_pearson, pair_log_wealth
from alisio.core.stats.sequential import (
    SequentialDesign,
    baseline_futility_probability,
    futility_probability,
    method_note,
    threshold,
)
from alisio.core.stats.sequential_kernel import baseline_nulls, one_arm_logs


def _urn_paths(counts: tuple[float, ...], rest: int) -> list[tuple[tuple[int, ...], float]]:
    """Every sequence of ``rest`` draws from a Polya urn starting at ``counts`` (the Dirichlet posterior
    predictive, one draw at a time), with its probability: the final added counts per category."""
    out = []
    for seq in itertools.product(range(len(counts)), repeat=rest):
        weights, p = list(counts), 1.0
        for k in seq:
            p *= weights[k] / sum(weights)
            weights[k] += 1.0
        out.append((tuple(seq.count(k) for k in range(len(counts))), p))
    return out


@settings(max_examples=15, deadline=None)
@given(st.integers(4, 8), st.sampled_from(["two-sided", "improved", "not-worse"]), st.data())
def test_the_futility_chance_is_the_posterior_predictive_chance_of_ending_past_the_threshold(
    looks: int, side: str, data: st.DataObject
) -> None:
    """futility_probability equals the sum, over every continuation of the remaining pairs drawn one at a time
    from a Polya urn with counts + 1/2, of the probability of those whose e-value at max_k (either side when
    two-sided) reaches the threshold; and it is 0 exactly when no continuation does."""
    max_k = looks + 5
    plus = data.draw(st.integers(0, looks))
    minus = data.draw(st.integers(0, looks - plus))
    zero = looks - plus - minus
    margin = 0.1 if side == "not-worse" else 0.0
    design = SequentialDesign(tasks=1, alpha=0.2, max_k=max_k, min_k=1, side=side, margin=margin)  # type: ignore[arg-type]
    log_level = math.log(threshold(design))
    expected, reachable = 0.0, False
    for (up, flat, down), p in _urn_paths((plus + 0.5, zero + 0.5, minus + 0.5), max_k - looks):
        a, z, b = (np.array([float(v)]) for v in (plus + up, zero + flat, minus + down))
        logs = [pair_log_wealth(a, z, b, -margin, True)[0]]
        if side == "two-sided":
            logs.append(pair_log_wealth(a, z, b, 0.0, False)[0])
        if max(logs) >= log_level:
            expected, reachable = expected + p, True
    got = futility_probability(design, looks, plus, zero, minus)
    assert math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12)
    assert (got == 0.0) == (not reachable)


@settings(max_examples=25, deadline=None)
@given(st.integers(3, 9), st.sampled_from(["two-sided", "improved", "not-worse"]), st.data())
def test_the_baseline_futility_chance_is_the_beta_binomial_chance(
    looks: int, side: str, data: st.DataObject
) -> None:
    """baseline_futility_probability equals the Polya-urn enumeration (Beta(passes + 1/2, fails + 1/2)
    predictive) of the continuations whose e-value against the baseline's bound reaches the threshold."""
    max_k = looks + 7
    passes = data.draw(st.integers(0, looks))
    base = data.draw(st.integers(0, 20))
    design = SequentialDesign(
        tasks=1, alpha=0.2, max_k=max_k, min_k=1, side=side, margin=0.1 if side == "not-worse" else 0.0
    )  # type: ignore[arg-type]
    nulls = baseline_nulls(design, base, 20)
    log_level = math.log(threshold(design, "baseline"))
    expected = 0.0
    for (more, less), p in _urn_paths((passes + 0.5, looks - passes + 0.5), max_k - looks):
        s, f = np.array([float(passes + more)]), np.array([float(looks - passes + less)])
        logs = [one_arm_logs(s, f, m, long)[0] for m, long in zip(nulls, (True, False), strict=False)]
        if max(logs) >= log_level:
            expected += p
    got = baseline_futility_probability(design, base, 20, looks, passes)
    assert math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12)


def _binomial_tail(x: int, n: int, p: Fraction, upper: bool) -> Fraction:
    """P(Bin(n, p) >= x) (upper) or P(Bin(n, p) <= x), exactly."""
    ks = range(x, n + 1) if upper else range(x + 1)
    return sum((math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in ks), Fraction(0))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 40).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.sampled_from([0.005, 0.0125, 0.025]),
)
def test_clopper_pearson_solves_its_defining_equations(counts: tuple[int, int], tail: float) -> None:
    """Clopper-Pearson: low = 0 iff no pass and high = 1 iff all passed; high(0, n) = 1 − tail^(1/n) and
    low(n, n) = tail^(1/n); otherwise P(Bin(n, low) >= x) and P(Bin(n, high) <= x) equal ``tail`` (exact
    rationals at the returned floats, relative 1e-7: the bounds are moved 1e-12 outward), and they are outward: the tail there is <= tail."""
    x, n = counts
    low, high = clopper_pearson(x, n, tail)
    assert (low == 0.0) == (x == 0) and (high == 1.0) == (x == n)
    if x == 0:
        assert math.isclose(high, 1 - tail ** (1 / n), rel_tol=1e-9)
    if x == n:
        assert math.isclose(low, tail ** (1 / n), rel_tol=1e-9)
    if x > 0:
        at_low = _binomial_tail(x, n, Fraction(low), upper=True)
        assert at_low <= Fraction(tail) and math.isclose(float(at_low), tail, rel_tol=1e-7)
    if x < n:
        at_high = _binomial_tail(x, n, Fraction(high), upper=False)
        assert at_high <= Fraction(tail) and math.isclose(float(at_high), tail, rel_tol=1e-7)


def _exact_false_decision(rate: float, max_k: int, design: SequentialDesign) -> float:
    """P(some look t <= max_k has the running maximum past the threshold) when both arms pass at ``rate``:
    the paths over the counts (plus, minus) of D = +1, −1, mass removed once a state's e-value reaches the
    threshold (the e-value at D = 0 is a function of these counts). No futility: it only stops tests."""
    level = math.log(threshold(design))
    up = down = rate * (1 - rate)
    flat = 1 - 2 * up
    mass = np.zeros((max_k + 1, max_k + 1))
    mass[0, 0] = 1.0
    absorbed = 0.0
    a, b = np.meshgrid(np.arange(max_k + 1.0), np.arange(max_k + 1.0), indexing="ij")
    past = (pair_log_wealth(a, np.zeros_like(a), b, 0.0, True) >= level) | (
        pair_log_wealth(a, np.zeros_like(a), b, 0.0, False) >= level
    )
    for _ in range(max_k):
        step = flat * mass
        step[1:, :] += up * mass[:-1, :]
        step[:, 1:] += down * mass[:, :-1]
        absorbed += float(step[past].sum())
        step[past] = 0.0
        mass = step
    return absorbed


@pytest.mark.parametrize("max_k", [20, 50, 200])
@pytest.mark.parametrize("rate", [0.1, 0.5, 0.95])
def test_the_exact_type_one_error_under_a_look_after_every_pair_is_at_most_alpha(
    rate: float, max_k: int
) -> None:
    """Exactly, over every path (not a simulation): with equal rates, one task, a look after every pair and
    no futility, the chance of ever deciding (either direction) by max_k is positive and at most alpha = 0.05;
    with 30 tasks the per-task chance is at most 0.05/30."""
    assert 0.0 < _exact_false_decision(rate, max_k, SequentialDesign(tasks=1, max_k=max_k)) <= 0.05
    assert _exact_false_decision(rate, max_k, SequentialDesign(tasks=30, max_k=max_k)) <= 0.05 / 30


def test_the_thresholds_are_bonferroni_on_e_values() -> None:
    """The threshold is m/alpha per one-sided e-process, doubled when two-sided and again against a baseline:
    alpha 0.05 and 3 tasks give 120 two-sided, 60 one-sided, 240 against a baseline (two-sided)."""
    assert threshold(SequentialDesign(tasks=3)) == 120.0
    assert threshold(SequentialDesign(tasks=3, side="improved")) == 60.0
    assert threshold(SequentialDesign(tasks=3, side="not-worse", margin=0.1)) == 60.0
    assert threshold(SequentialDesign(tasks=3), "baseline") == 240.0
    assert threshold(SequentialDesign(tasks=1, alpha=0.1)) == 20.0


def test_the_method_notes_name_the_method_the_threshold_and_the_guarantee() -> None:
    """Each footnote names its method, the e-value threshold, the family-wise guarantee and its validity under
    optional stopping."""
    design = SequentialDesign(tasks=4)
    two = method_note("two-arm", design)
    assert "e-process" in two and "reaches 160" in two and "Bonferroni" in two and "optional stopping" in two
    base = method_note("baseline", design)
    assert "Clopper-Pearson" in base and "reaches 320" in base and "fixed data" in base
    width = method_note("width", design, 0.2)
    assert "until width 0.2" in width and "0.9875" in width and "Wilson interval does not" in width


def test_the_futility_footnote_names_the_predictive_chance_the_code_computes() -> None:
    """The footnote says what ``futility_probability`` computes: the *predictive* chance (the remaining pairs
    drawn from the posterior predictive, which the urn test above pins), not the chance at the current
    estimate. The two differ: after 10 pairs of 5 wins and 5 ties, with 40 pairs left, the chance at the
    estimate (every remaining pair +1 with probability 1/2, else 0; binomial, computed here) is far from the
    predictive chance the code stops on."""
    design = SequentialDesign(tasks=1, max_k=50)
    for kind in ("two-arm", "baseline"):
        note = method_note(kind, design)  # type: ignore[arg-type]
        assert "predictive chance of being decided at 50 runs" in note and "posterior predictive" in note
        assert "current estimate" not in note
    predictive = futility_probability(design, 10, 5, 5, 0)
    level = math.log(threshold(design))
    plug_in = sum(
        math.comb(40, wins) * 0.5**40
        for wins in range(41)
        if pair_log_wealth(np.array([5.0 + wins]), np.array([45.0 - wins]), np.array([0.0]), 0.0, True)[0]
        >= level
    )
    assert abs(predictive - plug_in) > 0.02
