"""Properties of alisio.core.lab.reports.report: counts add up, errored runs change no rate, measured figures are honest."""

from __future__ import annotations

import math

import msgspec
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.lab.reports.report import (
    REPORT_SCHEMA_VERSION,
    AnswerSource,
    Rates,
    Report,
    finished_runs,
)
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.reports.report_json import decode_report, encode_report
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.stats.rates import median, sample_variance, wilson_interval
from tests.property.strategies_report import (
    conditions,
    conditions_strategy,
    record_lists_settings,
    run_records,
    task_runs,
)

JUDGED = st.sampled_from([RunStatus.PASS, RunStatus.FAIL, RunStatus.BUDGET_EXCEEDED])
records_lists = st.lists(run_records(lean=True), max_size=20)


def by_task(report: Report) -> dict[str, object]:
    return {t.task_id: t for t in report.tasks}


@record_lists_settings
@given(records_lists, conditions_strategy)
def test_counts_add_up(records: list[RunRecord], cond: object) -> None:
    """Per task judged = pass + fail + budget_exceeded, judged + errored = its runs; the summary sums tasks."""
    report = build_report(records, cond)  # type: ignore[arg-type]
    for t in report.tasks:
        runs = [r for r in records if r.task_id == t.task_id]
        assert t.runs == len(runs) == t.judged + t.errored
        assert t.judged == t.passes + t.fails + t.budget_exceeded
        assert t.passes == sum(r.status is RunStatus.PASS for r in runs)
        assert t.errored == sum(r.status is RunStatus.ERROR for r in runs)
        assert sum(c.count for c in t.budget_reasons) == t.budget_exceeded
        assert sum(c.count for c in t.error_reasons) == t.errored
    s = report.summary
    assert s.runs == len(records) and s.tasks == len({r.task_id for r in records})
    assert s.judged + s.errored == s.runs
    assert s.passes == sum(t.passes for t in report.tasks)
    assert [t.task_id for t in report.tasks] == sorted(t.task_id for t in report.tasks)


@record_lists_settings
@given(
    records_lists,
    st.lists(run_records(statuses=st.just(RunStatus.ERROR), lean=True), min_size=1, max_size=10),
)
def test_errored_runs_never_change_any_rate(records: list[RunRecord], errored: list[RunRecord]) -> None:
    """Adding errored runs to existing tasks changes only the error counts, never a rate or measured figure."""
    known = {r.task_id for r in records}
    errored = [e for e in errored if e.task_id in known]
    cond = conditions(k=3, rates=Rates(input_rate=1.0, output_rate=2.0))
    before, after = build_report(records, cond), build_report(records + errored, cond)
    for b, a in zip(before.tasks, after.tasks, strict=True):
        assert a.errored == b.errored + sum(e.task_id == b.task_id for e in errored)
        assert a.success_rate == b.success_rate and a.interval == b.interval
        assert (a.pass_at_k, a.pass_hat_k, a.pass_at_k_estimate) == (
            b.pass_at_k,
            b.pass_hat_k,
            b.pass_at_k_estimate,
        )
        assert a.low_power == b.low_power
        assert a.measured == b.measured and a.estimated == b.estimated
        assert a.cached_input_ratio == b.cached_input_ratio
    assert after.summary.success_rate == before.summary.success_rate
    assert after.summary.measured == before.summary.measured
    assert after.summary.estimated == before.summary.estimated


@record_lists_settings
@given(records_lists)
def test_success_rate_lies_inside_its_wilson_interval(records: list[RunRecord]) -> None:
    """successRate = passes/judged inside its 95% Wilson interval; absent exactly when nothing was judged."""
    for t in build_report(records, conditions()).tasks:
        if t.judged == 0:
            assert t.success_rate is None and t.interval is None and t.pass_at_k is None
            continue
        assert t.success_rate == t.passes / t.judged
        assert t.interval == wilson_interval(t.passes, t.judged)
        assert t.interval is not None and t.interval.low <= t.success_rate <= t.interval.high
        assert t.low_power == (t.judged < 5)


