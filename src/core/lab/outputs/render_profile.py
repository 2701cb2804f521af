"""How a report shows its reliability profile (report.md, report.html, the terminal): the advice sentence, the
cost per success, and one row per task of how alike its repetitions were, beside pass^k.

Rules: a figure that is undefined (fewer than 2 values, no success) prints "n/a", never 0; an interval whose
upper end cannot be bounded prints "no upper bound"; USD appears only when the report has prices.
"""

from __future__ import annotations

from alisio.core.lab.outputs.view import Table
from alisio.core.lab.reports.profile_block import CostPerSuccess, ReliabilityProfile
from alisio.core.lab.reports.report import Report, TaskReport
from alisio.core.stats.reliability import RatioEstimate

__all__ = ["PROFILE_NOTES", "cost_text", "profile_lines", "profile_table", "ratio_text"]

PROFILE_NOTES = (
    "ICC: the share of the pass/fail variance that lies between tasks rather than between repetitions of a "
    "task (95% interval by the F ratio, approximate for pass/fail data); design effect: how many times fewer "
    "independent runs the judged runs are worth.",
    "CV: the coefficient of variation (standard deviation over mean) of a task's tokens, tool calls and wall "
    "time across its judged runs; tool-call similarity: the mean over pairs of runs of 2·LCS/(|a| + |b|) of "
    "their sequences of tool names (1: the same calls in the same order every time).",
    "Cost per success: the tokens (and USD, with prices) of all judged runs, failures included, over the "
    "successes, pooled over the tasks whose runs all reported tokens; its 95% interval is Fieller's, "
    "clustered by task.",
)


def _cv(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _number(value: float, usd: bool) -> str:
    return f"${value:,.4f}" if usd else f"{value:,.0f}"


def ratio_text(ratio: RatioEstimate, usd: bool = False) -> str:
    """``12,345 [10,200, 15,800]``; ``12,345 [10,200, no upper bound]``; ``12,345`` with one task."""
    point = _number(ratio.estimate, usd)
    if ratio.low is None:
        return point
    high = "no upper bound" if ratio.high is None else _number(ratio.high, usd)
    return f"{point} [{_number(ratio.low, usd)}, {high}]"


def cost_text(cost: CostPerSuccess) -> str:
    """The cost-per-success sentence."""
    parts = []
    if cost.tokens is not None:
        parts.append(f"{ratio_text(cost.tokens)} tokens")
    if cost.usd is not None:
        parts.append(f"{ratio_text(cost.usd, usd=True)} estimated")
    over = (
        f"all {cost.of_tasks} tasks"
        if cost.tasks == cost.of_tasks
        else f"{cost.tasks} of {cost.of_tasks} tasks"
    )
    return f"Cost per success: {'; '.join(parts)} (95% Fieller interval, over {over})."


def _pass_hat_k(task: TaskReport) -> str:
    if task.pass_hat_k_estimate is not None:
        return f"{task.pass_hat_k_estimate:.2f}"
    if task.pass_hat_k is not None:
        return "yes" if task.pass_hat_k else "no"
    return "n/a"


def profile_table(report: Report) -> Table | None:
    """One row per task: judged runs, pass^k, the three CVs and the tool-call similarity."""
    profile = report.reliability
    if profile is None:
        return None
    tasks = {t.task_id: t for t in report.tasks}
    rows = []
    for row in profile.tasks:
        task = tasks.get(row.task_id)
        rows.append(
            (
                row.task_id,
                str(row.runs),
                _pass_hat_k(task) if task is not None else "n/a",
                _cv(row.tokens_cv),
                _cv(row.tool_calls_cv),
                _cv(row.wall_cv),
                _cv(row.tool_similarity),
            )
        )
    header = ("Task", "Judged", f"pass^{report.conditions.k}", "CV tokens", "CV tool calls", "CV wall time")
    return Table(header=(*header, "Tool-call similarity"), rows=tuple(rows))


def profile_lines(profile: ReliabilityProfile) -> list[str]:
    """The advice, then the cost per success (when there is one)."""
    lines = [profile.advice]
    if profile.cost_per_success is not None:
        lines.append(cost_text(profile.cost_per_success))
    return lines
