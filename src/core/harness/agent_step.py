"""The agent loop's decisions, as values: which agent runs, what a response means, whether a tool call runs,
how a turn ends.

``alisio.shell.harness.agent`` and its parts (``provider_calls``, ``tool_calls``, ``checkpoint``) perform the
effects (provider calls, tools, the terminal); every choice they make is a call into this module,
``alisio.core.harness.budget``, ``alisio.core.harness.compaction`` or ``alisio.core.harness.policy``.

Rules this module keeps:

- a turn ends as a value (``TurnEnd``): ``Continue`` (the next turn starts) or a ``Stop``: ``Finish`` (the
  model ended without a tool call: ``completed``), ``BudgetExceeded`` (``budget_exceeded``, the budget's name as
  reason) or ``Failed`` (``error``, a reason code and one line for the user); ``run_end_fields`` is what the
  ``run_end`` event of each says; a provider call cut off at maxWallMs is a budget stop, any other failed call
  an error (``provider_stop``);
- a response with no tool calls ends the run (``Finish``); otherwise its calls run in order (``CallTools``);
- at most ``tools.maxCallsPerTurn`` calls of one response run: each call past the cap is refused with a tool
  error the model sees (it never runs and is never gated), and the turn raises one ``too_many_tool_calls``
  incident; the run goes on, so the verifiers judge it (a fail the model caused, never an error);
- an MCP server's tool (``mcp__<server>__<tool>``, ``alisio.core.harness.mcp``) is gated like ``bash``: its
  effect is ``process``; its arguments need only be a JSON object (the server checks them);
- a tool the agent was not offered, or that the harness does not know, or arguments that do not decode, are
  refused with an ``invalid_tool_call`` incident and a tool error the model sees; such a call never runs and
  is never put to the user;
- a policy ``Deny`` is refused with an ``effect_refused`` incident and no approval; ``Ask`` goes to the user
  (headless: denied with an ``approval_denied`` incident); ``Allow`` runs;
- every refusal is a tool result the model reads, so a refusal never ends the run.
"""

from __future__ import annotations

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.harness.budget import BudgetStop, RunBudget
from alisio.core.harness.config import HARNESS_TOOLS, MeasuredConfig
from alisio.core.harness.events import Effect, IncidentKind, RunOutcome
from alisio.core.harness.mcp import MCP_EFFECT, McpListing, mcp_arguments
from alisio.core.harness.policy import Allow, Ask, Deny, Policy, decide, denial_message
from alisio.core.harness.protocol import COUNT_RULE, ProviderResponse, ToolCall
from alisio.core.harness.text_calls import calls_to_run, text_calls
from alisio.core.harness.tooldefs import decode_arguments, effect_of

__all__ = [
    "CONTEXT_SEPARATOR",
    "AgentProfile",
    "AskUser",
    "BudgetExceeded",
    "CallTools",
    "Continue",
    "Failed",
    "Finish",
    "Refuse",
    "RunTool",
    "Stop",
    "TurnEnd",
    "UnknownAgentError",
    "after_response",
    "approval_refusal",
    "gate_tool",
    "over_cap_incident",
    "over_cap_refusal",
    "provider_stop",
    "response_incidents",
    "run_end_fields",
    "select_agent",
    "with_system_text",
]


class AgentProfile(Frozen, frozen=True, kw_only=True):
    """What the loop needs of the main agent: its system prompt and the tools it is offered."""

    name: str | None
    """``None`` for the default agent (the top-level ``instructions``, every tool)."""
    instructions: str
    tools: tuple[str, ...]


class UnknownAgentError(Frozen, frozen=True, kw_only=True, tag="unknown_agent"):
    """``--agent NAME`` (or a task's ``agent``) names no ``[agents.NAME]`` of the configuration."""

    name: str
    known: tuple[str, ...]

    def __str__(self) -> str:
        known = ", ".join(self.known) if self.known else "none are configured"
        return f"unknown agent {self.name!r} (agents: {known})"


def select_agent(measured: MeasuredConfig, name: str | None) -> Result[AgentProfile, UnknownAgentError]:
    """The profile of agent ``name``, or of the default agent when ``name`` is ``None``.

    Returns:
        ``Failure(UnknownAgentError)`` when no configured agent has that name.
    """
    if name is None:
        return Success(AgentProfile(name=None, instructions=measured.instructions, tools=HARNESS_TOOLS))
    for agent in measured.agents:
        if agent.name == name:
            tools = HARNESS_TOOLS if agent.tools is None else tuple(agent.tools)
            return Success(AgentProfile(name=name, instructions=agent.instructions, tools=tools))
    return Failure(UnknownAgentError(name=name, known=tuple(agent.name for agent in measured.agents)))


