"""Compare two reports of the same suite: a verdict per task, deltas, warnings and the limits footnote.

Rules this module keeps (the spec's "inconclusive and low power"):

- Different suiteId or suiteVersion is refused (``Failure(IncompatibleReports)``, exit 3). The same
  suiteVersion with a different suite content hash is a warning: someone changed a fixture or a verifier
  without bumping suiteVersion.
- Per task the verdict is not comparable > low power > the comparison's ``VerdictRule``: disjoint Wilson
  intervals (the default, ``alisio.core.stats.verdict.task_verdict``) or the adjusted Boschloo p-value
  (``exact``). Both reports in replay: each task is changed or unchanged (its status counts differ or not),
  no intervals and no tests.
- Every live task judged on both sides carries its difference with Newcombe's interval (and under ``exact``
  the one that inverts the test), Boschloo's p-value and its minimum detectable change; the p-values of the
  tasks that can get a verdict (comparable, at least 5 judged runs per side: the family) are adjusted across
  that family (Holm or Benjamini-Hochberg).
- The suite difference is paired by task (``alisio.core.stats.paired``), over the tasks judged on both sides;
  each side's suite rate has its t interval (``alisio.core.stats.rates.suite_rate``).
- Token and cost deltas are not comparable when the compaction settings differ; cost is compared only when
  both reports used the same rates. Measured and estimated deltas stay apart.
- Every comparison carries the limits footnote, and "inconclusive" means no difference detectable with this
  many runs, not no change.
"""

from __future__ import annotations

from collections import Counter
from enum import StrEnum

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.errors import IncompatibleReports
from alisio.core.lab.comparisons.compare_warnings import (
    condition_warnings,
    interrupted_warnings,
    sequential_warnings,
    task_set_warning,
)
from alisio.core.lab.reports.report import AnswerSource, Conditions, Count, Report, TaskReport
from alisio.core.stats.exact import PValueMethod, bh_adjust, difference_p, holm_adjust, newcombe_interval
from alisio.core.stats.inverted import difference_interval
from alisio.core.stats.paired import PairedDifference, paired_difference
from alisio.core.stats.power import min_detectable_difference
from alisio.core.stats.rates import ClusteredMean, Interval, suite_rate
from alisio.core.stats.verdict import (
    ALPHA,
    Adjustment,
    Side,
    VerdictRule,
    exact_verdict,
    rule_description,
    task_verdict,
)

__all__ = [
    "COMPARISON_SCHEMA_VERSION",
    "Comparison",
    "Delta",
    "DifferenceTest",
    "Outcome",
    "SideCounts",
    "SummaryComparison",
    "TaskComparison",
    "compare_reports",
    "limits_footnote",
]

COMPARISON_SCHEMA_VERSION = 1


class Outcome(StrEnum):
    """A task's outcome in a comparison: a verdict (live), changed/unchanged (replay), or one side only."""

    IMPROVED = "improved"
    REGRESSED = "regressed"
    INCONCLUSIVE = "inconclusive"
    LOW_POWER = "low_power"
    NOT_COMPARABLE = "not_comparable"
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    BASELINE_ONLY = "baseline_only"
    CANDIDATE_ONLY = "candidate_only"


