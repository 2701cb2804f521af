"""Properties of alisio.core.lab.outputs.render: every condition in the header, Measured and Estimated apart, honest absences."""

from __future__ import annotations

import re

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from alisio.core.lab.comparisons.compare import compare_reports
from alisio.core.lab.outputs.formats import REPLAY_NOTICE, SCRIPTED_NOTICE, SUITE_RATE_NOTE, format_rate
from alisio.core.lab.outputs.render import render_markdown
from alisio.core.lab.outputs.render_compare import render_comparison_markdown
from alisio.core.lab.reports.report import AnswerSource, Conditions, Rates
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.reports.report_json import encode_report
from alisio.core.lab.runs.records import RunRecord
from alisio.core.stats.rates import wilson_interval
from tests.property.strategies_report import conditions, conditions_strategy, run_records, task_runs


@given(st.lists(run_records(lean=True), max_size=12), conditions_strategy)
def test_header_carries_every_condition(records: list[RunRecord], cond: Conditions) -> None:
    """Suite, version, content hash, harness, config hash, provider, model, mode, k, seed, compaction, run id."""
    text = render_markdown(build_report(records, cond))
    for value in (
        cond.suite_id,
        cond.suite_version,
        cond.suite_hash,
        cond.harness_version,
        cond.config_hash,
        cond.provider,
        cond.model,
        str(cond.mode),
        f"| k (repetitions per task) | {cond.k} |",
        f"| Seed (run order only) | {cond.seed} |",
        f"maxContextChars {cond.compaction.max_context_chars:,}",
        cond.run_id,
        cond.created_at,
    ):
        assert value in text
    assert (REPLAY_NOTICE in text) == (cond.mode is AnswerSource.REPLAY)
    assert SUITE_RATE_NOTE in text
    assert text.index("## Measured") < text.index("## Estimated")


@given(
    st.sampled_from(["scripted", "openai_compat"]), st.sampled_from([AnswerSource.LIVE, AnswerSource.REPLAY])
)
def test_a_scripted_live_run_says_it_measures_no_model(provider: str, mode: AnswerSource) -> None:
    """A live report of the scripted provider says so in its title (its own mode, ``scripted``), its Mode row
    and a notice; no other report does."""
    cond = msgspec.structs.replace(conditions(), provider=provider, mode=mode)
    text = render_markdown(build_report(task_runs("a", 2), cond))
    scripted = provider == "scripted" and mode is AnswerSource.LIVE
    assert (SCRIPTED_NOTICE in text) == scripted
    title = text.splitlines()[0]
    assert title.endswith("(scripted)" if scripted else f"({mode})")
    assert f"| Mode | {'scripted' if scripted else mode} |" in text


def test_an_interrupted_report_says_so_with_the_planned_runs() -> None:
    """report.md of an interrupted run says how many of the planned runs finished; a complete one says nothing."""
    records = task_runs("a", 5, 2)
    cut = render_markdown(build_report(records, conditions(), planned_runs=35, interrupted=True))
    assert "> **Interrupted after 7 of 35 planned runs: tasks that never ran are missing.**" in cut
    unknown = render_markdown(build_report(records, conditions(), interrupted=True))
    assert "Interrupted after 7 runs: tasks that never ran are missing." in unknown
    assert "Interrupted" not in render_markdown(build_report(records, conditions(), planned_runs=7))


def test_rates_print_with_their_wilson_interval() -> None:
    """4/5 prints as the spec's 80.0% [37.6%, 96.4%]; 3/5 as 60.0% [23.1%, 88.2%]."""
    assert format_rate(0.8, wilson_interval(4, 5)) == "80.0% [37.6%, 96.4%]"
    assert format_rate(0.6, wilson_interval(3, 5)) == "60.0% [23.1%, 88.2%]"
    assert format_rate(None, None) == "n/a"
    text = render_markdown(build_report(task_runs("fix-add", 4, 1), conditions()))
    assert "| fix-add | 5 | 4 | 1 | 0 | 0 | 80.0% [37.6%, 96.4%] | yes | no |  |" in text


def test_low_power_and_reasons_are_marked() -> None:
    """A task with fewer than 5 judged runs is marked low power; budget and error reasons are listed."""
    records = task_runs("slow", 1, 0, budget_exceeded=2, errors=1)
    text = render_markdown(build_report(records, conditions()))
    assert "low power |" in text
    assert "slow: budget_exceeded by maxWallMs 2" in text
    assert "slow: error (provider_network 1)" in text


