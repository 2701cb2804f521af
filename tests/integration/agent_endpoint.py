"""A scripted model endpoint for external-agent tests: answers by a fixed rule, logs requests.

It speaks the three wire APIs by path: Chat Completions (``/chat/completions``), Responses (``/responses``)
and Anthropic Messages (``/messages``, and ``/messages/count_tokens``, which is not a model call). Every
answer reports the same usage, in each api's convention: 100 input tokens of which 40 cached, 10 output.

The rule (deterministic, whatever agent asks):
- a request without tools (OpenCode's session-title call) gets the text ``Fix add``;
- a request whose last message is a tool result gets the final text ``Fixed: add returns a + b.``;
- any other request gets one tool call of the agent's shell tool (``bash`` for OpenCode, Claude Code's
  ``Bash`` and the test agent, ``exec_command`` for Codex) running ``command`` (by default the sed that fixes
  smoke-coding's fix-add).
``always_tool=True`` answers every request with the tool call (an agent that never stops: budget tests);
``fail_status`` answers every request with that HTTP status. The model names ``loop`` and ``fail`` do the
same for one request. Streams SSE when the request says
``stream: true`` (usage in the last event), else a JSON answer. ``requests`` is the endpoint's own log,
``model_calls`` the POSTs to a model path.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any, Self

from tests.integration.servers import QuietServer

FIX_COMMAND = "sed -i 's/return a - b/return a + b/' src/calc.py"
AIDER_EDIT = "src/calc.py\n```python\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n```\n"
USAGE = {
    "prompt_tokens": 100,
    "completion_tokens": 10,
    "total_tokens": 110,
    "prompt_tokens_details": {"cached_tokens": 40},
}


@dataclass
class Logged:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class _State:
    command: str = FIX_COMMAND
    always_tool: bool = False
    fail_status: int | None = None
    requests: list[Logged] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    served: int = 0


MODEL_PATHS = ("/chat/completions", "/responses", "/messages")
RESPONSES_USAGE = {
    "input_tokens": 100,
    "input_tokens_details": {"cached_tokens": 40},
    "output_tokens": 10,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 110,
}
ANTHROPIC_USAGE = {"input_tokens": 60, "cache_read_input_tokens": 40, "cache_creation_input_tokens": 0}


def _tool_name(tool: dict[str, Any]) -> str | None:
    name = tool.get("function", {}).get("name") if "function" in tool else tool.get("name")
    return name if isinstance(name, str) else None


def _shell_tool(tools: list[dict[str, Any]]) -> str | None:
    names = [_tool_name(tool) for tool in tools]
    for name in ("bash", "Bash", "exec_command", "shell"):
        if name in names:
            return name
    return next((name for name in names if name), None)


def _arguments(tool: str | None, command: str) -> str:
    """The shell tool's arguments: Codex's ``exec_command`` takes ``cmd``, its ``shell`` an argv."""
    if tool == "exec_command":
        return json.dumps({"cmd": command})
    if tool == "shell":
        return json.dumps({"command": ["bash", "-lc", command]})
    return json.dumps({"command": command, "description": "fix add"})


def _after_tool(api: str, request: dict[str, Any]) -> bool:
    """Whether the request's last message is a tool result (in ``api``'s shape)."""
    if api == "openai-responses":
        items = request.get("input")
        last = items[-1] if isinstance(items, list) and items else {}
        return last.get("type") in ("function_call_output", "custom_tool_call_output")
    messages = request.get("messages") or []
    last = messages[-1] if messages else {}
    if api == "anthropic":
        content = last.get("content")
        blocks = content if isinstance(content, list) else []
        return last.get("role") == "user" and any(b.get("type") == "tool_result" for b in blocks)
    return last.get("role") == "tool"


def _answer(state: _State, api: str, request: dict[str, Any]) -> dict[str, Any]:
    """The assistant message: ``{"content": ...}`` or ``{"tool_calls": [...]}`` (Chat Completions' shape)."""
    tools = request.get("tools") or []
    messages = request.get("messages") or []
    if not tools and "SEARCH/REPLACE" in json.dumps(messages):  # aider: edits are blocks in the text
        return {"content": AIDER_EDIT}
    if not tools:
        return {"content": "Fix add"}
    if _after_tool(api, request) and not state.always_tool and request.get("model") != "loop":
        return {"content": "Fixed: add returns a + b."}
    with state.lock:
        state.served += 1
        number = state.served
    name = _shell_tool(tools)
    call = {
        "index": 0,
        "id": f"call_{number}",
        "type": "function",
        "function": {"name": name, "arguments": _arguments(name, state.command)},
    }
    return {"tool_calls": [call]}


def _chunks(model: str, answer: dict[str, Any]) -> list[dict[str, Any]]:
    finish = "tool_calls" if "tool_calls" in answer else "stop"
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model}
    first = {
        **base,
        "choices": [{"index": 0, "delta": {"role": "assistant", **answer}, "finish_reason": None}],
    }
    end = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    usage = {**base, "choices": [], "usage": USAGE}
    return [first, end, usage]


