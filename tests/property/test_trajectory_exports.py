"""The trajectory exports (ATIF, OTLP/JSON) keep the run record's counts: turns, tool calls and tokens."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from alisio.core.harness.events import Event
from alisio.core.lab.judges.outcome import record_from_run
from alisio.core.lab.outputs.atif import ATIF_VERSION, atif_trajectory
from alisio.core.lab.outputs.otlp import otlp_request
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.suites.schedule import RunSpec
from tests.property.strategies_lab import LogModel, event_logs
from tests.property.strategies_report import conditions

SPEC = RunSpec(task_id="fix-add", repetition=2, seed=7, variant=None)


def _record(events: tuple[Event, ...]) -> RunRecord:
    return record_from_run(SPEC, events, "completed", None, (), config_hash="cfg-1")


def _attrs(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for attribute in span["attributes"]:
        ((kind, value),) = attribute["value"].items()
        out[attribute["key"]] = int(value) if kind == "intValue" else value
    return out


@given(event_logs(), st.none() | st.just("2026-12-02T10:00:00.000Z"))
def test_an_atif_trajectory_counts_what_the_run_record_counts(
    log: tuple[tuple[Event, ...], LogModel], start: str | None
) -> None:
    events, model = log
    record = _record(events)
    if start:
        record = msgspec.structs.replace(
            record, measured=msgspec.structs.replace(record.measured, started_at=start)
        )
    trajectory: Any = atif_trajectory(conditions(), record, events)
    assert trajectory["schema_version"] == ATIF_VERSION
    steps = trajectory["steps"]
    assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
    agent = [s for s in steps if s["source"] == "agent"]
    system = [s for s in steps if s["source"] == "system"]
    assert len(agent) == len(model.turns)  # one agent step per main-loop call, answered or not
    assert len(system) == len(model.compactions) == record.measured.compactions
    assert sum(len(s.get("tool_calls", [])) for s in agent) == record.measured.tool_calls
    for field, measured in (
        ("prompt_tokens", record.measured.input_tokens),
        ("completion_tokens", record.measured.output_tokens),
        ("cached_tokens", record.measured.cached_input_tokens),
    ):
        reported = [s["metrics"][field] for s in agent if field in s.get("metrics", {})]
        assert (sum(reported) if reported else None) == (measured if model.turns else None)
    final = trajectory["final_metrics"]
    assert final["total_steps"] == len(steps)
    assert final.get("total_prompt_tokens") == record.measured.input_tokens
    assert ("timestamp" in steps[0]) == bool(start)
    for step in agent:  # every result answers a call of its own step
        ids = {call["tool_call_id"] for call in step.get("tool_calls", [])}
        assert {r["source_call_id"] for r in step.get("observation", {}).get("results", [])} <= ids


@given(event_logs())
def test_an_otlp_trace_counts_what_the_run_record_counts(log: tuple[tuple[Event, ...], LogModel]) -> None:
    events, model = log
    record = _record(events)
    request: Any = otlp_request(conditions(), record, events)
    (resource,) = request["resourceSpans"]
    (scope,) = resource["scopeSpans"]
    spans = scope["spans"]
    root, children = spans[0], spans[1:]
    assert root["name"].startswith("invoke_agent ") and "parentSpanId" not in root
    assert all(s["parentSpanId"] == root["spanId"] and s["traceId"] == root["traceId"] for s in children)
    assert len({s["spanId"] for s in spans}) == len(spans)
    chats = [_attrs(s) for s in children if _attrs(s)["gen_ai.operation.name"] == "chat"]
    main = [a for a in chats if a["alisio.call.purpose"] == "main"]
    tools = [s for s in children if _attrs(s)["gen_ai.operation.name"] == "execute_tool"]
    assert len(main) == len(model.turns)
    assert len(chats) - len(main) == record.measured.compactions
    assert len(tools) == record.measured.tool_calls
    reported = [a["gen_ai.usage.input_tokens"] for a in main if "gen_ai.usage.input_tokens" in a]
    assert (sum(reported) if reported else None) == (record.measured.input_tokens if model.turns else None)
    assert all(int(s["startTimeUnixNano"]) <= int(s["endTimeUnixNano"]) for s in spans)
    verdicts = [e for e in root["events"] if e["name"] == "gen_ai.evaluation.result"]
    assert verdicts and _attrs(verdicts[0])["gen_ai.evaluation.score.label"] == str(record.status)
