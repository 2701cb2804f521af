"""Betting e-processes and confidence sequences on counts: the arithmetic under ``alisio.core.stats.sequential``.

Rules this module keeps:

- Every wealth process is a *mixture of bets* (Waudby-Smith and Ramdas, JRSS-B 2024, §5.6 "diversified
  Kelly"): the average over the fixed grid ``BETS`` of the products ∏_j (1 + λ_u · (X_j − m)). Each product is a
  nonnegative martingale with mean 1 when E[X_j | past] = m, so their average is one too (a test martingale),
  and Ville's inequality gives P(sup_t K_t(m) >= 1/α) <= α for every stopping rule whatever.
- The bets are a fixed grid, not fitted to the data, so each wealth is a function of the *counts* so far, not of
  their order: the same counts give the same e-value in any order (resume and in-flight runs cannot change it).
- ``long`` wealth bets that the mean is above m (λ > 0) and grows when it is; ``short`` bets below (λ < 0). The
  bet sizes scale with m so every factor stays positive for every outcome: λ = u/(m − low) long and
  −u/(high − m) short, for outcomes in [low, high] and u in (0, 1).
- Everything here is vectorised over looks (numpy arrays of counts) and works in logs, so no wealth overflows.
- Pure: numpy (imported in the functions) and the standard library only.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Floats = NDArray[np.float64]

__all__ = [
    "BETS",
    "clopper_pearson",
    "log_factorials",
    "one_arm_bounds",
    "one_arm_log_wealth",
    "pair_bounds",
    "pair_log_wealth",
]

BETS: tuple[float, ...] = tuple((g + 1) / 21 for g in range(20))
"""The fractions u of the largest safe bet that the mixture averages with equal weight (1/21 to 20/21)."""
_BISECT = 50
"""Bisection steps for the ends of a confidence sequence: 2^-50 of the range, so a midpoint never rounds onto
the range's end (where a bet size divides by zero)."""


_OUTWARD = 1e-12
"""How far Clopper-Pearson's bounds are moved outward after the bisection: far more than the rounding of the
float tail sums (about 1e-15 relative), far less than any reported digit."""


def _log_mean_exp(logs: Floats) -> Floats:
    """log of the mean of exp over the last axis, without overflow."""
    import numpy as np

    top = np.max(logs, axis=-1)
    out: Floats = top + np.log(np.mean(np.exp(logs - top[..., None]), axis=-1))
    return out


def pair_log_wealth(plus: Floats, zero: Floats, minus: Floats, m: Floats | float, long: bool) -> Floats:
    """log K(m) of the bet on paired differences D in {−1, 0, +1} with ``plus``, ``zero`` and ``minus`` counts
    of each, against the null E[D] = m (for long: E[D] <= m; for short: E[D] >= m), m in (−1, 1).

    Long (λ = u/(1 + m)): D = +1 multiplies by 1 + u(1 − m)/(1 + m), D = 0 by 1 − u·m/(1 + m), D = −1 by 1 − u.
    Short (λ = −u/(1 − m)): the mirror image. Shapes broadcast over looks; the result has the counts' shape.
    """
    import numpy as np

    u = np.asarray(BETS)
    mm = np.asarray(m, dtype=np.float64)[..., None]
    if long:
        lam = u / (1.0 + mm)
        up, flat, down = 1.0 + lam * (1.0 - mm), 1.0 - lam * mm, np.broadcast_to(1.0 - u, lam.shape)
    else:
        lam = u / (1.0 - mm)
        up, flat, down = np.broadcast_to(1.0 - u, lam.shape), 1.0 + lam * mm, 1.0 + lam * (1.0 + mm)
    logs = plus[..., None] * np.log(up) + zero[..., None] * np.log(flat) + minus[..., None] * np.log(down)
    return _log_mean_exp(logs)


def one_arm_log_wealth(passes: Floats, fails: Floats, m: Floats | float, long: bool) -> Floats:
    """log K(m) of the bet on outcomes X in {0, 1} against the null E[X] = m, m in (0, 1).

    Long (λ = u/m): a pass multiplies by 1 + u(1 − m)/m, a fail by 1 − u. Short (λ = −u/(1 − m)): a pass by
    1 − u, a fail by 1 + u·m/(1 − m).
    """
    import numpy as np

    u = np.asarray(BETS)
    mm = np.asarray(m, dtype=np.float64)[..., None]
    if long:
        win, lose = 1.0 + u * (1.0 - mm) / mm, np.broadcast_to(1.0 - u, (mm * u).shape)
    else:
        win, lose = np.broadcast_to(1.0 - u, (mm * u).shape), 1.0 + u * mm / (1.0 - mm)
    return _log_mean_exp(passes[..., None] * np.log(win) + fails[..., None] * np.log(lose))


