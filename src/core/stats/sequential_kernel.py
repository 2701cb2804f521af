"""The decisions under ``alisio.core.stats.sequential``: the design, its thresholds, the futility chances and the
vectorised scan over looks that both the CLI's per-task calls and ``bench/bench_sequential.py`` run.

The methods and their guarantees are in ``alisio.core.stats.sequential``'s docstring; this module holds the parts
that are shared between a single task's prefix and many simulated tasks at once, so the simulation runs the
very code the CLI does.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Literal, overload

from alisio.core.base import Frozen
from alisio.core.stats.betting import (
    clopper_pearson,
    log_factorials,
    one_arm_bounds,
    one_arm_log_wealth,
    pair_log_wealth,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "FUTILITY",
    "MAX_K",
    "MAX_STATISTIC",
    "REASONS",
    "Direction",
    "Kind",
    "Reason",
    "SequentialDesign",
    "SequentialSide",
    "baseline_futility_probability",
    "baseline_nulls",
    "check_design",
    "crosses",
    "design_problem",
    "futility_probability",
    "one_arm_logs",
    "pair_logs",
    "rate_bounds",
    "scan_pairs",
    "scan_width",
    "threshold",
    "width_problem",
]

SequentialSide = Literal["two-sided", "improved", "not-worse"]
Reason = Literal["decided", "futility", "max-k", "width"]
Direction = Literal["improved", "regressed", "not-worse"]
Kind = Literal["two-arm", "baseline", "width"]

MAX_K = 500
"""Largest ``max_k``: the futility tables are (max_k + 1)² cells, and a look costs O((max_k − t)²)."""
FUTILITY = 0.05
"""Default futility level: stop when the predictive chance of being decided at ``max_k`` (``futility_probability``:
the remaining outcomes drawn from the posterior predictive of those so far, not fixed at the current estimate)
is below it."""
MAX_STATISTIC = 1e300
"""E-values are reported capped here (a baseline bound at or below the margin makes the test certain)."""


class SequentialDesign(Frozen, frozen=True, kw_only=True):
    """The plan of a sequential comparison (module docstring)."""

    alpha: float = 0.05
    """Family-wise error across all ``tasks`` of the command."""
    tasks: int
    """m, the number of tasks tested together (Bonferroni on their e-values)."""
    max_k: int = 50
    """Runs per task and arm, at most."""
    min_k: int = 5
    """No stop before this many judged runs (pairs) per arm."""
    side: SequentialSide = "two-sided"
    margin: float = 0.0
    """For "not-worse" (``--fail-on worse-than:M``): H0 is p_cand <= p_base − margin."""
    futility: float = FUTILITY
    """Stop (inconclusive) when the chance of deciding by ``max_k`` is below this; 0 stops only when impossible."""


def design_problem(design: SequentialDesign) -> str | None:
    """The first thing wrong with ``design`` as a one-line message, or None when it is valid."""
    problems = (
        (not 0.0 < design.alpha < 1.0, f"alpha must be in (0, 1), got {design.alpha}"),
        (design.tasks < 1, f"tasks must be at least 1, got {design.tasks}"),
        (design.min_k < 1, f"--min-k must be at least 1, got {design.min_k}"),
        (design.max_k > MAX_K, f"--max-k must be at most {MAX_K}, got {design.max_k}"),
        (design.max_k < design.min_k, f"--max-k ({design.max_k}) must be at least --min-k ({design.min_k})"),
        (not 0.0 <= design.margin < 1.0, f"the margin must be in [0, 1), got {design.margin}"),
        (not 0.0 <= design.futility < 1.0, f"the futility level must be in [0, 1), got {design.futility}"),
    )
    return next((text for bad, text in problems if bad), None)


def width_problem(width: float) -> str | None:
    """What is wrong with an ``--until-width`` value as a one-line message, or None when it is valid."""
    return (
        None if 0.0 < width <= 1.0 else f"--until-width must be in (0, 1] (0.2 is ±10 points), got {width:g}"
    )


def check_design(design: SequentialDesign) -> None:
    if (problem := design_problem(design)) is not None:
        raise ValueError(f"SequentialDesign: {problem}")


def threshold(design: SequentialDesign, kind: Kind = "two-arm") -> float:
    """What one e-process of a task must reach: m/α, doubled when two-sided (α/2 per direction), doubled again
    against a baseline (α/2 of it is spent on the baseline's exact bound)."""
    factor = (2.0 if design.side == "two-sided" else 1.0) * (2.0 if kind == "baseline" else 1.0)
    return factor * design.tasks / design.alpha


@overload
def crosses(statistic: float, level: float) -> bool: ...
@overload
def crosses(statistic: NDArray[np.float64], level: float) -> NDArray[np.bool_]: ...
def crosses(statistic: float | NDArray[np.float64], level: float) -> bool | NDArray[np.bool_]:
    """True when an e-value decides: ``statistic >= level`` (Ville's bound holds with equality included);
    elementwise for an array of e-values."""
    return statistic >= level


@functools.lru_cache(maxsize=64)
def _pair_region(design: SequentialDesign) -> tuple[NDArray[np.bool_], ...]:
    """Per side, whether the e-value at ``max_k`` pairs with (plus, minus) counts [a, b] (zero = max_k − a − b)
    is past the threshold (False where a + b > max_k)."""
    import numpy as np

    k = design.max_k
    a, b = np.meshgrid(np.arange(k + 1.0), np.arange(k + 1.0), indexing="ij")
    valid = a + b <= k
    log_level = math.log(threshold(design))
    m0 = -design.margin if design.side == "not-worse" else 0.0
    out = []
    for long in (True, False) if design.side == "two-sided" else (True,):
        table = (pair_log_wealth(a, np.where(valid, k - a - b, 0.0), b, m0, long) >= log_level) & valid
        table.setflags(write=False)
        out.append(table)
    return tuple(out)


@functools.lru_cache(maxsize=1 << 20)
def futility_probability(design: SequentialDesign, looks: int, plus: int, zero: int, minus: int) -> float:
    """After ``looks`` pairs with these counts of D = +1, 0, −1: the predictive chance that the e-value is past
    its threshold at ``max_k``: the remaining pairs' counts are Dirichlet-multinomial, from a Dirichlet(count +
    1/2) posterior on the chances of D = +1, 0, −1 (Jeffreys' prior). Exactly 0 when no continuation reaches
    the threshold (all remaining pairs +1 for the long side, −1 for the short)."""
    import numpy as np

    regions = _pair_region(design)
    rest = design.max_k - looks
    if not (regions[0][plus + rest, minus] or (len(regions) > 1 and regions[1][plus, minus + rest])):
        return 0.0
    lf = log_factorials(rest)
    # Dirichlet-multinomial: log pmf of (up, down, flat = rest − up − down) after a Dirichlet(counts + 1/2)
    # posterior is lf[rest] − g(S, rest) + h_up[up] + h_down[down] + h_flat[flat], h_x[n] = g(x, n) − lf[n],
    # g(x, n) = log Γ(x + n) − log Γ(x) = Σ_{i < n} log(x + i).
    h_up, h_down, h_flat = (_rising(x + 0.5, rest) - lf for x in (plus, minus, zero))
    total = float(_rising(looks + 1.5, rest)[-1])
    log_pmf = lf[rest] - total + h_up[:, None] + h_down[None, :] + h_flat[_flat_index(rest)]
    window = (slice(plus, plus + rest + 1), slice(minus, minus + rest + 1))
    hit = regions[0][window] if len(regions) == 1 else regions[0][window] | regions[1][window]
    hit = hit & _flat_valid(rest)
    return float(np.exp(log_pmf[hit]).sum())


def _rising(x: float, n: int) -> NDArray[np.float64]:
    """log Γ(x + j) − log Γ(x) for j = 0..n."""
    import numpy as np

    out: NDArray[np.float64] = np.concatenate(([0.0], np.cumsum(np.log(x + np.arange(n, dtype=np.float64)))))
    return out


@functools.lru_cache(maxsize=8)
def _flat_index(rest: int) -> NDArray[np.int64]:
    """rest − up − down over the (rest + 1)² grid of (up, down), clipped at 0 (see ``_flat_valid``)."""
    import numpy as np

    j = np.arange(rest + 1)
    out: NDArray[np.int64] = np.maximum(rest - j[:, None] - j[None, :], 0)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=8)
