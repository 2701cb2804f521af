"""plan.json's checks on resume: what would mix measurements is named, never silently mixed."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from alisio.core.lab.plans.manifest import (
    RunManifest,
    decode_manifest,
    encode_manifest,
    measurement_differences,
)
from alisio.core.lab.reports.report import AnswerSource
from alisio.core.lab.runs.records import RunRecord
from tests.property.strategies_report import run_records

STORED = RunManifest(
    run_id="r", created_at="t", suite_id="s", suite_version="1", suite_hash="h" * 64, tasks=("a",), k=2,
    seed=0, mode=AnswerSource.LIVE, provider="p", model="m", config_hash="c0ffee", granted=("read",),
    harness_version="1.0.0", script_hash="a" * 64,
)  # fmt: skip


@given(st.lists(run_records(lean=True), max_size=6))
def test_records_of_another_configuration_are_named_once(records: list[RunRecord]) -> None:
    """Every record whose configHash differs from plan.json's counts in one line; none differing: no line."""
    records = [
        msgspec.structs.replace(r, config_hash=h)
        for r, h in zip(records, ["c0ffee", "beef"] * 3, strict=False)
    ]
    lines = measurement_differences(STORED, STORED, records)
    foreign = sum(r.config_hash != "c0ffee" for r in records)
    assert len(lines) == (1 if foreign else 0)
    if foreign:
        assert lines[0].startswith(f"{foreign} record")


@given(
    st.sampled_from(("harness_version", "script_hash")),
    st.text(min_size=1, max_size=10),
    run_records(lean=True),
)
def test_a_recorded_harness_or_script_that_changed_is_named(
    field: str, value: str, record: RunRecord
) -> None:
    """A changed harness version or script hash gives one line naming it when a record is kept; with none
    kept nothing is mixed, and one plan.json never recorded (an older version wrote it) is not compared."""
    record = msgspec.structs.replace(record, config_hash="c0ffee")
    current = msgspec.structs.replace(STORED, **{field: value})
    lines = measurement_differences(STORED, current, (record,))
    assert len(lines) == (0 if value == getattr(STORED, field) else 1)
    assert measurement_differences(STORED, current, ()) == ()
    older = msgspec.structs.replace(STORED, **{field: None})
    assert measurement_differences(older, current, (record,)) == ()


@given(st.integers(max_value=0) | st.integers(min_value=10_001, max_value=10**9))
def test_plan_json_with_k_out_of_range_is_refused(k: int) -> None:
    """k outside 1..10000 in plan.json is a ReportError naming $.k, not a value to plan with."""
    data = encode_manifest(STORED).replace(b'"k":2', f'"k":{k}'.encode())
    result = decode_manifest(data, "plan.json")
    assert "$.k" in str(result.failure())