@record_lists_settings
@given(records_lists)
def test_replay_reports_have_no_intervals_and_no_low_power(records: list[RunRecord]) -> None:
    """In replay each task is its observed pass/fail: no intervals, no low power, no suite stderr."""
    report = build_report(records, conditions(mode=AnswerSource.REPLAY, k=1))
    assert all(t.interval is None and not t.low_power for t in report.tasks)
    assert report.summary.success_rate is None or report.summary.success_rate.stderr is None


def _reports_tokens(r: RunRecord) -> bool:
    m = r.measured
    return m.usage_complete and m.input_tokens is not None and m.output_tokens is not None


@record_lists_settings
@given(records_lists)
def test_tokens_are_summed_over_the_runs_that_reported_them_with_their_count(
    records: list[RunRecord],
) -> None:
    """Token totals are the exact sums over the judged runs that reported usage in every turn; absent when
    none did; when only some did, tokensRuns says how many, and the per-success figure and the estimated
    cost are absent (a partial sum would understate them). The suite total is the same over every task."""
    report = build_report(records, conditions())
    for t in report.tasks:
        judged = [r for r in records if r.task_id == t.task_id and r.judged]
        counted = [r for r in judged if _reports_tokens(r)]
        if not counted:
            assert t.measured.tokens is None and t.measured.tokens_per_success is None and t.estimated is None
            continue
        tokens = t.measured.tokens
        assert tokens is not None
        assert tokens.input == sum(r.measured.input_tokens or 0 for r in counted)
        assert tokens.output == sum(r.measured.output_tokens or 0 for r in counted)
        assert tokens.total == tokens.input + tokens.output
        if len(counted) < len(judged):
            assert t.measured.tokens_runs == len(counted)
            assert t.measured.tokens_per_success is None and t.estimated is None
        else:
            assert t.measured.tokens_runs is None
    judged_all = [r for r in records if r.judged]
    counted_all = [r for r in judged_all if _reports_tokens(r)]
    summary = report.summary.measured
    if not counted_all:
        assert summary.tokens is None
    else:
        assert summary.tokens is not None
        assert summary.tokens.input == sum(r.measured.input_tokens or 0 for r in counted_all)
        assert summary.tokens_runs == (len(counted_all) if len(counted_all) < len(judged_all) else None)


def _reports_cached(r: RunRecord) -> bool:
    m = r.measured
    return (
        r.judged
        and m.cached_input_tokens is not None
        and not m.cached_partial
        and m.usage_complete
        and m.input_tokens is not None
        and m.output_tokens is not None
    )


@record_lists_settings
@given(records_lists)
def test_cached_ratio_is_pooled_over_reporting_runs_and_absent_when_none(records: list[RunRecord]) -> None:
    """cachedInputRatio = Σcached / Σinput over judged, fully-reporting, non-partial runs; absent, never 0."""
    report = build_report(records, conditions())
    for t in report.tasks:
        reporting = [r for r in records if r.task_id == t.task_id and _reports_cached(r)]
        assert t.cached_input_runs == len(reporting)
        if not reporting:
            assert t.cached_input_ratio is None and t.cached_input_tokens is None
            continue
        cached = sum(r.measured.cached_input_tokens or 0 for r in reporting)
        inputs = sum(r.measured.input_tokens or 0 for r in reporting)
        assert t.cached_input_tokens == cached
        assert t.cached_input_ratio == (cached / inputs if inputs else None)
    all_reporting = [r for r in records if _reports_cached(r)]
    summary = report.summary.cached_input
    if not all_reporting:
        assert summary is None
        assert b"cachedInput" not in encode_report(report)
    else:
        assert summary is not None
        assert summary.runs_reporting == len(all_reporting)
        assert summary.runs_judged == report.summary.judged
        assert summary.tokens == sum(r.measured.cached_input_tokens or 0 for r in all_reporting)
        assert summary.input_tokens == sum(r.measured.input_tokens or 0 for r in all_reporting)


