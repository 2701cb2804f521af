"""What a comparison shows, decided once: the view that comparison.md, comparison.html and the CI summary
render (``alisio.core.lab.outputs.render_compare``, ``alisio.core.lab.outputs.render_html_compare``).

Rules this module keeps (besides those of ``alisio.core.lab.outputs.view``, whose formats it shares):

- Both conditions, the warnings, a verdict per task with its reason, the rule that made the verdicts, the
  per-task tests, the measured and estimated deltas apart, the suite summary and the limits footnote.
- Every number beyond the spec's (the per-task difference with Newcombe's interval, Boschloo's p-value, the
  adjusted p-value, the minimum detectable change, the suite t intervals and the paired difference) comes
  with one sentence saying what it is.
- Differences of rates print in percentage points with a sign (``+7.9 pp``, ``[-68.7, -3.8] pp``); p-values
  with four decimals (``alisio.core.stats.verdict.format_p``).
"""

from __future__ import annotations

from alisio.core.base import Frozen
from alisio.core.lab.comparisons.compare import (
    Comparison,
    Delta,
    DifferenceTest,
    Outcome,
    SideCounts,
    TaskComparison,
)
from alisio.core.lab.comparisons.compare_warnings import SEQUENTIAL_MARKS
from alisio.core.lab.comparisons.gate import OUTCOME_LABEL
from alisio.core.lab.outputs.formats import (
    NOT_REPORTED,
    REPLAY_NOTICE,
    SUITE_INTERVAL_NOTE,
    SUITE_RATE_NOTE,
    format_num,
    format_pp,
    format_rate,
    pct,
    suite_interval_text,
)
from alisio.core.lab.outputs.view import Notice, Table, condition_items
from alisio.core.lab.reports.naming import run_naming
from alisio.core.stats.exact import PValueMethod
from alisio.core.stats.paired import PairedDifference, PermutationMethod
from alisio.core.stats.rates import Interval, IntervalMethod
from alisio.core.stats.verdict import ALPHA, Adjustment, VerdictRule, format_interval, format_p
from alisio.core.text import plural

__all__ = [
    "NOT_RECORDED",
    "ComparisonView",
    "SideCondition",
    "answer_line",
    "comparison_view",
    "context_line",
    "context_subject",
    "outcomes_line",
    "side_text",
    "suite_line",
]


class SideCondition(Frozen, frozen=True, kw_only=True):
    """One condition on both sides; ``code`` marks values shown as code (hashes)."""

    name: str
    baseline: str
    candidate: str
    code: bool = False


class ComparisonView(Frozen, frozen=True, kw_only=True):
    """Everything a comparison page shows, as text."""

    title: str
    answer: str
    """The one line a reader came for: the verdicts counted, and the suite rates with their intervals."""
    notices: tuple[Notice, ...]
    conditions: tuple[SideCondition, ...]
    warnings: tuple[str, ...]
    tasks: Table
    """Task, outcome, baseline, candidate, Δ success rate, why: one row per task."""
    outcomes: str
    """``Outcomes: 1 improved, 2 inconclusive.``"""
    verdicts: tuple[str, ...]
    """The verdict rule and its legend (none in replay)."""
    tests: Table | None
    tests_notes: tuple[str, ...]
    measured: Table
    measured_note: str
    estimated: Table
    total_cost: str
    summary: tuple[str, ...]
    """Lines; an empty line separates paragraphs, ``- `` starts a list item."""
    limits: tuple[str, ...]


def side_text(side: SideCounts | None) -> str:
    """``3/5, 1 error: 60.0% [23.1%, 88.2%]``, or ``absent``."""
    if side is None:
        return "absent"
    errored = f", {side.errored} error" if side.errored else ""
    used = "" if side.context_used is None else f", used context {side.context_used}/{side.judged}"
    return f"{side.passes}/{side.judged}{errored}: {format_rate(side.success_rate, side.interval)}{used}"


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


def _task_row(t: TaskComparison) -> tuple[str, ...]:
    return (
        t.task_id,
        OUTCOME_LABEL[t.outcome],
        side_text(t.baseline),
        side_text(t.candidate),
        _delta(t.success_rate, *RATE),
        t.reason,
    )


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


def _difference(d: DifferenceTest, adjusted: str) -> str:
    """``-40.0 pp [-68.7, -3.8]``: the difference and its interval in percentage points. Under
    ``--verdict exact`` the interval inverts the test (it agrees with the raw p by construction), marked when
    it excludes 0 but the adjusted p does not decide; otherwise Newcombe's, marked when it and the test
    disagree (the test decides)."""
    interval = d.interval if d.exact_interval is None else d.exact_interval
    low, high = (format_pp(v).removesuffix(" pp") for v in (interval.low, interval.high))
    if d.exact_interval is None:
        mark = "" if d.interval_agrees else " (interval and test disagree: the test decides)"
    else:
        missed = d.p_value < ALPHA and d.p_adjusted is not None and d.p_adjusted >= ALPHA
        mark = f" (excludes 0 before the {adjusted}; the adjusted p decides)" if missed else ""
    return f"{format_pp(d.estimate)} [{low}, {high}]{mark}"


