"""The wire formats, registered by name: which apis there are, their records, and what one answer said.

``Api`` names a wire format (``provider.api`` of config.toml). Each has one core module, which ends with the
format's record (``alisio.core.harness.wire_format.WireFormat``: its paths, key header, environment variables,
request layout, sampling keys, codec and usage convention); ``FORMATS`` registers the records, and every
per-api fact elsewhere is read off them (``wire_format(api)``):

| api | module | model call, after the base URL |
|---|---|---|
| ``openai-chat`` | ``alisio.core.harness.sse`` | ``/chat/completions`` |
| ``openai-responses`` | ``alisio.core.harness.wire_responses`` | ``/responses`` |
| ``anthropic`` | ``alisio.core.harness.wire_anthropic`` | ``/messages`` |
| ``gemini`` | ``alisio.core.harness.wire_gemini`` | ``/models/{model}:streamGenerateContent?alt=sse`` |

Each module builds a request body from a ``ProviderRequest``, decodes a streamed answer one SSE event at a
time (``stream_decoder``: an object with ``feed(event, data)`` and ``done``), decodes a non-streamed answer
(``body_events``), and normalises usage to the lab's convention: ``inputTokens`` includes cached input,
``cachedInputTokens`` is cache reads, ``cacheWriteInputTokens`` cache writes, ``reasoningTokens`` reasoning
(part of ``outputTokens``); the provider's own usage object is kept verbatim in ``providerFields`` (all but
Chat Completions).

Besides its model call, a format has a few requests an agent of it makes that are no model call and spend no
tokens (the record's ``side_paths``: ``GET /models``; Anthropic's ``POST /messages/count_tokens``): the
recording proxy forwards those and nothing else (``alisio.core.agents.routes``).

For readers of recorded traffic (a recording proxy): ``parse_response(api, body, content_type)`` reads one
complete response body, streamed (``text/event-stream``) or not, into a ``ParsedAnswer``: text, reasoning,
tool calls, finish reason, usage, and the provider's error, if any. It never raises; a body it cannot read at
all is a ``Failure(ChunkError)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, get_args

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.harness import sse, wire_anthropic, wire_gemini, wire_responses
from alisio.core.harness.protocol import (
    FinishEvent,
    ReasoningBlock,
    StreamErrorEvent,
    StreamEvent,
    ToolCall,
    Usage,
    UsageEvent,
    assemble,
)
from alisio.core.harness.sse import ChunkError
from alisio.core.harness.wire_common import excerpt, sse_messages
from alisio.core.harness.wire_format import StreamDecoder, WireFormat

__all__ = [
    "APIS",
    "DEFAULT_API",
    "DEFAULT_API_KEY_ENVS",
    "FORMATS",
    "FORMAT_IDS",
    "Api",
    "ParsedAnswer",
    "StreamDecoder",
    "body_events",
    "parse_events",
    "parse_response",
    "path_of",
    "side_paths",
    "stream_decoder",
    "stream_events",
    "wire_format",
]

Api = Literal["openai-chat", "openai-responses", "anthropic", "gemini"]
APIS: Final[tuple[Api, ...]] = get_args(Api)
DEFAULT_API: Final[Api] = "openai-chat"
FORMATS: Final[Mapping[Api, WireFormat]] = {
    "openai-chat": sse.FORMAT,
    "openai-responses": wire_responses.FORMAT,
    "anthropic": wire_anthropic.FORMAT,
    "gemini": wire_gemini.FORMAT,
}
"""The record of each wire format (the one registration of a format)."""
DEFAULT_API_KEY_ENVS: Final[Mapping[Api, str]] = {api: record.key_env for api, record in FORMATS.items()}
"""The variable a key is read from when ``provider.apiKeyEnv`` names none, by api (the records' ``key_env``)."""
FORMAT_IDS: Final[Mapping[str, Api]] = {api: api for api in APIS if api != DEFAULT_API}
"""``provider.id`` values that read as a wire format: with no ``provider.api`` written, the configuration
refuses them, so that ``id = "anthropic"`` never silently speaks Chat Completions."""


def wire_format(api: Api) -> WireFormat:
    """The record of ``api``."""
    return FORMATS[api]


def path_of(api: Api, model: str = "") -> str:
    """Where the format's streamed model calls for ``model`` are posted, after the base URL
    (``/chat/completions``)."""
    return FORMATS[api].path(model)


def side_paths(api: Api) -> tuple[tuple[str, str], ...]:
    """The format's requests that are no model call and spend no tokens, as ``(method, path pattern after the
    base URL)``: listing the models, and Anthropic's token count."""
    return FORMATS[api].side_paths


def stream_decoder(api: Api) -> StreamDecoder:
    """A fresh decoder for one streamed answer in ``api``."""
    return FORMATS[api].stream_decoder()


def body_events(api: Api, body: Mapping[str, object]) -> tuple[StreamEvent, ...] | None:
    """The events of one non-streamed JSON answer (or error body); ``None`` when it is not one of ``api``."""
    return FORMATS[api].body_events(body)


def stream_events(api: Api, body: bytes) -> Result[tuple[StreamEvent, ...], ChunkError]:
    """Every stream event of a whole ``text/event-stream`` body in ``api``.

    An event with data after the format's end event (``[DONE]``, ``message_stop``, ``response.completed``) is a
    ``ChunkError``, as malformed JSON is: a client reading the whole body (an agent) would act on what the
    end hid from the record. After an error (which ends the answer), later events are ignored.
    """
    decoder = stream_decoder(api)
    events: list[StreamEvent] = []
    for message in sse_messages(body):
        if decoder.done:
            if not message.data.strip() or any(isinstance(e, StreamErrorEvent) for e in events):
                continue  # after an error end, the provider may still say more (OpenAI: response.failed)
            problem = "a stream event after the stream's end event"
            return Failure(ChunkError(message=problem, excerpt=excerpt(message.data)))
        match decoder.feed(message.event, message.data):
            case Success(found):
                events.extend(found)
            case Failure(error):
                return Failure(error)
    return Success(tuple(events))


class ParsedAnswer(Frozen, frozen=True, kw_only=True):
    """What one provider answer said, as far as it went (an error does not hide the usage before it)."""

    text: str
    reasoning: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    """``None`` when the answer never finished (cut off, or it ended in an error)."""
    usage: Usage | None
    """The last usage reported (even one whose counts cannot be used: see ``usage_problem``)."""
    usage_problem: str | None = None
    error: str | None = None
    """The provider's error message (an in-stream error event, or an error body)."""
    error_code: str | None = None
    reasoning_blocks: tuple[ReasoningBlock, ...] = ()
    served_model: str | None = None
    """The model the answer named (``ServedEvent``), ``None`` when it named none."""
    system_fingerprint: str | None = None


def parse_events(events: tuple[StreamEvent, ...]) -> ParsedAnswer:
    """Fold stream events into a ``ParsedAnswer``, never failing (see ``protocol.assemble`` for the fold)."""
    errors = [event for event in events if isinstance(event, StreamErrorEvent)]
    clean = tuple(event for event in events if not isinstance(event, StreamErrorEvent))
    finishes = [event.reason for event in clean if isinstance(event, FinishEvent)]
    usages = [event.usage for event in clean if isinstance(event, UsageEvent)]
    folded = assemble(clean if finishes else (*clean, FinishEvent(reason="")))
    assert isinstance(folded, Success)  # no error event, and a finish: assemble cannot fail
    response = folded.unwrap()
    first_error = errors[0] if errors else None
    return ParsedAnswer(
        text=response.text,
        reasoning=response.reasoning,
        tool_calls=response.tool_calls,
        finish_reason=finishes[-1] if finishes else None,
        usage=usages[-1] if usages else None,
        usage_problem=response.usage_problem,
        error=None if first_error is None else first_error.message,
        error_code=None if first_error is None else first_error.code,
        reasoning_blocks=response.reasoning_blocks,
        served_model=response.served_model,
        system_fingerprint=response.system_fingerprint,
    )


def parse_response(
    api: Api, body: bytes, content_type: str | None = None
) -> Result[ParsedAnswer, ChunkError]:
    """Read one complete response body of ``api``: a ``text/event-stream`` body, or a JSON answer.

    Without a content type, a body whose first non-blank byte is ``{`` is read as JSON, anything else as SSE.
    """
    streamed = "text/event-stream" in content_type if content_type else not body.lstrip().startswith(b"{")
    if streamed:
        return stream_events(api, body).map(parse_events)
    try:
        decoded: object = msgspec.json.decode(body)
    except msgspec.DecodeError:
        text = body.decode("utf-8", errors="replace")
        return Failure(ChunkError(message="the response body is not JSON", excerpt=excerpt(text)))
    events = body_events(api, decoded) if isinstance(decoded, dict) else None
    if events is None:
        text = body.decode("utf-8", errors="replace")
        return Failure(ChunkError(message=f"the response body is not an {api} answer", excerpt=excerpt(text)))
    return Success(parse_events(events))