def _flat_valid(rest: int) -> NDArray[np.bool_]:
    """up + down <= rest over the (rest + 1)² grid."""
    import numpy as np

    j = np.arange(rest + 1)
    out = j[:, None] + j[None, :] <= rest
    out.setflags(write=False)
    return out


def baseline_nulls(design: SequentialDesign, base_passed: int, base_runs: int) -> tuple[float, ...]:
    """The candidate's null rates: (upper bound of p_base [− margin],) one-sided, (upper, lower) two-sided; the
    bounds are Clopper-Pearson's at α/(2m) (split between its two ends when two-sided)."""
    spend = design.alpha / (2.0 * design.tasks)
    if design.side == "two-sided":
        low, high = clopper_pearson(base_passed, base_runs, spend / 2.0)
        return high, low
    high = clopper_pearson(base_passed, base_runs, spend)[1]
    return (high - design.margin,) if design.side == "not-worse" else (high,)


def one_arm_logs(
    passes: NDArray[np.float64], fails: NDArray[np.float64], m: float, long: bool
) -> NDArray[np.float64]:
    """log wealth against the null rate m; +inf for a long bet at m <= 0 and a short one at m >= 1 (a null
    outside [0, 1] is false for sure), 0 (no evidence) for a long bet at m >= 1 or a short one at m <= 0."""
    import numpy as np

    if (long and m <= 0.0) or (not long and m >= 1.0):
        return np.full(len(passes), math.inf)
    if (long and m >= 1.0) or (not long and m <= 0.0):
        return np.zeros(len(passes))
    return one_arm_log_wealth(passes, fails, m, long)


