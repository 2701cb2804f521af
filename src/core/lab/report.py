"""The Report: per-task metrics and a suite summary built from run records and their conditions.

Rules this module keeps (the spec's "Reading the results" and "Measured and estimated"):

- A number without its conditions is an anecdote: every report carries its ``Conditions``.
- Judged runs are pass, fail and budget_exceeded. Errored runs are counted apart and excluded from every rate
  and every measured figure.
- successRate = passes / judged with its 95% Wilson interval; absent when nothing was judged; no interval in
  replay mode (replay is deterministic: the observed pass/fail is the result). lowPower below 5 judged runs.
- pass@k / pass^k: observed only when exactly k runs were judged (fewer: n/a, more: it would be pass@n), and
  the unbiased estimates whenever judged >= k (else absent).
- Measured (provider tokens, event counts, wall time) and estimated (costUsd) are separate blocks, never
  added. Tokens are omitted, not guessed, when any judged run of the scope did not report usage for every
  turn. Per-success figures are the total spend of the judged runs, failures included, over the successes.
- Cached input: pooled cached / input tokens over the judged runs that reported it for every turn
  (``cachedPartial`` runs are left out); absent, never 0, when no run reported it.
- The suite summary does not pool runs across tasks: its success rate is the mean of per-task rates with a
  task-clustered standard error (runs cluster within tasks).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.errors import ReportError
from alisio.core.lab.records import RunRecord, RunStatus, schema_version_problem
from alisio.core.lab.report_check import describe, report_problems
from alisio.core.lab.stats import (
    ClusteredMean,
    Interval,
    pass_at_k_estimate,
    pass_hat_k_estimate,
    suite_rate,
    wilson_interval,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "LOW_POWER_BELOW",
    "REPORT_SCHEMA_VERSION",
    "CachedInput",
    "Compaction",
    "Conditions",
    "Count",
    "Estimated",
    "MeasuredBlock",
    "Mode",
    "Rates",
    "Report",
    "Summary",
    "SummaryMeasured",
    "TaskMeasured",
    "TaskReport",
    "Tokens",
    "build_report",
    "decode_report",
    "encode_report",
    "finished_runs",
]

REPORT_SCHEMA_VERSION = 1
LOW_POWER_BELOW = 5
"""Fewer judged runs than this prints a low power warning (and compare makes no claim)."""


class Mode(StrEnum):
    """live: the configured provider (harness + model, with variance); replay: a cassette (harness only)."""

    LIVE = "live"
    REPLAY = "replay"


class Compaction(Frozen, frozen=True, kw_only=True):
    """The compaction settings; token figures are only comparable between reports that share them."""

    threshold: float
    max_context_chars: int


class Rates(Frozen, frozen=True, kw_only=True):
    """USD per million tokens (both or neither: a report has ``Rates`` or no rates at all)."""

    input_rate: float
    output_rate: float


class Conditions(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """The measurement conditions every report carries."""

    suite_id: str
    suite_version: str
    suite_hash: str
    """Content hash of the suite's tasks, fixtures and verifiers."""
    harness_version: str
    config_hash: str
    """Hash of the effective measured configuration."""
    provider: str
    model: str
    endpoint: str | None = None
    """The provider's endpoint, ``scheme://host:port/path`` (never a user name or password); ``None`` for
    scripted and replayed runs, and in reports written before it was recorded."""
    mode: Mode
    k: int
    """Repetitions per task."""
    seed: int
    """Seed of the run order (the provider never receives it)."""
    compaction: Compaction
    rates: Rates | None = None
    run_id: str
    created_at: str
    """ISO 8601 UTC timestamp, passed in by the shell."""


class Count(Frozen, frozen=True, kw_only=True):
    """A named count (incidents by kind, budget_exceeded and error runs by reason)."""

    name: str
    count: int


