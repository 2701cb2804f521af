"""Anytime-valid sequential tests for ``eval variants --sequential``, ``eval run --sequential --baseline`` and
``eval run --until-width``: after every judged run (or pair of runs) a task may stop, and the error guarantees
hold whatever the stopping rule, the number of looks or the runs in flight.

The theorem every guarantee here rests on (Ville's inequality, 1939): if K_0 = 1, K_1, K_2, ... is a
nonnegative supermartingale under H0, then P_H0(sup_t K_t >= 1/a) <= a. So "reject H0 once K_t has reached
1/a" errs with probability at most a, for every stopping time, including "stop when it looks good" and "stop
when the budget runs out", and the running maximum of K is as valid as its last value.

The methods (the wealth processes are in ``alisio.core.stats.betting``):

- **Two arms** (``two_arm``): the pairs (baseline run j, candidate run j) give D_j = candidate − baseline in
  {−1, 0, +1}, and the rates differ by E[D] = p_cand − p_base. The e-process is a mixture of bets on D
  (Waudby-Smith and Ramdas 2024), a test martingale under E[D_j | past] = m for any joint law of the pair: the
  arms may be independent or share a seed. Two-sided: a long and a short e-process, each against 2·m/α
  (m = ``tasks``), so the direction is part of the decision. "improved": the long one against m/α, H0:
  p_cand <= p_base. "not-worse": the long one at the null E[D] = −margin against m/α, H0: p_cand <= p_base −
  margin. The interval is the confidence sequence of E[D] that the same e-processes give (running intersection).
- **Against a stored baseline** (``against_baseline``): the baseline's counts are fixed data from b i.i.d.
  Bernoulli(p_base) runs whose number was fixed in advance. Clopper-Pearson's exact bound for p_base errs with
  probability at most α/(2m) and the candidate's confidence sequence for p_cand errs (at any time) with at most
  α/(2m); by the union bound the decision (the candidate's sequence clears the baseline's bound) errs with at
  most α/m per task.
- **One arm** (``until_width``): the confidence sequence of a success rate at level 1 − α/m (both sides, each
  e-process against 2·m/α); a task stops once it is narrower than the width asked for. The Wilson interval is
  not valid under such stopping; this is.
- **Across tasks**: Bonferroni on e-values. Each task's e-process is held to m/α (per side), so the chance
  that any true-null task reaches it is at most m · α/m = α: Ville per task plus the union bound, valid under
  any dependence between tasks and any stopping of each. (A closed e-Holm procedure would need every task's
  wealth on a common clock; the per-task prefixes here have none, so it is not used.)
- **Futility**: a task also stops (inconclusive) once reaching the decision by ``max_k`` is impossible, or its
  predictive probability is below ``design.futility`` (default 0.05): the chance that the e-value is past its
  threshold at ``max_k``, the remaining outcomes drawn from the posterior predictive of the counts so far
  (Jeffreys' prior: Dirichlet-multinomial for the pairs' D, beta-binomial for one arm). Being past it at
  ``max_k`` is a lower bound of deciding by then. Futility only ever stops a test, never rejects, so it cannot
  raise an error rate; the predictive chance (not the chance at the point estimate, which stopped a real +30
  point change at 0.5 for futility a third of the time at max-k 200) keeps the power.

Rules both callers rely on: every function is a pure function of the outcomes so far (repetition order, judged
runs only; a run in flight ends the prefix), so resume recomputes the same answer. A task that stopped at some
prefix stays stopped for every longer prefix with the same start; the runs in flight when it stopped are
included in the counts and the final statistic: the final look is itself a stopping time, and "decided" uses the
running maximum of the e-process, so including them is valid (a futility or max-k stop may become "decided"
that way, never the reverse).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from alisio.core.base import Frozen
from alisio.core.stats.betting import one_arm_bounds, pair_bounds
from alisio.core.stats.sequential_kernel import (
    FUTILITY,
    MAX_K,
    MAX_STATISTIC,
    REASONS,
    Direction,
    Kind,
    Reason,
    SequentialDesign,
    SequentialSide,
    baseline_futility_probability,
    baseline_nulls,
    check_design,
    crosses,
    design_problem,
    futility_probability,
    one_arm_logs,
    pair_logs,
    rate_bounds,
    scan_pairs,
    scan_width,
    threshold,
    width_problem,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "FUTILITY",
    "MAX_K",
    "Direction",
    "Kind",
    "Reason",
    "SequentialDesign",
    "SequentialSide",
    "SequentialStop",
    "against_baseline",
    "baseline_futility_probability",
    "crosses",
    "design_problem",
    "futility_probability",
    "method_note",
    "scan_pairs",
    "scan_width",
    "threshold",
    "two_arm",
    "until_width",
    "width_problem",
]


class SequentialStop(Frozen, frozen=True, kw_only=True):
    """One task's state at a look."""

    stopped: bool
    reason: Reason | None
    """None while running."""
    direction: Direction | None
    """Set when reason is "decided"."""
    runs: int
    """Judged runs (per arm; pairs for two arms) the statistic used."""
    statistic: float
    """The running maximum of the e-value over the looks so far, its start K_0 = 1 included (so never below 1;
    the larger side's when two-sided); for ``until_width``, the width of the confidence sequence."""
    threshold: float
    """What the e-value must reach (2·m/α two-sided, m/α one-sided, 4·m/α against a baseline two-sided, 2·m/α
    one-sided); for ``until_width`` the width W it must fall below."""
    interval: tuple[float, float] | None
    """The anytime-valid confidence sequence at this look: for the difference (two arms), for the candidate's
    rate (against a baseline) or the rate (until_width); None before the first outcome."""


