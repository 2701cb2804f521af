"""A run's trajectory: its tool calls, in order, with what each cost and what the model said before it.

``trajectory_of(events)`` reads one run's event log (a transcript, ``alisio.core.lab.runs.transcript``). It works
the same for the built-in agent and for an external one: an external agent's tool calls are in its event log
already, read off the model's responses the proxy recorded and named through its preset's tool map
(``alisio.core.agents.run``), so Claude Code's ``Bash`` is ``bash`` there.

Rules this module keeps:

- a step is one tool call (``tool_call`` event), numbered from 1 in the order the model asked for them;
- its **key** is the tool name and its normalised arguments (``normalised_arguments``): two steps are the
  same call when their keys are equal. Normalising parses the arguments as JSON and writes them back with
  sorted keys and no spaces, so key order and layout never count; replaces the run's workspace path (the
  temporary copy a run works in, ``.../alisio-<pid>@...-<task>-<random>``, a kept one ``alisio-kept-...``,
  and ``/workspace`` inside the sandbox) with ``<workspace>``, because every run has its own; and leaves
  out ``description``, the note for people some agents add to a shell call (Claude Code, OpenCode), which
  changes nothing the call does. Arguments that are not JSON are compared as their text, stripped;
- each step carries the tokens the run had spent when the model asked for it (main-loop usage summed over
  the responses up to and including the one that asked; ``None`` once a response reported none), the time
  since the run started, the result's ``ok`` when the run saw it (an external agent's results are not seen:
  ``None``), and the model's text just before it: the text of the response that asked for it, else the
  last non-empty text before it;
- the ending is how the loop ended (``run_end``: outcome, reason, final text, turns) and the budget stop,
  if any; the verdict is the shell's to add (a transcript alone does not hold it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Final

import msgspec

from alisio.core.base import Frozen
from alisio.core.harness.events import (
    BudgetStopped,
    Event,
    ProviderResponded,
    RunEnded,
    RunStarted,
    ToolCalled,
    ToolResulted,
)

__all__ = [
    "IGNORED_ARGUMENTS",
    "WORKSPACE",
    "Ending",
    "Step",
    "Trajectory",
    "normalised_arguments",
    "step_key",
    "trajectory_of",
]

WORKSPACE: Final = "<workspace>"
"""What a run's workspace path becomes in a normalised argument."""
IGNORED_ARGUMENTS: Final = frozenset({"description"})
"""Argument names left out of a call's key: notes for people that change nothing the call does."""

# A run's workspace: ``<tmp>/alisio-<pid>@<mark>.<start>-<task>-<random>``, ``alisio-<pid>-...`` (older),
# ``alisio-kept-<task>-<random>``; then the sandbox's ``/workspace`` at the start of a path.
_WORKSPACE_PATH = re.compile(
    r"(?:/[^\s\"'`/]+)*/alisio-(?:kept-|\d+(?:@[0-9a-f]*\.\d*)?-)[A-Za-z0-9._-]+"
    r"|(?<![\w./-])/workspace(?![\w.-])"
)


class Step(Frozen, frozen=True, kw_only=True):
    """One tool call of a run."""

    index: int
    """1-based, in the order the model asked for the calls."""
    turn: int
    """The model turn (1-based) whose response asked for it."""
    name: str
    arguments: str
    """The normalised arguments (``normalised_arguments``): with ``name``, the call's key."""
    raw_arguments: str
    """The arguments as the model sent them."""
    text_before: str = ""
    """The model's text just before the call: its own turn's, else the last non-empty one before it."""
    text_turn: int | None = None
    """The turn ``text_before`` comes from (``None``: the model said nothing before the call)."""
    ok: bool | None = None
    """Whether the tool reported success; ``None`` when the run did not see its result (external agents)."""
    input_tokens: int | None = None
    """Main-loop input tokens spent when the model asked for this call (``None``: some turn reported none)."""
    output_tokens: int | None = None
    elapsed_ms: int = 0
    """Time since the run started when the model asked for the call."""


class Ending(Frozen, frozen=True, kw_only=True):
    """Where a run ended, from its event log."""

    outcome: str
    """``completed``, ``budget_exceeded`` or ``error`` (``unknown`` when the log has no ``run_end``)."""
    reason: str | None = None
    final_text: str = ""
    message: str | None = None
    turns: int = 0
    budget: str | None = None
    """The budget stop, as ``maxTurns 10 (reached 10)``, when a budget stopped it."""
    wall_ms: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None