class Tokens(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """Main-loop provider tokens summed over judged runs (compaction calls excluded)."""

    input: int
    output: int
    total: int
    """input + output (reasoning tokens are part of the output)."""
    reasoning: int | None = None
    """Absent unless every judged run reported reasoning tokens."""


class Estimated(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """Estimated cost from the rates passed in; ignores cached and reasoning token prices."""

    cost_usd: float
    cost_per_success_usd: float | None = None


class MeasuredBlock(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """Measured figures summed over judged runs (errored runs excluded); never mixed with estimated cost."""

    turns: int
    tool_calls: int
    compactions: int
    incidents: tuple[Count, ...] = ()
    """Incidents of the judged runs counted by kind, sorted by kind."""
    wall_ms_total: int
    wall_ms_median: float | None = None
    """Median wall time of the judged runs; absent when nothing was judged."""
    wall_ms_variance: float | None = None
    """Sample variance (n - 1); absent with fewer than 2 judged runs."""
    ms_per_success: float | None = None
    tokens: Tokens | None = None
    """Absent when any judged run did not report usage for every turn (or nothing was judged)."""
    tokens_per_success: float | None = None


class TaskMeasured(MeasuredBlock, frozen=True, kw_only=True, omit_defaults=True):
    """Measured figures of one task's judged runs."""


class SummaryMeasured(MeasuredBlock, frozen=True, kw_only=True, omit_defaults=True):
    """Measured totals over every judged run; wall median and variance are over all judged runs pooled."""


class CachedInput(Frozen, frozen=True, kw_only=True):
    """Prompt-cache figures of an arm: present only when at least one judged run reported cached input."""

    tokens: int
    """Cached input tokens summed over the reporting runs."""
    input_tokens: int
    """Input tokens of the same runs."""
    ratio: float | None
    """tokens / input_tokens; absent when the reporting runs had no input tokens."""
    runs_reporting: int
    """Judged runs that reported cached input for every turn (cachedPartial runs are not counted)."""
    runs_judged: int


class TaskReport(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One task's counts, rates and measured figures."""

    task_id: str
    runs: int
    judged: int
    """pass + fail + budget_exceeded."""
    passes: int
    fails: int
    budget_exceeded: int
    errored: int
    """Runs that ended error: excluded from every rate, counted apart."""
    budget_reasons: tuple[Count, ...] = ()
    error_reasons: tuple[Count, ...] = ()
    success_rate: float | None = None
    interval: Interval | None = None
    """95% Wilson interval of successRate (live only)."""
    low_power: bool
    pass_at_k: bool | None = None
    """Observed: at least one of the k judged runs passed. Present only when exactly k runs were judged:
    over fewer runs it would claim something about k runs nobody saw, over more it is pass@n (use the
    estimate)."""
    pass_hat_k: bool | None = None
    """Observed: all k judged runs passed; present only when exactly k runs were judged."""
    pass_at_k_estimate: float | None = None
    """Unbiased pass@k (Chen et al. 2021); absent when judged < k."""
    pass_hat_k_estimate: float | None = None
    """Unbiased pass^k (Yao et al. 2024); absent when judged < k."""
    measured: TaskMeasured
    cached_input_ratio: float | None = None
    cached_input_runs: int = 0
    cached_input_tokens: int | None = None
    estimated: Estimated | None = None


class Summary(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """Suite-level figures: totals, and a success rate averaged over tasks (never pooled over runs)."""

    tasks: int
    runs: int
    judged: int
    passes: int
    fails: int
    budget_exceeded: int
    errored: int
    success_rate: ClusteredMean | None = None
    """Mean of the per-task success rates with a task-clustered standard error and a 95% interval (t on
    tasks − 1 degrees of freedom, or pooled Wilson when every task has the same rate); none in replay."""
    low_power_tasks: int
    tasks_pass_at_k: int
    """Tasks with exactly k judged runs where at least one passed (``passAtK`` true)."""
    tasks_pass_hat_k: int
    """Tasks with exactly k judged runs that all passed (``passHatK`` true)."""
    pass_at_k_mean: float | None = None
    """Mean of the per-task pass@k estimates; absent unless every task has one."""
    pass_hat_k_mean: float | None = None
    measured: SummaryMeasured
    cached_input: CachedInput | None = None
    estimated: Estimated | None = None


class Report(Frozen, frozen=True, kw_only=True):
    """report.json: conditions, per-task metrics (sorted by task id) and the summary."""

    schema_version: int = REPORT_SCHEMA_VERSION
    """The report.json format; a reader refuses a higher one (``schema_version_problem``)."""
    conditions: Conditions
    """What was measured and how: without them a number is an anecdote."""
    tasks: tuple[TaskReport, ...]
    """Per-task counts, rates and measured figures, sorted by task id."""
    summary: Summary
    """Suite-level totals and the task-averaged success rate."""
    planned_runs: int | None = None
    """How many runs the command planned (tasks x k); ``None`` in reports written before it was recorded.
    Additive with a default, so schemaVersion stays 1 and older reports still decode."""
    interrupted: bool = False
    """The command stopped before its plan finished (Ctrl-C, a signal, a refused key, an unreachable
    endpoint, a full disk): only the finished runs are reported, tasks that never ran are missing."""
    stopped: str | None = None
    """Why it stopped, one line for people (``Ctrl-C``, ``the provider refused the API key...``)."""
    retried: int = 0
    """Errored runs run again by ``eval run --resume --retry-errors``: their earlier records are kept apart in
    retried/runs.jsonl and counted nowhere else."""


def finished_runs(report: Report) -> str:
    """The runs the report holds, against the plan when known: ``7 of 35 planned runs``, ``7 runs``."""
    done = sum(task.runs for task in report.tasks)
    if report.planned_runs is not None:
        return f"{done} of {report.planned_runs} planned runs"
    return f"{done} run" if done == 1 else f"{done} runs"


# --- building -------------------------------------------------------------------------------------------

_STATUS_CODE = {RunStatus.PASS: 0, RunStatus.FAIL: 1, RunStatus.BUDGET_EXCEEDED: 2, RunStatus.ERROR: 3}


class _Columns:
    """The records as numpy columns, tasks re-indexed in sorted id order (one pass over the records)."""

    def __init__(self, records: Sequence[RunRecord]) -> None:
        import numpy as np

        index: dict[str, int] = {}
        rows: list[tuple[int, int, int, int, int, int, int, int, int, int, bool, bool]] = []
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
        ints = np.array([row[:10] for row in rows], dtype=np.int64).reshape(len(rows), 10)
        flags = np.array([row[10:] for row in rows], dtype=bool).reshape(len(rows), 2)
        self.task = remap[ints[:, 0]] if len(rows) else ints[:, 0]
        self.status = ints[:, 1]
        self.wall, self.turns, self.tools, self.compactions = ints[:, 2], ints[:, 3], ints[:, 4], ints[:, 5]
        self.input, self.output, self.reasoning, self.cached = ints[:, 6], ints[:, 7], ints[:, 8], ints[:, 9]
        self.complete, self.partial = flags[:, 0], flags[:, 1]
        self.reasons = Counter({(int(remap[t]), s, why): n for (t, s, why), n in reasons.items()})
        self.incidents = Counter({(int(remap[t]), kind): n for (t, kind), n in incidents.items()})


def _sum_by(task: NDArray[np.int64], values: NDArray[Any], tasks: int) -> NDArray[np.int64]:
    """Exact integer sums of ``values`` per task."""
    import numpy as np

    out = np.zeros(tasks, dtype=np.int64)
    np.add.at(out, task, values.astype(np.int64))
    return out


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


def _estimated(tokens: Tokens | None, rates: Rates | None, passes: int) -> Estimated | None:
    if tokens is None or rates is None:
        return None
    cost = tokens.input * rates.input_rate / 1e6 + tokens.output * rates.output_rate / 1e6
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


def build_report(
    records: Sequence[RunRecord],
    conditions: Conditions,
    *,
    planned_runs: int | None = None,
    interrupted: bool = False,
    stopped: str | None = None,
    retried: int = 0,
) -> Report:
    """Build the report of ``records`` measured under ``conditions``.

    Args:
        records: every run of the arm, in any order (one variant: the caller filters by ``variant``).
        conditions: the measurement conditions, including ``k`` (for the pass@k estimates) and the rates.
        planned_runs: how many runs the command planned for this arm (tasks x k).
        interrupted: the command stopped before every planned run finished.
        stopped: why it stopped, one line (``None`` when it did not, or did not say).
        retried: errored runs that were run again (``--retry-errors``); their old records are not in ``records``.

    Returns:
        The Report, tasks sorted by id. Pure and deterministic: the same records give the same report.
    """
    import numpy as np

    cols = _Columns(records)
    n_tasks = len(cols.task_ids)
    live = conditions.mode is Mode.LIVE
    by_status = np.bincount(cols.task * 4 + cols.status, minlength=n_tasks * 4).reshape(n_tasks, 4)
    judged_mask = cols.status != 3
    jt = cols.task[judged_mask]
    judged = by_status[:, :3].sum(axis=1)

    def sums(values: NDArray[Any]) -> NDArray[np.int64]:
        return _sum_by(jt, values[judged_mask], n_tasks)

    reported = cols.complete & (cols.input >= 0) & (cols.output >= 0)
    unreported = sums(~reported)
    reasoning_missing = sums(cols.reasoning < 0)
    caching = judged_mask & reported & ~cols.partial & (cols.cached >= 0)
    cached_runs = _sum_by(cols.task[caching], np.ones(int(caching.sum()), dtype=np.int64), n_tasks)
    cached_tokens = _sum_by(cols.task[caching], cols.cached[caching], n_tasks)
    cached_input = _sum_by(cols.task[caching], cols.input[caching], n_tasks)
    column = {
        "turns": sums(cols.turns),
        "tools": sums(cols.tools),
        "compactions": sums(cols.compactions),
        "wall": sums(cols.wall),
        "input": sums(np.where(reported, cols.input, 0)),
        "output": sums(np.where(reported, cols.output, 0)),
        "reasoning": sums(np.where(cols.reasoning >= 0, cols.reasoning, 0)),
    }
    medians = _medians(jt, cols.wall[judged_mask], judged)
    variances = _variances(jt, cols.wall[judged_mask], judged)
    incidents, all_incidents = _by_task(cols.incidents)
    reasons = {
        s: _by_task(Counter({(t, why): n for (t, st, why), n in cols.reasons.items() if st == s}))[0]
        for s in (2, 3)
    }

    tasks: list[TaskReport] = []
    for t, task_id in enumerate(cols.task_ids):
        passes, fails, over, errored = (int(v) for v in by_status[t])
        n = passes + fails + over
        exactly_k = n > 0 and n == conditions.k
        tokens = None
        if n and not unreported[t]:
            reasoning = None if reasoning_missing[t] else int(column["reasoning"][t])
            tokens = _tokens(int(column["input"][t]), int(column["output"][t]), reasoning)
        wall_total = int(column["wall"][t])
        measured = TaskMeasured(
            turns=int(column["turns"][t]),
            tool_calls=int(column["tools"][t]),
            compactions=int(column["compactions"][t]),
            incidents=incidents.get(t, ()),
            wall_ms_total=wall_total,
            wall_ms_median=medians[t],
            wall_ms_variance=variances[t],
            ms_per_success=_per_success(wall_total if n else None, passes),
            tokens=tokens,
            tokens_per_success=_per_success(None if tokens is None else tokens.total, passes),
        )
        runs_cached = int(cached_runs[t])
        tasks.append(
            TaskReport(
                task_id=task_id,
                runs=n + errored,
                judged=n,
                passes=passes,
                fails=fails,
                budget_exceeded=over,
                errored=errored,
                budget_reasons=reasons[2].get(t, ()),
                error_reasons=reasons[3].get(t, ()),
                success_rate=passes / n if n else None,
                interval=wilson_interval(passes, n) if live else None,
                low_power=live and n < LOW_POWER_BELOW,
                pass_at_k=passes > 0 if exactly_k else None,
                pass_hat_k=passes == n if exactly_k else None,
                pass_at_k_estimate=pass_at_k_estimate(n, passes, conditions.k),
                pass_hat_k_estimate=pass_hat_k_estimate(n, passes, conditions.k),
                measured=measured,
                cached_input_ratio=_ratio(int(cached_tokens[t]), int(cached_input[t])),
                cached_input_runs=runs_cached,
                cached_input_tokens=int(cached_tokens[t]) if runs_cached else None,
                estimated=_estimated(tokens, conditions.rates, passes),
            )
        )
    cached_totals = (int(cached_tokens.sum()), int(cached_input.sum()))
    summary = _summary(tasks, cols, judged_mask, all_incidents, cached_totals, conditions)
    return Report(
        conditions=conditions,
        tasks=tuple(tasks),
        summary=summary,
        planned_runs=planned_runs,
        interrupted=interrupted,
        stopped=stopped if interrupted else None,
        retried=retried,
    )


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _summary(
    tasks: list[TaskReport],
    cols: _Columns,
    judged_mask: NDArray[np.bool_],
    incidents: tuple[Count, ...],
    cached_totals: tuple[int, int],
    conditions: Conditions,
) -> Summary:
    """Totals over tasks; success rate as the task-clustered mean; wall median/variance over judged runs."""
    import numpy as np

    passes = sum(t.passes for t in tasks)
    judged = sum(t.judged for t in tasks)
    rated = [t for t in tasks if t.judged]
    clustered = suite_rate([t.passes for t in rated], [t.judged for t in rated])
    if clustered is not None and conditions.mode is Mode.REPLAY:
        clustered = ClusteredMean(mean=clustered.mean, stderr=None, tasks=clustered.tasks)
    walls = cols.wall[judged_mask].astype(np.float64)
    wall_total = sum(t.measured.wall_ms_total for t in tasks)
    tokens = None
    if judged and all(t.measured.tokens is not None for t in tasks if t.judged):
        task_tokens = [t.measured.tokens for t in tasks if t.measured.tokens is not None]
        reasoning = [x.reasoning for x in task_tokens]
        tokens = _tokens(
            sum(x.input for x in task_tokens),
            sum(x.output for x in task_tokens),
            None if any(r is None for r in reasoning) else sum(r for r in reasoning if r is not None),
        )
    measured = SummaryMeasured(
        turns=sum(t.measured.turns for t in tasks),
        tool_calls=sum(t.measured.tool_calls for t in tasks),
        compactions=sum(t.measured.compactions for t in tasks),
        incidents=incidents,
        wall_ms_total=wall_total,
        wall_ms_median=float(np.median(walls)) if judged else None,
        wall_ms_variance=float(np.var(walls, ddof=1)) if judged >= 2 else None,
        ms_per_success=_per_success(wall_total if judged else None, passes),
        tokens=tokens,
        tokens_per_success=_per_success(None if tokens is None else tokens.total, passes),
    )
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
        estimated=_estimated(tokens, conditions.rates, passes),
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


# --- the wire -------------------------------------------------------------------------------------------

_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(Report)


def encode_report(report: Report) -> bytes:
    """report.json bytes: indented JSON with a trailing newline."""
    return msgspec.json.format(_ENCODER.encode(report), indent=2) + b"\n"


def decode_report(data: bytes, source: str) -> Result[Report, ReportError]:
    """Parse report.json bytes; unknown fields are ignored (a newer harness's report still loads).

    Returns:
        The Report, or ``Failure(ReportError)`` with msgspec's message (not JSON, or the field path that is
        missing or of the wrong type), a hint when the JSON is not a report at all, the schemaVersion
        when it is newer than this version reads (never a silent misreading), or the first impossible
        number with its task and field (``alisio.core.lab.report_check``: negative counts, counts that do
        not add up, rates outside [0, 1]).
    """
    try:
        report = _DECODER.decode(data)
    except msgspec.ValidationError as error:
        return Failure(ReportError(source=source, message=f"not an alisio report: {error}"))
    except msgspec.DecodeError as error:
        return Failure(ReportError(source=source, message=f"not valid JSON: {error}"))
    problem = schema_version_problem(report.schema_version, REPORT_SCHEMA_VERSION)
    if problem is not None:
        return Failure(ReportError(source=source, message=problem))
    # Types say "an int"; a hand-edited or corrupted report can still say judged: -3 or passes > judged.
    impossible = report_problems(report)
    if impossible:
        more = f" (and {len(impossible) - 1} more)" if len(impossible) > 1 else ""
        message = f"impossible numbers: {describe(impossible[0], report)}{more}"
        return Failure(ReportError(source=source, message=message))
    return Success(report)
