"""Success rate against cost, per arm (``eval compare``'s two reports, ``eval variants``' variants): which arms no
other arm beats on both.

Over the tasks every arm judged: the suite rate (mean of per-task rates, with its t interval) and the cost per
success (tokens, and USD when every arm has prices), with Fieller's interval clustered by task
(``alisio.core.stats.reliability``). An arm is *not beaten* when no other arm has a rate at least as high and
a cost at least as low, one of them strictly, on the point estimates; an arm without token counts is not
ranked. The intervals say how firm that ranking is: overlapping ones mean the data do not separate the arms. The table is
``alisio.core.lab.outputs.render_tradeoff``.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from alisio.core.base import Frozen
from alisio.core.lab.reports.profile import cost_per_success
from alisio.core.lab.reports.report import Report
from alisio.core.stats.rates import ClusteredMean, suite_rate
from alisio.core.stats.reliability import RatioEstimate, non_dominated

__all__ = ["RateCostRow", "rate_cost_rows"]


class RateCostRow(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One arm of the table."""

    arm: str
    tasks: int
    """Tasks the row is over (judged by every arm)."""
    rate: ClusteredMean | None = None
    tokens_per_success: RatioEstimate | None = None
    usd_per_success: RatioEstimate | None = None
    not_beaten: bool | None = None
    """``None``: not ranked (no token counts on every task)."""


def rate_cost_rows(arms: Sequence[tuple[str, Report]]) -> tuple[RateCostRow, ...]:
    """One row per arm (``(name, report)``, in order) over the tasks every arm judged."""
    shared = (
        set.intersection(*({t.task_id for t in report.tasks if t.judged} for _, report in arms))
        if arms
        else set()
    )
    rows = []
    for name, report in arms:
        tasks = sorted((t for t in report.tasks if t.task_id in shared), key=lambda t: t.task_id)
        cost = cost_per_success(tasks)
        complete = cost is not None and cost.tasks == len(tasks)
        rows.append(
            RateCostRow(
                arm=name,
                tasks=len(tasks),
                rate=suite_rate([t.passes for t in tasks], [t.judged for t in tasks]) if tasks else None,
                tokens_per_success=cost.tokens if complete and cost is not None else None,
                usd_per_success=cost.usd if complete and cost is not None else None,
            )
        )
    ranked = [
        i
        for i, (row, (_, report)) in enumerate(zip(rows, arms, strict=True))
        if row.rate is not None and (row.tokens_per_success is not None or _no_success(report, shared))
    ]
    marks = non_dominated([_point(rows[i]) for i in ranked])
    for i, mark in zip(ranked, marks, strict=True):
        rows[i] = msgspec.structs.replace(rows[i], not_beaten=mark)
    return tuple(rows)


def _point(row: RateCostRow) -> tuple[float, float | None]:
    """(rate, tokens per success; None: no success) of a ranked row."""
    rate = 0.0 if row.rate is None else row.rate.mean
    return rate, None if row.tokens_per_success is None else row.tokens_per_success.estimate


def _no_success(report: Report, shared: set[str]) -> bool:
    """The arm passed nothing on the shared tasks and has token counts (its cost per success is unbounded)."""
    tasks = [t for t in report.tasks if t.task_id in shared]
    return (
        bool(tasks)
        and sum(t.passes for t in tasks) == 0
        and all(t.measured.tokens is not None for t in tasks)
    )
