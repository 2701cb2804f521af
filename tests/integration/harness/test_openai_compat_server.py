"""``OpenAICompatProvider`` against a real local HTTP server: framing, retries, failures, the request body."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import msgspec
import pytest
from returns.result import Failure, Success

from alisio.core.harness.protocol import (
    AssistantMessage,
    FinishEvent,
    ProviderRequest,
    StreamErrorEvent,
    TextDelta,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UsageEvent,
    UserMessage,
    assemble,
)
from alisio.shell.harness.providers.base import ProviderFailure
from alisio.shell.harness.providers.openai_compat import OpenAICompatProvider
from tests.integration.sse_server import Reply, SseServer, sse_body

KEY = "sk-test-4f9a2c7e1b5d8e3a6c0f"
REQUEST = ProviderRequest(
    model="local-model", instructions="Be brief.", messages=(UserMessage(content="hi"),)
)


def chunk(content: str | None = None, finish: str | None = None, **extra: object) -> dict[str, object]:
    delta = {} if content is None else {"content": content}
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


USAGE = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
HELLO = Reply.sse(chunk("Hel"), chunk("lo"), chunk(finish="stop"), {"choices": [], "usage": USAGE})


class Sleeps(list[float]):
    """Records the waits the provider asked for instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def server() -> Iterator[SseServer]:
    with SseServer() as running:
        yield running


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as shared:
        yield shared


def make(server: SseServer, client: httpx.Client, **options: object) -> OpenAICompatProvider:
    return OpenAICompatProvider(server.base_url, client=client, **options)  # type: ignore[arg-type]


def text_of(events: tuple[object, ...]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def test_sse_split_at_every_odd_boundary_with_keepalives_assembles(
    server: SseServer, client: httpx.Client
) -> None:
    """Comments between events and a body cut into 1..5-byte flushed pieces still give the whole answer."""
    body = (
        b": keep-alive\n\n"
        + sse_body([chunk("caf\u00e9 \u2014 "), chunk("ok"), chunk(finish="stop")], done=False)
        + b": OPENROUTER PROCESSING\n\n"
        + sse_body([{"choices": [], "usage": USAGE}])
    ).replace(b"\n", b"\r\n")
    server.enqueue(Reply(body=body).split(seed=3, max_piece=5))
    response = assemble(make(server, client).stream(REQUEST)).unwrap()
    assert response.text == "caf\u00e9 \u2014 ok"
    assert response.finish_reason == "stop"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (
        12,
        3,
        15,
    )


def test_pieces_arriving_slowly_are_reassembled(server: SseServer, client: httpx.Client) -> None:
    """With a pause before every piece (separate TCP segments), the stream is still read in full."""
    server.enqueue(Reply(body=HELLO.body, pause_s=0.002).split(seed=11, max_piece=40))
    assert text_of(make(server, client).stream(REQUEST)) == "Hello"


def test_request_body_and_headers(server: SseServer, client: httpx.Client) -> None:
    """The POST goes to /v1/chat/completions with stream, usage, tools, messages and the bearer key."""
    request = ProviderRequest(
        model="m1",
        instructions="You are a coding agent.",
        messages=(
            UserMessage(content="fix it"),
            AssistantMessage(
                content=None,
                reasoning="thinking",
                tool_calls=(ToolCall(id="call_1", name="read_file", arguments='{"path":"a.py"}'),),
            ),
            ToolMessage(tool_call_id="call_1", name="read_file", content="print(1)"),
        ),
        tools=(
            ToolSpec(
                name="read_file",
                description="Read a file.",
                parameters_json='{"properties":{"path":{"type":"string"}},"type":"object"}',
            ),
        ),
        max_output_tokens=256,
        reasoning_effort="low",
    )
    server.enqueue(HELLO)
    make(server, client, api_key=KEY).stream(request)
    (sent,) = server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["accept"] == "text/event-stream"
    assert sent.json() == {
        "model": "m1",
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 256,
        "reasoning_effort": "low",
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "fix it"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path":"a.py"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "print(1)"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": {"properties": {"path": {"type": "string"}}, "type": "object"},
                },
            }
        ],
    }


