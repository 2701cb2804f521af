"""An external agent's run as the lab's event log: ``run_events``, from what the proxy and the process saw.

Rules this module keeps:
- each model call through the proxy is a ``provider_request`` and a ``provider_response`` (purpose ``main``:
  auxiliary calls, such as OpenCode's title call, count like any other), then one ``tool_call`` per tool
  call the model asked for, under the lab's tool name where the agent's tool means one (``tool_map``), else
  under the agent's own name (effect ``None``);
- the outcome, first match wins: a budget the proxy refused (``budget_exceeded``, its name); the agent killed
  at ``maxWallMs`` (``budget_exceeded``); the agent's output past its limit (``error``, ``agent_output``); the
  last model call failed at the provider (``error``: ``provider_auth`` for 401/403, ``provider_network`` when
  the proxy could not reach it, else ``provider_error``; a call cut at the run's end is not a provider's
  failure); the agent exited non-zero before its first model call (``error``, ``agent_start``: it crashed, so
  there is nothing of it to judge; the message names the exit code and the head of its stderr); else
  ``completed``, whatever the exit code (it is recorded in ``agent_exit``; the verifiers judge the workspace),
  and a non-zero exit after a model call is an ``agent_exited`` incident (``agent exited N``);
- a call whose usage cannot be used (a count below 0, not an integer, or above ``MAX_TOKEN_COUNT``) is
  recorded without usage and raises a ``usage_unreported`` incident naming the count, as the built-in agent's
  turns do; a call still streaming when the run ended (cut: the proxy cancelled it) is recorded with finish
  reason ``cut`` and the input side of the usage it reported before the cut, with a ``usage_unreported``
  incident saying so;
- a request is fingerprinted after normalisation (``normalized_body``): the workspace path, the task's
  replayNormalize and the agent's known per-run noise.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Final, Literal

from alisio.core.agents.exchange import Exchange
from alisio.core.base import Frozen
from alisio.core.harness.events import (
    AgentExited,
    BudgetStopped,
    Event,
    IncidentKind,
    IncidentRaised,
    ProviderRequested,
    ProviderResponded,
    RunEnded,
    RunOutcome,
    RunStarted,
    ToolCalled,
)
from alisio.core.harness.protocol import COUNT_RULE
from alisio.core.harness.text_calls import text_tool_call
from alisio.core.harness.tooldefs import effect_of
from alisio.core.replay.fingerprint import Rules
from alisio.core.share.linear_regex import LinearPattern, compile_linear

__all__ = [
    "AgentEnd",
    "ProxiedCall",
    "RunFacts",
    "RunVerdict",
    "exited",
    "normalized_body",
    "request_fingerprint",
    "run_events",
    "run_started",
    "stderr_head",
]

BudgetName = Literal["maxTurns", "maxWallMs", "maxTokens", "maxToolCalls", "maxCostUsd"]
_BUDGETS: Final[tuple[BudgetName, ...]] = ("maxTurns", "maxWallMs", "maxTokens", "maxToolCalls", "maxCostUsd")


class ProxiedCall(Frozen, frozen=True, kw_only=True):
    """One model call as the proxy kept it."""

    index: int
    started_ms: int
    duration_ms: int
    exchange: Exchange | None
    problem: str | None = None
    """Why it could not be read (``exchange`` is then ``None``)."""
    fingerprint: str = ""
    status: int = 200
    cut: bool = False
    """Still streaming when the run ended: the proxy cancelled it (``exchange`` holds what had arrived)."""
    first_event_ms: int | None = None
    """From the call's start to the first bytes of its answer (``None``: none arrived)."""


class AgentEnd(Frozen, frozen=True, kw_only=True):
    """How the agent's process ended."""

    exit_code: int | None
    killed: str | None
    """``maxWallMs``, ``budget``, ``output``, or ``None``."""
    elapsed_ms: int
    stdout: str
    stderr: str
    stopped: tuple[str, ...] = ()


class RunFacts(Frozen, frozen=True, kw_only=True):
    """What the run's header says."""

    prompt: str
    provider: str
    model: str
    agent: str
    kind: str
    config_hash: str
    harness_version: str


class RunVerdict(Frozen, frozen=True, kw_only=True):
    """The run's outcome: events, outcome, reason, message."""

    events: tuple[Event, ...]
    outcome: RunOutcome
    reason: str | None
    message: str | None


def _compiled(rules: Rules) -> tuple[tuple[LinearPattern, str], ...]:
    out = []
    for pattern, replacement in rules:
        compiled = compile_linear(pattern).value_or(None)
        if isinstance(compiled, LinearPattern):
            out.append((compiled, replacement))
    return tuple(out)