def test_absent_figures_say_not_reported_never_zero() -> None:
    """Unreported tokens and cached input print "not reported"; no rates print no cost."""
    records = task_runs("a", 3, 2, input_tokens=None, output_tokens=None)
    text = render_markdown(build_report(records, conditions(rates=None)))
    measured = text[text.index("## Measured") : text.index("## Estimated")]
    assert (
        "| a | 20 | 30 | 0 | none | 32.0 s | n/a | 2.5 s² | 53.3 s | not reported | not reported | not reported |"
        in measured
    )
    assert "No rates given" in text and "USD" not in text[text.index("## Estimated") :]


def test_estimated_table_only_with_rates() -> None:
    """With both rates the Estimated table holds costs and says what it ignores."""
    text = render_markdown(
        build_report(task_runs("a", 2, 2), conditions(rates=Rates(input_rate=1.0, output_rate=2.0)))
    )
    estimated = text[text.index("## Estimated") :]
    assert "| a | 0.0480 | 0.0240 |" in estimated
    assert (
        "input 1, cached input 1 (input's: not given), cache writes 1 (input's: not given), output 2"
        in estimated
    )


def test_cached_input_is_shown_when_reported() -> None:
    """Cached input prints the pooled ratio with the runs that reported it."""
    text = render_markdown(build_report(task_runs("a", 4, cached_input_tokens=2_500), conditions()))
    assert "25.0% (4/4 runs)" in text
    assert "25.0% (10,000 of 40,000 input tokens; 4/4 runs)" in text


def test_a_delta_that_rounds_to_zero_has_no_minus_sign() -> None:
    """Wall medians 30.04 s -> 30.0 s print "30.0 s → 30.0 s (+0.0 s)", never "(-0.0 s)"."""
    base = build_report(task_runs("a", 5, wall_ms=28_040), conditions())
    cand = build_report(task_runs("a", 5, wall_ms=28_000), conditions())
    text = render_comparison_markdown(compare_reports(base, cand).unwrap())
    assert "| a | 11,000 → 11,000 (+0) | 30.0 s → 30.0 s (+0.0 s) |" in text
    assert "-0.0" not in text


def test_comparison_markdown_has_verdicts_deltas_and_limits() -> None:
    """The comparison names the verdicts with their intervals, the inconclusive wording and the footnote."""
    base = build_report(task_runs("up", 1, 9) + task_runs("same", 6, 4), conditions(k=10))
    cand = build_report(
        task_runs("up", 9, 1) + task_runs("same", 7, 3), conditions(k=10, harness_version="0.2.0")
    )
    text = render_comparison_markdown(compare_reports(base, cand).unwrap())
    assert "| up | **improved** | 1/10: 10.0% [1.8%, 40.4%] | 9/10: 90.0% [59.6%, 98.2%] |" in text
    assert "10.0% → 90.0% (+80.0 pp)" in text
    assert "| same | inconclusive |" in text
    assert "no difference detectable with this many runs" in text
    assert "harness version differs: 0.1.0 -> 0.2.0" in text
    limits = text[text.index("## Limits") :]
    for phrase in ("not a significance test", "independent", "no correction", "excluded"):
        assert phrase in limits
    assert text.index("## Measured deltas") < text.index("## Estimated deltas")


def test_replay_comparison_says_it_measures_the_harness() -> None:
    """Two replays compare as changed/unchanged, under the replay notice."""
    base = build_report(task_runs("a", 1), conditions(mode=AnswerSource.REPLAY, k=1))
    cand = build_report(task_runs("a", 0, 1), conditions(mode=AnswerSource.REPLAY, k=1))
    text = render_comparison_markdown(compare_reports(base, cand).unwrap())
    assert REPLAY_NOTICE in text and "| a | **changed** |" in text


def test_percentages_print_one_way_everywhere() -> None:
    """Rates, intervals, verdict reasons and legends all print "80.0%" (no space); standard errors in pp."""
    base = build_report(task_runs("up", 1, 9) + task_runs("same", 6, 4), conditions(k=10))
    cand = build_report(task_runs("up", 9, 1) + task_runs("same", 7, 3), conditions(k=10))
    for text in (render_markdown(base), render_comparison_markdown(compare_reports(base, cand).unwrap())):
        assert " %" not in text, text
    assert "task-clustered standard error 25.0 pp" in render_markdown(base)


