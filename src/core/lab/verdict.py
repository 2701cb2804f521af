"""The per-task verdict of a comparison: improved, regressed, inconclusive, low power or not comparable.

The rule (spec "inconclusive and low power") is checked in this order, and the first that applies wins:

1. ``not_comparable``: the two sides ran in different modes, or either side has errored runs
   (infrastructure failures are excluded from every rate, so a side with errors is not a clean sample);
2. ``low_power``: either side has fewer than ``MIN_JUDGED`` (5) judged runs; errored runs are not judged
   runs and never count toward the 5;
3. the interval test on the two 95% Wilson intervals: ``improved`` when the candidate's lies entirely above
   the baseline's, ``regressed`` when entirely below, otherwise ``inconclusive`` (touching counts as overlap).

The interval test is a conservative screen, not a significance test: with no true change a false
"improved" happens at most about 0.3% of the time, and with 5 runs per side only 0/5 -> 5/5 can be
"improved". "inconclusive" means "no difference detectable with this many runs", not "no change".
"""

from __future__ import annotations

import enum

from alisio.core.base import Frozen
from alisio.core.lab.stats import Interval, wilson_interval

__all__ = [
    "MIN_JUDGED",
    "Side",
    "TaskVerdict",
    "Verdict",
    "compare_intervals",
    "format_interval",
    "task_verdict",
]

MIN_JUDGED: int = 5
"""Fewest judged runs a side needs before a comparison claims a direction."""


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
    """One human sentence, for example ``4 judged runs on the baseline (< 5)``."""


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
    return f"{_per_side(judged, 'judged', short)} (< {MIN_JUDGED})"


def task_verdict(baseline: Side, candidate: Side) -> TaskVerdict:
    """The verdict for one task: not comparable, then low power, then the Wilson interval test.

    Args:
        baseline: the reference arm's counts for the task.
        candidate: the arm under evaluation.

    Returns:
        ``TaskVerdict`` with the verdict and a one-sentence reason, e.g. ``modes differ: live vs replay``,
        ``2 errored runs on the candidate``, ``4 judged runs on the baseline (< 5)``,
        ``intervals overlap: [23.1%, 88.2%] vs [37.6%, 96.4%]`` (baseline first) or
        ``candidate interval [56.6%, 100.0%] lies above baseline [0.0%, 43.4%]``.
    """
    not_comparable = _not_comparable_reason(baseline, candidate)
    if not_comparable is not None:
        return TaskVerdict(verdict=Verdict.NOT_COMPARABLE, reason=not_comparable)
    low_power = _low_power_reason(baseline, candidate)
    if low_power is not None:
        return TaskVerdict(verdict=Verdict.LOW_POWER, reason=low_power)
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
