"""The per-task verdict of a comparison: improved, regressed, inconclusive, low power or not comparable.

The rule (spec "inconclusive and low power") is checked in this order, and the first that applies wins:

1. ``not_comparable``: the two sides ran in different modes, or either side has errored runs
   (infrastructure failures are excluded from every rate, so a side with errors is not a clean sample);
2. ``low_power``: either side has fewer than ``MIN_JUDGED`` (5) judged runs; errored runs are not judged
   runs and never count toward the 5;
3. the rule chosen for the comparison (``VerdictRule``):

   - ``disjoint`` (the default, the spec's rule): the two 95% Wilson intervals. ``improved`` when the
     candidate's lies entirely above the baseline's, ``regressed`` when entirely below, otherwise
     ``inconclusive`` (touching counts as overlap);
   - ``exact``: the task's Boschloo exact p-value, adjusted across the tasks of the comparison (Holm by
     default, family-wise 5%; Benjamini-Hochberg as an option, false discovery rate 5%). ``improved`` or
     ``regressed`` when the adjusted p-value is below 0.05, the direction from the difference
     (``exact_verdict``), otherwise ``inconclusive``.

The interval test is a conservative screen, not a significance test. Its false-positive rate, computed
exactly by summing binomial probabilities over every outcome (maximised over the common true rate p):

- equal runs per side, 5 to 200: a false "improved" at most 0.40% of the time (0.79% counting both
  directions; the worst is 21 runs per side at p = 0.5), about 1/6 to 1/3 of what a 5% test allows;
- unequal runs per side, it is not conservative everywhere: 1.16% at 58 baseline vs 5 candidate runs
  (p = 0.07), and up to 3.4% at 200 vs 5 runs with p near 0.012 (or near 0.988 for "regressed"), above
  the 2.5% per direction of a two-sided 5% test.

With equal runs it needs about 1.65 times the runs of a 5% test for the same power (0.5 -> 0.8 at 80%
power: 64 vs 39 runs per side), and with 5 runs per side only 0/5 -> 5/5 can be "improved".
"inconclusive" means "no difference detectable with this many runs", not "no change".
"""

from __future__ import annotations

import enum

from alisio.core.base import Frozen
from alisio.core.stats.rates import Interval, wilson_interval

__all__ = [
    "ALPHA",
    "MIN_JUDGED",
    "Adjustment",
    "Side",
    "TaskVerdict",
    "Verdict",
    "VerdictRule",
    "compare_intervals",
    "exact_verdict",
    "format_interval",
    "format_p",
    "rule_description",
    "task_gate",
    "task_verdict",
]

MIN_JUDGED: int = 5
"""Fewest judged runs a side needs before a comparison claims a direction."""
ALPHA: float = 0.05
"""Level of the ``exact`` rule: an adjusted p-value below it gives a direction."""


class VerdictRule(enum.StrEnum):
    """Which test turns a comparable task into improved / regressed / inconclusive."""

    DISJOINT = "disjoint"
    """Disjoint 95% Wilson intervals (the spec's rule, the default)."""
    EXACT = "exact"
    """The adjusted Boschloo exact p-value below ``ALPHA``."""


class Adjustment(enum.StrEnum):
    """How the per-task p-values are adjusted across the tasks of a comparison."""

    HOLM = "holm"
    """Holm's step-down: family-wise error rate (the default)."""
    BH = "bh"
    """Benjamini-Hochberg: false discovery rate."""


def rule_description(rule: VerdictRule, adjustment: Adjustment = Adjustment.HOLM) -> str:
    """The rule in words, as comparison.md and compare --json state it."""
    if rule is VerdictRule.DISJOINT:
        return "disjoint 95% Wilson intervals (the default)"
    if adjustment is Adjustment.HOLM:
        return "Holm-adjusted Boschloo exact test, family-wise 5%"
    return "Benjamini-Hochberg-adjusted Boschloo exact test, false discovery rate 5%"


class Verdict(enum.StrEnum):
    """What a comparison can say about one task."""

    IMPROVED = "improved"
    REGRESSED = "regressed"
    INCONCLUSIVE = "inconclusive"
    LOW_POWER = "low_power"
    NOT_COMPARABLE = "not_comparable"


