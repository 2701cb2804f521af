"""The OpenAI Responses wire format (``POST {base_url}/responses``, streamed), as pure data transformations.

Two directions:

- ``request_body``: a ``ProviderRequest`` -> the JSON body;
- ``ResponsesStream``: the SSE events of one streamed answer -> ``StreamEvent`` values; ``response_events``
  does the same for a whole non-streamed ``response``.

Rules the request keeps:

- ``store: false`` and ``include: ["reasoning.encrypted_content"]``: nothing is kept on the server, and
  ``previous_response_id`` is never sent. The conversation is sent whole every time (so replay is
  deterministic): the instructions as ``instructions``, user text as ``user`` input messages, an assistant turn
  as its ``reasoning`` items first (verbatim as received, with their ``encrypted_content``: without them the
  next call with tools fails), then its text (a ``message`` item, typed: llama.cpp's server refuses an
  assistant message without ``"type": "message"``), then one ``function_call`` item per tool call; a tool
  result is a ``function_call_output`` item. A system message inside the conversation is a ``system`` input
  message;
- tools are ``function`` tools (``strict: false``: the harness's schemas are not strict-mode schemas);
- the output limit is ``max_output_tokens``, the effort ``reasoning.effort``.

Rules the stream keeps:

- ``response.output_text.delta`` is text (``response.refusal.delta`` too), ``response.reasoning_summary_text.delta``
  and ``response.reasoning_text.delta`` are reasoning; a function call's id (its ``call_id``) and name come
  with ``response.output_item.added``, its arguments with ``response.function_call_arguments.delta``, at the
  item's ``output_index``; a stream without ``output_index`` (llama.cpp's server names items only by id:
  ``item.id``, ``item_id``) places each item at the position its id first came in. Whatever came with no delta (a server that sends only ``.done`` events) is taken
  from ``response.function_call_arguments.done`` or ``response.output_item.done``;
- a ``reasoning`` item, at ``response.output_item.done``, becomes a ``ReasoningItemEvent`` holding the item as
  received;
- an end event (``response.completed``, ``response.incomplete``) that is the stream's first, or whose
  ``response.output`` lists more items than the stream delivered (its deltas would come after it), is a
  ``ChunkError``, as malformed JSON is;
- ``response.completed`` and ``response.incomplete`` give usage and the finish reason: ``tool_calls`` when the
  answer has a function call, else ``stop``; an incomplete answer's ``incomplete_details.reason``
  (``max_output_tokens`` -> ``length``, else as sent);
- ``response.failed`` (its ``response.error``) and ``error`` events become a ``StreamErrorEvent``;
- usage (``usage_from``): ``input_tokens`` (which includes cached input, as the lab counts it),
  ``input_tokens_details.cached_tokens``, ``output_tokens``, ``output_tokens_details.reasoning_tokens``,
  ``total_tokens``, and the object verbatim in ``Usage.provider_fields``.
"""

from __future__ import annotations

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
    openai_error_body,
    positive,
    read_count,
    sampling_fields,
    served_by,
    sse_body,
    text_of,
    tools_by_name,
)
from alisio.core.harness.wire_format import WireFormat

PATH: Final = "/responses"
INCOMPLETE_REASONS: Final[Mapping[str, str]] = {"max_output_tokens": "length"}
_TEXT_DELTAS: Final = ("response.output_text.delta", "response.refusal.delta")
_REASONING_DELTAS: Final = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")
_ENDS: Final = ("response.completed", "response.incomplete")

# --- request ------------------------------------------------------------------------------------------


def request_body(request: ProviderRequest) -> dict[str, object]:
    """The JSON body of a streamed Responses request (see the module docstring for the rules)."""
    body: dict[str, object] = {"model": request.model}
    if request.instructions:
        body["instructions"] = request.instructions
    body["input"] = [item for message in request.messages for item in _items(message)]
    body.update({"stream": True, "store": False, "include": ["reasoning.encrypted_content"]})
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": msgspec.Raw(tool.parameters_json.encode()),
                "strict": False,
            }
            for tool in request.tools
        ]
    if request.max_output_tokens is not None:
        body["max_output_tokens"] = request.max_output_tokens
    if request.reasoning_effort is not None:
        body["reasoning"] = {"effort": request.reasoning_effort}
    body.update(sampling_fields(request, seed=False))
    return body