def _p_cell(d: DifferenceTest) -> str:
    return format_p(d.p_value) + (" (z)" if d.p_method is PValueMethod.POOLED_Z else "")


def _pp_interval(interval: Interval) -> str:
    low, high = (format_pp(v).removesuffix(" pp") for v in (interval.low, interval.high))
    return f"[{low}, {high}] pp"


def _tests(comparison: Comparison) -> tuple[Table | None, tuple[str, ...]]:
    """The per-task tests table and one sentence per column; ``None`` when no task was tested."""
    tested = [t for t in comparison.tasks if t.difference is not None]
    if not tested:
        return None, ()
    holm = comparison.adjustment is Adjustment.HOLM
    adjusted_head = "Holm-adjusted p" if holm else "BH-adjusted p"
    rows = []
    for t in tested:
        d = t.difference
        assert d is not None
        rows.append(
            (
                t.task_id,
                _difference(d, "Holm adjustment" if holm else "BH adjustment"),
                _p_cell(d),
                "—" if d.p_adjusted is None else format_p(d.p_adjusted),
                "none within 0-100%" if d.min_detectable is None else f"{d.min_detectable * 100:.1f} pp",
            )
        )
    family = comparison.summary.tasks_tested
    guard = (
        "the chance of any false claim among them stays at 5%"
        if holm
        else "on average at most 5% of the claims among them are false"
    )
    exact = comparison.verdict_rule is VerdictRule.EXACT
    head = "Δ [exact 95%, inverts the test]" if exact else "Δ [Newcombe 95%]"
    header = ("Task", head, "Boschloo p", adjusted_head, "detectable (80% power)")
    notes = (
        (
            f"{head}: the candidate's success rate minus the baseline's, with the exact unconditional 95% "
            "interval that inverts Boschloo's test (two one-sided 2.5% tests, Chan and Zhang 1999), so it "
            "excludes 0 exactly when Boschloo p < 0.05; for a (z) task the score interval that inverts the z "
            "test (Farrington and Manning 1990). Newcombe's interval is in --json (tasks[].difference.interval)."
            if exact
            else f"{head}: the candidate's success rate minus the baseline's, with Newcombe's hybrid score 95% "
            "interval; an interval that excludes 0 is evidence that the task changed. --verdict exact shows the "
            "interval that inverts the test instead."
        ),
        "Boschloo p: the two-sided p-value of Boschloo's exact test that both sides have the same success rate; "
        "a small value means a difference this large is unlikely by chance alone; (z) marks a task with more "
        "than a million possible tables, tested by the pooled two-proportion z test (asymptotic, accurate at "
        "that size) instead.",
        f"{adjusted_head}: the p-value corrected for the {family} task{'' if family == 1 else 's'} that can get "
        f"a verdict, so that below 0.05 {guard}; — for the tasks outside that family.",
        "detectable: the smallest change from the baseline rate that a two-sided 5% test on these runs detects "
        "80% of the time; smaller real changes easily go unseen, and the disjoint-interval rule and the "
        "correction across tasks need larger ones.",
    )
    return Table(header=header, rows=tuple(rows)), notes


def _paired_line(p: PairedDifference) -> str:
    if p.interval_method is IntervalMethod.POOLED_NEWCOMBE:
        how = (
            "the only task: Newcombe's 95% interval"
            if p.tasks == 1
            else "every task has the same difference: Newcombe's 95% interval of the pooled runs"
        )
    else:
        how = (
            f"95% t interval, {p.df} degree{'' if p.df == 1 else 's'} of freedom, approximate: where it and the "
            "test disagree, the test decides"
        )
    method = (
        f"exact law, {p.resamples:,} values"
        if p.p_method is PermutationMethod.EXACT
        else f"{p.resamples:,} seeded random permutations"
    )
    detectable = "n/a" if p.min_detectable is None else f"{p.min_detectable * 100:.1f} pp"
    agree = "" if p.interval_agrees else " (the interval and the test disagree here: the test decides)"
    return (
        f"Paired by task over {p.tasks} task{'' if p.tasks == 1 else 's'}: mean difference {format_pp(p.mean)}, "
        f"{_pp_interval(p.interval)} ({how}); permutation p within tasks = {format_p(p.p_value)} ({method})"
        f"{agree}; detectable at 80% power: {detectable}."
    )