def normalized_body(body: bytes, rules: Rules) -> str:
    """A request body as text with ``rules`` applied (a pattern that does not compile is skipped)."""
    text = body.decode("utf-8", "replace")
    for pattern, replacement in _compiled(rules):
        text = pattern.replace_all(text, replacement)
    return text


def request_fingerprint(body: bytes, rules: Rules) -> str:
    """The sha256 of the normalised request body."""
    return hashlib.sha256(normalized_body(body, rules).encode()).hexdigest()


def _call_events(call: ProxiedCall, seq: int, tool_map: Mapping[str, str]) -> list[Event]:
    exchange = call.exchange
    end_ms = call.started_ms + call.duration_ms
    messages = exchange.request.message_count if exchange else 0
    events: list[Event] = [
        ProviderRequested(
            seq=seq,
            elapsed_ms=call.started_ms,
            call=call.index,
            turn=call.index + 1,
            purpose="main",
            fingerprint=call.fingerprint,
            message_count=messages,
        ),
        ProviderResponded(
            seq=seq + 1,
            elapsed_ms=end_ms,
            call=call.index,
            purpose="main",
            finish_reason="cut" if call.cut else exchange.finish_reason if exchange else "unreadable",
            usage=exchange.usage if exchange else None,
            text_chars=len(exchange.text) if exchange else 0,
            tool_calls=len(exchange.tool_calls) if exchange else 0,
            duration_ms=call.duration_ms,
            text=(exchange.error or exchange.text) if exchange else (call.problem or ""),
            served_model=exchange.served_model if exchange else None,
            system_fingerprint=exchange.system_fingerprint if exchange else None,
            first_event_ms=call.first_event_ms,
        ),
    ]
    for incident in (_usage_incident(call), _text_call_incident(exchange, tool_map)):
        if incident is not None:
            events.append(
                IncidentRaised(
                    seq=seq + len(events), elapsed_ms=end_ms, kind=incident[0], message=incident[1]
                )
            )
    for tool in exchange.tool_calls if exchange else ():
        name = tool_map.get(tool.name, tool.name)
        events.append(
            ToolCalled(
                seq=seq + len(events),
                elapsed_ms=end_ms,
                call_id=tool.id,
                name=name,
                arguments=tool.arguments,
                effect=effect_of(name) if name in tool_map.values() else None,
            )
        )
    return events


def _text_call_incident(
    exchange: Exchange | None, tool_map: Mapping[str, str]
) -> tuple[IncidentKind, str] | None:
    """The ``text_tool_call`` incident of an answer with no tool call whose text holds a call (or schema) of a
    tool the request offered, or of one of the preset's own tools (``tool_map``'s keys)."""
    if exchange is None or exchange.tool_calls or exchange.error is not None:
        return None
    offered = tuple(dict.fromkeys((*exchange.request.tools, *tool_map)))
    written = text_tool_call(exchange.text, offered)
    return None if written is None else (IncidentKind.TEXT_TOOL_CALL, written)


def _usage_incident(call: ProxiedCall) -> tuple[IncidentKind, str] | None:
    """The ``usage_unreported`` incident of one call: a cut call, or usage that cannot be used."""
    exchange = call.exchange
    if call.cut:
        kept = exchange.usage.input_tokens if exchange and exchange.usage else None
        said = "no usage" if kept is None else f"{kept:,} input tokens (kept; its output not reported)"
        return (
            IncidentKind.USAGE_UNREPORTED,
            f"call {call.index + 1} was still streaming when the run ended: cancelled, after it reported {said}",
        )
    if exchange is not None and exchange.usage_problem is not None:
        return (
            IncidentKind.USAGE_UNREPORTED,
            f"call {call.index + 1}: the provider reported usage that cannot be used ({exchange.usage_problem}; "
            f"{COUNT_RULE}): treated as unreported, maxTokens and maxCostUsd not counted on it",
        )
    return None


def _provider_failure(calls: Sequence[ProxiedCall]) -> tuple[str, str] | None:
    calls = [call for call in calls if not call.cut]  # cancelled by the lab, not failed at the provider
    if not calls:
        return None
    last = calls[-1]
    error = last.exchange.error if last.exchange else last.problem
    if error is None:
        return None
    if last.status in (401, 403):
        return "provider_auth", error
    return ("provider_network" if last.status == 502 else "provider_error"), error