@record_lists_settings
@given(records_lists)
def test_per_success_figures_are_total_spend_over_successes(records: list[RunRecord]) -> None:
    """tokens and time per success = total over judged runs (failures included) / passes; absent at 0 passes."""
    report = build_report(records, conditions(rates=Rates(input_rate=3.0, output_rate=15.0)))
    for t in report.tasks:
        judged = [r for r in records if r.task_id == t.task_id and r.judged]
        wall = sum(r.measured.wall_ms for r in judged)
        assert t.measured.wall_ms_total == wall
        if t.passes == 0:
            assert t.measured.ms_per_success is None and t.measured.tokens_per_success is None
            continue
        assert t.measured.ms_per_success == wall / t.passes
        if t.measured.tokens is not None and t.measured.tokens_runs is None:
            assert t.measured.tokens_per_success == t.measured.tokens.total / t.passes
            assert t.estimated is not None
            cost = t.measured.tokens.input * 3.0 / 1e6 + t.measured.tokens.output * 15.0 / 1e6
            assert math.isclose(t.estimated.cost_usd, cost, rel_tol=1e-12, abs_tol=1e-12)


@record_lists_settings
@given(records_lists)
def test_wall_time_median_and_variance_match_the_stats_kernel(records: list[RunRecord]) -> None:
    """Per task and over the suite, the wall median and sample variance equal alisio.core.stats.rates over
    the judged runs."""
    report = build_report(records, conditions())
    every = [float(r.measured.wall_ms) for r in records if r.judged]
    assert report.summary.measured.wall_ms_median == median(every)
    for t in report.tasks:
        walls = [float(r.measured.wall_ms) for r in records if r.task_id == t.task_id and r.judged]
        assert t.measured.wall_ms_median == median(walls)
        expected = sample_variance(walls)
        if expected is None:
            assert t.measured.wall_ms_variance is None
        else:
            assert t.measured.wall_ms_variance is not None
            assert math.isclose(t.measured.wall_ms_variance, expected, rel_tol=1e-9, abs_tol=1e-6)


@record_lists_settings
@given(records_lists, conditions_strategy)
def test_report_json_round_trip(records: list[RunRecord], cond: object) -> None:
    """decode(encode(report)) == report."""
    report = build_report(records, cond)  # type: ignore[arg-type]
    assert decode_report(encode_report(report), "report.json") == Success(report)


def test_a_report_without_the_interruption_fields_still_decodes() -> None:
    """A schemaVersion 1 report written before plannedRuns/interrupted existed decodes: not interrupted, plan unknown."""
    report = build_report(task_runs("a", 3, 2), conditions(), planned_runs=3, interrupted=True)
    document = msgspec.json.decode(encode_report(report))
    assert (document["plannedRuns"], document["interrupted"], document["schemaVersion"]) == (3, True, 1)
    del document["plannedRuns"], document["interrupted"]
    old = decode_report(msgspec.json.encode(document), "old/report.json").unwrap()
    assert (old.planned_runs, old.interrupted) == (None, False)
    assert old == msgspec.structs.replace(report, planned_runs=None, interrupted=False)


def test_no_rates_means_no_estimated_block() -> None:
    """Without both rates there is no costUsd anywhere: Alisio does not guess prices."""
    report = build_report(task_runs("a", 3, 2), conditions(rates=None))
    assert report.tasks[0].estimated is None and report.summary.estimated is None
    assert b"costUsd" not in encode_report(report)


def test_documented_intervals_and_pass_k() -> None:
    """4/5 is 80.0% [37.6%, 96.4%]; pass@5 yes and pass^5 no (flaky, not solved)."""
    t = build_report(task_runs("a", 4, 1), conditions(k=5)).tasks[0]
    assert t.success_rate == 0.8
    assert t.interval is not None
    assert round(t.interval.low, 3) == 0.376 and round(t.interval.high, 3) == 0.964
    assert t.pass_at_k is True and t.pass_hat_k is False
    assert t.pass_at_k_estimate == 1.0 and t.pass_hat_k_estimate == 0.0