def test_no_authorization_header_without_a_key(server: SseServer, client: httpx.Client) -> None:
    """Local servers need no key: none is invented."""
    server.enqueue(HELLO)
    make(server, client).stream(REQUEST)
    assert "authorization" not in server.requests[0].headers


def test_trailing_slash_and_provider_model_default(server: SseServer, client: httpx.Client) -> None:
    """A base URL pasted with a trailing slash works; the provider's model fills a request without one."""
    server.enqueue(HELLO)
    provider = OpenAICompatProvider(server.base_url + "/", "fallback-model", client=client)
    provider.stream(msgspec.structs.replace(REQUEST, model=""))
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].json()["model"] == "fallback-model"


def test_429_with_retry_after_seconds_waits_that_long_then_succeeds(
    server: SseServer, client: httpx.Client
) -> None:
    """A 429 with ``Retry-After: 3`` waits exactly 3 s (recorded, not slept), reports the retry, then succeeds."""
    server.enqueue(
        Reply.json({"error": {"message": "Rate limit reached"}}, status=429, headers=(("Retry-After", "3"),)),
        HELLO,
    )
    sleeps, notices = Sleeps(), []
    events = make(server, client, sleep=sleeps).stream(REQUEST, on_retry=notices.append)
    assert text_of(events) == "Hello"
    assert sleeps == [3.0]
    assert len(server.requests) == 2
    assert len(notices) == 1
    assert "HTTP 429" in notices[0]
    assert "Rate limit reached" in notices[0]
    assert "in 3.0 s" in notices[0]


def test_retry_after_as_http_date_and_cap(server: SseServer, client: httpx.Client) -> None:
    """``Retry-After`` as an HTTP date is honoured; an hour-long one is cut to ``retry_after_cap``."""
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    server.enqueue(
        Reply.json({}, status=503, headers=(("Retry-After", soon),)),
        Reply.json({}, status=429, headers=(("Retry-After", "3600"),)),
        Reply.json({}, status=429, headers=(("retry-after-ms", "250"),)),
        HELLO,
    )
    sleeps = Sleeps()
    make(server, client, sleep=sleeps, retry_after_cap=60.0).stream(REQUEST)
    assert 27.0 <= sleeps[0] <= 30.0
    assert sleeps[1:] == [60.0, 0.25]


def test_retry_after_http_date_is_measured_from_the_injected_clock(
    server: SseServer, client: httpx.Client
) -> None:
    """With ``now`` fixed at 12:00:00 UTC, a date 42 s later waits exactly 42 s and a past date waits 0 s."""
    fixed = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    server.enqueue(
        Reply.json({}, status=503, headers=(("Retry-After", "Wed, 01 Jan 2025 12:00:42 GMT"),)),
        Reply.json({}, status=429, headers=(("Retry-After", "Wed, 01 Jan 2025 11:59:00 GMT"),)),
        HELLO,
    )
    sleeps, notices = Sleeps(), []
    provider = make(server, client, sleep=sleeps, now=lambda: fixed, retry_after_cap=60.0)
    events = provider.stream(REQUEST, on_retry=notices.append)
    assert text_of(events) == "Hello"
    assert sleeps == [42.0, 0.0]
    assert "in 42.0 s" in notices[0]


def test_500_until_retries_run_out_is_a_server_failure(server: SseServer, client: httpx.Client) -> None:
    """Three 500s with max_retries=2: three attempts, two backoffs within their jitter bounds, then ``server``."""
    for _ in range(3):
        server.enqueue(Reply.json({"error": {"message": "upstream exploded"}}, status=500))
    sleeps = Sleeps()
    provider = make(server, client, sleep=sleeps, max_retries=2, backoff_base=0.5, backoff_cap=0.75)
    with pytest.raises(ProviderFailure) as caught:
        provider.stream(REQUEST)
    assert caught.value.kind == "server"
    assert caught.value.status == 500
    assert "upstream exploded" in caught.value.message
    assert len(server.requests) == 3
    assert len(sleeps) == 2
    assert 0.0 <= sleeps[0] <= 0.5
    assert 0.0 <= sleeps[1] <= 0.75


