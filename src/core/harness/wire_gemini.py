"""The Gemini API wire format (``POST {base_url}/models/{model}:streamGenerateContent?alt=sse``), as pure data
transformations, and its record (``FORMAT``).

Two directions:

- ``request_body``: a ``ProviderRequest`` -> the JSON body (the model is in the path, not the body);
- ``GeminiStream``: the SSE events of one streamed answer (each a ``GenerateContentResponse`` chunk) ->
  ``StreamEvent`` values; ``response_events`` does the same for a whole non-streamed answer.

Rules the request keeps:

- the instructions are ``systemInstruction``; user text, a system message inside the conversation and tool
  results are ``user`` contents (consecutive ones merged into one, so that every ``functionResponse`` of a
  turn is in the one content after the ``model`` content that asked for them); a tool result is
  ``{"functionResponse": {"name", "response": {"output": TEXT}}}``;
- a model turn is its thought parts first (``thought: true``, with their ``thoughtSignature``), verbatim as
  they were received, then its text, then one ``functionCall`` part per tool call. Each ``thoughtSignature``
  goes back on the part it came with (a function call's on that call, the one of a text part on the text):
  Gemini 3 refuses a function call sent back without its signature;
- a function call's ``id`` is sent back, and with its ``functionResponse``, only when the API sent one
  (Gemini 3 does, 2.5 does not): the id the lab made up for it (``GENERATED_ID`` + its position) is not the
  API's; arguments that are no JSON object (the model wrote invalid JSON, which the tool already refused)
  are sent as ``{}``;
- tools are ``functionDeclarations`` with the schema as ``parametersJsonSchema`` (full JSON Schema, sent as
  written);
- ``generationConfig``: ``maxOutputTokens``, ``temperature``, ``topP``, ``seed``; a reasoning effort becomes
  ``thinkingConfig: {"thinkingBudget": B, "includeThoughts": true}`` (low 1024, medium 4096, high 16384).

Rules the stream keeps:

- only candidate 0 is read; a ``text`` part is text, a ``thought: true`` part is reasoning (and is kept, with
  its signature, to send back: a ``ReasoningItemEvent`` of kind ``thought``), a ``functionCall`` part is a
  whole tool call (Gemini sends its arguments in one piece), numbered in the order they came;
- a ``thoughtSignature`` on a function call or a text part is a ``ReasoningItemEvent`` of kind
  ``thought_signature`` naming what it belongs to (``{"call": N}`` or ``{"text": true}``);
- the stream has no end event: it ends with the connection (``done`` stays false); ``finishReason``
  ``STOP`` is ``stop`` (``tool_calls`` when the answer asked for a tool), ``MAX_TOKENS`` is ``length``,
  ``SAFETY``, ``RECITATION``, ``BLOCKLIST``, ``PROHIBITED_CONTENT``, ``SPII`` and ``IMAGE_SAFETY`` are
  ``content_filter``; any other is kept as sent; a prompt blocked before any candidate
  (``promptFeedback.blockReason``) is ``content_filter``;
- usage (``usage_from``, each ``usageMetadata`` a whole snapshot, the last one kept) in the lab's convention:
  ``promptTokenCount`` already includes ``cachedContentTokenCount``, so input is ``promptTokenCount +
  toolUsePromptTokenCount`` and cached input is ``cachedContentTokenCount``; ``candidatesTokenCount``
  excludes ``thoughtsTokenCount``, so output is their sum and reasoning is ``thoughtsTokenCount``; the object
  is kept verbatim in ``Usage.provider_fields``;
- a payload with an ``error`` (``{"error": {"code", "message", "status"}}``) is a ``StreamErrorEvent`` whose
  code is the ``status`` (``RESOURCE_EXHAUSTED``); an error body's ``RetryInfo.retryDelay`` (``"37s"``) is
  the wait before a retry (``retry_after``).
"""

from __future__ import annotations

import json
import re
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
from alisio.core.harness.wire_common import (
    ChunkError,
    code_of,
    excerpt,
    json_body,
    json_text,
    mapping,
    positive,
    read_count,
    sse_body,
    text_of,
)
from alisio.core.harness.wire_format import WireFormat

