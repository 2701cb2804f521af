"""Properties of alisio.core.lab.comparisons.compare: refusals, antisymmetry, verdicts with the right numbers, honest deltas."""

from __future__ import annotations

import math
from statistics import NormalDist

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.errors import IncompatibleReports
from alisio.core.lab.comparisons.compare import (
    Comparison,
    Outcome,
    TaskComparison,
    compare_reports,
    limits_footnote,
)
from alisio.core.lab.reports.report import AnswerSource, CompactionSettings, Rates, Report
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.runs.records import RunRecord
from alisio.core.stats.exact import PValueMethod, difference_p, pooled_z_p
from alisio.core.stats.rates import IntervalMethod
from alisio.core.stats.verdict import Adjustment, VerdictRule
from tests.property.strategies_report import conditions, task_runs

RATES = Rates(input_rate=1.0, output_rate=4.0)


def report(*tasks: list[RunRecord], **cond: object) -> Report:
    records = [r for task in tasks for r in task]
    return build_report(records, conditions(**cond))  # type: ignore[arg-type]


def compared(baseline: Report, candidate: Report) -> Comparison:
    result = compare_reports(baseline, candidate)
    assert isinstance(result, Success), result
    return result.unwrap()


def task(comparison: Comparison, task_id: str) -> TaskComparison:
    return next(t for t in comparison.tasks if t.task_id == task_id)


side_counts = st.tuples(
    st.integers(0, 12), st.integers(0, 12), st.integers(0, 3), st.integers(0, 2)
)  # pass, fail, budget_exceeded, error


@given(st.dictionaries(st.sampled_from("abcde"), st.tuples(side_counts, side_counts), min_size=1))
def test_swapping_sides_swaps_improved_and_regressed(
    plan: dict[str, tuple[tuple[int, ...], tuple[int, ...]]],
) -> None:
    """compare(b, c) improved <=> compare(c, b) regressed; other outcomes and |deltas| are unchanged."""
    base = report(*(task_runs(t, *p[0]) for t, p in plan.items() if sum(p[0])))
    cand = report(*(task_runs(t, *p[1], wall_ms=50_000) for t, p in plan.items() if sum(p[1])))
    forward, backward = compared(base, cand), compared(cand, base)
    swap = {
        Outcome.IMPROVED: Outcome.REGRESSED,
        Outcome.REGRESSED: Outcome.IMPROVED,
        Outcome.BASELINE_ONLY: Outcome.CANDIDATE_ONLY,
        Outcome.CANDIDATE_ONLY: Outcome.BASELINE_ONLY,
    }
    for f, b in zip(forward.tasks, backward.tasks, strict=True):
        assert f.task_id == b.task_id
        assert b.outcome == swap.get(f.outcome, f.outcome)
        for name in ("success_rate", "wall_ms_median", "tokens_per_success"):
            fd, bd = getattr(f, name), getattr(b, name)
            if fd is not None and fd.delta is not None:
                assert bd.delta == -fd.delta


@given(st.sampled_from(["1.0.1", "2.0.0", "1.1.0"]))
def test_different_suite_versions_are_refused(version: str) -> None:
    """A different suiteVersion is refused with both versions named (exit 3 at the CLI)."""
    base = report(task_runs("a", 5), suite_version="1.0.0")
    cand = report(task_runs("a", 5), suite_version=version)
    match compare_reports(base, cand):
        case Failure(IncompatibleReports(message=message)):
            assert "1.0.0" in message and version in message and "suiteVersion" in message
        case _:
            raise AssertionError("different suite versions must be refused")


def test_different_suite_ids_are_refused() -> None:
    """A different suiteId is refused."""
    result = compare_reports(report(task_runs("a", 5)), report(task_runs("a", 5), suite_id="other"))
    assert isinstance(result, Failure)
    assert "different suites" in str(result.failure())


def test_same_version_different_content_hash_is_a_warning() -> None:
    """suiteVersion equal but the content hash not: compared, with the bump-your-version warning."""
    comparison = compared(report(task_runs("a", 5)), report(task_runs("a", 5), suite_hash="hash-2"))
    assert any("without bumping suiteVersion" in w for w in comparison.warnings)


