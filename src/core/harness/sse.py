"""The OpenAI-compatible Chat Completions wire format, as pure data transformations.

Two directions:

- ``chat_request_body``: a ``ProviderRequest`` -> the JSON body of ``POST {base_url}/chat/completions``;
- ``decode_data`` / ``chunk_events``: one SSE ``data:`` payload (a ``chat.completion.chunk``) -> the
  ``StreamEvent`` values it carries. ``completion_events`` does the same for a whole non-streamed
  ``chat.completion`` (servers that ignore ``stream: true``).

Rules the parser keeps (checked against the recordings in tests/fixtures/provider-streams):

- only choice 0 is read (the harness always asks for ``n = 1``); a chunk with ``choices: []`` may still carry
  usage;
- ``content`` and ``reasoning_content`` / ``reasoning`` that are null, missing or empty produce no event;
- a ``finish_reason`` that is null produces no event (several servers send null after the real one);
- ``usage`` null or missing produces no event; a usage object becomes a ``UsageEvent`` each time it is sent,
  and ``alisio.core.harness.protocol.assemble`` keeps the last one. A count the provider did not send stays ``None``;
  a count that is negative, not an integer or above ``MAX_TOKEN_COUNT`` makes the whole usage unusable
  (``Usage.invalid`` names it);
- tool-call fragments keep their ``index`` (or their position when a server omits it); ``id`` and ``name`` are
  only set when non-empty; arguments sent as a JSON object instead of text are re-encoded as JSON text;
- a payload with a truthy top-level ``error`` (OpenRouter, vLLM, OpenAI) or any payload of an ``event: error``
  (Groq) becomes a ``StreamErrorEvent``; deltas and usage in the same payload come first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal
from urllib.parse import urlsplit

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.harness.protocol import (
    AssistantMessage,
    FinishEvent,
    Message,
    ProviderRequest,
    ProviderResponse,
    ReasoningDelta,
    ServedEvent,
    StreamErrorEvent,
    StreamEvent,
    SystemMessage,
    TextDelta,
    ToolCallDelta,
    ToolMessage,
    Usage,
    UsageEvent,
    UserMessage,
)
from alisio.core.harness.wire_common import ChunkError as ChunkError
from alisio.core.harness.wire_common import code_of as _code
from alisio.core.harness.wire_common import excerpt as _excerpt
from alisio.core.harness.wire_common import int_of as _int
from alisio.core.harness.wire_common import (
    json_body,
    no_retry_hint,
    no_retry_info,
    openai_error_body,
    sampling_fields,
    sse_body,
    tools_by_name,
)
from alisio.core.harness.wire_common import positive as _positive
from alisio.core.harness.wire_common import read_count as _count
from alisio.core.harness.wire_common import text_of as _text
from alisio.core.harness.wire_format import WireFormat

DONE = "[DONE]"
"""The data payload that ends an OpenAI-style stream."""

PATH = "/chat/completions"
"""Where requests are posted, after the base URL."""

LimitField = Literal["max_tokens", "max_completion_tokens"]


# --- request ------------------------------------------------------------------------------------------


def chat_request_body(
    request: ProviderRequest, *, limit_field: LimitField = "max_tokens"
) -> dict[str, object]:
    """Build the JSON body of a streamed Chat Completions request.

    Args:
        request: what the harness asks (instructions become the leading system message).
        limit_field: which name carries ``max_output_tokens``: ``max_tokens`` (understood by vLLM, llama.cpp,
            Ollama, DeepSeek, OpenRouter) or ``max_completion_tokens`` (required by OpenAI's reasoning models).

    Returns:
        A dict ready for ``msgspec.json.encode``. Tool schemas are embedded as ``msgspec.Raw`` so the bytes
        of ``ToolSpec.parameters_json`` reach the provider unchanged. Assistant reasoning is not sent back.
    """
    messages: list[dict[str, object]] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    messages.extend(_message_json(message) for message in request.messages)
    body: dict[str, object] = {
        "model": request.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": msgspec.Raw(tool.parameters_json.encode()),
                },
            }
            for tool in request.tools
        ]
    if request.max_output_tokens is not None:
        body[limit_field] = request.max_output_tokens
    if request.reasoning_effort is not None:
        body["reasoning_effort"] = request.reasoning_effort
    body.update(sampling_fields(request, seed=True))
    return body


def _message_json(message: Message) -> dict[str, object]:
    match message:
        case SystemMessage(content=content):
            return {"role": "system", "content": content}
        case UserMessage(content=content):
            return {"role": "user", "content": content}
        case AssistantMessage(content=content, tool_calls=calls):
            if not calls:
                return {"role": "assistant", "content": content or ""}
            return {
                "role": "assistant",
                # OpenAI wants null (not "") beside tool calls when the model wrote no text.
                "content": content or None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                    for call in calls
                ],
            }
        case ToolMessage(tool_call_id=call_id, content=content):
            return {"role": "tool", "tool_call_id": call_id, "content": content}


# --- stream -------------------------------------------------------------------------------------------


def decode_data(data: str, sse_event: str | None = None) -> Result[tuple[StreamEvent, ...], ChunkError]:
    """Decode one SSE ``data`` payload (not ``[DONE]``) into stream events.

    Args:
        data: the payload text (the ``data:`` lines of one event, joined by newlines).
        sse_event: the SSE ``event:`` name, ``None`` or ``message`` for ordinary chunks.

    Returns:
        The events of the chunk; ``Failure(ChunkError)`` when the payload is not a JSON object, except on an
        ``event: error``, whose non-JSON payload is itself the error message.
    """
    is_error_event = sse_event == "error"
    try:
        decoded: object = msgspec.json.decode(data)
    except msgspec.DecodeError:
        if is_error_event:
            return Success((StreamErrorEvent(message=_excerpt(data) or "error event without a message"),))
        return Failure(ChunkError(message="malformed JSON in stream chunk", excerpt=_excerpt(data)))
    if not isinstance(decoded, dict):
        if is_error_event:
            return Success((StreamErrorEvent(message=_excerpt(data)),))
        return Failure(ChunkError(message="stream chunk is not a JSON object", excerpt=_excerpt(data)))
    events = chunk_events(decoded)
    if is_error_event and not any(isinstance(event, StreamErrorEvent) for event in events):
        message = _text(decoded.get("message")) or _excerpt(data)
        events = (*events, StreamErrorEvent(message=message, code=_code(decoded.get("code"))))
    return Success(events)


class ChatStream:
    """The decoder of one streamed Chat Completions response, fed one SSE event at a time.

    ``done`` turns true at ``data: [DONE]``; an empty ``message`` event is skipped. The same interface as
    ``alisio.core.harness.wire_anthropic.AnthropicStream`` and ``wire_responses.ResponsesStream``.
    """

    def __init__(self) -> None:
        self.done = False

    def feed(self, event: str, data: str) -> Result[tuple[StreamEvent, ...], ChunkError]:
        """The stream events of one SSE event (``event`` is ``message`` for an unnamed one)."""
        if data.strip() == DONE:
            self.done = True
            return Success(())
        if not data and event == "message":
            return Success(())
        return decode_data(data, None if event == "message" else event)


def body_events(body: Mapping[str, object]) -> tuple[StreamEvent, ...] | None:
    """The events of a non-streamed answer (a ``chat.completion`` or an error body), ``None`` for another
    JSON object."""
    if "choices" in body or "error" in body:
        return completion_events(body)
    return None


def chunk_events(chunk: Mapping[str, object]) -> tuple[StreamEvent, ...]:
    """The events one decoded ``chat.completion.chunk`` carries, in stream order."""
    return _payload_events(chunk, "delta")


def completion_events(completion: Mapping[str, object]) -> tuple[StreamEvent, ...]:
    """The events equivalent to one non-streamed ``chat.completion`` (its choice 0 ``message``)."""
    return _payload_events(completion, "message")


def _payload_events(payload: Mapping[str, object], content_key: str) -> tuple[StreamEvent, ...]:
    """Choice 0's ``content_key`` (``delta`` or ``message``) and finish reason, then usage, then an error."""
    events: list[StreamEvent] = []
    model, system = _text(payload.get("model")), _text(payload.get("system_fingerprint"))
    if model or system:
        events.append(ServedEvent(model=model or None, system_fingerprint=system or None))
    choice = _first_choice(payload.get("choices"))
    if choice is not None:
        content = choice.get(content_key)
        if isinstance(content, Mapping):
            events.extend(_delta_events(content))
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            events.append(FinishEvent(reason=finish))
    usage = payload.get("usage")
    if isinstance(usage, Mapping):
        events.append(UsageEvent(usage=usage_from(usage)))
    error = payload.get("error")
    if error:
        events.append(_error_event(error))
    return tuple(events)


def usage_from(usage: Mapping[str, object]) -> Usage:
    """Read a Chat Completions ``usage`` object; counts it does not carry stay ``None``.

    Cached input is ``prompt_tokens_details.cached_tokens``, else DeepSeek's ``prompt_cache_hit_tokens``;
    reasoning tokens are ``completion_tokens_details.reasoning_tokens``. A count is an integer from 0 to
    ``MAX_TOKEN_COUNT`` (a float with an integer value is read as that integer); any other value it sends
    (``-5``, ``12.5``, ``"12"``, ``true``, ``10**30``) is named in ``Usage.invalid``, and the whole usage is then treated as unreported
    (``alisio.core.harness.protocol.usage_problem``).
    """
    problems: list[str] = []
    prompt_details = usage.get("prompt_tokens_details")
    completion_details = usage.get("completion_tokens_details")
    cached = (
        _count(prompt_details, "cached_tokens", "prompt_tokens_details.", problems)
        if isinstance(prompt_details, Mapping)
        else None
    )
    if cached is None:
        cached = _count(usage, "prompt_cache_hit_tokens", "", problems)
    reasoning = (
        _count(completion_details, "reasoning_tokens", "completion_tokens_details.", problems)
        if isinstance(completion_details, Mapping)
        else None
    )
    return Usage(
        input_tokens=_count(usage, "prompt_tokens", "", problems),
        output_tokens=_count(usage, "completion_tokens", "", problems),
        total_tokens=_count(usage, "total_tokens", "", problems),
        cached_input_tokens=cached,
        reasoning_tokens=reasoning,
        invalid="; ".join(problems) or None,
    )


def error_message(body: object) -> str | None:
    """The human message of an error body: ``{"error": {"message"}}``, ``{"error": "..."}`` or ``{"message"}``."""
    if not isinstance(body, Mapping):
        return None
    error = body.get("error")
    if isinstance(error, Mapping):
        return _text(error.get("message"))
    if isinstance(error, str) and error:
        return error
    return _text(body.get("message"))


def _first_choice(choices: object) -> Mapping[str, object] | None:
    if not isinstance(choices, list) or not choices:
        return None
    for choice in choices:
        if isinstance(choice, Mapping) and choice.get("index", 0) == 0:
            return choice
    return None


def _delta_events(delta: Mapping[str, object]) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    reasoning = delta.get("reasoning_content")
    if not isinstance(reasoning, str):
        reasoning = delta.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        events.append(ReasoningDelta(text=reasoning))
    content = delta.get("content")
    if isinstance(content, str) and content:
        events.append(TextDelta(text=content))
    calls = delta.get("tool_calls")
    if isinstance(calls, list):
        for position, call in enumerate(calls):
            if isinstance(call, Mapping):
                events.append(_tool_call_delta(call, position))
    return events


def _tool_call_delta(call: Mapping[str, object], position: int) -> ToolCallDelta:
    index = _int(call.get("index"))
    function = call.get("function")
    name: str | None = None
    arguments = ""
    if isinstance(function, Mapping):
        name = _text(function.get("name"))
        raw = function.get("arguments")
        if isinstance(raw, str):
            arguments = raw
        elif raw is not None:
            arguments = msgspec.json.encode(raw).decode()
    return ToolCallDelta(
        index=position if index is None else index, id=_text(call.get("id")), name=name, arguments=arguments
    )


def _error_event(error: object) -> StreamErrorEvent:
    if isinstance(error, Mapping):
        message = _text(error.get("message")) or "an error occurred during streaming"
        return StreamErrorEvent(message=message, code=_code(error.get("code")))
    if isinstance(error, str):
        return StreamErrorEvent(message=error)
    return StreamErrorEvent(message="an error occurred during streaming")


# --- the record ---------------------------------------------------------------------------------------


def limit_field_for(base_url: str) -> LimitField:
    """``max_completion_tokens`` for api.openai.com (its reasoning models require it), else ``max_tokens``."""
    try:
        host = urlsplit(base_url).hostname
    except ValueError:
        host = None
    return "max_completion_tokens" if host == "api.openai.com" else "max_tokens"


def _output_limit(body: Mapping[str, object]) -> int | None:
    """``max_completion_tokens`` else ``max_tokens``, times ``n`` (``None``: no bound declared)."""
    declared = next((body[name] for name in ("max_completion_tokens", "max_tokens") if name in body), None)
    limit = _positive(declared)
    if limit is None or "n" not in body:
        return limit
    choices = _positive(body.get("n"))
    return None if choices is None else limit * choices


def render(model: str, answer: ProviderResponse, stream: bool) -> tuple[str, bytes]:
    """``answer`` as a Chat Completions server sends it: a ``chat.completion``, or chunks then ``[DONE]``."""
    calls = [
        {"index": i, "id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for i, c in enumerate(answer.tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if calls:
        message["tool_calls"] = calls
    usage = _usage_json(answer.usage)
    if not stream:
        for call in calls:
            call.pop("index")
        choice = {"index": 0, "message": message, "finish_reason": answer.finish_reason}
        whole = {"id": "chatcmpl-mock", "object": "chat.completion", "model": model, "choices": [choice]}
        return "application/json", json_body(whole | ({"usage": usage} if usage else {}))
    base = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model}
    chunks: list[tuple[str | None, object]] = [
        (None, base | {"choices": [{"index": 0, "delta": message, "finish_reason": None}]}),
        (None, base | {"choices": [{"index": 0, "delta": {}, "finish_reason": answer.finish_reason}]}),
    ]
    if usage:
        chunks.append((None, base | {"choices": [], "usage": usage}))
    return "text/event-stream", sse_body(chunks) + b"data: [DONE]\n\n"


def _usage_json(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    out: dict[str, Any] = {
        "prompt_tokens": usage.input_tokens or 0,
        "completion_tokens": usage.output_tokens or 0,
    }
    out["total_tokens"] = usage.total_tokens or out["prompt_tokens"] + out["completion_tokens"]
    if usage.cached_input_tokens is not None:
        out["prompt_tokens_details"] = {"cached_tokens": usage.cached_input_tokens}
    if usage.reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return out


FORMAT: Final = WireFormat(
    api="openai-chat",
    title="OpenAI Chat Completions",
    default_id="openai_compat",
    path=lambda _model: PATH,
    model_calls=((PATH, None),),
    side_paths=(("GET", "/models"),),
    version="/v1",
    sdk_adds_version=False,
    key_header="Authorization",
    key_prefix="Bearer ",
    format_headers=(),
    key_env="OPENAI_API_KEY",
    base_url_env="OPENAI_BASE_URL",
    conversation="messages",
    tool_schemas=tools_by_name,
    assistant_item=lambda item: item.get("role") == "assistant",
    tool_result_item=lambda item: item.get("role") == "tool",
    sampling=("temperature", "top_p", "seed"),
    max_temperature=2.0,
    output_limit=_output_limit,
    request_body=lambda request, base_url: chat_request_body(request, limit_field=limit_field_for(base_url)),
    stream_decoder=ChatStream,
    body_events=body_events,
    retry_after=no_retry_hint,
    error_body=openai_error_body,
    fault_kinds={"429": "rate_limit_exceeded", "500": None, "503": None},
    request_id_header="x-request-id",
    retry_info=no_retry_info,
    render=render,
    token_count=lambda count: msgspec.json.encode({"input_tokens": count}),
    usage_convention="prompt_tokens includes cached input (prompt_tokens_details.cached_tokens); "
    "completion_tokens includes reasoning (completion_tokens_details.reasoning_tokens)",
)
"""The Chat Completions record (``alisio.core.harness.wire_format``)."""