def test_backoff_is_exponential_under_a_deterministic_jitter(server: SseServer, client: httpx.Client) -> None:
    """With jitter returning its upper bound, the waits are base * 2**n up to the cap."""
    for _ in range(5):
        server.enqueue(Reply.json({}, status=502))
    sleeps = Sleeps()
    provider = make(
        server,
        client,
        sleep=sleeps,
        max_retries=4,
        backoff_base=0.5,
        backoff_cap=3.0,
        jitter=lambda upper: upper,
    )
    with pytest.raises(ProviderFailure):
        provider.stream(REQUEST)
    assert sleeps == [0.5, 1.0, 2.0, 3.0]


def test_401_fails_at_once_with_the_provider_message_and_no_key(
    server: SseServer, client: httpx.Client
) -> None:
    """401: no retry, kind ``auth``, the provider's message shown, the key (even echoed back) never shown."""
    message = f"Incorrect API key provided: {KEY}. You can find your API key at https://platform.openai.com."
    server.enqueue(Reply.json({"error": {"message": message, "code": "invalid_api_key"}}, status=401))
    sleeps = Sleeps()
    with pytest.raises(ProviderFailure) as caught:
        make(server, client, api_key=KEY, sleep=sleeps).stream(REQUEST)
    failure = caught.value
    assert (failure.kind, failure.status, failure.reason) == ("auth", 401, "provider_auth")
    assert "Incorrect API key provided" in str(failure)
    assert KEY not in str(failure)
    assert KEY[:12] not in str(failure)
    assert sleeps == []
    assert len(server.requests) == 1


def test_400_is_a_bad_request_with_the_message(server: SseServer, client: httpx.Client) -> None:
    """400 context overflow: kind ``bad_request`` at once, the provider's sentence in the message."""
    text = "This model's maximum context length is 4097 tokens."
    server.enqueue(Reply.json({"error": {"message": text, "code": "context_length_exceeded"}}, status=400))
    with pytest.raises(ProviderFailure) as caught:
        make(server, client).stream(REQUEST)
    assert caught.value.kind == "bad_request"
    assert text in caught.value.message
    assert len(server.requests) == 1


def test_404_on_a_base_url_without_v1_suggests_it(server: SseServer, client: httpx.Client) -> None:
    """A base URL pasted without /v1 gets a 404 whose message suggests adding /v1."""
    server.enqueue(Reply(status=404, body=b"Not Found", content_type="text/plain"))
    with pytest.raises(ProviderFailure) as caught:
        OpenAICompatProvider(server.url, "m", client=client).stream(REQUEST)
    assert caught.value.kind == "bad_request"
    assert server.requests[0].path == "/chat/completions"
    assert f"did you mean {server.url}/v1?" in caught.value.message


