"""Properties of the wire formats (alisio.core.harness.wire and its per-format modules).

- SSE framing: the events of a body do not depend on where the bytes were cut;
- each format: an answer rendered as that format's stream parses back to the same text, reasoning, tool
  calls, reasoning items and usage, whatever the cuts;
- requests: what must go back does (thinking before its tool_use, encrypted reasoning before its
  function_call), verbatim; Anthropic never has more than 4 cache breakpoints; Responses never stores.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.harness import wire_anthropic, wire_responses
from alisio.core.harness.protocol import (
    AssistantMessage,
    ProviderRequest,
    ReasoningBlock,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from alisio.core.harness.wire import APIS, Api, ParsedAnswer, parse_response, stream_events
from alisio.core.harness.wire_common import SseDecoder, sse_messages
from tests.property.strategies_providers import call_ids, names, requests, small_text


def cut(body: bytes, points: list[int]) -> list[bytes]:
    """``body`` cut at ``points`` (any byte offsets, in any order)."""
    edges = sorted({0, len(body), *(p % (len(body) + 1) for p in points)})
    return [body[a:b] for a, b in itertools.pairwise(edges)]


def fed(body: bytes, points: list[int]) -> list[Any]:
    decoder = SseDecoder()
    out = [message for chunk in cut(body, points) for message in decoder.feed(chunk)]
    return out + decoder.close()


sse_lines = st.lists(
    st.one_of(
        st.builds(lambda t: f"data: {t}", small_text.filter(lambda t: "\n" not in t)),
        st.builds(lambda t: f"event: {t}", st.sampled_from(["error", "ping", "message_start"])),
        st.just(": keep-alive"),
        st.just(""),
        st.just("data:x"),
        st.just("id: 7"),
    ),
    max_size=20,
)


@given(sse_lines, st.sampled_from(["\n", "\r\n", "\r"]), st.lists(st.integers(0, 10_000), max_size=12))
def test_sse_framing_does_not_depend_on_the_cuts(lines: list[str], newline: str, points: list[int]) -> None:
    """Whatever the line endings and wherever the bytes are cut (inside a UTF-8 character, between \\r and
    \\n), the decoder gives the events of the whole body."""
    body = newline.join(lines).encode() + newline.encode()
    assert fed(body, points) == list(sse_messages(body))


def test_sse_framing_reads_the_standard_fields() -> None:
    """data lines join with newlines, one leading space is dropped, comments never become events."""
    body = b": hi\nevent: error\ndata: a\ndata:  b\n\ndata: last"
    messages = sse_messages(body)
    assert [(m.event, m.data) for m in messages] == [("error", "a\n b"), ("message", "last")]


# --- answers rendered as each format's stream ---------------------------------------------------------


answers = st.fixed_dictionaries(
    {
        "thinking": st.lists(small_text.filter(bool), max_size=3),
        "signature": st.text(alphabet="AZaz09+/=", min_size=1, max_size=20),
        "text": st.lists(small_text.filter(bool), max_size=4),
        "calls": st.lists(
            st.tuples(call_ids, names, st.lists(small_text, min_size=1, max_size=3)),
            max_size=3,
            unique_by=lambda call: call[0],
        ),
        "input": st.integers(0, 10_000),
        "cache_read": st.integers(0, 10_000),
        "cache_write": st.integers(0, 10_000),
        "output": st.integers(0, 10_000),
    }
)


def sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


def anthropic_stream(answer: dict[str, Any]) -> bytes:
    usage = {
        "input_tokens": answer["input"],
        "cache_creation_input_tokens": answer["cache_write"],
        "cache_read_input_tokens": answer["cache_read"],
        "output_tokens": 1,
    }
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {"usage": usage, "content": []}}),
        ("ping", {"type": "ping"}),
    ]
    index = 0

    def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
        )
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            for delta in deltas
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1

    if answer["thinking"]:
        deltas = [{"type": "thinking_delta", "thinking": part} for part in answer["thinking"]]
        block(
            {"type": "thinking", "thinking": "", "signature": ""},
            [*deltas, {"type": "signature_delta", "signature": answer["signature"]}],
        )
    if answer["text"]:
        block({"type": "text", "text": ""}, [{"type": "text_delta", "text": part} for part in answer["text"]])
    for call_id, name, parts in answer["calls"]:
        block(
            {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            [{"type": "input_json_delta", "partial_json": part} for part in parts],
        )
    reason = "tool_use" if answer["calls"] else "end_turn"
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason},
                "usage": {"output_tokens": answer["output"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return sse(events)


def responses_stream(answer: dict[str, Any]) -> bytes:
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"type": "response.created", "response": {}})
    ]
    index = 0
    if answer["thinking"]:
        item = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": answer["signature"]}
        events.append(
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": index, "item": item},
            )
        )
        events.extend(
            (
                "response.reasoning_summary_text.delta",
                {"type": "response.reasoning_summary_text.delta", "output_index": index, "delta": part},
            )
            for part in answer["thinking"]
        )
        done = {**item, "summary": [{"type": "summary_text", "text": "".join(answer["thinking"])}]}
        events.append(
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": index, "item": done},
            )
        )
        index += 1
    if answer["text"]:
        events.extend(
            (
                "response.output_text.delta",
                {"type": "response.output_text.delta", "output_index": index, "delta": part},
            )
            for part in answer["text"]
        )
        index += 1
    for call_id, name, parts in answer["calls"]:
        item = {
            "type": "function_call",
            "id": "fc_" + call_id,
            "call_id": call_id,
            "name": name,
            "arguments": "",
        }
        events.append(
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": index, "item": item},
            )
        )
        events.extend(
            (
                "response.function_call_arguments.delta",
                {"type": "response.function_call_arguments.delta", "output_index": index, "delta": part},
            )
            for part in parts
        )
        index += 1
    usage = {
        "input_tokens": answer["input"],
        "input_tokens_details": {"cached_tokens": answer["cache_read"]},
        "output_tokens": answer["output"],
        "output_tokens_details": {"reasoning_tokens": answer["cache_write"]},
        "total_tokens": answer["input"] + answer["output"],
    }
    events.append(
        (
            "response.completed",
            {"type": "response.completed", "response": {"status": "completed", "usage": usage}},
        )
    )
    return sse(events)


def parsed(api: Api, body: bytes) -> ParsedAnswer:
    result = parse_response(api, body, "text/event-stream")
    assert isinstance(result, Success), result
    return result.unwrap()


def expect_common(answer: dict[str, Any], got: ParsedAnswer, no_arguments: str = "") -> None:
    assert got.text == "".join(answer["text"])
    assert got.reasoning == ("".join(answer["thinking"]) or None)
    assert got.tool_calls == tuple(
        ToolCall(id=call_id, name=name, arguments="".join(parts) or no_arguments)
        for call_id, name, parts in answer["calls"]
    )
    assert got.finish_reason == ("tool_calls" if answer["calls"] else "stop")
    assert got.error is None


@given(answers, st.lists(st.integers(0, 100_000), max_size=10))
def test_an_anthropic_stream_parses_back_to_its_answer(answer: dict[str, Any], points: list[int]) -> None:
    """Text, thinking (with its signature, as a block to send back), tool calls with fragmented input, and
    usage normalised: input = input_tokens + cache reads + cache writes; the cuts change nothing."""
    body = anthropic_stream(answer)
    got = parsed("anthropic", body)
    expect_common(answer, got, no_arguments="{}")  # a tool_use that got no input fragment: {}
    assert got.usage is not None
    assert got.usage.input_tokens == answer["input"] + answer["cache_read"] + answer["cache_write"]
    assert got.usage.cached_input_tokens == answer["cache_read"]
    assert got.usage.cache_write_input_tokens == answer["cache_write"]
    assert got.usage.output_tokens == answer["output"]
    assert got.usage.total_tokens == got.usage.input_tokens + answer["output"]
    fields = json.loads(got.usage.provider_fields or "null")
    assert fields["input_tokens"] == answer["input"]  # verbatim: the provider's own count, not the lab's
    assert fields["cache_read_input_tokens"] == answer["cache_read"]
    if answer["thinking"]:
        (block,) = got.reasoning_blocks
        assert json.loads(block.wire) == {
            "type": "thinking",
            "thinking": "".join(answer["thinking"]),
            "signature": answer["signature"],
        }
    else:
        assert got.reasoning_blocks == ()
    assert stream_events("anthropic", body) == _events_cut("anthropic", body, points)


@given(answers)
def test_an_anthropic_message_stop_before_its_message_delta_is_out_of_order(answer: dict[str, Any]) -> None:
    """Anthropic sends message_delta (stop reason, output usage) before message_stop: a stream whose
    message_stop comes first (its blocks after it, or none) is a protocol error naming the order, never an
    answer cut at that message_stop."""
    events = list(sse_messages(anthropic_stream(answer)))
    start = events[0]
    rest = [m for m in events[1:] if m.event not in {"message_delta", "message_stop"}]
    stop = next(m for m in events if m.event == "message_stop")
    body = b"".join(f"event: {m.event}\ndata: {m.data}\n\n".encode() for m in [start, stop, *rest])
    got = stream_events("anthropic", body)
    assert isinstance(got, Failure)
    assert got.failure().message == "stream events out of order: message_stop before message_delta"


@given(answers, st.lists(st.integers(0, 100_000), max_size=10))
def test_a_responses_stream_parses_back_to_its_answer(answer: dict[str, Any], points: list[int]) -> None:
    """Text, reasoning summary, the reasoning item verbatim (encrypted content included), function calls
    with fragmented arguments, and usage as sent (its convention is the lab's); the cuts change nothing."""
    body = responses_stream(answer)
    got = parsed("openai-responses", body)
    expect_common(answer, got)
    assert got.usage is not None
    assert (got.usage.input_tokens, got.usage.cached_input_tokens) == (answer["input"], answer["cache_read"])
    assert (got.usage.output_tokens, got.usage.reasoning_tokens) == (answer["output"], answer["cache_write"])
    if answer["thinking"]:
        (block,) = got.reasoning_blocks
        assert json.loads(block.wire)["encrypted_content"] == answer["signature"]
    assert stream_events("openai-responses", body) == _events_cut("openai-responses", body, points)


def by_item_id(body: bytes) -> bytes:
    """``body`` as llama.cpp's server streams Responses: no ``output_index`` anywhere, each event naming its
    item by id (``item.id``, ``item_id``), and ``response.completed`` listing the output items."""
    ids: dict[int, str] = {}
    events: list[tuple[str, dict[str, Any]]] = []
    for message in sse_messages(body):
        payload = json.loads(message.data)
        if "output_index" in payload:
            index = payload.pop("output_index")
            item = payload.get("item")
            if isinstance(item, dict):
                ids.setdefault(index, item.get("id") or f"msg_{index}")
                payload["item"] = {**item, "id": ids[index]}
            else:
                payload["item_id"] = ids.setdefault(index, f"msg_{index}")
        if payload["type"] == "response.completed":
            payload["response"]["output"] = [{"id": ids[i]} for i in sorted(ids)]
        events.append((message.event, payload))
    return sse(events)


@given(answers, st.lists(st.integers(0, 100_000), max_size=10))
def test_a_responses_stream_without_output_index_parses_to_the_same_answer(
    answer: dict[str, Any], points: list[int]
) -> None:
    """llama.cpp's server names Responses items only by id (no output_index): the same answer, text, calls
    (with their ids and arguments), reasoning and usage, as the stream with output indexes; never "out of
    order" for an end event listing the items it delivered."""
    body = responses_stream(answer)
    shaped = by_item_id(body)
    assert b"output_index" not in shaped
    assert parsed("openai-responses", shaped) == parsed("openai-responses", body)
    assert stream_events("openai-responses", shaped) == _events_cut("openai-responses", shaped, points)


def _events_cut(api: Api, body: bytes, points: list[int]) -> Any:
    """The events of ``body`` when its bytes arrive in the chunks ``points`` cut (as from a socket)."""
    from alisio.core.harness.wire import stream_decoder

    decoder = stream_decoder(api)
    events: list[Any] = []
    framing = SseDecoder()
    chunks = cut(body, points)
    messages = [m for chunk in chunks for m in framing.feed(chunk)] + framing.close()
    for message in messages:
        if decoder.done:
            break
        events.extend(decoder.feed(message.event, message.data).unwrap())
    return Success(tuple(events))


@given(st.sampled_from(APIS), st.binary(max_size=200))
def test_parse_response_never_raises(api: Api, body: bytes) -> None:
    """Any bytes at all give a parsed answer or a failure naming an excerpt, never an exception."""
    parse_response(api, body)
    parse_response(api, body, "text/event-stream")
    parse_response(api, body, "application/json")


# --- requests -------------------------------------------------------------------------------------------


thinking_blocks = st.builds(
    lambda text, sig: ReasoningBlock(
        kind="thinking", wire=json.dumps({"type": "thinking", "thinking": text, "signature": sig})
    ),
    small_text,
    small_text,
)


@st.composite
def tool_turns(draw: st.DrawFn) -> ProviderRequest:
    """A conversation whose assistant turns carry reasoning blocks before their tool calls."""
    base = draw(requests)
    messages: list[Any] = [UserMessage(content=draw(small_text))]
    for _ in range(draw(st.integers(1, 3))):
        calls = tuple(
            ToolCall(id=f"c{len(messages)}_{i}", name=draw(names), arguments='{"a": 1}')
            for i in range(draw(st.integers(1, 2)))
        )
        blocks = tuple(draw(st.lists(thinking_blocks, min_size=1, max_size=2)))
        messages.append(
            AssistantMessage(content=draw(st.none() | small_text), tool_calls=calls, reasoning_blocks=blocks)
        )
        messages.extend(ToolMessage(tool_call_id=c.id, name=c.name, content=draw(small_text)) for c in calls)
    return msgspec.structs.replace(base, messages=tuple(messages), cache=draw(st.booleans()))


def body_json(body: dict[str, object]) -> Any:
    return json.loads(msgspec.json.encode(body))


@given(tool_turns())
def test_anthropic_sends_thinking_back_before_its_tool_use(request: ProviderRequest) -> None:
    """Every assistant turn starts with its thinking blocks, verbatim, then text, then tool_use; each tool
    result is in the user message right after; at most 4 cache breakpoints, none when cache is off."""
    body = body_json(wire_anthropic.request_body(request))
    sent = body["messages"]
    assistants = [m for m in sent if m["role"] == "assistant"]
    originals = [m for m in request.messages if isinstance(m, AssistantMessage)]
    assert len(assistants) == len(originals)
    for out, original in zip(assistants, originals, strict=True):
        blocks = out["content"]
        n = len(original.reasoning_blocks)
        assert blocks[:n] == [json.loads(b.wire) for b in original.reasoning_blocks]
        kinds = [b["type"] for b in blocks[n:]]
        assert kinds == sorted(kinds, key=lambda kind: kind == "tool_use")
        assert [b["id"] for b in blocks if b["type"] == "tool_use"] == [c.id for c in original.tool_calls]
        follower = sent[sent.index(out) + 1]
        results = [b["tool_use_id"] for b in follower["content"] if b.get("type") == "tool_result"]
        assert results == [c.id for c in original.tool_calls]
    marks = json.dumps(body).count('"cache_control"')
    assert marks <= wire_anthropic.MAX_BREAKPOINTS
    assert (marks > 0) == request.cache
    assert all(
        m["role"] != sent[i + 1]["role"] for i, m in enumerate(sent[:-1])
    )  # user and assistant alternate


@given(tool_turns(), st.sampled_from([None, "low", "medium", "high"]), st.integers(1, 40_000))
def test_anthropic_thinking_budget_stays_below_max_tokens(
    request: ProviderRequest, effort: str | None, limit: int
) -> None:
    """The budget is the documented one for the effort, below max_tokens, at least 1024, or not sent."""
    body = wire_anthropic.request_body(
        msgspec.structs.replace(request, reasoning_effort=effort, max_output_tokens=limit)
    )
    assert body["max_tokens"] == limit
    thinking = body.get("thinking")
    if effort is None or limit <= 1024:
        assert thinking is None
    else:
        assert isinstance(thinking, dict)
        assert 1024 <= thinking["budget_tokens"] < limit
        assert thinking["budget_tokens"] == min(wire_anthropic.THINKING_BUDGETS[effort], limit - 1)


@given(tool_turns())
def test_responses_sends_reasoning_back_and_stores_nothing(request: ProviderRequest) -> None:
    """store false, encrypted reasoning asked for, no previous_response_id; each assistant turn's reasoning
    items go back verbatim before its function calls, and every call has its output."""
    reasoning = tuple(
        msgspec.structs.replace(
            m,
            reasoning_blocks=(
                ReasoningBlock(
                    kind="reasoning",
                    wire=json.dumps({"type": "reasoning", "id": f"rs{i}", "encrypted_content": "gAAA"}),
                ),
            ),
        )
        if isinstance(m, AssistantMessage)
        else m
        for i, m in enumerate(request.messages)
    )
    body = body_json(wire_responses.request_body(msgspec.structs.replace(request, messages=reasoning)))
    assert (body["store"], body["include"], body["stream"]) == (False, ["reasoning.encrypted_content"], True)
    assert "previous_response_id" not in body
    items = body["input"]
    kinds = [item.get("role", item.get("type")) for item in items]
    for position, kind in enumerate(kinds):
        if kind == "reasoning":
            assert kinds[position + 1] in ("assistant", "function_call")
    calls = [item["call_id"] for item in items if item.get("type") == "function_call"]
    outputs = [item["call_id"] for item in items if item.get("type") == "function_call_output"]
    assert calls == outputs


@given(requests)
def test_every_responses_input_item_is_one_llamacpp_reads(request: ProviderRequest) -> None:
    """Each input item has a shape llama.cpp's server accepts (tools/server/server-chat.cpp, which answers
    anything else with HTTP 400 "Cannot determine type of 'item'"), all of them valid for OpenAI too: a user or
    system message, an assistant message typed "message", a function_call with its call_id, name and
    arguments, or its function_call_output. An untyped assistant message (OpenAI's easy input form) was
    refused there, so every run's second turn after a text answer failed. (Reasoning items go back as the
    provider sent them, so they are left out here.)"""
    messages = tuple(
        msgspec.structs.replace(m, reasoning_blocks=()) if isinstance(m, AssistantMessage) else m
        for m in request.messages
    )
    body = body_json(wire_responses.request_body(msgspec.structs.replace(request, messages=messages)))
    for item in body["input"]:
        match item.get("type"), item.get("role"):
            case None, "user" | "system":
                assert isinstance(item["content"], str)
            case "message", "assistant":
                assert isinstance(item["content"], str)
            case "function_call", None:
                assert all(isinstance(item[key], str) for key in ("call_id", "name", "arguments"))
            case "function_call_output", None:
                assert isinstance(item["call_id"], str) and isinstance(item["output"], str)
            case other:
                raise AssertionError(f"an input item llama.cpp cannot read: {other}: {item}")


@given(sse_lines, st.sampled_from(["\n", "\r\n"]))
def test_sse_framing_agrees_with_httpx_sse(lines: list[str], newline: str) -> None:
    """On bodies that end their last event, the events with data are those httpx-sse (what the providers
    read streams with) gives: same names, same data."""
    import httpx
    from httpx_sse import EventSource

    body = (newline.join(lines) + newline * 2).encode()
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)
    theirs = [(e.event, e.data) for e in EventSource(response).iter_sse() if e.data]
    ours = [(m.event, m.data) for m in sse_messages(body) if m.data]
    assert ours == theirs


