"""Every recorded real provider stream in tests/fixtures/provider-streams parses to its ``expected`` oracle.

Each ``.sse`` body is served by a real local HTTP server (split at random byte boundaries, with ``\\n`` and
with ``\\r\\n`` line endings) to the real ``OpenAICompatProvider``; the events it returns are folded and
compared with the oracle field by field: assistant text, reasoning text, tool calls, finish reason, usage
(cached and reasoning tokens included) and the in-stream error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from returns.result import Failure, Success

from alisio.core.harness.protocol import (
    FinishEvent,
    ProviderRequest,
    ReasoningDelta,
    StreamErrorEvent,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    UsageEvent,
    UserMessage,
    assemble,
)
from alisio.shell.harness.providers.openai_compat import OpenAICompatProvider
from tests.integration.sse_server import Reply, SseServer

STREAMS = Path(__file__).resolve().parents[2] / "fixtures" / "provider-streams"
RECORDINGS = sorted(STREAMS.glob("*.sse"))
REQUEST = ProviderRequest(model="m", instructions="", messages=(UserMessage(content="hi"),))


def test_the_recordings_are_there() -> None:
    """The recordings exist (a missing fixture directory must fail loudly, not skip every case)."""
    assert STREAMS.is_dir(), f"missing {STREAMS}: the recorded provider streams belong to the repository"
    assert len(RECORDINGS) >= 17, f"expected the 17 recordings in {STREAMS}, found {len(RECORDINGS)}"


def fold(events: tuple[StreamEvent, ...]) -> dict[str, Any]:
    """The oracle's fields, computed from the provider's events."""
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    reasoning = [e.text for e in events if isinstance(e, ReasoningDelta)]
    calls: dict[int, dict[str, Any]] = {}
    for e in events:
        if isinstance(e, ToolCallDelta):
            call = calls.setdefault(e.index, {"index": e.index, "id": None, "name": None, "arguments": ""})
            call["id"] = call["id"] or e.id
            call["name"] = call["name"] or e.name
            call["arguments"] += e.arguments
    finishes = [e.reason for e in events if isinstance(e, FinishEvent)]
    usages = [e.usage for e in events if isinstance(e, UsageEvent)]
    errors = [e for e in events if isinstance(e, StreamErrorEvent)]
    usage = usages[-1] if usages else None
    return {
        "assistant_text": text,
        "reasoning_text": "".join(reasoning) if reasoning else None,
        "tool_calls": [calls[i] for i in sorted(calls)],
        "finish_reason": finishes[-1] if finishes else None,
        "usage": None
        if usage is None
        else {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
            "cached_tokens": usage.cached_input_tokens,
            "reasoning_tokens": usage.reasoning_tokens,
        },
        "error": None if not errors else {"code": errors[0].code, "message": errors[0].message},
    }


def oracle(recording: Path) -> dict[str, Any]:
    expected = json.loads(recording.with_suffix(".json").read_text(encoding="utf-8"))["expected"]
    error = expected["error"]
    return {
        "assistant_text": expected["assistant_text"],
        "reasoning_text": expected["reasoning_text"],
        "tool_calls": [
            {"index": c["index"], "id": c["id"], "name": c["name"], "arguments": c["arguments"]}
            for c in expected["tool_calls"]
        ],
        "finish_reason": expected["finish_reason"],
        "usage": expected["usage"],
        "error": None if error is None else {"code": str(error["code"]), "message": error["message"]},
    }


@pytest.fixture(scope="module")
def provider() -> Iterator[tuple[SseServer, OpenAICompatProvider]]:
    with SseServer() as server, httpx.Client() as client:
        yield server, OpenAICompatProvider(server.base_url, client=client, max_retries=0)


def stream_through_server(
    provider: tuple[SseServer, OpenAICompatProvider], body: bytes, seed: int
) -> tuple[StreamEvent, ...]:
    server, openai_compat = provider
    server.enqueue(Reply(body=body).split(seed, max_piece=97))
    return openai_compat.stream(REQUEST)


@pytest.mark.parametrize("line_ending", ["lf", "crlf"])
@pytest.mark.parametrize("recording", RECORDINGS, ids=[r.stem for r in RECORDINGS])
def test_recording_parses_to_its_expectation(
    provider: tuple[SseServer, OpenAICompatProvider], recording: Path, line_ending: str
) -> None:
    """A real stream, served over a socket in random pieces, yields exactly the oracle's fields."""
    body = recording.read_bytes()
    if line_ending == "crlf":
        body = body.replace(b"\n", b"\r\n")
    events = stream_through_server(provider, body, seed=len(body))
    assert fold(events) == oracle(recording)


@pytest.mark.parametrize("recording", RECORDINGS, ids=[r.stem for r in RECORDINGS])
def test_assemble_agrees_with_the_oracle(
    provider: tuple[SseServer, OpenAICompatProvider], recording: Path
) -> None:
    """``assemble`` turns each recording into the oracle's response, or into its in-stream error."""
    expected = oracle(recording)
    result = assemble(stream_through_server(provider, recording.read_bytes(), seed=7))
    match result:
        case Success(response):
            assert expected["error"] is None
            assert response.text == expected["assistant_text"]
            assert response.reasoning == expected["reasoning_text"]
            assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
                (c["id"], c["name"], c["arguments"]) for c in expected["tool_calls"]
            ]
            assert response.finish_reason == expected["finish_reason"]
            if expected["usage"] is None:
                assert response.usage is None
            else:
                assert response.usage is not None
                assert response.usage.input_tokens == expected["usage"]["prompt_tokens"]
                assert response.usage.cached_input_tokens == expected["usage"]["cached_tokens"]
                assert response.usage.reasoning_tokens == expected["usage"]["reasoning_tokens"]
        case Failure(error):
            assert expected["error"] == {"code": error.code, "message": error.message}
