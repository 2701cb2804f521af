"""Markdown for comparisons: comparison.md and ``alisio eval compare``.

Rules this module keeps (besides those of ``alisio.core.lab.render``, whose formats it shares):

- Both conditions, the warnings, a verdict per task, then the measured and estimated deltas apart, the suite
  summary and the limits footnote.
- The verdict rule is named ("Verdicts: ..."), and every number beyond the spec's (the per-task difference
  with Newcombe's interval, Boschloo's p-value, the adjusted p-value, the minimum detectable change, the
  suite t intervals and the paired difference) is explained in one sentence under its table or line.
- Differences of rates print in percentage points with a sign (``+7.9 pp``, ``[-68.7, -3.8] pp``); p-values
  with four decimals (``alisio.core.lab.verdict.format_p``).
"""

from __future__ import annotations

from collections.abc import Sequence

from alisio.core.lab.compare import Comparison, Delta, DifferenceTest, Outcome, SideCounts, TaskComparison
from alisio.core.lab.paired import PairedDifference, PermutationMethod
from alisio.core.lab.render import (
    NOT_REPORTED,
    REPLAY_NOTICE,
    SUITE_INTERVAL_NOTE,
    SUITE_RATE_NOTE,
    conditions_rows,
    format_pp,
    format_rate,
    markdown_table,
    suite_interval_text,
)
from alisio.core.lab.stats import Interval, IntervalMethod
from alisio.core.lab.verdict import Adjustment, VerdictRule, format_p

__all__ = ["render_comparison_markdown"]


def _num(value: float | None, digits: int = 0, absent: str = "n/a") -> str:
    return absent if value is None else f"{value:,.{digits}f}"


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


_LEGEND_DISJOINT = (
    "improved / regressed: at least 5 judged runs on both sides and disjoint 95% Wilson intervals. "
    'inconclusive: the intervals overlap; it means no difference detectable with this many runs, not "no '
    'change". low power: fewer than 5 judged runs on a side. not comparable: errored runs on a side or '
    "different modes."
)
_LEGEND_EXACT = (
    "improved / regressed: at least 5 judged runs on both sides and an adjusted Boschloo p-value below 0.05, "
    "in the direction of the difference. inconclusive: adjusted p-value 0.05 or more; it means no difference "
    'detectable with this many runs, not "no change". low power: fewer than 5 judged runs on a side. not '
    "comparable: errored runs on a side or different modes."
)


def _difference(d: DifferenceTest) -> str:
    """``-40.0 pp [-68.7, -3.8]``: the difference and Newcombe's interval, in percentage points."""
    low, high = (format_pp(v).removesuffix(" pp") for v in (d.interval.low, d.interval.high))
    return f"{format_pp(d.estimate)} [{low}, {high}]"


def _pp_interval(interval: Interval) -> str:
    low, high = (format_pp(v).removesuffix(" pp") for v in (interval.low, interval.high))
    return f"[{low}, {high}] pp"


def _tests_lines(comparison: Comparison) -> list[str]:
    """The per-task tests table and one sentence per column."""
    tested = [t for t in comparison.tasks if t.difference is not None]
    if not tested:
        return []
    holm = comparison.adjustment is Adjustment.HOLM
    adjusted_head = "Holm-adjusted p" if holm else "BH-adjusted p"
    rows = []
    for t in tested:
        d = t.difference
        assert d is not None
        rows.append(
            [
                t.task_id,
                _difference(d),
                format_p(d.p_value),
                "—" if d.p_adjusted is None else format_p(d.p_adjusted),
                "none within 0-100%" if d.min_detectable is None else f"{d.min_detectable * 100:.1f} pp",
            ]
        )
    family = comparison.summary.tasks_tested
    guard = (
        "the chance of any false claim among them stays at 5%"
        if holm
        else "on average at most 5% of the claims among them are false"
    )
    return [
        "",
        "## Per-task tests",
        "",
        *markdown_table(
            ("Task", "Δ [Newcombe 95%]", "Boschloo p", adjusted_head, "detectable (80% power)"), rows
        ),
        "",
        "- Δ [Newcombe 95%]: the candidate's success rate minus the baseline's, with Newcombe's hybrid score 95% "
        "interval; an interval that excludes 0 is evidence that the task changed.",
        "- Boschloo p: the two-sided p-value of Boschloo's exact test that both sides have the same success rate; "
        "a small value means a difference this large is unlikely by chance alone.",
        f"- {adjusted_head}: the p-value corrected for the {family} task{'' if family == 1 else 's'} that can get "
        f"a verdict, so that below 0.05 {guard}; — for the tasks outside that family.",
        "- detectable: the smallest change from the baseline rate that a two-sided 5% test on these runs detects "
        "80% of the time; smaller real changes easily go unseen, and the disjoint-interval rule and the "
        "correction across tasks need larger ones.",
    ]