@given(answers, st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789.-:", min_size=1, max_size=30))
def test_the_served_model_is_read_on_anthropic_and_responses(answer: dict[str, Any], model: str) -> None:
    """Anthropic's message_start.message.model and Responses' response.model (in response.created and the end
    event) are the served model, streamed or not; an answer that names none has none."""
    anthropic = anthropic_stream(answer).replace(
        b'"message": {', f'"message": {{"model": "{model}", '.encode(), 1
    )
    responses = responses_stream(answer).replace(
        b'"response": {}', f'"response": {{"model": "{model}"}}'.encode(), 1
    )
    for api, body in (("anthropic", anthropic), ("openai-responses", responses)):
        assert parse_response(api, body, "text/event-stream").unwrap().served_model == model
        assert parse_response(api, RENDERERS[api](answer), "text/event-stream").unwrap().served_model is None
    message = {"type": "message", "model": model, "content": [], "stop_reason": "end_turn", "usage": {}}
    assert parse_response("anthropic", json.dumps(message).encode()).unwrap().served_model == model
    response = {"object": "response", "model": model, "status": "completed", "output": []}
    assert parse_response("openai-responses", json.dumps(response).encode()).unwrap().served_model == model


RENDERERS = {"anthropic": anthropic_stream, "openai-responses": responses_stream}
