"""What report.json's ``reliability`` holds: where the noise lies, how consistent each task's repetitions are, and
what a success costs. ``alisio.core.lab.reports.profile`` computes it from the run records and the report; this module
only holds the values (report.json imports it, so it imports nothing of the lab).

Rules the values keep:

- Every figure is over judged runs (errored ones are not outcomes) of a report with k >= 2 (live or scripted;
  replay is deterministic, so it has none).
- The ICC is the share of the pass/fail variance that lies between tasks (``alisio.core.stats.reliability``);
  ``advice`` says what it means for the next run in one sentence.
- Per task: the coefficient of variation of tokens, tool calls and wall time over the repetitions, and the
  mean pairwise similarity of their tool-call sequences; absent, never 0, when there are fewer than 2 values.
- Cost per success: Σ cost / Σ passes over the tasks whose runs all reported tokens, with Fieller's interval
  clustered by task; in USD only when the report has prices.
"""

from __future__ import annotations

from alisio.core.base import Frozen
from alisio.core.stats.reliability import IccEstimate, RatioEstimate

__all__ = ["CostPerSuccess", "ReliabilityProfile", "TaskConsistency"]


class TaskConsistency(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """How alike one task's judged repetitions were."""

    task_id: str
    runs: int
    """Judged runs the figures are over."""
    tokens_cv: float | None = None
    """Coefficient of variation of total tokens per run (runs that reported them)."""
    tool_calls_cv: float | None = None
    wall_cv: float | None = None
    tool_similarity: float | None = None
    """Mean pairwise 2·LCS/(|a| + |b|) of the runs' tool-call sequences (1: every run called the same tools in
    the same order); absent when fewer than 2 runs recorded their sequence."""


class CostPerSuccess(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """Cost per success over the tasks whose runs all reported tokens."""

    tokens: RatioEstimate | None = None
    usd: RatioEstimate | None = None
    """Absent without prices."""
    tasks: int
    """Tasks counted (every judged run reported its tokens, and it has judged runs)."""
    of_tasks: int
    """Tasks with judged runs."""


class ReliabilityProfile(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """report.json's ``reliability``."""

    icc: IccEstimate | None = None
    """Absent with fewer than 2 tasks of 2 judged runs, or when every run had the same outcome."""
    advice: str
    """One sentence: where the noise is, and whether more tasks or a larger k would narrow the suite
    interval more."""
    tasks: tuple[TaskConsistency, ...]
    """Sorted by task id."""
    cost_per_success: CostPerSuccess | None = None
    """Absent when no task has complete token counts or no run passed."""