__all__ = [
    "FORMAT",
    "GENERATED_ID",
    "GeminiStream",
    "request_body",
    "response_events",
    "retry_delay",
    "usage_from",
]

GENERATED_ID: Final = "gemini_call_"
"""The start of a tool call id the lab made up (the API sent none): never sent back to the API."""
THINKING_BUDGETS: Final[Mapping[str, int]] = {"low": 1024, "medium": 4096, "high": 16384}
FINISH_REASONS: Final[Mapping[str, str]] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    **{
        reason: "content_filter"
        for reason in ("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY")
    },
}
_STATUSES: Final[Mapping[int, str]] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
"""The ``google.rpc`` status of an HTTP status, for the error bodies written in this shape."""
_DELAY: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")

# --- request ------------------------------------------------------------------------------------------


def request_body(request: ProviderRequest, _base_url: str = "") -> dict[str, object]:
    """The JSON body of a streamed ``generateContent`` request (see the module docstring for the rules)."""
    body: dict[str, object] = {"contents": _contents(request.messages)}
    if request.instructions:
        body["systemInstruction"] = {"parts": [{"text": request.instructions}]}
    if request.tools:
        declarations = [
            {
                "name": tool.name,
                "description": tool.description,
                "parametersJsonSchema": msgspec.Raw(tool.parameters_json.encode()),
            }
            for tool in request.tools
        ]
        body["tools"] = [{"functionDeclarations": declarations}]
    config: dict[str, object] = {}
    if request.max_output_tokens is not None:
        config["maxOutputTokens"] = request.max_output_tokens
    for key, value in (("temperature", request.temperature), ("topP", request.top_p), ("seed", request.seed)):
        if value is not None:
            config[key] = value
    if request.reasoning_effort is not None:
        budget = THINKING_BUDGETS.get(request.reasoning_effort, THINKING_BUDGETS["medium"])
        config["thinkingConfig"] = {"thinkingBudget": budget, "includeThoughts": True}
    if config:
        body["generationConfig"] = config
    return body


def _contents(conversation: tuple[Message, ...]) -> list[dict[str, object]]:
    """Gemini contents; consecutive user-role ones merged into one."""
    out: list[dict[str, object]] = []
    for message in conversation:
        role, parts = _parts(message)
        last = out[-1] if out else None
        if role == "user" and last is not None and last["role"] == "user":
            held = last["parts"]
            assert isinstance(held, list)
            held.extend(parts)
        else:
            out.append({"role": role, "parts": parts})
    return out


def _parts(message: Message) -> tuple[str, list[object]]:
    match message:
        case SystemMessage(content=text) | UserMessage(content=text):
            return "user", [{"text": text}]
        case ToolMessage(tool_call_id=call_id, name=name, content=text):
            response: dict[str, object] = {"name": name, "response": {"output": text}}
            if not call_id.startswith(GENERATED_ID):
                response["id"] = call_id
            return "user", [{"functionResponse": response}]
        case AssistantMessage():
            return "model", _model_parts(message)


def _model_parts(message: AssistantMessage) -> list[object]:
    """A model turn: thought parts as received, the text, the function calls, each with its signature."""
    parts: list[object] = []
    call_signatures: dict[int, str] = {}
    text_signature: str | None = None
    for block in message.reasoning_blocks:
        if block.kind == "thought":
            parts.append(msgspec.Raw(block.wire.encode()))
        elif block.kind == "thought_signature":
            mark = mapping(_decoded(block.wire))
            signature = text_of(mark.get("thoughtSignature"))
            position = mark.get("call")
            if isinstance(position, int) and signature:
                call_signatures[position] = signature
            elif mark.get("text") is True and signature:
                text_signature = signature
    if message.content or text_signature is not None or not message.tool_calls:
        text: dict[str, object] = {"text": message.content or ("" if text_signature else "(no text)")}
        if text_signature is not None:
            text["thoughtSignature"] = text_signature
        parts.append(text)
    for position, call in enumerate(message.tool_calls):
        function: dict[str, object] = {"name": call.name, "args": _args(call.arguments)}
        if not call.id.startswith(GENERATED_ID):
            function["id"] = call.id
        part: dict[str, object] = {"functionCall": function}
        if position in call_signatures:
            part["thoughtSignature"] = call_signatures[position]
        parts.append(part)
    return parts


