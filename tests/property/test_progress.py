"""Properties of alisio.core.lab.outputs.progress: one stderr line per finished run, and the per-task summary table."""

from __future__ import annotations

import re

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from alisio.core.harness.prices import rate_items
from alisio.core.lab.outputs.progress import progress_line, summary_table, why_not_passed
from alisio.core.lab.reports.report import Conditions
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.runs.records import RunRecord, RunStatus, VerifierResult, VerifierStatus
from tests.property.strategies_report import conditions, conditions_strategy, run_records, task_runs


@given(st.integers(1, 500), st.integers(0, 500), run_records())
def test_a_progress_line_names_position_task_repetition_and_status(
    index: int, extra: int, record: RunRecord
) -> None:
    """``[i/n] task rep r: status`` (r as in runs.jsonl); the reason follows budget_exceeded and error only,
    then turns and seconds."""
    line = progress_line(index, index + extra, record)
    prefix = f"[{index}/{index + extra}] {record.task_id} rep {record.repetition}: {record.status}"
    if record.status in (RunStatus.BUDGET_EXCEEDED, RunStatus.ERROR) and record.reason:
        prefix += f" {record.reason}"
    assert line.startswith(prefix + " (")
    turns = record.measured.turns
    assert f"({turns} {'turn' if turns == 1 else 'turns'}, {record.measured.wall_ms / 1000:.1f} s)" in line


def test_a_progress_line_shows_seconds_and_the_first_error() -> None:
    """Wall time prints in seconds with one decimal; an errored run appends its first error message."""
    (passed,) = task_runs("fix-add", 1, wall_ms=12_345)
    assert progress_line(3, 35, passed) == "[3/35] fix-add rep 0: pass (4 turns, 12.3 s)"
    (errored,) = task_runs("fix-add", 0, errors=1, wall_ms=500)
    errored = msgspec.structs.replace(errored, errors=("verifier check could not start", "second"))
    assert progress_line(1, 2, errored) == (
        f"[1/2] fix-add rep 0: error {errored.reason} (4 turns, 0.5 s): verifier check could not start"
    )


def test_a_failing_run_names_its_failing_verifier_and_the_first_line_of_its_detail() -> None:
    """A fail names the first verifier that did not pass and the first line of its detail."""
    (failed,) = task_runs("fix-add", 0, fails=1, wall_ms=2_000)
    verifiers = (
        VerifierResult(id="scope", kind="tree-diff-within", status=VerifierStatus.PASS),
        VerifierResult(
            id="check", kind="command", status=VerifierStatus.FAIL, detail="exit 1 (expected 0)\nmore"
        ),
    )
    failed = msgspec.structs.replace(failed, verifiers=verifiers)
    assert progress_line(2, 5, failed).endswith("(4 turns, 2.0 s): check: exit 1 (expected 0)")
    assert why_not_passed(failed) == "check: exit 1 (expected 0)"
    passed = msgspec.structs.replace(failed, status=RunStatus.PASS)
    assert why_not_passed(passed) == ""


@given(st.lists(run_records(lean=True), max_size=12), conditions_strategy)
def test_the_summary_has_a_header_and_one_row_per_task(records: list[RunRecord], cond: Conditions) -> None:
    """One header naming pass@k and pass^k for the report's k, then one row per task in report order."""
    report = build_report(records, cond)
    lines = summary_table(report).splitlines()
    assert re.split(r"  +", lines[0]) == [
        "task",
        "pass/judged",
        "success rate",
        f"pass@{cond.k}",
        f"pass^{cond.k}",
        "error",
        "tokens (recorded)" if cond.mode == "replay" else "tokens",
        "wall median",
        *(["cost (USD)"] if cond.rates is not None else []),
    ]
    total = len(report.tasks) > 1
    priced = cond.rates is not None
    assert len(lines) == 1 + len(report.tasks) + total + priced
    if priced:  # the cost column's rates, each named
        assert (
            lines.pop()
            == f"cost at USD per million tokens: input {cond.rates.input_rate:g}, "
            + ", ".join(rate_items(cond.rates)[1:])
        )
    if total:  # a last row with the summary's figures: tokens and cost over every task
        cells = re.split(r"  +", lines[-1])
        s = report.summary
        assert cells[:2] == ["total", f"{s.passes}/{s.judged}"] and cells[5] == str(s.errored)
        tokens = s.measured.tokens
        assert cells[6] == ("not reported" if tokens is None else f"{tokens.total:,}")
        if cond.rates is not None:
            assert cells[8] == ("n/a" if s.estimated is None else f"{s.estimated.cost_usd:,.4f}")
    for line, task in zip(lines[1 : 1 + len(report.tasks)], report.tasks, strict=True):
        cells = re.split(r"  +", line)
        assert cells[0] == task.task_id
        assert cells[1] == f"{task.passes}/{task.judged}"
        assert cells[5] == str(task.errored)
        tokens = task.measured.tokens
        assert cells[6] == ("not reported" if tokens is None else f"{tokens.total:,}")
        median = task.measured.wall_ms_median
        assert cells[7] == ("n/a" if median is None else f"{median / 1000:,.1f} s")
        if cond.rates is not None:
            cost = None if task.estimated is None else task.estimated.cost_usd
            assert cells[8] == ("n/a" if cost is None else f"{cost:,.4f}")


def test_the_summary_reads_observed_estimated_or_na() -> None:
    """pass@k prints yes/no when exactly k runs were judged, the estimate over more, n/a over fewer."""
    records = task_runs("exact", 1, 1) + task_runs("more", 1, 2) + task_runs("fewer", 1)
    table = summary_table(build_report(records, conditions(k=2)))
    rows = {line.split()[0]: re.split(r"  +", line) for line in table.splitlines()[1:]}
    assert rows["exact"][3:6] == ["yes", "no", "0"]
    assert rows["more"][3:6] == ["0.67", "0.00", "0"]
    assert rows["fewer"][3:6] == ["n/a", "n/a", "0"]
