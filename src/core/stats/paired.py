"""The suite-level comparison, paired by task: the mean per-task difference, its t interval, and a
permutation p-value stratified by task.

Both reports ran the same tasks, so the comparison is paired by task (Miller 2024, "Adding Error Bars to
Evals", arXiv:2411.00640, §4): for every task judged on both sides, d_i = candidate rate − baseline rate.
The tasks' difficulty cancels out of d_i, which is why the paired standard error is smaller than the
unpaired sqrt(SE_b² + SE_c²).

Rules this module keeps:

- The interval is ``mean(d) ± t(0.975, T − 1) · sd(d)/√T``, clamped to [−1, 1]: an approximation, which can
  disagree with the exact permutation test (under "no change" it excludes 0 in more than 5% of suites with
  unequal runs per side); ``interval_agrees`` says whether it does, and the test decides. When every d_i is the same
  (for example all tasks 5/5 on both sides) that interval would be a point, so the interval is Newcombe's
  interval of the pooled counts instead (``pooled_newcombe``), and a single task gets its own Newcombe
  interval the same way.
- The p-value (``stratified_permutation_p``) permutes the run labels between the two sides *within each
  task*: under the sharp null "each run's outcome does not depend on its side", a task with s passes among
  nb + nc runs gives the candidate X ~ Hypergeometric(nb + nc, s, nc) passes, independently across tasks.
  The statistic is Σ d_i, and the p-value is P(|Σ D_i| >= |Σ d_i|) under that law. It is exact for any runs
  per side, equal or not (the sign-flip test, ``sign_flip_p``, assumes each d_i symmetric about 0, which
  fails with unequal runs per side at low or high rates: 8.2% size at 5% nominal for 5 against 50 runs at
  p = 0.05). The law is computed exactly by convolution, in integer units of the common denominator, while
  each step stays within ``EXACT_SUPPORT`` pairs; above, ``DRAWS`` seeded draws give (1 + hits)/(1 + draws).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import StrEnum
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from alisio.core.base import Frozen
from alisio.core.stats.exact import newcombe_interval
from alisio.core.stats.power import paired_min_detectable
from alisio.core.stats.rates import Interval, IntervalMethod, t_quantile

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "DRAWS",
    "EXACT_FLIPS_UP_TO",
    "EXACT_SUPPORT",
    "PERMUTATION_SEED",
    "PairedDifference",
    "PermutationMethod",
    "paired_difference",
    "sign_flip_p",
    "stratified_permutation_p",
]

EXACT_FLIPS_UP_TO = 20
"""Up to this many tasks the sign-flip p-value enumerates all 2^T patterns (2^20 is about a million)."""
DRAWS = 100_000
"""Random sign patterns drawn above ``EXACT_FLIPS_UP_TO`` tasks."""
PERMUTATION_SEED = 20241100
"""Seed of the drawn sign patterns: the same reports always give the same p-value."""
EXACT_SUPPORT = 2_000_000
"""Most (value, split) pairs one convolution step of the exact null law of Σ d_i may handle; above, draws."""


class PermutationMethod(StrEnum):
    """How the sign-flip p-value was computed."""

    EXACT = "exact"
    """The exact permutation law (all 2^T sign patterns for ``sign_flip_p``)."""
    MONTE_CARLO = "monte_carlo"
    """``DRAWS`` seeded random permutations; p = (1 + hits)/(1 + draws)."""


class PairedDifference(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """The suite difference candidate − baseline, paired by task."""

    tasks: int
    """Tasks judged on both sides (T)."""
    mean: float
    """Mean of the per-task differences d_i = candidate rate − baseline rate."""
    stderr: float | None = None
    """sd(d)/√T with the sample (T − 1) standard deviation; absent for one task."""
    interval: Interval
    """95% interval of the mean difference (``interval_method``)."""
    interval_method: IntervalMethod
    """``t`` on ``df`` degrees of freedom, or ``pooled_newcombe`` when every d_i is equal."""
    df: int | None = None
    """Degrees of freedom of the t interval (T − 1); absent with the pooled interval."""
    p_value: float
    """Two-sided permutation p-value of "no change", stratified by task (``stratified_permutation_p``)."""
    p_method: PermutationMethod
    resamples: int
    """Values of Σ d_i in its exact null law (exact) or ``DRAWS`` (Monte Carlo)."""
    min_detectable: float | None = None
    """Smallest mean difference this many tasks had 80% power to detect at this spread of the d_i (paired
    t approximation, two-sided 5%); absent with fewer than 2 tasks, without spread, or when not even a
    difference of 1 (every task from 0% to 100%) reaches that power."""
    interval_agrees: bool = True
    """Whether the interval and the permutation test say the same: the interval excludes 0 exactly when
    p < 0.05. The t interval is an approximation and under "no change" excludes 0 more often than 5% with few
    tasks or unequal runs per side (``bench/bench_paired_size.py``); the test is exact, and decides."""


def _scaled(diffs: Sequence[Fraction]) -> tuple[list[int], int] | None:
    """The differences times their common denominator, as integers, when every signed sum fits in int64."""
    denominator = math.lcm(*(d.denominator for d in diffs)) if diffs else 1
    scaled = [int(d * denominator) for d in diffs]
    if sum(abs(v) for v in scaled) >= 2**62:
        return None
    return scaled, denominator


def _flip_sums(values: NDArray[Any]) -> NDArray[Any]:
    """Σ ± v_i for all 2^T sign patterns, built by doubling (2^T values, 2^(T+1) additions)."""
    import numpy as np

    sums = np.zeros(1, dtype=values.dtype)
    for v in values:
        sums = np.concatenate((sums + v, sums - v))
    return sums


def _drawn_sums(values: NDArray[Any], draws: int, seed: int) -> NDArray[Any]:
    """Σ ± v_i for ``draws`` sign patterns from ``numpy.random.default_rng(seed)``, in chunks of 10,000."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for start in range(0, draws, 10_000):
        size = min(10_000, draws - start)
        signs = rng.integers(0, 2, size=(size, len(values)), dtype=np.int8).astype(values.dtype) * 2 - 1
        out.append(signs @ values)
    return np.concatenate(out)