def _bisect_lower(excluded: object, low: float, high: float, looks: int) -> Floats:
    """Per look, the smallest m in [low, high] not excluded, where ``excluded(m)`` (vectorised) is true below
    some point and false above it; rounded outward (to the last excluded m, or ``low`` when none is)."""
    import numpy as np

    lo = np.full(looks, low)
    hi = np.full(looks, high)
    for _ in range(_BISECT):
        mid = (lo + hi) / 2.0
        out = excluded(mid)  # type: ignore[operator]
        lo = np.where(out, mid, lo)
        hi = np.where(out, hi, mid)
    return lo


def pair_bounds(
    plus: Floats, zero: Floats, minus: Floats, log_threshold: float, upper: bool = True
) -> tuple[Floats, Floats]:
    """Per look, the confidence sequence {m : K_long(m) < t and K_short(m) < t} for E[D], t = exp(log_threshold):
    (lower ends, upper ends). K_long is nonincreasing in m and K_short nondecreasing, so the set is an interval.
    With ``upper=False`` only the lower end is computed and the upper ends are 1 (a one-sided sequence)."""
    import numpy as np

    looks = len(plus)
    low = _bisect_lower(
        lambda m: pair_log_wealth(plus, zero, minus, m, True) >= log_threshold, -1.0, 1.0, looks
    )
    if not upper:
        return low, np.ones(looks)
    high = -_bisect_lower(
        lambda m: pair_log_wealth(plus, zero, minus, -m, False) >= log_threshold, -1.0, 1.0, looks
    )
    return low, high


def one_arm_bounds(passes: Floats, fails: Floats, log_threshold: float) -> tuple[Floats, Floats]:
    """Per look, the confidence sequence {m : K_long(m) < t and K_short(m) < t} for E[X]: (lower, upper) ends."""
    looks = len(passes)
    low = _bisect_lower(
        lambda m: one_arm_log_wealth(passes, fails, m, True) >= log_threshold, 0.0, 1.0, looks
    )
    high = 1.0 - _bisect_lower(
        lambda m: one_arm_log_wealth(passes, fails, 1.0 - m, False) >= log_threshold, 0.0, 1.0, looks
    )
    return low, high


def log_factorials(n: int) -> Floats:
    """log j! for j = 0..n (one cumulative sum of logs)."""
    import numpy as np

    out: Floats = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))))
    return out


def _binomial_cdf(x: int, n: int, p: float) -> float:
    """P(Bin(n, p) <= x), summed in logs (math.lgamma), for 0 <= x < n and 0 < p < 1."""
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [
        math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * log_p + (n - j) * log_q
        for j in range(x + 1)
    ]
    top = max(terms)
    return math.exp(top) * math.fsum(math.exp(t - top) for t in terms)


def clopper_pearson(passes: int, n: int, tail: float) -> tuple[float, float]:
    """Clopper and Pearson's exact bounds for a binomial rate, each with error at most ``tail``:
    low with P(Bin(n, low) >= passes) = tail (0 when passes = 0), high with P(Bin(n, high) <= passes) = tail
    (1 when passes = n). Found by bisection on the float tail, then moved ``_OUTWARD`` outward, so the exact tail
    at the returned bound is at most ``tail`` despite the float sums' rounding."""
    if not (0 <= passes <= n and n >= 1 and 0.0 < tail < 1.0):
        raise ValueError(f"clopper_pearson: invalid passes={passes}, n={n}, tail={tail}")
    high = 1.0
    if passes < n:
        lo, hi = passes / n, 1.0  # P(X <= passes) falls in p: find where it crosses tail
        for _ in range(_BISECT):
            mid = (lo + hi) / 2.0
            lo, hi = (mid, hi) if _binomial_cdf(passes, n, mid) > tail else (lo, mid)
        high = min(1.0, hi + _OUTWARD)
    low = 0.0
    if passes > 0:
        lo, hi = 0.0, passes / n  # P(X >= passes) = 1 - P(X <= passes - 1) rises in p
        for _ in range(_BISECT):
            mid = (lo + hi) / 2.0
            lo, hi = (lo, mid) if 1.0 - _binomial_cdf(passes - 1, n, mid) > tail else (mid, hi)
        low = max(0.0, lo - _OUTWARD)
    return low, high
