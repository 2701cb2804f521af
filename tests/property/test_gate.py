"""Properties of alisio.core.lab.comparisons.gate (``eval compare --fail-on``) and alisio.core.lab.outputs.step_summary."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.lab.comparisons.compare import Comparison, Outcome, compare_reports
from alisio.core.lab.comparisons.gate import FailOn, describe_gate, gate
from alisio.core.lab.outputs.step_summary import CiSuiteLine, ci_summary, comparison_summary, run_summary
from alisio.core.lab.reports.report import AnswerSource
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.runs.records import RunRecord
from tests.property.strategies_report import conditions, record_lists_settings, run_records, task_runs

records_lists = st.lists(run_records(lean=True), max_size=20)


def _comparison(
    base: list[RunRecord], cand: list[RunRecord], mode: AnswerSource = AnswerSource.LIVE
) -> Comparison:
    return compare_reports(
        build_report(base, conditions(mode=mode)), build_report(cand, conditions(mode=mode))
    ).unwrap()


@given(records_lists, records_lists, st.sampled_from(list(AnswerSource)))
@record_lists_settings
def test_the_gate_is_hit_by_the_verdicts_at_or_worse_than_the_flag(
    base: list[RunRecord], cand: list[RunRecord], mode: AnswerSource
) -> None:
    """regressed: hit by exactly the regressed tasks; inconclusive: by the regressed and inconclusive ones
    (so whatever hits the first hits the second); every task is gated or counted as not gated."""
    comparison = _comparison(base, cand, mode)
    regressed, inconclusive = gate(comparison, FailOn.REGRESSED), gate(comparison, FailOn.INCONCLUSIVE)
    assert [t for t, _ in regressed.hits] == [
        t.task_id for t in comparison.tasks if t.outcome is Outcome.REGRESSED
    ]
    assert [t for t, _ in inconclusive.hits] == [
        t.task_id for t in comparison.tasks if t.outcome in (Outcome.REGRESSED, Outcome.INCONCLUSIVE)
    ]
    assert set(regressed.hits) <= set(inconclusive.hits)
    for result in (regressed, inconclusive):
        assert result.gated + sum(c.count for c in result.ungated) == len(comparison.tasks)
        lines = describe_gate(result)
        assert lines[0].endswith(": exit 4") == result.hit
        assert (len(lines) == 2) == bool(result.ungated)
    if mode is AnswerSource.REPLAY:
        assert regressed.gated == 0 and not inconclusive.hit


def test_a_regression_hits_both_gates_and_an_inconclusive_task_only_the_second() -> None:
    """10/10 -> 3/10 regressed; 8/10 -> 9/10 inconclusive; 2/3 -> 3/3 low power, not gated."""
    base = task_runs("a", 10) + task_runs("b", 8, 2) + task_runs("c", 2, 1)
    cand = task_runs("a", 3, 7) + task_runs("b", 9, 1) + task_runs("c", 3)
    comparison = _comparison(base, cand)
    assert [t.outcome for t in comparison.tasks] == [
        Outcome.REGRESSED,
        Outcome.INCONCLUSIVE,
        Outcome.LOW_POWER,
    ]
    assert describe_gate(gate(comparison, FailOn.REGRESSED)) == [
        "--fail-on regressed: hit by 1 of 2 tasks with a verdict (a regressed): exit 4",
        "--fail-on regressed: 1 task has no verdict and was not gated (low power 1)",
    ]
    assert gate(comparison, FailOn.INCONCLUSIVE).hits == (
        ("a", Outcome.REGRESSED),
        ("b", Outcome.INCONCLUSIVE),
    )
    assert not gate(_comparison(task_runs("b", 8, 2), task_runs("b", 9, 1)), FailOn.REGRESSED).hit


@given(records_lists, records_lists)
@record_lists_settings
def test_summaries_hold_every_task_and_end_with_a_blank_line(
    base: list[RunRecord], cand: list[RunRecord]
) -> None:
    """The run summary has a row per task and the suite line; the comparison summary a row per task, the
    outcomes and the gate; each ends with a blank line so appended blocks stay apart."""
    report = build_report(base, conditions())
    text = run_summary(report)
    assert text.startswith("### alisio eval run: demo 1.0.0 (live)\n") and text.endswith("\n\n")
    assert all(f"| {t.task_id} | " in text for t in report.tasks)
    assert "Suite success rate: " in text
    comparison = _comparison(base, cand)
    text = comparison_summary(comparison, gate(comparison, FailOn.REGRESSED))
    assert text.startswith("### alisio eval compare: Comparison: demo 1.0.0\n") and text.endswith("\n\n")
    assert all(f"| {t.task_id} | " in text for t in comparison.tasks)
    assert "Outcomes: " in text and "- Gate --fail-on regressed: " in text


def test_the_ci_summary_has_a_row_per_suite_and_the_verdict() -> None:
    """A replayed suite, a skipped one and the verdict line."""
    text = ci_summary(
        [
            CiSuiteLine(suite="tool-sequences", status="replayed", replayed=6, passed=6),
            CiSuiteLine(suite="long-context", status="skipped", note="no cassettes in x"),
        ],
        "alisio eval ci: all 6 cassettes replayed cleanly and passed",
    )
    assert "| tool-sequences | replayed | 6 | 6 | 0 | 0 |  |" in text
    assert "| long-context | skipped | 0 | 0 | 0 | 0 | no cassettes in x |" in text
    assert text.endswith("alisio eval ci: all 6 cassettes replayed cleanly and passed\n\n")
