"""A scripted model endpoint for external-agent tests: answers Chat Completions by a fixed rule, logs requests.

The rule (deterministic, whatever agent asks):
- a request without tools (OpenCode's session-title call) gets the text ``Fix add``;
- a request whose last message is a tool result gets the final text ``Fixed: add returns a + b.``;
- any other request gets one tool call of the agent's shell tool (``bash`` for OpenCode and the test agent)
  running ``command`` (by default the sed that fixes smoke-coding's fix-add).
``always_tool=True`` answers every request with the tool call (an agent that never stops: budget tests);
``fail_status`` answers every request with that HTTP status. The model names ``loop`` and ``fail`` do the
same for one request. Streams SSE when the request says
``stream: true`` (usage in the last chunk), else a JSON completion. ``requests`` is the endpoint's own log,
``model_calls`` counts the POSTs to ``/chat/completions``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

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


def _shell_tool(tools: list[dict[str, Any]]) -> str | None:
    names = [tool.get("function", {}).get("name") for tool in tools]
    for name in ("bash", "exec_command", "shell"):
        if name in names:
            return name
    return names[0] if names else None


def _answer(state: _State, request: dict[str, Any]) -> dict[str, Any]:
    """The assistant message: ``{"content": ...}`` or ``{"tool_calls": [...]}``."""
    tools = request.get("tools") or []
    messages = request.get("messages") or []
    if not tools and "SEARCH/REPLACE" in json.dumps(messages):  # aider: edits are blocks in the text
        return {"content": AIDER_EDIT}
    if not tools:
        return {"content": "Fix add"}
    last = messages[-1] if messages else {}
    if last.get("role") == "tool" and not state.always_tool and request.get("model") != "loop":
        return {"content": "Fixed: add returns a + b."}
    with state.lock:
        state.served += 1
        number = state.served
    arguments = json.dumps({"command": state.command, "description": "fix add"})
    call = {
        "index": 0,
        "id": f"call_{number}",
        "type": "function",
        "function": {"name": _shell_tool(tools), "arguments": arguments},
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
        if self.state.fail_status is not None or request.get("model") == "fail":
            error = {"error": {"message": "scripted failure", "type": "server_error"}}
            self._send(self.state.fail_status or 500, "application/json", json.dumps(error).encode())
            return
        answer = _answer(self.state, request)
        model = request.get("model", "m")
        if request.get("stream"):
            data = b"".join(
                b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in _chunks(model, answer)
            )
            self._send(200, "text/event-stream", data + b"data: [DONE]\n\n")
            return
        finish = "tool_calls" if "tool_calls" in answer else "stop"
        message = {"role": "assistant", "content": None, **answer}
        for call in message.get("tool_calls", []):
            call.pop("index", None)
        completion = {
            "id": "c",
            "object": "chat.completion",
            "model": model,
            "usage": USAGE,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        self._send(200, "application/json", json.dumps(completion).encode())

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
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

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
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