CONTEXT_SEPARATOR = "\n\n"
"""Between the agent's instructions and a context's ``system`` text."""


def with_system_text(profile: AgentProfile, text: str | None) -> AgentProfile:
    """``profile`` with a context's ``system`` text appended to its instructions (``None``: unchanged)."""
    if text is None:
        return profile
    return msgspec.structs.replace(profile, instructions=f"{profile.instructions}{CONTEXT_SEPARATOR}{text}")


class Finish(Frozen, frozen=True, kw_only=True):
    """The model ended its turn without a tool call: the run is complete."""

    final_text: str


class Continue(Frozen, frozen=True, kw_only=True):
    """The turn's tool calls are answered: the next turn starts."""


class BudgetExceeded(Frozen, frozen=True, kw_only=True):
    """A budget was passed: the run stops ``budget_exceeded`` (a ``budget_stop`` event says which and by how much)."""

    stop: BudgetStop


class Failed(Frozen, frozen=True, kw_only=True):
    """The run cannot go on: it stops ``error`` with ``reason`` (e.g. ``provider_auth``, ``mcp_start``)."""

    reason: str
    message: str
    """One line for the user (redacted: never holds a key)."""


Stop = Finish | BudgetExceeded | Failed
"""How a run ends: the model finished, a budget was passed, or something failed."""

TurnEnd = Continue | Stop
"""How one turn ends: the run goes on, or it stops."""


def run_end_fields(stop: Stop) -> tuple[RunOutcome, str | None, str, str | None]:
    """What the ``run_end`` event of a stop says: its outcome, reason, final text and message."""
    match stop:
        case Finish(final_text=text):
            return "completed", None, text, None
        case BudgetExceeded(stop=passed):
            return "budget_exceeded", passed.budget, "", None
        case Failed(reason=reason, message=message):
            return "error", reason, "", message


def provider_stop(deadline: bool, reason: str, message: str, budget: RunBudget, elapsed_ms: int) -> Stop:
    """How a run ends when a provider call failed: cut off at the run's maxWallMs (``deadline``) it is a budget
    stop, not a provider error; any other failure is ``error`` with the failure's ``reason`` and ``message``."""
    if deadline:
        return BudgetExceeded(stop=BudgetStop(budget="maxWallMs", limit=budget.max_wall_ms, value=elapsed_ms))
    return Failed(reason=reason, message=message)


class CallTools(Frozen, frozen=True, kw_only=True):
    """Run these tool calls, in order, refuse the ``refused`` ones (past the per-turn cap), then start the next
    turn."""

    calls: tuple[ToolCall, ...]
    refused: tuple[ToolCall, ...] = ()
    """The calls past ``tools.maxCallsPerTurn``, in order: each gets ``over_cap_refusal`` and never runs."""
    from_text: bool = False
    """Calls the model wrote as text (``tools.textCalls = "parse"``): answered in one user message."""


def after_response(
    response: ProviderResponse,
    max_calls_per_turn: int,
    offered: tuple[str, ...] = (),
    turn: int = 0,
    text_calls_mode: str = "off",
) -> Finish | CallTools:
    """What the loop does with an assembled main-loop response (``max_calls_per_turn`` >= 1): with
    ``text_calls_mode`` ``parse``, calls of ``offered`` tools written as text in turn ``turn`` are run."""
    calls, from_text = response.tool_calls, False
    if not calls and text_calls_mode == "parse":
        calls, from_text = calls_to_run(text_calls(response.text, offered), turn), True
    if not calls:
        return Finish(final_text=response.text)
    return CallTools(
        calls=calls[:max_calls_per_turn], refused=calls[max_calls_per_turn:], from_text=from_text
    )


def over_cap_refusal(max_calls_per_turn: int) -> Refuse:
    """The tool result each call past the per-turn cap gets (the model reads it; the call did not run)."""
    return Refuse(
        incident=IncidentKind.TOO_MANY_TOOL_CALLS,
        message=f"error: too many tool calls in one turn: you exceeded the per-turn limit of "
        f"{max_calls_per_turn} calls, so this call was not run. Make fewer calls per turn (at most "
        f"{max_calls_per_turn}); repeat this call in a later turn if you still need it.",
    )


