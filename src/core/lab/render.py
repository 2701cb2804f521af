"""Markdown for reports (report.md) and comparisons (comparison.md, ``alisio eval compare``).

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

from alisio.core.lab.compare import Comparison, Delta, Outcome, SideCounts, TaskComparison
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
from alisio.core.lab.stats import Interval
from alisio.core.lab.verdict import format_interval

__all__ = [
    "REPLAY_NOTICE",
    "SCRIPTED_NOTICE",
    "SCRIPTED_PROVIDER",
    "SUITE_RATE_NOTE",
    "format_rate",
    "render_comparison_markdown",
    "render_markdown",
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


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def _conditions_rows(c: Conditions) -> list[tuple[str, str]]:
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
        lines.append(
            f"Suite success rate: {_pct(s.success_rate.mean)}, task-clustered standard error {se}, "
            f"over {s.success_rate.tasks} tasks."
        )
    lines += [
        "",
        SUITE_RATE_NOTE,
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
    lines += _table(("Condition", "Value"), _conditions_rows(c))
    rate_head = "Success rate (Wilson 95%)" if c.mode is Mode.LIVE else "Success rate (observed)"
    lines += ["", "## Tasks", ""]
    lines += _table(
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
    lines += _table(
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
        lines += _table(("Task", "cost (USD)", "cost/success (USD)"), rows)
        lines += [
            "",
            "Estimated from the rates above; ignores cached and reasoning token prices. n/a where tokens "
            "were not reported.",
        ]
    return "\n".join(lines) + "\n"


# --- comparisons ----------------------------------------------------------------------------------------

_OUTCOME_LABEL = {
    Outcome.IMPROVED: "**improved**",
    Outcome.REGRESSED: "**regressed**",
    Outcome.INCONCLUSIVE: "inconclusive",
    Outcome.LOW_POWER: "low power",
    Outcome.NOT_COMPARABLE: "not comparable",
    Outcome.CHANGED: "**changed**",
    Outcome.UNCHANGED: "unchanged",
    Outcome.BASELINE_ONLY: "baseline only",
    Outcome.CANDIDATE_ONLY: "candidate only",
}


def _side(side: SideCounts | None) -> str:
    if side is None:
        return "absent"
    errored = f", {side.errored} error" if side.errored else ""
    return f"{side.passes}/{side.judged}{errored}: {format_rate(side.success_rate, side.interval)}"


def _no_negative_zero(text: str) -> str:
    """``-0.0 s`` (a small decrease rounded away) prints as ``+0.0 s``: a sign needs a visible difference."""
    if text.startswith("-") and not any(ch in "123456789" for ch in text):
        return "+" + text[1:]
    return text


def _delta(d: Delta | None, value: str, change: str, scale: float = 1.0, absent: str = "n/a") -> str:
    """``base → cand (±change)``; ``value``/``change`` are format strings, ``absent`` prints a missing side."""
    if d is None:
        return ""
    if d.baseline is None and d.candidate is None:
        return absent if d.note in (None, "n/a") else (d.note or absent)

    def one(v: float | None) -> str:
        return absent if v is None else value.format(v * scale)

    tail = d.note if d.delta is None else _no_negative_zero(change.format(d.delta * scale))
    if tail == "n/a":
        tail = "no delta"
    return (
        f"{one(d.baseline)} → {one(d.candidate)} ({tail})"
        if tail
        else f"{one(d.baseline)} → {one(d.candidate)}"
    )


RATE = ("{:.1f}%", "{:+.1f} pp", 100.0)


def _comparison_rows(tasks: Sequence[TaskComparison]) -> list[list[str]]:
    return [
        [
            t.task_id,
            _OUTCOME_LABEL[t.outcome],
            _side(t.baseline),
            _side(t.candidate),
            _delta(t.success_rate, *RATE),
            t.reason,
        ]
        for t in tasks
    ]


def render_comparison_markdown(comparison: Comparison) -> str:
    """comparison.md: both conditions, warnings, a verdict per task, measured and estimated deltas apart,
    the suite summary and the limits footnote.
    """
    b, c = comparison.baseline, comparison.candidate
    title = "Replay comparison" if comparison.replay else "Comparison"
    lines = [f"# {title}: {b.suite_id} {b.suite_version}", ""]
    if comparison.replay:
        lines += [f"> {REPLAY_NOTICE}", ""]
    rows = [
        [name, bv, cv] for (name, bv), (_, cv) in zip(_conditions_rows(b), _conditions_rows(c), strict=True)
    ]
    lines += _table(("Condition", "Baseline", "Candidate"), rows)
    if comparison.warnings:
        lines += ["", "Warnings:", *(f"- {w}" for w in comparison.warnings)]
    lines += ["", "## Tasks", ""]
    lines += _table(
        ("Task", "Outcome", "Baseline", "Candidate", "Δ success rate", "Why"),
        _comparison_rows(comparison.tasks),
    )
    s = comparison.summary
    outcomes = ", ".join(f"{n.count} {_OUTCOME_LABEL[Outcome(n.name)].strip('*')}" for n in s.outcomes)
    lines += ["", f"Outcomes: {outcomes or 'no tasks'}."]
    if not comparison.replay:
        lines += [
            "",
            "improved / regressed: at least 5 judged runs on both sides and disjoint 95% Wilson intervals. "
            'inconclusive: the intervals overlap; it means no difference detectable with this many runs, not "no '
            'change". low power: fewer than 5 judged runs on a side. not comparable: errored runs on a side or '
            "different modes.",
        ]
    both = [t for t in comparison.tasks if t.wall_ms_median is not None]
    lines += ["", "## Measured deltas (baseline → candidate)", ""]
    lines += _table(
        ("Task", "tokens/success", "wall median", "cached input ratio"),
        [
            [
                t.task_id,
                _delta(t.tokens_per_success, "{:,.0f}", "{:+,.0f}"),
                _delta(t.wall_ms_median, "{:,.1f} s", "{:+,.1f} s", 1 / 1000),
                _delta(t.cached_input_ratio, *RATE, absent=NOT_REPORTED),
            ]
            for t in both
        ]
        + [
            [
                "**suite**",
                _delta(s.tokens_per_success, "{:,.0f}", "{:+,.0f}"),
                _delta(s.wall_ms_median, "{:,.1f} s", "{:+,.1f} s", 1 / 1000),
                _delta(s.cached_input_ratio, *RATE, absent=NOT_REPORTED),
            ]
        ],
    )
    lines += [
        "",
        "n/a: not reported or undefined on a side (cached input ratio: the provider did not report it).",
    ]
    lines += ["", "## Estimated deltas (baseline → candidate)", ""]
    lines += _table(
        ("Task", "cost/success (USD)"),
        [[t.task_id, _delta(t.cost_per_success_usd, "{:,.4f}", "{:+,.4f}")] for t in both]
        + [["**suite**", _delta(s.cost_per_success_usd, "{:,.4f}", "{:+,.4f}")]],
    )
    lines += ["", f"Total estimated cost (USD): {_delta(s.cost_usd, '{:,.4f}', '{:+,.4f}')}."]
    lines += ["", "## Summary", ""]
    if comparison.replay:
        lines.append("Replay: each task is changed or unchanged by its observed status counts; no intervals.")
    else:
        shared = f"{s.tasks_compared} task{'' if s.tasks_compared == 1 else 's'} judged on both sides"
        lines.append(
            f"Suite success rate (mean of per-task rates over the {shared}, descriptive; no suite-level "
            f"verdict is claimed): {_delta(s.success_rate, *RATE)}, task-clustered standard error "
            f"{_num(_mul(s.baseline_stderr), 1)} pp → {_num(_mul(s.candidate_stderr), 1)} pp."
        )
        lines += ["", SUITE_RATE_NOTE]
    lines += ["", "## Limits", "", *(f"- {line}" for line in comparison.limits)]
    return "\n".join(lines) + "\n"


def _mul(value: float | None) -> float | None:
    return None if value is None else value * 100.0