def test_connection_dropped_mid_stream_is_not_retried(server: SseServer, client: httpx.Client) -> None:
    """After data arrived, a broken connection is a ``network`` failure; the partial answer is not retried."""
    body = sse_body([chunk("partial answer ") for _ in range(20)] + [chunk(finish="stop")])
    server.enqueue(Reply(body=body, drop_after=len(body) // 2).split(seed=5), HELLO)
    sleeps = Sleeps()
    with pytest.raises(ProviderFailure) as caught:
        make(server, client, sleep=sleeps).stream(REQUEST)
    assert caught.value.kind == "network"
    assert "mid-stream" in caught.value.message
    assert "not retried" in caught.value.message
    assert len(server.requests) == 1
    assert sleeps == []


def test_connection_dropped_before_any_event_is_retried(server: SseServer, client: httpx.Client) -> None:
    """A 200 whose connection breaks before the first event is retried like a connection error."""
    server.enqueue(Reply(body=b": keep-alive\n\ndata: {", drop_after=20), HELLO)
    sleeps = Sleeps()
    assert text_of(make(server, client, sleep=sleeps).stream(REQUEST)) == "Hello"
    assert len(server.requests) == 2
    assert len(sleeps) == 1


def test_connection_refused_is_a_network_failure_after_retries(client: httpx.Client) -> None:
    """Nothing listening: every attempt fails to connect, then ``network``."""
    with socket.socket() as probe:  # bound (no other test takes the port), not listening: refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        sleeps = Sleeps()
        provider = OpenAICompatProvider(
            f"http://127.0.0.1:{port}/v1", "m", client=client, sleep=sleeps, max_retries=2
        )
        with pytest.raises(ProviderFailure) as caught:
            provider.stream(REQUEST)
    assert caught.value.kind == "network"
    assert len(sleeps) == 2


def test_read_timeout_before_data_is_retried_then_a_timeout_failure(
    server: SseServer, client: httpx.Client
) -> None:
    """A server silent for longer than the read timeout: retried, then ``timeout``."""
    server.enqueue(Reply(body=HELLO.body, pause_s=1.0), Reply(body=HELLO.body, pause_s=1.0))
    sleeps = Sleeps()
    provider = make(server, client, sleep=sleeps, max_retries=1, read_timeout=0.2)
    with pytest.raises(ProviderFailure) as caught:
        provider.stream(REQUEST)
    assert caught.value.kind == "timeout"
    assert len(sleeps) == 1


def test_malformed_chunk_is_a_protocol_failure_naming_it(server: SseServer, client: httpx.Client) -> None:
    """A data payload that is not JSON fails with ``protocol`` and an excerpt of the payload."""
    server.enqueue(Reply.sse(chunk("a"), '{"choices": [{"delta": {"content": "b"', chunk(finish="stop")))
    with pytest.raises(ProviderFailure) as caught:
        make(server, client).stream(REQUEST)
    assert caught.value.kind == "protocol"
    assert '{"choices": [{"delta": {"content": "b"' in caught.value.message


def test_stream_without_done_or_finish_is_reported_as_truncated(
    server: SseServer, client: httpx.Client
) -> None:
    """A body that just ends (no finish, no [DONE]) returns its events; assembling them is an error."""
    server.enqueue(Reply.sse(chunk("half an ans"), done=False))
    events = make(server, client).stream(REQUEST)
    assert text_of(events) == "half an ans"
    assert not any(isinstance(e, FinishEvent) for e in events)
    match assemble(events):
        case Failure(error):
            assert "without a finish reason" in error.message
        case Success(_):
            pytest.fail("a stream without a finish reason must not assemble")


def test_stream_without_done_but_finished_is_complete(server: SseServer, client: httpx.Client) -> None:
    """A clean end of body after the finish chunk (servers that never send [DONE]) is a complete answer."""
    server.enqueue(Reply.sse(chunk("done"), chunk(finish="stop"), done=False))
    assert assemble(make(server, client).stream(REQUEST)).unwrap().text == "done"


def test_error_event_inside_a_200_stream(server: SseServer, client: httpx.Client) -> None:
    """``event: error`` after some text becomes a StreamErrorEvent with the provider's message and code."""
    body = sse_body([chunk("so")], done=False) + (
        b'event: error\ndata: {"error":{"message":"Tool call validation failed","code":"tool_use_failed"}}\n\n'
    )
    server.enqueue(Reply(body=body))
    events = make(server, client).stream(REQUEST)
    assert events[-1] == StreamErrorEvent(message="Tool call validation failed", code="tool_use_failed")


def test_json_answer_instead_of_a_stream_is_read_as_one_completion(
    server: SseServer, client: httpx.Client
) -> None:
    """A server that ignores ``stream`` and answers application/json still gives text, calls, finish, usage."""
    completion = {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "reading",
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": USAGE,
    }
    server.enqueue(Reply.json(completion))
    response = assemble(make(server, client).stream(REQUEST)).unwrap()
    assert response.text == "reading"
    assert response.tool_calls == (ToolCall(id="c1", name="read_file", arguments="{}"),)
    assert response.finish_reason == "tool_calls"
    assert response.usage is not None and response.usage.total_tokens == 15


def test_non_stream_non_json_200_fails_clearly(server: SseServer, client: httpx.Client) -> None:
    """An HTML page with status 200 (a proxy login page) is a ``protocol`` failure naming the content type."""
    server.enqueue(Reply(body=b"<html>login</html>", content_type="text/html"))
    with pytest.raises(ProviderFailure) as caught:
        make(server, client).stream(REQUEST)
    assert caught.value.kind == "protocol"
    assert "text/html" in caught.value.message


def test_the_key_appears_in_no_event(server: SseServer, client: httpx.Client) -> None:
    """The key travels in the Authorization header only: no stream event carries it."""
    server.enqueue(HELLO)
    events = make(server, client, api_key=KEY).stream(REQUEST)
    assert KEY.encode() not in msgspec.json.encode(events)
    assert any(isinstance(e, UsageEvent) for e in events)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY.encode() not in server.requests[0].body


def test_api_openai_com_gets_max_completion_tokens() -> None:
    """OpenAI's reasoning models reject max_tokens, so api.openai.com gets max_completion_tokens."""
    seen: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=HELLO.body)

    with httpx.Client(transport=httpx.MockTransport(handler)) as mock:
        OpenAICompatProvider("https://api.openai.com/v1", client=mock).stream(
            msgspec.structs.replace(REQUEST, max_output_tokens=99)
        )
    body = msgspec.json.decode(seen[0])
    assert body["max_completion_tokens"] == 99
    assert "max_tokens" not in body


def test_a_silent_server_is_cut_off_at_the_call_deadline(server: SseServer, client: httpx.Client) -> None:
    """Headers then 5 s of silence, with timeout_s=0.5: ``deadline`` after about 0.5 s, not the 300 s read timeout."""
    server.enqueue(Reply(body=HELLO.body, pieces=(HELLO.body,), pause_s=5.0))
    provider = make(server, client, read_timeout=300.0)
    started = time.monotonic()
    with pytest.raises(ProviderFailure) as caught:
        provider.stream(REQUEST, timeout_s=0.5)
    assert caught.value.kind == "deadline"
    assert 0.4 <= time.monotonic() - started < 2.0
    assert "0.5 s" in caught.value.message
    assert len(server.requests) == 1  # a deadline is never retried


def test_a_trickling_stream_stops_at_the_first_event_past_the_deadline(
    server: SseServer, client: httpx.Client
) -> None:
    """Events every 0.2 s for 4 s, timeout_s=0.6: ``deadline`` within about a second, naming the events received."""
    body = sse_body([chunk("x")] * 20 + [chunk(finish="stop")])
    pieces = tuple(part + b"\n\n" for part in body.split(b"\n\n") if part)
    server.enqueue(Reply(body=body, pieces=pieces, pause_s=0.2))
    started = time.monotonic()
    with pytest.raises(ProviderFailure) as caught:
        make(server, client).stream(REQUEST, timeout_s=0.6)
    assert caught.value.kind == "deadline"
    assert time.monotonic() - started < 1.5
    assert "events received" in caught.value.message


def test_a_retry_that_would_wait_past_the_deadline_is_not_attempted(
    server: SseServer, client: httpx.Client
) -> None:
    """A 429 asking for 30 s with 2 s left: the 429 at once (saying why), no sleep, no second request."""
    server.enqueue(Reply.json({}, status=429, headers=(("Retry-After", "30"),)), HELLO)
    sleeps = Sleeps()
    with pytest.raises(ProviderFailure) as caught:
        make(server, client, sleep=sleeps).stream(REQUEST, timeout_s=2.0)
    assert caught.value.kind == "rate_limited"
    assert "HTTP 429" in caught.value.message and "not retried" in caught.value.message
    assert sleeps == []
    assert len(server.requests) == 1


def test_a_call_that_finishes_in_time_is_unaffected_by_its_deadline(
    server: SseServer, client: httpx.Client
) -> None:
    """A normal stream with a generous timeout_s assembles as without one."""
    server.enqueue(HELLO)
    assert text_of(make(server, client).stream(REQUEST, timeout_s=30.0)) == "Hello"


def test_keepalive_comments_past_the_deadline_do_not_extend_the_call(
    server: SseServer, client: httpx.Client
) -> None:
    """Only ``: keep-alive`` comments every 0.2 s for 4 s, timeout_s=0.6: ``deadline`` within about a second."""
    pieces = (b": keep-alive\n\n",) * 20 + (HELLO.body,)
    server.enqueue(Reply(body=b"".join(pieces), pieces=pieces, pause_s=0.2))
    started = time.monotonic()
    with pytest.raises(ProviderFailure) as caught:
        make(server, client).stream(REQUEST, timeout_s=0.6)
    assert caught.value.kind == "deadline"
    assert time.monotonic() - started < 1.5
    assert len(server.requests) == 1
