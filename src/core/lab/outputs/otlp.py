"""A run as an OpenTelemetry trace, in the OTLP JSON encoding, following the GenAI semantic conventions.

One ``ExportTraceServiceRequest`` per run (the OTLP/JSON file format: one request per line, which the
OpenTelemetry Collector's ``otlpjsonfile`` receiver and most backends' importers read). Attribute names are
those of the OpenTelemetry semantic conventions 1.44.0 (``SCHEMA_URL``; the GenAI conventions are still in
development status there). From the run's steps (``alisio.core.lab.outputs.steps``):

- one ``invoke_agent {agent}`` span (kind INTERNAL) for the run, with ``gen_ai.agent.name`` and
  ``gen_ai.agent.version``, ``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.conversation.id`` (the
  run's key), the main-loop token totals, and the run's identity as ``alisio.*`` attributes; its verdict is a
  ``gen_ai.evaluation.result`` event (``gen_ai.evaluation.name`` ``alisio.verdict``, score 1 for a pass and 0
  for a fail or budget_exceeded, label the status), and one more per verifier; an ``error`` run's span status is
  ERROR with its reason;
- one ``chat {model}`` span (kind CLIENT) per model call, a child of the run's span, with
  ``gen_ai.response.model``, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.*`` (input includes the cached
  input, as the conventions and the lab count it) and ``gen_ai.response.time_to_first_chunk``; a compaction's
  checkpoint call is one too, marked ``alisio.call.purpose`` ``compaction``; incidents are span events;
- one ``execute_tool {tool}`` span (kind INTERNAL) per tool call, with ``gen_ai.tool.name``,
  ``gen_ai.tool.call.id``, ``gen_ai.tool.type`` ``function``, the arguments and the result as the model saw it
  (``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``), status ERROR when the tool failed. An
  external agent's tools ran inside it: their spans last no time and have no result.

Trace and span ids are derived from the run's key (sha256), so exporting the same run twice gives the same
file. Times are the run's start (``Measured.started_at``; the job's start for records without one) plus each
event's ``elapsed_ms``. Ids are hex, as OTLP/JSON requires (not the base64 of protobuf's own JSON mapping).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Final

from alisio.core.harness.events import Event, IncidentRaised
from alisio.core.harness.protocol import Usage
from alisio.core.lab.outputs.atif import agent_identity, parse_start, run_key
from alisio.core.lab.outputs.steps import CompactionStep, ModelStep, ToolStep, run_steps
from alisio.core.lab.reports.report import Conditions
from alisio.core.lab.runs.records import RunRecord, RunStatus

__all__ = ["SCHEMA_URL", "SEMCONV_VERSION", "otlp_request"]

SEMCONV_VERSION: Final = "1.44.0"
SCHEMA_URL: Final = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_INTERNAL: Final = 1
_CLIENT: Final = 3
_STATUS_ERROR: Final = 2

JsonObject = dict[str, object]
AttributeValue = str | int | float | bool | Sequence[str]


def _value(value: AttributeValue) -> JsonObject:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    return {"arrayValue": {"values": [{"stringValue": item} for item in value]}}


def _attributes(values: Mapping[str, AttributeValue | None]) -> list[JsonObject]:
    return [{"key": key, "value": _value(value)} for key, value in values.items() if value is not None]


def _id(key: str, part: str, size: int) -> str:
    return hashlib.sha256(f"{key}#{part}".encode()).hexdigest()[: size * 2]


def _nanos(start: datetime, elapsed_ms: int) -> str:
    return str(int(start.timestamp() * 1000 + elapsed_ms) * 1_000_000)


def _usage_attributes(usage: Usage | None) -> dict[str, AttributeValue | None]:
    if usage is None or usage.invalid:
        return {}
    return {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cached_input_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_input_tokens,
        "gen_ai.usage.reasoning.output_tokens": usage.reasoning_tokens,
    }


class _Trace:
    """The spans of one run, built in order."""

    def __init__(self, conditions: Conditions, record: RunRecord, start: datetime) -> None:
        self.conditions = conditions
        self.key = run_key(conditions, record)
        self.trace_id = _id(self.key, "trace", 16)
        self.root_id = _id(self.key, "run", 8)
        self.start = start
        self.spans: list[JsonObject] = []

    def span(
        self,
        part: str,
        name: str,
        kind: int,
        times: tuple[int, int],
        attributes: Mapping[str, AttributeValue | None],
        **more: object,
    ) -> None:
        self.spans.append(
            {
                "traceId": self.trace_id,
                "spanId": _id(self.key, part, 8),
                "parentSpanId": self.root_id,
                "name": name,
                "kind": kind,
                "startTimeUnixNano": _nanos(self.start, times[0]),
                "endTimeUnixNano": _nanos(self.start, max(times)),
                "attributes": _attributes(attributes),
                **more,
            }
        )

    def event(self, name: str, at_ms: int, attributes: Mapping[str, AttributeValue | None]) -> JsonObject:
        return {
            "timeUnixNano": _nanos(self.start, at_ms),
            "name": name,
            "attributes": _attributes(attributes),
        }

    def incident(self, incident: IncidentRaised) -> JsonObject:
        return self.event(
            "alisio.incident",
            incident.elapsed_ms,
            {"alisio.incident.kind": str(incident.kind), "alisio.incident.message": incident.message},
        )

    def chat(self, step: ModelStep) -> None:
        response = step.response
        end = response.elapsed_ms if response else step.request.elapsed_ms
        model = self.conditions.model
        first = response.first_event_ms if response else None
        attributes: dict[str, AttributeValue | None] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.conditions.provider,
            "gen_ai.request.model": model,
            "gen_ai.response.model": response.served_model if response else None,
            "gen_ai.response.finish_reasons": [response.finish_reason] if response else None,
            "gen_ai.response.time_to_first_chunk": first / 1000 if first is not None else None,
            "alisio.call.index": step.request.call,
            "alisio.call.purpose": "main",
            "alisio.turn": step.request.turn,
            **_usage_attributes(response.usage if response else None),
        }
        events = [self.incident(incident) for incident in step.incidents]
        self.span(
            f"call-{step.request.call}",
            f"chat {model}",
            _CLIENT,
            (step.request.elapsed_ms, end),
            attributes,
            events=events,
        )
        for tool in step.tools:
            self.tool(tool)

    def tool(self, tool: ToolStep) -> None:
        call, result = tool.call, tool.result
        end = result.elapsed_ms if result else call.elapsed_ms
        attributes: dict[str, AttributeValue | None] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.arguments": call.arguments,
            "gen_ai.tool.call.result": result.output_excerpt if result else None,
            "alisio.tool.effect": str(call.effect) if call.effect else None,
            "alisio.approval.granted": tool.approval.granted if tool.approval else None,
        }
        more: dict[str, object] = {}
        if result is not None and not result.ok:
            more["status"] = {"code": _STATUS_ERROR, "message": "the tool reported an error"}
        self.span(
            f"tool-{call.seq}",
            f"execute_tool {call.name}",
            _INTERNAL,
            (call.elapsed_ms, end),
            attributes,
            **more,
        )

    def compaction(self, step: CompactionStep) -> None:
        event = step.compacted
        attributes: dict[str, AttributeValue | None] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.conditions.provider,
            "gen_ai.request.model": self.conditions.model,
            "alisio.call.purpose": "compaction",
            "alisio.compaction.messages_replaced": event.messages_replaced,
            "alisio.compaction.chars_before": event.chars_before,
            "alisio.compaction.chars_after": event.chars_after,
            **_usage_attributes(event.usage),
        }
        model = self.conditions.model
        self.span(
            f"compaction-{event.seq}",
            f"chat {model}",
            _CLIENT,
            (event.elapsed_ms, event.elapsed_ms),
            attributes,
        )


def _verdict_events(trace: _Trace, record: RunRecord, end_ms: int) -> list[JsonObject]:
    judged = record.status is not RunStatus.ERROR
    verdict = trace.event(
        "gen_ai.evaluation.result",
        end_ms,
        {
            "gen_ai.evaluation.name": "alisio.verdict",
            "gen_ai.evaluation.score.value": (1.0 if record.status is RunStatus.PASS else 0.0)
            if judged
            else None,
            "gen_ai.evaluation.score.label": str(record.status),
            "gen_ai.evaluation.explanation": record.reason,
        },
    )
    verifiers = [
        trace.event(
            "gen_ai.evaluation.result",
            end_ms,
            {
                "gen_ai.evaluation.name": f"alisio.verifier.{verifier.id}",
                "gen_ai.evaluation.score.label": str(verifier.status),
                "gen_ai.evaluation.explanation": verifier.detail or None,
            },
        )
        for verifier in record.verifiers
    ]
    return [verdict, *verifiers]


def otlp_request(conditions: Conditions, record: RunRecord, events: Sequence[Event]) -> JsonObject:
    """The run as one OTLP/JSON ``ExportTraceServiceRequest`` (see the module rules)."""
    steps = run_steps(events)
    start = parse_start(record.measured.started_at) or parse_start(conditions.created_at) or _EPOCH
    trace = _Trace(conditions, record, start)
    for step in steps.steps:
        if isinstance(step, ModelStep):
            trace.chat(step)
        else:
            trace.compaction(step)
    end_ms = max([record.measured.wall_ms, *(event.elapsed_ms for event in events)])
    name, version = agent_identity(conditions)
    measured = record.measured
    attributes: dict[str, AttributeValue | None] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": name,
        "gen_ai.agent.version": version,
        "gen_ai.provider.name": conditions.provider,
        "gen_ai.request.model": conditions.model,
        "gen_ai.conversation.id": trace.key,
        "gen_ai.usage.input_tokens": measured.input_tokens,
        "gen_ai.usage.output_tokens": measured.output_tokens,
        "alisio.run.id": conditions.run_id,
        "alisio.suite.id": conditions.suite_id,
        "alisio.suite.version": conditions.suite_version,
        "alisio.task.id": record.task_id,
        "alisio.repetition": record.repetition,
        "alisio.variant": record.variant,
        "alisio.config.hash": record.config_hash or conditions.config_hash,
        "alisio.mode": str(conditions.mode),
        "alisio.run.status": str(record.status),
        "alisio.turns": measured.turns,
        "alisio.tool_calls": measured.tool_calls,
    }
    root: JsonObject = {
        "traceId": trace.trace_id,
        "spanId": trace.root_id,
        "name": f"invoke_agent {name}",
        "kind": _INTERNAL,
        "startTimeUnixNano": _nanos(start, 0),
        "endTimeUnixNano": _nanos(start, end_ms),
        "attributes": _attributes(attributes),
        "events": [*(trace.incident(i) for i in steps.incidents), *_verdict_events(trace, record, end_ms)],
    }
    if record.status is RunStatus.ERROR:
        root["status"] = {"code": _STATUS_ERROR, "message": record.reason or "error"}
    resource = {
        "attributes": _attributes({"service.name": "alisio", "service.version": conditions.harness_version})
    }
    scope = {"name": "alisio", "version": conditions.harness_version}
    return {
        "resourceSpans": [
            {
                "resource": resource,
                "scopeSpans": [{"scope": scope, "spans": [root, *trace.spans], "schemaUrl": SCHEMA_URL}],
                "schemaUrl": SCHEMA_URL,
            }
        ]
    }
