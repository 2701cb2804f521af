"""The 95% intervals for candidate − baseline that invert the per-task tests, so that the interval a row
shows and the p-value that decides can never disagree (``eval compare --verdict exact``).

- ``boschloo_interval``: exact unconditional, inverting Boschloo's test (Fisher's one-sided statistic as the
  ordering, two one-sided α/2 tests: the tail method of Chan and Zhang 1999), each tail's supremum over the
  line pc − pb = Δ taken on a grid refined by zooms;
- ``score_interval``: the Farrington-Manning score interval, inverting the pooled z test (above
  ``alisio.core.stats.exact.CELL_BUDGET``, where ``difference_p`` uses that test);
- ``difference_interval``: the one whose test ``difference_p`` uses on the same counts.

Each end is found by regula falsi in log scale, from a bracket that never crosses 0: the side of 0 is read
from the test's own value at 0, so "excludes 0" and "p < α" agree by construction, not up to rounding. Pure:
numpy (imported inside the functions) and the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist
from typing import TYPE_CHECKING

from alisio.core.stats.exact import (
    CELL_BUDGET,
    PValueMethod,
    both_judged,
    log_choose,
    one_sided_regions,
    pooled_z,
)
from alisio.core.stats.rates import Interval

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["boschloo_interval", "difference_interval", "score_interval"]

_LINE_GRID = 128
"""Grid points along a line pc − pb = Δ before the zooms (the function is a smooth polynomial in pb)."""
_LINE_PEAKS = 2
"""Local maxima of that grid refined by the zooms."""
_ZOOMS = 4
"""Zoom levels of the search for the supremum along a line: each narrows the bracket around the best local
maxima 16 times (from 1/64 of the line to about 2.4e-7 of it)."""
_DELTA_TOL = 1e-8
"""Width of the last bracket of the search for an interval end (a difference in [-1, 1])."""


def _judged(
    baseline_passes: int, baseline_n: int, candidate_passes: int, candidate_n: int, alpha: float
) -> bool:
    """Whether both sides have judged runs, once the counts and α are checked.

    Raises:
        ValueError: invalid counts, or α outside (0, 1).
    """
    judged = both_judged(baseline_passes, baseline_n, candidate_passes, candidate_n)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    return judged


def _binomial_pmf(n: int, rates: NDArray[np.float64], log_choose: NDArray[np.float64]) -> NDArray[np.float64]:
    """P(X = j) for X ~ Bin(n, rate), one row per rate, j = 0..n (0·log 0 taken as 0); ``log_choose`` is
    ``log_choose(n)``."""
    import numpy as np

    j = np.arange(n + 1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p, log_q = np.log(rates)[:, None], np.log1p(-rates)[:, None]
        terms = np.where(j > 0, j * log_p, 0.0) + np.where(n - j > 0, (n - j) * log_q, 0.0)
    out: NDArray[np.float64] = np.exp(log_choose + terms)
    return out


class _Tail:
    """The probability of one one-sided Boschloo region when the rates are (pb, pb + Δ), for a vector of pb.

    The region toward a better candidate holds, in each baseline row a, the candidate counts
    c >= nc + 1 − count[a]; the one toward a worse candidate the counts c < count[a]. Fisher's one-sided
    statistic is monotone in both counts (Barnard's convexity), so each row of a region is such a run.
    """

    def __init__(self, nb: int, nc: int, count: NDArray[np.int64], better: bool) -> None:
        self._nb, self._nc, self._better = nb, nc, better
        self._column = nc + 1 - count if better else count
        self._log_choose = log_choose(nb), log_choose(nc)

    def __call__(self, delta: float, pb: NDArray[np.float64]) -> NDArray[np.float64]:
        import numpy as np

        pc = np.clip(pb + delta, 0.0, 1.0)
        cand = _binomial_pmf(self._nc, pc, self._log_choose[1])
        zero = np.zeros((len(pb), 1))
        if self._better:  # P(Xc >= k), summed from the small tail
            cum = np.concatenate((np.cumsum(cand[:, ::-1], axis=1)[:, ::-1], zero), axis=1)
        else:  # P(Xc < k)
            cum = np.concatenate((zero, np.cumsum(cand, axis=1)), axis=1)
        base = _binomial_pmf(self._nb, pb, self._log_choose[0])
        out: NDArray[np.float64] = (base * cum[:, self._column]).sum(axis=1)
        return out

    def supremum(self, delta: float) -> float:
        """sup over pb of the region's probability on the line pc − pb = Δ: a grid, then zooms around its
        best local maxima."""
        import numpy as np

        lo, hi = max(0.0, -delta), min(1.0, 1.0 - delta)
        grid = np.linspace(lo, hi, _LINE_GRID + 1)
        values = self(delta, grid)
        best = float(values.max())
        inner = np.flatnonzero((values[1:-1] >= values[:-2]) & (values[1:-1] >= values[2:])) + 1
        left = grid[inner[np.argsort(values[inner])[::-1][:_LINE_PEAKS]] - 1]
        width = np.full(len(left), 2.0 * (hi - lo) / _LINE_GRID)
        for _ in range(_ZOOMS):
            points = left[:, None] + width[:, None] * np.linspace(0.0, 1.0, 33)[None, :]
            values = self(delta, np.clip(points, lo, hi).ravel()).reshape(points.shape)
            best = max(best, float(values.max(initial=0.0)))
            at = np.clip(values.argmax(axis=1), 1, 31)
            left, width = points[np.arange(len(left)), at - 1], width / 16.0
        return min(1.0, best)


def _first_accepted(
    tail: Callable[[float], float],
    at_zero: float,
    level: float,
    tol: float = _DELTA_TOL,
    guess: float | None = None,
) -> float:
    """inf{Δ in [-1, 1] : tail(Δ) >= level} for a tail probability non-decreasing in Δ with tail(1) = 1.

    ``at_zero`` is tail(0) as the test itself computed it, so the end is above 0 exactly when the test
    rejects at 0: the bracket never crosses 0. ``guess`` (an approximate end) only narrows the first
    bracket, by steps from it that double until the sign changes. It returns the bracket's accepted end
    (the conservative side) unless that is 0 itself while the test rejects there.
    """

    def g(delta: float) -> float:  # log-scale, much closer to linear in Δ than the probability itself
        return math.log(max(tail(delta), 1e-300)) - math.log(level)

    if at_zero >= level:
        lo, g_lo, hi, g_hi = -1.0, g(-1.0), 0.0, math.log(max(at_zero, 1e-300)) - math.log(level)
        if g_lo >= 0.0:
            return -1.0
    else:
        lo, g_lo, hi, g_hi = 0.0, math.log(max(at_zero, 1e-300)) - math.log(level), 1.0, -math.log(level)
    step = 0.005
    while guess is not None and lo + tol < guess < hi - tol:
        if (value := g(guess)) >= 0.0:
            hi, g_hi, guess = guess, value, guess - step
        else:
            lo, g_lo, guess = guess, value, guess + step
        step *= 2.0
        if g_lo < 0.0 <= g_hi and hi - lo <= step:  # bracketed within the last two steps
            break
    side, since, start = 0, 0, hi - lo
    while hi - lo > tol:
        # The Illinois step, kept tol/2 inside the bracket so that the far end moves too; a plain
        # bisection when four steps have not halved the bracket.
        mid = 0.5 * (lo + hi) if since >= 4 else hi - g_hi * (hi - lo) / (g_hi - g_lo)
        mid = min(max(mid, lo + tol / 2.0), hi - tol / 2.0)
        if (value := g(mid)) >= 0.0:
            hi, g_hi, g_lo, side = mid, value, (g_lo / 2.0 if side == 1 else g_lo), 1
        else:
            lo, g_lo, g_hi, side = mid, value, (g_hi / 2.0 if side == -1 else g_hi), -1
        since = 0 if hi - lo <= start / 2.0 else since + 1
        start = hi - lo if since == 0 else start
    return lo if (lo > 0.0 or at_zero >= level) else hi


def boschloo_interval(
    baseline_passes: int, baseline_n: int, candidate_passes: int, candidate_n: int, alpha: float = 0.05
) -> Interval | None:
    """The exact unconditional 1 − α interval for candidate − baseline that inverts Boschloo's test.

    Each end inverts one one-sided test at level α/2 (the tail method of Chan and Zhang 1999): Δ0 is
    outside the interval when the region of tables at least as extreme as the observed one (by Fisher's
    one-sided statistic, the ordering of Boschloo's test, whatever Δ0) has probability below α/2 for every
    pair of rates with pc − pb = Δ0 (the supremum over the line). At Δ0 = 0 that line is the common rate of
    ``boschloo_p``, so by construction the interval excludes 0 exactly when ``boschloo_p < α`` (twice the
    smaller one-sided supremum): both read the same two suprema from ``one_sided_regions``. Coverage is
    at least 1 − α.

    Example: baseline 0/5, candidate 3/5 gives [−0.0298, 0.8302] with p = 0.0618 (Newcombe's interval,
    [0.0299, 0.8825], excludes 0).

    Returns:
        The interval, or ``None`` when either side has no judged runs.

    Raises:
        ValueError: invalid counts, or α outside (0, 1).
    """
    if not _judged(baseline_passes, baseline_n, candidate_passes, candidate_n, alpha):
        return None
    at_zero, (better, worse) = one_sided_regions(baseline_passes, baseline_n, candidate_passes, candidate_n)
    up = _Tail(baseline_n, candidate_n, better, better=True)
    down = _Tail(baseline_n, candidate_n, worse, better=False)
    near = score_interval(baseline_passes, baseline_n, candidate_passes, candidate_n, alpha)
    assert near is not None
    low = _first_accepted(up.supremum, at_zero[0], alpha / 2.0, guess=near.low)
    high = -_first_accepted(lambda d: down.supremum(-d), at_zero[1], alpha / 2.0, guess=-near.high)
    return Interval(low=low, high=high)


def _constrained_rates(xb: int, nb: int, xc: int, nc: int, delta: float) -> tuple[float, float]:
    """The maximum-likelihood (pb, pc) under pc − pb = Δ: the log-likelihood is concave in pb on the line,
    so its derivative is found by bisection (to the last bit), or an end of the line when it keeps a sign."""
    lo, hi = max(0.0, -delta), min(1.0, 1.0 - delta)

    def ratio(x: int, p: float) -> float:  # x / p, with 0 / 0 taken as 0
        return 0.0 if x == 0 else (math.inf if p <= 0.0 else x / p)

    def slope(pb: float) -> float:
        pc = pb + delta
        return ratio(xb, pb) - ratio(nb - xb, 1.0 - pb) + ratio(xc, pc) - ratio(nc - xc, 1.0 - pc)

    a, b = lo, hi
    for _ in range(200):
        mid = 0.5 * (a + b)
        if not a < mid < b:
            break
        if slope(mid) > 0.0:
            a = mid
        else:
            b = mid
    pb = 0.5 * (a + b)
    return pb, pb + delta


def _score_z(xb: int, nb: int, xc: int, nc: int, delta: float) -> float:
    """The score statistic of pc − pb = Δ (Farrington and Manning 1990): the difference minus Δ over its
    standard error at the constrained maximum-likelihood rates; ±inf when that error is 0 and they differ."""
    pb, pc = _constrained_rates(xb, nb, xc, nc, delta)
    num = xc / nc - xb / nb - delta
    se = math.sqrt(max(pb * (1.0 - pb) / nb + pc * (1.0 - pc) / nc, 0.0))
    return num / se if se > 0.0 else (0.0 if num == 0.0 else math.copysign(math.inf, num))


def score_interval(
    baseline_passes: int, baseline_n: int, candidate_passes: int, candidate_n: int, alpha: float = 0.05
) -> Interval | None:
    """The 1 − α interval for candidate − baseline that inverts the pooled z test: the score interval of
    Farrington and Manning (1990), {Δ : |z(Δ)| <= z(1 − α/2)}, each end by one one-sided test at α/2.

    At Δ = 0 the constrained rates are the pooled rate and z(0) is ``pooled_z_p``'s statistic, so the
    interval excludes 0 exactly when ``pooled_z_p < α``: the side of 0 is read from that same statistic.
    Asymptotic; O(1) memory at any k, for the tables above ``CELL_BUDGET``.

    Returns:
        The interval, or ``None`` when either side has no judged runs.

    Raises:
        ValueError: invalid counts, or α outside (0, 1).
    """
    if not _judged(baseline_passes, baseline_n, candidate_passes, candidate_n, alpha):
        return None
    counts = (baseline_passes, baseline_n, candidate_passes, candidate_n)
    z0 = pooled_z(*counts)
    normal = NormalDist()
    low = _first_accepted(lambda d: normal.cdf(-_score_z(*counts, d)), normal.cdf(-z0), alpha / 2.0, 1e-12)
    high = -_first_accepted(lambda d: normal.cdf(_score_z(*counts, -d)), normal.cdf(z0), alpha / 2.0, 1e-12)
    return Interval(low=low, high=high)


def difference_interval(
    baseline_passes: int, baseline_n: int, candidate_passes: int, candidate_n: int
) -> tuple[Interval, PValueMethod] | None:
    """The 95% interval for candidate − baseline that inverts the test ``difference_p`` uses on the same
    counts: ``boschloo_interval`` within ``CELL_BUDGET``, ``score_interval`` (inverting the pooled z test)
    above. Either way it excludes 0 exactly when ``difference_p`` is below 0.05.

    Returns:
        (interval, the method of the test it inverts), or ``None`` when either side has no judged runs.

    Raises:
        ValueError: invalid counts.
    """
    if not both_judged(baseline_passes, baseline_n, candidate_passes, candidate_n):
        return None
    if (baseline_n + 1) * (candidate_n + 1) > CELL_BUDGET:
        interval = score_interval(baseline_passes, baseline_n, candidate_passes, candidate_n)
        return None if interval is None else (interval, PValueMethod.POOLED_Z)
    interval = boschloo_interval(baseline_passes, baseline_n, candidate_passes, candidate_n)
    return None if interval is None else (interval, PValueMethod.BOSCHLOO)
