"""Planning: how many runs a comparison needs, and the smallest change a comparison could detect.

Formulas (shared/notes/statistics.md §4.5; Fleiss, Levin & Paik 2003; Miller 2024, arXiv:2411.00640):

- One task, two-sided test of two proportions at level α with power 1 − β, the pooled variance under the
  null, p̄ = (p1 + p2)/2, q = 1 − p::

      n per side = [z(1 − α/2)·sqrt(2·p̄·q̄) + z(1 − β)·sqrt(p1·q1 + p2·q2)]² / (p2 − p1)²

  0.5 -> 0.6 needs 387.3, so 388 runs per side; 0.5 -> 0.8 needs 39. It is the normal approximation of a
  5% test: the disjoint-interval verdict needs about 1.65 times as many runs for the same power.
- The suite, paired by task, T tasks with k runs per side each, every task at the baseline rate p1 and
  changed by δ give or take a between-task standard deviation ω (``task_sd``)::

      Var(d_i) = ω² + (p1·q1 + p2·q2)/k,   needs  T·δ² / (t(1 − α/2, T − 1) + t(1 − β, T − 1))² >= Var(d_i)

  so k = (p1·q1 + p2·q2) / (T·δ²/c² − ω²); when T·δ²/c² <= ω² no k is enough and more tasks are needed.
  ω defaults to 0 (the same change on every task): the most optimistic case, so k is a lower bound.
- Floors and small n: a per-task verdict needs ``GATE`` (5) judged runs per side, so no plan is below it. When
  the normal formula asks for at most ``EXACT_UP_TO`` runs per side it overstates the power (0.71 to 0.74
  instead of 0.80 at n = 5 to 7), so the answer is the smallest n whose exact power under Boschloo's test,
  the test ``eval compare`` runs, reaches the target (``boschloo_power``: every table enumerated).
- The suite plan sizes a paired t test; ``eval compare`` prints the stratified permutation p-value, which the
  t approximation tracks from about ``SUITE_MIN_TASKS`` (6) tasks up. Below that the plan carries a warning.
- Minimum detectable effect: the smallest change with the given power at the runs a comparison had, by
  inverting the same formulas (``min_detectable_difference``, ``paired_min_detectable``).

Rules: pure functions of numbers; invalid input raises ``ValueError`` here, and ``parse_power_request``
(``alisio.core.lab.comparisons.power_plan``) turns the CLI's text into a ``PowerRequest`` or a ``PowerInputError`` naming the flag.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from alisio.core.stats.exact import boschloo_regions
from alisio.core.stats.rates import t_quantile

__all__ = [
    "EXACT_UP_TO",
    "GATE",
    "MAX_TASKS",
    "SUITE_MIN_TASKS",
    "boschloo_power",
    "candidate_rate",
    "exact_runs",
    "min_detectable_difference",
    "paired_min_detectable",
    "power_two_proportions",
    "runs_per_side",
    "runs_per_task",
]

_NORMAL = NormalDist()
GATE = 5
"""Judged runs per side below which ``eval compare`` gives no verdict ("low power")."""
EXACT_UP_TO = 10
"""Runs per side up to which the one-task plan uses the exact power of Boschloo's test."""
SUITE_MIN_TASKS = 6
"""Tasks below which the suite plan (a paired t approximation) is marked unreliable."""

MAX_TASKS = 10_000
"""The most tasks the suite plan considers (``--tasks``, and the search for the fewest tasks): the t
quantile's cost grows with the degrees of freedom."""


def _z(prob: float) -> float:
    return _NORMAL.inv_cdf(prob)


def _check_level(name: str, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value}")


def candidate_rate(baseline_rate: float, delta: float) -> float:
    """``baseline_rate + delta``, with float noise at the ends removed (0.9 + 0.1 is 1.0000000000000002)."""
    rate = round(baseline_rate + delta, 12)
    return 0.0 if rate == 0.0 else rate


def _check_rates(p1: float, delta: float) -> float:
    """The candidate rate, after checking both rates are in [0, 1] and differ."""
    p2 = candidate_rate(p1, delta)
    for name, rate in (("baseline rate", p1), ("candidate rate", p2)):
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"the {name} must be in [0, 1], got {rate}")
    if p1 == p2:
        raise ValueError("the change to detect must not be 0")
    return p2


