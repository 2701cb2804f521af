"""The statistics kernel: Wilson intervals, pass@k / pass^k, medians, variances, task-clustered means.

Rules this module keeps:

- Undefined is explicit: ``None`` when there is nothing to estimate (n = 0, n < k, empty input), never NaN,
  0 or 1. Invalid input (negative counts, passes > runs, bool or float counts, NaN) raises ``ValueError``:
  that is a bug in the caller, not an outcome.
- Counts are integers: Python ``int`` or numpy integers; ``bool`` and floats are refused.
- Results are plain Python ``float``/``bool`` (never numpy scalars), so they go straight into msgspec Structs.
- The Wilson interval's ends are exact: the lower bound is exactly ``0.0`` when there are no passes and the
  upper bound exactly ``1.0`` when every run passed (the textbook formula gives 0.9999999999999999 for 10/10
  and -1.4e-17 for 0/21); both bounds are clamped to [0, 1].
- Runs cluster within tasks: a suite-level figure is a mean over tasks (``task_clustered_mean``), never one
  interval over runs pooled across tasks.
- A suite-level interval is a t interval on (tasks - 1) degrees of freedom, never mean ± 1.96 SE (with few
  tasks the normal quantile under-covers), and never zero-width: when every task has the same rate the
  tasks' spread says nothing, and the pooled Wilson interval is used instead (``suite_rate``).
- Importing this module does not import numpy; only ``wilson_bounds`` does, so the CLI starts fast.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from enum import StrEnum
from fractions import Fraction
from statistics import NormalDist
from typing import TYPE_CHECKING

from alisio.core.base import Frozen

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "Z95",
    "ClusteredMean",
    "Interval",
    "IntervalMethod",
    "median",
    "pass_at_k",
    "pass_at_k_estimate",
    "pass_hat_k",
    "pass_hat_k_estimate",
    "sample_variance",
    "suite_rate",
    "t_quantile",
    "task_clustered_mean",
    "wilson_bounds",
    "wilson_interval",
]

Z95: float = 1.959963984540054
"""The 0.975 standard normal quantile (``scipy.stats.norm.ppf(0.975)``), used for every 95% interval."""


class Interval(Frozen, frozen=True, kw_only=True):
    """A closed interval ``[low, high]``; for a Wilson interval both ends lie in [0, 1]."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            raise ValueError(f"interval bounds must be finite, got [{self.low}, {self.high}]")
        if self.low > self.high:
            raise ValueError(f"interval low {self.low} is above high {self.high}")


class IntervalMethod(StrEnum):
    """How a suite-level 95% interval was computed."""

    T = "t"
    """mean ± t(0.975, tasks − 1) · standard error, over tasks."""
    POOLED_WILSON = "pooled_wilson"
    """Every task has the same rate: the Wilson interval of all runs pooled (the t interval would be a point)."""
    POOLED_NEWCOMBE = "pooled_newcombe"
    """Every task has the same difference: Newcombe's interval of the pooled counts of both sides."""


class ClusteredMean(Frozen, frozen=True, kw_only=True):
    """A suite-level mean of per-task rates with its task-clustered standard error and 95% interval."""

    mean: float
    """Mean of the per-task success rates (each task weighs the same, whatever its run count)."""
    stderr: float | None
    """Sample standard deviation of the per-task rates over sqrt(tasks); ``None`` with fewer than 2 tasks."""
    tasks: int
    """Number of tasks averaged."""
    interval: Interval | None = None
    """95% interval of the suite rate (``interval_method`` says which); absent in replay and in reports
    written before it existed."""
    interval_method: IntervalMethod | None = None
    """``t`` (on tasks − 1 degrees of freedom) or ``pooled_wilson`` (every task has the same rate)."""


# --- validation -----------------------------------------------------------------------------------------


def _count(name: str, value: object) -> int:
    """``value`` as a non-negative ``int``; ``ValueError`` for bool, float, negative or non-integer input."""
    # bool is an Integral, and True passes for 1 too easily: a caller handing us flags is a bug.
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer count, got {type(value).__name__} {value!r}")
    as_int = int(value)
    if as_int < 0:
        raise ValueError(f"{name} must be >= 0, got {as_int}")
    return as_int