def _sse(events: list[tuple[str | None, dict[str, Any]]]) -> bytes:
    named = (
        ((f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n") for name, data in events
    )
    return "".join(named).encode()


def _chat(model: str, answer: dict[str, Any], stream: bool) -> tuple[str, bytes]:
    if stream:
        return "text/event-stream", _sse([(None, c) for c in _chunks(model, answer)]) + b"data: [DONE]\n\n"
    finish = "tool_calls" if "tool_calls" in answer else "stop"
    message = {"role": "assistant", "content": None, **answer}
    for call in message.get("tool_calls", []):
        call.pop("index", None)
    choice = {"index": 0, "message": message, "finish_reason": finish}
    completion = {"id": "c", "object": "chat.completion", "model": model, "usage": USAGE, "choices": [choice]}
    return "application/json", json.dumps(completion).encode()


def _responses(model: str, answer: dict[str, Any], stream: bool) -> tuple[str, bytes]:
    items: list[dict[str, Any]] = []
    for number, call in enumerate(answer.get("tool_calls", [])):
        function = call["function"]
        items.append(
            {"type": "function_call", "id": f"fc_{number}", "call_id": call["id"], "status": "completed"}
            | {"name": function["name"], "arguments": function["arguments"]}
        )
    if "content" in answer:
        text = {"type": "output_text", "text": answer["content"], "annotations": []}
        items.append(
            {"type": "message", "id": "msg_0", "role": "assistant", "status": "completed"}
            | {"content": [text]}
        )
    response = {"id": "resp_1", "object": "response", "created_at": 0, "status": "completed", "model": model}
    done = response | {"output": items, "usage": RESPONSES_USAGE}
    if not stream:
        return "application/json", json.dumps(done).encode()
    events: list[tuple[str | None, dict[str, Any]]] = [
        ("response.created", {"type": "response.created", "response": response | {"status": "in_progress"}})
    ]
    for index, item in enumerate(items):
        events.append(
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": index, "item": item},
            )
        )
    events.append(("response.completed", {"type": "response.completed", "response": done}))
    return "text/event-stream", _sse(events)


def _anthropic(model: str, answer: dict[str, Any], stream: bool) -> tuple[str, bytes]:
    blocks: list[dict[str, Any]] = []
    if "content" in answer:
        blocks.append({"type": "text", "text": answer["content"]})
    for call in answer.get("tool_calls", []):
        function = call["function"]
        blocks.append(
            {"type": "tool_use", "id": call["id"], "name": function["name"]}
            | {"input": json.loads(function["arguments"])}
        )
    stop = "tool_use" if "tool_calls" in answer else "end_turn"
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": model, "stop_reason": None}
    if not stream:
        whole = message | {
            "content": blocks,
            "stop_reason": stop,
            "usage": ANTHROPIC_USAGE | {"output_tokens": 10},
        }
        return "application/json", json.dumps(whole).encode()
    start = message | {"content": [], "usage": ANTHROPIC_USAGE | {"output_tokens": 1}}
    events: list[tuple[str | None, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(blocks):
        empty = {"type": "text", "text": ""} if block["type"] == "text" else block | {"input": {}}
        delta = (
            {"type": "text_delta", "text": block["text"]}
            if block["type"] == "text"
            else {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        )
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": empty}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": 10},
    }
    events += [("message_delta", end), ("message_stop", {"type": "message_stop"})]
    return "text/event-stream", _sse(events)


def _api(path: str) -> str:
    path = path.split("?")[0]
    if path.endswith("/responses"):
        return "openai-responses"
    return "anthropic" if path.endswith("/messages") else "openai-chat"


def _error(api: str) -> bytes:
    if api == "anthropic":
        return json.dumps(
            {"type": "error", "error": {"type": "api_error", "message": "scripted failure"}}
        ).encode()
    return json.dumps({"error": {"message": "scripted failure", "type": "server_error"}}).encode()


class _Handler(BaseHTTPRequestHandler):
    state: _State
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:
        return None

    def do_GET(self) -> None:
        self._send(
            200,
            "application/json",
            json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode(),
        )

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        with self.state.lock:
            self.state.requests.append(
                Logged(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
        request = json.loads(body) if body else {}
        if self.path.split("?")[0].endswith("/messages/count_tokens"):
            self._send(200, "application/json", json.dumps({"input_tokens": 100}).encode())
            return
        api = _api(self.path)
        if self.state.fail_status is not None or request.get("model") == "fail":
            self._send(self.state.fail_status or 500, "application/json", _error(api))
            return
        answer = _answer(self.state, api, request)
        model = request.get("model", "m")
        write = {"openai-chat": _chat, "openai-responses": _responses, "anthropic": _anthropic}[api]
        content_type, data = write(model, answer, bool(request.get("stream")))
        self._send(200, content_type, data)

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class AgentEndpoint:
    """The scripted endpoint on 127.0.0.1 at a free port (``base_url`` ends with ``/v1``)."""

    def __init__(
        self, *, command: str = FIX_COMMAND, always_tool: bool = False, fail_status: int | None = None
    ) -> None:
        self.state = _State(command=command, always_tool=always_tool, fail_status=fail_status)
        handler = type("Handler", (_Handler,), {"state": self.state})
        self._server = QuietServer(handler)
        self._server.start()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[Logged]:
        with self.state.lock:
            return list(self.state.requests)

    @property
    def model_calls(self) -> list[Logged]:
        return [r for r in self.requests if r.path.split("?")[0].endswith(MODEL_PATHS)]

    def close(self) -> None:
        self._server.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