def test_an_interrupted_side_is_a_warning_naming_it() -> None:
    """Either side stopped by Ctrl-C: a warning naming that side and its finished/planned runs; none otherwise."""
    whole = report(task_runs("a", 5))
    cut = msgspec.structs.replace(report(task_runs("a", 3)), planned_runs=10, interrupted=True)
    assert not any("interrupted" in w for w in compared(whole, whole).warnings)
    warnings = [w for w in compared(whole, cut).warnings if "interrupted" in w]
    assert warnings == [
        "the candidate was interrupted after 3 of 10 planned runs: tasks that never ran are missing and its "
        "rates cover the finished runs only"
    ]
    assert [w.split(" was")[0] for w in compared(cut, whole).warnings if "interrupted" in w] == [
        "the baseline"
    ]


def test_verdicts_with_the_documented_numbers() -> None:
    """1/10 -> 9/10 improved, 10/10 -> 3/10 regressed, 6/10 -> 7/10 inconclusive, 0/4 -> 4/4 low power,
    an errored run not comparable, one-sided tasks listed as such."""
    base = report(
        task_runs("up", 1, 9),
        task_runs("down", 10),
        task_runs("same", 6, 4),
        task_runs("few", 0, 4),
        task_runs("err", 5, 5),
        task_runs("gone", 3, 2),
        k=10,
    )
    cand = report(
        task_runs("up", 9, 1),
        task_runs("down", 3, 7),
        task_runs("same", 7, 3),
        task_runs("few", 4),
        task_runs("err", 5, 4, errors=1),
        task_runs("new", 5),
        k=10,
    )
    c = compared(base, cand)
    assert {t.task_id: t.outcome for t in c.tasks} == {
        "up": Outcome.IMPROVED,
        "down": Outcome.REGRESSED,
        "same": Outcome.INCONCLUSIVE,
        "few": Outcome.LOW_POWER,
        "err": Outcome.NOT_COMPARABLE,
        "gone": Outcome.BASELINE_ONLY,
        "new": Outcome.CANDIDATE_ONLY,
    }
    up = task(c, "up")
    assert up.success_rate is not None and up.success_rate.delta is not None
    assert round(up.success_rate.delta, 6) == 0.8
    assert up.baseline is not None and up.baseline.interval is not None
    assert round(up.baseline.interval.high, 3) == 0.404
    assert up.candidate is not None and up.candidate.interval is not None
    assert round(up.candidate.interval.low, 3) == 0.596
    assert task(c, "gone").candidate is None and task(c, "new").baseline is None
    assert dict((n.name, n.count) for n in c.summary.outcomes)["inconclusive"] == 1
    assert c.summary.errored == (0, 1)
    assert any('not "no change"' in line for line in c.limits)
    assert any("not a significance test" in line for line in c.limits)


def test_different_modes_make_every_task_not_comparable() -> None:
    """A live report against a replay report: every shared task is not comparable, with a warning."""
    c = compared(report(task_runs("a", 0, 10)), report(task_runs("a", 10), mode=AnswerSource.REPLAY))
    assert task(c, "a").outcome is Outcome.NOT_COMPARABLE
    assert any("modes differ" in w for w in c.warnings)


def test_replay_reports_compare_as_changed_or_unchanged() -> None:
    """Two replays: a task whose status counts differ is changed, otherwise unchanged; no intervals."""
    base = report(task_runs("a", 1), task_runs("b", 1), mode=AnswerSource.REPLAY, k=1)
    cand = report(task_runs("a", 1), task_runs("b", 0, 0, errors=1), mode=AnswerSource.REPLAY, k=1)
    c = compared(base, cand)
    assert c.replay
    assert task(c, "a").outcome is Outcome.UNCHANGED
    assert task(c, "b").outcome is Outcome.CHANGED
    side = task(c, "a").baseline
    assert side is not None and side.interval is None
    assert any("harness, not the model" in line for line in c.limits)