class SideCounts(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One side of a task: its counts, rate and interval as the report has them."""

    judged: int
    passes: int
    fails: int
    budget_exceeded: int
    errored: int
    success_rate: float | None = None
    interval: Interval | None = None
    context_used: int | None = None
    """Judged runs that used the side's context (``None``: the side had none)."""


class Delta(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """A figure on both sides and candidate - baseline; ``note`` says why the delta is absent."""

    baseline: float | None = None
    candidate: float | None = None
    delta: float | None = None
    note: str | None = None
    """E.g. "not comparable: compaction settings differ", "not compared: different rates", "n/a"."""


class DifferenceTest(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One task's candidate − baseline difference with its interval, exact test and power."""

    estimate: float
    """Candidate success rate − baseline success rate."""
    interval: Interval
    """Newcombe's hybrid score 95% interval of the difference (Newcombe 1998, method 10)."""
    p_value: float
    """Two-sided p-value of equal rates: Boschloo's exact test, or the pooled z test above the cell budget
    (``p_method``)."""
    p_method: PValueMethod = PValueMethod.BOSCHLOO
    """Which test gave ``p_value``."""
    interval_agrees: bool = True
    """Whether Newcombe's interval and the test say the same: the interval excludes 0 exactly when
    ``p_value < 0.05``. When they disagree the test decides (under ``--verdict exact``) and the row says so."""
    exact_interval: Interval | None = None
    """Under ``--verdict exact``: the 95% interval inverting ``p_method``'s test (excludes 0 iff p < 0.05)."""
    p_adjusted: float | None = None
    """``p_value`` adjusted across the tasks that can get a verdict (the comparison's ``adjustment``);
    absent for a task outside that family (low power, not comparable)."""
    min_detectable: float | None = None
    """Smallest change from the baseline rate, up or down, that a two-sided 5% test on these runs detects
    with 80% power; absent when no change within [0, 1] does."""


class TaskComparison(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One task of the union of both reports' task ids."""

    task_id: str
    outcome: Outcome
    reason: str
    baseline: SideCounts | None = None
    candidate: SideCounts | None = None
    success_rate: Delta | None = None
    tokens_per_success: Delta | None = None
    wall_ms_median: Delta | None = None
    cached_input_ratio: Delta | None = None
    cost_per_success_usd: Delta | None = None
    """Estimated, kept apart from the measured deltas."""
    difference: DifferenceTest | None = None
    """The exact test of the task (live, judged runs on both sides)."""


class SummaryComparison(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """Suite-level deltas (descriptive; no suite-level verdict is claimed) and the outcome counts."""

    outcomes: tuple[Count, ...]
    success_rate: Delta
    """Mean of per-task success rates on each side, over the tasks judged on both sides (``tasksCompared``)."""
    baseline_stderr: float | None = None
    candidate_stderr: float | None = None
    baseline_rate: ClusteredMean | None = None
    """The baseline's suite rate over the compared tasks, with its 95% interval (t, or pooled Wilson when
    every task has the same rate)."""
    candidate_rate: ClusteredMean | None = None
    paired: PairedDifference | None = None
    """The suite difference paired by task over the compared tasks (live only)."""
    tasks_tested: int = 0
    """The family of the adjusted p-values: tasks with at least 5 judged runs per side and no errored run."""
    cost_per_success_usd: Delta | None = None
    """Estimated cost per success of each arm: total cost over the arm's successes."""
    tasks_compared: int = 0
    """Tasks in the suite success rate: present in both reports with judged runs on both sides. A task on
    one side only, or without judged runs on a side, would make the two means average different tasks."""
    tokens_per_success: Delta
    wall_ms_median: Delta
    cached_input_ratio: Delta
    cost_usd: Delta
    """Total estimated cost of each arm (estimated, apart from the measured deltas)."""
    errored: tuple[int, int]
    """Errored runs excluded on each side (baseline, candidate)."""


class Comparison(Frozen, frozen=True, kw_only=True):
    """comparison.json: both conditions, warnings, per-task outcomes, the summary and the limits."""

    schema_version: int = COMPARISON_SCHEMA_VERSION
    baseline: Conditions
    candidate: Conditions
    replay: bool
    verdict_rule: VerdictRule = VerdictRule.DISJOINT
    """Which test made the improved / regressed / inconclusive verdicts."""
    adjustment: Adjustment = Adjustment.HOLM
    """How the per-task p-values are adjusted across tasks (and, with the exact rule, decided)."""
    verdicts: str = rule_description(VerdictRule.DISJOINT)
    """The verdict rule in words."""
    warnings: tuple[str, ...]
    tasks: tuple[TaskComparison, ...]
    summary: SummaryComparison
    limits: tuple[str, ...]


COMPACTION_DIFFERS = "not comparable: compaction settings differ"
RATES_DIFFER = "not compared: different rates"
NO_RATES = "not compared: no rates on one side"
NO_RATES_AT_ALL = "not estimated: no rates given"


def limits_footnote(
    replay: bool,
    errored: tuple[int, int],
    rule: VerdictRule = VerdictRule.DISJOINT,
    adjustment: Adjustment = Adjustment.HOLM,
) -> tuple[str, ...]:
    """The spec's footnote of limits, one sentence each, for the verdict rule used."""
    excluded = (
        f"Errored runs are excluded from every rate ({errored[0]} in the baseline, {errored[1]} in the "
        "candidate)"
    )
    if replay:
        return (
            "Replay measures the harness, not the model: the model answers come from a recording, so "
            "changed/unchanged says nothing about model quality.",
            "Each task is compared by its observed status counts; there are no intervals in replay.",
            f"{excluded}; a change in the number of errored runs makes a task changed.",
        )
    name = "Holm" if adjustment is Adjustment.HOLM else "Benjamini-Hochberg"
    verdicts: tuple[str, ...]
    if rule is VerdictRule.DISJOINT:
        verdicts = (
            "This is a conservative screen, not a significance test: a verdict needs at least 5 judged runs on "
            "each side and disjoint 95% Wilson intervals (touching counts as overlap).",
            f"There is no correction for the number of tasks compared in the verdicts; the {name}-adjusted "
            "p-values have one.",
            "The chance of at least one false verdict grows with the tasks (6.3% for 10 unchanged tasks at 20 "
            "runs per side, 17.6% for 30): from 10 tasks up prefer --verdict exact.",
        )
    else:
        error = "family-wise error" if adjustment is Adjustment.HOLM else "false discovery rate"
        verdicts = (
            f"Verdicts come from Boschloo's exact test with {name}-adjusted p-values below 0.05 ({error} 5% "
            "over the tasks with at least 5 judged runs on each side and no errored run).",
        )
    return (
        *verdicts,
        '"inconclusive" means no difference detectable with this many runs, not "no change".',
        "Repetitions are assumed independent; only the suite difference is paired, by task.",
        f"{excluded}; a task with errored runs is not comparable.",
    )


def _delta(b: float | None, c: float | None, blocked: str | None = None) -> Delta:
    if blocked is not None:
        return Delta(baseline=b, candidate=c, note=blocked)
    if b is None or c is None:
        return Delta(baseline=b, candidate=c, note="n/a")
    return Delta(baseline=b, candidate=c, delta=c - b)


def _cost_block(b: Conditions, c: Conditions) -> str | None:
    if b.compaction != c.compaction:
        return COMPACTION_DIFFERS
    if b.rates is None and c.rates is None:
        return NO_RATES_AT_ALL
    if b.rates is None or c.rates is None:
        return NO_RATES
    return None if b.rates == c.rates else RATES_DIFFER


def _side(t: TaskReport) -> SideCounts:
    return SideCounts(
        judged=t.judged,
        passes=t.passes,
        fails=t.fails,
        budget_exceeded=t.budget_exceeded,
        errored=t.errored,
        success_rate=t.success_rate,
        interval=t.interval,
        context_used=t.context_used,
    )


def _counts(t: TaskReport) -> str:
    return (
        f"{t.passes}/{t.judged} pass, {t.fails} fail, {t.budget_exceeded} budget_exceeded, {t.errored} error"
    )


def _task(b: TaskReport, c: TaskReport, bc: Conditions, cc: Conditions, exact: bool) -> TaskComparison:
    replay = bc.mode is AnswerSource.REPLAY and cc.mode is AnswerSource.REPLAY
    if replay:
        same = _counts(b) == _counts(c)  # every status count
        outcome = Outcome.UNCHANGED if same else Outcome.CHANGED
        reason = f"{_counts(b)}" if same else f"{_counts(b)} -> {_counts(c)}"
    else:
        verdict = task_verdict(
            Side(judged=b.judged, passes=b.passes, errored=b.errored, mode=str(bc.mode)),
            Side(judged=c.judged, passes=c.passes, errored=c.errored, mode=str(cc.mode)),
        )
        outcome, reason = Outcome(str(verdict.verdict)), verdict.reason
    live = bc.mode is AnswerSource.LIVE and cc.mode is AnswerSource.LIVE
    tokens_block = COMPACTION_DIFFERS if bc.compaction != cc.compaction else None
    cost_block = _cost_block(bc, cc)
    b_cost = None if b.estimated is None else b.estimated.cost_per_success_usd
    c_cost = None if c.estimated is None else c.estimated.cost_per_success_usd
    return TaskComparison(
        task_id=b.task_id,
        outcome=outcome,
        reason=reason,
        baseline=_side(b),
        candidate=_side(c),
        success_rate=_delta(b.success_rate, c.success_rate),
        tokens_per_success=_delta(b.measured.tokens_per_success, c.measured.tokens_per_success, tokens_block),
        wall_ms_median=_delta(b.measured.wall_ms_median, c.measured.wall_ms_median),
        cached_input_ratio=_delta(b.cached_input_ratio, c.cached_input_ratio),
        cost_per_success_usd=(_delta(b_cost, c_cost) if cost_block is None else Delta(note=cost_block)),
        difference=_difference(b, c, exact) if live else None,
    )


def _difference(b: TaskReport, c: TaskReport, exact: bool) -> DifferenceTest | None:
    """Newcombe's interval, the test, the power, with ``exact`` the interval inverting the test (or None)."""
    interval = newcombe_interval(b.passes, b.judged, c.passes, c.judged)
    tested = difference_p(b.passes, b.judged, c.passes, c.judged)
    inverted = difference_interval(b.passes, b.judged, c.passes, c.judged) if exact else None
    if interval is None or tested is None:
        return None
    p_value, method = tested
    excludes = interval.low > 0.0 or interval.high < 0.0
    return DifferenceTest(
        estimate=c.passes / c.judged - b.passes / b.judged,
        interval=interval,
        p_value=p_value,
        p_method=method,
        interval_agrees=excludes == (p_value < ALPHA),
        exact_interval=None if inverted is None else inverted[0],
        min_detectable=min_detectable_difference(b.passes / b.judged, b.judged, c.judged),
    )


_FAMILY = (Outcome.IMPROVED, Outcome.REGRESSED, Outcome.INCONCLUSIVE)
"""Outcomes of the tasks that passed the not-comparable and low-power gates (under either rule)."""


def _adjusted(
    tasks: list[TaskComparison], rule: VerdictRule, adjustment: Adjustment
) -> tuple[list[TaskComparison], int]:
    """The tasks with their adjusted p-values over the family, and with the exact rule's verdicts.

    Returns:
        (the tasks in the same order, the family size).
    """
    family = [i for i, t in enumerate(tasks) if t.outcome in _FAMILY and t.difference is not None]
    raw = [d.p_value for i in family if (d := tasks[i].difference) is not None]
    adjusted = holm_adjust(raw) if adjustment is Adjustment.HOLM else bh_adjust(raw)
    out = list(tasks)
    for i, p_adjusted in zip(family, adjusted, strict=True):
        t = tasks[i]
        assert t.difference is not None
        difference = msgspec.structs.replace(t.difference, p_adjusted=p_adjusted)
        changes: dict[str, object] = {"difference": difference}
        if rule is VerdictRule.EXACT:
            verdict = exact_verdict(t.difference.estimate, p_adjusted, adjustment)
            changes |= {"outcome": Outcome(str(verdict.verdict)), "reason": verdict.reason}
        out[i] = msgspec.structs.replace(t, **changes)
    return out, len(family)


def _one_side(t: TaskReport, outcome: Outcome) -> TaskComparison:
    side, where = _side(t), "baseline" if outcome is Outcome.BASELINE_ONLY else "candidate"
    return TaskComparison(
        task_id=t.task_id,
        outcome=outcome,
        reason=f"only in the {where} report",
        baseline=side if outcome is Outcome.BASELINE_ONLY else None,
        candidate=side if outcome is Outcome.CANDIDATE_ONLY else None,
    )


def _shared(tasks: list[TaskComparison]) -> list[tuple[int, int, int, int]]:
    """(baseline passes, judged, candidate passes, judged) of the tasks judged on both sides."""
    return [
        (t.baseline.passes, t.baseline.judged, t.candidate.passes, t.candidate.judged)
        for t in tasks
        if t.baseline is not None and t.candidate is not None and t.baseline.judged and t.candidate.judged
    ]


def _shared_means(
    shared: list[tuple[int, int, int, int]], replay: bool
) -> tuple[ClusteredMean | None, ClusteredMean | None]:
    """Suite rates of both sides over the same tasks: those with judged runs on both sides."""

    def mean(passes: list[int], judged: list[int]) -> ClusteredMean | None:
        m = suite_rate(passes, judged)
        if m is None or not replay:
            return m
        # Replay is deterministic: no standard error and no interval, as in the replay report itself.
        return ClusteredMean(mean=m.mean, stderr=None, tasks=m.tasks)

    return (
        mean([t[0] for t in shared], [t[1] for t in shared]),
        mean([t[2] for t in shared], [t[3] for t in shared]),
    )


def _summary(
    baseline: Report, candidate: Report, tasks: list[TaskComparison], tested: int
) -> SummaryComparison:
    bc, cc = baseline.conditions, candidate.conditions
    bs, cs = baseline.summary, candidate.summary
    counts = Counter(t.outcome for t in tasks)
    shared = _shared(tasks)
    b_rate, c_rate = _shared_means(
        shared, replay=bc.mode is AnswerSource.REPLAY and cc.mode is AnswerSource.REPLAY
    )
    live = bc.mode is AnswerSource.LIVE and cc.mode is AnswerSource.LIVE
    cost_block = _cost_block(bc, cc)
    b_cost = None if bs.estimated is None else bs.estimated.cost_usd
    c_cost = None if cs.estimated is None else cs.estimated.cost_usd
    return SummaryComparison(
        outcomes=tuple(Count(name=str(o), count=counts[o]) for o in Outcome if counts[o]),
        success_rate=_delta(None if b_rate is None else b_rate.mean, None if c_rate is None else c_rate.mean),
        baseline_stderr=None if b_rate is None else b_rate.stderr,
        candidate_stderr=None if c_rate is None else c_rate.stderr,
        baseline_rate=b_rate,
        candidate_rate=c_rate,
        paired=paired_difference(shared) if live else None,
        tasks_tested=tested,
        tasks_compared=0 if b_rate is None else b_rate.tasks,
        tokens_per_success=_delta(
            bs.measured.tokens_per_success,
            cs.measured.tokens_per_success,
            COMPACTION_DIFFERS if bc.compaction != cc.compaction else None,
        ),
        wall_ms_median=_delta(bs.measured.wall_ms_median, cs.measured.wall_ms_median),
        cached_input_ratio=_delta(
            None if bs.cached_input is None else bs.cached_input.ratio,
            None if cs.cached_input is None else cs.cached_input.ratio,
        ),
        cost_usd=_delta(b_cost, c_cost) if cost_block is None else Delta(note=cost_block),
        cost_per_success_usd=(
            _delta(
                None if bs.estimated is None else bs.estimated.cost_per_success_usd,
                None if cs.estimated is None else cs.estimated.cost_per_success_usd,
            )
            if cost_block is None
            else Delta(note=cost_block)
        ),
        errored=(bs.errored, cs.errored),
    )


def _incompatibility(bc: Conditions, cc: Conditions) -> IncompatibleReports | None:
    """Why two reports cannot be compared (a different suiteId or suiteVersion), or ``None``."""
    if bc.suite_id != cc.suite_id:
        return IncompatibleReports(
            message=f"different suites: baseline {bc.suite_id}, candidate {cc.suite_id}"
        )
    if bc.suite_version != cc.suite_version:
        return IncompatibleReports(
            message=(
                f"suite {bc.suite_id}: different suiteVersion (baseline {bc.suite_version}, candidate "
                f"{cc.suite_version}); compare refuses to mix versions"
            )
        )
    return None


def _paired_tasks(
    b_tasks: dict[str, TaskReport],
    c_tasks: dict[str, TaskReport],
    bc: Conditions,
    cc: Conditions,
    exact: bool,
) -> list[TaskComparison]:
    """One comparison per task over the union of both reports' tasks, sorted by id."""
    tasks: list[TaskComparison] = []
    for task_id in sorted(b_tasks.keys() | c_tasks.keys()):
        b, c = b_tasks.get(task_id), c_tasks.get(task_id)
        if b is not None and c is not None:
            tasks.append(_task(b, c, bc, cc, exact))
        elif b is not None:
            tasks.append(_one_side(b, Outcome.BASELINE_ONLY))
        elif c is not None:
            tasks.append(_one_side(c, Outcome.CANDIDATE_ONLY))
    return tasks


def compare_reports(
    baseline: Report,
    candidate: Report,
    *,
    rule: VerdictRule = VerdictRule.DISJOINT,
    adjustment: Adjustment = Adjustment.HOLM,
) -> Result[Comparison, IncompatibleReports]:
    """Compare ``candidate`` against ``baseline``, task by task.

    Args:
        baseline, candidate: the two reports.
        rule: the verdict rule of the comparable tasks (disjoint Wilson intervals by default).
        adjustment: the adjustment of the per-task p-values across tasks (Holm by default).

    Returns:
        The Comparison (tasks sorted by id, over the union of both reports' tasks), or
        ``Failure(IncompatibleReports)`` when the suiteId or the suiteVersion differ.
    """
    bc, cc = baseline.conditions, candidate.conditions
    incompatible = _incompatibility(bc, cc)
    if incompatible is not None:
        return Failure(incompatible)
    b_tasks = {t.task_id: t for t in baseline.tasks}
    c_tasks = {t.task_id: t for t in candidate.tasks}
    tasks = _paired_tasks(b_tasks, c_tasks, bc, cc, rule is VerdictRule.EXACT)
    replay = bc.mode is AnswerSource.REPLAY and cc.mode is AnswerSource.REPLAY
    tasks, tested = _adjusted(tasks, rule, adjustment)
    summary = _summary(baseline, candidate, tasks, tested)
    return Success(
        Comparison(
            baseline=bc,
            candidate=cc,
            replay=replay,
            verdict_rule=rule,
            adjustment=adjustment,
            verdicts=rule_description(rule, adjustment),
            warnings=tuple(
                condition_warnings(bc, cc)
                + task_set_warning(set(b_tasks), set(c_tasks))
                + interrupted_warnings(baseline, candidate)
                + sequential_warnings(baseline, candidate)
            ),
            tasks=tuple(tasks),
            summary=summary,
            limits=limits_footnote(replay, summary.errored, rule, adjustment),
        )
    )