class Side(Frozen, frozen=True, kw_only=True):
    """One arm's counts for a task: judged runs (pass, fail, budget_exceeded), passes, errored runs apart."""

    judged: int
    """Runs judged pass, fail or budget_exceeded (errored runs excluded)."""
    passes: int
    """Judged runs that passed."""
    errored: int
    """Runs that ended error (infrastructure failures), not part of ``judged``."""
    mode: str
    """The run mode, for example ``live`` or ``replay``."""

    def __post_init__(self) -> None:
        for name, value in (("judged", self.judged), ("passes", self.passes), ("errored", self.errored)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        if self.passes > self.judged:
            raise ValueError(f"passes ({self.passes}) cannot exceed judged runs ({self.judged})")


class TaskVerdict(Frozen, frozen=True, kw_only=True):
    """A verdict and the short sentence that explains it."""

    verdict: Verdict
    reason: str
    """One human sentence, for example ``4 judged runs on the baseline (fewer than 5)``."""


def compare_intervals(baseline: Interval, candidate: Interval) -> Verdict:
    """The interval test alone: disjoint intervals give a direction, any overlap gives ``INCONCLUSIVE``.

    ``IMPROVED`` iff ``candidate.low > baseline.high``; ``REGRESSED`` iff ``candidate.high < baseline.low``;
    intervals that touch (``candidate.low == baseline.high``) overlap, so they are ``INCONCLUSIVE``.
    """
    if candidate.low > baseline.high:
        return Verdict.IMPROVED
    if candidate.high < baseline.low:
        return Verdict.REGRESSED
    return Verdict.INCONCLUSIVE


def format_interval(interval: Interval) -> str:
    """``[23.1%, 88.2%]``: both bounds as percentages with one decimal."""
    return f"[{interval.low * 100:.1f}%, {interval.high * 100:.1f}%]"


def format_p(p: float) -> str:
    """A p-value with four decimals (``0.0422``), or two significant digits below 0.0001 (``6.9e-08``)."""
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def _runs(count: int, what: str) -> str:
    return f"{count} {what} run{'' if count == 1 else 's'}"


def _per_side(counts: tuple[int, int], what: str, flagged: tuple[bool, bool]) -> str:
    """``2 errored runs on the candidate``, or ``2 errored runs on the baseline and 1 on the candidate``."""
    parts = [
        (count, name)
        for count, name, hit in zip(counts, ("baseline", "candidate"), flagged, strict=True)
        if hit
    ]
    (first_count, first_name), *rest = parts
    text = f"{_runs(first_count, what)} on the {first_name}"
    for count, name in rest:
        text += f" and {count} on the {name}"
    return text


def _not_comparable_reason(baseline: Side, candidate: Side) -> str | None:
    reasons: list[str] = []
    if baseline.mode != candidate.mode:
        reasons.append(f"modes differ: {baseline.mode} vs {candidate.mode}")
    errored = (baseline.errored, candidate.errored)
    if any(errored):
        reasons.append(_per_side(errored, "errored", (errored[0] > 0, errored[1] > 0)))
    return "; ".join(reasons) if reasons else None


def _low_power_reason(baseline: Side, candidate: Side) -> str | None:
    judged = (baseline.judged, candidate.judged)
    short = (judged[0] < MIN_JUDGED, judged[1] < MIN_JUDGED)
    if not any(short):
        return None
    return f"{_per_side(judged, 'judged', short)} (fewer than {MIN_JUDGED})"


def task_gate(baseline: Side, candidate: Side) -> TaskVerdict | None:
    """The checks every rule shares: ``not_comparable``, then ``low_power``; ``None`` when both pass."""
    not_comparable = _not_comparable_reason(baseline, candidate)
    if not_comparable is not None:
        return TaskVerdict(verdict=Verdict.NOT_COMPARABLE, reason=not_comparable)
    low_power = _low_power_reason(baseline, candidate)
    if low_power is not None:
        return TaskVerdict(verdict=Verdict.LOW_POWER, reason=low_power)
    return None


def exact_verdict(
    difference: float, p_adjusted: float, adjustment: Adjustment = Adjustment.HOLM
) -> TaskVerdict:
    """The ``exact`` rule for a task that passed ``task_gate``: a direction when ``p_adjusted < ALPHA``.

    Args:
        difference: candidate rate − baseline rate (gives the direction).
        p_adjusted: the task's Boschloo p-value adjusted across the comparison's tasks.
        adjustment: which adjustment produced ``p_adjusted`` (named in the reason).

    Returns:
        ``improved`` / ``regressed`` when ``p_adjusted < ALPHA`` and the difference is not 0 (it cannot be
        0 then: equal rates give p = 1), else ``inconclusive``; the reason names the adjusted p-value.
    """
    name = "Holm" if adjustment is Adjustment.HOLM else "BH"
    shown = f"{name}-adjusted Boschloo p = {format_p(p_adjusted)}"
    if p_adjusted < ALPHA and difference > 0:
        return TaskVerdict(verdict=Verdict.IMPROVED, reason=f"{shown} < 0.05, candidate higher")
    if p_adjusted < ALPHA and difference < 0:
        return TaskVerdict(verdict=Verdict.REGRESSED, reason=f"{shown} < 0.05, candidate lower")
    return TaskVerdict(verdict=Verdict.INCONCLUSIVE, reason=f"{shown} (not below 0.05)")


def task_verdict(baseline: Side, candidate: Side) -> TaskVerdict:
    """The verdict for one task: not comparable, then low power, then the Wilson interval test.

    Args:
        baseline: the reference arm's counts for the task.
        candidate: the arm under evaluation.

    Returns:
        ``TaskVerdict`` with the verdict and a one-sentence reason, e.g. ``modes differ: live vs replay``,
        ``2 errored runs on the candidate``, ``4 judged runs on the baseline (fewer than 5)``,
        ``intervals overlap: [23.1%, 88.2%] vs [37.6%, 96.4%]`` (baseline first) or
        ``candidate interval [56.6%, 100.0%] lies above baseline [0.0%, 43.4%]``.
    """
    gated = task_gate(baseline, candidate)
    if gated is not None:
        return gated
    base = wilson_interval(baseline.passes, baseline.judged)
    cand = wilson_interval(candidate.passes, candidate.judged)
    # Both sides have >= MIN_JUDGED >= 1 judged runs here, so both intervals exist.
    assert base is not None and cand is not None
    verdict = compare_intervals(base, cand)
    b, c = format_interval(base), format_interval(cand)
    if verdict is Verdict.IMPROVED:
        reason = f"candidate interval {c} lies above baseline {b}"
    elif verdict is Verdict.REGRESSED:
        reason = f"candidate interval {c} lies below baseline {b}"
    else:
        reason = f"intervals overlap: {b} vs {c}"
    return TaskVerdict(verdict=verdict, reason=reason)
