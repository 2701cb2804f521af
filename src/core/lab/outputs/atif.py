"""A run as an ATIF trajectory: the Agent Trajectory Interchange Format that Harbor and Terminal-Bench read.

Written to ATIF-v1.7 (Harbor's RFC 0001, "Agent Trajectory Interchange Format (ATIF) Specification", v1.7 of
April 2026). The mapping, from the run's steps (``alisio.core.lab.outputs.steps``):

- step 1, ``source: "user"``: the task's prompt;
- one ``source: "agent"`` step per main-loop model call (``llm_call_count`` 1): ``message`` is the model's
  text, ``model_name`` what served it (else the configured model), ``tool_calls`` the calls it asked for
  (``arguments`` the parsed JSON object; arguments that are not an object become ``{}`` with the raw text in
  the call's ``extra.rawArguments``), ``observation.results`` the tool results by ``source_call_id`` (none for an
  external agent: alisio sees its model calls, not the tools it runs), ``metrics`` the call's usage in ATIF's
  convention, which is the lab's (``prompt_tokens`` includes ``cached_tokens``; reasoning and cache-write
  tokens in ``metrics.extra``); ``extra`` holds the finish reason, the call's duration, incidents and
  approvals;
- one ``source: "system"`` step per compaction, with ``extra.context_management`` ``{"type": "compaction",
  "boundary": "replace"}`` as the RFC's section VII asks (its checkpoint text is not kept by alisio, so the
  observation says how much was replaced);
- ``final_metrics``: the run record's main-loop totals (compaction calls are counted apart, as in every report);
- ``extra.alisio``: the run's identity (run id, suite, task, repetition, variant, seed, configuration hash, mode)
  and its verdict (status, reason, each verifier's result), which ATIF has no field for.

Timestamps are given when the run's start time is known (``Measured.started_at``): the start plus each
event's ``elapsed_ms``. Pure: the shell reads the files, scrubs and scans the result, and writes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Final

from alisio.core.harness.events import Event, ToolCalled
from alisio.core.harness.protocol import Usage
from alisio.core.lab.outputs.steps import CompactionStep, ModelStep, RunSteps, run_steps
from alisio.core.lab.reports.report import Conditions
from alisio.core.lab.runs.records import RunRecord

__all__ = ["ATIF_VERSION", "agent_identity", "atif_trajectory", "parse_start", "run_key", "tool_arguments"]

ATIF_VERSION: Final = "ATIF-v1.7"

JsonObject = dict[str, object]


def run_key(conditions: Conditions, record: RunRecord) -> str:
    """The run's identity across exports: ``<runId>/<variant>/<task>/<rep>`` (without a variant, three parts)."""
    parts = [conditions.run_id, *([record.variant] if record.variant else []), record.task_id]
    return "/".join([*parts, str(record.repetition)])


def agent_identity(conditions: Conditions) -> tuple[str, str]:
    """The agent's name and version: an external agent's own, else ``alisio`` and the harness version."""
    agent = conditions.agent
    if agent is None or agent.kind == "builtin":
        return "alisio", conditions.harness_version
    return agent.name, agent.version


def tool_arguments(call: ToolCalled) -> tuple[JsonObject, str | None]:
    """The call's arguments as a JSON object, and the raw text when they are not one (``None`` when they are)."""
    try:
        value = json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError:
        return {}, call.arguments
    if isinstance(value, dict):
        return value, None
    return {}, call.arguments


def _dropped(value: Mapping[str, object | None]) -> JsonObject:
    return {key: item for key, item in value.items() if item is not None and item != {} and item != []}


