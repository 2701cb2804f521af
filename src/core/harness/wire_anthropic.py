"""The Anthropic Messages wire format (``POST {base_url}/messages``, streamed), as pure data transformations.

Two directions:

- ``request_body``: a ``ProviderRequest`` -> the JSON body (``stream: true``);
- ``AnthropicStream``: the SSE events of one streamed answer -> ``StreamEvent`` values; ``message_events``
  does the same for a whole non-streamed ``message``.

Rules the request keeps:

- the instructions are the ``system`` text; tool results, user text and any system message inside the
  conversation become blocks of ``user`` messages (consecutive ones merged into one message, as the API wants
  every ``tool_result`` of a turn in the one user message after it);
- an assistant turn is its reasoning blocks first (``thinking`` with its ``signature``, ``redacted_thinking``),
  verbatim as they were received, then its text, then its ``tool_use`` blocks: a ``tool_use`` sent without the
  thinking that led to it is a 400. Tool-call arguments that are a JSON object are sent as written; any other
  text (the model wrote invalid JSON, which the tool already refused) is sent as ``{}``;
- with ``cache`` on, ``cache_control: {"type": "ephemeral"}`` marks at most ``MAX_BREAKPOINTS`` (4) places: the
  system prompt, the last tool, and the last block of the last two user messages, so that each turn reads the
  cache the turn before wrote;
- ``max_tokens`` is the request's output limit (``DEFAULT_MAX_TOKENS`` when it has none: the API requires one);
- a reasoning effort becomes ``thinking: {"type": "enabled", "budget_tokens": B}`` with B from
  ``THINKING_BUDGETS`` (low 1024, medium 4096, high 16384), cut to ``max_tokens - 1`` (the budget must be
  below it); when that leaves less than the API's minimum of 1024, no thinking is asked for.

Rules the stream keeps:

- ``message_start``, ``content_block_start/delta/stop``, ``message_delta``, ``message_stop``, ``ping`` and
  ``error`` are read (the type inside the payload, else the SSE event name); other events are ignored;
- the order is the format's: a block or message event before ``message_start``, a second ``message_start``,
  ``message_stop`` while a content block is still open, or ``message_stop`` before any ``message_delta`` (the
  api always sends one, with the stop reason and output usage, before it: the end came before the blocks) is
  a ``ChunkError``, as malformed JSON is;
- ``text_delta`` is text, ``thinking_delta`` is reasoning, ``input_json_delta`` fragments are a tool call's
  arguments at the block's index; a ``tool_use`` that got no fragment has the arguments ``{}``;
- at ``content_block_stop`` a ``thinking`` block (its text and its ``signature_delta``) and a
  ``redacted_thinking`` block (its ``data``, as received) become a ``ReasoningItemEvent`` to send back;
- ``stop_reason`` becomes the finish reason in the Chat Completions words the harness reads: ``end_turn`` and
  ``stop_sequence`` -> ``stop``, ``tool_use`` -> ``tool_calls``, ``max_tokens`` -> ``length``; any other is
  kept as sent (``refusal``, ``pause_turn``);
- usage (``usage_from``): the fields of ``message_start`` updated by those of each ``message_delta``, recorded
  verbatim in ``Usage.provider_fields``, and normalised to the lab's convention: ``input_tokens`` there
  excludes cached input, so the lab's input is ``input_tokens + cache_read_input_tokens +
  cache_creation_input_tokens``, ``cachedInputTokens`` is the cache reads and ``cacheWriteInputTokens`` the
  cache writes;
- an ``error`` event (``{"type": "error", "error": {"type", "message"}}``) becomes a ``StreamErrorEvent``
  whose code is the error's type (``overloaded_error``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.harness.protocol import (
    AssistantMessage,
    FinishEvent,
    Message,
    ProviderRequest,
    ProviderResponse,
    ReasoningDelta,
    ReasoningItemEvent,
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
from alisio.core.harness.sse import ChunkError
from alisio.core.harness.wire_common import (
    code_of,
    excerpt,
    int_of,
    json_body,
    json_text,
    mapping,
    no_retry_hint,
    no_retry_info,
    positive,
    read_count,
    sampling_fields,
    served_by,
    sse_body,
    text_of,
    tools_by_name,
)
from alisio.core.harness.wire_format import WireFormat

PATH: Final = "/messages"
ANTHROPIC_VERSION: Final = "2023-06-01"
"""The ``anthropic-version`` header sent with every request."""
DEFAULT_MAX_TOKENS: Final = 8192
MAX_BREAKPOINTS: Final = 4
MIN_THINKING_BUDGET: Final = 1024
THINKING_BUDGETS: Final[Mapping[str, int]] = {"low": 1024, "medium": 4096, "high": 16384}
FINISH_REASONS: Final[Mapping[str, str]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}
_EPHEMERAL: Final = {"type": "ephemeral"}
_ORDERED: Final = frozenset(
    {"content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
)
"""The events that only come after ``message_start``."""

# --- request ------------------------------------------------------------------------------------------


def request_body(request: ProviderRequest) -> dict[str, object]:
    """The JSON body of a streamed Messages request (see the module docstring for the rules)."""
    max_tokens = request.max_output_tokens or DEFAULT_MAX_TOKENS
    body: dict[str, object] = {"model": request.model, "max_tokens": max_tokens, "stream": True}
    if request.instructions:
        system: dict[str, object] = {"type": "text", "text": request.instructions}
        if request.cache:
            system["cache_control"] = _EPHEMERAL
        body["system"] = [system]
    messages = _messages(request.messages)
    if request.cache:
        _mark_last_user_messages(messages, 2)
    body["messages"] = messages
    if request.tools:
        tools: list[dict[str, object]] = [
            {
                "name": tool.name,
                "description": tool.description,
                "input_schema": msgspec.Raw(tool.parameters_json.encode()),
            }
            for tool in request.tools
        ]
        if request.cache:
            tools[-1]["cache_control"] = _EPHEMERAL
        body["tools"] = tools
    budget = thinking_budget(request.reasoning_effort, max_tokens)
    if budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    body.update(sampling_fields(request, seed=False))
    return body


def thinking_budget(effort: str | None, max_tokens: int) -> int | None:
    """``thinking.budget_tokens`` for a reasoning effort, or ``None`` when no thinking is asked for."""
    if effort is None:
        return None
    budget = min(THINKING_BUDGETS.get(effort, THINKING_BUDGETS["medium"]), max_tokens - 1)
    return budget if budget >= MIN_THINKING_BUDGET else None


def _messages(conversation: tuple[Message, ...]) -> list[dict[str, object]]:
    """Messages API messages; consecutive user-role messages merged into one."""
    out: list[dict[str, object]] = []
    for message in conversation:
        role, blocks = _blocks(message)
        last = out[-1] if out else None
        if role == "user" and last is not None and last["role"] == "user":
            content = last["content"]
            assert isinstance(content, list)
            content.extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _blocks(message: Message) -> tuple[str, list[object]]:
    match message:
        case SystemMessage(content=text) | UserMessage(content=text):
            return "user", [{"type": "text", "text": text}]
        case ToolMessage(tool_call_id=call_id, content=text):
            result: dict[str, object] = {"type": "tool_result", "tool_use_id": call_id}
            if text:
                result["content"] = text
            return "user", [result]
        case AssistantMessage():
            return "assistant", _assistant_blocks(message)


def _assistant_blocks(message: AssistantMessage) -> list[object]:
    blocks: list[object] = [
        msgspec.Raw(block.wire.encode())
        for block in message.reasoning_blocks
        if block.kind in ("thinking", "redacted_thinking")
    ]
    if message.content or not message.tool_calls:
        blocks.append({"type": "text", "text": message.content or "(no text)"})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call.arguments)}
        for call in message.tool_calls
    )
    return blocks


def _input(arguments: str) -> object:
    try:
        decoded = msgspec.json.decode(arguments)
    except msgspec.DecodeError:
        return {}
    return msgspec.Raw(arguments.encode()) if isinstance(decoded, dict) else {}


def _mark_last_user_messages(messages: list[dict[str, object]], count: int) -> None:
    marked = 0
    for message in reversed(messages):
        content = message["content"]
        if message["role"] != "user" or not isinstance(content, list) or not content:
            continue
        last = content[-1]
        assert isinstance(last, dict)  # user blocks are built here as dicts; only assistant ones are Raw
        content[-1] = {**last, "cache_control": _EPHEMERAL}
        marked += 1
        if marked == count:
            return


# --- stream -------------------------------------------------------------------------------------------


class AnthropicStream:
    """The decoder of one streamed Messages answer, fed one SSE event at a time (module docstring rules)."""

    def __init__(self) -> None:
        self.done = False
        self._usage: dict[str, object] = {}
        self._blocks: dict[int, dict[str, object]] = {}
        self._thinking: dict[int, list[str]] = {}
        self._signature: dict[int, list[str]] = {}
        self._arguments_seen: set[int] = set()
        self._started = False
        self._open: set[int] = set()
        """Content blocks started and not yet stopped."""
        self._delta_seen = False
        """A ``message_delta`` arrived (the api sends one, with the stop reason, before ``message_stop``)."""

    def feed(self, event: str, data: str) -> Result[tuple[StreamEvent, ...], ChunkError]:
        """The stream events of one SSE event (``event`` is its name, ``message`` for an unnamed one)."""
        try:
            payload: object = msgspec.json.decode(data)
        except msgspec.DecodeError:
            if event == "error":
                return Success((StreamErrorEvent(message=excerpt(data) or "error event without a message"),))
            return Failure(ChunkError(message="malformed JSON in stream event", excerpt=excerpt(data)))
        if not isinstance(payload, dict):
            return Failure(ChunkError(message="stream event is not a JSON object", excerpt=excerpt(data)))
        kind = text_of(payload.get("type")) or event
        problem = self._order(kind, int_of(payload.get("index")))
        if problem is not None:
            return Failure(problem)
        return Success(self._events(kind, payload))

    def _order(self, kind: str, index: int | None) -> ChunkError | None:
        """An event out of the format's order: anything but ``ping`` and ``error`` before ``message_start``, a
        second ``message_start``, or ``message_stop`` while a content block is open or before any
        ``message_delta`` (its end came first)."""
        problem = None
        if kind == "message_start":
            problem = "a second message_start" if self._started else None
            self._started = True
        elif kind in _ORDERED and not self._started:
            problem = f"{kind} before message_start"
        elif kind == "content_block_start" and index is not None:
            self._open.add(index)
        elif kind == "content_block_stop" and index is not None:
            self._open.discard(index)
        elif kind == "message_delta":
            self._delta_seen = True
        elif kind == "message_stop" and self._open:
            problem = f"message_stop while content block {min(self._open)} is still open"
        elif kind == "message_stop" and not self._delta_seen:
            problem = "message_stop before message_delta"
        if problem is None:
            return None
        return ChunkError(message=f"stream events out of order: {problem}", excerpt=kind)

    def _events(self, kind: str, payload: Mapping[str, object]) -> tuple[StreamEvent, ...]:
        index = int_of(payload.get("index"))
        match kind:
            case "message_start":
                message = mapping(payload.get("message"))
                return (*served_by(message), *self._usage_event(mapping(message.get("usage"))))
            case "content_block_start" if index is not None:
                return self._start(index, mapping(payload.get("content_block")))
            case "content_block_delta" if index is not None:
                return self._delta(index, mapping(payload.get("delta")))
            case "content_block_stop" if index is not None:
                return self._stop(index)
            case "message_delta":
                reason = text_of(mapping(payload.get("delta")).get("stop_reason"))
                finish: tuple[StreamEvent, ...] = (
                    (FinishEvent(reason=FINISH_REASONS.get(reason, reason)),) if reason else ()
                )
                return finish + self._usage_event(mapping(payload.get("usage")))
            case "message_stop":
                self.done = True
            case "error":
                return (error_event(payload),)
        return ()

    def _usage_event(self, usage: Mapping[str, object]) -> tuple[StreamEvent, ...]:
        if not usage:
            return ()
        self._usage.update(usage)
        return (UsageEvent(usage=usage_from(self._usage)),)

    def _start(self, index: int, block: Mapping[str, object]) -> tuple[StreamEvent, ...]:
        self._blocks[index] = dict(block)
        match block.get("type"):
            case "text":
                text = text_of(block.get("text"))
                return (TextDelta(text=text),) if text else ()
            case "tool_use":
                call = ToolCallDelta(
                    index=index, id=text_of(block.get("id")), name=text_of(block.get("name"))
                )
                return (call,)
            case "thinking":
                text = text_of(block.get("thinking"))
                self._thinking[index] = [text or ""]
                self._signature[index] = [text_of(block.get("signature")) or ""]
                return (ReasoningDelta(text=text),) if text else ()
        return ()

    def _delta(self, index: int, delta: Mapping[str, object]) -> tuple[StreamEvent, ...]:
        match delta.get("type"):
            case "text_delta":
                text = text_of(delta.get("text"))
                return (TextDelta(text=text),) if text else ()
            case "input_json_delta":
                part = delta.get("partial_json")
                if not isinstance(part, str) or not part:
                    return ()
                self._arguments_seen.add(index)
                return (ToolCallDelta(index=index, arguments=part),)
            case "thinking_delta":
                text = text_of(delta.get("thinking"))
                if text is None:
                    return ()
                self._thinking.setdefault(index, []).append(text)
                return (ReasoningDelta(text=text),)
            case "signature_delta":
                signature = delta.get("signature")
                if isinstance(signature, str):
                    self._signature.setdefault(index, []).append(signature)
        return ()

    def _stop(self, index: int) -> tuple[StreamEvent, ...]:
        block = self._blocks.get(index, {})
        match block.get("type"):
            case "tool_use" if index not in self._arguments_seen:
                started = block.get("input")
                arguments = json_text(started) if isinstance(started, dict) else "{}"
                return (ToolCallDelta(index=index, arguments=arguments),)
            case "thinking":
                wire = {
                    "type": "thinking",
                    "thinking": "".join(self._thinking.get(index, ())),
                    "signature": "".join(self._signature.get(index, ())),
                }
                return (ReasoningItemEvent(kind="thinking", wire=json_text(wire)),)
            case "redacted_thinking":
                return (ReasoningItemEvent(kind="redacted_thinking", wire=json_text(block)),)
        return ()


def message_events(message: Mapping[str, object]) -> tuple[StreamEvent, ...]:
    """The events equivalent to one non-streamed ``message`` (or an error body)."""
    if message.get("type") == "error":
        return (error_event(message),)
    usage = mapping(message.get("usage"))
    events: list[StreamEvent] = [*served_by(message)]
    events.extend([UsageEvent(usage=usage_from(usage))] if usage else [])
    content = message.get("content")
    for index, block in enumerate(content if isinstance(content, list) else ()):
        events.extend(_block_events(index, mapping(block)))
    reason = text_of(message.get("stop_reason"))
    if reason:
        events.append(FinishEvent(reason=FINISH_REASONS.get(reason, reason)))
    return tuple(events)


def _block_events(index: int, block: Mapping[str, object]) -> tuple[StreamEvent, ...]:
    match block.get("type"):
        case "text":
            text = text_of(block.get("text"))
            return (TextDelta(text=text),) if text else ()
        case "tool_use":
            given = block.get("input")
            arguments = json_text(given) if isinstance(given, dict) else "{}"
            name = text_of(block.get("name"))
            return (ToolCallDelta(index=index, id=text_of(block.get("id")), name=name, arguments=arguments),)
        case "thinking":
            text = text_of(block.get("thinking"))
            item = ReasoningItemEvent(kind="thinking", wire=json_text(block))
            return (ReasoningDelta(text=text), item) if text else (item,)
        case "redacted_thinking":
            return (ReasoningItemEvent(kind="redacted_thinking", wire=json_text(block)),)
    return ()


def error_event(payload: Mapping[str, object]) -> StreamErrorEvent:
    """An ``error`` payload as a stream error (code: the error's ``type``)."""
    error = mapping(payload.get("error"))
    message = text_of(error.get("message")) or text_of(payload.get("message"))
    code = code_of(error.get("type")) or code_of(error.get("code"))
    return StreamErrorEvent(message=message or "an error occurred during streaming", code=code)


def usage_from(usage: Mapping[str, object]) -> Usage:
    """Normalise a Messages ``usage`` object to the lab's convention (input includes cached input)."""
    problems: list[str] = []
    uncached = read_count(usage, "input_tokens", "", problems)
    reads = read_count(usage, "cache_read_input_tokens", "", problems)
    writes = read_count(usage, "cache_creation_input_tokens", "", problems)
    output = read_count(usage, "output_tokens", "", problems)
    total_input = None if uncached is None else uncached + (reads or 0) + (writes or 0)
    return Usage(
        input_tokens=total_input,
        output_tokens=output,
        total_tokens=None if total_input is None or output is None else total_input + output,
        cached_input_tokens=reads,
        cache_write_input_tokens=writes,
        provider_fields=json_text(usage),
        invalid="; ".join(problems) or None,
    )


# --- the record ---------------------------------------------------------------------------------------

_STOP_REASONS: Final[Mapping[str, str]] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
"""The lab's finish reasons in Anthropic's words (``render``)."""


def error_body(status: int, kind: str | None, message: str) -> bytes:
    """An error in Anthropic's shape (a 401 is an ``authentication_error``; ``kind`` ``None`` an
    ``api_error``)."""
    shown = "authentication_error" if status == 401 else kind or "api_error"
    return msgspec.json.encode({"type": "error", "error": {"type": shown, "message": message}})


def _tool_result_item(item: Mapping[str, object]) -> bool:
    content = item.get("content")
    blocks = content if isinstance(content, list) else []
    return item.get("role") == "user" and any(mapping(b).get("type") == "tool_result" for b in blocks)


def render(model: str, answer: ProviderResponse, stream: bool) -> tuple[str, bytes]:
    """``answer`` as the Messages api sends it: a ``message``, or its events up to ``message_stop``."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": answer.text}] if answer.text else []
    blocks += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": _object(c.arguments)}
        for c in answer.tool_calls
    ]
    stop = _STOP_REASONS.get(answer.finish_reason, "end_turn")
    usage = answer.usage
    counts: dict[str, int] = {}
    if usage is not None:  # no usage object at all: "not reported" (zeros would be a report of 0)
        cached = usage.cached_input_tokens or 0
        counts = {"input_tokens": (usage.input_tokens or 0) - cached, "cache_read_input_tokens": cached}
        counts["cache_creation_input_tokens"] = 0
    output = {"output_tokens": usage.output_tokens or 0} if usage is not None else {}
    message: dict[str, Any] = {"id": "msg_mock", "type": "message", "role": "assistant", "model": model}
    message["stop_reason"] = None
    if not stream:
        whole = message | {"content": blocks, "stop_reason": stop}
        return "application/json", json_body(whole | ({"usage": counts | output} if usage else {}))
    start: dict[str, Any] = message | {"content": []}
    if usage is not None:
        start["usage"] = counts | {"output_tokens": 1}
    events: list[tuple[str | None, object]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(blocks):
        text = block["type"] == "text"
        empty = {"type": "text", "text": ""} if text else block | {"input": {}}
        delta = (
            {"type": "text_delta", "text": block["text"]}
            if text
            else {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        )
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": empty}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    end = {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}}
    events += [
        ("message_delta", end | ({"usage": output} if usage else {})),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "text/event-stream", sse_body(events)


def _object(arguments: str) -> object:
    """A tool call's arguments as an ``input`` object (text that is not a JSON object is wrapped)."""
    try:
        value = msgspec.json.decode(arguments)
    except msgspec.DecodeError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}


