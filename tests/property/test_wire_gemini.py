"""Properties of the Gemini API codec (``alisio.core.harness.wire_gemini``): the request it builds, the
stream it reads (however the answer is cut into chunks), its usage convention and its retry hint."""

from __future__ import annotations

import itertools
import json
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from alisio.core.harness.protocol import (
    AssistantMessage,
    ProviderRequest,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from alisio.core.harness.wire import parse_response
from alisio.core.harness.wire_gemini import GENERATED_ID, request_body, retry_delay, usage_from
from tests.property.strategies_providers import ARGS, gemini_answers, names, requests

COUNTS = st.none() | st.integers(0, 10**6)


def _sent(request: ProviderRequest) -> dict[str, Any]:
    return msgspec.json.decode(msgspec.json.encode(request_body(request)))


@given(request=requests)
def test_a_request_is_contents_that_alternate_with_the_model_never_in_the_body(
    request: ProviderRequest,
) -> None:
    """No ``model`` in the body (it is in the path); no two user contents in a row; every tool call is one
    ``functionCall`` part and every tool result one ``functionResponse`` part, in order."""
    body = _sent(request)
    assert "model" not in body and "stream" not in body
    roles = [content["role"] for content in body["contents"]]
    assert all(not (a == b == "user") for a, b in itertools.pairwise(roles))
    calls = [p["functionCall"] for c in body["contents"] for p in c["parts"] if "functionCall" in p]
    wanted = [call for m in request.messages if isinstance(m, AssistantMessage) for call in m.tool_calls]
    assert [c["name"] for c in calls] == [c.name for c in wanted]
    results = [p["functionResponse"] for c in body["contents"] for p in c["parts"] if "functionResponse" in p]
    assert [r["name"] for r in results] == [m.name for m in request.messages if isinstance(m, ToolMessage)]
    assert ("systemInstruction" in body) == bool(request.instructions)
    config = body.get("generationConfig", {})
    assert config.get("maxOutputTokens") == request.max_output_tokens
    assert ("thinkingConfig" in config) == (request.reasoning_effort is not None)


@given(calls=st.lists(st.tuples(names, ARGS, st.booleans()), min_size=1, max_size=4))
def test_an_id_goes_back_only_when_the_api_gave_it(calls: list[tuple[str, dict[str, Any], bool]]) -> None:
    """A call id the lab made up (``gemini_call_N``) is sent neither with the call nor with its result; the
    API's own id is sent with both; the arguments go back as the object they were."""
    made = [
        ToolCall(id=f"api{n}" if theirs else f"{GENERATED_ID}{n}", name=name, arguments=json.dumps(args))
        for n, (name, args, theirs) in enumerate(calls)
    ]
    turn = AssistantMessage(tool_calls=tuple(made))
    results = tuple(ToolMessage(tool_call_id=c.id, name=c.name, content="ok") for c in made)
    body = _sent(
        ProviderRequest(model="m", instructions="", messages=(UserMessage(content="u"), turn, *results))
    )
    model, user = body["contents"][1], body["contents"][2]
    for call, part, result, (_name, args, theirs) in zip(
        made, model["parts"], user["parts"], calls, strict=True
    ):
        assert part["functionCall"].get("id") == (call.id if theirs else None)
        assert result["functionResponse"].get("id") == (call.id if theirs else None)
        assert part["functionCall"]["args"] == args


@given(answer=gemini_answers(), cuts=st.lists(st.integers(0, 12), max_size=4), prompt=st.integers(0, 999))
def test_a_stream_reads_the_same_however_its_parts_are_cut_into_chunks(
    answer: tuple[list[dict[str, Any]], str, list[tuple[str, dict[str, Any], str | None]]],
    cuts: list[int],
    prompt: int,
) -> None:
    """The parts of one answer, sent in any number of chunks (the finish and usage on the last): the same
    text, thoughts, calls (numbered in order, ids made up), signatures on their calls, and finish reason."""
    parts, text, calls = answer
    bounds = sorted({min(cut, len(parts)) for cut in cuts} | {0, len(parts)})
    chunks = [parts[a:b] for a, b in itertools.pairwise(bounds)] or [[]]
    payloads: list[dict[str, Any]] = [
        {"candidates": [{"content": {"parts": chunk, "role": "model"}, "index": 0}]} for chunk in chunks
    ]
    payloads[-1]["candidates"][0]["finishReason"] = "STOP"
    payloads[-1]["usageMetadata"] = {"promptTokenCount": prompt, "candidatesTokenCount": 3}
    body = "".join(f"data: {json.dumps(p)}\r\n\r\n" for p in payloads).encode()
    got = parse_response("gemini", body, "text/event-stream").unwrap()
    assert got.text == text
    assert [(c.id, c.name, json.loads(c.arguments)) for c in got.tool_calls] == [
        (f"{GENERATED_ID}{n}", name, args) for n, (name, args, _s) in enumerate(calls)
    ]
    assert got.finish_reason == ("tool_calls" if calls else "stop")
    signed = [json.loads(b.wire) for b in got.reasoning_blocks if b.kind == "thought_signature"]
    assert signed == [{"call": n, "thoughtSignature": s} for n, (_n, _a, s) in enumerate(calls) if s]
    assert got.usage is not None and got.usage.input_tokens == prompt


@given(answer=gemini_answers())
def test_signatures_and_thoughts_go_back_where_they_came_from(
    answer: tuple[list[dict[str, Any]], str, list[tuple[str, dict[str, Any], str | None]]],
) -> None:
    """Read an answer, send it back: its thought parts verbatim first, each signature on its own call."""
    parts, text, calls = answer
    body = f"data: {json.dumps({'candidates': [{'content': {'parts': parts}, 'finishReason': 'STOP'}]})}\n\n"
    got = parse_response("gemini", body.encode(), "text/event-stream").unwrap()
    turn = AssistantMessage(
        content=got.text or None, tool_calls=got.tool_calls, reasoning_blocks=got.reasoning_blocks
    )
    model = _sent(ProviderRequest(model="m", instructions="", messages=(turn,)))["contents"][0]
    assert model["role"] == "model"
    thoughts = [p for p in parts if p.get("thought")]
    assert model["parts"][: len(thoughts)] == thoughts
    sent_calls = [p for p in model["parts"] if "functionCall" in p]
    assert [(p["functionCall"]["name"], p.get("thoughtSignature")) for p in sent_calls] == [
        (name, signature) for name, _args, signature in calls
    ]
    texts = [p["text"] for p in model["parts"] if "text" in p and not p.get("thought")]
    assert texts == ([text or "(no text)"] if text or not calls else [])  # a model turn is never empty


@given(prompt=COUNTS, tool_prompt=COUNTS, cached=COUNTS, candidates=COUNTS, thoughts=COUNTS, total=COUNTS)
def test_usage_is_read_in_the_lab_s_convention(
    prompt: int | None,
    tool_prompt: int | None,
    cached: int | None,
    candidates: int | None,
    thoughts: int | None,
    total: int | None,
) -> None:
    """Input is the prompt (cached included) plus tool-use prompt tokens; output is candidates plus thoughts
    (reasoning is the thoughts); cached input is the cached content; a count not sent stays unknown."""
    given = {
        "promptTokenCount": prompt,
        "toolUsePromptTokenCount": tool_prompt,
        "cachedContentTokenCount": cached,
        "candidatesTokenCount": candidates,
        "thoughtsTokenCount": thoughts,
        "totalTokenCount": total,
    }
    usage = usage_from({key: value for key, value in given.items() if value is not None})
    assert usage.input_tokens == (None if prompt is None else prompt + (tool_prompt or 0))
    assert usage.output_tokens == (
        None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    )
    assert (usage.reasoning_tokens, usage.cached_input_tokens, usage.total_tokens) == (
        thoughts,
        cached,
        total,
    )
    assert usage.invalid is None


@given(seconds=st.decimals(min_value=0, max_value=3600, places=3, allow_nan=False))
def test_retry_info_names_the_wait(seconds: Any) -> None:
    """``RetryInfo.retryDelay`` ("12.5s") is the wait in seconds; a body without it names none."""
    detail = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{seconds}s"}
    assert retry_delay({"error": {"code": 429, "details": [{"@type": "x"}, detail]}}) == float(seconds)
    assert retry_delay({"error": {"code": 429, "details": [{"@type": "x"}]}}) is None
    assert retry_delay("not an object") is None
