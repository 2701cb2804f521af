"""Per-task tests of a comparison: Newcombe's interval for the difference, Boschloo's exact test, and the
corrections across tasks (Holm, Benjamini-Hochberg).

Rules this module keeps (the review behind them is ``shared/notes/statistics.md`` §4.2-4.4):

- The difference is always candidate - baseline, so a positive difference is an improvement.
- Undefined is explicit: ``None`` when a side has no judged runs, never NaN. Invalid counts raise
  ``ValueError`` (a bug in the caller), as in ``alisio.core.stats.rates``.
- Boschloo's p-value is exact: the supremum over the common success rate is found on a grid refined by
  golden-section search, not sampled, and ties of the Fisher statistic count as extreme (relative tolerance
  ``_TIE``), so rounding never makes the p-value smaller.
- Adjusted p-values are in the input order, never below the raw ones, and never above 1.
- Only numpy (imported inside the functions that need it) and the standard library: no scipy at run time.
  scipy and statsmodels computed the reference values the tests check against.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from enum import StrEnum
from statistics import NormalDist
from typing import TYPE_CHECKING

from alisio.core.stats.rates import Interval, wilson_interval

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "CELL_BUDGET",
    "PValueMethod",
    "bh_adjust",
    "boschloo_p",
    "boschloo_regions",
    "both_judged",
    "check_counts",
    "difference_p",
    "holm_adjust",
    "log_choose",
    "newcombe_interval",
    "one_sided_regions",
    "pooled_z",
    "pooled_z_p",
]

_TIE = 1e-9
"""Relative tolerance under which two Fisher statistics are the same value (their float sums differ in the
last bits although the exact values are equal, e.g. for mirror-image tables)."""
_GRID = 256
"""Grid points over the common success rate before the golden-section refinement."""
_REFINE = 4
"""Local maxima of the grid refined by golden-section search."""
CELL_BUDGET = 1_000_000
"""Largest table space (n1 + 1)·(n2 + 1) for which ``difference_p`` runs Boschloo's exact test: its arrays take
about 40 bytes a cell (40 MB and well under a second here). Above it the pooled z test is used and labelled."""


class PValueMethod(StrEnum):
    """Which test gave a task's p-value."""

    BOSCHLOO = "boschloo"
    """Boschloo's exact unconditional test."""
    POOLED_Z = "pooled_z"
    """The two-sided two-proportion z test with the pooled variance (asymptotic; above ``CELL_BUDGET``)."""


def newcombe_interval(
    baseline_passes: int, baseline_n: int, candidate_passes: int, candidate_n: int
) -> Interval | None:
    """Newcombe's hybrid score 95% interval for candidate - baseline (Newcombe 1998b, method 10)::

        d = p̂c − p̂b,  (lc, uc), (lb, ub) the two 95% Wilson intervals
        low  = d − sqrt((p̂c − lc)² + (ub − p̂b)²)
        high = d + sqrt((uc − p̂c)² + (p̂b − lb)²)

    clamped to [-1, 1]. It always contains the observed difference, and when the two Wilson intervals are
    disjoint it excludes 0 on the same side (sqrt(a² + b²) <= a + b).

    Returns:
        The interval, or ``None`` when either side has no judged runs.

    Raises:
        ValueError: invalid counts (see ``alisio.core.stats.rates.wilson_interval``).
    """
    base = wilson_interval(baseline_passes, baseline_n)
    cand = wilson_interval(candidate_passes, candidate_n)
    if base is None or cand is None:
        return None
    pb = baseline_passes / baseline_n
    pc = candidate_passes / candidate_n
    diff = pc - pb
    low = diff - math.hypot(pc - cand.low, base.high - pb)
    high = diff + math.hypot(cand.high - pc, pb - base.low)
    return Interval(low=max(-1.0, min(low, diff)), high=min(1.0, max(high, diff)))


# --- Boschloo -------------------------------------------------------------------------------------------


def log_choose(n: int) -> NDArray[np.float64]:
    """log C(n, j) for j = 0..n, from one cumulative sum of logs (relative error about n·1e-16)."""
    import numpy as np

    log_fact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))))
    out: NDArray[np.float64] = log_fact[n] - log_fact - log_fact[::-1]
    return out


