"""Properties of alisio.core.lab.runs.records: runs.jsonl round-trips, forward compatibility, clear decode errors."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.lab.runs.records import (
    RUN_RECORD_SCHEMA_VERSION,
    RunRecord,
    RunStatus,
    decode_runs,
    encode_runs,
    incident_counts,
    schema_version_problem,
)
from tests.property.strategies_report import record_lists_settings, run_records, task_runs


@record_lists_settings
@given(st.lists(run_records(), max_size=4))
def test_runs_jsonl_round_trip(records: list[RunRecord]) -> None:
    """decode(encode(records)) == records, one line per record."""
    data = encode_runs(records)
    assert data.count(b"\n") == len(records)
    assert decode_runs(data, "runs.jsonl") == Success(tuple(records))


@given(run_records())
def test_unknown_fields_are_ignored_on_reading(record: RunRecord) -> None:
    """A record written by a newer harness (extra fields, also nested) still loads."""
    raw = msgspec.json.decode(msgspec.json.encode(record))
    raw["futureField"] = {"anything": [1, 2]}
    raw["measured"]["futureCounter"] = 3
    data = msgspec.json.encode(raw) + b"\n"
    assert decode_runs(data, "runs.jsonl") == Success((record,))


def test_absent_usage_stays_absent_not_zero() -> None:
    """A run without reported tokens encodes no token fields and decodes them as None, never 0."""
    record = task_runs("t", passes=1, input_tokens=None, output_tokens=None)[0]
    line = encode_runs([record])
    assert b"inputTokens" not in line and b"cachedInputTokens" not in line
    decoded = decode_runs(line, "runs.jsonl").unwrap()[0]
    assert decoded.measured.input_tokens is None
    assert decoded.measured.cached_input_tokens is None
    assert decoded.measured.usage_complete is False


def test_decode_error_names_the_line_and_the_field() -> None:
    """A broken line is reported with its 1-based number and the field path."""
    good = encode_runs(task_runs("t", passes=1))
    bad = good + b'{"taskId": "t", "repetition": 0, "seed": 1, "status": "maybe", "measured": {}}\n'
    match decode_runs(bad, "runs.jsonl"):
        case Failure(error):
            assert str(error).startswith("runs.jsonl: line 2:")
            assert "$.status" in str(error)
        case Success(_):
            raise AssertionError("an invalid status must not decode")


def test_blank_lines_are_skipped() -> None:
    """Blank lines (a trailing newline, an editor's extra line) are not records."""
    data = encode_runs(task_runs("t", passes=2)) + b"\n\n"
    assert len(decode_runs(data, "runs.jsonl").unwrap()) == 2


@record_lists_settings
@given(st.lists(run_records(lean=True), max_size=10))
def test_incident_counts_count_every_incident_by_kind(records: list[RunRecord]) -> None:
    """incident_counts sums to the number of incidents and is sorted by kind."""
    counted = incident_counts(records)
    assert sum(n for _, n in counted) == sum(len(r.incidents) for r in records)
    assert [kind for kind, _ in counted] == sorted(kind for kind, _ in counted)


def test_only_error_is_not_judged() -> None:
    """pass, fail and budget_exceeded are judged; error is not."""
    runs = task_runs("t", passes=1, fails=1, budget_exceeded=1, errors=1)
    assert [r.judged for r in runs] == [True, True, True, False]
    assert runs[2].status is RunStatus.BUDGET_EXCEEDED and runs[2].reason == "maxWallMs"


@given(st.integers(-5, 10), st.integers(1, 5))
def test_only_versions_from_1_to_ours_are_readable(found: int, supported: int) -> None:
    """schema_version_problem is None exactly for 1 <= found <= supported; a newer one says to upgrade."""
    problem = schema_version_problem(found, supported)
    assert (problem is None) == (1 <= found <= supported)
    if found > supported:
        assert (
            problem
            == f"schemaVersion {found} is newer than this alisio reads ({supported}): upgrade alisio to read it"
        )


@given(run_records(lean=True), st.integers(RUN_RECORD_SCHEMA_VERSION + 1, 99))
def test_a_record_from_a_newer_schema_is_refused_with_its_line(record: RunRecord, version: int) -> None:
    """A runs.jsonl line with a higher schemaVersion is a Failure naming the 1-based line, never misread."""
    newer = msgspec.structs.replace(record, schema_version=version)
    data = encode_runs([record]) + b"\n" + encode_runs([newer])
    match decode_runs(data, "runs.jsonl"):
        case Failure(error):
            assert error.source == "runs.jsonl"
            assert error.message.startswith(f"line 3: schemaVersion {version} is newer")
        case other:
            raise AssertionError(other)