class Trajectory(Frozen, frozen=True, kw_only=True):
    """A run's tool calls and its ending."""

    agent: str | None = None
    """The agent named in ``run_start`` (``None``: the built-in agent)."""
    steps: tuple[Step, ...]
    ending: Ending


def step_key(step: Step) -> tuple[str, str]:
    """What makes two steps the same call: the tool name and the normalised arguments."""
    return step.name, step.arguments


def _normal(value: object) -> object:
    if isinstance(value, str):
        return _WORKSPACE_PATH.sub(WORKSPACE, value)
    if isinstance(value, list):
        return [_normal(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _normal(v) for k, v in value.items() if k not in IGNORED_ARGUMENTS}
    return value


def normalised_arguments(arguments: str) -> str:
    """A call's arguments as compared: JSON with sorted keys and no spaces, the workspace path as
    ``<workspace>``, ``description`` left out; text that is not JSON, stripped, with the same path rule."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return _WORKSPACE_PATH.sub(WORKSPACE, arguments.strip())
    return json.dumps(_normal(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _budget(stop: BudgetStopped) -> str:
    def shown(number: float) -> str:
        return f"{number:g}" if isinstance(number, float) else str(number)

    return f"{stop.budget} {shown(stop.limit)} (reached {shown(stop.value)})"


class _Spend:
    """Main-loop tokens summed over the responses so far (``None`` once one reported none)."""

    def __init__(self) -> None:
        self.input: int | None = 0
        self.output: int | None = 0

    def add(self, event: ProviderResponded) -> None:
        usage = event.usage
        if usage is None or usage.input_tokens is None or self.input is None:
            self.input = None
        else:
            self.input += usage.input_tokens
        if usage is None or usage.output_tokens is None or self.output is None:
            self.output = None
        else:
            self.output += usage.output_tokens


def _ending(events: Sequence[Event], spend: _Spend) -> Ending:
    ended = next((e for e in reversed(events) if isinstance(e, RunEnded)), None)
    stop = next((e for e in reversed(events) if isinstance(e, BudgetStopped)), None)
    wall = max((e.elapsed_ms for e in events), default=0)
    budget = _budget(stop) if stop is not None else None
    if ended is None:
        return Ending(outcome="unknown", budget=budget, wall_ms=wall)
    return Ending(
        outcome=ended.outcome,
        reason=ended.reason,
        final_text=ended.final_text,
        message=ended.message,
        turns=ended.turns,
        budget=budget,
        wall_ms=wall,
        input_tokens=spend.input,
        output_tokens=spend.output,
    )


def trajectory_of(events: Sequence[Event]) -> Trajectory:
    """The trajectory of one run's event log (the rules in the module docstring)."""
    steps: list[Step] = []
    ids: list[str] = []
    spend = _Spend()
    turn, text, text_turn, last_text, last_turn = 0, "", None, "", None
    agent: str | None = None
    for event in events:
        match event:
            case RunStarted(agent=named):
                agent = named
            case ProviderResponded(purpose="main") as response:
                turn += 1
                spend.add(response)
                text, text_turn = (response.text, turn) if response.text.strip() else (last_text, last_turn)
                if response.text.strip():
                    last_text, last_turn = response.text, turn
            case ToolCalled() as call:
                steps.append(
                    Step(
                        index=len(steps) + 1,
                        turn=max(turn, 1),
                        name=call.name,
                        arguments=normalised_arguments(call.arguments),
                        raw_arguments=call.arguments,
                        text_before=text,
                        text_turn=text_turn,
                        input_tokens=spend.input,
                        output_tokens=spend.output,
                        elapsed_ms=call.elapsed_ms,
                    )
                )
                ids.append(call.call_id)
            case _:
                pass
    seen = {e.call_id: e.ok for e in events if isinstance(e, ToolResulted)}
    judged = tuple(
        msgspec.structs.replace(step, ok=seen.get(call_id)) for step, call_id in zip(steps, ids, strict=True)
    )
    return Trajectory(agent=agent, steps=judged, ending=_ending(events, spend))