def _items(message: Message) -> list[object]:
    match message:
        case SystemMessage(content=text):
            return [{"role": "system", "content": text}]
        case UserMessage(content=text):
            return [{"role": "user", "content": text}]
        case ToolMessage(tool_call_id=call_id, content=text):
            return [{"type": "function_call_output", "call_id": call_id, "output": text}]
        case AssistantMessage():
            return _assistant_items(message)


def _assistant_items(message: AssistantMessage) -> list[object]:
    items: list[object] = [
        msgspec.Raw(block.wire.encode()) for block in message.reasoning_blocks if block.kind == "reasoning"
    ]
    if message.content:
        items.append({"type": "message", "role": "assistant", "content": message.content})
    items.extend(
        {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments}
        for call in message.tool_calls
    )
    return items


# --- stream -------------------------------------------------------------------------------------------


class ResponsesStream:
    """The decoder of one streamed Responses answer, fed one SSE event at a time (module docstring rules)."""

    def __init__(self) -> None:
        self.done = False
        self._text_seen: set[int] = set()
        self._reasoning_seen: set[int] = set()
        self._arguments_seen: set[int] = set()
        self._calls = False
        self._seen = False
        """Whether any event came yet (an end event may not be the first)."""
        self._delivered: set[int] = set()
        """The output indexes the stream delivered something of (an item event, a delta)."""
        self._ids: dict[str, int] = {}
        """Where each item id came first, for a stream without ``output_index`` (``_index``)."""

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
        if kind in _ENDS:
            problem = self._early_end(kind, mapping(payload.get("response")))
            if problem is not None:
                return Failure(problem)
        self._seen = True
        return Success(self._events(kind, payload))

    def _early_end(self, kind: str, response: Mapping[str, object]) -> ChunkError | None:
        """An end event that came before the answer: first of the stream, or listing output items the stream
        never delivered (``response.output`` holds them; their events would come after it)."""
        output = response.get("output")
        items = len(output) if isinstance(output, list) else 0
        delivered = self._delivered
        if not self._seen:
            problem = f"{kind} is the stream's first event"
        elif items > len(delivered):
            problem = f"{kind} lists {items} output items, the stream delivered {len(delivered)}"
        else:
            return None
        return ChunkError(message=f"stream events out of order: {problem}", excerpt=kind)

    def _index(self, payload: Mapping[str, object]) -> int | None:
        """The output index an event is about: its ``output_index``, else the position its item's id came
        first (``item_id``, ``item.id``); ``None``: about no item."""
        if "output_index" in payload:
            return int_of(payload.get("output_index")) or 0
        item_id = text_of(payload.get("item_id")) or text_of(mapping(payload.get("item")).get("id"))
        if item_id is None:
            return None
        return self._ids.setdefault(item_id, len(self._ids))

    def _events(self, kind: str, payload: Mapping[str, object]) -> tuple[StreamEvent, ...]:
        found = self._index(payload) if kind.startswith("response.") else None
        if found is not None:
            self._delivered.add(found)
        index = found or 0
        delta = payload.get("delta")
        if kind in _TEXT_DELTAS and isinstance(delta, str) and delta:
            self._text_seen.add(index)
            return (TextDelta(text=delta),)
        if kind in _REASONING_DELTAS and isinstance(delta, str) and delta:
            self._reasoning_seen.add(index)
            return (ReasoningDelta(text=delta),)
        match kind:
            case "response.created" | "response.in_progress":
                return served_by(mapping(payload.get("response")))
            case "response.output_item.added":
                return self._added(index, mapping(payload.get("item")))
            case "response.function_call_arguments.delta" if isinstance(delta, str) and delta:
                self._arguments_seen.add(index)
                return (ToolCallDelta(index=index, arguments=delta),)
            case "response.function_call_arguments.done":
                return self._arguments_done(index, payload.get("arguments"))
            case "response.output_item.done":
                return self._item_done(index, mapping(payload.get("item")))
            case "response.failed":
                self.done = True
                response = mapping(payload.get("response"))
                return (*_usage_events(response), _error_event(mapping(response.get("error"))))
            case "error":
                self.done = True
                return (_error_event(payload),)
        if kind in _ENDS:
            self.done = True
            return self._end(mapping(payload.get("response")))
        return ()

    def _added(self, index: int, item: Mapping[str, object]) -> tuple[StreamEvent, ...]:
        if item.get("type") != "function_call":
            return ()
        self._calls = True
        call_id = text_of(item.get("call_id")) or text_of(item.get("id"))
        return (ToolCallDelta(index=index, id=call_id, name=text_of(item.get("name"))),)

    def _arguments_done(self, index: int, arguments: object) -> tuple[StreamEvent, ...]:
        if index in self._arguments_seen or not isinstance(arguments, str):
            return ()
        self._arguments_seen.add(index)
        return (ToolCallDelta(index=index, arguments=arguments),)

    def _item_done(self, index: int, item: Mapping[str, object]) -> tuple[StreamEvent, ...]:
        match item.get("type"):
            case "reasoning":
                summary = "" if index in self._reasoning_seen else _summary_text(item)
                shown: tuple[StreamEvent, ...] = (ReasoningDelta(text=summary),) if summary else ()
                return (*shown, ReasoningItemEvent(kind="reasoning", wire=json_text(item)))
            case "message" if index not in self._text_seen:
                text = _message_text(item)
                return (TextDelta(text=text),) if text else ()
            case "function_call" if index not in self._arguments_seen:
                self._calls = True
                self._arguments_seen.add(index)
                call_id = text_of(item.get("call_id")) or text_of(item.get("id"))
                arguments = item.get("arguments")
                return (
                    ToolCallDelta(
                        index=index,
                        id=call_id,
                        name=text_of(item.get("name")),
                        arguments=arguments if isinstance(arguments, str) else "",
                    ),
                )
        return ()

    def _end(self, response: Mapping[str, object]) -> tuple[StreamEvent, ...]:
        reason = "tool_calls" if self._calls else "stop"
        if response.get("status") == "incomplete":
            given = text_of(mapping(response.get("incomplete_details")).get("reason")) or "incomplete"
            reason = INCOMPLETE_REASONS.get(given, given)
        return (*served_by(response), *_usage_events(response), FinishEvent(reason=reason))