def test_token_and_cost_deltas_need_the_same_compaction_settings() -> None:
    """Different compaction settings: token and cost deltas are not comparable; success rate still is."""
    base = report(task_runs("a", 5), rates=RATES)
    cand = report(
        task_runs("a", 5),
        rates=RATES,
        compaction=CompactionSettings(threshold=0.6, max_context_chars=200_000),
    )
    t = task(compared(base, cand), "a")
    assert t.tokens_per_success is not None and t.tokens_per_success.delta is None
    assert t.tokens_per_success.note == "not comparable: compaction settings differ"
    assert t.cost_per_success_usd is not None and t.cost_per_success_usd.delta is None
    assert t.success_rate is not None and t.success_rate.delta == 0.0


def test_costs_are_compared_only_with_the_same_rates() -> None:
    """Same rates: a cost delta; different or missing rates: no cost delta, a note instead."""
    same = task(
        compared(report(task_runs("a", 5), rates=RATES), report(task_runs("a", 4, 1), rates=RATES)), "a"
    )
    assert same.cost_per_success_usd is not None and same.cost_per_success_usd.delta is not None
    other = Rates(input_rate=2.0, output_rate=4.0)
    diff = task(compared(report(task_runs("a", 5), rates=RATES), report(task_runs("a", 5), rates=other)), "a")
    assert diff.cost_per_success_usd is not None and diff.cost_per_success_usd.delta is None
    assert (
        diff.cost_per_success_usd.baseline is None
        and diff.cost_per_success_usd.note == "not compared: different rates"
    )


def test_cached_input_ratio_delta() -> None:
    """cachedInputRatio delta when both sides report it; absent with a note when one side does not."""
    base = report(task_runs("a", 5, cached_input_tokens=2_000))
    cand = report(task_runs("a", 5, cached_input_tokens=6_000))
    both = task(compared(base, cand), "a").cached_input_ratio
    assert both is not None and both.delta is not None and round(both.delta, 6) == 0.4
    one = task(compared(report(task_runs("a", 5)), cand), "a").cached_input_ratio
    assert one is not None and one.baseline is None and one.delta is None


def test_comparison_json_round_trip() -> None:
    """The --json comparison decodes back to the same Comparison."""
    c = compared(report(task_runs("a", 1, 9), rates=RATES), report(task_runs("a", 9, 1), rates=RATES))
    assert msgspec.json.decode(msgspec.json.encode(c), type=Comparison) == c


def test_suite_rate_compares_the_same_tasks_on_both_sides() -> None:
    """A task on one side only (or with no judged runs on a side) stays out of both suite means, with a warning."""
    base = report(task_runs("both", 5, 5), task_runs("gone", 10), task_runs("dead", 0, errors=5), k=10)
    cand = report(task_runs("both", 6, 4), task_runs("new", 0, 10), task_runs("dead", 5, 5), k=10)
    c = compared(base, cand)
    s = c.summary
    assert s.tasks_compared == 1
    assert (s.success_rate.baseline, s.success_rate.candidate) == (0.5, 0.6)
    assert s.success_rate.delta is not None and abs(s.success_rate.delta - 0.1) < 1e-12
    assert any("only in the baseline: gone" in w and "only in the candidate: new" in w for w in c.warnings)
    same = compared(base, base)
    assert not any("different tasks" in w for w in same.warnings)
    assert same.summary.tasks_compared == 2


def test_summary_cost_per_success_is_compared_with_the_same_rates() -> None:
    """The suite's cost per success (total cost over successes) has its own delta next to the total cost."""
    base = report(task_runs("a", 2, 2), rates=RATES)
    cand = report(task_runs("a", 4), rates=RATES)
    s = compared(base, cand).summary
    assert s.cost_per_success_usd is not None and s.cost_per_success_usd.delta is not None
    assert base.summary.estimated is not None and cand.summary.estimated is not None
    assert s.cost_per_success_usd.baseline == base.summary.estimated.cost_per_success_usd
    assert s.cost_per_success_usd.candidate == cand.summary.estimated.cost_per_success_usd
    neither = compared(report(task_runs("a", 2, 2)), report(task_runs("a", 4))).summary
    assert neither.cost_usd.note == "not estimated: no rates given"