def _outcome(
    agent: str,
    calls: Sequence[ProxiedCall],
    end: AgentEnd,
    budget: tuple[str, int | float, int | float] | None,
    wall_ms: int | None,
) -> tuple[RunOutcome, str | None, str | None]:
    if budget is not None:
        return "budget_exceeded", budget[0], None
    if end.killed == "maxWallMs":
        return "budget_exceeded", "maxWallMs", None
    if end.killed == "output":
        return "error", "agent_output", "the agent's output passed the limit; it was stopped"
    failure = _provider_failure(calls)
    if failure is not None:
        return "error", failure[0], f"the last model call failed: {failure[1]}"
    if not calls and end.killed is None and end.exit_code:
        return "error", "agent_start", _crashed(agent, end)
    return "completed", None, None


def _crashed(agent: str, end: AgentEnd) -> str:
    """``agent NAME exited 2 before its first model call: <the head of its stderr>``."""
    message = f"agent {agent} {exited(end.exit_code or 0)} before its first model call"
    head = stderr_head(end.stderr)
    return f"{message}: {head}" if head else f"{message} (nothing on stderr)"


_HEAD_CHARS: Final = 300


def exited(code: int) -> str:
    """``exited 2``, or ``was killed by signal 9`` for a negative code (``Popen.returncode``)."""
    return f"was killed by signal {-code}" if code < 0 else f"exited {code}"


def stderr_head(stderr: str) -> str:
    """The line of an agent's stderr that says why it stopped: its first non-blank line, or, when that opens a
    Python traceback, the traceback's last line (the exception); at most 300 characters."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1] if lines[0].startswith("Traceback (most recent call last)") else lines[0]
    return line if len(line) <= _HEAD_CHARS else line[: _HEAD_CHARS - 1] + "…"


def run_started(facts: RunFacts) -> RunStarted:
    """The ``run_start`` event of an external agent's run (policy mode ``external``)."""
    return RunStarted(
        seq=0,
        elapsed_ms=0,
        prompt=facts.prompt,
        provider=facts.provider,
        model=facts.model,
        policy_mode="external",
        agent=facts.agent,
        config_hash=facts.config_hash,
        harness_version=facts.harness_version,
    )


def _denied(agent: str, what: str, seq: int, elapsed_ms: int) -> IncidentRaised:
    message = f"agent {agent}: the sandbox refused {what}"
    return IncidentRaised(seq=seq, elapsed_ms=elapsed_ms, kind=IncidentKind.SANDBOX_DENIED, message=message)


def run_events(
    facts: RunFacts,
    calls: Sequence[ProxiedCall],
    end: AgentEnd,
    tool_map: Mapping[str, str],
    budget: tuple[str, int | float, int | float] | None,
    wall_ms: int | None,
    denied: str | None = None,
) -> RunVerdict:
    """The run's event log and outcome (rules in the module docstring).

    Args:
        budget: ``(name, limit, value)`` of the budget the proxy refused a call for, if any.
        wall_ms: the task's ``maxWallMs`` (named in the budget stop when the agent was killed at it).
        denied: what the sandbox refused, as the agent's output shows it (a ``sandbox_denied`` incident).
    """
    events: list[Event] = [run_started(facts)]
    for call in calls:
        events.extend(_call_events(call, len(events), tool_map))
    outcome, reason, message = _outcome(facts.agent, calls, end, budget, wall_ms)
    elapsed = max([end.elapsed_ms, *(e.elapsed_ms for e in events)])
    events.append(
        AgentExited(
            seq=len(events),
            elapsed_ms=elapsed,
            agent=facts.agent,
            kind=facts.kind,
            exit_code=end.exit_code,
            killed=end.killed,
            stdout=end.stdout,
            stderr=end.stderr,
            stopped=end.stopped,
        )
    )
    if outcome == "completed" and end.killed is None and end.exit_code:
        said = f"agent {exited(end.exit_code)}"
        kind = IncidentKind.AGENT_EXITED
        events.append(IncidentRaised(seq=len(events), elapsed_ms=elapsed, kind=kind, message=said))
    if denied is not None:
        events.append(_denied(facts.agent, denied, len(events), elapsed))
    if outcome == "budget_exceeded" and reason is not None:
        limit, value = (budget[1], budget[2]) if budget else (wall_ms or 0, elapsed)
        named: list[BudgetName] = [known for known in _BUDGETS if known == reason]
        name: BudgetName = named[0] if named else "maxWallMs"
        events.append(
            BudgetStopped(seq=len(events), elapsed_ms=elapsed, budget=name, limit=limit, value=value)
        )
    texts = [call.exchange.text for call in calls if call.exchange and call.exchange.text]
    final = texts[-1] if texts else ""
    events.append(
        RunEnded(
            seq=len(events),
            elapsed_ms=elapsed,
            outcome=outcome,
            reason=reason,
            final_text=final,
            turns=len(calls),
        )
    )
    return RunVerdict(events=tuple(events), outcome=outcome, reason=reason, message=message)
