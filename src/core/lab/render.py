"""Markdown for reports (report.md); comparisons (comparison.md) are in ``alisio.core.lab.render_compare``.

Rules this module keeps:

- The header carries every condition: a number without its conditions is an anecdote. A replay report says
  that replay measures the harness, not the model.
- Measured and Estimated are separate tables, never summed. Absent figures print "not reported" (provider
  numbers) or "n/a" (undefined statistics), never 0.
- Rates print as "80.0% [37.6%, 96.4%]" (95% Wilson), the same way everywhere (tables, verdict reasons,
  alisio.core.lab.verdict.format_interval); differences and standard errors of rates print in percentage points (pp).
  The suite line says it is a mean of per-task rates with a task-clustered standard error.
- pass@k / pass^k print yes/no only over exactly k judged runs, the unbiased estimate with more, n/a with
  fewer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from alisio.core.lab.report import (
    Conditions,
    Count,
    MeasuredBlock,
    Mode,
    Report,
    TaskReport,
    Tokens,
    finished_runs,
)
from alisio.core.lab.stats import ClusteredMean, Interval, IntervalMethod
from alisio.core.lab.verdict import format_interval

__all__ = [
    "NOT_REPORTED",
    "REPLAY_NOTICE",
    "SCRIPTED_NOTICE",
    "SCRIPTED_PROVIDER",
    "SUITE_INTERVAL_NOTE",
    "SUITE_RATE_NOTE",
    "conditions_rows",
    "format_pp",
    "format_rate",
    "markdown_table",
    "render_markdown",
    "suite_interval_text",
]

REPLAY_NOTICE = "Replay measures the harness, not the model: the model answers come from a recording."
SCRIPTED_PROVIDER = "scripted"
"""The provider id of ``--script`` runs: fixed assistant turns, no model."""
SCRIPTED_NOTICE = (
    "The provider is scripted: fixed assistant turns from a file, not a model. These numbers measure the "
    "harness and the suite's verifiers, not model quality."
)
SUITE_RATE_NOTE = (
    "The suite success rate is the mean of the per-task success rates with a task-clustered standard error, "
    "because runs cluster within tasks: runs are never pooled across tasks into one rate."
)
SUITE_INTERVAL_NOTE = (
    "Its 95% interval is a t interval over tasks (mean ± t(0.975, tasks − 1) × standard error), wider than "
    "±1.96 standard errors when there are few tasks; when every task has the same rate the spread of the "
    "tasks says nothing, so the interval is the Wilson interval of all the runs pooled."
)
NOT_REPORTED = "not reported"


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def format_rate(rate: float | None, interval: Interval | None) -> str:
    """``80.0% [37.6%, 96.4%]``; the bare rate without an interval (replay); ``n/a`` without a rate."""
    if rate is None:
        return "n/a"
    if interval is None:
        return _pct(rate)
    return f"{_pct(rate)} {format_interval(interval)}"


def format_pp(value: float) -> str:
    """A difference of rates in percentage points with its sign: ``+7.9 pp``, ``-40.0 pp`` (never ``-0.0``)."""
    text = f"{value * 100:+.1f}"
    return ("+" + text[1:] if text == "-0.0" else text) + " pp"


def suite_interval_text(rate: ClusteredMean) -> str:
    """``[16.9%, 83.1%] (95% t interval, 3 degrees of freedom)``, or the pooled Wilson case said in words;
    empty for a rate without an interval (replay, or a report written before intervals existed)."""
    if rate.interval is None:
        return ""
    if rate.interval_method is IntervalMethod.POOLED_WILSON:
        every = "the only task" if rate.tasks == 1 else "every task has the same rate"
        return f"{format_interval(rate.interval)} ({every}: pooled Wilson 95% interval)"
    df = rate.tasks - 1
    return (
        f"{format_interval(rate.interval)} (95% t interval, {df} degree{'' if df == 1 else 's'} of freedom)"
    )


def _int(value: int | None) -> str:
    return NOT_REPORTED if value is None else f"{value:,}"


def _num(value: float | None, digits: int = 0, absent: str = "n/a") -> str:
    return absent if value is None else f"{value:,.{digits}f}"


def _seconds(ms: float | None) -> str:
    return "n/a" if ms is None else f"{ms / 1000:,.1f} s"


def _seconds2(ms2: float | None) -> str:
    return "n/a" if ms2 is None else f"{ms2 / 1e6:,.1f} s²"


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.4f}"


def _counts(counts: Iterable[Count]) -> str:
    return ", ".join(f"{c.name} {c.count}" for c in counts) or "none"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def conditions_rows(c: Conditions) -> list[tuple[str, str]]:
    rates = "none (no cost estimate)"
    if c.rates is not None:
        rates = f"input {c.rates.input_rate:g} USD/M tokens, output {c.rates.output_rate:g} USD/M tokens"
    return [
        ("Suite", f"{c.suite_id} {c.suite_version}"),
        ("Suite content hash", f"`{c.suite_hash}`"),
        ("Harness version", c.harness_version),
        ("Configuration hash", f"`{c.config_hash}`"),
        ("Provider", c.provider),
        ("Model", c.model),
        *((("Endpoint", c.endpoint),) if c.endpoint is not None else ()),
        ("Mode", str(c.mode)),
        ("k (repetitions per task)", str(c.k)),
        ("Seed (run order only)", str(c.seed)),
        (
            "Compaction",
            f"threshold {c.compaction.threshold:g}, maxContextChars {c.compaction.max_context_chars:,}",
        ),
        ("Rates", rates),
        ("Run", f"{c.run_id} ({c.created_at})"),
    ]


def _pass_k(observed: bool | None, estimate: float | None, judged: int) -> str:
    """yes/no over exactly k judged runs; the unbiased estimate over more; n/a over fewer."""
    if observed is not None:
        return "yes" if observed else "no"
    if estimate is not None:
        return f"{estimate:.2f} (est.)"
    return f"n/a ({judged} judged)"


def _task_row(t: TaskReport) -> list[str]:
    return [
        t.task_id,
        str(t.judged),
        str(t.passes),
        str(t.fails),
        str(t.budget_exceeded),
        str(t.errored),
        format_rate(t.success_rate, t.interval),
        _pass_k(t.pass_at_k, t.pass_at_k_estimate, t.judged),
        _pass_k(t.pass_hat_k, t.pass_hat_k_estimate, t.judged),
        "low power" if t.low_power else "",
    ]


def _tokens(tokens: Tokens | None) -> str:
    if tokens is None:
        return NOT_REPORTED
    return f"{tokens.total:,} ({tokens.input:,} in, {tokens.output:,} out)"


def _measured_row(name: str, m: MeasuredBlock, cached: str) -> list[str]:
    return [
        name,
        str(m.turns),
        str(m.tool_calls),
        str(m.compactions),
        _counts(m.incidents),
        _seconds(m.wall_ms_median),
        _seconds2(m.wall_ms_variance),
        _seconds(m.ms_per_success),
        _tokens(m.tokens),
        _num(m.tokens_per_success, absent=NOT_REPORTED if m.tokens is None else "n/a"),
        cached,
    ]


def _task_cached(t: TaskReport) -> str:
    if t.cached_input_runs == 0:
        return NOT_REPORTED
    return f"{format_rate(t.cached_input_ratio, None)} ({t.cached_input_runs}/{t.judged} runs)"


def _suite_lines(report: Report) -> list[str]:
    s = report.summary
    lines = ["## Summary", ""]
    if s.success_rate is None:
        lines.append("Suite success rate: n/a (no judged runs).")
    else:
        se = "n/a (one task)" if s.success_rate.stderr is None else f"{s.success_rate.stderr * 100:.1f} pp"
        if report.conditions.mode is Mode.REPLAY:
            se = "none in replay"
        interval = suite_interval_text(s.success_rate)
        lines.append(
            f"Suite success rate: {_pct(s.success_rate.mean)}{' ' + interval if interval else ''}, "
            f"task-clustered standard error {se}, over {s.success_rate.tasks} tasks."
        )
    lines += ["", SUITE_RATE_NOTE]
    if s.success_rate is not None and s.success_rate.interval is not None:
        lines.append(SUITE_INTERVAL_NOTE)
    lines += [
        "",
        f"Runs: {s.runs} ({s.judged} judged: {s.passes} pass, {s.fails} fail, {s.budget_exceeded} "
        f"budget_exceeded; {s.errored} error, excluded from every rate).",
        _pass_k_line(report),
    ]
    if s.low_power_tasks:
        lines.append(
            f"Low power: {s.low_power_tasks} task(s) with fewer than 5 judged runs; no claim about them."
        )
    return lines


def _pass_k_line(report: Report) -> str:
    """How many tasks pass@k / pass^k held on, out of the tasks where it was observed (exactly k judged)."""
    k, s = report.conditions.k, report.summary
    observed = sum(t.pass_at_k is not None for t in report.tasks)
    line = (
        f"pass@{k}: {s.tasks_pass_at_k} of {observed} tasks; pass^{k}: {s.tasks_pass_hat_k} of {observed} "
        f"tasks (tasks with exactly {k} judged runs"
    )
    others = s.tasks - observed
    line += f"; {others} other task{'' if others == 1 else 's'} n/a or estimated)." if others else ")."
    if s.pass_at_k_mean is not None and s.pass_hat_k_mean is not None:
        line += (
            f" Mean unbiased estimate over tasks: pass@{k} {s.pass_at_k_mean:.2f}, "
            f"pass^{k} {s.pass_hat_k_mean:.2f}."
        )
    return line


def _reasons(tasks: Sequence[TaskReport]) -> list[str]:
    lines = []
    for t in tasks:
        if t.budget_reasons:
            lines.append(f"- {t.task_id}: budget_exceeded by {_counts(t.budget_reasons)}")
        if t.error_reasons:
            lines.append(f"- {t.task_id}: error ({_counts(t.error_reasons)})")
    return ["", *lines] if lines else []


def render_markdown(report: Report) -> str:
    """report.md: conditions, tasks, summary, then the Measured and Estimated tables apart."""
    c = report.conditions
    k = c.k
    scripted = c.mode is Mode.LIVE and c.provider == SCRIPTED_PROVIDER
    mode = f"{c.mode}, scripted provider" if scripted else str(c.mode)
    lines = [f"# Eval report: {c.suite_id} {c.suite_version} ({mode})", ""]
    if c.mode is Mode.REPLAY:
        lines += [f"> {REPLAY_NOTICE} A green replay says nothing about model quality.", ""]
    if scripted:
        lines += [f"> {SCRIPTED_NOTICE}", ""]
    if report.interrupted:
        why = f" ({report.stopped})" if report.stopped else ""
        lines += [
            f"> **Interrupted after {finished_runs(report)}{why}: tasks that never ran are missing.**",
            "",
        ]
    if report.retried:
        runs = "run was" if report.retried == 1 else "runs were"
        lines += [
            f"> {report.retried} errored {runs} run again (--retry-errors): the earlier records are kept in "
            "retried/runs.jsonl and counted nowhere.",
            "",
        ]
    lines += markdown_table(("Condition", "Value"), conditions_rows(c))
    rate_head = "Success rate (Wilson 95%)" if c.mode is Mode.LIVE else "Success rate (observed)"
    lines += ["", "## Tasks", ""]
    lines += markdown_table(
        (
            "Task",
            "judged",
            "pass",
            "fail",
            "budget_exceeded",
            "error",
            rate_head,
            f"pass@{k}",
            f"pass^{k}",
            "note",
        ),
        (_task_row(t) for t in report.tasks),
    )
    lines += _reasons(report.tasks)
    lines += [
        "",
        "judged = pass + fail + budget_exceeded; errored runs are infrastructure failures, excluded from every "
        f"rate and counted apart. pass@{k}: at least one of the {k} judged runs passed; pass^{k}: all "
        f"{k} did. Over more than {k} judged runs the column shows the unbiased estimate (est.); over fewer "
        "it is n/a.",
        "",
    ]
    lines += _suite_lines(report)
    s = report.summary
    if s.cached_input is None:
        suite_cached = NOT_REPORTED
    else:
        ci = s.cached_input
        suite_cached = (
            f"{format_rate(ci.ratio, None)} ({ci.tokens:,} of {ci.input_tokens:,} input tokens; "
            f"{ci.runs_reporting}/{ci.runs_judged} runs)"
        )
    lines += ["", "## Measured", ""]
    lines += markdown_table(
        (
            "Task",
            "turns",
            "tool calls",
            "compactions",
            "incidents",
            "wall median",
            "wall variance",
            "time/success",
            "tokens",
            "tokens/success",
            "cached input",
        ),
        [
            *(_measured_row(t.task_id, t.measured, _task_cached(t)) for t in report.tasks),
            _measured_row("**suite**", s.measured, suite_cached),
        ],
    )
    lines += [
        "",
        "Over judged runs only. Tokens are provider-reported main-loop tokens (compaction calls excluded), "
        '"not reported" when a judged run did not report usage for every turn. Per-success figures are the '
        "total spend of the judged runs, failures included, divided by the successes. Cached input is cached "
        "over input tokens pooled over the runs that reported it in every turn.",
        "",
        "## Estimated",
        "",
    ]
    if c.rates is None:
        lines.append("No rates given (--input-rate and --output-rate): no cost is estimated.")
    else:
        rows = [
            [
                t.task_id,
                _usd(None if t.estimated is None else t.estimated.cost_usd),
                _usd(None if t.estimated is None else t.estimated.cost_per_success_usd),
            ]
            for t in report.tasks
        ]
        est = s.estimated
        rows.append(
            [
                "**suite**",
                _usd(None if est is None else est.cost_usd),
                _usd(None if est is None else est.cost_per_success_usd),
            ]
        )
        lines += markdown_table(("Task", "cost (USD)", "cost/success (USD)"), rows)
        lines += [
            "",
            "Estimated from the rates above; ignores cached and reasoning token prices. n/a where tokens "
            "were not reported.",
        ]
    return "\n".join(lines) + "\n"
