"""Properties of ``alisio.core.harness.agent_step``: no tool call runs unless the policy allows it, refusals are classified."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.harness.agent_step import (
    AskUser,
    BudgetExceeded,
    CallTools,
    Failed,
    Finish,
    Refuse,
    RunTool,
    Stop,
    after_response,
    gate_tool,
    over_cap_incident,
    over_cap_refusal,
    provider_stop,
    response_incidents,
    run_end_fields,
    select_agent,
)
from alisio.core.harness.budget import BudgetStop, RunBudget
from alisio.core.harness.config import HARNESS_TOOLS, AgentConfig, MeasuredConfig
from alisio.core.harness.events import Effect, IncidentKind
from alisio.core.harness.policy import Allow, Ask, Policy, decide
from alisio.core.harness.protocol import ProviderResponse, ToolCall, Usage
from alisio.core.harness.tooldefs import effect_of
from tests.property.strategies_harness import (
    budgets,
    effect_sets,
    harness_policies,
    offered_tools,
    tool_names,
)

VALID_ARGUMENTS = {
    "read_file": '{"path": "a"}',
    "list_dir": '{"path": "."}',
    "search": '{"pattern": "x"}',
    "write_file": '{"path": "a", "content": ""}',
    "edit_file": '{"path": "a", "old_string": "x", "new_string": "y"}',
    "bash": '{"command": "true"}',
    "fetch_url": '{"url": "http://example.com"}',
    "analyze": "{}",
}


@given(tool_names, offered_tools, harness_policies, effect_sets, effect_sets, st.booleans())
def test_a_call_runs_only_when_offered_well_formed_and_allowed(
    name: str,
    offered: tuple[str, ...],
    policy: Policy,
    granted: frozenset[Effect],
    session: frozenset[Effect],
    valid: bool,
) -> None:
    """RunTool only for an offered tool with valid arguments that decide() allows; AskUser only when it asks."""
    arguments = VALID_ARGUMENTS.get(name, "{}") if valid else "{broken"
    gate = gate_tool(ToolCall(id="c", name=name, arguments=arguments), offered, policy, granted, session)
    effect = effect_of(name)
    if effect is None or name not in offered or not valid:
        assert isinstance(gate, Refuse) and gate.incident is IncidentKind.INVALID_TOOL_CALL
        return
    decision = decide(effect, policy, granted, session)
    match gate:
        case RunTool(effect=ran):
            assert ran is effect and isinstance(decision, Allow)
        case AskUser(effect=asked):
            assert asked is effect and isinstance(decision, Ask)
        case Refuse(incident=incident):
            assert incident is IncidentKind.EFFECT_REFUSED
            assert not isinstance(decision, Allow | Ask)


@given(st.text(max_size=20), st.sampled_from(["stop", "length", "tool_calls"]), st.booleans(), st.booleans())
def test_a_response_without_tool_calls_finishes_and_incidents_match(
    text: str, finish: str, with_call: bool, with_usage: bool
) -> None:
    """No tool calls -> Finish with the text; length -> truncated_output; no usage -> usage_unreported."""
    calls = (ToolCall(id="c", name="read_file", arguments="{}"),) if with_call else ()
    usage = Usage(input_tokens=1, output_tokens=1) if with_usage else None
    response = ProviderResponse(
        text=text, reasoning=None, tool_calls=calls, finish_reason=finish, usage=usage
    )
    step = after_response(response, 32)
    assert step == (CallTools(calls=calls) if with_call else Finish(final_text=text))
    kinds = [kind for kind, _ in response_incidents(response)]
    expected = [IncidentKind.TRUNCATED_OUTPUT] if finish == "length" else []
    expected += [] if with_usage else [IncidentKind.USAGE_UNREPORTED]
    assert kinds == expected


@given(st.integers(min_value=0, max_value=12), st.integers(min_value=1, max_value=10))
def test_calls_past_the_per_turn_cap_are_refused_with_one_incident(count: int, cap: int) -> None:
    """The first min(count, cap) calls run in order, the rest are refused in order; one incident iff any are."""
    calls = tuple(ToolCall(id=f"c{i}", name="read_file", arguments="{}") for i in range(count))
    response = ProviderResponse(
        text="t", reasoning=None, tool_calls=calls, finish_reason="tool_calls", usage=None
    )
    step = after_response(response, cap)
    if count == 0:
        assert step == Finish(final_text="t")
        return
    assert isinstance(step, CallTools)
    assert step.calls + step.refused == calls
    assert len(step.calls) == min(count, cap) and len(step.refused) == max(0, count - cap)
    incident = over_cap_incident(step, cap)
    if count <= cap:
        assert incident is None
    else:
        assert incident is not None and incident[0] is IncidentKind.TOO_MANY_TOOL_CALLS
        last = "the last call was" if count - cap == 1 else f"the last {count - cap} calls were"
        assert f"asked for {count} tool calls" in incident[1] and f"so {last} refused" in incident[1]
    refusal = over_cap_refusal(cap)
    assert refusal.incident is IncidentKind.TOO_MANY_TOOL_CALLS
    assert f"per-turn limit of {cap} calls" in refusal.message and "fewer calls per turn" in refusal.message


def test_select_agent_picks_instructions_and_tools_or_fails_naming_the_known() -> None:
    """The default agent has every tool; a named agent its subset; an unknown name fails listing the known."""
    measured = MeasuredConfig(
        instructions="main", agents=(AgentConfig(name="rev", instructions="review", tools=("read_file",)),)
    )
    default = select_agent(measured, None).unwrap()
    assert (default.instructions, default.tools) == ("main", HARNESS_TOOLS)
    rev = select_agent(measured, "rev").unwrap()
    assert (rev.instructions, rev.tools) == ("review", ("read_file",))
    assert "rev" in str(select_agent(measured, "nobody").failure())


@given(st.text(alphabet="abc_ -0123456789.", min_size=1, max_size=30))
def test_unusable_usage_is_one_usage_unreported_incident_saying_why(problem: str) -> None:
    """A response whose usage could not be used raises usage_unreported, naming the problem (never silently)."""
    response = ProviderResponse(
        text="t", reasoning=None, tool_calls=(), finish_reason="stop", usage=None, usage_problem=problem
    )
    ((kind, message),) = response_incidents(response)
    assert kind is IncidentKind.USAGE_UNREPORTED
    assert f"({problem}; a count must be an integer from 0 to 1000000000)" in message
    assert "treated as unreported" in message


_stops = st.one_of(
    st.builds(Finish, final_text=st.text(max_size=20)),
    st.builds(
        BudgetExceeded,
        stop=st.builds(
            BudgetStop,
            budget=st.sampled_from(["maxTurns", "maxWallMs", "maxTokens", "maxToolCalls", "maxCostUsd"]),
            limit=st.integers(min_value=1, max_value=100),
            value=st.integers(min_value=0, max_value=200),
        ),
    ),
    st.builds(
        Failed, reason=st.sampled_from(["provider_auth", "mcp_start", "internal_error"]), message=st.text()
    ),
)


@given(_stops)
def test_a_stop_says_its_outcome_reason_text_and_message_in_run_end(stop: Stop) -> None:
    outcome, reason, final_text, message = run_end_fields(stop)
    if isinstance(stop, Finish):
        assert (outcome, reason, final_text, message) == ("completed", None, stop.final_text, None)
    elif isinstance(stop, BudgetExceeded):
        assert (outcome, reason, final_text, message) == ("budget_exceeded", stop.stop.budget, "", None)
    else:
        assert (outcome, reason, final_text, message) == ("error", stop.reason, "", stop.message)


@given(budgets, st.booleans(), st.integers(min_value=0, max_value=10**7))
def test_a_call_cut_at_max_wall_ms_is_a_budget_stop_any_other_failure_an_error(
    budget: RunBudget, deadline: bool, elapsed_ms: int
) -> None:
    stop = provider_stop(deadline, "provider_network", "connection refused", budget, elapsed_ms)
    if deadline:
        assert stop == BudgetExceeded(
            stop=BudgetStop(budget="maxWallMs", limit=budget.max_wall_ms, value=elapsed_ms)
        )
    else:
        assert stop == Failed(reason="provider_network", message="connection refused")
