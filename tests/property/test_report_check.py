"""Properties of alisio.core.lab.reports.report_check through decode_report: every report build_report writes is
accepted, and an impossible number anywhere is refused naming its field, never passed on to compare."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.lab.reports.report import Rates
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.reports.report_check import report_problems
from alisio.core.lab.reports.report_json import decode_report, encode_report
from alisio.core.lab.runs.records import RunRecord
from tests.property.strategies_report import (
    conditions,
    conditions_strategy,
    record_lists_settings,
    run_records,
    task_runs,
)

records_lists = st.lists(run_records(lean=True), max_size=20)


@record_lists_settings
@given(records_lists, conditions_strategy)
def test_every_built_report_is_accepted_and_decodes_back(records: list[RunRecord], cond: Any) -> None:
    """No false alarm: a report build_report wrote has no problem, and decode_report reads it back equal."""
    report = build_report(records, cond, planned_runs=len(records))
    assert report_problems(report) == []
    assert decode_report(encode_report(report), "report.json") == Success(report)


def _sample() -> dict[str, Any]:
    """A live report with rates: task a 3 pass, 1 fail, 1 budget_exceeded, 1 error; task b 5/5."""
    records = task_runs("a", 3, 1, 1, errors=1) + task_runs("b", 5)
    report = build_report(records, conditions(rates=Rates(input_rate=1.0, output_rate=4.0)))
    document: dict[str, Any] = json.loads(encode_report(report))
    return document


Edit = Callable[[dict[str, Any]], None]


def _set(*path: str | int, value: Any) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        node: Any = document
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value

    return edit


IMPOSSIBLE: list[tuple[Edit, str]] = [
    (_set("tasks", 0, "judged", value=-3), "task a: judged: at least 0, got -3"),
    (
        _set("tasks", 0, "passes", value=9),
        "task a: judged: 5 is not passes + fails + budgetExceeded (9 + 1 + 1)",
    ),
    (_set("tasks", 0, "runs", value=5), "task a: runs: 5 is not judged + errored (5 + 1)"),
    (_set("tasks", 0, "successRate", value=1.7), "task a: successRate: must be a number in [0, 1], got 1.7"),
    (_set("tasks", 0, "successRate", value=0.9), "task a: successRate: 0.9 is not passes / judged (3/5)"),
    (_set("tasks", 1, "interval", value={"low": 0.1, "high": 0.2}), "task b: interval: [0.1, 0.2] does not"),
    (
        _set("tasks", 0, "interval", value={"low": -0.5, "high": 2}),
        "task a: interval.low: must be a number in",
    ),
    (_set("tasks", 0, "passHatK", value=True), "task a: passHatK: true with 3 of 5 passing"),
    (_set("tasks", 0, "passAtKEstimate", value=1.5), "task a: passAtKEstimate: must be a number in [0, 1]"),
    (
        _set("tasks", 0, "budgetReasons", 0, "count", value=4),
        "task a: budgetReasons: the counts add up to 4, not 1",
    ),
    (
        _set("tasks", 0, "measured", "wallMsTotal", value=-1),
        "task a: measured.wallMsTotal: at least 0, got -1",
    ),
    (
        _set("tasks", 0, "measured", "tokens", "total", value=1),
        "task a: measured.tokens.total: 1 is not input",
    ),
    (_set("tasks", 0, "estimated", "costUsd", value=-2.0), "task a: estimated.costUsd: at least 0, got -2.0"),
    (_set("tasks", 1, "taskId", value="a"), 'tasks[1].taskId: duplicate task id "a"'),
    (_set("summary", "passes", value=99), "summary.passes: 99 is not the sum over the tasks (8)"),
    (_set("summary", "tasksPassAtK", value=7), "summary.tasksPassAtK: 7 is not a number of tasks (0 to 2)"),
    (
        _set("summary", "successRate", "mean", value=-0.1),
        "summary.successRate.mean: must be a number in [0, 1]",
    ),
    (_set("conditions", "k", value=0), "conditions.k: at least 1, got 0"),
    (
        _set("conditions", "rates", "cacheWriteRate", value=-1.0),
        "conditions.rates.cacheWriteRate: at least 0, got -1.0",
    ),
    (_set("plannedRuns", value=-1), "plannedRuns: at least 0, got -1"),
]


@pytest.mark.parametrize(("edit", "message"), IMPOSSIBLE, ids=[m[:40] for _, m in IMPOSSIBLE])
def test_an_impossible_number_is_refused_naming_the_field(edit: Edit, message: str) -> None:
    """decode_report refuses the report with 'impossible numbers: <task and field>: <what>'."""
    document = _sample()
    assert isinstance(decode_report(json.dumps(document).encode(), "r.json"), Success)
    edit(document)
    result = decode_report(json.dumps(document).encode(), "r.json")
    assert isinstance(result, Failure), message
    assert result.failure().message.startswith(f"impossible numbers: {message}")
    assert str(result.failure()).startswith("r.json: impossible numbers: ")


@given(
    st.sampled_from(["runs", "judged", "passes", "fails", "budgetExceeded", "errored"]),
    st.integers(max_value=-1),
)
def test_any_negative_count_of_any_task_is_refused(field: str, value: int) -> None:
    """Whatever the count and however negative, the task and the field are named."""
    document = _sample()
    document["tasks"][1][field] = value
    result = decode_report(json.dumps(document).encode(), "r.json")
    assert isinstance(result, Failure)
    assert result.failure().message.startswith(
        f"impossible numbers: task b: {field}: at least 0, got {value}"
    )