def runs_per_side(baseline_rate: float, delta: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Runs per side (before rounding up) for one task to detect ``baseline_rate`` -> ``baseline_rate +
    delta`` with a two-sided test at ``alpha`` and the given ``power`` (module docstring's first formula).

    Raises:
        ValueError: a rate outside [0, 1], ``delta == 0``, ``alpha`` or ``power`` outside (0, 1).
    """
    p1, p2 = baseline_rate, _check_rates(baseline_rate, delta)
    _check_level("alpha", alpha)
    _check_level("power", power)
    mean = (p1 + p2) / 2.0
    null_sd = math.sqrt(2.0 * mean * (1.0 - mean))
    alt_sd = math.sqrt(p1 * (1.0 - p1) + p2 * (1.0 - p2))
    return (_z(1.0 - alpha / 2.0) * null_sd + _z(power) * alt_sd) ** 2 / delta**2


def power_two_proportions(p1: float, p2: float, n1: int, n2: int, alpha: float = 0.05) -> float:
    """Power of the two-sided two-proportion z test (pooled variance under the null) with n1 and n2 runs::

        Φ((|p2 − p1| − z(1 − α/2)·sqrt(p̄q̄(1/n1 + 1/n2))) / sqrt(p1q1/n1 + p2q2/n2)),  p̄ = (n1p1 + n2p2)/(n1 + n2)

    With equal n it inverts ``runs_per_side`` exactly (the far tail is ignored, as there).
    """
    _check_level("alpha", alpha)
    if n1 < 1 or n2 < 1:
        raise ValueError(f"both sides need runs, got {n1} and {n2}")
    pooled = (n1 * p1 + n2 * p2) / (n1 + n2)
    null_se = math.sqrt(pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2))
    alt_se = math.sqrt(p1 * (1.0 - p1) / n1 + p2 * (1.0 - p2) / n2)
    margin = abs(p2 - p1) - _z(1.0 - alpha / 2.0) * null_se
    if alt_se == 0.0:  # p1 and p2 are 0 or 1: the outcome is certain
        return 1.0 if margin > 0.0 else 0.0
    return _NORMAL.cdf(margin / alt_se)


def _binomial(n: int, p: float) -> list[float]:
    """P(X = x) for X ~ Bin(n, p), x = 0..n, from sums of logs (no overflow at any n)."""
    if p in (0.0, 1.0):
        return [1.0 if x == round(p * n) else 0.0 for x in range(n + 1)]
    log_p, log_q = math.log(p), math.log1p(-p)
    return [
        math.exp(
            math.lgamma(n + 1) - math.lgamma(x + 1) - math.lgamma(n - x + 1) + x * log_p + (n - x) * log_q
        )
        for x in range(n + 1)
    ]


def boschloo_power(
    p1: float, p2: float, n1: int, n2: int, alpha: float = 0.05, *, direction: str = "either"
) -> float:
    """Exact power of Boschloo's two-sided test at level ``alpha``: the probability, with n1 runs at p1 and
    n2 at p2, of a table whose Boschloo p-value is below ``alpha`` (``direction`` ``either``), or below it
    toward a better candidate (``better``: the verdict "improved" of ``eval compare --verdict exact``), every
    table counted (``boschloo_regions``: a few milliseconds at 200 runs per side). Example: 0.5 -> 0.9 at 20
    per side is well above 0.5."""
    import numpy as np

    _check_level("alpha", alpha)
    if n1 < 1 or n2 < 1:
        raise ValueError(f"both sides need runs, got {n1} and {n2}")
    if direction not in ("either", "better"):
        raise ValueError(f"direction must be either or better, got {direction!r}")
    better, worse = boschloo_regions(n1, n2, alpha)
    rejected = better if direction == "better" else better | worse
    table = np.outer(_binomial(n1, p1), _binomial(n2, p2))
    return min(1.0, float(table[rejected].sum()))


def exact_runs(p1: float, p2: float, start: int, alpha: float, power: float) -> int | None:
    """The smallest n in [max(GATE, start), EXACT_UP_TO] with exact Boschloo power >= ``power``, else None."""
    for n in range(max(GATE, start), EXACT_UP_TO + 1):
        if boschloo_power(p1, p2, n, n, alpha) >= power:
            return n
    return None


def _first_crossing(
    baseline_rate: float, room: float, sign: float, n1: int, n2: int, power: float
) -> float | None:
    """Smallest |δ| in (0, room] with power >= ``power`` in one direction, by a scan then bisection."""
    if room <= 0.0:
        return None
    steps = 400
    previous = 0.0
    for i in range(1, steps + 1):
        size = room * i / steps
        if power_two_proportions(baseline_rate, baseline_rate + sign * size, n1, n2) >= power:
            low, high = previous, size
            for _ in range(60):
                mid = (low + high) / 2.0
                if power_two_proportions(baseline_rate, baseline_rate + sign * mid, n1, n2) >= power:
                    high = mid
                else:
                    low = mid
            return high
        previous = size
    return None


def min_detectable_difference(
    baseline_rate: float, baseline_n: int, candidate_n: int, power: float = 0.8
) -> float | None:
    """The smallest change from ``baseline_rate``, up or down, that a two-sided 5% two-proportion test on
    ``baseline_n`` and ``candidate_n`` runs detects with ``power`` (``power_two_proportions``).

    Returns:
        The smaller of the upward and downward sizes (a positive number), or ``None`` when no change that
        keeps the rate in [0, 1] reaches ``power`` (too few runs).
    """
    _check_level("power", power)
    if not 0.0 <= baseline_rate <= 1.0:
        raise ValueError(f"the baseline rate must be in [0, 1], got {baseline_rate}")
    sizes = [
        _first_crossing(baseline_rate, 1.0 - baseline_rate, 1.0, baseline_n, candidate_n, power),
        _first_crossing(baseline_rate, baseline_rate, -1.0, baseline_n, candidate_n, power),
    ]
    found = [s for s in sizes if s is not None]
    return min(found) if found else None


def _t_sum(tasks: int, alpha: float, power: float) -> float:
    return t_quantile(1.0 - alpha / 2.0, tasks - 1) + t_quantile(power, tasks - 1)


def paired_min_detectable(spread: float, tasks: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest mean difference a paired t test over ``tasks`` tasks detects with ``power``:
    (t(1 − α/2, T − 1) + t(power, T − 1)) · spread / √T, where ``spread`` is the standard deviation of the
    per-task differences.

    Raises:
        ValueError: fewer than 2 tasks, a negative spread, ``alpha`` or ``power`` outside (0, 1).
    """
    if tasks < 2:
        raise ValueError(f"a paired t test needs at least 2 tasks, got {tasks}")
    if spread < 0.0:
        raise ValueError(f"the spread must be >= 0, got {spread}")
    _check_level("alpha", alpha)
    _check_level("power", power)
    return _t_sum(tasks, alpha, power) * spread / math.sqrt(tasks)


def runs_per_task(
    baseline_rate: float,
    delta: float,
    tasks: int,
    task_sd: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
    within_rate_variance: float | None = None,
) -> tuple[float | None, int]:
    """Runs per task and side for the paired suite comparison (module docstring's second formula).

    ``within_rate_variance``: E[p_i(1 − p_i)] over the tasks, measured (``eval power --from REPORT``); the
    within-task variance per run is then 2·E[pq] + δ(1 − 2p1) − δ² instead of p1q1 + p2q2, which assumes every
    task at p1 (the tasks' spread of rates, σ_b² = p1q1 − E[pq], is variance a larger k cannot remove).

    Returns:
        (k before rounding up, or ``None`` when no k is enough with this many tasks; the fewest tasks for
        which some k is enough).

    Raises:
        ValueError: as ``runs_per_side``, fewer than 2 tasks, or a negative ``task_sd``.
    """
    p1, p2 = baseline_rate, _check_rates(baseline_rate, delta)
    _check_level("alpha", alpha)
    _check_level("power", power)
    if tasks < 2:
        raise ValueError(f"the paired suite comparison needs at least 2 tasks, got {tasks}")
    if task_sd < 0.0:
        raise ValueError(f"the between-task standard deviation must be >= 0, got {task_sd}")
    within = p1 * (1.0 - p1) + p2 * (1.0 - p2)
    if within_rate_variance is not None:
        if not 0.0 <= within_rate_variance <= 0.25:
            raise ValueError(f"a within-task rate variance must be in [0, 0.25], got {within_rate_variance}")
        within = max(0.0, 2.0 * within_rate_variance + delta * (1.0 - 2.0 * p1) - delta**2)

    def room(count: int) -> float:
        return count * delta**2 / _t_sum(count, alpha, power) ** 2 - task_sd**2

    # t > z for every df, so the normal-quantile answer is a lower bound on the fewest tasks.
    fewest = max(2, math.ceil((_z(1.0 - alpha / 2.0) + _z(power)) ** 2 * task_sd**2 / delta**2))
    while fewest <= MAX_TASKS and room(fewest) <= 0.0:
        fewest += 1
    if tasks < fewest or room(tasks) <= 0.0:
        return None, fewest  # fewest > MAX_TASKS: more tasks than the plan considers would be needed
    return (within / room(tasks) if within > 0.0 else 1.0), fewest