def suite_line(comparison: Comparison) -> str:
    """The suite success rate line (descriptive: no suite-level verdict is claimed)."""
    s = comparison.summary
    shared = f"{s.tasks_compared} task{'' if s.tasks_compared == 1 else 's'} judged on both sides"
    return (
        f"Suite success rate (mean of per-task rates over the {shared}, descriptive; no suite-level "
        f"verdict is claimed): {_delta(s.success_rate, *RATE)}, {_stderr_text(s.baseline_stderr, s.candidate_stderr)}."
    )


def _stderr_text(baseline: float | None, candidate: float | None) -> str:
    """The task-clustered standard errors, or why there are none (one task; every task at the same rate)."""
    if baseline is None or candidate is None:
        return "no task-clustered standard error (it needs at least 2 tasks)"

    def one(value: float) -> str:
        return "0 (every task at the same rate)" if value == 0.0 else f"{format_num(value * 100.0, 1)} pp"

    return f"task-clustered standard error {one(baseline)} → {one(candidate)}"


def _summary(comparison: Comparison) -> tuple[str, ...]:
    s = comparison.summary
    if comparison.replay:
        return ("Replay: each task is changed or unchanged by its observed status counts; no intervals.",)
    lines = [suite_line(comparison)]
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
            "intervals suggest. Its t interval is an approximation: with few tasks or unequal runs per side it "
            "excludes 0 in more than 5% of suites where nothing changed; the permutation p is exact, and decides.",
            "- Permutation p: the share of the ways of reshuffling each task's runs between the two sides (within "
            'the task) that give a mean difference at least as far from 0 as the observed one, since under "no '
            'change" a run is equally likely on either side; valid for any runs per side.',
            "- detectable: the smallest mean difference that this many tasks, with this spread of per-task "
            "differences, detect 80% of the time (paired t approximation, two-sided 5%).",
        ]
    return tuple(lines)


def _deltas(comparison: Comparison) -> tuple[Table, Table, str]:
    s = comparison.summary
    both = [t for t in comparison.tasks if t.wall_ms_median is not None]
    measured_rows = [
        (
            t.task_id,
            _delta(t.tokens_per_success, "{:,.0f}", "{:+,.0f}"),
            _delta(t.wall_ms_median, "{:,.1f} s", "{:+,.1f} s", 1 / 1000),
            _delta(t.cached_input_ratio, *RATE, absent=NOT_REPORTED),
        )
        for t in both
    ]
    measured_rows.append(
        (
            "suite",
            _delta(s.tokens_per_success, "{:,.0f}", "{:+,.0f}"),
            _delta(s.wall_ms_median, "{:,.1f} s", "{:+,.1f} s", 1 / 1000),
            _delta(s.cached_input_ratio, *RATE, absent=NOT_REPORTED),
        )
    )
    measured = Table(
        header=("Task", "tokens/success", "wall median", "cached input ratio"),
        rows=tuple(measured_rows),
        total=True,
    )
    estimated_rows = [(t.task_id, _delta(t.cost_per_success_usd, "{:,.4f}", "{:+,.4f}")) for t in both]
    estimated_rows.append(("suite", _delta(s.cost_per_success_usd, "{:,.4f}", "{:+,.4f}")))
    estimated = Table(header=("Task", "cost/success (USD)"), rows=tuple(estimated_rows), total=True)
    total = f"Total estimated cost (USD): {_delta(s.cost_usd, '{:,.4f}', '{:+,.4f}')}."
    return measured, estimated, total


def outcomes_line(comparison: Comparison) -> str:
    """``Outcomes: 1 improved, 4 inconclusive, 1 not comparable.``"""
    counts = ", ".join(f"{n.count} {OUTCOME_LABEL[Outcome(n.name)]}" for n in comparison.summary.outcomes)
    return f"Outcomes: {counts or 'no tasks'}."


def answer_line(comparison: Comparison) -> str:
    """``Outcomes: 1 improved, 4 inconclusive. Suite success rate 65.7% [35.6%, 95.9%] → 73.6% [51.8%, 95.4%],
    paired difference +7.9 pp [-32.6, +48.3] pp.``: the answer first, in one line."""
    s = comparison.summary
    line = outcomes_line(comparison)
    if s.baseline_rate is None or s.candidate_rate is None:
        return line
    sides = " → ".join(
        f"{pct(r.mean)} {format_interval(r.interval)}" if r.interval is not None else pct(r.mean)
        for r in (s.baseline_rate, s.candidate_rate)
    )
    paired = ""
    if s.paired is not None:
        paired = f", paired difference {format_pp(s.paired.mean)} {_pp_interval(s.paired.interval)}"
    return f"{line} Suite success rate {sides}{paired}.{_context_part(comparison)}"


def _context_part(comparison: Comparison) -> str:
    """`` The context with-skill helped on 1 task, hurt on 0, no verdict on 2 (FWER 5%).`` when the two sides'
    contexts differ (else empty): the verdicts counted as a context experiment reads them."""
    line = context_line(comparison)
    return f" {line}" if line else ""


