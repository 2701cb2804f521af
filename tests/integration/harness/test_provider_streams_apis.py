"""Every recorded Anthropic Messages and OpenAI Responses answer in tests/fixtures/provider-streams/{anthropic,
openai-responses} parses to its ``expected`` oracle: through the core parser (``alisio.core.harness.wire``)
whole and cut at random byte boundaries, and through the real provider over HTTP from a local server.

The oracle in each ``.json`` was computed by a separate naive fold over the data payloads (not alisio's
parser); its provenance (repository, path, commit, and whether the framing is verbatim, reconstructed or
composed) is in the same file.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from returns.result import Success

from alisio.core.harness.protocol import ProviderRequest, UserMessage, assemble
from alisio.core.harness.wire import ParsedAnswer, parse_events, parse_response
from alisio.core.harness.wire_anthropic import FINISH_REASONS
from alisio.core.harness.wire_common import SseDecoder
from alisio.shell.harness.providers.streaming import StreamingProvider
from tests.integration.sse_server import Reply, SseServer

STREAMS = Path(__file__).resolve().parents[2] / "fixtures" / "provider-streams"
APIS = {"anthropic": "anthropic", "openai-responses": "openai-responses"}
RECORDINGS = sorted(
    path
    for folder in APIS
    for path in (STREAMS / folder).glob("*.json")
    if not path.name.endswith(".body.json")
)


def test_the_recordings_are_there() -> None:
    """Both formats have their recordings, covering what the issue lists (a missing directory fails)."""
    names = {path.stem for path in RECORDINGS}
    for wanted in (
        "anthropic-text",
        "anthropic-tool-call",
        "anthropic-two-tool-calls",
        "anthropic-thinking-signature-tool-call",
        "anthropic-cache-hit",
        "anthropic-midstream-error",
        "anthropic-max-tokens",
        "anthropic-refusal",
        "responses-text",
        "responses-tool-call",
        "responses-two-tool-calls",
        "responses-reasoning-encrypted-tool-call",
        "responses-deepseek-cache-hit",
        "responses-midstream-error",
        "responses-max-output-tokens",
        "responses-llamacpp-no-output-index",
    ):
        assert wanted in names, wanted
    for path in RECORDINGS:
        meta = json.loads(path.read_text())
        source = meta["source"]
        assert source["repository"] and source["commit"] and source["framing"], path.name


def body_of(meta_path: Path) -> tuple[str, bytes, str]:
    meta = json.loads(meta_path.read_text())
    body = (meta_path.parent / meta["file"]).read_bytes()
    content_type = "application/json" if meta["file"].endswith(".json") else "text/event-stream"
    return meta["api"], body, content_type


def expected_finish(api: str, expected: dict[str, Any]) -> str | None:
    if api == "anthropic":
        reason = expected["stop_reason"]
        return None if reason is None else FINISH_REASONS.get(reason, reason)
    if expected["status"] == "completed":
        return "tool_calls" if expected["tool_calls"] else "stop"
    if expected["status"] == "incomplete":
        return {"max_output_tokens": "length"}.get(
            expected["incomplete_reason"], expected["incomplete_reason"]
        )
    return None


def check(api: str, expected: dict[str, Any], got: ParsedAnswer) -> None:
    assert got.text == expected["assistant_text"]
    assert got.reasoning == expected["reasoning_text"]
    assert [(c.id, c.name, c.arguments) for c in got.tool_calls] == [
        (c["id"], c["name"], c["arguments"]) for c in expected["tool_calls"]
    ]
    assert got.finish_reason == expected_finish(api, expected)
    if expected["usage"] is None:
        assert got.usage is None
    else:
        assert got.usage is not None
        for field, value in expected["usage"].items():
            assert getattr(got.usage, field) == value, field
        assert json.loads(got.usage.provider_fields or "null") == expected["provider_usage"]
    if expected["error"] is None:
        assert got.error is None
    else:
        assert (got.error, got.error_code) == (expected["error"]["message"], expected["error"]["code"])
    if api == "anthropic":
        assert [block.kind for block in got.reasoning_blocks] == expected["reasoning_blocks"]
        thinking = [json.loads(b.wire) for b in got.reasoning_blocks if b.kind == "thinking"]
        assert [block["signature"] for block in thinking] == expected["signatures"]
        assert "".join(block["thinking"] for block in thinking) == (expected["reasoning_text"] or "")
    else:
        items = [json.loads(b.wire) for b in got.reasoning_blocks]
        assert [
            {"id": item.get("id"), "encrypted_content_chars": len(item.get("encrypted_content") or "")}
            for item in items
        ] == expected["reasoning_blocks"]


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.stem)
def test_recording_parses_to_its_expectation_whatever_the_cuts(recording: Path) -> None:
    """The whole body, and the body fed in random pieces (inside UTF-8 characters and lines), both parse
    to the oracle: text, reasoning, tool calls, finish reason, usage (lab convention and verbatim),
    reasoning blocks to send back, the error."""
    api, body, content_type = body_of(recording)
    expected = json.loads(recording.read_text())["expected"]
    whole = parse_response(api, body, content_type)  # type: ignore[arg-type]
    assert isinstance(whole, Success), whole
    check(api, expected, whole.unwrap())
    if content_type != "text/event-stream":
        return
    from alisio.core.harness.wire import stream_decoder

    rng = random.Random(recording.name)
    for _ in range(20):
        framing, decoder = SseDecoder(), stream_decoder(api)  # type: ignore[arg-type]
        events: list[Any] = []
        at = 0
        messages = []
        while at < len(body):
            size = rng.randint(1, 40)
            messages.extend(framing.feed(body[at : at + size]))
            at += size
        messages.extend(framing.close())
        for message in messages:
            if decoder.done:
                break
            events.extend(decoder.feed(message.event, message.data).unwrap())
        check(api, expected, parse_events(tuple(events)))


@pytest.fixture(scope="module")
def server() -> Iterator[SseServer]:
    with SseServer() as running:
        yield running


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.stem)
def test_recording_through_the_provider_over_http(server: SseServer, recording: Path) -> None:
    """The real provider of the api, over HTTP, with the body cut in random pieces: the events it
    returns assemble to the same answer (an error stream fails to assemble, with the provider's message)."""
    api, body, content_type = body_of(recording)
    expected = json.loads(recording.read_text())["expected"]
    server.enqueue(Reply(body=body, content_type=content_type).split(seed=len(body), max_piece=50))
    with httpx.Client() as client:
        provider = StreamingProvider(
            server.base_url, "m", api=api, api_key="k-test", client=client, max_retries=0
        )
        events = provider.stream(
            ProviderRequest(model="m", instructions="i", messages=(UserMessage(content="u"),))
        )
    check(api, expected, parse_events(events))
    assembled = assemble(events)
    if expected["error"] is not None or expected_finish(api, expected) is None:
        assert not isinstance(assembled, Success)
    else:
        assert isinstance(assembled, Success)
    sent = server.requests[-1]
    assert sent.path.endswith("/messages" if api == "anthropic" else "/responses")
    if api == "anthropic":
        assert sent.headers["x-api-key"] == "k-test" and "authorization" not in sent.headers
        assert sent.headers["anthropic-version"] == "2023-06-01"
    else:
        assert sent.headers["authorization"] == "Bearer k-test"
        assert sent.json()["store"] is False