def _fisher_statistics(
    n1: int, n2: int
) -> tuple[NDArray[np.int64], NDArray[np.float64], tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """The (n1 + 1)×(n2 + 1) tables' totals s = a + c, their hypergeometric masses P(X1 = a | s), and each
    table's two one-sided Fisher statistics P(X1 <= a | s) and P(X1 >= a | s)."""
    import numpy as np

    total = n1 + n2
    lc1, lc2, lct = log_choose(n1), log_choose(n2), log_choose(total)
    s = np.arange(n1 + 1)[:, None] + np.arange(n2 + 1)[None, :]
    pmf = np.exp(lc1[:, None] + lc2[None, :] - lct[s])  # P(X1 = a | S = a + c) in cell (a, c)
    # Fisher's statistic of each cell is a cumulative sum along its anti-diagonal (the tables with the same s):
    # lay the cells out by (a, s), sum down the columns, and read each cell back at (a, a + c).
    rows = np.broadcast_to(np.arange(n1 + 1)[:, None], s.shape)
    by_total = np.zeros((n1 + 1, total + 1))
    by_total[rows, s] = pmf
    lower = np.cumsum(by_total, axis=0)[rows, s]
    upper = np.cumsum(by_total[::-1], axis=0)[::-1][rows, s]
    return s, pmf, (lower, upper)


def _extreme_cells(
    x1: int, n1: int, x2: int, n2: int
) -> tuple[NDArray[np.int64], NDArray[np.float64], tuple[NDArray[np.bool_], NDArray[np.bool_]]]:
    """The tables' totals and hypergeometric masses (``_fisher_statistics``), and the two masks of the tables at
    least as extreme as (x1, x2): by P(X1 <= x1 | s), then by P(X1 >= x1 | s)."""
    s, pmf, stats = _fisher_statistics(n1, n2)
    masks = tuple(stat <= stat[x1, x2] * (1.0 + _TIE) for stat in stats)
    return s, pmf, (masks[0], masks[1])


def boschloo_regions(
    baseline_n: int, candidate_n: int, alpha: float = 0.05
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Every table (a baseline passes, c candidate passes) whose two-sided Boschloo p-value is below
    ``alpha``, as two (nb + 1)×(nc + 1) masks: those rejected toward a better candidate and toward a worse one
    (``boschloo_p(a, nb, c, nc) < alpha`` exactly when either mask holds at [a, c]).

    Fast because the regions are nested: a table's one-sided p-value is the supremum of the probability of
    the tables whose Fisher statistic is at most its own, so it rises with that statistic, and the rejected
    tables are those with a statistic up to a cut found by bisection over the sorted statistics (about 20
    suprema instead of one per table). Each supremum is the very one ``boschloo_p`` computes for a table at
    the cut, so the masks agree with it table by table. Used for the exact power of a fixed k at any k.

    Raises:
        ValueError: a side without runs, or ``alpha`` outside (0, 1].
    """
    import numpy as np

    if baseline_n < 1 or candidate_n < 1:
        raise ValueError(f"both sides need runs, got {baseline_n} and {candidate_n}")
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    s, pmf, stats = _fisher_statistics(baseline_n, candidate_n)
    total = baseline_n + candidate_n
    masks = []
    for stat in stats:
        values = np.unique(stat)

        def tail(value: float, stat: NDArray[np.float64] = stat) -> float:
            m = stat <= value * (1.0 + _TIE)
            return _supremum(np.bincount(s[m], weights=pmf[m], minlength=total + 1).astype(np.float64))

        low, high = -1, len(values) - 1  # tail(values[low]) < alpha/2 (low = -1: none), tail(values[high])?
        while low < high:
            middle = (low + high + 1) // 2
            if 2.0 * tail(float(values[middle])) < alpha:
                low = middle
            else:
                high = middle - 1
        masks.append(stat <= values[low] if low >= 0 else np.zeros(stat.shape, dtype=bool))
    return masks[0], masks[1]


class _Mixture:
    """E[w_S] with S ~ Bin(N, π) as a function of π, for fixed weights w_0..w_N."""

    def __init__(self, weights: NDArray[np.float64]) -> None:
        import numpy as np

        total = len(weights) - 1
        keep = np.flatnonzero(weights > 0.0)
        self._w = weights[keep]
        self._j = keep.astype(np.float64)
        self._rest = total - self._j
        self._lc = log_choose(total)[keep]

    def __call__(self, rates: NDArray[np.float64]) -> NDArray[np.float64]:
        import numpy as np

        with np.errstate(divide="ignore", invalid="ignore"):
            log_p = np.log(rates)[:, None]
            log_q = np.log1p(-rates)[:, None]
            # 0 * log(0) is 0 here: π = 0 puts all the mass on S = 0, π = 1 on S = N.
            terms = np.where(self._j > 0, self._j * log_p, 0.0) + np.where(
                self._rest > 0, self._rest * log_q, 0.0
            )
        out: NDArray[np.float64] = np.exp(self._lc + terms) @ self._w
        return out

    def at(self, rate: float) -> float:
        import numpy as np

        return float(self(np.array([rate]))[0])


def _golden_max(f: Callable[[float], float], low: float, high: float) -> float:
    """The largest value of ``f`` seen by a golden-section search for its maximum on [low, high] (to 1e-10)."""
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    x1, x2 = high - ratio * (high - low), low + ratio * (high - low)
    f1, f2 = f(x1), f(x2)
    best = max(f1, f2)
    while high - low > 1e-10:
        if f1 < f2:
            low, x1, f1 = x1, x2, f2
            x2 = low + ratio * (high - low)
            f2 = f(x2)
        else:
            high, x2, f2 = x2, x1, f1
            x1 = high - ratio * (high - low)
            f1 = f(x1)
        best = max(best, f1, f2)
    return best


def _supremum(weights: NDArray[np.float64]) -> float:
    """sup over π in [0, 1] of E[w_S]: a grid, then golden-section search around its best local maxima."""
    import numpy as np

    if not weights.any():
        return 0.0
    mixture = _Mixture(weights)
    grid = np.linspace(0.0, 1.0, _GRID + 1)
    values = mixture(grid)
    best = float(values.max())
    inner = np.flatnonzero((values[1:-1] >= values[:-2]) & (values[1:-1] >= values[2:])) + 1
    for i in inner[np.argsort(values[inner])[::-1][:_REFINE]]:
        best = max(best, _golden_max(mixture.at, float(grid[i - 1]), float(grid[i + 1])))
    return min(1.0, best)


def boschloo_p(
    baseline_passes: int, baseline_n: int, candidate_passes: int, candidate_n: int
) -> float | None:
    """Two-sided p-value of Boschloo's exact unconditional test that both sides share one success rate.

    The statistic is the one-sided Fisher exact p-value; the one-sided p-value is its tail probability
    maximised over the common success rate π (Boschloo 1970); the two-sided p-value is twice the smaller
    one-sided p-value, at most 1 (the convention of ``scipy.stats.boschloo_exact``, where each column of
    the 2x2 table is one side). Boschloo's test is uniformly more powerful than Fisher's.

    Example: baseline 10/10, candidate 6/10 gives 0.0422 (the supremum is at π = 1/2).

    Returns:
        The p-value in (0, 1], or ``None`` when either side has no judged runs.

    Raises:
        ValueError: invalid counts.
    """
    if not both_judged(baseline_passes, baseline_n, candidate_passes, candidate_n):
        return None
    (lower, upper), _ = one_sided_regions(baseline_passes, baseline_n, candidate_passes, candidate_n)
    return min(1.0, 2.0 * min(lower, upper))


def one_sided_regions(
    baseline_passes: int, baseline_n: int, candidate_passes: int, candidate_n: int
) -> tuple[tuple[float, float], tuple[NDArray[np.int64], NDArray[np.int64]]]:
    """Boschloo's two one-sided p-values, and the size of each one-sided region per baseline pass count.

    The region toward a better candidate holds the tables at least as extreme as the observed one by the
    one-sided Fisher statistic P(X1 <= x1 | s), the other by P(X1 >= x1 | s); each p-value is the supremum
    over the common success rate π of its region's probability. With S ~ Bin(nb + nc, π), that probability
    is E[w_S], where w_s is the hypergeometric mass of the region's tables with s passes in all: given s, the
    tables are hypergeometric whatever π is. ``boschloo_p`` doubles the smaller p-value;
    ``alisio.core.stats.inverted.boschloo_interval`` inverts the same two tests, so it reads them from here.

    Returns:
        ((p toward a better candidate, p toward a worse one), (how many candidate pass counts each region
        holds for each baseline pass count 0..nb)).
    """
    import numpy as np

    s, pmf, masks = _extreme_cells(baseline_passes, baseline_n, candidate_passes, candidate_n)
    total = baseline_n + candidate_n
    better, worse = (
        _supremum(np.bincount(s[m], weights=pmf[m], minlength=total + 1).astype(np.float64)) for m in masks
    )
    return (better, worse), (masks[0].sum(axis=1), masks[1].sum(axis=1))


def pooled_z_p(
    baseline_passes: int, baseline_n: int, candidate_passes: int, candidate_n: int
) -> float | None:
    """Two-sided p-value of the two-proportion z test with the pooled variance under the null::

        z = (p̂c − p̂b) / sqrt(p̄q̄(1/nb + 1/nc)),  p̄ = (xb + xc)/(nb + nc),  p = erfc(|z|/√2)

    1 when every run passed or every run failed (no variance, no evidence). O(1) memory and time at any k.

    Returns:
        The p-value in (0, 1], or ``None`` when either side has no judged runs.

    Raises:
        ValueError: invalid counts.
    """
    if not both_judged(baseline_passes, baseline_n, candidate_passes, candidate_n):
        return None
    z = pooled_z(baseline_passes, baseline_n, candidate_passes, candidate_n)
    # erfc underflows to 0 beyond |z| ≈ 38: keep the p-value positive, as documented.
    return min(1.0, max(2.0 * NormalDist().cdf(-abs(z)), 1e-300))


def pooled_z(xb: int, nb: int, xc: int, nc: int) -> float:
    """The pooled two-proportion z statistic, 0 when every run passed or every run failed."""
    pooled = (xb + xc) / (nb + nc)
    variance = pooled * (1.0 - pooled) * (1.0 / nb + 1.0 / nc)
    return 0.0 if variance <= 0.0 else (xc / nc - xb / nb) / math.sqrt(variance)


def difference_p(
    baseline_passes: int, baseline_n: int, candidate_passes: int, candidate_n: int
) -> tuple[float, PValueMethod] | None:
    """A task's two-sided p-value of equal rates and the test that gave it: Boschloo's exact test while the
    table space (nb + 1)·(nc + 1) is at most ``CELL_BUDGET``, the pooled z test above (where the normal
    approximation is accurate: at least about 1,000 runs on a side). Never allocates more than the budget.

    Returns:
        (p-value, method), or ``None`` when either side has no judged runs.

    Raises:
        ValueError: invalid counts.
    """
    if not both_judged(baseline_passes, baseline_n, candidate_passes, candidate_n):
        return None
    if (baseline_n + 1) * (candidate_n + 1) > CELL_BUDGET:
        p = pooled_z_p(baseline_passes, baseline_n, candidate_passes, candidate_n)
        return None if p is None else (p, PValueMethod.POOLED_Z)
    p = boschloo_p(baseline_passes, baseline_n, candidate_passes, candidate_n)
    return None if p is None else (p, PValueMethod.BOSCHLOO)


def both_judged(baseline_passes: int, baseline_n: int, candidate_passes: int, candidate_n: int) -> bool:
    """Whether both sides have judged runs, once both sides' counts are checked (``check_counts``).

    Raises:
        ValueError: invalid counts, naming the side.
    """
    check_counts("baseline", baseline_passes, baseline_n)
    check_counts("candidate", candidate_passes, candidate_n)
    return baseline_n > 0 and candidate_n > 0


def check_counts(name: str, passes: object, n: object) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``passes`` and ``n`` are integers with 0 <= passes <= n."""
    for what, value in (("passes", passes), ("judged runs", n)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} {what} must be a non-negative integer, got {value!r}")
    assert isinstance(passes, int) and isinstance(n, int)
    if passes > n:
        raise ValueError(f"{name} passes ({passes}) cannot exceed judged runs ({n})")


# --- corrections across tasks ---------------------------------------------------------------------------


def _checked(p_values: Sequence[float]) -> list[float]:
    out = []
    for p in p_values:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"a p-value must be a number in [0, 1], got {p!r}")
        out.append(float(p))
    return out


def holm_adjust(p_values: Sequence[float]) -> tuple[float, ...]:
    """Holm's step-down adjusted p-values (Holm 1979), in the input order.

    Sorted ascending, p̃(i) = max over k <= i of min(1, (m − k + 1)·p(k)). Rejecting every hypothesis with
    p̃ < α keeps the family-wise error rate at α under any dependence between the tests. Example:
    (0.0422, 0.0422, 1) gives (0.1266, 0.1266, 1).

    Raises:
        ValueError: a value outside [0, 1] or not a number.
    """
    ps = _checked(p_values)
    m = len(ps)
    out = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: ps[i])):
        running = max(running, min(1.0, (m - rank) * ps[index]))
        out[index] = running
    return tuple(out)


def bh_adjust(p_values: Sequence[float]) -> tuple[float, ...]:
    """Benjamini-Hochberg adjusted p-values (Benjamini & Hochberg 1995), in the input order.

    Sorted ascending, p̃(i) = min over k >= i of min(1, m·p(k)/k). Rejecting every hypothesis with p̃ < α
    keeps the expected false discovery rate at α for independent (or positively dependent) tests; it does
    not bound the family-wise error rate.

    Raises:
        ValueError: a value outside [0, 1] or not a number.
    """
    ps = _checked(p_values)
    m = len(ps)
    out = [0.0] * m
    running = 1.0
    order = sorted(range(m), key=lambda i: ps[i])
    for rank in range(m - 1, -1, -1):
        index = order[rank]
        # max(p, ...): m·p/k is >= p exactly, but its float can round just below p when k = m.
        running = min(running, max(ps[index], min(1.0, m * ps[index] / (rank + 1))))
        out[index] = running
    return tuple(out)