@functools.lru_cache(maxsize=256)
def _baseline_region(
    design: SequentialDesign, base_passed: int, base_runs: int
) -> tuple[NDArray[np.bool_], ...]:
    """Per side, whether the e-value after ``max_k`` candidate runs with s passes is past the threshold."""
    import numpy as np

    k = design.max_k
    passes = np.arange(k + 1.0)
    log_level = math.log(threshold(design, "baseline"))
    out = []
    for m, long in zip(baseline_nulls(design, base_passed, base_runs), (True, False), strict=False):
        table = one_arm_logs(passes, k - passes, m, long) >= log_level
        table.setflags(write=False)
        out.append(table)
    return tuple(out)


@functools.lru_cache(maxsize=1 << 16)
def baseline_futility_probability(
    design: SequentialDesign, base_passed: int, base_runs: int, looks: int, passes: int
) -> float:
    """After ``looks`` candidate runs with ``passes``: the predictive chance that the e-value is past its
    threshold at ``max_k`` (the remaining passes beta-binomial, from a Beta(passes + 1/2, fails + 1/2)
    posterior); exactly 0 when no continuation reaches it (all pass for the long side, all fail for the short)."""
    import numpy as np

    regions = _baseline_region(design, base_passed, base_runs)
    rest = design.max_k - looks
    if not (regions[0][passes + rest] or (len(regions) > 1 and regions[1][passes])):
        return 0.0
    lf = log_factorials(rest)
    # beta-binomial: C(rest, j)·B(a + j, b + rest − j)/B(a, b), a = passes + 1/2, b = fails + 1/2
    ups, downs = _rising(passes + 0.5, rest), _rising(looks - passes + 0.5, rest)
    log_pmf = lf[rest] - lf - lf[::-1] + ups + downs[::-1] - _rising(looks + 1.0, rest)[-1]
    hit = regions[0][passes : passes + rest + 1]
    if len(regions) > 1:
        hit = hit | regions[1][passes : passes + rest + 1]
    return float(np.exp(log_pmf[hit]).sum())