def over_cap_incident(step: CallTools, max_calls_per_turn: int) -> tuple[IncidentKind, str] | None:
    """The one incident a turn raises when it asked for more calls than the cap; ``None`` when it did not."""
    if not step.refused:
        return None
    asked = len(step.calls) + len(step.refused)
    last = "the last call was" if len(step.refused) == 1 else f"the last {len(step.refused)} calls were"
    return (
        IncidentKind.TOO_MANY_TOOL_CALLS,
        f"the model asked for {asked} tool calls in one turn; tools.maxCallsPerTurn is {max_calls_per_turn}, "
        f"so {last} refused without running",
    )


def response_incidents(response: ProviderResponse) -> tuple[tuple[IncidentKind, str], ...]:
    """The incidents one main-loop response raises: output cut at the limit, usage not reported (or reported
    with counts that cannot be used, which counts as not reported: the message says which count)."""
    incidents: list[tuple[IncidentKind, str]] = []
    if response.finish_reason == "length":
        incidents.append(
            (IncidentKind.TRUNCATED_OUTPUT, "the provider stopped at its output limit (finish_reason length)")
        )
    if response.usage is None and response.usage_problem is not None:
        incidents.append(
            (
                IncidentKind.USAGE_UNREPORTED,
                f"the provider reported usage that cannot be used for this turn ({response.usage_problem}; "
                f"{COUNT_RULE}): treated as unreported, maxTokens not enforced on it",
            )
        )
    elif response.usage is None:
        incidents.append(
            (
                IncidentKind.USAGE_UNREPORTED,
                "the provider reported no usage for this turn; maxTokens not enforced on it",
            )
        )
    return tuple(incidents)


class RunTool(Frozen, frozen=True, kw_only=True):
    """Run the tool."""

    effect: Effect


class AskUser(Frozen, frozen=True, kw_only=True):
    """Ask the user (headless: deny with an ``approval_denied`` incident)."""

    effect: Effect


class Refuse(Frozen, frozen=True, kw_only=True):
    """Do not run the tool: raise ``incident`` and give the model ``message`` as the tool's (error) result."""

    incident: IncidentKind
    message: str


def gate_tool(
    call: ToolCall,
    offered: tuple[str, ...],
    policy: Policy,
    granted: frozenset[Effect],
    session_grants: frozenset[Effect],
    mcp: McpListing | None = None,
) -> RunTool | AskUser | Refuse:
    """Decide what happens to one tool call before anything runs.

    Args:
        call: the call the model made.
        offered: the tool names this agent was offered (its MCP tools are in ``mcp``).
        policy: the run's policy; ``granted`` its ceiling; ``session_grants`` the user's "always" answers.
        mcp: the MCP servers' tools offered in this run (``mcp__<server>__<tool>``; effect ``process``).
    """
    target = None if mcp is None else mcp.target(call.name)
    effect = MCP_EFFECT if target is not None else effect_of(call.name)
    if effect is None or (target is None and call.name not in offered):
        names = ", ".join((*offered, *(name for name, _ in (mcp.targets if mcp is not None else ()))))
        return Refuse(
            incident=IncidentKind.INVALID_TOOL_CALL,
            message=f"error: unknown tool {call.name!r}; the tools you can call are: {names}",
        )
    decoded = (
        mcp_arguments(call.name, call.arguments)
        if target is not None
        else decode_arguments(call.name, call.arguments)
    )
    match decoded:
        case Failure(error):
            return Refuse(incident=IncidentKind.INVALID_TOOL_CALL, message=f"error: {error}")
    match decide(effect, policy, granted, session_grants):
        case Allow():
            return RunTool(effect=effect)
        case Ask():
            return AskUser(effect=effect)
        case Deny(reason=reason):
            return Refuse(incident=IncidentKind.EFFECT_REFUSED, message=denial_message(effect, reason))


def approval_refusal(effect: Effect, by: str) -> Refuse:
    """The refusal after an approval was denied (``by`` the user, or ``headless`` with no terminal)."""
    who = "the user declined it" if by == "user" else "nobody can approve it in this headless run"
    return Refuse(
        incident=IncidentKind.APPROVAL_DENIED,
        message=f"denied: the {effect} effect needs approval and {who}. "
        "Do not retry this call; continue with the tools you are allowed to use.",
    )