def _decoded(text: str) -> object:
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None


def _args(arguments: str) -> object:
    decoded = _decoded(arguments)
    return msgspec.Raw(arguments.encode()) if isinstance(decoded, dict) else {}


# --- stream -------------------------------------------------------------------------------------------


class GeminiStream:
    """The decoder of one streamed answer, fed one SSE event at a time (module docstring rules).

    ``done`` stays false: a Gemini stream has no end event, the connection's end ends it.
    """

    def __init__(self) -> None:
        self.done = False
        self._calls = 0

    def feed(self, event: str, data: str) -> Result[tuple[StreamEvent, ...], ChunkError]:
        """The stream events of one SSE event (``event`` is ``message`` for an unnamed one)."""
        if not data.strip():
            return Success(())
        try:
            payload: object = msgspec.json.decode(data)
        except msgspec.DecodeError:
            return Failure(ChunkError(message="malformed JSON in stream event", excerpt=excerpt(data)))
        if not isinstance(payload, dict):
            return Failure(ChunkError(message="stream event is not a JSON object", excerpt=excerpt(data)))
        events, self._calls = _chunk_events(payload, self._calls)
        return Success(events)


def _chunk_events(chunk: Mapping[str, object], calls: int) -> tuple[tuple[StreamEvent, ...], int]:
    """The events of one ``GenerateContentResponse`` (``calls``: function calls seen before it), and the
    count after it."""
    events: list[StreamEvent] = []
    model = text_of(chunk.get("modelVersion"))
    if model:
        events.append(ServedEvent(model=model))
    candidates = chunk.get("candidates")
    candidate = mapping(candidates[0]) if isinstance(candidates, list) and candidates else {}
    content = mapping(candidate.get("content"))
    parts = content.get("parts")
    for part in parts if isinstance(parts, list) else ():
        found, calls = _part_events(mapping(part), calls)
        events.extend(found)
    reason = text_of(candidate.get("finishReason"))
    blocked = text_of(mapping(chunk.get("promptFeedback")).get("blockReason"))
    if reason:
        finish = FINISH_REASONS.get(reason, reason)
        events.append(FinishEvent(reason="tool_calls" if finish == "stop" and calls else finish))
    elif blocked and not candidate:
        events.append(FinishEvent(reason="content_filter"))
    usage = chunk.get("usageMetadata")
    if isinstance(usage, Mapping) and usage:
        events.append(UsageEvent(usage=usage_from(usage)))
    if chunk.get("error"):
        events.append(_error_event(chunk.get("error")))
    return tuple(events), calls


def _part_events(part: Mapping[str, object], calls: int) -> tuple[list[StreamEvent], int]:
    signature = text_of(part.get("thoughtSignature"))
    text = part.get("text")
    if part.get("thought") is True:
        found: list[StreamEvent] = [ReasoningDelta(text=text)] if isinstance(text, str) and text else []
        return [*found, ReasoningItemEvent(kind="thought", wire=json_text(part))], calls
    call = part.get("functionCall")
    if isinstance(call, Mapping):
        given = call.get("args")
        arguments = json_text(given) if isinstance(given, Mapping) else "{}"
        call_id = text_of(call.get("id")) or f"{GENERATED_ID}{calls}"
        found = [ToolCallDelta(index=calls, id=call_id, name=text_of(call.get("name")), arguments=arguments)]
        if signature:
            mark = json_text({"call": calls, "thoughtSignature": signature})
            found.append(ReasoningItemEvent(kind="thought_signature", wire=mark))
        return found, calls + 1
    found = [TextDelta(text=text)] if isinstance(text, str) and text else []
    if signature:
        mark = json_text({"text": True, "thoughtSignature": signature})
        found.append(ReasoningItemEvent(kind="thought_signature", wire=mark))
    return found, calls


