"""Hypothesis strategies for the harness core: budgets, usage and conversations."""

from __future__ import annotations

from hypothesis import strategies as st

from alisio.core.harness.budget import RunBudget
from alisio.core.harness.events import Effect
from alisio.core.harness.policy import Policy, PolicyMode
from alisio.core.harness.protocol import AssistantMessage, Message, ToolCall, ToolMessage, Usage, UserMessage
from alisio.core.harness.tooldefs import TOOL_NAMES

counts = st.integers(min_value=0, max_value=10_000)

budgets = st.builds(
    RunBudget,
    max_turns=st.integers(min_value=1, max_value=500),
    max_wall_ms=st.integers(min_value=1, max_value=10_000_000),
    max_tokens=st.none() | st.integers(min_value=1, max_value=10_000_000),
    max_tool_calls=st.none() | st.integers(min_value=1, max_value=500),
)

token_counts = st.none() | st.integers(min_value=0, max_value=1_000_000)

usages = st.none() | st.builds(
    Usage, input_tokens=token_counts, output_tokens=token_counts, total_tokens=token_counts
)

_text = st.text(max_size=40)


@st.composite
def _exchange(draw: st.DrawFn, index: int) -> tuple[Message, ...]:
    """One assistant turn: text only, or tool calls followed by one result per call."""
    n_calls = draw(st.integers(min_value=0, max_value=3))
    calls = tuple(
        ToolCall(id=f"c{index}_{i}", name=draw(st.sampled_from(["read_file", "bash"])), arguments="{}")
        for i in range(n_calls)
    )
    assistant = AssistantMessage(content=draw(st.none() | _text), tool_calls=calls)
    results = tuple(ToolMessage(tool_call_id=c.id, name=c.name, content=draw(_text)) for c in calls)
    return (assistant, *results)


@st.composite
def conversations(draw: st.DrawFn) -> tuple[Message, ...]:
    """A task prompt followed by well-formed exchanges (every tool call answered right after it)."""
    prompt = UserMessage(content="RULE: " + draw(_text))
    n = draw(st.integers(min_value=0, max_value=8))
    messages: list[Message] = [prompt]
    for index in range(n):
        messages.extend(draw(_exchange(index)))
    return tuple(messages)


effects = st.sampled_from(list(Effect))
effect_sets = st.frozensets(effects)
harness_policies = st.builds(
    Policy, mode=st.sampled_from(list(PolicyMode)), allow=effect_sets, read_only=st.booleans()
)
tool_names = st.sampled_from([*TOOL_NAMES, "rm_rf", ""])
offered_tools = st.lists(st.sampled_from(TOOL_NAMES), unique=True).map(tuple)