def _timestamp(start: datetime | None, elapsed_ms: int) -> str | None:
    if start is None:
        return None
    moment = (start + timedelta(milliseconds=elapsed_ms)).astimezone(UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_start(started_at: str | None) -> datetime | None:
    """``Measured.started_at`` as a datetime (``None`` when absent or not ISO 8601)."""
    if not started_at:
        return None
    try:
        parsed = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _metrics(usage: Usage | None) -> JsonObject | None:
    if usage is None or usage.invalid:
        return None
    extra = _dropped(
        {
            "reasoning_tokens": usage.reasoning_tokens,
            "cache_creation_input_tokens": usage.cache_write_input_tokens,
        }
    )
    return _dropped(
        {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "cached_tokens": usage.cached_input_tokens,
            "extra": extra,
        }
    )


def _tool_calls(step: ModelStep) -> list[JsonObject]:
    calls: list[JsonObject] = []
    for tool in step.tools:
        arguments, raw = tool_arguments(tool.call)
        extra = _dropped({"rawArguments": raw, "effect": tool.call.effect and str(tool.call.effect)})
        calls.append(
            _dropped(
                {
                    "tool_call_id": tool.call.call_id,
                    "function_name": tool.call.name,
                    "arguments": arguments,
                    "extra": extra,
                }
            )
            | {"arguments": arguments}
        )
    return calls


def _observation(step: ModelStep) -> JsonObject | None:
    results: list[JsonObject] = []
    for tool in step.tools:
        if tool.result is None:
            continue
        extra = {"ok": tool.result.ok, "durationMs": tool.result.duration_ms}
        results.append(
            {"source_call_id": tool.call.call_id, "content": tool.result.output_excerpt, "extra": extra}
        )
    return {"results": results} if results else None


def _step_extra(step: ModelStep) -> JsonObject:
    response = step.response
    approvals = [
        {"callId": t.approval.call_id, "effect": str(t.approval.effect), "granted": t.approval.granted}
        for t in step.tools
        if t.approval is not None
    ]
    return _dropped(
        {
            "turn": step.request.turn,
            "finishReason": response.finish_reason if response else "no answer (the run ended first)",
            "durationMs": response.duration_ms if response else None,
            "firstEventMs": response.first_event_ms if response else None,
            "incidents": [{"kind": str(i.kind), "message": i.message} for i in step.incidents],
            "approvals": approvals,
        }
    )


def _agent_step(step: ModelStep, step_id: int, model: str, start: datetime | None) -> JsonObject:
    response = step.response
    at = response.elapsed_ms if response else step.request.elapsed_ms
    return _dropped(
        {
            "step_id": step_id,
            "timestamp": _timestamp(start, at),
            "source": "agent",
            "model_name": (response.served_model if response else None) or model,
            "message": response.text if response else "",
            "tool_calls": _tool_calls(step),
            "observation": _observation(step),
            "metrics": _metrics(response.usage if response else None),
            "llm_call_count": 1,
            "extra": _step_extra(step),
        }
    ) | {"message": response.text if response else ""}


def _compaction_step(step: CompactionStep, step_id: int, start: datetime | None) -> JsonObject:
    event = step.compacted
    summary = (
        f"Context compaction: {event.messages_replaced} messages replaced by a checkpoint "
        f"({event.chars_before} characters before, {event.chars_after} after); the checkpoint text is not kept"
    )
    usage = _metrics(event.usage)
    return _dropped(
        {
            "step_id": step_id,
            "timestamp": _timestamp(start, event.elapsed_ms),
            "source": "system",
            "message": "Context compaction performed",
            "observation": {"results": [{"content": summary}]},
            "extra": _dropped(
                {
                    "context_management": {"type": "compaction", "boundary": "replace"},
                    "checkpointUsage": usage,
                }
            ),
        }
    )


def _verdict(record: RunRecord, steps: RunSteps) -> JsonObject:
    ended = steps.ended
    exited = steps.agent_exit
    return _dropped(
        {
            "status": str(record.status),
            "reason": record.reason,
            "outcome": ended.outcome if ended else None,
            "finalText": ended.final_text if ended and ended.final_text else None,
            "budgetStop": {
                "budget": steps.budget.budget,
                "limit": steps.budget.limit,
                "value": steps.budget.value,
            }
            if steps.budget
            else None,
            "agentExitCode": exited.exit_code if exited else None,
            "verifiers": [
                _dropped({"id": v.id, "kind": v.kind, "status": str(v.status), "detail": v.detail or None})
                for v in record.verifiers
            ],
            "incidents": [{"kind": i.kind, "message": i.message} for i in record.incidents],
            "errors": list(record.errors),
        }
    )


def _final_metrics(record: RunRecord, total_steps: int) -> JsonObject:
    measured = record.measured
    extra = _dropped(
        {
            "reasoning_tokens": measured.reasoning_tokens,
            "cache_creation_input_tokens": measured.cache_write_input_tokens,
            "turns": measured.turns,
            "toolCalls": measured.tool_calls,
            "compactions": measured.compactions,
            "usageComplete": measured.usage_complete,
            "wallMs": measured.wall_ms,
        }
    )
    return _dropped(
        {
            "total_prompt_tokens": measured.input_tokens,
            "total_completion_tokens": measured.output_tokens,
            "total_cached_tokens": measured.cached_input_tokens,
            "total_steps": total_steps,
            "extra": extra,
        }
    )


def _agent(conditions: Conditions) -> JsonObject:
    name, version = agent_identity(conditions)
    kind = conditions.agent.kind if conditions.agent else "builtin"
    extra = {"kind": kind, "provider": conditions.provider}
    return _dropped({"name": name, "version": version, "model_name": conditions.model, "extra": extra})


def _identity(conditions: Conditions, record: RunRecord, steps: RunSteps) -> JsonObject:
    """What ATIF has no field for: which run this is, of which suite and configuration, and its verdict."""
    return _dropped(
        {
            "runId": conditions.run_id,
            "suiteId": conditions.suite_id,
            "suiteVersion": conditions.suite_version,
            "suiteHash": conditions.suite_hash,
            "taskId": record.task_id,
            "repetition": record.repetition,
            "variant": record.variant,
            "seed": record.seed,
            "configHash": record.config_hash or conditions.config_hash,
            "mode": str(conditions.mode),
            "harnessVersion": conditions.harness_version,
            "verdict": _verdict(record, steps),
        }
    )


def atif_trajectory(conditions: Conditions, record: RunRecord, events: Sequence[Event]) -> JsonObject:
    """The run as one ATIF-v1.7 trajectory (see the module rules for the mapping)."""
    steps = run_steps(events)
    start = parse_start(record.measured.started_at)
    prompt = steps.started.prompt if steps.started else ""
    out_steps: list[JsonObject] = [
        _dropped({"step_id": 1, "timestamp": _timestamp(start, 0), "source": "user", "message": prompt})
        | {"message": prompt}
    ]
    for step in steps.steps:
        step_id = len(out_steps) + 1
        if isinstance(step, ModelStep):
            out_steps.append(_agent_step(step, step_id, conditions.model, start))
        else:
            out_steps.append(_compaction_step(step, step_id, start))
    key = run_key(conditions, record)
    external = conditions.agent is not None and conditions.agent.kind != "builtin"
    notes = f"Exported by alisio {conditions.harness_version} from run {key}."
    if external:
        notes += (
            " The agent ran its tools itself: alisio saw its model calls, so steps carry no observations."
        )
    return {
        "schema_version": ATIF_VERSION,
        "session_id": key,
        "trajectory_id": key,
        "agent": _agent(conditions),
        "steps": out_steps,
        "notes": notes,
        "final_metrics": _final_metrics(record, len(out_steps)),
        "extra": {"alisio": _identity(conditions, record, steps)},
    }
