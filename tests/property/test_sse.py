"""Properties of alisio.core.harness.sse: chunks assemble back to the response they carry; the request body is faithful."""

from __future__ import annotations

import json
import time
from typing import Any

import msgspec
from hypothesis import example, given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.harness.protocol import (
    AssistantMessage,
    FinishEvent,
    SystemMessage,
    ToolCallDelta,
    ToolMessage,
    Usage,
    UsageEvent,
    UserMessage,
    assemble,
)
from alisio.core.harness.sse import chat_request_body, chunk_events, decode_data, usage_from
from tests.property.strategies_providers import names, requests, small_text, split_text

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
chunk_keys = st.sampled_from(["choices", "usage", "error", "delta", "index", "finish_reason", "tool_calls"])
chunkish = st.recursive(
    st.none() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(chunk_keys, inner, max_size=4),
    max_leaves=15,
)


ROLES = {SystemMessage: "system", UserMessage: "user", AssistantMessage: "assistant", ToolMessage: "tool"}


def wire(body: dict[str, object]) -> Any:
    return json.loads(msgspec.json.encode(body))


@given(requests)
def test_request_body_carries_every_message_and_tool(request: Any) -> None:
    """Instructions lead as a system message, then one message per request message with the same role;
    tools carry their schema; stream and include_usage are always on; reasoning is never sent back."""
    body = wire(chat_request_body(request))
    sent = body["messages"]
    offset = 1 if request.instructions else 0
    assert len(sent) == len(request.messages) + offset
    if offset:
        assert sent[0] == {"role": "system", "content": request.instructions}
    for message, out in zip(request.messages, sent[offset:], strict=True):
        assert out["role"] == ROLES[type(message)]
        if isinstance(message, ToolMessage):
            assert out == {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
        elif isinstance(message, AssistantMessage):
            assert "reasoning" not in out
            calls = out.get("tool_calls", [])
            assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
                (c.id, c.name, c.arguments) for c in message.tool_calls
            ]
        else:
            assert out["content"] == message.content
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["model"] == request.model
    assert [t["function"]["name"] for t in body.get("tools", [])] == [t.name for t in request.tools]
    for tool, out in zip(request.tools, body.get("tools", []), strict=True):
        assert out["type"] == "function"
        assert out["function"]["parameters"] == json.loads(tool.parameters_json)
        assert out["function"]["description"] == tool.description
    assert body.get("max_tokens") == request.max_output_tokens
    assert ("max_tokens" in body) == (request.max_output_tokens is not None)
    assert body.get("reasoning_effort") == request.reasoning_effort


@given(requests)
def test_limit_field_switches_name_only(request: Any) -> None:
    """``max_completion_tokens`` replaces ``max_tokens`` and changes nothing else."""
    plain = wire(chat_request_body(request))
    openai = wire(chat_request_body(request, limit_field="max_completion_tokens"))
    assert openai.pop("max_completion_tokens", None) == plain.pop("max_tokens", None)
    assert openai == plain


usage_counts = st.none() | st.integers(0, 10**6)


@st.composite
def streamed_responses(draw: st.DrawFn) -> tuple[dict[str, Any], list[str]]:
    """A response and the JSON chunks a provider would stream for it (fragments, nulls, usage chunks)."""
    text = draw(small_text)
    reasoning = draw(small_text)
    calls = draw(st.lists(st.tuples(st.text("abc", min_size=1, max_size=4), names, small_text), max_size=3))
    finish = draw(st.sampled_from(["stop", "tool_calls", "length"]))
    usage = {
        "prompt_tokens": draw(st.integers(0, 10**6)),
        "completion_tokens": draw(st.integers(0, 10**6)),
        "prompt_tokens_details": {"cached_tokens": draw(st.integers(0, 1000))},
    }
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": None}]
    deltas += [{"reasoning_content": part} for part in split_text(draw, reasoning)]
    deltas += [{"content": part} for part in split_text(draw, text)]
    for index, (call_id, name, arguments) in enumerate(calls):
        parts = split_text(draw, arguments)
        deltas.append(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": parts[0]},
                    }
                ]
            }
        )
        deltas += [{"tool_calls": [{"index": index, "function": {"arguments": p}}]} for p in parts[1:]]
    chunks = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}], "usage": None} for d in deltas]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if draw(st.booleans()):  # OpenRouter: a null finish after the real one
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": None}]})
    for _ in range(draw(st.integers(1, 3))):  # Groq: usage sent more than once; the last counts
        chunks.append({"choices": [], "usage": usage})
    expected = {
        "text": text,
        "reasoning": reasoning or None,
        "calls": calls,
        "finish": finish,
        "usage": usage,
    }
    return expected, [json.dumps(chunk) for chunk in chunks]


@given(streamed_responses())
def test_streamed_chunks_assemble_to_the_response(case: tuple[dict[str, Any], list[str]]) -> None:
    """However text, reasoning and arguments are fragmented, decoding every chunk and assembling gives them back."""
    expected, chunks = case
    events = tuple(event for data in chunks for event in decode_data(data).unwrap())
    response = assemble(events).unwrap()
    assert response.text == expected["text"]
    assert response.reasoning == expected["reasoning"]
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == expected["calls"]
    assert response.finish_reason == expected["finish"]
    assert response.usage == Usage(
        input_tokens=expected["usage"]["prompt_tokens"],
        output_tokens=expected["usage"]["completion_tokens"],
        cached_input_tokens=expected["usage"]["prompt_tokens_details"]["cached_tokens"],
    )