def _null(design: SequentialDesign) -> float:
    """The two-arm null mean of D: −margin for "not-worse", else 0."""
    return -design.margin if design.side == "not-worse" else 0.0


def _sides(design: SequentialDesign) -> tuple[bool, ...]:
    """The e-processes of a test: long and short when two-sided, else long only."""
    return (True, False) if design.side == "two-sided" else (True,)


@functools.lru_cache(maxsize=64)
def _wealth_table(design: SequentialDesign) -> tuple[NDArray[np.float64], ...]:
    """Per side, the log e-value at the null 0 after a pairs with D = +1 and b with D = −1, a, b <= max_k
    (a pair with D = 0 multiplies every bet by exactly 1 there, so the wealth is a function of (a, b))."""
    import numpy as np

    a, b = np.meshgrid(np.arange(design.max_k + 1.0), np.arange(design.max_k + 1.0), indexing="ij")
    out = tuple(pair_log_wealth(a, np.zeros_like(a), b, 0.0, long) for long in _sides(design))
    for table in out:
        table.setflags(write=False)
    return out


def pair_logs(
    design: SequentialDesign, plus: NDArray[np.float64], zero: NDArray[np.float64], minus: NDArray[np.float64]
) -> list[NDArray[np.float64]]:
    """Per side of the design's test, its log e-value at the counts given (any shape): read from a table at
    the null 0 while the counts are within ``max_k``, computed otherwise. ``two_arm`` and ``scan_pairs`` both
    read them here, so the CLI and the simulation see the very same floats."""
    import numpy as np

    if _null(design) == 0.0 and (plus.size == 0 or max(plus.max(), minus.max()) <= design.max_k):
        a, b = plus.astype(np.int64), minus.astype(np.int64)
        return [table[a, b] for table in _wealth_table(design)]
    return [pair_log_wealth(plus, zero, minus, _null(design), long) for long in _sides(design)]


REASONS: tuple[Reason, ...] = ("decided", "futility", "max-k", "width")
"""The reason codes of a scan: code i + 1 is ``REASONS[i]``; 0 is still running."""


