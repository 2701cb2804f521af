"""Every recorded Gemini answer in tests/fixtures/provider-streams/gemini parses to its ``expected`` oracle:
through the core parser whole and cut at random byte boundaries, and through the real provider over HTTP from
a local server; the request the next turn sends is the one the API accepted in the same recording (the call
with its id when the API sent one, and its ``thoughtSignature``); a 429 with ``RetryInfo`` is retried after
the delay it names.

The recordings are real ``streamGenerateContent?alt=sse`` bodies from charmbracelet/fantasy's cassettes
(provenance in each ``.json``); the oracle in each was computed by a separate naive fold over the data
payloads, not alisio's parser. The error streams at the end are composed in Google's documented error shape.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from alisio.core.harness.protocol import AssistantMessage, ProviderRequest, ToolMessage, UserMessage, assemble
from alisio.core.harness.wire import ParsedAnswer, parse_events, parse_response, stream_decoder
from alisio.core.harness.wire_common import SseDecoder
from alisio.core.harness.wire_gemini import request_body
from alisio.shell.harness.providers.base import ProviderFailure
from alisio.shell.harness.providers.streaming import StreamingProvider
from tests.integration.sse_server import Reply, SseServer

STREAMS = Path(__file__).resolve().parents[2] / "fixtures" / "provider-streams" / "gemini"
RECORDINGS = sorted(STREAMS.glob("*.json"))


def test_the_recordings_are_there() -> None:
    """The Gemini recordings cover text, calls with and without ids, thoughts and signatures."""
    names = {path.stem for path in RECORDINGS}
    assert names >= {
        "gemini-text",
        "gemini-tool-call-no-id",
        "gemini-text-two-chunks",
        "gemini-thought-parts-tool-call",
        "gemini3-tool-call-id-signature",
        "gemini3-text-signature",
        "gemini3-parallel-calls",
    }
    for path in RECORDINGS:
        source = json.loads(path.read_text())["source"]
        assert source["repository"] and source["commit"] and source["framing"], path.name


def check(expected: dict[str, Any], got: ParsedAnswer) -> None:
    assert got.text == expected["assistant_text"]
    assert got.reasoning == expected["reasoning_text"]
    assert [(c.id, c.name, c.arguments) for c in got.tool_calls] == [
        (c["id"], c["name"], c["arguments"]) for c in expected["tool_calls"]
    ]
    assert got.finish_reason == expected["finish_reason"]
    assert got.usage is not None
    for field, value in expected["usage"].items():
        assert getattr(got.usage, field) == value, field
    assert json.loads(got.usage.provider_fields or "null") == expected["provider_usage"]
    assert got.error is None
    blocks = []
    for block in got.reasoning_blocks:
        wire = json.loads(block.wire)
        if block.kind == "thought":
            blocks.append({"kind": "thought"})
        else:
            mark = {k: v for k, v in wire.items() if k != "thoughtSignature"}
            blocks.append({"kind": block.kind, **mark, "signature_chars": len(wire["thoughtSignature"])})
    assert blocks == expected["reasoning_blocks"]


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.stem)
def test_recording_parses_to_its_expectation_whatever_the_cuts(recording: Path) -> None:
    """Whole, and fed in random pieces (inside UTF-8 characters and the ``\\r\\n`` separators), each body
    parses to the oracle: text, thoughts, calls (ids made up only where the API sent none), the finish
    reason, usage in the lab's convention and verbatim, the signatures to send back."""
    meta = json.loads(recording.read_text())
    body = (STREAMS / meta["file"]).read_bytes()
    check(meta["expected"], parse_response("gemini", body, "text/event-stream").unwrap())
    rng = random.Random(recording.name)
    for _ in range(20):
        framing, decoder, events, at = SseDecoder(), stream_decoder("gemini"), [], 0
        messages = []
        while at < len(body):
            size = rng.randint(1, 40)
            messages.extend(framing.feed(body[at : at + size]))
            at += size
        messages.extend(framing.close())
        for message in messages:
            events.extend(decoder.feed(message.event, message.data).unwrap())
        check(meta["expected"], parse_events(tuple(events)))


def provider(server: SseServer, client: httpx.Client, **options: Any) -> StreamingProvider:
    return StreamingProvider(
        server.url + "/v1beta", "gemini-2.5-flash", api="gemini", api_key="k-test", client=client, **options
    )


ASK = ProviderRequest(
    model="", instructions="You are a helpful assistant", messages=(UserMessage(content="u"),)
)


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.stem)
def test_recording_through_the_provider_over_http(recording: Path) -> None:
    """The real provider over HTTP (body cut in pieces): the model in the path, the key in x-goog-api-key
    only, and the events assemble to the oracle's answer."""
    meta = json.loads(recording.read_text())
    body = (STREAMS / meta["file"]).read_bytes()
    with SseServer(Reply(body=body).split(seed=len(body), max_piece=50)) as server, httpx.Client() as client:
        events = provider(server, client, max_retries=0).stream(ASK)
        sent = server.requests[-1]
    check(meta["expected"], parse_events(events))
    assert assemble(events).unwrap().finish_reason == meta["expected"]["finish_reason"]
    assert sent.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert sent.headers["x-goog-api-key"] == "k-test" and "authorization" not in sent.headers
    assert "model" not in sent.json() and sent.json()["systemInstruction"] == {
        "parts": [{"text": "You are a helpful assistant"}]
    }