def test_replay_footnote_does_not_claim_not_comparable() -> None:
    """In replay an errored run changes a task; the footnote must not say "not comparable" there."""
    base = report(task_runs("a", 1), mode=AnswerSource.REPLAY, k=1)
    cand = report(task_runs("a", 0, errors=1), mode=AnswerSource.REPLAY, k=1)
    c = compared(base, cand)
    assert task(c, "a").outcome is Outcome.CHANGED
    assert not any("not comparable" in line for line in c.limits)
    assert any("Errored runs are excluded" in line for line in c.limits)


def test_comparing_a_run_with_itself_says_so() -> None:
    """The same report twice (an easy slip on the command line) is flagged, and claims no direction."""
    base = report(task_runs("a", 0, 5), task_runs("b", 5))
    c = compared(base, base)
    assert any("same run (run-1)" in w for w in c.warnings)
    assert {t.outcome for t in c.tasks} == {Outcome.INCONCLUSIVE}


@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_a_live_footnote_states_the_four_limits_and_the_errored_counts(baseline: int, candidate: int) -> None:
    """Live: a screen not a significance test, independent runs, no correction across tasks, errored excluded."""
    text = " ".join(limits_footnote(False, (baseline, candidate)))
    assert "conservative screen, not a significance test" in text
    assert "Repetitions are assumed independent" in text
    assert "no correction for the number of tasks" in text
    assert (
        f"Errored runs are excluded from every rate ({baseline} in the baseline, {candidate} in the" in text
    )


@given(st.booleans(), st.integers(0, 10_000), st.integers(0, 10_000))
def test_every_footnote_line_is_one_sentence_and_names_the_errored_counts(
    replay: bool, baseline: int, candidate: int
) -> None:
    """Each limit is one sentence; replay says it measures the harness, and both modes count errored runs."""
    lines = limits_footnote(replay, (baseline, candidate))
    assert all(line.endswith(".") and line.count(". ") == 0 for line in lines)
    assert sum(f"({baseline} in the baseline, {candidate} in the candidate)" in line for line in lines) == 1
    assert ("measures the harness, not the model" in " ".join(lines)) is replay


# --- exact tests, the exact rule, the paired suite difference ---------------------------------------------


def three_tasks() -> tuple[Report, Report]:
    """10/10 -> 6/10 on two tasks, 5/10 -> 5/10 on a third (the issue's example, corrected)."""
    base = report(task_runs("a", 10), task_runs("b", 10), task_runs("c", 5, 5), k=10)
    cand = report(task_runs("a", 6, 4), task_runs("b", 6, 4), task_runs("c", 5, 5), k=10)
    return base, cand


def test_every_live_task_carries_newcombe_boschloo_and_holm() -> None:
    """10/10 -> 6/10: difference -0.4, Newcombe [-0.6873, -0.0384], p 0.0422, Holm over 3 tasks 0.1266."""
    c = compared(*three_tasks())
    d = task(c, "a").difference
    assert d is not None and round(d.estimate, 6) == -0.4
    assert (round(d.interval.low, 4), round(d.interval.high, 4)) == (-0.6873, -0.0384)
    assert round(d.p_value, 4) == 0.0422 and d.p_adjusted is not None and round(d.p_adjusted, 4) == 0.1266
    assert d.min_detectable is not None and 0.4 < d.min_detectable < 0.6
    assert c.summary.tasks_tested == 3
    # The default rule is the spec's: the intervals overlap, so inconclusive; the name is recorded.
    assert task(c, "a").outcome is Outcome.INCONCLUSIVE
    assert (
        c.verdict_rule is VerdictRule.DISJOINT and c.verdicts == "disjoint 95% Wilson intervals (the default)"
    )


