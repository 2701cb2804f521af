"""How reliable an agent is, and where the noise comes from: the intraclass correlation of the pass indicator,
the design effect it implies, the consistency of repetitions, cost per success, and the arms no other beats.

Formulas (one-way random effects on the pass indicator; Fleiss, Levin & Paik 2003 ch. 15; Searle 1971;
Ridout, Demétrio & Firth 1999 compare estimators of the ICC for binary data and find this one among the best):

- T tasks, task i with n_i judged runs and x_i passes, N = Σ n_i, p_i = x_i/n_i, p̄ = Σ x_i / N::

      MSB = Σ n_i (p_i − p̄)² / (T − 1),   MSW = Σ x_i (1 − p_i) / (N − T),   n0 = (N − Σ n_i²/N) / (T − 1)
      ICC = (MSB − MSW) / (MSB + (n0 − 1)·MSW)

  the share of the pass/fail variance that lies between tasks (their true rates differ) rather than within a
  task across repetitions. Its 95% interval inverts the F ratio MSB/MSW on (T − 1, N − T) degrees of freedom
  (Searle's interval, with n0 for unequal runs per task): exact for normal data, approximate for 0/1 data;
  ``bench/bench_reliability.py`` measures its coverage on binary data.
- Design effect (Kish): DE = 1 + (m − 1)·max(ICC, 0), m = Σ n_i² / N (the runs per task, weighted); the N runs
  are worth about N/DE independent ones.
- What more runs buy: with k runs per task, the variance of the suite rate (mean of per-task rates) is
  σ_b²/T + σ_w²/(kT); the share that is repetition noise is (1 − ρ)/(1 + (k − 1)ρ). Doubling k narrows the
  suite interval by 1 − sqrt(1 − share/2); doubling the tasks by 1 − 1/√2 (29%), whatever ρ.
- Cost per success: Σ cost_i / Σ successes_i over tasks, with Fieller's 95% interval clustered by task (the set
  of R for which the mean of cost_i − R·successes_i is not significantly different from 0 by a t test on T − 1
  degrees of freedom): its upper end is unbounded when the successes are too few to bound it, never made up.
- Consistency of repetitions: the coefficient of variation (sample sd / mean) of a measure over a task's runs,
  and the mean pairwise similarity of their tool-call sequences, 2·LCS(a, b)/(|a| + |b|) (the longest common
  subsequence, bit-parallel: Allison and Dix 1986, Hyyrö 2004).

Rules: pure functions of numbers and sequences; ``None`` when a quantity is undefined (never NaN); invalid
input raises ``ValueError``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence

from alisio.core.base import Frozen
from alisio.core.stats.rates import Interval, t_quantile

__all__ = [
    "DOUBLED_TASKS_NARROWER",
    "IccEstimate",
    "RatioEstimate",
    "coefficient_of_variation",
    "f_quantile",
    "icc_binary",
    "lcs_length",
    "mean_pairwise_similarity",
    "non_dominated",
    "ratio_estimate",
    "sequence_similarity",
]

DOUBLED_TASKS_NARROWER = 1.0 - 1.0 / math.sqrt(2.0)
"""How much narrower the suite interval gets with twice the tasks (same k): 29.3%, whatever the ICC."""


class IccEstimate(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """Where the pass/fail variance of a suite lies (module docstring)."""

    icc: float
    """The ANOVA estimate; can be slightly negative (no between-task variance beyond chance)."""
    interval: Interval | None = None
    """95%, by inverting the F ratio; absent when no run varied within its task (MSW = 0)."""
    design_effect: float
    """1 + (m − 1)·max(ICC, 0), m = Σ n_i²/N."""
    effective_runs: float
    """N / design effect: what the runs are worth as independent ones."""
    repetition_share: float
    """Share of the suite rate's variance that is repetition noise within tasks, at these runs per task."""
    doubled_k_narrower: float
    """How much narrower the suite interval would be with twice the runs per task (0.06 is 6%)."""
    tasks: int
    runs: int


