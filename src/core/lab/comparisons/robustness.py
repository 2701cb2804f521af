"""Robustness under injected faults: an arm's success rate under faults relative to a clean arm's.

When the arms of one ``eval variants`` command include a clean arm (no ``faults`` in its conditions) and
faulted arms, each faulted arm gets one ``Robustness`` against the first clean arm (the baseline when it is
clean):

- the success rate here counts every run, an ``error`` run as not passing: a run that a fault ended (a
  provider failure once retries ran out) is exactly what robustness measures, so it cannot be left out as
  the report's rates leave infrastructure errors out;
- ``ratio`` is Σ faulted passes / Σ clean passes over the tasks both arms ran (with the same runs per task,
  as ``eval variants`` plans them, the ratio of the two success rates): 1 means the faults cost nothing. Its
  95% interval is Fieller's, paired by task (``alisio.core.stats.ratio_estimate``), so each task's
  difficulty cancels as it does in the paired difference;
- ``difference`` is the paired suite difference faulted − clean of the same rates
  (``alisio.core.stats.paired_difference``: its t interval and its exact permutation p-value, which decides).
"""

from __future__ import annotations

from collections.abc import Sequence

from alisio.core.base import Frozen
from alisio.core.lab.reports.report import Report
from alisio.core.stats import PairedDifference, paired_difference, ratio_estimate

__all__ = ["Robustness", "robustness_rows", "robustness_sentence"]


class Robustness(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One faulted arm against the clean one."""

    clean: str
    """The clean arm's variant id."""
    faulted: str
    faults: str
    """The faulted arm's faults (their canonical spec)."""
    tasks: int
    """Tasks both arms ran."""
    clean_passes: int
    clean_runs: int
    faulted_passes: int
    faulted_runs: int
    ratio: float | None = None
    """Σ faulted passes / Σ clean passes; ``None`` when the clean arm passed no run."""
    ratio_low: float | None = None
    ratio_high: float | None = None
    """Fieller's 95% bounds, paired by task; absent with fewer than 2 tasks (the high one also when the
    clean passes are too few to bound it)."""
    difference: PairedDifference | None = None
    """Faulted − clean success rate, paired by task (every run counted, errors as not passing)."""


def _row(clean: tuple[str, Report], faulted: tuple[str, Report], faults: str) -> Robustness | None:
    clean_tasks = {task.task_id: task for task in clean[1].tasks}
    pairs = [
        (clean_tasks[task.task_id], task)
        for task in faulted[1].tasks
        if task.task_id in clean_tasks and task.runs > 0 and clean_tasks[task.task_id].runs > 0
    ]
    if not pairs:
        return None
    ratio = ratio_estimate([float(f.passes) for _, f in pairs], [c.passes for c, _ in pairs])
    return Robustness(
        clean=clean[0],
        faulted=faulted[0],
        faults=faults,
        tasks=len(pairs),
        clean_passes=sum(c.passes for c, _ in pairs),
        clean_runs=sum(c.runs for c, _ in pairs),
        faulted_passes=sum(f.passes for _, f in pairs),
        faulted_runs=sum(f.runs for _, f in pairs),
        ratio=None if ratio is None else ratio.estimate,
        ratio_low=None if ratio is None else ratio.low,
        ratio_high=None if ratio is None else ratio.high,
        difference=paired_difference([(c.passes, c.runs, f.passes, f.runs) for c, f in pairs]),
    )


def robustness_rows(arms: Sequence[tuple[str, Report]]) -> tuple[Robustness, ...]:
    """Each faulted arm against the first clean arm (none without both kinds of arm)."""
    clean = next(((name, report) for name, report in arms if report.conditions.faults is None), None)
    if clean is None:
        return ()
    rows = (
        _row(clean, (name, report), report.conditions.faults)
        for name, report in arms
        if report.conditions.faults is not None
    )
    return tuple(row for row in rows if row is not None)


def _percent(value: float | None) -> str:
    return "?" if value is None else f"{value * 100:.0f}%"


def robustness_sentence(row: Robustness) -> str:
    """``robustness of no-retries (500:0.3,seed=1) against clean: 40% of the clean success rate [22%, 61%],
    10/20 runs passed against 20/20 (paired by task, errors count as not passing)``."""
    if row.ratio is None:
        shown = "not defined (the clean arm passed no run)"
    else:
        bounds = (
            ""
            if row.ratio_low is None
            else f" [{_percent(row.ratio_low)}, {'unbounded' if row.ratio_high is None else _percent(row.ratio_high)}]"
        )
        shown = f"{_percent(row.ratio)} of the clean success rate{bounds}"
    return (
        f"robustness of {row.faulted} ({row.faults}) against {row.clean}: {shown}, "
        f"{row.faulted_passes}/{row.faulted_runs} runs passed against {row.clean_passes}/{row.clean_runs} "
        f"over {row.tasks} task{'s' if row.tasks != 1 else ''} (paired by task; errors count as not passing)"
    )