def _body_events(body: Mapping[str, object]) -> tuple[StreamEvent, ...] | None:
    return message_events(body) if body.get("type") in ("message", "error") else None


FORMAT: Final = WireFormat(
    api="anthropic",
    title="Anthropic Messages",
    default_id="anthropic",
    path=lambda _model: PATH,
    model_calls=((PATH, None),),
    side_paths=(("POST", "/messages/count_tokens"), ("GET", "/models")),
    version="/v1",
    sdk_adds_version=True,
    key_header="x-api-key",
    key_prefix="",
    format_headers=(("anthropic-version", ANTHROPIC_VERSION),),
    key_env="ANTHROPIC_API_KEY",
    base_url_env="ANTHROPIC_BASE_URL",
    conversation="messages",
    tool_schemas=tools_by_name,
    assistant_item=lambda item: item.get("role") == "assistant",
    tool_result_item=_tool_result_item,
    sampling=("temperature", "top_p"),
    max_temperature=1.0,
    output_limit=lambda body: positive(body.get("max_tokens")),
    request_body=lambda request, _base_url: request_body(request),
    stream_decoder=AnthropicStream,
    body_events=_body_events,
    retry_after=no_retry_hint,
    error_body=error_body,
    fault_kinds={"429": "rate_limit_error", "500": None, "503": "overloaded_error"},
    request_id_header="request-id",
    retry_info=no_retry_info,
    render=render,
    token_count=lambda count: msgspec.json.encode({"input_tokens": count}),
    usage_convention="input_tokens excludes cache_read_input_tokens and cache_creation_input_tokens",
)
"""The Messages record (``alisio.core.harness.wire_format``)."""
