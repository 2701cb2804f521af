"""One model call an external agent made through the proxy, read from its bytes: ``read_exchange``.

The proxy forwards each request unchanged and keeps the response's bytes; this module reads, per wire API,
what the report needs: the request's model, message count and tools, the provider-reported usage, the tool
calls the model asked for and its text. Only ``openai-chat`` (Chat Completions) is read today, with the same
parser the built-in provider uses (``alisio.core.harness.sse``); ``SUPPORTED_APIS`` says which.

Usage conventions (stated, never converted silently): Chat Completions' ``prompt_tokens`` includes cached
input (``prompt_tokens_details.cached_tokens``); ``Usage.input_tokens`` is therefore all input, cached
included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.harness.protocol import ProviderResponse, StreamEvent, ToolCall, Usage, assemble
from alisio.core.harness.sse import DONE, completion_events, decode_data, error_message

__all__ = [
    "API_NAMES",
    "SUPPORTED_APIS",
    "Api",
    "Exchange",
    "ExchangeError",
    "RequestFacts",
    "read_exchange",
    "read_request",
    "sse_payloads",
    "unsupported_api",
]

Api = Literal["openai-chat", "openai-responses", "anthropic"]
API_NAMES: Final[tuple[Api, ...]] = ("openai-chat", "openai-responses", "anthropic")
SUPPORTED_APIS: Final[frozenset[Api]] = frozenset({"openai-chat"})
"""The wire APIs the proxy reads today."""
USAGE_CONVENTION: Final[Mapping[Api, str]] = {
    "openai-chat": "prompt_tokens includes cached input (prompt_tokens_details.cached_tokens)",
    "openai-responses": "input_tokens includes cached input (input_tokens_details.cached_tokens)",
    "anthropic": "input_tokens excludes cache_read_input_tokens and cache_creation_input_tokens",
}


def unsupported_api(api: str) -> str | None:
    """Why the proxy cannot speak ``api`` (one line), or ``None`` when it can."""
    if api in SUPPORTED_APIS:
        return None
    if api in API_NAMES:
        return (
            f"api {api!r} is not yet supported by the proxy (supported: {', '.join(sorted(SUPPORTED_APIS))})"
        )
    return f"unknown api {api!r} (one of {', '.join(API_NAMES)})"


class RequestFacts(Frozen, frozen=True, kw_only=True):
    """What a request asked: its model, how many messages, which tools."""

    model: str
    message_count: int
    tools: tuple[str, ...]
    stream: bool


class Exchange(Frozen, frozen=True, kw_only=True):
    """One model call: what was asked and what the provider answered."""

    request: RequestFacts
    status: int
    """The provider's HTTP status."""
    usage: Usage | None
    """The provider-reported usage (``None``: not reported)."""
    tool_calls: tuple[ToolCall, ...]
    """The tool calls the model asked for, under the agent's own tool names."""
    text: str
    finish_reason: str
    error: str | None = None
    """The provider's error (a non-2xx status, an in-stream error), ``None`` when it answered."""


class ExchangeError(Frozen, frozen=True, kw_only=True, tag="exchange_error"):
    """A request or response that cannot be read (not JSON, not the api's shape)."""

    message: str

    def __str__(self) -> str:
        return self.message


_DECODER: Final = msgspec.json.Decoder()


def _json(data: bytes) -> object:
    try:
        return _DECODER.decode(data)
    except msgspec.DecodeError:
        return None


def _tool_names(tools: object) -> tuple[str, ...]:
    names: list[str] = []
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if isinstance(name, str):
            names.append(name)
    return tuple(names)


def read_request(api: Api, body: bytes) -> Result[RequestFacts, ExchangeError]:
    """The facts of a request body of ``api`` (Chat Completions: ``model``, ``messages``, ``tools``)."""
    data = _json(body)
    if not isinstance(data, Mapping):
        return Failure(ExchangeError(message="the request body is not a JSON object"))
    messages = data.get("messages")
    model = data.get("model")
    return Success(
        RequestFacts(
            model=model if isinstance(model, str) else "",
            message_count=len(messages) if isinstance(messages, list) else 0,
            tools=_tool_names(data.get("tools")),
            stream=data.get("stream") is True,
        )
    )


def sse_payloads(body: bytes) -> tuple[tuple[str | None, str], ...]:
    """The ``(event, data)`` pairs of an SSE body (``[DONE]`` left out), as the SSE spec frames them."""
    pairs: list[tuple[str | None, str]] = []
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        event: str | None = None
        data: list[str] = []
        for raw in block.split(b"\n"):
            line = raw.decode("utf-8", "replace")
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)
        if data and "\n".join(data) != DONE:
            pairs.append((event, "\n".join(data)))
    return tuple(pairs)


def _chat_events(body: bytes, streamed: bool) -> Result[tuple[StreamEvent, ...], ExchangeError]:
    if not streamed:
        data = _json(body)
        if not isinstance(data, Mapping):
            return Failure(ExchangeError(message="the response body is not a JSON object"))
        return Success(completion_events(data))
    events: list[StreamEvent] = []
    for event, data_text in sse_payloads(body):
        match decode_data(data_text, event):
            case Success(decoded):
                events.extend(decoded)
            case Failure(error):
                return Failure(ExchangeError(message=str(error)))
    return Success(tuple(events))


def _response(facts: RequestFacts, status: int, response: ProviderResponse) -> Exchange:
    return Exchange(
        request=facts,
        status=status,
        usage=response.usage,
        tool_calls=response.tool_calls,
        text=response.text,
        finish_reason=response.finish_reason,
    )


def read_exchange(
    api: Api, request: bytes, status: int, content_type: str, response: bytes
) -> Result[Exchange, ExchangeError]:
    """Read one call of ``api`` from its request body and its response (status, content type, body).

    Returns:
        The exchange; a non-2xx status or an in-stream error is an exchange with ``error`` set (the provider
        answered); ``Failure(ExchangeError)`` when the request is not JSON, the api is not supported, or a
        2xx response cannot be read.
    """
    problem = unsupported_api(api)
    if problem is not None:
        return Failure(ExchangeError(message=problem))
    return read_request(api, request).bind(lambda facts: _read_answer(facts, status, content_type, response))


def _read_answer(
    facts: RequestFacts, status: int, content_type: str, response: bytes
) -> Result[Exchange, ExchangeError]:
    if not 200 <= status < 300:
        message = error_message(_json(response)) or response[:200].decode("utf-8", "replace")
        return Success(_failed(facts, status, f"HTTP {status}: {message or 'no body'}"))
    streamed = "text/event-stream" in content_type.lower()
    return _chat_events(response, streamed).map(lambda stream: _assembled(facts, status, stream))


def _assembled(facts: RequestFacts, status: int, stream: tuple[StreamEvent, ...]) -> Exchange:
    match assemble(stream):
        case Success(answer):
            return _response(facts, status, answer)
        case Failure(error):
            return _failed(facts, status, error.message)
    raise AssertionError("unreachable")  # pragma: no cover


def _failed(facts: RequestFacts, status: int, message: str) -> Exchange:
    return Exchange(
        request=facts, status=status, usage=None, tool_calls=(), text="", finish_reason="error", error=message
    )
