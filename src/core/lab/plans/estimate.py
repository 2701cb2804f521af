"""``--dry-run``'s estimate: what a plan would spend, from the stored runs of the same suite and model.

Rules this module keeps:

- Each planned task is estimated from that task's past runs (their mean), a task never run before from the
  mean of the past runs of the planned tasks (of every past run when none was run before); the total is the sum over the planned runs. Nothing is guessed when there is no
  past run: the estimate is absent and the text says so.
- Tokens are a past run's main-loop input + output, only from runs that reported usage for every turn; the
  cost is those tokens at the command's rates (each kind of token at its own rate, as reports price them),
  only when the command has rates; the wall time is the runs' total divided by the runs at once.
- Each figure comes with its spread over the past runs it is drawn from (those of the planned tasks when
  there are some): the median and the 10th and 90th percentiles of one run, and how many runs it rests on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from alisio.core.base import Frozen
from alisio.core.harness.prices import Rates, cost_usd
from alisio.core.lab.runs.records import RunRecord
from alisio.core.text import plural

__all__ = ["Estimate", "Spread", "estimate", "estimate_lines"]


class Spread(Frozen, frozen=True, kw_only=True):
    """One figure: the plan's estimated total and the spread of one past run."""

    total: float
    median: float
    low: float
    """10th percentile of one run."""
    high: float
    """90th percentile of one run."""
    runs: int
    """The past runs it is drawn from."""


class Estimate(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """What the plan would spend, from ``past_runs`` stored runs in ``reports`` reports."""

    past_runs: int
    reports: int
    tokens: Spread | None = None
    cost_usd: Spread | None = None
    wall_ms: Spread | None = None
    """The plan's wall time at ``jobs`` runs at once (its total), and one run's spread."""
    jobs: int = 1


def _percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile by linear interpolation between the nearest ranks (``ordered`` sorted, not empty)."""
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _spread(
    planned: Mapping[str, int], past: Sequence[RunRecord], value: Callable[[RunRecord], float | None]
) -> Spread | None:
    by_task: dict[str, list[float]] = {}
    for record in past:
        v = value(record)
        if v is not None:
            by_task.setdefault(record.task_id, []).append(v)
    pooled = sorted(v for values in by_task.values() for v in values)
    if not pooled:
        return None
    overall = sum(pooled) / len(pooled)
    total = sum(
        n * (sum(by_task[t]) / len(by_task[t]) if t in by_task else overall) for t, n in planned.items()
    )
    return Spread(
        total=total,
        median=_percentile(pooled, 0.5),
        low=_percentile(pooled, 0.1),
        high=_percentile(pooled, 0.9),
        runs=len(pooled),
    )


def _tokens(record: RunRecord) -> float | None:
    m = record.measured
    if not m.usage_complete or m.input_tokens is None or m.output_tokens is None:
        return None
    return float(m.input_tokens + m.output_tokens)


def estimate(
    planned: Mapping[str, int], past: Sequence[RunRecord], reports: int, rates: Rates | None, jobs: int
) -> Estimate | None:
    """The estimate of running ``planned`` (runs per task) from the ``past`` records; ``None`` without any."""
    if not past:
        return None
    past = [r for r in past if r.task_id in planned] or list(past)  # the spread of the tasks it will run

    def cost(record: RunRecord) -> float | None:
        m = record.measured
        if rates is None or not m.usage_complete:
            return None
        return cost_usd(
            rates,
            m.input_tokens,
            m.output_tokens,
            cached_input=m.cached_input_tokens,
            cache_write=m.cache_write_input_tokens,
            reasoning=m.reasoning_tokens,
        )

    wall = _spread(planned, past, lambda r: float(r.measured.wall_ms))
    if wall is not None:
        wall = Spread(
            total=wall.total / max(1, jobs), median=wall.median, low=wall.low, high=wall.high, runs=wall.runs
        )
    return Estimate(
        past_runs=len(past),
        reports=reports,
        tokens=_spread(planned, past, _tokens),
        cost_usd=_spread(planned, past, cost),
        wall_ms=wall,
        jobs=jobs,
    )


def _seconds(ms: float) -> str:
    """``0.2 s``, ``45 s``, ``12 min``, ``3.5 h``: a duration as people read an estimate."""
    seconds = ms / 1000
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def estimate_lines(found: Estimate | None, source: str, priced: bool, replay: bool) -> list[str]:
    """The estimate as lines: ``source`` says which past runs were looked for (``smoke-coding with model X``)."""
    if found is None:
        return [f"no past runs to estimate from (none of {source})"]
    lines = [
        f"estimate from {plural(found.past_runs, 'past run')} of {source} ({plural(found.reports, 'report')}):"
    ]
    t = found.tokens
    if replay:
        lines.append("  tokens: none spent (a replay plays recorded answers)")
    elif t is None:
        lines.append("  tokens: not known (no past run reported its usage for every turn)")
    else:
        lines.append(
            f"  tokens: about {t.total:,.0f} (per run: median {t.median:,.0f}, 10-90% {t.low:,.0f}-{t.high:,.0f};"
            f" {t.runs} runs)"
        )
    c = found.cost_usd
    if not replay:
        if not priced:
            lines.append('  cost: no prices for the model (--input-rate/--output-rate, or [prices."MODEL"])')
        elif c is not None:
            lines.append(
                f"  cost: about {c.total:.4g} USD (per run: median {c.median:.4g}, 10-90% {c.low:.4g}-{c.high:.4g})"
            )
    w = found.wall_ms
    if w is not None:
        lines.append(
            f"  wall: about {_seconds(w.total)} at {found.jobs} at once (per run: median {_seconds(w.median)}, "
            f"10-90% {_seconds(w.low)}-{_seconds(w.high)})"
        )
    return lines
