"""The OpenAI-compatible provider against hostile servers: endless streams, huge lines, and passwords in URLs.

A real local HTTP server (``sse_server``); no mock of our own code.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from alisio.core.harness.budget import RunBudget
from alisio.core.harness.config import MeasuredConfig
from alisio.core.harness.events import IncidentRaised, RunEnded
from alisio.core.harness.policy import ALL_EFFECTS, Policy, PolicyMode
from alisio.core.harness.protocol import ProviderRequest, UserMessage
from alisio.shell.harness.agent import AgentSetup, run_agent
from alisio.shell.harness.providers.base import ProviderFailure
from alisio.shell.harness.providers.openai_compat import OpenAICompatProvider
from tests.integration.sse_server import Reply, SseServer

REQUEST = ProviderRequest(model="m", instructions="Be brief.", messages=(UserMessage(content="hi"),))
PASSWORD = "hunter2-pw"
CAP = 64 << 10


def delta(text: str) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


@pytest.fixture
def server() -> Iterator[SseServer]:
    with SseServer() as running:
        yield running


def with_password(base_url: str) -> str:
    return base_url.replace("http://", f"http://alice:{PASSWORD}@")


def failure_of(provider: OpenAICompatProvider) -> ProviderFailure:
    with pytest.raises(ProviderFailure) as caught:
        provider.stream(REQUEST)
    return caught.value


def test_a_stream_that_never_ends_stops_at_max_response_bytes(server: SseServer) -> None:
    """Text deltas past the cap (and no end in sight): the call fails at the cap, once, never retried."""
    piece = ("data: " + json.dumps(delta("x" * 900)) + "\n\n").encode()
    server.enqueue(Reply(body=piece * 400, pieces=(piece,) * 400))
    with OpenAICompatProvider(server.base_url, max_response_bytes=CAP, sleep=lambda _s: None) as provider:
        failure = failure_of(provider)
    assert failure.kind == "too_large" and failure.reason == "provider_too_large"
    assert f"passed {CAP} bytes (provider.maxResponseBytes)" in failure.message
    assert "the partial response was discarded" in failure.message
    assert len(server.requests) == 1


def test_one_huge_sse_line_stops_at_max_response_bytes(server: SseServer) -> None:
    """A single data line of 1 MiB that never reaches its newline within the cap is cut off at the cap."""
    line = b"data: " + b"y" * (1 << 20)
    server.enqueue(Reply(body=line, pieces=tuple(line[i : i + 8192] for i in range(0, len(line), 8192))))
    with OpenAICompatProvider(server.base_url, max_response_bytes=CAP) as provider:
        failure = failure_of(provider)
    assert failure.kind == "too_large"


def test_a_huge_error_body_is_not_read_whole(server: SseServer) -> None:
    """A 401 whose body passes the cap fails as too_large instead of being read into memory."""
    server.enqueue(Reply.json({"error": {"message": "z" * (1 << 20)}}, status=401))
    with OpenAICompatProvider(server.base_url, max_response_bytes=CAP) as provider:
        assert failure_of(provider).kind == "too_large"


def test_a_response_under_the_cap_is_unaffected(server: SseServer) -> None:
    """A normal answer well under the cap streams as before."""
    server.enqueue(
        Reply.sse(delta("hello"), {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    )
    with OpenAICompatProvider(server.base_url, max_response_bytes=CAP) as provider:
        events = provider.stream(REQUEST)
    assert len(events) == 2


def test_a_password_in_the_base_url_is_in_no_failure_message(server: SseServer) -> None:
    """Connection refused, HTTP errors, the /v1 hint and a malformed chunk all name the URL redacted."""
    messages = []
    with socket.socket() as probe:  # bound (no other test takes the port), not listening: refused
        probe.bind(("127.0.0.1", 0))
        refused = OpenAICompatProvider(
            with_password(f"http://127.0.0.1:{probe.getsockname()[1]}/v1"),
            max_retries=0,
            sleep=lambda _s: None,
        )
        messages.append(failure_of(refused).message)
    server.enqueue(
        Reply.json({"error": {"message": "no such model"}}, status=404),
        Reply.json({"error": {"message": "bad key"}}, status=401),
        Reply.sse("{not json"),
    )
    with OpenAICompatProvider(with_password(server.url), max_retries=0) as bare:
        messages.append(failure_of(bare).message)
    with OpenAICompatProvider(with_password(server.base_url), max_retries=0) as provider:
        messages.append(failure_of(provider).message)
        messages.append(failure_of(provider).message)
        assert provider.url == f"{server.base_url.replace('http://', 'http://<redacted>@')}/chat/completions"
    assert all(PASSWORD not in message for message in messages), messages
    assert all("http://<redacted>@127.0.0.1" in message for message in messages), messages
    assert "did you mean http://<redacted>@127.0.0.1" in messages[1]
    assert server.requests[0].headers["authorization"].startswith("Basic ")  # still sent, as basic auth


def test_a_password_in_the_base_url_is_in_no_event_of_a_run(server: SseServer, tmp_path: Path) -> None:
    """A retried 429 then a 401: the retry incident, the run's end and its message never hold the password."""
    server.enqueue(
        Reply.json({"error": {"message": "slow down"}}, status=429, headers=(("Retry-After", "0"),)),
        Reply.json({"error": {"message": "denied"}}, status=401),
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with OpenAICompatProvider(with_password(server.base_url), "m", sleep=lambda _s: None) as provider:
        result = run_agent(
            AgentSetup(
                prompt="hi",
                workspace=workspace,
                provider=provider,
                model="m",
                measured=MeasuredConfig(instructions="Test."),
                policy=Policy(mode=PolicyMode.FULL),
                granted=ALL_EFFECTS,
                budget=RunBudget(max_turns=3, max_wall_ms=30_000),
            )
        )
    assert result.outcome == "error" and result.reason == "provider_auth"
    assert any(
        isinstance(event, IncidentRaised) and event.kind == "provider_retry" for event in result.events
    )
    assert isinstance(result.events[-1], RunEnded)
    dumped = json.dumps([msgspec.to_builtins(event) for event in result.events]) + str(result.message)
    assert PASSWORD not in dumped
    assert "<redacted>" in str(result.message)