def response_events(response: Mapping[str, object]) -> tuple[StreamEvent, ...] | None:
    """The events of a whole non-streamed answer (or an error body); ``None`` for another JSON object."""
    if not any(key in response for key in ("candidates", "error", "promptFeedback", "usageMetadata")):
        return None
    return _chunk_events(response, 0)[0]


def _error_event(error: object) -> StreamErrorEvent:
    table = mapping(error)
    message = text_of(table.get("message")) or (error if isinstance(error, str) and error else None)
    code = code_of(table.get("status")) or code_of(table.get("code"))
    return StreamErrorEvent(message=message or "an error occurred during streaming", code=code)


def usage_from(usage: Mapping[str, object]) -> Usage:
    """Normalise a ``usageMetadata`` object to the lab's convention (module docstring)."""
    problems: list[str] = []
    prompt = read_count(usage, "promptTokenCount", "", problems)
    tool_prompt = read_count(usage, "toolUsePromptTokenCount", "", problems)
    cached = read_count(usage, "cachedContentTokenCount", "", problems)
    candidates = read_count(usage, "candidatesTokenCount", "", problems)
    thoughts = read_count(usage, "thoughtsTokenCount", "", problems)
    total = read_count(usage, "totalTokenCount", "", problems)
    given = None if prompt is None else prompt + (tool_prompt or 0)
    output = None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    return Usage(
        input_tokens=given,
        output_tokens=output,
        total_tokens=total,
        cached_input_tokens=cached,
        reasoning_tokens=thoughts,
        provider_fields=json_text(usage),
        invalid="; ".join(problems) or None,
    )


def retry_delay(body: object) -> float | None:
    """The seconds an error body's ``RetryInfo`` asks to wait (``"retryDelay": "37s"``), else ``None``."""
    details = mapping(mapping(body).get("error")).get("details")
    for detail in details if isinstance(details, list) else ():
        table = mapping(detail)
        kind = table.get("@type")
        if isinstance(kind, str) and kind.endswith("google.rpc.RetryInfo"):
            delay = table.get("retryDelay")
            found = _DELAY.match(delay) if isinstance(delay, str) else None
            if found is not None:
                return float(found.group(1))
    return None


def with_retry_info(body: bytes, seconds: float) -> bytes:
    """A 429 error ``body`` with the ``RetryInfo`` detail asking to wait ``seconds`` (what Google's clients
    read, and ``retry_delay`` reads back)."""
    document = json.loads(body)
    delay = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{seconds:g}s"}
    document["error"]["details"] = [*document["error"].get("details", []), delay]
    return json.dumps(document).encode()


# --- the record ---------------------------------------------------------------------------------------

_RENDERED_REASONS: Final[Mapping[str, str]] = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}


def error_body(status: int, kind: str | None, message: str) -> bytes:
    """An error in Google's shape: ``{"error": {"code", "message", "status"}}``; ``kind`` (the proxy's own
    errors, ``budget_exceeded``) as an ``ErrorInfo`` reason."""
    error: dict[str, Any] = {"code": status, "message": message, "status": _STATUSES.get(status, "UNKNOWN")}
    if kind is not None:
        error["details"] = [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": kind.upper(), "domain": "alisio"}
        ]
    return json_body({"error": error})


def render(model: str, answer: ProviderResponse, stream: bool) -> tuple[str, bytes]:
    """``answer`` as the Gemini API sends it: one ``GenerateContentResponse``, or its chunks (the text, then
    the function calls with the finish reason and the usage) as ``alt=sse`` events. No call id is sent:
    the Gemini 2.5 models send none."""
    parts: list[dict[str, Any]] = [{"text": answer.text}] if answer.text else []
    parts += [{"functionCall": {"name": c.name, "args": _object(c.arguments)}} for c in answer.tool_calls]
    usage = _usage_json(answer.usage)
    finish = _RENDERED_REASONS.get(answer.finish_reason, answer.finish_reason.upper())
    last: dict[str, Any] = {
        "candidates": [{"content": {"parts": parts[-1:] if stream else parts, "role": "model"}}],
        "modelVersion": model,
        "responseId": "mock",
    }
    last["candidates"][0] |= {"finishReason": finish, "index": 0}
    if usage:
        last["usageMetadata"] = usage
    if not stream:
        return "application/json", json_body(last)
    chunks: list[tuple[str | None, object]] = [
        (
            None,
            {
                "candidates": [{"content": {"parts": [part], "role": "model"}, "index": 0}],
                "modelVersion": model,
            },
        )
        for part in parts[:-1]
    ]
    chunks.append((None, last))
    return "text/event-stream", sse_body(chunks).replace(b"\n\n", b"\r\n\r\n")


