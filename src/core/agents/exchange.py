"""One model call an external agent made through the proxy, read from its bytes: ``read_exchange``.

The proxy forwards each request unchanged and keeps the response's bytes; this module reads, per wire API,
what the report needs: the request's model, message count and tools, the provider-reported usage, the tool
calls the model asked for and its text. Every api the lab speaks is read (``SUPPORTED_APIS``), each answer
with the one parser the built-in provider uses: ``alisio.core.harness.wire.parse_response``.

Usage conventions (``USAGE_CONVENTION``: stated, and normalised by the wire modules, never silently):
``Usage.input_tokens`` is all input, cached included; Anthropic's ``input_tokens`` excludes cache reads and
writes, so the wire module adds them (its own usage object is kept in ``Usage.provider_fields``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.harness.protocol import ToolCall, Usage, usage_before_cut, usage_problem
from alisio.core.harness.sse import error_message
from alisio.core.harness.wire import APIS, Api, ParsedAnswer, parse_response, wire_format

__all__ = [
    "API_NAMES",
    "SUPPORTED_APIS",
    "USAGE_CONVENTION",
    "Api",
    "Exchange",
    "ExchangeError",
    "RequestFacts",
    "read_exchange",
    "read_request",
    "unsupported_api",
]

API_NAMES: Final[tuple[Api, ...]] = APIS
SUPPORTED_APIS: Final[frozenset[Api]] = frozenset(APIS)
"""The wire APIs the proxy reads: all of them."""
USAGE_CONVENTION: Final[Mapping[Api, str]] = {api: wire_format(api).usage_convention for api in APIS}
"""How each api counts usage, in words (its record's ``usage_convention``)."""


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
    """The provider-reported usage (``None``: not reported, or not usable: see ``usage_problem``). A call that
    never finished keeps only the input side of what it reported (``protocol.usage_before_cut``)."""
    tool_calls: tuple[ToolCall, ...]
    """The tool calls the model asked for, under the agent's own tool names."""
    text: str
    finish_reason: str
    error: str | None = None
    """The provider's error (a non-2xx status, an in-stream error), ``None`` when it answered."""
    usage_problem: str | None = None
    """Why the usage it reported cannot be used (``prompt_tokens is -5``): ``usage`` is then ``None``."""
    served_model: str | None = None
    """The model the answer says served it (Chat's ``model``, Anthropic's ``message_start.message.model``,
    Responses' ``response.model``)."""
    system_fingerprint: str | None = None


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


def read_request(api: Api, body: bytes, path: str = "") -> Result[RequestFacts, ExchangeError]:
    """The facts of a request body of ``api`` (posted to ``path``, after the base URL): its model,
    conversation length, tool names and whether it streams.

    Where each sits is the record's (``alisio.core.harness.wire_format``): the conversation is ``messages``
    (Chat Completions, Anthropic), ``input`` (Responses: its items, or one message when it is a string) or
    ``contents`` (Gemini); a system prompt outside it is not counted. The model and ``stream`` are the
    body's, unless the path says them (Gemini's ``models/M:streamGenerateContent``).
    """
    data = _json(body)
    if not isinstance(data, Mapping):
        return Failure(ExchangeError(message="the request body is not a JSON object"))
    record = wire_format(api)
    messages = data.get(record.conversation)
    called = record.call_path(path) if path else None
    model = called.model if called is not None and called.model is not None else data.get("model")
    stream = called.stream if called is not None and called.stream is not None else data.get("stream") is True
    count = len(messages) if isinstance(messages, list) else 1 if isinstance(messages, str) else 0
    return Success(
        RequestFacts(
            model=model if isinstance(model, str) else "",
            message_count=count,
            tools=tuple(name for name, _schema in record.tool_schemas(data.get("tools"))),
            stream=stream,
        )
    )


def read_exchange(
    api: Api, request: bytes, status: int, content_type: str, response: bytes, path: str = ""
) -> Result[Exchange, ExchangeError]:
    """Read one call of ``api`` from its request body and its response (status, content type, body);
    ``path``: where it was posted, after the base URL (Gemini's names the model).

    Returns:
        The exchange; a non-2xx status or an in-stream error is an exchange with ``error`` set (the provider
        answered); ``Failure(ExchangeError)`` when the request is not JSON, the api is not supported, or a
        2xx response cannot be read.
    """
    problem = unsupported_api(api)
    if problem is not None:
        return Failure(ExchangeError(message=problem))
    return read_request(api, request, path).bind(
        lambda facts: _read_answer(api, facts, status, content_type, response)
    )


def _read_answer(
    api: Api, facts: RequestFacts, status: int, content_type: str, response: bytes
) -> Result[Exchange, ExchangeError]:
    if not 200 <= status < 300:
        return Success(_failed(facts, status, f"HTTP {status}: {_error_text(api, response)}"))
    match parse_response(api, response, content_type or None):
        case Success(answer):
            return Success(_answered(facts, status, answer))
        case Failure(error):
            return Failure(ExchangeError(message=str(error)))
    raise AssertionError("unreachable")  # pragma: no cover


def _error_text(api: Api, body: bytes) -> str:
    """The provider's message in an error body of ``api`` (its JSON error, else the body's start)."""
    parsed = parse_response(api, body, "application/json")
    message = parsed.value_or(None)
    text = message.error if message is not None else None
    return text or error_message(_json(body)) or body[:200].decode("utf-8", "replace") or "no body"


def _answered(facts: RequestFacts, status: int, answer: ParsedAnswer) -> Exchange:
    """A 2xx answer: an in-stream error or an answer that never finished is a failed exchange, which keeps
    the input side of the usage reported before it (those tokens were spent; an output count sent before the
    end is not the call's). Usage that cannot be used (``usage_problem``) is not kept: the exchange says why."""
    error = answer.error
    if error is None and answer.finish_reason is None:
        error = "the answer ended before it finished"
    problem = None if answer.usage is None else usage_problem(answer.usage)
    usage = None if problem is not None else answer.usage
    return Exchange(
        request=facts,
        status=status,
        usage=usage if error is None else usage_before_cut(usage),
        tool_calls=answer.tool_calls if error is None else (),
        text=answer.text,
        finish_reason="error" if error is not None or answer.finish_reason is None else answer.finish_reason,
        error=error,
        usage_problem=problem,
        served_model=answer.served_model,
        system_fingerprint=answer.system_fingerprint,
    )


def _failed(facts: RequestFacts, status: int, message: str) -> Exchange:
    return Exchange(
        request=facts, status=status, usage=None, tool_calls=(), text="", finish_reason="error", error=message
    )