def test_the_exact_rule_decides_from_the_adjusted_p_value() -> None:
    """One task 10/10 -> 6/10: p = 0.0422 < 0.05 is regressed under the exact rule, inconclusive by default."""
    base, cand = report(task_runs("a", 10), k=10), report(task_runs("a", 6, 4), k=10)
    exact = compare_reports(base, cand, rule=VerdictRule.EXACT).unwrap()
    assert task(exact, "a").outcome is Outcome.REGRESSED
    assert task(exact, "a").reason == "Holm-adjusted Boschloo p = 0.0422 < 0.05, candidate lower"
    assert exact.verdicts == "Holm-adjusted Boschloo exact test, family-wise 5%"
    assert any("Boschloo's exact test with Holm-adjusted p-values" in line for line in exact.limits)
    assert task(compared(base, cand), "a").outcome is Outcome.INCONCLUSIVE
    # Three tasks: Holm raises it to 0.1266, so the exact rule stays inconclusive; BH gives 0.0633.
    three = compare_reports(*three_tasks(), rule=VerdictRule.EXACT).unwrap()
    assert task(three, "a").outcome is Outcome.INCONCLUSIVE
    bh = compare_reports(*three_tasks(), rule=VerdictRule.EXACT, adjustment=Adjustment.BH).unwrap()
    d = task(bh, "a").difference
    assert d is not None and d.p_adjusted is not None and round(d.p_adjusted, 4) == 0.0633


def test_low_power_and_not_comparable_keep_their_rules_and_leave_the_family() -> None:
    """Under the exact rule a 0/4 -> 4/4 task is low power and an errored one not comparable; neither is adjusted."""
    base = report(task_runs("few", 0, 4), task_runs("err", 5, 5), task_runs("ok", 0, 10), k=10)
    cand = report(task_runs("few", 4), task_runs("err", 0, 9, errors=1), task_runs("ok", 10), k=10)
    c = compare_reports(base, cand, rule=VerdictRule.EXACT).unwrap()
    assert task(c, "few").outcome is Outcome.LOW_POWER and task(c, "err").outcome is Outcome.NOT_COMPARABLE
    for name in ("few", "err"):
        d = task(c, name).difference
        assert d is not None and d.p_adjusted is None
    assert task(c, "ok").outcome is Outcome.IMPROVED and c.summary.tasks_tested == 1


@settings(max_examples=40)
@given(st.dictionaries(st.sampled_from("abcd"), st.tuples(side_counts, side_counts), min_size=1, max_size=3))
def test_the_exact_rule_is_antisymmetric_and_adjusted_p_is_never_below_raw(
    plan: dict[str, tuple[tuple[int, ...], tuple[int, ...]]],
) -> None:
    """compare(b, c) improved <=> compare(c, b) regressed under the exact rule; p <= p adjusted <= 1."""
    base = report(*(task_runs(t, *p[0]) for t, p in plan.items() if sum(p[0])))
    cand = report(*(task_runs(t, *p[1]) for t, p in plan.items() if sum(p[1])))
    forward = compare_reports(base, cand, rule=VerdictRule.EXACT).unwrap()
    backward = compare_reports(cand, base, rule=VerdictRule.EXACT).unwrap()
    swap = {Outcome.IMPROVED: Outcome.REGRESSED, Outcome.REGRESSED: Outcome.IMPROVED}
    swap |= {Outcome.BASELINE_ONLY: Outcome.CANDIDATE_ONLY, Outcome.CANDIDATE_ONLY: Outcome.BASELINE_ONLY}
    for f, b in zip(forward.tasks, backward.tasks, strict=True):
        assert b.outcome == swap.get(f.outcome, f.outcome)
        if f.difference is not None and f.difference.p_adjusted is not None:
            assert f.difference.p_value <= f.difference.p_adjusted <= 1.0


def test_the_suite_difference_is_paired_with_t_intervals_per_side() -> None:
    """The notes' four tasks: paired mean +0.25, t interval [-0.055, 0.555], stratified permutation p 0.0767 (the
    sign-flip p was 0.25); sides get t intervals."""
    plan = {"a": ((3, 2), (5, 0)), "b": ((5, 0), (5, 0)), "c": ((0, 5), (1, 4)), "d": ((2, 3), (4, 1))}
    base = report(*(task_runs(t, *p[0]) for t, p in plan.items()))
    cand = report(*(task_runs(t, *p[1]) for t, p in plan.items()))
    s = compared(base, cand).summary
    assert s.paired is not None and s.paired.mean == 0.25 and round(s.paired.p_value, 4) == 0.0767
    assert (round(s.paired.interval.low, 3), round(s.paired.interval.high, 3)) == (-0.055, 0.555)
    assert s.baseline_rate is not None and s.baseline_rate.interval_method is IntervalMethod.T
    assert s.baseline_rate.interval is not None and s.baseline_rate.interval.high > s.baseline_rate.mean