def _stop_look(
    looks: int,
    design: SequentialDesign,
    reached: NDArray[np.bool_],
    futile: Callable[[int], bool],
    hit: Reason,
) -> tuple[int, Reason] | None:
    """The first look t (1-based) at which the task stops, and why: ``hit`` when ``reached[t - 1]``, else max-k
    at ``max_k``, else futility; never before ``min_k``. None while it runs."""
    for t in range(design.min_k, looks + 1):
        if reached[t - 1]:
            return t, hit
        if t >= design.max_k:
            return t, "max-k"
        if futile(t):
            return t, "futility"
    return None


def _intersection(lows: NDArray[np.float64], highs: NDArray[np.float64]) -> tuple[float, float] | None:
    """The running intersection of the confidence sequence; the last look's interval if it is empty (an event
    of probability at most α: the model broke)."""
    if len(lows) == 0:
        return None
    low, high = float(lows.max()), float(highs.min())
    return (low, high) if low <= high else (float(lows[-1]), float(highs[-1]))


def _finish(
    stop: tuple[int, Reason] | None,
    decided: tuple[bool, Direction | None],
    runs: int,
    statistic: tuple[float, float],
    interval: tuple[float, float] | None,
) -> SequentialStop:
    reason: Reason | None = None if stop is None else ("decided" if decided[0] else stop[1])
    return SequentialStop(
        stopped=stop is not None,
        reason=reason,
        direction=decided[1] if reason == "decided" else None,
        runs=runs,
        statistic=statistic[0],
        threshold=statistic[1],
        interval=interval,
    )


def _crossing(
    logs: Sequence[NDArray[np.float64]], level: float, names: Sequence[Direction]
) -> tuple[NDArray[np.bool_], Direction | None, float]:
    """From each side's log e-values per look: whether any side's running maximum has reached ``level`` by each
    look (``crosses`` on the very float reported), the side that reached it first, and the largest e-value so
    far. The running maximum starts at the e-process's value before the first look, K_0 = 1 (log 0): a first
    pair against the bet leaves the statistic at 1, not at the wealth after it (0.5)."""
    import numpy as np

    cap = math.log(MAX_STATISTIC)
    running = [np.exp(np.minimum(np.maximum.accumulate(np.maximum(x, 0.0)), cap)) for x in logs]
    reached = np.logical_or.reduce([crosses(r, level) for r in running])
    first: Direction | None = None
    if reached.any():
        look = int(np.argmax(reached))
        first = names[int(np.argmax([r[look] for r in running]))]
    return reached, first, max(float(r[-1]) for r in running) if len(reached) else 1.0