def _usage_json(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    prompt, output, thoughts = usage.input_tokens or 0, usage.output_tokens or 0, usage.reasoning_tokens
    counts: dict[str, Any] = {"promptTokenCount": prompt, "candidatesTokenCount": output - (thoughts or 0)}
    counts["totalTokenCount"] = usage.total_tokens or prompt + output
    if usage.cached_input_tokens is not None:
        counts["cachedContentTokenCount"] = usage.cached_input_tokens
    if thoughts is not None:
        counts["thoughtsTokenCount"] = thoughts
    return counts


def _object(arguments: str) -> object:
    """A tool call's arguments as an ``args`` object (text that is not a JSON object is wrapped)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}


def _tool_schemas(tools: object) -> tuple[tuple[str, Mapping[str, object]], ...]:
    """Each ``functionDeclarations`` entry's name and schema (``parametersJsonSchema`` or ``parameters``)."""
    found: list[tuple[str, Mapping[str, object]]] = []
    for tool in tools if isinstance(tools, list) else ():
        declarations = mapping(tool).get("functionDeclarations")
        for declaration in declarations if isinstance(declarations, list) else ():
            table = mapping(declaration)
            name = table.get("name")
            schema = mapping(table.get("parametersJsonSchema") or table.get("parameters"))
            if isinstance(name, str) and name:
                found.append((name, schema))
    return tuple(found)


def _tool_result_item(item: Mapping[str, object]) -> bool:
    parts = item.get("parts")
    listed = parts if isinstance(parts, list) else []
    return item.get("role") == "user" and any("functionResponse" in mapping(part) for part in listed)


def _output_limit(body: Mapping[str, object]) -> int | None:
    """``generationConfig.maxOutputTokens`` times ``candidateCount``."""
    config = mapping(body.get("generationConfig"))
    limit = positive(config.get("maxOutputTokens"))
    if limit is None or "candidateCount" not in config:
        return limit
    count = positive(config.get("candidateCount"))
    return None if count is None else limit * count


def _path(model: str) -> str:
    return f"/models/{model.removeprefix('models/')}:streamGenerateContent?alt=sse"


FORMAT: Final = WireFormat(
    api="gemini",
    title="Gemini API",
    default_id="gemini",
    path=_path,
    model_calls=(("/models/{model}:streamGenerateContent", True), ("/models/{model}:generateContent", False)),
    side_paths=(("POST", "/models/{model}:countTokens"), ("GET", "/models"), ("GET", "/models/{model}")),
    version="/v1beta",
    sdk_adds_version=True,
    key_header="x-goog-api-key",
    key_prefix="",
    format_headers=(),
    key_env="GEMINI_API_KEY",
    base_url_env="GOOGLE_GEMINI_BASE_URL",
    conversation="contents",
    tool_schemas=_tool_schemas,
    assistant_item=lambda item: item.get("role") == "model",
    tool_result_item=_tool_result_item,
    sampling=("temperature", "top_p", "seed"),
    max_temperature=2.0,
    output_limit=_output_limit,
    request_body=request_body,
    stream_decoder=GeminiStream,
    body_events=response_events,
    retry_after=retry_delay,
    error_body=error_body,
    fault_kinds={"429": None, "500": None, "503": None},
    request_id_header=None,
    retry_info=with_retry_info,
    render=render,
    token_count=lambda count: json_body({"totalTokens": count}),
    usage_convention="promptTokenCount includes cachedContentTokenCount; candidatesTokenCount excludes "
    "thoughtsTokenCount (output = candidates + thoughts, reasoning = thoughts)",
)
"""The Gemini API record (``alisio.core.harness.wire_format``)."""
