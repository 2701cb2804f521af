"""A run's event log as steps: each model call with the tool calls it asked for and their results.

What the trajectory exports (ATIF, OTLP) are built from, decided once:

- a **model step** is one main-loop provider call: its ``provider_request``, its ``provider_response`` (``None``
  when the run ended before the answer), then every ``tool_call`` up to the next call, each with its
  ``tool_result`` and ``approval`` matched by call id (an external agent's tool calls have no result: alisio
  sees its model calls, not the tools it runs), and the incidents raised meanwhile;
- a **compaction step** is a ``compaction`` event: the checkpoint call that replaced older turns (its
  ``provider_request``/``provider_response`` pair, purpose ``compaction``, is folded into it, never a model
  step of its own, as the lab counts it apart from the main loop's tokens);
- what happened before the first call or after the last (an incident at start, the budget stop, the run's end,
  an external agent's exit) is kept on the run as a whole.

So the exports count what the run record counts: one model step per main-loop call (``measured.turns`` when
the loop was not cut), one tool call per ``tool_call`` event, and the main-loop tokens summed over the model
steps' usage.
"""

from __future__ import annotations

from collections.abc import Sequence

from alisio.core.base import Frozen
from alisio.core.harness.events import (
    AgentExited,
    ApprovalDecided,
    BudgetStopped,
    Compacted,
    Event,
    IncidentRaised,
    ProviderRequested,
    ProviderResponded,
    RunEnded,
    RunStarted,
    ToolCalled,
    ToolResulted,
)

__all__ = ["CompactionStep", "ModelStep", "RunSteps", "ToolStep", "run_steps"]


class ToolStep(Frozen, frozen=True, kw_only=True):
    """One tool call, with its result and the approval decided for it, when there were any."""

    call: ToolCalled
    result: ToolResulted | None = None
    approval: ApprovalDecided | None = None


class ModelStep(Frozen, frozen=True, kw_only=True):
    """One main-loop model call and what followed it until the next call."""

    request: ProviderRequested
    response: ProviderResponded | None
    tools: tuple[ToolStep, ...] = ()
    incidents: tuple[IncidentRaised, ...] = ()


class CompactionStep(Frozen, frozen=True, kw_only=True):
    """A compaction: the older conversation replaced by a checkpoint the model wrote."""

    compacted: Compacted


class RunSteps(Frozen, frozen=True, kw_only=True):
    """A run's event log, grouped."""

    started: RunStarted | None
    steps: tuple[ModelStep | CompactionStep, ...]
    incidents: tuple[IncidentRaised, ...] = ()
    """Incidents raised before the first model call."""
    budget: BudgetStopped | None = None
    ended: RunEnded | None = None
    agent_exit: AgentExited | None = None


class _Open:
    """The model step being filled."""

    def __init__(self, request: ProviderRequested) -> None:
        self.request = request
        self.response: ProviderResponded | None = None
        self.calls: list[ToolCalled] = []
        self.incidents: list[IncidentRaised] = []

    def close(self, results: dict[str, ToolResulted], approvals: dict[str, ApprovalDecided]) -> ModelStep:
        tools = tuple(
            ToolStep(call=call, result=results.get(call.call_id), approval=approvals.get(call.call_id))
            for call in self.calls
        )
        return ModelStep(
            request=self.request, response=self.response, tools=tools, incidents=tuple(self.incidents)
        )


def run_steps(events: Sequence[Event]) -> RunSteps:
    """The steps of a run's event log (see the module rules)."""
    results = {e.call_id: e for e in events if isinstance(e, ToolResulted)}
    approvals = {e.call_id: e for e in events if isinstance(e, ApprovalDecided)}
    steps: list[ModelStep | CompactionStep] = []
    early: list[IncidentRaised] = []
    current: _Open | None = None
    started = budget = ended = exited = None
    for event in events:
        match event:
            case ProviderRequested(purpose="main"):
                if current is not None:
                    steps.append(current.close(results, approvals))
                current = _Open(event)
            case ProviderResponded(purpose="main") if current is not None and current.response is None:
                current.response = event
            case ToolCalled() if current is not None:
                current.calls.append(event)
            case IncidentRaised():
                (current.incidents if current is not None else early).append(event)
            case Compacted():
                if current is not None:
                    steps.append(current.close(results, approvals))
                    current = None
                steps.append(CompactionStep(compacted=event))
            case RunStarted():
                started = event
            case BudgetStopped():
                budget = event
            case RunEnded():
                ended = event
            case AgentExited():
                exited = event
            case _:
                pass
    if current is not None:
        steps.append(current.close(results, approvals))
    return RunSteps(
        started=started,
        steps=tuple(steps),
        incidents=tuple(early),
        budget=budget,
        ended=ended,
        agent_exit=exited,
    )
