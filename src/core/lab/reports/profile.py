"""The reliability profile of a report with k >= 2 (issue 30): where the noise is, how consistent each task's
repetitions are, and what a success costs, from the run records and the report built from them.

``alisio.core.lab.reports.profile_block`` holds the values; the statistics are ``alisio.core.stats.reliability``. The
advice sentence compares what doubling k and doubling the tasks would do to the suite interval (both double the
runs): with k runs per task the suite rate's variance is σ_b²/T + σ_w²/(kT), so a larger k only shrinks the
repetition part, while more tasks shrink both.
"""

from __future__ import annotations

from collections.abc import Sequence

from alisio.core.lab.reports.profile_block import CostPerSuccess, ReliabilityProfile, TaskConsistency
from alisio.core.lab.reports.report import AnswerSource, Report, TaskReport
from alisio.core.lab.runs.records import RunRecord
from alisio.core.stats.reliability import (
    DOUBLED_TASKS_NARROWER,
    IccEstimate,
    coefficient_of_variation,
    icc_binary,
    mean_pairwise_similarity,
    ratio_estimate,
)

__all__ = ["advice", "consistency", "cost_per_success", "profile_of", "with_profile"]


def _pct(value: float) -> str:
    return f"{value * 100:.0f}%"


def advice(icc: IccEstimate | None, same: bool = False) -> str:
    """The profile's one sentence: where the noise is, and what narrows the suite interval more (``same``:
    every judged run had the same outcome)."""
    if icc is None:
        if same:
            return "Every judged run had the same outcome: there is no pass/fail variance to place (no ICC)."
        return "No ICC: it needs at least 2 tasks with 2 or more judged runs each."
    worth = (
        f"design effect {icc.design_effect:.2f}: the {icc.runs} judged runs count as about "
        f"{icc.effective_runs:.0f} independent ones"
    )
    if icc.interval is None:
        return (
            f"No run differed from its task's other runs, so all the noise is between tasks (ICC 1; {worth}): "
            "more tasks narrow the suite interval, a larger k does not (doubling the tasks: "
            f"{_pct(DOUBLED_TASKS_NARROWER)} narrower)."
        )
    shown = f"ICC {icc.icc:.2f} [{icc.interval.low:.2f}, {icc.interval.high:.2f}]; {worth}"
    if icc.repetition_share >= 0.5:
        return (
            f"Most of the noise is within tasks, from one repetition to the next ({shown}): a larger k narrows "
            f"the suite interval nearly as much as more tasks (doubling k: {_pct(icc.doubled_k_narrower)} "
            f"narrower; doubling the tasks: {_pct(DOUBLED_TASKS_NARROWER)})."
        )
    return (
        f"Most of the noise is between tasks ({shown}): more tasks narrow the suite interval more than a larger "
        f"k (doubling the tasks: {_pct(DOUBLED_TASKS_NARROWER)} narrower; doubling k: "
        f"{_pct(icc.doubled_k_narrower)})."
    )


def consistency(task_id: str, records: Sequence[RunRecord]) -> TaskConsistency:
    """How alike the judged runs in ``records`` (one task's) were: the CVs and the tool-sequence similarity."""
    judged = sorted((r for r in records if r.judged), key=lambda r: r.repetition)
    tokens = [
        float(r.measured.input_tokens + r.measured.output_tokens)
        for r in judged
        if r.measured.usage_complete
        and r.measured.input_tokens is not None
        and r.measured.output_tokens is not None
    ]
    sequences = [
        r.measured.tool_sequence for r in judged if r.measured.tool_sequence or not r.measured.tool_calls
    ]
    return TaskConsistency(
        task_id=task_id,
        runs=len(judged),
        tokens_cv=coefficient_of_variation(tokens),
        tool_calls_cv=coefficient_of_variation([float(r.measured.tool_calls) for r in judged]),
        wall_cv=coefficient_of_variation([float(r.measured.wall_ms) for r in judged]),
        tool_similarity=mean_pairwise_similarity(sequences),
    )


def _complete(task: TaskReport) -> bool:
    """The task has judged runs and every one reported its tokens."""
    return task.judged > 0 and task.measured.tokens is not None and task.measured.tokens_runs is None


def cost_per_success(tasks: Sequence[TaskReport]) -> CostPerSuccess | None:
    """Tokens (and USD, with prices) per success over the tasks whose runs all reported tokens."""
    judged = [t for t in tasks if t.judged > 0]
    counted = [t for t in judged if _complete(t)]
    passes = [t.passes for t in counted]
    tokens = ratio_estimate([float(t.measured.tokens.total) for t in counted if t.measured.tokens], passes)
    if tokens is None:
        return None
    priced = [t.estimated.cost_usd for t in counted if t.estimated is not None]
    usd = ratio_estimate(priced, passes) if len(priced) == len(counted) else None
    return CostPerSuccess(tokens=tokens, usd=usd, tasks=len(counted), of_tasks=len(judged))


def profile_of(report: Report, records: Sequence[RunRecord]) -> ReliabilityProfile | None:
    """The profile of ``report`` built from ``records`` (its arm's): ``None`` for k < 2 or a replay."""
    if report.conditions.k < 2 or report.conditions.mode is AnswerSource.REPLAY:
        return None
    counts = [(t.passes, t.judged) for t in report.tasks if t.judged]
    icc = icc_binary(counts)
    same = bool(counts) and (all(p == n for p, n in counts) or all(p == 0 for p, _ in counts))
    by_task: dict[str, list[RunRecord]] = {}
    for record in records:
        by_task.setdefault(record.task_id, []).append(record)
    return ReliabilityProfile(
        icc=icc,
        advice=advice(icc, same),
        tasks=tuple(consistency(t.task_id, by_task.get(t.task_id, ())) for t in report.tasks),
        cost_per_success=cost_per_success(report.tasks),
    )


def with_profile(report: Report, records: Sequence[RunRecord]) -> Report:
    """``report`` with its reliability profile (``profile_of``); as it is when it has none."""
    import msgspec

    profile = profile_of(report, records)
    return report if profile is None else msgspec.structs.replace(report, reliability=profile)