def test_replay_comparisons_have_no_tests() -> None:
    """Two replays: no difference tests, no paired difference, no intervals."""
    base = report(task_runs("a", 1), mode=AnswerSource.REPLAY, k=1)
    cand = report(task_runs("a", 0, 1), mode=AnswerSource.REPLAY, k=1)
    c = compared(base, cand)
    assert task(c, "a").difference is None and c.summary.paired is None
    assert c.summary.baseline_rate is not None and c.summary.baseline_rate.interval is None


def test_json_carries_every_new_number() -> None:
    """comparison JSON: verdictRule, verdicts, adjustment, tasks[].difference, summary.paired and the side rates."""
    data = msgspec.json.decode(msgspec.json.encode(compared(*three_tasks())))
    assert data["verdictRule"] == "disjoint" and data["adjustment"] == "holm"
    assert set(data["tasks"][0]["difference"]) == {
        "estimate",
        "interval",
        "pValue",
        "pAdjusted",
        "minDetectable",
    }
    paired = data["summary"]["paired"]
    assert {"tasks", "mean", "interval", "intervalMethod", "df", "pValue", "pMethod", "resamples"} <= set(
        paired
    )
    assert data["summary"]["baselineRate"]["intervalMethod"] == "t"
    assert data["summary"]["tasksTested"] == 3


def _scaled(r: Report, passes: int, judged: int) -> Report:
    """``r`` with its one task's counts replaced by ``passes`` of ``judged`` runs (no errors)."""
    t = r.tasks[0]
    big = msgspec.structs.replace(
        t, runs=judged, judged=judged, passes=passes, fails=judged - passes, success_rate=passes / judged
    )
    return msgspec.structs.replace(r, tasks=(big,))


def test_huge_k_is_tested_by_the_labelled_z_test_without_the_table_space() -> None:
    """10^4 and 10^6 runs per side: the comparison finishes at once (no (n+1)² arrays, no MemoryError), the
    p-value comes from the pooled z test and says so, and 2,000 runs per side (above the million-cell budget)
    already switch while 999 stay on Boschloo's exact test."""
    base = report(task_runs("t", 5, 5))
    for k in (10_000, 1_000_000):
        result = compared(_scaled(base, k // 2, k), _scaled(base, k // 2 + k // 50, k))
        d = result.tasks[0].difference
        assert d is not None and d.p_method is PValueMethod.POOLED_Z and 0.0 < d.p_value < 0.05
    assert difference_p(500, 999, 520, 999) is not None
    assert difference_p(500, 999, 520, 999)[1] is PValueMethod.BOSCHLOO  # type: ignore[index]
    assert difference_p(1000, 2000, 1040, 2000)[1] is PValueMethod.POOLED_Z  # type: ignore[index]
    z = pooled_z_p(1000, 2000, 1040, 2000)
    assert z is not None and math.isclose(z, 2 * NormalDist().cdf(-40 / 2000 / math.sqrt(0.51 * 0.49 / 1000)))


def test_the_row_says_when_newcombe_and_boschloo_disagree() -> None:
    """0/5 vs 3/5: Newcombe [+3.0, +88.2] pp excludes 0 but Boschloo p = 0.0618 does not reject, and the
    difference records the disagreement; 0/10 vs 9/10 agrees."""
    plan = {"a": ((0, 5), (3, 2)), "b": ((0, 10), (9, 1))}
    base = report(*(task_runs(t, *p[0]) for t, p in plan.items()))
    cand = report(*(task_runs(t, *p[1]) for t, p in plan.items()))
    a, b = (task(compared(base, cand), name).difference for name in "ab")
    assert a is not None and b is not None
    assert round(a.p_value, 4) == 0.0618 and a.interval.low > 0 and not a.interval_agrees
    assert b.interval_agrees