def response_events(response: Mapping[str, object]) -> tuple[StreamEvent, ...]:
    """The events equivalent to one non-streamed ``response`` object (or an error body)."""
    error = response.get("error")
    if isinstance(error, Mapping) and error:
        return (_error_event(error),)
    stream = ResponsesStream()
    events: list[StreamEvent] = []
    output = response.get("output")
    for index, item in enumerate(output if isinstance(output, list) else ()):
        if isinstance(item, Mapping):
            events.extend(stream._added(index, item))
            events.extend(stream._item_done(index, item))
    return (*events, *stream._end(response))


def _summary_text(item: Mapping[str, object]) -> str:
    parts = item.get("summary")
    texts = [text_of(mapping(part).get("text")) for part in (parts if isinstance(parts, list) else ())]
    return "\n\n".join(text for text in texts if text)


def _message_text(item: Mapping[str, object]) -> str:
    content = item.get("content")
    parts = [mapping(part) for part in (content if isinstance(content, list) else ())]
    texts = [text_of(part.get("text")) or text_of(part.get("refusal")) for part in parts]
    return "".join(text for text in texts if text)


def _usage_events(response: Mapping[str, object]) -> tuple[StreamEvent, ...]:
    usage = response.get("usage")
    return (UsageEvent(usage=usage_from(usage)),) if isinstance(usage, Mapping) else ()


def _error_event(payload: Mapping[str, object]) -> StreamErrorEvent:
    nested = mapping(payload.get("error"))
    source = nested or payload
    message = text_of(source.get("message")) or "an error occurred during streaming"
    return StreamErrorEvent(message=message, code=code_of(source.get("code")) or code_of(source.get("type")))