def test_pass_k_columns_are_observed_estimated_or_na() -> None:
    """pass@k prints yes/no over exactly k judged runs, the estimate over more, n/a over fewer."""
    exact = render_markdown(build_report(task_runs("a", 4, 1), conditions(k=5)))
    assert "| a | 5 | 4 | 1 | 0 | 0 | 80.0% [37.6%, 96.4%] | yes | no |  |" in exact
    more = render_markdown(build_report(task_runs("a", 1, 9), conditions(k=5)))
    assert "| 0.50 (est.) | 0.00 (est.) |" in more
    fewer = render_markdown(build_report(task_runs("a", 4, 0, errors=1), conditions(k=5)))
    assert "| n/a (4 judged) | n/a (4 judged) | low power |" in fewer
    assert (
        "pass@5: 0 of 0 tasks; pass^5: 0 of 0 tasks (tasks with exactly 5 judged runs; 1 other task" in fewer
    )


def test_all_errored_task_prints_no_nan_anywhere() -> None:
    """A task whose every run errored (n = 0): n/a rates and intervals, no NaN in Markdown or JSON."""
    records = task_runs("dead", 0, errors=5) + task_runs("ok", 3, 2)
    report = build_report(records, conditions(rates=Rates(input_rate=1.0, output_rate=2.0)))
    comparison = compare_reports(report, report).unwrap()
    texts = (render_markdown(report), render_comparison_markdown(comparison))
    blobs = (encode_report(report).decode(), msgspec.json.encode(comparison).decode())
    for text in (*texts, *blobs):
        assert re.search(r"\b(nan|inf|infinity)\b", text, re.IGNORECASE) is None, text
    assert "| dead | 0 | 0 | 0 | 0 | 5 | n/a | n/a (0 judged) | n/a (0 judged) | low power |" in texts[0]


def test_cached_input_absent_on_both_sides_says_not_reported() -> None:
    """Cached input not reported by either side prints "not reported", not a bare n/a."""
    base = build_report(task_runs("a", 5), conditions())
    text = render_comparison_markdown(compare_reports(base, base).unwrap())
    measured = text[text.index("## Measured deltas") : text.index("## Estimated deltas")]
    assert "| a | 11,000 → 11,000 (+0) | 32.0 s → 32.0 s (+0.0 s) | not reported |" in measured


def test_comparison_markdown_explains_every_new_number() -> None:
    """The rule, the per-task tests table with a sentence per column, the side t intervals and the paired line."""
    base = build_report(
        task_runs("up", 1, 9) + task_runs("same", 6, 4) + task_runs("flat", 5, 5), conditions(k=10)
    )
    cand = build_report(
        task_runs("up", 9, 1) + task_runs("same", 7, 3) + task_runs("flat", 5, 5), conditions(k=10)
    )
    text = render_comparison_markdown(compare_reports(base, cand).unwrap())
    assert "Verdicts: disjoint 95% Wilson intervals (the default)." in text
    assert "| up | +80.0 pp [+37.0, +91.6] | 0.0004 | 0.0012 | 57.5 pp |" in text
    for lead in ("- Δ [Newcombe 95%]: ", "- Boschloo p: ", "- Holm-adjusted p: ", "- detectable: "):
        assert lead in text
    assert (
        "Suite rate intervals: baseline 40.0% [0.0%, 100.0%]" in text
        and "(95% t interval, 2 degrees of freedom)" in text
    )
    assert "Paired by task over 3 tasks: mean difference +30.0 pp, [-78.3, +100.0] pp" in text
    assert (
        "(95% t interval, 2 degrees of freedom, approximate: where it and the test disagree, the test decides)"
        in text
    )
    assert "permutation p within tasks = 0.0384 (exact law, 28 values)" in text
    # p < 0.05 but the t interval holds 0: the line says so, and so does the JSON (intervalAgrees false)
    assert "(the interval and the test disagree here: the test decides)" in text
    paired = compare_reports(base, cand).unwrap().summary.paired
    assert paired is not None and paired.interval_agrees is False


def test_report_markdown_shows_the_suite_interval_or_the_pooled_one() -> None:
    """report.md: a t interval with its degrees of freedom, or the pooled Wilson interval when rates are all equal."""
    spread = render_markdown(build_report(task_runs("a", 3, 2) + task_runs("b", 5), conditions()))
    assert "Suite success rate: 80.0% [" in spread and "(95% t interval, 1 degree of freedom)" in spread
    flat = render_markdown(build_report(task_runs("a", 5) + task_runs("b", 5), conditions()))
    assert (
        "Suite success rate: 100.0% [" in flat
        and "(every task has the same rate: pooled Wilson 95% interval)" in flat
    )