def sign_flip_p(
    diffs: Sequence[Fraction], *, seed: int = PERMUTATION_SEED, draws: int = DRAWS
) -> tuple[float, PermutationMethod, int]:
    """Two-sided sign-flip permutation p-value of "the mean difference is 0": the share of sign patterns
    whose |Σ ± d_i| is at least the observed |Σ d_i| (the observed pattern included).

    Args:
        diffs: the per-task differences as exact fractions (at least one).
        seed: seed of the drawn patterns (only used above ``EXACT_FLIPS_UP_TO`` tasks).
        draws: patterns drawn above ``EXACT_FLIPS_UP_TO`` tasks.

    Returns:
        (p-value, method, patterns counted). Exact with 2^T patterns up to ``EXACT_FLIPS_UP_TO`` tasks; the
        smallest exact p-value is 2/2^T (1 with a single task).
    """
    import numpy as np

    if not diffs:
        raise ValueError("the sign-flip test needs at least one task")
    exact = _scaled(diffs)
    if exact is not None:
        values: NDArray[Any] = np.array(exact[0], dtype=np.int64)
        observed, tolerance = float(abs(sum(exact[0]))), 0.0
    else:  # denominators too large for int64: floats, ties within a relative 1e-12 count as extreme
        values = np.array([float(d) for d in diffs], dtype=np.float64)
        observed = abs(float(sum(diffs)))
        tolerance = 1e-12 * float(np.abs(values).sum())
    if len(diffs) <= EXACT_FLIPS_UP_TO:
        sums = _flip_sums(values)
        hits = int(np.count_nonzero(np.abs(sums) >= observed - tolerance))
        return hits / len(sums), PermutationMethod.EXACT, len(sums)
    sums = _drawn_sums(values, draws, seed)
    hits = int(np.count_nonzero(np.abs(sums) >= observed - tolerance))
    return (1 + hits) / (1 + draws), PermutationMethod.MONTE_CARLO, draws