def _futile(design: SequentialDesign, looks: int, counts: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Per column of ``counts`` (plus, zero, minus after ``looks`` pairs): whether the task stops for futility
    (each distinct state's chance computed once)."""
    import numpy as np

    if counts.shape[1] == 1:
        states, inverse = counts.T.astype(np.int64), np.zeros(1, dtype=np.int64)
    else:
        states, inverse = np.unique(counts.T.astype(np.int64), axis=0, return_inverse=True)
    chances = np.array([futility_probability(design, looks, int(a), int(z), int(b)) for a, z, b in states])
    futile: NDArray[np.bool_] = (chances == 0.0) | (chances < design.futility)
    return futile[inverse.ravel()]


def _first_decided(
    design: SequentialDesign, diffs: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """The counts of D = +1, 0, −1 after each look (3, rows, looks), and per row the first look >= ``min_k`` at
    which the running maximum of an e-value has reached the threshold (looks + 1 when none has) and the side
    that had (0 long, 1 short; −1 none)."""
    import numpy as np

    paths, looks = diffs.shape
    counts = np.stack([np.cumsum(diffs == v, axis=1, dtype=np.float64) for v in (1, 0, -1)])
    cap = math.log(MAX_STATISTIC)
    values = np.stack(
        [
            np.exp(np.minimum(np.maximum.accumulate(np.maximum(x, 0.0), axis=1), cap))
            for x in pair_logs(design, *counts)
        ]
    )
    hit = crosses(values, threshold(design))
    eligible: NDArray[np.bool_] = np.logical_or.reduce(hit, axis=0)
    eligible[:, : design.min_k - 1] = False
    first = np.where(eligible.any(axis=1), np.argmax(eligible, axis=1) + 1, looks + 1)
    side = np.full(paths, -1, dtype=np.int64)
    rows = np.flatnonzero(first <= looks)
    if rows.size:
        at = values[:, rows, first[rows] - 1]
        side[rows] = np.argmax(np.where(hit[:, rows, first[rows] - 1], at, -1.0), axis=0)
    return counts, first, side


def scan_pairs(
    design: SequentialDesign, diffs: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Looking after every pair, as the CLI does, for each row of ``diffs`` (one task's paired differences
    candidate − baseline in {−1, 0, +1}, in repetition order): the look at which it stops (0 while running),
    its reason code (``REASONS[code − 1]``; 0 while running) and its decided side (0 the long e-process:
    improved or not-worse; 1 the short one: regressed; −1 when not decided). At each look from ``min_k`` on, in
    this order: decided, max-k at ``max_k``, futility."""
    import numpy as np

    check_design(design)
    paths, looks = diffs.shape
    if looks == 0:
        nothing = np.zeros(paths, dtype=np.int64)
        return nothing, nothing.copy(), np.full(paths, -1, dtype=np.int64)
    counts, first, side = _first_decided(design, diffs)
    stop, reason = np.zeros(paths, dtype=np.int64), np.zeros(paths, dtype=np.int64)
    active = np.arange(paths)
    for look in range(design.min_k, min(looks, design.max_k - 1) + 1):
        active = active[first[active] > look]
        if active.size == 0:
            break
        futile = _futile(design, look, counts[:, active, look - 1])
        stop[active[futile]], reason[active[futile]] = look, 2
        active = active[~futile]
    decided = (reason == 0) & (first <= min(looks, design.max_k))
    stop[decided], reason[decided] = first[decided], 1
    if looks >= design.max_k:
        capped = reason == 0
        stop[capped], reason[capped] = design.max_k, 3
    return stop, reason, np.where(reason == 1, side, -1)


@functools.lru_cache(maxsize=1 << 12)
def _rate_row(alpha: float, tasks: int, looks: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The one-arm confidence set after ``looks`` runs with s = 0..looks passes: (lower ends, upper ends).
    Computed one look at a time, so a table of any size holds the very same floats."""
    import numpy as np

    passes = np.arange(looks + 1.0)
    lows, highs = one_arm_bounds(passes, looks - passes, math.log(2.0 * tasks / alpha))
    lows.setflags(write=False)
    highs.setflags(write=False)
    return lows, highs


def rate_bounds(alpha: float, tasks: int, looks: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The one-arm confidence set for a rate at level 1 − α/m (both e-processes against 2·m/α) after t runs
    with s passes, for every t <= ``looks``: (lower ends, upper ends), each indexed [t, s] (s > t unused)."""
    import numpy as np

    lows, highs = np.zeros((looks + 1, looks + 1)), np.ones((looks + 1, looks + 1))
    for t in range(looks + 1):
        lows[t, : t + 1], highs[t, : t + 1] = _rate_row(alpha, tasks, t)
    return lows, highs


def scan_width(
    design: SequentialDesign, width: float, outcomes: NDArray[np.bool_]
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """Looking after every run, for each row of ``outcomes`` (one task's judged runs in repetition order): the
    look at which ``--until-width`` stops it (0 while running: narrower than ``width`` from ``min_k`` on, or
    ``max_k`` reached), and the running intersection of its confidence sequence at every look (low, high)."""
    import numpy as np

    check_design(design)
    if (problem := width_problem(width)) is not None:
        raise ValueError(f"until_width: {problem}")
    paths, looks = outcomes.shape
    if looks == 0:
        return np.zeros(paths, dtype=np.int64), np.zeros((paths, 0)), np.zeros((paths, 0))
    table_low, table_high = rate_bounds(design.alpha, design.tasks, looks)
    t = np.arange(1, looks + 1)
    passes = np.cumsum(outcomes, axis=1)
    low = np.maximum.accumulate(table_low[t, passes], axis=1)
    high = np.minimum.accumulate(table_high[t, passes], axis=1)
    ends = ((high - low < width) | (t >= design.max_k)) & (t >= design.min_k)
    stop = np.where(ends.any(axis=1), np.argmax(ends, axis=1) + 1, 0)
    return stop, low, high
