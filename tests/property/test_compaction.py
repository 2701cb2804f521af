"""Properties of ``alisio.core.harness.compaction``: the task prompt stays verbatim and tool exchanges are never split."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.harness.compaction import (
    CHECKPOINT_ASK,
    CHECKPOINT_PREFIX,
    apply_checkpoint,
    checkpoint_request,
    conversation_chars,
    is_checkpoint,
    message_chars,
    plan_compaction,
    recent_to_keep,
    should_compact,
)
from alisio.core.harness.protocol import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from tests.property.strategies_harness import conversations

keeps = st.integers(min_value=0, max_value=10)


@given(conversations(), keeps)
def test_the_task_prompt_is_never_replaced(messages: tuple[Message, ...], keep: int) -> None:
    """After a checkpoint, message 0 is the same task prompt, verbatim."""
    plan = plan_compaction(messages, keep)
    after = apply_checkpoint(messages, plan, "summary")
    assert after[0] == messages[0]
    assert plan.start == 1


@given(conversations(), keeps)
def test_tool_calls_and_their_results_stay_together(messages: tuple[Message, ...], keep: int) -> None:
    """Every tool result kept after compaction follows the assistant message that called it."""
    plan = plan_compaction(messages, keep)
    after = apply_checkpoint(messages, plan, "summary") if not plan.empty else messages
    pending: set[str] = set()
    for message in after:
        match message:
            case AssistantMessage(tool_calls=calls):
                pending = {call.id for call in calls}
            case ToolMessage(tool_call_id=call_id):
                assert call_id in pending
            case _:
                pending = set()


@given(conversations(), keeps)
def test_the_kept_tail_is_unchanged_and_at_least_keep_recent_long(
    messages: tuple[Message, ...], keep: int
) -> None:
    """The recent messages after the replaced part are kept as they were, at least ``keep`` of them."""
    plan = plan_compaction(messages, keep)
    after = apply_checkpoint(messages, plan, "summary")
    assert after[plan.start + 1 :] == messages[plan.end :]
    assert len(messages) - plan.end >= min(keep, len(messages) - 1)
    assert is_checkpoint(after[1])


@given(conversations(), keeps)
def test_the_latest_tool_exchange_is_never_replaced(messages: tuple[Message, ...], keep: int) -> None:
    """Tool results the model has not answered yet, and the call that asked for them, are kept whatever
    ``keep_recent`` (even 0): a checkpoint in their place would have the model repeat the calls forever."""
    plan = plan_compaction(messages, keep)
    tail = len(messages)
    while tail > 1 and isinstance(messages[tail - 1], ToolMessage):
        tail -= 1
    if tail < len(messages) and tail >= 2:
        assert plan.end <= tail - 1  # the assistant message that made the calls is kept, and its results


def test_a_huge_last_tool_result_is_kept_with_keep_zero() -> None:
    """keep_recent=0 (nothing fits the size budget) still keeps the last assistant call and its result."""
    call = ToolCall(id="c1", name="read_file", arguments="{}")
    messages: tuple[Message, ...] = (
        UserMessage(content="task"),
        AssistantMessage(content="older"),
        AssistantMessage(content=None, tool_calls=(call,)),
        ToolMessage(tool_call_id="c1", name="read_file", content="x" * 100_000),
    )
    plan = plan_compaction(messages, 0)
    assert (plan.start, plan.end, plan.empty) == (1, 2, False)
    assert apply_checkpoint(messages, plan, "cp")[2:] == messages[2:]


@given(conversations())
def test_a_plan_replacing_only_the_previous_checkpoint_is_empty(messages: tuple[Message, ...]) -> None:
    """Compacting again with nothing new to fold in is an empty plan (no thrashing)."""
    plan = plan_compaction(messages, 0)
    once = apply_checkpoint(messages, plan, "summary")
    again = plan_compaction(once, len(once) - 2)
    assert again.empty


@given(conversations())
def test_conversation_chars_is_the_sum_of_its_parts(messages: tuple[Message, ...]) -> None:
    """The running sum the loop keeps equals a full re-count."""
    total = len("sys") + sum(message_chars(message) for message in messages)
    assert conversation_chars("sys", messages) == total


@given(
    st.integers(min_value=0, max_value=10**7),
    st.floats(min_value=0.05, max_value=1.0, allow_nan=False),
    st.integers(min_value=1, max_value=10**7),
)
def test_should_compact_exactly_past_the_threshold(chars: int, threshold: float, limit: int) -> None:
    """should_compact is true exactly when chars passes threshold x maxContextChars."""
    assert should_compact(chars, threshold, limit) == (chars > threshold * limit)


@given(conversations(), keeps)
def test_the_checkpoint_call_is_the_prompt_and_the_replaced_messages(
    messages: tuple[Message, ...], keep: int
) -> None:
    """The checkpoint request has purpose compaction, no tools, the prompt, every replaced message, the ask."""
    prompt = messages[0]
    assert isinstance(prompt, UserMessage)
    plan = plan_compaction(messages, keep)
    older = messages[plan.start : plan.end]
    request = checkpoint_request("m", prompt.content, older)
    assert request.purpose == "compaction" and request.tools == ()
    assert request.messages == (prompt, *older, UserMessage(content=CHECKPOINT_ASK))
    assert "VERBATIM" in request.instructions


def test_checkpoint_text_follows_the_prefix() -> None:
    """The checkpoint message is the prefix followed by the model's text, unchanged."""
    messages: tuple[Message, ...] = (
        UserMessage(content="task"),
        AssistantMessage(content="a"),
        AssistantMessage(content="b"),
    )
    plan = plan_compaction(messages, 1)
    after = apply_checkpoint(messages, plan, "keep RULE X")
    assert after == (messages[0], UserMessage(content=CHECKPOINT_PREFIX + "keep RULE X"), messages[2])


@given(conversations(), st.integers(min_value=0, max_value=2000), st.integers(min_value=0, max_value=10))
def test_recent_to_keep_fits_the_budget_and_is_maximal(
    messages: tuple[Message, ...], budget: int, max_keep: int
) -> None:
    """The kept tail fits the budget and the count; one more message would break one of them."""
    keep = recent_to_keep(messages, budget, max_keep)
    sizes = [message_chars(message) for message in messages[1:]]
    assert 0 <= keep <= min(max_keep, len(sizes))
    assert sum(sizes[len(sizes) - keep :]) <= budget
    if keep < min(max_keep, len(sizes)):
        assert sum(sizes[len(sizes) - keep - 1 :]) > budget