def _paired_line(p: PairedDifference) -> str:
    if p.interval_method is IntervalMethod.POOLED_NEWCOMBE:
        how = (
            "the only task: Newcombe's 95% interval"
            if p.tasks == 1
            else "every task has the same difference: Newcombe's 95% interval of the pooled runs"
        )
    else:
        how = f"95% t interval, {p.df} degree{'' if p.df == 1 else 's'} of freedom"
    method = (
        f"exact, all {p.resamples:,} sign patterns"
        if p.p_method is PermutationMethod.EXACT
        else f"{p.resamples:,} seeded random sign patterns"
    )
    detectable = "n/a" if p.min_detectable is None else f"{p.min_detectable * 100:.1f} pp"
    return (
        f"Paired by task over {p.tasks} task{'' if p.tasks == 1 else 's'}: mean difference {format_pp(p.mean)}, "
        f"{_pp_interval(p.interval)} ({how}); sign-flip permutation p = {format_p(p.p_value)} ({method}); "
        f"detectable at 80% power: {detectable}."
    )


def _summary_lines(comparison: Comparison) -> list[str]:
    s = comparison.summary
    lines = ["", "## Summary", ""]
    if comparison.replay:
        return [
            *lines,
            "Replay: each task is changed or unchanged by its observed status counts; no intervals.",
        ]
    shared = f"{s.tasks_compared} task{'' if s.tasks_compared == 1 else 's'} judged on both sides"
    lines.append(
        f"Suite success rate (mean of per-task rates over the {shared}, descriptive; no suite-level "
        f"verdict is claimed): {_delta(s.success_rate, *RATE)}, task-clustered standard error "
        f"{_num(_mul(s.baseline_stderr), 1)} pp → {_num(_mul(s.candidate_stderr), 1)} pp."
    )
    sides = [
        (name, rate)
        for name, rate in (("baseline", s.baseline_rate), ("candidate", s.candidate_rate))
        if rate is not None and rate.interval is not None
    ]
    if sides:
        each = "; ".join(f"{name} {format_rate(r.mean, None)} {suite_interval_text(r)}" for name, r in sides)
        lines += ["", f"Suite rate intervals: {each}."]
    if s.paired is not None:
        lines += ["", _paired_line(s.paired)]
    lines += ["", SUITE_RATE_NOTE]
    if sides:
        lines.append(SUITE_INTERVAL_NOTE)
    if s.paired is not None:
        lines += [
            "",
            "- Paired by task: the mean over tasks of candidate rate − baseline rate; each task's difficulty cancels "
            "out of its difference, which is why pairing usually gives a narrower interval than the two sides' "
            "intervals suggest.",
            "- Sign-flip p: the share of the ways of flipping the signs of the per-task differences that give a "
            'mean at least as far from 0 as the observed one, since under "no change" each sign is equally likely.',
            "- detectable: the smallest mean difference that this many tasks, with this spread of per-task "
            "differences, detect 80% of the time (paired t approximation, two-sided 5%).",
        ]
    return lines


def _deltas_lines(comparison: Comparison) -> list[str]:
    s = comparison.summary
    both = [t for t in comparison.tasks if t.wall_ms_median is not None]
    lines = ["", "## Measured deltas (baseline → candidate)", ""]
    lines += markdown_table(
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
    lines += markdown_table(
        ("Task", "cost/success (USD)"),
        [[t.task_id, _delta(t.cost_per_success_usd, "{:,.4f}", "{:+,.4f}")] for t in both]
        + [["**suite**", _delta(s.cost_per_success_usd, "{:,.4f}", "{:+,.4f}")]],
    )
    return [*lines, "", f"Total estimated cost (USD): {_delta(s.cost_usd, '{:,.4f}', '{:+,.4f}')}."]


def render_comparison_markdown(comparison: Comparison) -> str:
    """comparison.md: both conditions, warnings, a verdict per task (and the rule that made them), the
    per-task tests, measured and estimated deltas apart, the suite summary and the limits footnote.
    """
    b, c = comparison.baseline, comparison.candidate
    title = "Replay comparison" if comparison.replay else "Comparison"
    lines = [f"# {title}: {b.suite_id} {b.suite_version}", ""]
    if comparison.replay:
        lines += [f"> {REPLAY_NOTICE}", ""]
    rows = [
        [name, bv, cv] for (name, bv), (_, cv) in zip(conditions_rows(b), conditions_rows(c), strict=True)
    ]
    lines += markdown_table(("Condition", "Baseline", "Candidate"), rows)
    if comparison.warnings:
        lines += ["", "Warnings:", *(f"- {w}" for w in comparison.warnings)]
    lines += ["", "## Tasks", ""]
    lines += markdown_table(
        ("Task", "Outcome", "Baseline", "Candidate", "Δ success rate", "Why"),
        _comparison_rows(comparison.tasks),
    )
    s = comparison.summary
    outcomes = ", ".join(f"{n.count} {_OUTCOME_LABEL[Outcome(n.name)].strip('*')}" for n in s.outcomes)
    lines += ["", f"Outcomes: {outcomes or 'no tasks'}."]
    if not comparison.replay:
        exact = comparison.verdict_rule is VerdictRule.EXACT
        lines += ["", f"Verdicts: {comparison.verdicts}.", "", _LEGEND_EXACT if exact else _LEGEND_DISJOINT]
    lines += _tests_lines(comparison)
    lines += _deltas_lines(comparison)
    lines += _summary_lines(comparison)
    lines += ["", "## Limits", "", *(f"- {line}" for line in comparison.limits)]
    return "\n".join(lines) + "\n"


def _mul(value: float | None) -> float | None:
    return None if value is None else value * 100.0
