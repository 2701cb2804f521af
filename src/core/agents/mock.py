"""The mock model endpoint's answers (``alisio eval mock-endpoint``): what to answer a request, in its wire format.

Pure: a request's path and JSON body in, the HTTP status, content type and body out. The shell
(``alisio.shell.agents.mock_endpoint``) serves them. Three wire APIs, by path: Chat Completions
(``.../chat/completions``), Responses (``.../responses``) and Anthropic Messages (``.../messages``;
``.../messages/count_tokens`` is answered ``{"input_tokens": 100}`` and is not a model call). A request with
``stream: true`` gets server-sent events, with the usage in the last ones, else one JSON answer.

What is answered (``reply_for``), first match wins:

- a request for the model ``fail``, or any request when the endpoint was made to fail: HTTP 500 (or that
  status), ``scripted failure``, in the API's error shape;
- with a script (``--script``, the format of ``eval run --script``): the turn whose number is how many
  assistant turns the request's conversation already holds (so parallel runs each get their own turns); a
  tool call named ``{shell}`` is sent as the agent's own shell tool (``bash``, Claude Code's ``Bash``,
  Codex's ``exec_command`` or ``shell``) with its ``command`` in that tool's argument shape; a request that
  offers no tools (a title call, aider) gets the turn's text only; a turn's ``failure`` or ``error`` is an
  HTTP error (``auth`` 401, ``bad_request`` 400, ``rate_limited`` 429, else 500) with its message; past the
  last turn, HTTP 500 saying so. Usage is the turn's, none when it has none;
- without a script, the default, which fixes the bundled smoke-coding fix-add: a request without tools gets
  the text ``Fix add`` (aider, asked for SEARCH/REPLACE blocks, gets the block that fixes it); a request whose
  last message is a tool result gets ``Fixed: add returns a + b.`` (unless its model is ``loop``, or the
  endpoint always calls the tool: an agent that never stops, for budgets); any other request gets one call of
  the agent's shell tool running ``FIX_COMMAND``. Every answer reports ``DEFAULT_USAGE``: 100 input tokens,
  40 of them cached, and 10 output tokens, in each API's own convention (Anthropic's ``input_tokens`` leaves
  the cached ones out).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from alisio.core.base import Frozen
from alisio.core.harness.protocol import Usage

__all__ = [
    "AIDER_EDIT",
    "DEFAULT_USAGE",
    "FIX_COMMAND",
    "SHELL_TOOL",
    "Answer",
    "MockApi",
    "MockCall",
    "Request",
    "api_of",
    "default_reply",
    "read_request",
    "render",
    "scripted_reply",
]

MockApi = Literal["openai-chat", "openai-responses", "anthropic"]

FIX_COMMAND: Final = "sed -i 's/return a - b/return a + b/' src/calc.py"
"""The shell command that fixes smoke-coding's fix-add (``src/calc.py``'s ``add``)."""
AIDER_EDIT: Final = "src/calc.py\n```python\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n```\n"
"""The same fix as aider's SEARCH/REPLACE block (aider offers no tools)."""
DEFAULT_USAGE: Final = Usage(input_tokens=100, output_tokens=10, total_tokens=110, cached_input_tokens=40)
SHELL_TOOL: Final = "{shell}"
"""A script's tool-call name for the agent's own shell tool (its name and argument shape vary by agent)."""
_SHELLS: Final = ("bash", "Bash", "exec_command", "shell")


class MockCall(Frozen, frozen=True, kw_only=True):
    """One tool call of an answer: its id, the tool's name and its arguments as JSON text."""

    id: str
    name: str
    arguments: str


class Answer(Frozen, frozen=True, kw_only=True):
    """What to answer one request: an HTTP error (``status`` not 200, ``text`` its message), or a message."""

    status: int = 200
    text: str = ""
    calls: tuple[MockCall, ...] = ()
    finish: str = "stop"
    """``stop``, ``tool_calls``, ``length`` or ``content_filter`` (each API's own word is sent)."""
    usage: Usage | None = None


class Request(Frozen, frozen=True, kw_only=True):
    """What the answer depends on, read from a request's body (``read_request``)."""

    api: MockApi
    model: str
    stream: bool
    tools: tuple[str, ...]
    """The names of the tools the request offers, in order."""
    described: frozenset[str] = frozenset()
    """The tools whose arguments include a ``description`` (the shell call then says one)."""
    assistant_turns: int
    """How many assistant turns the conversation already holds (a script's turn number, from 0)."""
    after_tool: bool
    """The last message is a tool result."""
    asks_for_edit_blocks: bool
    """No tools, and the messages ask for SEARCH/REPLACE blocks (aider)."""


def api_of(path: str) -> MockApi | Literal["count_tokens"] | None:
    """The wire API a POST to ``path`` speaks (``count_tokens`` for Anthropic's), or ``None`` (404)."""
    path = path.split("?")[0].split("#")[0].rstrip("/")
    if path.endswith("/messages/count_tokens"):
        return "count_tokens"
    if path.endswith("/chat/completions"):
        return "openai-chat"
    if path.endswith("/responses"):
        return "openai-responses"
    return "anthropic" if path.endswith("/messages") else None


