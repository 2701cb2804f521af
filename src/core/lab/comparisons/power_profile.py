"""``eval power --from REPORT``: what a measured report tells the planner, so that it stops assuming every task
sits at the suite rate with independent runs.

From the report's judged runs: the suite rate (the mean of per-task rates), the tasks and runs per task, and
the within-task variance of a run, E[p_i(1 − p_i)], estimated without bias per task as p̂(1 − p̂)·n/(n − 1)
and averaged over the tasks with 2 runs or more. When tasks differ in their rates (a high ICC), that variance
is well below p̄(1 − p̄), and the paired suite comparison needs fewer runs per task than the independent-runs
plan says; the spread of the rates themselves is not noise in a paired comparison (each task is its own
control). What it cannot measure from one report is how much the *change* varies across tasks: that stays
``--task-sd`` (0 by default, the optimistic case), and the plan says so.
"""

from __future__ import annotations

from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.errors import PowerInputError
from alisio.core.lab.reports.report import AnswerSource, Report
from alisio.core.stats.rates import Interval
from alisio.core.stats.reliability import icc_binary

__all__ = ["MeasuredProfile", "measured_profile"]


class MeasuredProfile(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """What ``eval power --from REPORT`` read from the report (its ``--json`` prints it as ``measured``)."""

    run_id: str
    tasks: int
    """Tasks with judged runs."""
    k: int
    """The report's runs per task (its ``k``)."""
    suite_rate: float
    """Mean of the per-task success rates."""
    within_variance: float
    """E[p_i(1 − p_i)] over the tasks with 2 judged runs or more (unbiased per task)."""
    independent_variance: float
    """suite_rate·(1 − suite_rate): what the planner assumes without a report."""
    icc: float | None = None
    icc_interval: Interval | None = None


def measured_profile(report: Report) -> Result[MeasuredProfile, PowerInputError]:
    """The measured profile of ``report``, or a ``PowerInputError`` on ``--from`` saying why there is none
    (a replay, fewer than 2 tasks with judged runs, no task with 2 judged runs)."""

    def refuse(message: str) -> Failure[PowerInputError]:
        return Failure(PowerInputError(flag="--from", message=message))

    if report.conditions.mode is AnswerSource.REPLAY:
        return refuse("a replay report measures the harness, not the model's variance: give a live report")
    judged = [t for t in report.tasks if t.judged]
    if len(judged) < 2:
        return refuse(f"{len(judged)} task with judged runs: the suite plan needs at least 2")
    repeated = [t for t in judged if t.judged >= 2]
    if not repeated:
        return refuse("no task has 2 judged runs: the within-task variance cannot be measured (run k >= 2)")
    rates = [t.passes / t.judged for t in judged]
    within = sum(
        r * (1 - r) * t.judged / (t.judged - 1) for r, t in zip(rates, judged, strict=True) if t.judged >= 2
    )
    suite = sum(rates) / len(rates)
    icc = icc_binary([(t.passes, t.judged) for t in judged])
    return Success(
        MeasuredProfile(
            run_id=report.conditions.run_id,
            tasks=len(judged),
            k=report.conditions.k,
            suite_rate=suite,
            within_variance=min(0.25, within / len(repeated)),
            independent_variance=suite * (1 - suite),
            icc=None if icc is None else icc.icc,
            icc_interval=None if icc is None else icc.interval,
        )
    )
