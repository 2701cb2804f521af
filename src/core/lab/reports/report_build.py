"""Building a Report from run records: one pass over the records into numpy columns, then per-task figures.

The rules are the Report's (``alisio.core.lab.reports.report``): judged runs are pass, fail and budget_exceeded;
errored runs are counted apart and excluded from every rate and measured figure; tokens are summed over the
judged runs that reported usage for every turn, never guessed, with the count of those runs when not all did
(then no per-success figure or cost is given); per-success figures are the judged runs' total spend over the
successes; the suite rate is the mean of the per-task rates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from alisio.core.harness.prices import Rates, cost_usd
from alisio.core.lab.reports.profile import with_profile
from alisio.core.lab.reports.report import (
    LOW_POWER_BELOW,
    AnswerSource,
    CachedInput,
    Conditions,
    Count,
    Estimated,
    Report,
    Summary,
    SummaryMeasured,
    TaskMeasured,
    TaskReport,
    Tokens,
)
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.stats.rates import (
    ClusteredMean,
    pass_at_k_estimate,
    pass_hat_k_estimate,
    suite_rate,
    wilson_interval,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["build_report"]


_STATUS_CODE = {RunStatus.PASS: 0, RunStatus.FAIL: 1, RunStatus.BUDGET_EXCEEDED: 2, RunStatus.ERROR: 3}


class _Columns:
    """The records as numpy columns, tasks re-indexed in sorted id order (one pass over the records)."""

    def __init__(self, records: Sequence[RunRecord]) -> None:
        import numpy as np

        index: dict[str, int] = {}
        rows: list[tuple[int, int, int, int, int, int, int, int, int, int, int, bool, bool]] = []
        reasons: Counter[tuple[int, int, str]] = Counter()
        incidents: Counter[tuple[int, str]] = Counter()
        code = _STATUS_CODE
        for r in records:
            t = index.setdefault(r.task_id, len(index))
            m = r.measured
            s = code[r.status]
            rows.append(
                (
                    t,
                    s,
                    m.wall_ms,
                    m.turns,
                    m.tool_calls,
                    m.compactions,
                    -1 if m.input_tokens is None else m.input_tokens,
                    -1 if m.output_tokens is None else m.output_tokens,
                    -1 if m.reasoning_tokens is None else m.reasoning_tokens,
                    -1 if m.cached_input_tokens is None else m.cached_input_tokens,
                    -1 if m.cache_write_input_tokens is None else m.cache_write_input_tokens,
                    m.usage_complete,
                    m.cached_partial,
                )
            )
            if s >= 2:
                reasons[t, s, r.reason or "unspecified"] += 1
            if r.incidents and s != 3:
                for incident in r.incidents:
                    incidents[t, incident.kind] += 1
        self.task_ids = sorted(index)
        remap = np.zeros(len(index), dtype=np.int64)
        for new, task_id in enumerate(self.task_ids):
            remap[index[task_id]] = new
        ints = np.array([row[:11] for row in rows], dtype=np.int64).reshape(len(rows), 11)
        flags = np.array([row[11:] for row in rows], dtype=bool).reshape(len(rows), 2)
        self.task = remap[ints[:, 0]] if len(rows) else ints[:, 0]
        self.status = ints[:, 1]
        self.wall, self.turns, self.tools, self.compactions = ints[:, 2], ints[:, 3], ints[:, 4], ints[:, 5]
        self.input, self.output, self.reasoning, self.cached = ints[:, 6], ints[:, 7], ints[:, 8], ints[:, 9]
        self.written = ints[:, 10]
        self.complete, self.partial = flags[:, 0], flags[:, 1]
        self.reasons = Counter({(int(remap[t]), s, why): n for (t, s, why), n in reasons.items()})
        self.incidents = Counter({(int(remap[t]), kind): n for (t, kind), n in incidents.items()})


def _sum_by(task: NDArray[np.int64], values: NDArray[Any], tasks: int) -> NDArray[np.int64]:
    """Exact integer sums of ``values`` per task."""
    import numpy as np

    out = np.zeros(tasks, dtype=np.int64)
    np.add.at(out, task, values.astype(np.int64))
    return out


def _parts_by(cols: _Columns, mask: NDArray[np.bool_], tasks: int) -> NDArray[np.int64]:
    """Per task: cached input, cache writes and reasoning tokens summed over the ``mask`` runs, each run's
    capped at its whole as ``cost_usd`` caps them (a count not reported adds nothing: those tokens are then
    priced as the input or output they are part of)."""
    import numpy as np

    inputs, outputs = np.maximum(cols.input, 0), np.maximum(cols.output, 0)
    cached = np.minimum(np.maximum(cols.cached, 0), inputs)
    written = np.minimum(np.maximum(cols.written, 0), inputs - cached)
    reasoning = np.minimum(np.maximum(cols.reasoning, 0), outputs)
    columns = [c[mask] for c in (cached, written, reasoning)]
    return np.stack([_sum_by(cols.task[mask], c, tasks) for c in columns], axis=1).reshape(tasks, 3)


def _parts(row: NDArray[np.int64]) -> tuple[int, int, int]:
    return int(row[0]), int(row[1]), int(row[2])


def _medians(
    task: NDArray[np.int64], values: NDArray[np.int64], counts: NDArray[np.int64]
) -> list[float | None]:
    """Per-task median (mean of the two middle values for even counts), ``None`` for an empty task."""
    import numpy as np

    ordered = values[np.lexsort((values, task))].astype(np.float64)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])) if len(counts) else counts
    out: list[float | None] = []
    for start, n in zip(starts.tolist(), counts.tolist(), strict=True):
        if n == 0:
            out.append(None)
        elif n % 2:
            out.append(float(ordered[start + n // 2]))
        else:
            out.append(float((ordered[start + n // 2 - 1] + ordered[start + n // 2]) / 2.0))
    return out


def _variances(
    task: NDArray[np.int64], values: NDArray[np.int64], counts: NDArray[np.int64]
) -> list[float | None]:
    """Per-task sample variance (n - 1), two-pass (mean first, then squared deviations); ``None`` below 2."""
    import numpy as np

    tasks = len(counts)
    totals = np.zeros(tasks, dtype=np.float64)
    np.add.at(totals, task, values.astype(np.float64))
    means = totals / np.maximum(counts, 1)
    squares = np.zeros(tasks, dtype=np.float64)
    np.add.at(squares, task, (values - means[task]) ** 2)
    return [float(squares[t] / (n - 1)) if n >= 2 else None for t, n in enumerate(counts.tolist())]


def _per_success(total: float | None, passes: int) -> float | None:
    return None if total is None or passes == 0 else total / passes


def _estimated(
    tokens: Tokens | None, parts: tuple[int, int, int], rates: Rates | None, passes: int
) -> Estimated | None:
    """The estimated block over runs whose tokens are all counted (``tokens`` not partial), else none.

    ``parts``: the cached input, cache writes and reasoning tokens of the same runs, each priced at its rate.
    """
    if tokens is None or rates is None:
        return None
    cached, written, reasoning = parts
    cost = cost_usd(
        rates, tokens.input, tokens.output, cached_input=cached, cache_write=written, reasoning=reasoning
    )
    assert cost is not None  # both counts are given
    return Estimated(cost_usd=cost, cost_per_success_usd=_per_success(cost, passes))


def _by_task(pairs: Counter[tuple[int, str]]) -> tuple[dict[int, tuple[Count, ...]], tuple[Count, ...]]:
    """Named counts grouped per task (sparse: only tasks that have any; sorted by name), and their totals."""
    per: dict[int, Counter[str]] = {}
    total: Counter[str] = Counter()
    for (t, name), n in pairs.items():
        per.setdefault(t, Counter())[name] += n
        total[name] += n

    def as_counts(c: Counter[str]) -> tuple[Count, ...]:
        return tuple(Count(name=name, count=n) for name, n in sorted(c.items()))

    return {t: as_counts(c) for t, c in per.items()}, as_counts(total)


def _tokens(inp: int, out: int, reasoning: int | None) -> Tokens:
    return Tokens(input=inp, output=out, total=inp + out, reasoning=reasoning)


@dataclass(frozen=True)
class _Aggregates:
    """Per-task sums over the judged runs, indexed like ``_Columns.task_ids``."""

    by_status: NDArray[np.int64]
    """(tasks, 4): pass, fail, budget_exceeded, error counts."""
    judged_mask: NDArray[np.bool_]
    unreported: NDArray[np.int64]
    reasoning_missing: NDArray[np.int64]
    cached_runs: NDArray[np.int64]
    cached_tokens: NDArray[np.int64]
    cached_input: NDArray[np.int64]
    priced: NDArray[np.int64]
    """(tasks, 3): cached input, cache writes and reasoning tokens of the judged runs that reported usage."""
    column: dict[str, NDArray[np.int64]]
    medians: list[float | None]
    variances: list[float | None]
    incidents: dict[int, tuple[Count, ...]]
    all_incidents: tuple[Count, ...]
    reasons: dict[int, dict[int, tuple[Count, ...]]]
    """Status code (2 budget_exceeded, 3 error) -> task -> reason counts."""


def _aggregate(cols: _Columns) -> _Aggregates:
    import numpy as np

    n_tasks = len(cols.task_ids)
    by_status = np.bincount(cols.task * 4 + cols.status, minlength=n_tasks * 4).reshape(n_tasks, 4)
    judged_mask = cols.status != 3
    jt = cols.task[judged_mask]
    judged = by_status[:, :3].sum(axis=1)

    def sums(values: NDArray[Any]) -> NDArray[np.int64]:
        return _sum_by(jt, values[judged_mask], n_tasks)

    reported = cols.complete & (cols.input >= 0) & (cols.output >= 0)
    caching = judged_mask & reported & ~cols.partial & (cols.cached >= 0)
    incidents, all_incidents = _by_task(cols.incidents)
    return _Aggregates(
        by_status=by_status,
        judged_mask=judged_mask,
        unreported=sums(~reported),
        reasoning_missing=sums(cols.reasoning < 0),
        cached_runs=_sum_by(cols.task[caching], np.ones(int(caching.sum()), dtype=np.int64), n_tasks),
        cached_tokens=_sum_by(cols.task[caching], cols.cached[caching], n_tasks),
        cached_input=_sum_by(cols.task[caching], cols.input[caching], n_tasks),
        priced=_parts_by(cols, judged_mask & reported, n_tasks),
        column={
            "turns": sums(cols.turns),
            "tools": sums(cols.tools),
            "compactions": sums(cols.compactions),
            "wall": sums(cols.wall),
            "input": sums(np.where(reported, cols.input, 0)),
            "output": sums(np.where(reported, cols.output, 0)),
            "reasoning": sums(np.where(cols.reasoning >= 0, cols.reasoning, 0)),
        },
        medians=_medians(jt, cols.wall[judged_mask], judged),
        variances=_variances(jt, cols.wall[judged_mask], judged),
        incidents=incidents,
        all_incidents=all_incidents,
        reasons={
            s: _by_task(Counter({(t, why): n for (t, st, why), n in cols.reasons.items() if st == s}))[0]
            for s in (2, 3)
        },
    )


def _task_measured(t: int, agg: _Aggregates, judged: int, passes: int) -> TaskMeasured:
    column = agg.column
    tokens = None
    counted = judged - int(agg.unreported[t])
    if counted:
        reasoning = None if agg.reasoning_missing[t] else int(column["reasoning"][t])
        tokens = _tokens(int(column["input"][t]), int(column["output"][t]), reasoning)
    partial = tokens is not None and counted < judged
    wall_total = int(column["wall"][t])
    return TaskMeasured(
        turns=int(column["turns"][t]),
        tool_calls=int(column["tools"][t]),
        compactions=int(column["compactions"][t]),
        incidents=agg.incidents.get(t, ()),
        wall_ms_total=wall_total,
        wall_ms_median=agg.medians[t],
        wall_ms_variance=agg.variances[t],
        ms_per_success=_per_success(wall_total if judged else None, passes),
        tokens=tokens,
        tokens_runs=counted if partial else None,
        tokens_per_success=None
        if partial
        else _per_success(None if tokens is None else tokens.total, passes),
    )


def _task_report(t: int, task_id: str, agg: _Aggregates, conditions: Conditions) -> TaskReport:
    passes, fails, over, errored = (int(v) for v in agg.by_status[t])
    n = passes + fails + over
    exactly_k = n > 0 and n == conditions.k
    live = conditions.mode is AnswerSource.LIVE
    measured = _task_measured(t, agg, n, passes)
    runs_cached = int(agg.cached_runs[t])
    return TaskReport(
        task_id=task_id,
        runs=n + errored,
        judged=n,
        passes=passes,
        fails=fails,
        budget_exceeded=over,
        errored=errored,
        budget_reasons=agg.reasons[2].get(t, ()),
        error_reasons=agg.reasons[3].get(t, ()),
        success_rate=passes / n if n else None,
        interval=wilson_interval(passes, n) if live else None,
        low_power=live and n < LOW_POWER_BELOW,
        pass_at_k=passes > 0 if exactly_k else None,
        pass_hat_k=passes == n if exactly_k else None,
        pass_at_k_estimate=pass_at_k_estimate(n, passes, conditions.k),
        pass_hat_k_estimate=pass_hat_k_estimate(n, passes, conditions.k),
        measured=measured,
        cached_input_ratio=_ratio(int(agg.cached_tokens[t]), int(agg.cached_input[t])),
        cached_input_runs=runs_cached,
        cached_input_tokens=int(agg.cached_tokens[t]) if runs_cached else None,
        estimated=_estimated(
            None if measured.tokens_runs else measured.tokens, _parts(agg.priced[t]), conditions.rates, passes
        ),
    )


def build_report(
    records: Sequence[RunRecord],
    conditions: Conditions,
    *,
    planned_runs: int | None = None,
    interrupted: bool = False,
    stopped: str | None = None,
    capped: str | None = None,
    retried: int = 0,
) -> Report:
    """Build the report of ``records`` measured under ``conditions``.

    Args:
        records: every run of the arm, in any order (one variant: the caller filters by ``variant``).
        conditions: the measurement conditions, including ``k`` (for the pass@k estimates) and the rates.
        planned_runs: how many runs the command planned for this arm (tasks x k).
        interrupted: the command stopped before every planned run finished.
        stopped: why it stopped, one line (``None`` when it did not, or did not say).
        capped: the cap flag that stopped it (``--max-cost-usd``), when one did.
        retried: errored runs that were run again (``--retry-errors``); their old records are not in ``records``.

    Returns:
        The Report, tasks sorted by id. Pure and deterministic: the same records give the same report.
    """
    conditions = msgspec.structs.replace(
        conditions,
        served_models=tuple(sorted({m for r in records for m in r.measured.served_models})),
        system_fingerprints=tuple(sorted({f for r in records for f in r.measured.system_fingerprints})),
    )
    cols = _Columns(records)
    agg = _aggregate(cols)
    tasks = [_task_report(t, task_id, agg, conditions) for t, task_id in enumerate(cols.task_ids)]
    cached_totals = (int(agg.cached_tokens.sum()), int(agg.cached_input.sum()))
    summary = _summary(tasks, cols, agg, cached_totals, conditions)
    tasks, summary = _with_first_event_medians(records, tasks, summary)
    if conditions.context is not None:
        used: dict[str, int] = {}
        for record in records:
            if record.judged:
                used[record.task_id] = used.get(record.task_id, 0) + (record.context_used is True)
        tasks = [msgspec.structs.replace(t, context_used=used.get(t.task_id, 0)) for t in tasks]
    report = Report(
        conditions=conditions,
        tasks=tuple(tasks),
        summary=summary,
        planned_runs=planned_runs,
        interrupted=interrupted,
        stopped=stopped if interrupted else None,
        capped=capped if interrupted else None,
        retried=retried,
    )
    return with_profile(report, records)


def _median(values: Sequence[int]) -> float | None:
    """The median (mean of the two middle values for an even count); ``None`` for no value."""
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    return float(ordered[middle]) if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def _with_first_event_medians(
    records: Sequence[RunRecord], tasks: list[TaskReport], summary: Summary
) -> tuple[list[TaskReport], Summary]:
    """Each task's and the suite's median time to first event, over the calls of the judged runs."""
    per_task: dict[str, list[int]] = {}
    for record in records:
        if record.judged:
            per_task.setdefault(record.task_id, []).extend(record.measured.first_event_ms)
    replace = msgspec.structs.replace
    tasks = [
        replace(t, measured=replace(t.measured, first_event_ms_median=_median(per_task.get(t.task_id, []))))
        for t in tasks
    ]
    pooled = [ms for values in per_task.values() for ms in values]
    return tasks, replace(summary, measured=replace(summary.measured, first_event_ms_median=_median(pooled)))


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _summary(
    tasks: list[TaskReport],
    cols: _Columns,
    agg: _Aggregates,
    cached_totals: tuple[int, int],
    conditions: Conditions,
) -> Summary:
    """Totals over tasks; success rate as the task-clustered mean; wall median/variance over judged runs."""
    import numpy as np

    judged_mask, incidents = agg.judged_mask, agg.all_incidents
    passes = sum(t.passes for t in tasks)
    judged = sum(t.judged for t in tasks)
    rated = [t for t in tasks if t.judged]
    clustered = suite_rate([t.passes for t in rated], [t.judged for t in rated])
    if clustered is not None and conditions.mode is AnswerSource.REPLAY:
        clustered = ClusteredMean(mean=clustered.mean, stderr=None, tasks=clustered.tasks)
    measured = _summary_measured(tasks, cols.wall[judged_mask].astype(np.float64), incidents, judged, passes)
    estimates_at = [t.pass_at_k_estimate for t in tasks]
    estimates_hat = [t.pass_hat_k_estimate for t in tasks]
    return Summary(
        tasks=len(tasks),
        runs=sum(t.runs for t in tasks),
        judged=judged,
        passes=passes,
        fails=sum(t.fails for t in tasks),
        budget_exceeded=sum(t.budget_exceeded for t in tasks),
        errored=sum(t.errored for t in tasks),
        success_rate=clustered,
        low_power_tasks=sum(t.low_power for t in tasks),
        tasks_pass_at_k=sum(bool(t.pass_at_k) for t in tasks),
        tasks_pass_hat_k=sum(bool(t.pass_hat_k) for t in tasks),
        pass_at_k_mean=_mean_if_all(estimates_at),
        pass_hat_k_mean=_mean_if_all(estimates_hat),
        measured=measured,
        cached_input=_cached_summary(
            int(cached_totals[0]), int(cached_totals[1]), sum(t.cached_input_runs for t in tasks), judged
        ),
        estimated=_estimated(
            None if measured.tokens_runs else measured.tokens,
            _parts(agg.priced.sum(axis=0)),
            conditions.rates,
            passes,
        ),
    )


def _summary_measured(
    tasks: list[TaskReport],
    walls: NDArray[np.float64],
    incidents: tuple[Count, ...],
    judged: int,
    passes: int,
) -> SummaryMeasured:
    """What was measured over every task: sums, the wall median and variance over judged runs, tokens over
    the judged runs that reported them (with their count when not all did) and the costs per success."""
    import numpy as np

    wall_total = sum(t.measured.wall_ms_total for t in tasks)
    tokens = None
    task_tokens = [t.measured.tokens for t in tasks if t.judged and t.measured.tokens is not None]
    counted = sum(t.measured.tokens_runs or t.judged for t in tasks if t.measured.tokens is not None)
    if judged and task_tokens:
        reasoning = [x.reasoning for x in task_tokens]
        tokens = _tokens(
            sum(x.input for x in task_tokens),
            sum(x.output for x in task_tokens),
            None if any(r is None for r in reasoning) else sum(r for r in reasoning if r is not None),
        )
    partial = tokens is not None and counted < judged
    return SummaryMeasured(
        turns=sum(t.measured.turns for t in tasks),
        tool_calls=sum(t.measured.tool_calls for t in tasks),
        compactions=sum(t.measured.compactions for t in tasks),
        incidents=incidents,
        wall_ms_total=wall_total,
        wall_ms_median=_median(walls.tolist()) if judged else None,  # np.median would import numpy.ma: 13 ms
        wall_ms_variance=float(np.var(walls, ddof=1)) if judged >= 2 else None,
        ms_per_success=_per_success(wall_total if judged else None, passes),
        tokens=tokens,
        tokens_runs=counted if partial else None,
        tokens_per_success=None
        if partial
        else _per_success(None if tokens is None else tokens.total, passes),
    )


def _mean_if_all(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    if not values or len(present) != len(values):
        return None
    return sum(present) / len(present)


def _cached_summary(cached: int, inputs: int, runs: int, judged: int) -> CachedInput | None:
    """The arm's cached-input block; ``None`` (absent, never 0) when no judged run reported cached input."""
    if runs == 0:
        return None
    return CachedInput(
        tokens=cached,
        input_tokens=inputs,
        ratio=_ratio(cached, inputs),
        runs_reporting=runs,
        runs_judged=judged,
    )
