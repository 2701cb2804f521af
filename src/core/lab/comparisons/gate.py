"""The gate of ``alisio eval compare --fail-on regressed|inconclusive``: does a comparison hit it?

Rules this module keeps:

- ``--fail-on regressed`` is hit by a task whose verdict is regressed; ``--fail-on inconclusive`` by a task
  whose verdict is regressed or inconclusive (at or worse than the given one). Nothing else hits it.
- The tasks without a verdict to gate (low power, not comparable, one side only, and every task of a replay
  comparison, which is changed or unchanged) neither hit nor pass the gate: ``GateResult.ungated`` counts
  them by outcome, so the command can say that they were not gated instead of passing them silently.
- ``--fail-on worse-than:M`` (``noninferiority_gate``) is hit by each task of the non-inferiority family
  not shown within M (the p-values are ``alisio.core.stats.noninferiority``'s).
- A hit is exit code 4 (``alisio.core.exit_codes.ExitCode.GATE``); the gate is never used otherwise.
"""

from __future__ import annotations

from collections import Counter
from enum import StrEnum

from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.lab.comparisons.compare import Comparison, Outcome
from alisio.core.lab.reports.report import Count
from alisio.core.stats.exact import bh_adjust, holm_adjust
from alisio.core.stats.noninferiority import noninferiority_p
from alisio.core.stats.verdict import ALPHA, Adjustment

__all__ = [
    "OUTCOME_LABEL",
    "PREFIX",
    "FailOn",
    "GateResult",
    "describe_gate",
    "gate",
    "noninferiority_gate",
    "parse_margin",
]

PREFIX = "worse-than:"
OUTCOME_LABEL = {
    Outcome.IMPROVED: "improved",
    Outcome.REGRESSED: "regressed",
    Outcome.INCONCLUSIVE: "inconclusive",
    Outcome.LOW_POWER: "low power",
    Outcome.NOT_COMPARABLE: "not comparable",
    Outcome.CHANGED: "changed",
    Outcome.UNCHANGED: "unchanged",
    Outcome.BASELINE_ONLY: "baseline only",
    Outcome.CANDIDATE_ONLY: "candidate only",
}
"""How each outcome is written (by the gates, and by every view of a comparison)."""
_FAMILY = (Outcome.IMPROVED, Outcome.REGRESSED, Outcome.INCONCLUSIVE)


class FailOn(StrEnum):
    """The verdict that fails the gate, with every worse one."""

    REGRESSED = "regressed"
    INCONCLUSIVE = "inconclusive"


_HITS = {
    FailOn.REGRESSED: frozenset({Outcome.REGRESSED}),
    FailOn.INCONCLUSIVE: frozenset({Outcome.REGRESSED, Outcome.INCONCLUSIVE}),
}
_VERDICTS = frozenset({Outcome.IMPROVED, Outcome.INCONCLUSIVE, Outcome.REGRESSED})
"""The outcomes a gate can judge; the others carry no verdict."""


class GateResult(Frozen, frozen=True, kw_only=True):
    """What the gate found."""

    fail_on: str
    """The gate as given to ``--fail-on`` (``regressed``, ``inconclusive``, ``worse-than:0.1``)."""
    hits: tuple[tuple[str, str], ...]
    """The tasks that hit the gate and why (their verdict, or the non-inferiority p-value), in task order."""
    gated: int
    """Tasks with a verdict (improved, inconclusive or regressed)."""
    ungated: tuple[Count, ...]
    """Tasks without a verdict, counted by outcome (sorted by outcome)."""

    @property
    def hit(self) -> bool:
        return bool(self.hits)


def gate(comparison: Comparison, fail_on: FailOn) -> GateResult:
    """The tasks of ``comparison`` whose verdict is at or worse than ``fail_on``, and the tasks not gated."""
    hits = tuple(
        (t.task_id, OUTCOME_LABEL[t.outcome]) for t in comparison.tasks if t.outcome in _HITS[fail_on]
    )
    ungated = Counter(str(t.outcome) for t in comparison.tasks if t.outcome not in _VERDICTS)
    return GateResult(
        fail_on=str(fail_on),
        hits=hits,
        gated=sum(t.outcome in _VERDICTS for t in comparison.tasks),
        ungated=tuple(Count(name=name, count=n) for name, n in sorted(ungated.items())),
    )


def describe_gate(result: GateResult) -> list[str]:
    """One line saying whether the gate was hit (and by which tasks), and one more when tasks were not gated.

    ``--fail-on regressed: hit by 1 of 7 tasks (edit-respects-hash regressed): exit 4``
    """
    flag = f"--fail-on {result.fail_on}"
    tasks = f"{result.gated} task{'' if result.gated == 1 else 's'} with a verdict"
    if result.hit:
        shown = ", ".join(f"{task} {why}" for task, why in result.hits[:10])
        more = f" and {len(result.hits) - 10} more" if len(result.hits) > 10 else ""
        lines = [f"{flag}: hit by {len(result.hits)} of {tasks} ({shown}{more}): exit 4"]
    else:
        lines = [f"{flag}: not hit (0 of {tasks})"]
    if result.ungated:
        counts = ", ".join(f"{OUTCOME_LABEL[Outcome(c.name)]} {c.count}" for c in result.ungated)
        total = sum(c.count for c in result.ungated)
        noun = "task has" if total == 1 else "tasks have"
        lines.append(
            f"{flag}: {total} {noun} no verdict and {'was' if total == 1 else 'were'} not gated ({counts})"
        )
    return lines


def parse_margin(text: str) -> Result[float, str]:
    """``worse-than:0.1`` -> 0.1; the margin must be a number in (0, 1)."""
    value = text.removeprefix(PREFIX)
    try:
        margin = float(value)
    except ValueError:
        return Failure(f"--fail-on {text}: expected worse-than:M with M a number in (0, 1), got {value!r}")
    if not 0.0 < margin < 1.0:
        return Failure(f"--fail-on {text}: the margin must be in (0, 1) (0.1 is 10 points), got {value}")
    return Success(margin)


def noninferiority_gate(comparison: Comparison, margin: float) -> GateResult:
    """The gate ``--fail-on worse-than:margin``: hit by each task of the family not shown non-inferior."""
    family, raw = [], []
    for t in comparison.tasks:
        if t.outcome in _FAMILY and t.baseline is not None and t.candidate is not None:
            b, c = t.baseline, t.candidate
            result = noninferiority_p(b.passes, b.judged, c.passes, c.judged, margin)
            if result is not None:
                family.append(t.task_id)
                raw.append(result[0])
    adjust = holm_adjust if comparison.adjustment is Adjustment.HOLM else bh_adjust
    adjusted = adjust(raw)
    name = "Holm" if comparison.adjustment is Adjustment.HOLM else "BH"
    hits = tuple(
        (task, f"not shown within {margin * 100:g} pp ({name}-adjusted p = {p:.4f})")
        for task, p in zip(family, adjusted, strict=True)
        if not p < ALPHA
    )
    if not family:  # nothing could be shown non-inferior: a green gate would claim what the data do not show
        hits = (("every task", f"has too few judged runs to be shown within {margin * 100:g} pp"),)
    ungated: dict[str, int] = {}
    for t in comparison.tasks:
        if t.task_id not in family:
            ungated[str(t.outcome)] = ungated.get(str(t.outcome), 0) + 1
    return GateResult(
        fail_on=f"{PREFIX}{margin:g}",
        hits=hits,
        gated=len(family),
        ungated=tuple(Count(name=k, count=v) for k, v in sorted(ungated.items())),
    )