def _pair_counts(
    baseline: Sequence[bool], candidate: Sequence[bool]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Cumulative counts of D = +1, 0, −1 over the pairs (baseline[j], candidate[j])."""
    import numpy as np

    pairs = min(len(baseline), len(candidate))
    d = np.asarray(candidate[:pairs], dtype=np.int64) - np.asarray(baseline[:pairs], dtype=np.int64)
    return (
        np.cumsum(d == 1).astype(np.float64),
        np.cumsum(d == 0).astype(np.float64),
        np.cumsum(d == -1).astype(np.float64),
    )


def two_arm(design: SequentialDesign, baseline: Sequence[bool], candidate: Sequence[bool]) -> SequentialStop:
    """One task of ``eval variants --sequential``: its state after the pairs (baseline[j], candidate[j]) for
    j < min(len(baseline), len(candidate)) (module docstring for the method and its guarantee). The stop is
    ``scan_pairs``' (a look after every pair); the statistic, the decision and the interval use every pair."""
    import numpy as np

    check_design(design)
    plus, zero, minus = _pair_counts(baseline, candidate)
    looks = len(plus)
    level = threshold(design)
    two_sided = design.side == "two-sided"
    names: tuple[Direction, ...] = ("improved", "regressed") if two_sided else (design.side,)  # type: ignore[assignment]
    logs = pair_logs(design, plus, zero, minus)
    reached, direction, top = _crossing(logs, level, names)
    diffs = np.asarray(candidate[:looks], dtype=np.int64) - np.asarray(baseline[:looks], dtype=np.int64)
    stop_look, code, _ = scan_pairs(design, diffs.reshape(1, looks))
    stop = (int(stop_look[0]), REASONS[int(code[0]) - 1]) if code[0] else None
    lows, highs = pair_bounds(plus, zero, minus, math.log(level), upper=two_sided)
    decided = bool(looks and reached[-1])
    return _finish(stop, (decided, direction), looks, (top, level), _intersection(lows, highs))


def _one_arm_counts(outcomes: Sequence[bool]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    import numpy as np

    x = np.asarray(outcomes, dtype=np.float64)
    passes = np.cumsum(x)
    return passes, np.arange(1.0, len(x) + 1.0) - passes


def against_baseline(
    design: SequentialDesign, base_passed: int, base_runs: int, candidate: Sequence[bool]
) -> SequentialStop:
    """One task of ``eval run --sequential --baseline REPORT``: the candidate's outcomes so far against the
    stored baseline's counts (module docstring for the method, its assumptions and its guarantee)."""
    import numpy as np

    check_design(design)
    if not 0 <= base_passed <= base_runs or base_runs < 1:
        raise ValueError(f"against_baseline: invalid baseline counts {base_passed}/{base_runs}")
    passes, fails = _one_arm_counts(candidate)
    looks = len(passes)
    level = threshold(design, "baseline")
    nulls = baseline_nulls(design, base_passed, base_runs)
    two_sided = design.side == "two-sided"
    names: tuple[Direction, ...] = ("improved", "regressed") if two_sided else (design.side,)  # type: ignore[assignment]
    logs = [one_arm_logs(passes, fails, m, long) for m, long in zip(nulls, (True, False), strict=False)]
    reached, direction, top = _crossing(logs, level, names)

    def futile(t: int) -> bool:
        p = baseline_futility_probability(design, base_passed, base_runs, t, int(passes[t - 1]))
        return p == 0.0 or p < design.futility

    stop = _stop_look(looks, design, reached, futile, "decided")
    lows, highs = one_arm_bounds(passes, fails, math.log(level))
    if not two_sided:
        highs = np.ones(looks)
    decided = bool(looks and reached[-1])
    return _finish(stop, (decided, direction), looks, (top, level), _intersection(lows, highs))


def until_width(
    alpha: float, tasks: int, width: float, max_k: int, min_k: int, outcomes: Sequence[bool]
) -> SequentialStop:
    """One task of ``eval run --until-width W``: stop once the rate's confidence sequence (level 1 − α/m,
    running intersection) is narrower than ``width``, or at ``max_k`` runs (``scan_width``, a look after every
    run). The statistic is the width at the last look, the threshold ``width``."""
    import numpy as np

    design = SequentialDesign(alpha=alpha, tasks=tasks, max_k=max_k, min_k=min_k, futility=0.0)
    looks = len(outcomes)
    stop, lows, highs = scan_width(design, width, np.asarray(outcomes, dtype=np.bool_).reshape(1, looks))
    if looks == 0:
        return _finish(None, (False, None), 0, (1.0, width), None)
    low, high = float(lows[0, -1]), float(highs[0, -1])
    if low > high:  # the intersection is empty (probability at most alpha): the last look's own interval
        passes = sum(outcomes)
        table = rate_bounds(alpha, tasks, looks)
        low, high = float(table[0][looks, passes]), float(table[1][looks, passes])
    found: tuple[int, Reason] | None = None
    if stop[0]:
        at = int(stop[0]) - 1
        found = (at + 1, "width" if highs[0, at] - lows[0, at] < width else "max-k")
    return _finish(found, (False, None), looks, (high - low, width), (low, high))


def method_note(kind: Kind, design: SequentialDesign, width: float | None = None) -> str:
    """The footnote of a report made with the sequential mode ``kind``: the method and its guarantee."""
    m, alpha = design.tasks, design.alpha
    level = threshold(design, kind if kind != "width" else "two-arm")
    tasks = f"{m} task{'s' if m != 1 else ''}"
    futility = (
        f"; a task also stops for futility when its predictive chance of being decided at {design.max_k} runs"
        f" (the remaining outcomes drawn from the posterior predictive of those so far, Jeffreys' prior) is"
        f" below {design.futility:g}, or nil; futility never decides a direction"
    )
    if kind == "two-arm":
        what = {
            "two-sided": "the two success rates differ",
            "improved": "the candidate's rate is higher",
            "not-worse": f"the candidate is at most {design.margin * 100:g} pp worse",
        }[design.side]
        return (
            f"sequential ({design.side}): per task, a betting e-process on the paired differences (candidate −"
            f" baseline, Waudby-Smith & Ramdas 2024) decides '{what}' when it reaches {level:g}; family-wise"
            f" error <= {alpha:g} across {tasks} (Bonferroni on e-values, Ville's inequality), valid under"
            f" optional stopping after any pair{futility}; intervals are anytime-valid confidence sequences"
        )
    if kind == "baseline":
        return (
            f"sequential against a stored baseline ({design.side}): the baseline's counts are fixed data"
            f" (Clopper-Pearson bound at {alpha / (2 * m):.3g}), the candidate's betting confidence sequence at"
            f" {alpha / (2 * m):.3g}; a task is decided when its e-value reaches {level:g}; family-wise error <="
            f" {alpha:g} across {tasks}, valid under optional stopping{futility}"
        )
    return (
        f"until width {width if width is not None else 0:g}: each task stops when its betting confidence sequence"
        f" for the success rate (level {1 - alpha / m:.4g}, Waudby-Smith & Ramdas 2024) is narrower; the"
        f" sequences hold for all {tasks} at once with probability >= {1 - alpha:g} under this stopping"
        " (the Wilson interval does not)"
    )
