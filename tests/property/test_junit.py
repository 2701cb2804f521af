"""Properties of alisio.core.lab.outputs.junit: well-formed XML whatever the runs wrote, counts that add up, a
testcase per task with a failure or an error exactly when the task did not fully pass."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from alisio.core.lab.outputs.junit import BrokenSuite, ReportSuite, SkippedSuite, junit_xml
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.runs.records import RunRecord, RunStatus, VerifierResult, VerifierStatus
from tests.property.strategies_html import KNOWN, SECRET, arm_records
from tests.property.strategies_report import conditions, task_runs

_CHILDREN = {"failure", "error", "skipped", "system-out"}


def _suite(records: tuple[RunRecord, ...], name: str = "demo", interrupted: bool = False) -> ReportSuite:
    report = build_report(
        records, conditions(), interrupted=interrupted, stopped="Ctrl-C" if interrupted else None
    )
    return ReportSuite(name=name, report=report, records=records)


def _check_counts(root: ET.Element) -> None:
    """Every testsuite's counts are its testcases'; the root's are the sum; one outcome child at most."""
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in root.findall("testsuite"):
        cases = suite.findall("testcase")
        counts = {
            "tests": len(cases),
            "failures": sum(c.find("failure") is not None for c in cases),
            "errors": sum(c.find("error") is not None for c in cases),
            "skipped": sum(c.find("skipped") is not None for c in cases),
        }
        for name, value in counts.items():
            assert suite.get(name) == str(value)
            totals[name] += value
        for case in cases:
            assert {child.tag for child in case} <= _CHILDREN
            assert sum(child.tag in ("failure", "error", "skipped") for child in case) <= 1
            assert case.get("name") and case.get("classname") and float(case.get("time", "x")) >= 0
    for name, value in totals.items():
        assert root.get(name) == str(value)


@given(st.lists(arm_records(), min_size=1, max_size=3), st.booleans())
@settings(max_examples=80)
def test_junit_is_well_formed_and_adds_up(arms: list[tuple[RunRecord, ...]], interrupted: bool) -> None:
    """Hostile details (control characters, ``]]>``, quotes, markup) still give XML that parses, with
    counts that add up and no known secret."""
    suites = [_suite(records, f"suite-{i}", interrupted) for i, records in enumerate(arms)]
    text = junit_xml([*suites, SkippedSuite(name="skip", message="no cassettes <here>")], KNOWN)
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(text.encode())
    _check_counts(root)
    assert SECRET not in text


@given(arm_records())
def test_a_task_fails_below_100_percent_and_errors_with_errored_runs(records: tuple[RunRecord, ...]) -> None:
    """One testcase per task: error when it has errored runs, else failure when its rate is below 100%,
    naming each run that did not pass (runs with the same message on one line: ``reps 0, 2: fail``) and the
    eval show command of each message's first run; else no failure."""
    suite = _suite(records)
    root = ET.fromstring(junit_xml([suite], KNOWN).encode())
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {t.task_id for t in suite.report.tasks}
    for t in suite.report.tasks:
        case = cases[t.task_id]
        error, failure = case.find("error"), case.find("failure")
        assert (error is not None) == (t.errored > 0)
        assert (failure is not None) == (t.errored == 0 and t.passes < t.judged)
        problem = error if error is not None else failure
        mine = [r for r in records if r.task_id == t.task_id and r.status != "pass"]
        if not mine:
            continue
        assert problem is not None and problem.text is not None
        named = [
            int(rep)
            for line in re.findall(r"^reps? ([\d, ]+): ", problem.text, re.MULTILINE)
            for rep in line.split(", ")
        ]
        assert sorted(named) == sorted(r.repetition for r in mine)
        for line in re.findall(r"^reps? (\d+)", problem.text, re.MULTILINE):
            assert f"alisio eval show run-1 --task {t.task_id} --rep {line}" in problem.text


def test_a_failing_task_names_its_rate_and_verifier_details() -> None:
    """3/5 with a failing check: the failure message is the rate line, the text has the check's detail once
    for both runs that failed it; the properties name the agent (unknown: these conditions predate it)."""
    check = VerifierResult(
        id="check", kind="command", status=VerifierStatus.FAIL, detail="exit 1\nadd(2, 3) = -1"
    )
    failing = tuple(
        r if r.status is RunStatus.PASS else msgspec.structs.replace(r, verifiers=(check,))
        for r in task_runs("fix-add", 3, 2)
    )
    root = ET.fromstring(junit_xml([_suite(failing, "calc")]).encode())
    (case,) = root.iter("testcase")
    failure = case.find("failure")
    assert failure is not None and failure.text is not None
    assert failure.get("message") == "3/5 judged runs passed: 60.0% [23.1%, 88.2%]; pass@5 yes, pass^5 no"
    assert (
        "reps 3, 4: fail\n  check (command): fail\n    exit 1\n    add(2, 3) = -1\n  open the first:"
        in failure.text
    )
    suite = root.find("testsuite")
    assert suite is not None and suite.get("timestamp") == "2026-01-01T00:00:00"
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["model"] == "model-a" and properties["k"] == "5" and properties["runId"] == "run-1"
    assert properties["agent"] == "unknown (not recorded)" and "script" not in properties


def test_skipped_and_broken_suites() -> None:
    """eval ci's suites without cassettes are one skipped testcase; those it could not replay one error."""
    text = junit_xml(
        [
            SkippedSuite(name="long-context", message="no cassettes in x"),
            BrokenSuite(name="bad", problems=("a", "b")),
        ]
    )
    root = ET.fromstring(text.encode())
    _check_counts(root)
    assert (root.get("tests"), root.get("skipped"), root.get("errors")) == ("2", "1", "1")
    error = root.find("testsuite/testcase/error")
    assert error is not None and error.get("message") == "a" and error.text == "a\nb"