def _beta_cf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _beta_regularized(a: float, b: float, x: float) -> float:
    """I_x(a, b), the Beta(a, b) distribution function at x."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_cf(a, b, x) / a
    return 1.0 - front * _beta_cf(b, a, 1.0 - x) / b


@functools.lru_cache(maxsize=4096)
def f_quantile(prob: float, d1: float, d2: float) -> float:
    """The ``prob`` quantile of the F distribution with (``d1``, ``d2``) degrees of freedom: X ~ Beta(d1/2,
    d2/2) gives F = d2·X / (d1·(1 − X)); X's quantile by bisection on the regularized incomplete beta function
    (continued fraction) to 1e-15. For d1 = 1 it is the square of t(1 − (1 − prob)/2, d2).

    >>> round(f_quantile(0.95, 1, 10), 4)
    4.9646

    Raises:
        ValueError: ``prob`` outside (0, 1) or a degree of freedom not positive.
    """
    if not 0.0 < prob < 1.0:
        raise ValueError(f"a quantile's probability must be in (0, 1), got {prob!r}")
    if not (d1 > 0 and d2 > 0):
        raise ValueError(f"degrees of freedom must be positive, got {d1} and {d2}")
    a, b = d1 / 2.0, d2 / 2.0
    low, high = 0.0, 1.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if _beta_regularized(a, b, middle) < prob:
            low = middle
        else:
            high = middle
        if high - low < 1e-15 * max(high, 1e-300):
            break
    x = (low + high) / 2.0
    return d2 * x / (d1 * (1.0 - x))


def icc_binary(tasks: Sequence[tuple[int, int]]) -> IccEstimate | None:
    """The intraclass correlation of the pass indicator over ``tasks`` ((passes, judged runs) each), with its
    interval, the design effect and what doubling k would buy (module docstring).

    >>> estimate = icc_binary([(5, 5), (0, 5), (4, 5), (1, 5)])
    >>> round(estimate.icc, 3), round(estimate.design_effect, 2)
    (0.674, 3.7)

    Returns:
        The estimate, or ``None`` with fewer than 2 tasks with judged runs, no task with 2 runs, or no
        variance at all (every run passed, or every run failed).

    Raises:
        ValueError: a count out of range.
    """
    kept = []
    for passes, judged in tasks:
        if judged < 0 or not 0 <= passes <= max(judged, 0):
            raise ValueError(f"invalid counts {passes}/{judged}")
        if judged:
            kept.append((passes, judged))
    count, runs = len(kept), sum(n for _, n in kept)
    if count < 2 or runs <= count:
        return None
    mean = sum(x for x, _ in kept) / runs
    between = sum(n * (x / n - mean) ** 2 for x, n in kept) / (count - 1)
    within = sum(x * (1.0 - x / n) for x, n in kept) / (runs - count)
    if between == 0.0 and within == 0.0:
        return None
    n0 = (runs - sum(n * n for _, n in kept) / runs) / (count - 1)
    icc = (between - within) / (between + (n0 - 1.0) * within)
    interval = None
    if within > 0.0:
        ratio = between / within
        ends = []
        for prob in (0.975, 0.025):
            f = ratio / f_quantile(prob, count - 1, runs - count)
            ends.append((f - 1.0) / (f + n0 - 1.0))
        # the lower end can be below −1 with very unequal runs per task (the estimate's floor is −1/(n0 − 1))
        interval = Interval(low=min(ends[0], icc), high=min(1.0, max(ends[1], icc)))
    rho = min(max(icc, 0.0), 1.0)
    weighted = sum(n * n for _, n in kept) / runs
    design_effect = 1.0 + (weighted - 1.0) * rho
    k = runs / count
    share = (1.0 - rho) / (1.0 + (k - 1.0) * rho)
    return IccEstimate(
        icc=icc,
        interval=interval,
        design_effect=design_effect,
        effective_runs=runs / design_effect,
        repetition_share=share,
        doubled_k_narrower=1.0 - math.sqrt(1.0 - share / 2.0),
        tasks=count,
        runs=runs,
    )


def coefficient_of_variation(values: Sequence[float]) -> float | None:
    """Sample standard deviation (n − 1) over the mean of ``values``: how much a measure varies across a
    task's repetitions relative to its size. ``None`` with fewer than 2 values or a mean of 0.

    >>> round(coefficient_of_variation([100, 120, 80]), 3)
    0.2
    """
    if len(values) < 2:
        return None
    mean = math.fsum(values) / len(values)
    if mean == 0.0:
        return None
    variance = math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return math.sqrt(variance) / abs(mean)


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (bit-parallel, Allison and Dix 1986: one
    pass over ``b`` with ``a``'s positions as bits of a Python integer).

    >>> lcs_length(["read", "edit", "run"], ["read", "run", "edit", "run"])
    3
    """
    if not a or not b:
        return 0
    masks: dict[Hashable, int] = {}
    for position, item in enumerate(a):
        masks[item] = masks.get(item, 0) | (1 << position)
    full = (1 << len(a)) - 1
    v = full
    for item in b:
        u = v & masks.get(item, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def sequence_similarity(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """2·LCS(a, b)/(|a| + |b|), in [0, 1]: 1 for equal sequences (two empty ones included), 0 when they share
    no element.

    >>> sequence_similarity(["read", "edit", "run"], ["read", "run"])
    0.8
    """
    if not a and not b:
        return 1.0
    return 2.0 * lcs_length(a, b) / (len(a) + len(b))


def mean_pairwise_similarity(sequences: Sequence[Sequence[Hashable]]) -> float | None:
    """The mean ``sequence_similarity`` over every pair of ``sequences`` (a task's repetitions); ``None`` with
    fewer than 2."""
    pairs = [
        sequence_similarity(sequences[i], sequences[j])
        for i in range(len(sequences))
        for j in range(i + 1, len(sequences))
    ]
    return math.fsum(pairs) / len(pairs) if pairs else None


class RatioEstimate(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """Σ cost / Σ successes over tasks, with Fieller's 95% interval clustered by task."""

    estimate: float
    low: float | None = None
    """Absent with fewer than 2 tasks."""
    high: float | None = None
    """Absent with fewer than 2 tasks, or when the successes are too few to bound it (no upper bound)."""
    tasks: int


def ratio_estimate(costs: Sequence[float], successes: Sequence[int]) -> RatioEstimate | None:
    """Cost per success over tasks (``costs[i]``, ``successes[i]`` per task) with Fieller's interval (module
    docstring): the R with (C̄ − R·S̄)² <= t²·Var(C̄ − R·S̄), t = t(0.975, T − 1), Var from the tasks' spread.

    >>> r = ratio_estimate([1000, 1200, 900, 1500], [2, 3, 2, 3])
    >>> round(r.estimate, 1), round(r.low, 1), round(r.high, 1)
    (460.0, 377.4, 561.3)

    Returns:
        The estimate, or ``None`` without tasks or without a success.

    Raises:
        ValueError: lengths differ, a negative cost or success count.
    """
    if len(costs) != len(successes):
        raise ValueError(f"{len(costs)} costs for {len(successes)} success counts")
    if any(c < 0 for c in costs) or any(s < 0 for s in successes):
        raise ValueError("costs and successes must be non-negative")
    count, total = len(costs), sum(successes)
    if count == 0 or total == 0:
        return None
    estimate = math.fsum(costs) / total
    if count < 2:
        return RatioEstimate(estimate=estimate, tasks=count)
    c_mean, s_mean = math.fsum(costs) / count, total / count
    scale = 1.0 / (count * (count - 1))
    v_cc = scale * math.fsum((c - c_mean) ** 2 for c in costs)
    v_ss = scale * math.fsum((s - s_mean) ** 2 for s in successes)
    v_cs = scale * math.fsum((c - c_mean) * (s - s_mean) for c, s in zip(costs, successes, strict=True))
    t2 = t_quantile(0.975, count - 1) ** 2
    a = s_mean**2 - t2 * v_ss
    if a <= 0.0:  # S̄ is not significantly above 0: the set is unbounded
        return RatioEstimate(estimate=estimate, low=0.0, tasks=count)
    # The ends solve a·R² − 2·half_b·R + (C̄² − t²·v_cc) = 0, half_b = C̄·S̄ − t²·v_cs. Its quarter discriminant
    # is written without the C̄²·S̄² terms that cancel (b² − 4ac lost every digit of a narrow interval around a
    # large cost): t²·v(S̄·C − C̄·S) − t⁴·(v_cc·v_ss − v_cs²), v(X) the variance of X's mean.
    spread = scale * math.fsum(
        (s_mean * (ci - c_mean) - c_mean * (si - s_mean)) ** 2
        for ci, si in zip(costs, successes, strict=True)
    )
    quarter = t2 * spread - t2 * t2 * max(v_cc * v_ss - v_cs * v_cs, 0.0)
    half_b = c_mean * s_mean - t2 * v_cs
    root = math.sqrt(max(quarter, 0.0))
    if root <= 1e-12 * abs(half_b):
        # every task the same cost per success, up to rounding: the interval is the point
        return RatioEstimate(estimate=estimate, low=estimate, high=estimate, tasks=count)
    low, high = (half_b - root) / a, (half_b + root) / a
    return RatioEstimate(
        estimate=estimate, low=max(0.0, min(low, estimate)), high=max(high, estimate), tasks=count
    )


def non_dominated(points: Sequence[tuple[float, float | None]]) -> tuple[bool, ...]:
    """For each arm's (success rate, cost per success; ``None``: no success, no cost per success), whether no
    other arm beats it on both: a rate at least as high and a cost at least as low, one of them strictly. An
    arm without a cost per success is dominated by any arm with a success.

    >>> non_dominated([(0.8, 500.0), (0.7, 300.0), (0.6, 400.0)])
    (True, True, False)
    """

    def beats(p: tuple[float, float | None], q: tuple[float, float | None]) -> bool:
        if p[1] is None:
            return False
        if q[1] is None:
            return True
        return p[0] >= q[0] and p[1] <= q[1] and (p[0] > q[0] or p[1] < q[1])

    return tuple(not any(beats(p, q) for p in points if p is not q) for q in points)