def usage_from(usage: Mapping[str, object]) -> Usage:
    """Read a Responses ``usage`` object (its convention is the lab's: input includes cached input)."""
    problems: list[str] = []
    input_details = mapping(usage.get("input_tokens_details"))
    output_details = mapping(usage.get("output_tokens_details"))
    return Usage(
        input_tokens=read_count(usage, "input_tokens", "", problems),
        output_tokens=read_count(usage, "output_tokens", "", problems),
        total_tokens=read_count(usage, "total_tokens", "", problems),
        cached_input_tokens=read_count(input_details, "cached_tokens", "input_tokens_details.", problems),
        reasoning_tokens=read_count(output_details, "reasoning_tokens", "output_tokens_details.", problems),
        provider_fields=json_text(usage),
        invalid="; ".join(problems) or None,
    )


# --- the record ---------------------------------------------------------------------------------------


def _output_limit(body: Mapping[str, object]) -> int | None:
    """``max_output_tokens``; none for a call continuing a conversation kept at the provider
    (``previous_response_id``, ``conversation``): its input is not in the body."""
    if body.get("previous_response_id") or body.get("conversation"):
        return None
    return positive(body.get("max_output_tokens"))


def _assistant_item(item: Mapping[str, object]) -> bool:
    if item.get("type") in ("function_call", "custom_tool_call", "reasoning"):
        return True
    return item.get("role") == "assistant"


def render(model: str, answer: ProviderResponse, stream: bool) -> tuple[str, bytes]:
    """``answer`` as the Responses api sends it: a ``response``, or its events up to ``response.completed``
    (``response.incomplete`` for a ``length`` finish)."""
    items: list[dict[str, Any]] = [
        {"type": "function_call", "id": f"fc_{n}", "call_id": c.id, "status": "completed"}
        | {"name": c.name, "arguments": c.arguments}
        for n, c in enumerate(answer.tool_calls)
    ]
    if answer.text:
        text = {"type": "output_text", "text": answer.text, "annotations": []}
        items.append(
            {"type": "message", "id": "msg_0", "role": "assistant", "status": "completed"}
            | {"content": [text]}
        )
    cut = answer.finish_reason == "length"
    status = "incomplete" if cut else "completed"
    response = {"id": "resp_mock", "object": "response", "created_at": 0, "status": status, "model": model}
    usage = _usage_json(answer.usage)
    done: dict[str, Any] = response | {"output": items} | ({"usage": usage} if usage else {})
    if cut:
        done["incomplete_details"] = {"reason": "max_output_tokens"}
    if not stream:
        return "application/json", json_body(done)
    events: list[tuple[str | None, object]] = [
        ("response.created", {"type": "response.created", "response": response | {"status": "in_progress"}})
    ]
    events += [
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": n, "item": item})
        for n, item in enumerate(items)
    ]
    end = "response.incomplete" if cut else "response.completed"
    events.append((end, {"type": end, "response": done}))
    return "text/event-stream", sse_body(events)


def _usage_json(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    given, out = usage.input_tokens or 0, usage.output_tokens or 0
    return {
        "input_tokens": given,
        "input_tokens_details": {"cached_tokens": usage.cached_input_tokens or 0},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens or 0},
        "total_tokens": usage.total_tokens or given + out,
    }


def _body_events(body: Mapping[str, object]) -> tuple[StreamEvent, ...] | None:
    if body.get("object") == "response" or "output" in body or "error" in body:
        return response_events(body)
    return None


FORMAT: Final = WireFormat(
    api="openai-responses",
    title="OpenAI Responses",
    default_id="openai-responses",
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
    conversation="input",
    tool_schemas=tools_by_name,
    assistant_item=_assistant_item,
    tool_result_item=lambda item: item.get("type") in ("function_call_output", "custom_tool_call_output"),
    sampling=("temperature", "top_p"),
    max_temperature=2.0,
    output_limit=_output_limit,
    request_body=lambda request, _base_url: request_body(request),
    stream_decoder=ResponsesStream,
    body_events=_body_events,
    retry_after=no_retry_hint,
    error_body=openai_error_body,
    fault_kinds={"429": "rate_limit_exceeded", "500": None, "503": None},
    request_id_header="x-request-id",
    retry_info=no_retry_info,
    render=render,
    token_count=lambda count: msgspec.json.encode({"input_tokens": count}),
    usage_convention="input_tokens includes cached input (input_tokens_details.cached_tokens); "
    "output_tokens includes reasoning (output_tokens_details.reasoning_tokens)",
)
"""The Responses record (``alisio.core.harness.wire_format``)."""