def context_subject(comparison: Comparison) -> str | None:
    """``The context with-skill``, ``The context b (against a)``, ``Removing the context a``; ``None`` when
    both sides had the same context, or none."""
    b, c = comparison.baseline.context, comparison.candidate.context
    if (b.digest if b else None) == (c.digest if c else None):
        return None
    if c is None:
        return f"Removing the context {b.label if b else ''}"
    if b is None:
        return f"The context {c.label}"
    return f"The context {c.label} (against {b.label})"


def context_line(comparison: Comparison) -> str | None:
    """``The context with-skill helped on N tasks, hurt on M, no verdict on K (FWER 5%).``, or ``None`` when
    both sides ran with the same context (or none), or in replay.

    Helped and hurt are the tasks whose exact test (Boschloo), adjusted across the tasks that can get a
    verdict, is below 0.05, by the sign of the difference: with Holm's adjustment (the default) the chance of
    any false "helped" or "hurt" stays at 5% (FWER), with Benjamini-Hochberg it is the false discovery rate.
    Every other task (adjusted p 0.05 or more, low power, errored runs, one side only) has no verdict."""
    subject = context_subject(comparison)
    if subject is None or comparison.replay:
        return None
    if any(mark in warning for warning in comparison.warnings for mark in SEQUENTIAL_MARKS):
        return None  # its fixed-k tests peek: eval variants --sequential counts the sequential decisions
    decided = [
        t.difference.estimate
        for t in comparison.tasks
        if t.difference is not None
        and t.difference.p_adjusted is not None
        and t.difference.p_adjusted < ALPHA
        and t.difference.estimate != 0
    ]
    helped = sum(1 for estimate in decided if estimate > 0)
    hurt = len(decided) - helped
    none = len(comparison.tasks) - len(decided)
    error = "FWER 5%" if comparison.adjustment is Adjustment.HOLM else "FDR 5%"
    return f"{subject} helped on {plural(helped, 'task')}, hurt on {hurt}, no verdict on {none} ({error})."


NOT_RECORDED = "not recorded"
"""A condition one report records and the other does not (an endpoint: live against replay or scripted)."""


def _conditions(comparison: Comparison) -> tuple[SideCondition, ...]:
    """Both sides' conditions by name, in the order reports show them; a condition only one side records
    (the endpoint of a live run against a replay, what served it) is ``not recorded`` on the other."""
    base = {c.name: c for c in condition_items(comparison.baseline)}
    cand = {c.name: c for c in condition_items(comparison.candidate)}
    # a naming condition one side does not have (no script) says so (``none``), not "not recorded"
    b_absent, c_absent = (
        {n.name: n.value for n in run_naming(side) if not n.present}
        for side in (comparison.baseline, comparison.candidate)
    )
    names = list(base)
    for i, name in enumerate(cand):
        if name not in base:
            before = list(cand)[:i]
            at = max((names.index(n) + 1 for n in before if n in names), default=0)
            names.insert(at, name)
    return tuple(
        SideCondition(
            name=name,
            baseline=base[name].value if name in base else b_absent.get(name, NOT_RECORDED),
            candidate=cand[name].value if name in cand else c_absent.get(name, NOT_RECORDED),
            code=(base.get(name) or cand[name]).code,
        )
        for name in names
    )


def comparison_view(comparison: Comparison) -> ComparisonView:
    """What comparison.md and comparison.html show of ``comparison``."""
    b = comparison.baseline
    title = "Replay comparison" if comparison.replay else "Comparison"
    verdicts: tuple[str, ...] = ()
    if not comparison.replay:
        exact = comparison.verdict_rule is VerdictRule.EXACT
        verdicts = (f"Verdicts: {comparison.verdicts}.", _LEGEND_EXACT if exact else _LEGEND_DISJOINT)
    tests, tests_notes = _tests(comparison)
    measured, estimated, total_cost = _deltas(comparison)
    return ComparisonView(
        title=f"{title}: {b.suite_id} {b.suite_version}",
        answer=answer_line(comparison),
        notices=(Notice(text=REPLAY_NOTICE),) if comparison.replay else (),
        conditions=_conditions(comparison),
        warnings=comparison.warnings,
        tasks=Table(
            header=("Task", "Outcome", "Baseline", "Candidate", "Δ success rate", "Why"),
            rows=tuple(_task_row(t) for t in comparison.tasks),
        ),
        outcomes=outcomes_line(comparison),
        verdicts=verdicts,
        tests=tests,
        tests_notes=tests_notes,
        measured=measured,
        measured_note="n/a: not reported or undefined on a side (cached input ratio: the provider did not report it).",
        estimated=estimated,
        total_cost=total_cost,
        summary=_summary(comparison),
        limits=comparison.limits,
    )