def _sent_back(name: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The model content and the user content of results the next request sends after recording ``name``,
    and the recording's metadata."""
    meta = json.loads((STREAMS / f"{name}.json").read_text())
    answer = parse_response("gemini", (STREAMS / meta["file"]).read_bytes(), "text/event-stream").unwrap()
    turn = AssistantMessage(
        content=answer.text or None, tool_calls=answer.tool_calls, reasoning_blocks=answer.reasoning_blocks
    )
    results = tuple(ToolMessage(tool_call_id=c.id, name=c.name, content="40 C") for c in answer.tool_calls)
    asked = ProviderRequest(model="m", instructions="", messages=(UserMessage(content="u"), turn, *results))
    sent = msgspec.json.decode(msgspec.json.encode(request_body(asked)))
    return sent["contents"][1], sent["contents"][2], meta


@pytest.mark.parametrize("name", ["gemini3-tool-call-id-signature", "gemini3-parallel-calls"])
def test_gemini_3_calls_go_back_as_the_api_accepted_them(name: str) -> None:
    """The model turn sent back has the very parts of the recording's own next request (which Gemini 3
    accepted): each call with the API's id and the signature on the call it came with; the results follow
    in one user content under the same ids."""
    model, results, meta = _sent_back(name)
    recorded = meta["next_request"]["contents"][1]
    assert model == recorded
    ids = [part["functionCall"]["id"] for part in recorded["parts"]]
    assert [part["functionResponse"]["id"] for part in results["parts"]] == ids


def test_a_call_the_api_gave_no_id_goes_back_without_one() -> None:
    """Gemini 2.5 sends no call id: the lab's own (``gemini_call_0``) is never sent, neither with the call
    nor with its result; the call keeps its signature."""
    model, results, meta = _sent_back("gemini-tool-call-no-id")
    first = json.loads((STREAMS / meta["file"]).read_text().split("data: ", 1)[1])
    signature = first["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    call = {"name": "weather", "args": {"location": "Florence,Italy"}}
    assert model["parts"] == [{"functionCall": call, "thoughtSignature": signature}]
    assert results["parts"] == [{"functionResponse": {"name": "weather", "response": {"output": "40 C"}}}]


def test_a_429_with_retry_info_is_retried_after_the_delay_it_names() -> None:
    """A 429 in Google's shape with ``RetryInfo.retryDelay`` "0.25s" and no Retry-After header: the provider
    waits exactly that long, then reads the answer."""
    limited = {
        "error": {
            "code": 429,
            "message": "Resource has been exhausted (e.g. check quota).",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.25s"}],
        }
    }
    body = (STREAMS / "gemini-text.sse").read_bytes()
    waits: list[float] = []
    with SseServer(Reply.json(limited, status=429), Reply(body=body)) as server, httpx.Client() as client:
        notes: list[str] = []
        events = provider(server, client, sleep=waits.append).stream(ASK, notes.append)
    assert waits == [0.25]
    assert (
        notes and "HTTP 429" in notes[0] and "Resource has been exhausted" in notes[0] and "0.2 s" in notes[0]
    )
    assert assemble(events).unwrap().text == "Olá!"


def test_a_401_fails_at_once_with_the_api_s_message_and_no_key() -> None:
    """An API key refused: ``auth``, the provider's message, neither the key sent nor another Google-shaped key
    the message echoes in it."""
    other = "AIzaSyD" + "x" * 32
    message = f"API key not valid k-test (nor {other}). Please pass a valid API key."
    refused = {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
    with (
        SseServer(Reply.json(refused, status=401)) as server,
        httpx.Client() as client,
        pytest.raises(ProviderFailure) as caught,
    ):
        provider(server, client).stream(ASK)
    shown = str(caught.value)
    assert caught.value.kind == "auth" and "API key not valid" in shown
    assert "k-test" not in shown and other not in shown and "AIza<redacted>" in shown


def test_an_error_in_the_stream_is_the_call_s_error() -> None:
    """A stream that ends in an ``error`` payload (composed in Google's shape) fails to assemble, with the
    message and the status as its code; the text before it is kept in the parse."""
    chunk = {"candidates": [{"content": {"parts": [{"text": "Hal"}], "role": "model"}, "index": 0}]}
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    body = f"data: {json.dumps(chunk)}\r\n\r\ndata: {json.dumps(error)}\r\n\r\n".encode()
    parsed = parse_response("gemini", body, "text/event-stream").unwrap()
    assert (parsed.text, parsed.error, parsed.error_code, parsed.finish_reason) == (
        "Hal",
        "The model is overloaded.",
        "UNAVAILABLE",
        None,
    )