def _hypergeometric(total: int, passes: int, drawn: int) -> tuple[int, NDArray[Any]]:
    """(smallest x, P(X = x) for x upwards) of X ~ Hypergeometric(total runs, passes, drawn), from sums of
    logs (relative error about total·1e-16)."""
    import numpy as np

    low, high = max(0, passes - (total - drawn)), min(passes, drawn)
    log_fact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, total + 1, dtype=np.float64)))))

    def log_choose(n: int | NDArray[Any], k: int | NDArray[Any]) -> NDArray[Any]:
        out: NDArray[Any] = log_fact[n] - log_fact[k] - log_fact[np.subtract(n, k)]
        return out

    x = np.arange(low, high + 1)
    pmf: NDArray[Any] = np.exp(
        log_choose(drawn, x) + log_choose(total - drawn, passes - x) - log_choose(total, passes)
    )
    return low, pmf


def _exact_law(
    tasks: Sequence[tuple[int, int, int, int]], unit: int, support: int
) -> tuple[NDArray[Any], NDArray[Any], int] | None:
    """The null law of Σ d_i·unit as (values, probabilities) with the observed value, by sparse convolution
    (outer sums merged by value), or ``None`` when a step would handle more than ``support`` pairs or the
    values could overflow int64."""
    import numpy as np

    if (
        sum(unit // bn + unit // cn for _, bn, _, cn in tasks) * max(bn + cn for _, bn, _, cn in tasks)
        >= 2**62
    ):
        return None
    values: NDArray[Any] = np.zeros(1, dtype=np.int64)
    probs: NDArray[Any] = np.ones(1)
    observed = 0
    for b, bn, c, cn in tasks:
        low, pmf = _hypergeometric(bn + cn, b + c, cn)
        if len(values) * len(pmf) > support:
            return None
        # D = X/cn − (s − X)/bn, so D·unit = X·(unit/cn + unit/bn) − s·unit/bn
        step, shift = unit // cn + unit // bn, (b + c) * (unit // bn)
        task_values = (np.arange(low, low + len(pmf), dtype=np.int64) * step - shift).astype(np.int64)
        observed += c * step - shift
        pairs = (values[:, None] + task_values[None, :]).ravel()
        values, inverse = np.unique(pairs, return_inverse=True)
        probs = np.bincount(inverse.ravel(), weights=(probs[:, None] * pmf[None, :]).ravel())
    return values, probs, observed


def _drawn_law(tasks: Sequence[tuple[int, int, int, int]], draws: int, seed: int) -> NDArray[Any]:
    """``draws`` values of Σ D_i under the null, from ``numpy.random.default_rng(seed)``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    total = np.zeros(draws)
    for b, bn, c, cn in tasks:
        s = b + c
        x = rng.hypergeometric(s, bn + cn - s, cn, size=draws) if 0 < s < bn + cn else np.full(draws, c)
        total += x / cn - (s - x) / bn
    return total


def stratified_permutation_p(
    tasks: Sequence[tuple[int, int, int, int]],
    *,
    seed: int = PERMUTATION_SEED,
    draws: int = DRAWS,
    exact_support: int = EXACT_SUPPORT,
) -> tuple[float, PermutationMethod, int]:
    """Two-sided p-value of "no change" by permuting run labels between the sides within each task (module
    docstring): P(|Σ D_i| >= |Σ d_i|) under the sharp null, the observed tables included.

    Example: one task, 0/5 against 5/5, gives 2/C(10, 5) = 0.0079 (only the two extreme splits of the 5
    passes are as far from 0).

    Args:
        tasks: (baseline passes, baseline judged, candidate passes, candidate judged) per task, judged >= 1.
        seed: seed of the draws (only when the exact law is too large).
        draws: draws when the exact law is too large.
        exact_support: the most pairs a convolution step of the exact law may handle (above it, draws).

    Returns:
        (p-value, method, values in the exact law or draws). A Monte Carlo p-value is never 0.
    """
    import numpy as np

    if not tasks:
        raise ValueError("the permutation test needs at least one task")
    unit = math.lcm(*(n for b, bn, c, cn in tasks for n in (bn, cn)))
    exact = _exact_law(tasks, unit, exact_support)
    if exact is not None:
        values, probs, observed = exact
        hits = float(probs[np.abs(values) >= abs(observed)].sum())
        return min(1.0, hits), PermutationMethod.EXACT, len(values)
    seen = abs(sum(Fraction(c, cn) - Fraction(b, bn) for b, bn, c, cn in tasks))
    sums = _drawn_law(tasks, draws, seed)
    hits = int(np.count_nonzero(np.abs(sums) >= float(seen) * (1.0 - 1e-12)))
    return (1 + hits) / (1 + draws), PermutationMethod.MONTE_CARLO, draws


def _interval(
    tasks: Sequence[tuple[int, int, int, int]], mean: float, stderr: float | None, same: bool
) -> tuple[Interval, IntervalMethod, int | None]:
    if same or stderr is None:
        pooled = newcombe_interval(
            sum(t[0] for t in tasks),
            sum(t[1] for t in tasks),
            sum(t[2] for t in tasks),
            sum(t[3] for t in tasks),
        )
        assert pooled is not None  # every task has judged runs on both sides
        return pooled, IntervalMethod.POOLED_NEWCOMBE, None
    df = len(tasks) - 1
    half = t_quantile(0.975, df) * stderr
    return Interval(low=max(-1.0, mean - half), high=min(1.0, mean + half)), IntervalMethod.T, df


def paired_difference(
    tasks: Sequence[tuple[int, int, int, int]], *, seed: int = PERMUTATION_SEED
) -> PairedDifference | None:
    """The suite difference candidate − baseline, paired by task.

    Example: differences (−0.4, +0.4, 0) give mean 0 and the t interval 0 ± t(0.975, 2) · 0.4/√3 =
    ±0.9937, with the exact sign-flip p-value 1.

    Args:
        tasks: per task judged on both sides, (baseline passes, baseline judged, candidate passes,
            candidate judged), every judged count >= 1.
        seed: seed of the drawn sign patterns above ``EXACT_FLIPS_UP_TO`` tasks.

    Returns:
        The ``PairedDifference``, or ``None`` without tasks.

    Raises:
        ValueError: a task without judged runs on a side, or passes above judged.
    """
    for b_pass, b_n, c_pass, c_n in tasks:
        if min(b_n, c_n) < 1 or not (0 <= b_pass <= b_n and 0 <= c_pass <= c_n):
            raise ValueError(
                f"each task needs judged runs on both sides, got {b_pass}/{b_n} and {c_pass}/{c_n}"
            )
    if not tasks:
        return None
    diffs = [Fraction(c, cn) - Fraction(b, bn) for b, bn, c, cn in tasks]
    count = len(diffs)
    mean_exact = sum(diffs, Fraction(0)) / count
    stderr = None
    if count >= 2:
        squares = sum(((d - mean_exact) ** 2 for d in diffs), Fraction(0))
        stderr = math.sqrt(squares / (count - 1) / count)
    same = len(set(diffs)) == 1
    interval, method, df = _interval(tasks, float(mean_exact), stderr, same)
    p_value, p_method, resamples = stratified_permutation_p(tasks, seed=seed)
    excludes = interval.low > 0.0 or interval.high < 0.0
    spread = None if stderr is None or same else stderr * math.sqrt(count)
    detectable = None if spread is None else paired_min_detectable(spread, count)
    return PairedDifference(
        tasks=count,
        mean=float(mean_exact),
        stderr=stderr,
        interval=interval,
        interval_method=method,
        df=df,
        p_value=p_value,
        p_method=p_method,
        resamples=resamples,
        min_detectable=None if detectable is None or detectable > 1.0 else detectable,
        interval_agrees=excludes == (p_value < 0.05),
    )