@given(st.text(max_size=40), st.none() | st.sampled_from(["error", "message", "ping"]))
def test_decode_data_never_raises_on_any_text(data: str, event: str | None) -> None:
    """Any payload is events or a ChunkError; an ``event: error`` payload always yields an error event."""
    match decode_data(data, event):
        case Success(events):
            if event == "error":
                assert any(type(e).__name__ == "StreamErrorEvent" for e in events)
        case Failure(error):
            assert event != "error"
            assert data[:20] in error.excerpt


@given(chunkish | json_values)
def test_chunk_events_never_raises_on_any_json_object(value: object) -> None:
    """A server may send any JSON: the parser never crashes on it (it yields what it recognises)."""
    if isinstance(value, dict):
        chunk_events(value)
        decode_data(json.dumps(value))


@given(usage_counts, usage_counts, usage_counts, usage_counts, usage_counts)
def test_usage_reads_counts_and_leaves_missing_ones_none(
    prompt: int | None, completion: int | None, cached: int | None, hit: int | None, reasoning: int | None
) -> None:
    """Counts map one to one; cached falls back to DeepSeek's prompt_cache_hit_tokens; absent stays None."""
    raw: dict[str, Any] = {}
    if prompt is not None:
        raw["prompt_tokens"] = prompt
    if completion is not None:
        raw["completion_tokens"] = completion
    if cached is not None:
        raw["prompt_tokens_details"] = {"cached_tokens": cached}
    if hit is not None:
        raw["prompt_cache_hit_tokens"] = hit
    if reasoning is not None:
        raw["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    usage = usage_from(raw)
    assert usage.input_tokens == prompt
    assert usage.output_tokens == completion
    assert usage.total_tokens is None
    assert usage.cached_input_tokens == (cached if cached is not None else hit)
    assert usage.reasoning_tokens == reasoning


def test_error_code_numbers_become_text() -> None:
    """OpenRouter's numeric ``error.code`` 400 becomes ``"400"``; the usage in the same chunk is kept first."""
    data = '{"choices":[],"usage":{"prompt_tokens":1},"error":{"code":400,"message":"Token limit reached"}}'
    events = decode_data(data).unwrap()
    assert [type(e).__name__ for e in events] == ["UsageEvent", "StreamErrorEvent"]
    assert events[-1].code == "400"  # type: ignore[union-attr]


def test_complete_calls_without_index_in_separate_chunks_stay_separate() -> None:
    """Two chunks that each carry a whole call (own id and name, no index, as some gateways send) are two calls."""
    first = '{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"read_file","arguments":"{\\"path\\":\\"x\\"}"}}]}}]}'
    second = '{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"list_dir","arguments":"{\\"path\\":\\".\\"}"}}]}}]}'
    finish = '{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}'
    events = tuple(event for data in (first, second, finish) for event in decode_data(data).unwrap())
    calls = assemble(events).unwrap().tool_calls
    assert [(call.id, call.name, call.arguments) for call in calls] == [
        ("a", "read_file", '{"path":"x"}'),
        ("b", "list_dir", '{"path":"."}'),
    ]


def test_many_argument_fragments_assemble_in_linear_time() -> None:
    """A write_file whose 400 KB of arguments arrive in 100000 fragments assembles in well under a second."""
    start = ToolCallDelta(index=0, id="c", name="write_file", arguments="")
    pieces = (ToolCallDelta(index=0, id=None, name=None, arguments="abcd"),) * 100_000
    began = time.perf_counter()
    response = assemble((start, *pieces, FinishEvent(reason="tool_calls"))).unwrap()
    assert time.perf_counter() - began < 1.0
    assert len(response.tool_calls[0].arguments) == 400_000


bad_counts = st.one_of(
    st.integers(max_value=-1),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda value: not value.is_integer()),
    st.text(alphabet="0123456789", min_size=1, max_size=4),
    st.booleans(),
    st.just({"n": 1}),
)
usage_keys = st.sampled_from(
    ["prompt_tokens", "completion_tokens", "total_tokens", "prompt_cache_hit_tokens"]
)


@given(usage_keys, bad_counts, usage_counts)
@example("prompt_tokens", -5, 10)
@example("completion_tokens", 12.5, None)
def test_a_count_that_is_not_a_non_negative_integer_makes_the_usage_unusable(
    key: str, bad: object, other: int | None
) -> None:
    """-5, 12.5, "12", true or an object as a count: Usage.invalid names the field and the value, and the
    assembled response reports no usage, with the problem as its reason."""
    raw: dict[str, Any] = {key: bad}
    if other is not None and key != "completion_tokens":
        raw["completion_tokens"] = other
    usage = usage_from(raw)
    assert usage.invalid is not None and usage.invalid.startswith(f"{key} is ")
    response = assemble((UsageEvent(usage=usage), FinishEvent(reason="stop"))).unwrap()
    assert response.usage is None
    assert response.usage_problem == usage.invalid


@given(usage_counts)
def test_integral_floats_are_read_as_counts(count: int | None) -> None:
    """A count sent as 12.0 is the integer 12 (some proxies re-encode numbers as floats)."""
    raw = {} if count is None else {"prompt_tokens": float(count)}
    usage = usage_from(raw)
    assert usage.input_tokens == count and usage.invalid is None


def test_a_nested_count_is_named_with_its_path() -> None:
    """prompt_tokens_details.cached_tokens = -1 is named in full."""
    usage = usage_from({"prompt_tokens": 3, "prompt_tokens_details": {"cached_tokens": -1}})
    assert usage.invalid == "prompt_tokens_details.cached_tokens is -1"
