"""What a sequential command records: its design (plan.json, report.json) and each task's stop (report.json).

``eval variants --sequential``, ``eval run --sequential --baseline REPORT`` and ``eval run --until-width W``
stop each task as soon as its anytime-valid statistic (``alisio.core.stats.sequential``) decides, or when a
decision has become out of reach (futility), or at ``--max-k``. ``alisio.core.lab.plans.seq_run`` computes these
values from the records; this module holds them and says the design in one phrase (``describe_plan``;
report.json imports it, so it imports nothing of the lab).

Rules the values keep:

- ``SequentialPlan`` is the design as asked; plan.json keeps it, and a resume refuses another one.
- ``TaskStop`` is the final look at a task: its statistic over every outcome the task has (runs that were in
  flight when it stopped included), the look at which it first stopped (``stopped_at``) and how many runs came
  after that look (``after_stop``: runs in flight then, waited for and counted, never discarded).
- Runs saved are against running every task to ``max_k`` in this arm; tokens saved are an estimate (the task's
  mean tokens per run times the runs saved), labelled as one, and absent when no run of the task reported its
  tokens.
"""

from __future__ import annotations

from typing import Literal

from alisio.core.base import Frozen
from alisio.core.stats.rates import Interval

__all__ = [
    "DEFAULT_MAX_K",
    "DEFAULT_MIN_K",
    "BaselineCount",
    "SequentialBlock",
    "SequentialKind",
    "SequentialPlan",
    "StopReason",
    "TaskStop",
    "describe_plan",
]

SequentialKind = Literal["two-arm", "baseline", "width"]
"""``two-arm``: ``eval variants --sequential``; ``baseline``: ``eval run --sequential --baseline REPORT``;
``width``: ``eval run --until-width W``."""
StopReason = Literal["decided", "futility", "max-k", "width"]
DEFAULT_MAX_K = 50
DEFAULT_MIN_K = 5


class BaselineCount(Frozen, frozen=True, kw_only=True):
    """One task of a stored baseline report: its passes over its judged runs (``--baseline REPORT``)."""

    task_id: str
    passes: int
    judged: int


class SequentialPlan(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """The sequential design of a command, as asked (plan.json and report.json keep it)."""

    kind: SequentialKind
    alpha: float = 0.05
    """Family-wise, over every task of the command."""
    max_k: int = DEFAULT_MAX_K
    """Runs per task and arm, at most (``--max-k``)."""
    min_k: int = DEFAULT_MIN_K
    """No stop before this many judged runs per arm (``--min-k``)."""
    side: Literal["two-sided", "improved", "not-worse"] = "two-sided"
    margin: float = 0.0
    """``not-worse`` (``--fail-on worse-than:M``): the margin M."""
    width: float | None = None
    """``width``: stop a task when its confidence sequence is narrower than this (``--until-width W``)."""
    baseline: str | None = None
    """``two-arm``: the baseline variant's id; ``baseline``: the baseline report's run id."""
    baseline_counts: tuple[BaselineCount, ...] = ()
    """``baseline``: each task's passes and judged runs in the baseline report (kept, so a resume does not
    depend on that report still being there)."""
    baseline_suite: str | None = None
    """``baseline``: the baseline report's suite id and version (``smoke-coding 1.0.0``): it must be the
    suite that runs."""


class TaskStop(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One task at its final look, in one arm's report."""

    task_id: str
    runs: int
    """Finished runs of the task in this arm (errored ones included)."""
    judged: int
    """Judged runs of this arm the statistic used (outcomes; errored runs are not outcomes). Two arms: the
    pairs, repetition j of both arms, a repetition with an errored run on either side left out."""
    reason: StopReason | None = None
    """Why it stopped; ``None``: it had not stopped when the command ended (interrupted)."""
    direction: Literal["improved", "regressed", "not-worse"] | None = None
    """Set when ``reason`` is ``decided``."""
    statistic: float
    """The e-value (its running maximum) at the final look."""
    threshold: float
    """What the statistic had to reach to decide (e.g. tasks / alpha)."""
    interval: Interval | None = None
    """The anytime-valid confidence sequence at the final look: of the difference (two-arm), of the
    candidate's success rate (baseline) or of the success rate (width). This interval is valid under optional
    stopping; Wilson's is not."""
    stopped_at: int | None = None
    """Judged runs per arm at the first look at which the task had stopped."""
    after_stop: int = 0
    """Judged runs of this arm that finished after that look (in flight then): waited for and included. Two
    arms: this arm's judged runs past the stopping pair's repetition; one whose partner in the other arm never
    ran stays in this arm's report but is in no pair."""
    runs_saved: int = 0
    """``max_k`` minus the runs of the task in this arm."""
    tokens_saved: int | None = None
    """Estimated: the task's mean tokens per judged run times ``runs_saved``; absent without token counts."""


class SequentialBlock(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """report.json's ``sequential``: the design, each task's stop, the totals saved and the method note."""

    plan: SequentialPlan
    tasks: tuple[TaskStop, ...]
    """Sorted by task id."""
    runs_saved: int
    """Over every task, in this arm, against running each to ``max_k``."""
    tokens_saved: int | None = None
    """Estimated, over the tasks with token counts."""
    method: str
    """The method footnote (``alisio.core.stats.sequential.method_note``)."""


def describe_plan(plan: SequentialPlan) -> str:
    """The design in one phrase: ``--until-width 0.3, --max-k 50, --min-k 5``."""
    limits = f"--max-k {plan.max_k}, --min-k {plan.min_k}"
    if plan.kind == "width":
        return f"--until-width {plan.width:g}, {limits}"
    gate = f", --fail-on worse-than:{plan.margin:g}" if plan.side == "not-worse" else ""
    if plan.kind == "baseline":
        return f"--sequential --baseline {plan.baseline}, {limits}{gate}"
    return f"--sequential, {limits}{gate}"