def _z_for(confidence: float) -> float:
    """The two-sided normal quantile for ``confidence``: exactly ``Z95`` for 0.95."""
    if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real):
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if confidence == 0.95:
        return Z95
    return NormalDist().inv_cdf((1.0 + float(confidence)) / 2.0)


def _finite_values(name: str, values: Sequence[float]) -> list[float]:
    """``values`` as a list of finite floats; ``ValueError`` on NaN, infinities or non-numbers."""
    out: list[float] = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{name} must be numbers, got {type(value).__name__} {value!r}")
        as_float = float(value)
        if not math.isfinite(as_float):
            raise ValueError(f"{name} must be finite (drop NaN/missing values first), got {as_float}")
        out.append(as_float)
    return out


# --- Wilson score interval ------------------------------------------------------------------------------


def wilson_interval(passes: int, n: int, confidence: float = 0.95) -> Interval | None:
    """Wilson score interval for a success rate, without continuity correction (Wilson 1927; Newcombe 1998a,
    method 3)::

        center = (x + z²/2) / (n + z²)
        half   = z · sqrt(x(n − x)/n + z²/4) / (n + z²)

    Args:
        passes: runs judged pass (x).
        n: judged runs (pass, fail, budget_exceeded; errored runs excluded).
        confidence: two-sided level; 0.95 uses ``Z95`` exactly, others ``NormalDist().inv_cdf``.

    Returns:
        ``Interval(low, high)`` with ``low == 0.0`` exactly iff ``passes == 0`` and ``high == 1.0`` exactly iff
        ``passes == n``; ``None`` when ``n == 0`` (no judged runs: no interval, never NaN).

    Raises:
        ValueError: negative counts, ``passes > n``, bool or float counts, confidence outside (0, 1).
    """
    x = _count("passes", passes)
    size = _count("n", n)
    if x > size:
        raise ValueError(f"passes ({x}) cannot exceed judged runs ({size})")
    z = _z_for(confidence)
    if size == 0:
        return None
    # Same operation order as wilson_bounds, so the scalar and vectorised results are bit-identical.
    xf = float(x)
    nf = float(size)
    z2 = z * z
    denom = nf + z2
    center = (xf + z2 / 2.0) / denom
    half = z * math.sqrt(xf * (nf - xf) / nf + z2 / 4.0) / denom
    low = 0.0 if x == 0 else max(0.0, center - half)
    high = 1.0 if x == size else min(1.0, center + half)
    return Interval(low=low, high=high)