def _tool_name(tool: Any) -> str | None:
    if not isinstance(tool, dict):
        return None
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else tool.get("name")
    return name if isinstance(name, str) else None


def _takes_description(tool: Any) -> bool:
    """Whether the tool's schema has a ``description`` argument (OpenCode's and Claude Code's shell tools)."""
    if not isinstance(tool, dict):
        return False
    function = tool.get("function")
    holder = function if isinstance(function, dict) else tool
    schema = holder.get("parameters") or holder.get("input_schema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return isinstance(properties, dict) and "description" in properties


def _is_assistant(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    if item.get("type") in ("function_call", "custom_tool_call", "reasoning"):
        return True
    return item.get("role") == "assistant"


def _turns_and_last(api: MockApi, body: Mapping[str, Any]) -> tuple[int, bool]:
    """How many assistant turns the conversation holds, and whether its last item is a tool result."""
    items = body.get("input") if api == "openai-responses" else body.get("messages")
    items = items if isinstance(items, list) else []
    turns, inside = 0, False
    for item in items:
        assistant = _is_assistant(item)
        turns += assistant and not inside
        inside = assistant
    last = items[-1] if items and isinstance(items[-1], dict) else {}
    if api == "openai-responses":
        after = last.get("type") in ("function_call_output", "custom_tool_call_output")
    elif api == "anthropic":
        content = last.get("content")
        blocks = content if isinstance(content, list) else []
        after = last.get("role") == "user" and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks
        )
    else:
        after = last.get("role") == "tool"
    return turns, after


def read_request(api: MockApi, body: Mapping[str, Any]) -> Request:
    """The facts of a request's (already parsed) JSON body that its answer depends on."""
    offered = body.get("tools")
    listed = offered if isinstance(offered, list) else []
    tools = tuple(name for tool in listed if (name := _tool_name(tool)))
    described = frozenset(name for tool in listed if _takes_description(tool) and (name := _tool_name(tool)))
    turns, after = _turns_and_last(api, body)
    model = body.get("model")
    messages = json.dumps(body.get("messages") or body.get("input") or [])
    return Request(
        api=api,
        model=model if isinstance(model, str) else "m",
        stream=body.get("stream") is True,
        tools=tools,
        described=described,
        assistant_turns=turns,
        after_tool=after,
        asks_for_edit_blocks=not tools and "SEARCH/REPLACE" in messages,
    )


def _shell_of(tools: Sequence[str]) -> str | None:
    return next((name for name in _SHELLS if name in tools), next(iter(tools), None))


def _shell_arguments(request: Request, tool: str | None, command: str) -> str:
    """The shell tool's arguments: Codex's ``exec_command`` takes ``cmd``, its ``shell`` an argv; a tool
    whose schema has a ``description`` gets one."""
    if tool == "exec_command":
        return json.dumps({"cmd": command})
    if tool == "shell":
        return json.dumps({"command": ["bash", "-lc", command]})
    if tool in request.described:
        return json.dumps({"command": command, "description": "run a command"})
    return json.dumps({"command": command})


def default_reply(request: Request, *, command: str, always_tool: bool, number: int) -> Answer:
    """The default answer (see the module docstring); ``number`` numbers the tool call's id."""
    if request.asks_for_edit_blocks:
        return Answer(text=AIDER_EDIT, usage=DEFAULT_USAGE)
    if not request.tools:
        return Answer(text="Fix add", usage=DEFAULT_USAGE)
    if request.after_tool and not always_tool and request.model != "loop":
        return Answer(text="Fixed: add returns a + b.", usage=DEFAULT_USAGE)
    shell = _shell_of(request.tools)
    call = MockCall(
        id=f"call_{number}", name=shell or "bash", arguments=_shell_arguments(request, shell, command)
    )
    return Answer(calls=(call,), finish="tool_calls", usage=DEFAULT_USAGE)


def scripted_reply(request: Request, turns: Sequence[Answer], source: str) -> Answer:
    """The script's answer to ``request`` (see the module docstring): ``turns`` are the script's turns as
    answers (the shell reads ``eval run --script``'s format); ``source`` names the script."""
    number = request.assistant_turns
    if number >= len(turns):
        return Answer(
            status=500,
            text=f"mock-endpoint: {source} has {len(turns)} turn{'s' if len(turns) != 1 else ''}; this "
            f"conversation asks for turn {number + 1}",
        )
    answer = turns[number]
    if answer.status != 200:
        return answer
    if not request.tools:
        return Answer(text=answer.text, usage=answer.usage, finish="stop")
    shell = _shell_of(request.tools)
    calls = tuple(
        MockCall(
            id=call.id,
            name=shell or "bash",
            arguments=_shell_arguments(request, shell, _command(call.arguments)),
        )
        if call.name == SHELL_TOOL
        else call
        for call in answer.calls
    )
    return Answer(text=answer.text, calls=calls, finish=answer.finish, usage=answer.usage)


def _command(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    command = value.get("command") if isinstance(value, dict) else None
    return command if isinstance(command, str) else arguments


_STOP_REASONS: Final = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def render(api: MockApi, model: str, answer: Answer, stream: bool) -> tuple[int, str, bytes]:
    """The HTTP status, content type and body of ``answer`` in ``api``'s wire format."""
    if answer.status != 200:
        return answer.status, "application/json", _error(api, answer.text)
    if api == "openai-responses":
        return (200, *_responses(model, answer, stream))
    if api == "anthropic":
        return (200, *_anthropic(model, answer, stream))
    return (200, *_chat(model, answer, stream))


def _error(api: MockApi, message: str) -> bytes:
    if api == "anthropic":
        return json.dumps({"type": "error", "error": {"type": "api_error", "message": message}}).encode()
    return json.dumps({"error": {"message": message, "type": "server_error"}}).encode()


def _sse(events: Sequence[tuple[str | None, Mapping[str, Any]]]) -> bytes:
    named = (
        ((f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n") for name, data in events
    )
    return "".join(named).encode()


def _chat_usage(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    out: dict[str, Any] = {
        "prompt_tokens": usage.input_tokens or 0,
        "completion_tokens": usage.output_tokens or 0,
    }
    out["total_tokens"] = usage.total_tokens or out["prompt_tokens"] + out["completion_tokens"]
    if usage.cached_input_tokens is not None:
        out["prompt_tokens_details"] = {"cached_tokens": usage.cached_input_tokens}
    return out


def _chat(model: str, answer: Answer, stream: bool) -> tuple[str, bytes]:
    calls = [
        {"index": i, "id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for i, c in enumerate(answer.calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if calls:
        message["tool_calls"] = calls
    usage = _chat_usage(answer.usage)
    if not stream:
        for call in calls:
            call.pop("index")
        choice = {"index": 0, "message": message, "finish_reason": answer.finish}
        whole = {"id": "chatcmpl-mock", "object": "chat.completion", "model": model, "choices": [choice]}
        return "application/json", json.dumps(whole | ({"usage": usage} if usage else {})).encode()
    base = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model}
    chunks = [
        base | {"choices": [{"index": 0, "delta": message, "finish_reason": None}]},
        base | {"choices": [{"index": 0, "delta": {}, "finish_reason": answer.finish}]},
    ]
    if usage:
        chunks.append(base | {"choices": [], "usage": usage})
    return "text/event-stream", _sse([(None, chunk) for chunk in chunks]) + b"data: [DONE]\n\n"


def _responses_usage(usage: Usage | None) -> dict[str, Any] | None:
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


def _responses(model: str, answer: Answer, stream: bool) -> tuple[str, bytes]:
    items: list[dict[str, Any]] = [
        {"type": "function_call", "id": f"fc_{n}", "call_id": c.id, "status": "completed"}
        | {"name": c.name, "arguments": c.arguments}
        for n, c in enumerate(answer.calls)
    ]
    if answer.text:
        text = {"type": "output_text", "text": answer.text, "annotations": []}
        items.append(
            {"type": "message", "id": "msg_0", "role": "assistant", "status": "completed"}
            | {"content": [text]}
        )
    status = "incomplete" if answer.finish == "length" else "completed"
    response = {"id": "resp_mock", "object": "response", "created_at": 0, "status": status, "model": model}
    usage = _responses_usage(answer.usage)
    done = response | {"output": items} | ({"usage": usage} if usage else {})
    if answer.finish == "length":
        done["incomplete_details"] = {"reason": "max_output_tokens"}
    if not stream:
        return "application/json", json.dumps(done).encode()
    events: list[tuple[str | None, Mapping[str, Any]]] = [
        ("response.created", {"type": "response.created", "response": response | {"status": "in_progress"}})
    ]
    events += [
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": n, "item": item})
        for n, item in enumerate(items)
    ]
    end = "response.incomplete" if answer.finish == "length" else "response.completed"
    events.append((end, {"type": end, "response": done}))
    return "text/event-stream", _sse(events)


def _anthropic(model: str, answer: Answer, stream: bool) -> tuple[str, bytes]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": answer.text}] if answer.text else []
    blocks += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": _object(c.arguments)} for c in answer.calls
    ]
    stop = _STOP_REASONS.get(answer.finish, "end_turn")
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
        return "application/json", json.dumps(whole | ({"usage": counts | output} if usage else {})).encode()
    start: dict[str, Any] = message | {"content": []}
    if usage is not None:
        start["usage"] = counts | {"output_tokens": 1}
    events: list[tuple[str | None, Mapping[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
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
    return "text/event-stream", _sse(events)


def _object(arguments: str) -> Any:
    """A tool call's arguments as Anthropic's ``input`` object (text that is not a JSON object is wrapped)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}