def test_estimates_are_absent_below_k_judged_runs() -> None:
    """With fewer judged runs than k, pass@k and pass^k are n/a (observed and estimate absent); low power."""
    t = build_report(task_runs("a", 2, 1, errors=7), conditions(k=10)).tasks[0]
    assert t.judged == 3 and t.pass_at_k_estimate is None and t.pass_hat_k_estimate is None
    assert t.low_power and t.pass_at_k is None and t.pass_hat_k is None
    # 3 passing runs out of k = 10 say nothing about "all 10 pass": never a "yes" for pass^10.
    t = build_report(task_runs("a", 3, 0, errors=7), conditions(k=10)).tasks[0]
    assert t.pass_hat_k is None and t.pass_hat_k_estimate is None


def test_more_judged_runs_than_k_give_the_estimate_not_the_observation() -> None:
    """With more judged runs than k, "any of the n passed" is pass@n: only the unbiased estimate is given."""
    t = build_report(task_runs("a", 1, 9), conditions(k=5)).tasks[0]
    assert t.judged == 10 and t.pass_at_k is None and t.pass_hat_k is None
    assert t.pass_at_k_estimate == 0.5  # 1 - C(9,5)/C(10,5) = 1 - 126/252
    assert t.pass_hat_k_estimate == 0.0


def test_suite_rate_is_the_mean_of_task_rates_with_clustered_stderr() -> None:
    """The §4.6 example: 3/5, 5/5, 0/5, 2/5 gives mean 0.5 and stderr 0.2082, not the pooled 0.1118."""
    records = task_runs("a", 3, 2) + task_runs("b", 5) + task_runs("c", 0, 5) + task_runs("d", 2, 3)
    rate = build_report(records, conditions()).summary.success_rate
    assert rate is not None and rate.tasks == 4
    assert math.isclose(rate.mean, 0.5)
    assert rate.stderr is not None and math.isclose(rate.stderr, 0.2082, abs_tol=5e-5)


def test_unequal_task_sizes_are_not_pooled() -> None:
    """A big task does not outweigh a small one: 100/100 and 0/5 average to 0.5, not 100/105."""
    records = task_runs("big", 100) + task_runs("small", 0, 5)
    rate = build_report(records, conditions()).summary.success_rate
    assert rate is not None and rate.mean == 0.5


def test_empty_records_give_an_empty_report() -> None:
    """No runs: no tasks, no rate, nothing measured, and it still encodes."""
    report = build_report([], conditions())
    assert report.tasks == () and report.summary.success_rate is None
    assert report.summary.measured.tokens is None and report.summary.measured.wall_ms_median is None
    assert decode_report(encode_report(report), "r").unwrap() == report


def test_not_a_report_is_a_clear_error() -> None:
    """JSON that is not a report, and bytes that are not JSON, fail with a message naming the source."""
    bad = decode_report(msgspec.json.encode({"hello": 1}), "x/report.json")
    assert "x/report.json: not an alisio report" in str(bad.failure())
    junk = decode_report(b"\x00not json", "y.json")
    assert "y.json: not valid JSON" in str(junk.failure())


@given(st.integers(REPORT_SCHEMA_VERSION + 1, 99))
def test_a_report_from_a_newer_schema_is_refused(version: int) -> None:
    """A report.json with a higher schemaVersion is a Failure naming the version, never a silent misreading."""
    document = msgspec.json.decode(encode_report(build_report(task_runs("a", 1), conditions())))
    document["schemaVersion"] = version
    match decode_report(msgspec.json.encode(document), "new/report.json"):
        case Failure(error):
            assert error.source == "new/report.json"
            assert error.message.startswith(f"schemaVersion {version} is newer than this alisio reads")
        case other:
            raise AssertionError(other)


@given(st.integers(0, 6), st.integers(0, 6), st.none() | st.integers(0, 40))
def test_finished_runs_counts_every_run_against_the_plan(
    passes: int, errors: int, planned: int | None
) -> None:
    """The runs held (errored ones too) ``of N planned runs`` when the plan is known, else ``N run(s)``."""
    report = build_report(task_runs("a", passes, errors=errors), conditions(), planned_runs=planned)
    done = passes + errors
    if planned is not None:
        assert finished_runs(report) == f"{done} of {planned} planned runs"
    else:
        assert finished_runs(report) == (f"{done} run" if done == 1 else f"{done} runs")
