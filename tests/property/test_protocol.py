"""Properties of alisio.core.harness.protocol.assemble: how a provider's stream events fold into one response."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.harness.protocol import (
    FinishEvent,
    ProviderResponse,
    ReasoningDelta,
    StreamError,
    StreamErrorEvent,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    UsageEvent,
    assemble,
    usage_before_cut,
    usage_problem,
)
from tests.property.strategies_providers import (
    finish_reasons,
    plain_events,
    stream_errors,
    tool_call_streams,
    tool_calls,
    usages,
)


def assembled(events: tuple[StreamEvent, ...]) -> ProviderResponse:
    result = assemble(events)
    assert isinstance(result, Success), result
    response: ProviderResponse = result.unwrap()
    return response


@given(st.lists(plain_events, max_size=12), finish_reasons)
def test_text_and_reasoning_concatenate_in_arrival_order(events: list[StreamEvent], finish: str) -> None:
    """Text is every text fragment joined in order; reasoning likewise, or None when none was streamed."""
    response = assembled((*events, FinishEvent(reason=finish)))
    assert response.text == "".join(e.text for e in events if isinstance(e, TextDelta))
    reasoning = [e.text for e in events if isinstance(e, ReasoningDelta)]
    assert response.reasoning == ("".join(reasoning) if reasoning else None)
    assert response.tool_calls == ()


@given(tool_call_streams())
def test_tool_calls_group_by_index_with_first_id_and_name_and_joined_arguments(
    case: tuple[tuple[tuple[int, str | None, str | None, str], ...], tuple[StreamEvent, ...]],
) -> None:
    """Interleaved fragments make one call per index, sorted by index: first id/name sent, arguments joined."""
    expected, events = case
    response = assembled(events)
    assert response.tool_calls == tuple(
        ToolCall(id=call_id or f"call_{index}", name=name or "", arguments=arguments)
        for index, call_id, name, arguments in expected
    )
    assert response.finish_reason == "tool_calls"


@given(st.lists(tool_calls, min_size=1, max_size=4, unique_by=lambda call: call.id))
def test_whole_calls_in_separate_chunks_without_an_index_stay_separate(calls: list[ToolCall]) -> None:
    """Whole calls each in its own chunk at index 0 (gateways without an index) stay separate, in order."""
    events = tuple(ToolCallDelta(index=0, id=c.id, name=c.name, arguments=c.arguments) for c in calls)
    assert assembled((*events, FinishEvent(reason="tool_calls"))).tool_calls == tuple(calls)


@given(st.lists(plain_events, max_size=12), finish_reasons)
def test_the_last_usage_and_the_last_finish_reason_win(events: list[StreamEvent], finish: str) -> None:
    """Usage is the last one reported (None when none was), the finish reason the last one sent."""
    response = assembled((*events, FinishEvent(reason=finish)))
    usages = [e.usage for e in events if isinstance(e, UsageEvent)]
    assert response.usage == (usages[-1] if usages else None)
    assert response.finish_reason == finish


@given(st.lists(plain_events.filter(lambda e: not isinstance(e, FinishEvent)), max_size=12))
def test_a_stream_without_a_finish_reason_is_a_failure(events: list[StreamEvent]) -> None:
    """A stream that stops before any finish reason is a truncation error, never a silent partial answer."""
    assert assemble(tuple(events)) == Failure(
        StreamError(message="the stream ended without a finish reason (truncated response)")
    )


@given(
    st.lists(plain_events, max_size=6),
    st.lists(stream_errors, min_size=1, max_size=3),
    st.lists(plain_events, max_size=6),
)
def test_an_in_stream_error_is_a_failure_carrying_the_first_error(
    before: list[StreamEvent], errors: list[StreamErrorEvent], after: list[StreamEvent]
) -> None:
    """An error event anywhere, even after a finish, fails the call with the first error's message and code."""
    first = errors[0]
    events = (*before, *errors, *after, FinishEvent(reason="stop"))
    assert assemble(events) == Failure(StreamError(message=first.message, code=first.code))


@given(
    st.sampled_from(
        ["input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens"]
    ),
    st.integers(max_value=-1),
)
def test_usage_with_a_negative_count_counts_as_unreported(field: str, count: int) -> None:
    """A negative count (from a script, a cassette or a provider) never reaches a token total: the response
    has no usage and says which count was wrong."""
    usage = Usage(**{field: count})  # type: ignore[arg-type]
    response = assembled((UsageEvent(usage=usage), FinishEvent(reason="stop")))
    assert response.usage is None
    assert response.usage_problem is not None and response.usage_problem.endswith(f" is {count}")


@given(
    st.none() | usages | st.builds(Usage, input_tokens=st.integers(-3, 3), output_tokens=st.integers(-3, 3))
)
def test_a_cut_call_keeps_the_input_side_of_a_usable_usage_and_no_output(usage: Usage | None) -> None:
    """What a call cut short keeps: the input, cached and cache-write counts it reported, never an output,
    total or reasoning count (one sent before the end is not the call's); nothing from an unusable usage or
    one without an input count."""
    kept = usage_before_cut(usage)
    if usage is None or usage.input_tokens is None or usage_problem(usage) is not None:
        assert kept is None
        return
    assert kept is not None and usage_problem(kept) is None
    assert (kept.input_tokens, kept.cached_input_tokens, kept.cache_write_input_tokens) == (
        usage.input_tokens,
        usage.cached_input_tokens,
        usage.cache_write_input_tokens,
    )
    assert (kept.output_tokens, kept.total_tokens, kept.reasoning_tokens) == (None, None, None)