def wilson_bounds(
    passes: ArrayLike, n: ArrayLike, confidence: float = 0.95
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Vectorised ``wilson_interval``: element-wise (low, high) arrays over broadcast integer arrays.

    Same formula, same exact ends (0.0 where passes == 0, 1.0 where passes == n), same clamp to [0, 1], and
    bit-identical to the scalar function element by element.

    Raises:
        ValueError: a non-integer (or bool) dtype, shapes that do not broadcast, any negative count,
            any ``passes > n``, or any ``n == 0`` (a task with no judged runs has no interval; filter it out
            and report it apart).
    """
    import numpy as np

    x_arr = np.asarray(passes)
    n_arr = np.asarray(n)
    for name, arr in (("passes", x_arr), ("n", n_arr)):
        if arr.dtype.kind not in "iu":
            raise ValueError(f"{name} must be an integer array, got dtype {arr.dtype}")
    try:
        x_b, n_b = np.broadcast_arrays(x_arr, n_arr)
    except ValueError as exc:
        raise ValueError(f"passes and n do not broadcast: {x_arr.shape} vs {n_arr.shape}") from exc
    if np.any(x_b < 0) or np.any(n_b < 0):
        raise ValueError("counts must be >= 0")
    if np.any(n_b == 0):
        raise ValueError("n must be >= 1 everywhere: a task with no judged runs has no interval")
    if np.any(x_b > n_b):
        raise ValueError("passes cannot exceed judged runs")
    z = _z_for(confidence)
    xf = x_b.astype(np.float64)
    nf = n_b.astype(np.float64)
    z2 = z * z
    denom = nf + z2
    center = (xf + z2 / 2.0) / denom
    half = z * np.sqrt(xf * (nf - xf) / nf + z2 / 4.0) / denom
    low = np.where(x_b == 0, 0.0, np.maximum(0.0, center - half))
    high = np.where(x_b == n_b, 1.0, np.minimum(1.0, center + half))
    return low.astype(np.float64), high.astype(np.float64)


# --- pass@k and pass^k ----------------------------------------------------------------------------------


def pass_at_k(outcomes: Sequence[bool]) -> bool | None:
    """Observed pass@k: did at least one of the judged runs pass? ``None`` for no runs.

    With exactly k judged runs this is the unbiased estimator of pass@k; with more, use
    ``pass_at_k_estimate`` (the observed value then estimates pass@n, biased upward).
    """
    if len(outcomes) == 0:
        return None
    return any(bool(o) for o in outcomes)


def pass_hat_k(outcomes: Sequence[bool]) -> bool | None:
    """Observed pass^k: did every judged run pass? ``None`` for no runs.

    With exactly k judged runs this is the unbiased estimator of pass^k (Yao et al. 2024, tau-bench).
    """
    if len(outcomes) == 0:
        return None
    return all(bool(o) for o in outcomes)


def _estimate_args(n: int, c: int, k: int) -> tuple[int, int, int]:
    runs = _count("n", n)
    passed = _count("c", c)
    size = _count("k", k)
    if passed > runs:
        raise ValueError(f"c ({passed}) cannot exceed n ({runs})")
    if size == 0:
        raise ValueError("k must be >= 1")
    return runs, passed, size


def _ratio_of_falling_products(top: int, n: int, k: int) -> Fraction:
    """C(top, k) / C(n, k) as the exact product ∏_{i<k} (top − i)/(n − i); 0 when top < k."""
    if top < k:
        return Fraction(0)
    num = 1
    den = 1
    for i in range(k):
        num *= top - i
        den *= n - i
    return Fraction(num, den)


def pass_at_k_estimate(n: int, c: int, k: int) -> float | None:
    """Unbiased pass@k from n judged runs with c passes (Chen et al. 2021, arXiv:2107.03374)::

        pass@k = 1 − C(n − c, k) / C(n, k) = 1 − ∏_{j = n−c+1}^{n} (1 − k/j)

    The product is evaluated in exact integer arithmetic (∏_{i<k} (n − c − i)/(n − i)), so the float is
    correctly rounded: k = 1 gives exactly c/n, and c = 0 or n − c < k give exactly 0.0 or 1.0.

    Returns:
        The estimate in [0, 1], or ``None`` when ``n < k`` (not estimable; the HumanEval code reports n/a).

    Raises:
        ValueError: invalid counts (see ``wilson_interval``), ``c > n`` or ``k < 1``.
    """
    runs, passed, size = _estimate_args(n, c, k)
    if runs < size:
        return None
    return float(1 - _ratio_of_falling_products(runs - passed, runs, size))


def pass_hat_k_estimate(n: int, c: int, k: int) -> float | None:
    """Unbiased pass^k from n judged runs with c passes (Yao et al. 2024, tau-bench, arXiv:2406.12045)::

        pass^k = C(c, k) / C(n, k) = ∏_{i<k} (c − i)/(n − i)

    Evaluated exactly, then rounded once: k = 1 gives exactly c/n, c < k gives exactly 0.0.

    Returns:
        The estimate in [0, 1], or ``None`` when ``n < k``.

    Raises:
        ValueError: invalid counts, ``c > n`` or ``k < 1``.
    """
    runs, passed, size = _estimate_args(n, c, k)
    if runs < size:
        return None
    return float(_ratio_of_falling_products(passed, runs, size))


# --- wall times and suite summaries ---------------------------------------------------------------------


def median(values: Sequence[float]) -> float | None:
    """Median (the mean of the two middle values for an even count, like ``statistics.median``).

    Returns ``None`` for no values. Raises ``ValueError`` on NaN or infinities: filter missing and errored
    wall times out first (with NaN present, ``statistics.median`` depends on the input order).
    """
    data = sorted(_finite_values("values", values))
    if not data:
        return None
    mid = len(data) // 2
    if len(data) % 2 == 1:
        return data[mid]
    return float((Fraction(data[mid - 1]) + Fraction(data[mid])) / 2)


def sample_variance(values: Sequence[float]) -> float | None:
    """Sample variance with the n − 1 denominator, computed in two passes over exact rationals.

    First the exact mean, then the exact sum of squared deviations, rounded once at the end: no cancellation
    (the one-pass Σx² − (Σx)²/n formula gives −170.67 instead of 30 for wall times near 1e9), and constant
    data gives exactly 0.0. Returns ``None`` with fewer than 2 values; ``ValueError`` on NaN or infinities.
    """
    data = [Fraction(v) for v in _finite_values("values", values)]
    if len(data) < 2:
        return None
    mean = sum(data, Fraction(0)) / len(data)
    squares = sum(((v - mean) ** 2 for v in data), Fraction(0))
    return float(squares / (len(data) - 1))


def task_clustered_mean(rates: Sequence[float]) -> ClusteredMean | None:
    """Suite-level mean of per-task success rates, with the standard error clustered by task.

    ``mean = Σ p̂_i / T`` and ``stderr = sd(p̂_i) / sqrt(T)`` with the sample (T − 1) standard deviation: the
    task is the unit, as Miller (2024, "Adding Error Bars to Evals", arXiv:2411.00640) recommends for
    clustered questions. Pooling all runs into one binomial understates the uncertainty (0.112 instead of
    0.208 on the four-task example of the statistics notes, §4.6). With few tasks, widen with t quantiles.

    Args:
        rates: one success rate per task (passes / judged runs), each in [0, 1]; tasks without judged runs
            have no rate and must be left out.

    Returns:
        ``ClusteredMean``; its ``stderr`` is ``None`` with a single task; ``None`` when there are no tasks.

    Raises:
        ValueError: a rate outside [0, 1], NaN or not a number.
    """
    data = _finite_values("rates", rates)
    for rate in data:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"a success rate must be in [0, 1], got {rate}")
    if not data:
        return None
    tasks = len(data)
    mean = float(sum((Fraction(r) for r in data), Fraction(0)) / tasks)
    variance = sample_variance(data)
    stderr = None if variance is None else math.sqrt(variance / tasks)
    return ClusteredMean(mean=mean, stderr=stderr, tasks=tasks)


# --- Student's t and the suite-level interval -----------------------------------------------------------


def _t_central(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with integer ``df`` >= 1, t >= 0 (Abramowitz & Stegun 26.7.3-4).

    With θ = atan(t/√df): for odd df, (2/π)(θ + sinθ·cosθ·(1 + 2/3·cos²θ + 2·4/(3·5)·cos⁴θ + ...)); for
    even df, sinθ·(1 + 1/2·cos²θ + 1·3/(2·4)·cos⁴θ + ...), each series with (df − 1) // 2 or df // 2 terms.
    Every term is positive, so the sum is accurate to a few ulps.
    """
    theta = math.atan2(t, math.sqrt(df))
    sin, cos2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:
        term = total = 1.0
        for j in range(1, df // 2):
            term *= cos2 * (2 * j - 1) / (2 * j)
            total += term
        return sin * total
    term = total = 1.0
    for j in range(1, (df - 1) // 2):
        term *= cos2 * (2 * j) / (2 * j + 1)
        total += term
    series = sin * math.sqrt(cos2) * total if df > 1 else 0.0
    return 2.0 / math.pi * (theta + series)


def t_quantile(prob: float, df: int) -> float:
    """The ``prob`` quantile of Student's t distribution with ``df`` degrees of freedom.

    Newton's method on the closed-form central probability of integer ``df`` (``_t_central``), started at
    the normal quantile: for t > 0 the central probability is concave, so the iterates rise monotonically
    to the root. Agrees with ``scipy.stats.t.ppf`` to about 1e-11 relative up to a few thousand degrees of
    freedom (1e-9 at 10^5). Example: ``t_quantile(0.975, 2)`` is 4.3027 (for 2 df the closed form is
    c·sqrt(2/(1 − c²)) with c = 2·prob − 1).

    Raises:
        ValueError: ``prob`` outside (0, 1) or ``df`` not an integer >= 1.
    """
    if isinstance(df, bool) or not isinstance(df, numbers.Integral) or df < 1:
        raise ValueError(f"degrees of freedom must be an integer >= 1, got {df!r}")
    if isinstance(prob, bool) or not isinstance(prob, numbers.Real) or not 0.0 < prob < 1.0:
        raise ValueError(f"a quantile's probability must be in (0, 1), got {prob!r}")
    nu = int(df)
    central = abs(2.0 * float(prob) - 1.0)
    log_norm = math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2) - 0.5 * math.log(nu * math.pi)
    t = abs(NormalDist().inv_cdf(float(prob)))
    for _ in range(100):
        density = 2.0 * math.exp(log_norm - (nu + 1) / 2 * math.log1p(t * t / nu))
        step = (central - _t_central(t, nu)) / density
        t += step
        if abs(step) <= 1e-12 * max(t, 1.0):  # the series itself is exact to about 1e-12
            break
    return t if prob > 0.5 else -t


def _same_rates(passes: Sequence[int], judged: Sequence[int]) -> bool:
    """Every task has exactly the same rate (compared as fractions, never as rounded floats)."""
    return len({Fraction(p, n) for p, n in zip(passes, judged, strict=True)}) == 1


def suite_rate(passes: Sequence[int], judged: Sequence[int]) -> ClusteredMean | None:
    """The suite success rate: the mean of per-task rates, its task-clustered standard error, and a 95%
    interval that never has zero width.

    The interval is ``mean ± t(0.975, T − 1) · stderr`` over the T tasks (Miller 2024, arXiv:2411.00640;
    with few tasks ±1.96 SE under-covers, Bowyer et al. 2025, arXiv:2503.01747), clamped to [0, 1]. When
    every task has the same rate (all 5/5, or a single task) the standard error is 0 and that interval would
    be a point, so the interval is the Wilson interval of all the runs pooled (``pooled_wilson``).

    Args:
        passes: passes per task.
        judged: judged runs per task, each >= 1 (a task without judged runs has no rate: leave it out).

    Returns:
        ``ClusteredMean`` with ``interval`` and ``interval_method``; ``None`` when there are no tasks.

    Raises:
        ValueError: different lengths, a task without judged runs, or invalid counts.
    """
    if len(passes) != len(judged):
        raise ValueError(f"passes and judged differ in length: {len(passes)} vs {len(judged)}")
    counts = [(_count("passes", p), _count("judged", n)) for p, n in zip(passes, judged, strict=True)]
    for p, n in counts:
        if n == 0 or p > n:
            raise ValueError(f"every task needs 1 <= judged and passes <= judged, got {p}/{n}")
    clustered = task_clustered_mean([p / n for p, n in counts])
    if clustered is None:
        return None
    if _same_rates(passes, judged):
        pooled = wilson_interval(sum(p for p, _ in counts), sum(n for _, n in counts))
        method = IntervalMethod.POOLED_WILSON
    else:
        assert clustered.stderr is not None  # two tasks at least, since the rates differ
        half = t_quantile(0.975, clustered.tasks - 1) * clustered.stderr
        pooled = Interval(low=max(0.0, clustered.mean - half), high=min(1.0, clustered.mean + half))
        method = IntervalMethod.T
    return ClusteredMean(
        mean=clustered.mean,
        stderr=clustered.stderr,
        tasks=clustered.tasks,
        interval=pooled,
        interval_method=method,
    )
