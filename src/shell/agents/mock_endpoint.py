"""``MockEndpoint``: a model endpoint on 127.0.0.1 that answers from a script, for trying an agent with no model.

``alisio eval mock-endpoint`` serves one; the tests serve it in-process. It speaks every wire format the lab
does, by path (its ``base_url`` ends with ``/v1``; a request under another version segment, such as Gemini's
``/v1beta``, is answered as well); what it answers is the core's
(``alisio.core.agents.mock``): a script's turns, or the default that fixes smoke-coding's fix-add. A ``GET``
lists one model, ``m``.

Rules it keeps:

- it binds at construction (``OSError`` when the port is taken) and serves from a thread until ``close``;
- every request is kept in ``requests`` (path, headers, body) and said in one line to ``on_request``: the API,
  the model, the turn and what it answered; a header's value is never said (an agent's key is in one);
- a handler that fails answers HTTP 500 naming the error, which is kept in ``errors`` (``close`` raises it
  when ``strict``: a broken endpoint fails its test), never printed as a traceback;
- ``close`` stops serving, shuts the connections still open and joins their threads (bounded).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

import msgspec

from alisio.core.agents.mock import (
    DEFAULT_USAGE,
    FIX_COMMAND,
    Answer,
    MockCall,
    Request,
    default_reply,
    read_request,
    render,
    scripted_reply,
    target_of,
)
from alisio.core.harness.protocol import Usage
from alisio.core.harness.wire import wire_format

__all__ = [
    "DEFAULT_USAGE",
    "FIX_COMMAND",
    "Logged",
    "MockEndpoint",
    "ScriptError",
    "read_script",
    "script_answers",
]

_MAX_BODY: Final = 64 << 20
_JOIN_S: Final = 5.0
_STATUS: Final = {"auth": 401, "bad_request": 400, "rate_limited": 429}
"""A script turn's ``failure`` kind as the HTTP status answered (any other kind: 500)."""


class ScriptError(ValueError):
    """A script that cannot be read or is invalid: one line naming the file and the field."""


def read_script(path: Path) -> tuple[Answer, ...]:
    """The turns of the script at ``path`` (``eval run --script``'s format) as the answers they give.

    Raises:
        ScriptError: unreadable, not JSON, invalid (msgspec's path to the field), or no turn.
    """
    from alisio.shell.harness.providers.scripted import read_script_bytes

    try:
        data = read_script_bytes(path)
    except OSError as error:
        raise ScriptError(f"{path}: cannot read the script: {error.strerror or error}") from None
    return script_answers(data, str(path))


def script_answers(data: bytes, source: str) -> tuple[Answer, ...]:
    """The turns of a script's bytes as the answers they give (``source`` names it in errors).

    Raises:
        ScriptError: not JSON, invalid (msgspec's path to the field), or no turn.
    """
    from alisio.shell.harness.providers.scripted import Script

    try:
        script = msgspec.json.decode(data, type=Script)
    except msgspec.ValidationError as error:
        raise ScriptError(f"{source}: invalid script: {error}") from None
    except msgspec.DecodeError as error:
        raise ScriptError(f"{source}: not valid JSON: {error}") from None
    if not script.turns:
        raise ScriptError(f"{source}: invalid script: `$.turns` is empty")
    conditional = [n for n, t in enumerate(script.turns) if t.when is not None or t.unless is not None]
    if conditional:
        raise ScriptError(
            f"{source}: turns[{conditional[0]}]: when/unless: the mock endpoint picks turns by position "
            "(eval run --script plays them)"
        )
    answers = []
    for number, turn in enumerate(script.turns, start=1):
        if turn.failure is not None:
            status = _STATUS.get(turn.failure.kind, 500)
            answers.append(Answer(status=status, text=f"{turn.failure.kind}: {turn.failure.message}"))
            continue
        if turn.error is not None:
            answers.append(Answer(status=500, text=turn.error))
            continue
        calls = tuple(
            MockCall(
                id=call.id or f"call_{number}_{index}",
                name=call.name,
                arguments=call.arguments
                if isinstance(call.arguments, str)
                else msgspec.json.encode(call.arguments).decode(),
            )
            for index, call in enumerate(turn.tool_calls, start=1)
        )
        usage = None if turn.usage is None else Usage(**msgspec.structs.asdict(turn.usage))
        finish = turn.finish_reason or ("tool_calls" if calls else "stop")
        answers.append(Answer(text=turn.text or "", calls=calls, finish=finish, usage=usage))
    return tuple(answers)


@dataclass
class Logged:
    """One request the endpoint received."""

    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class _State:
    script: tuple[Answer, ...] | None
    source: str
    command: str
    always_tool: bool
    fail_status: int | None
    on_request: Callable[[str], None] | None
    requests: list[Logged] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(1))


class MockEndpoint:
    """The mock endpoint on ``host:port`` (0: a free port), serving from a thread; see the module docstring.

    ``script``: its turns (``read_script``), named ``source`` in messages; without one, the default answers,
    whose tool call runs ``command``. ``always_tool``: the default never stops calling the tool (budgets);
    ``fail_status``: every model call is answered that HTTP error. ``on_request`` sees each request's line.
    """

    def __init__(
        self,
        *,
        script: Sequence[Answer] | None = None,
        source: str = "the script",
        command: str = FIX_COMMAND,
        always_tool: bool = False,
        fail_status: int | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        on_request: Callable[[str], None] | None = None,
        strict: bool = True,
    ) -> None:
        turns = None if script is None else tuple(script)
        self.state = _State(turns, source, command, always_tool, fail_status, on_request)
        self.strict = strict
        handler = type("Handler", (_Handler,), {"state": self.state})
        self._server = _Server((host, port), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
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
        return [
            r for r in self.requests if (found := target_of(r.path)) is not None and found.call is not None
        ]

    @property
    def errors(self) -> list[str]:
        with self.state.lock:
            return list(self.state.errors)

    def close(self) -> None:
        """Stop serving and end every connection; raise the handlers' errors when ``strict``."""
        self._server.close()
        self._thread.join(_JOIN_S)
        if self.strict and self.errors:
            raise RuntimeError("the mock endpoint's handler failed: " + "; ".join(self.errors))

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._open: dict[threading.Thread, socket.socket] = {}
        self._lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(target=self._handle, args=(request, client_address), daemon=True)
        with self._lock:
            self._open[thread] = request
        thread.start()

    def _handle(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._open.pop(threading.current_thread(), None)

    def handle_error(self, request: object, client_address: object) -> None:
        return None  # a client that hung up: the handler keeps its own errors

    def close(self) -> None:
        self.shutdown()
        with self._lock:
            left = dict(self._open)
        for request in left.values():
            with contextlib.suppress(OSError):
                request.shutdown(socket.SHUT_RDWR)
        for thread in left:
            thread.join(_JOIN_S)
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    state: _State
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:
        return None  # each request is said once, by on_request

    def do_GET(self) -> None:
        self._send(200, "application/json", json.dumps({"object": "list", "data": [{"id": "m"}]}).encode())
        if self.state.on_request is not None:
            self.state.on_request(f"GET {self.path.split('?')[0]}: the model list (m)")

    def do_POST(self) -> None:
        given = self.headers.get("content-length") or "0"
        length = int(given) if given.isdigit() else 0
        if length > _MAX_BODY:  # the rest is never read: this connection cannot carry another request
            self.close_connection = True
        body = self.rfile.read(min(length, _MAX_BODY))
        with self.state.lock:
            self.state.requests.append(
                Logged(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
        try:
            status, content_type, data, said = self._answer(body)
        except Exception as error:  # a bug here: an answer that says so, never a silent hang
            with self.state.lock:
                self.state.errors.append(f"{type(error).__name__}: {error}")
            status, content_type = 500, "application/json"
            data = json.dumps(
                {"error": {"message": f"mock-endpoint: {type(error).__name__}: {error}"}}
            ).encode()
            said = f"HTTP 500: {type(error).__name__}: {error}"
        self._send(status, content_type, data)
        if self.state.on_request is not None:
            self.state.on_request(f"POST {self.path.split('?')[0]}: {said}")

    def _answer(self, body: bytes) -> tuple[int, str, bytes, str]:
        target = target_of(self.path)
        if target is None:
            message = "mock-endpoint: no such path (POST a model call of one of the wire formats)"
            return 404, "application/json", json.dumps({"error": {"message": message}}).encode(), "HTTP 404"
        if target.call is None:
            return 200, "application/json", wire_format(target.api).token_count(100), "count_tokens: 100"
        try:
            document = json.loads(body) if body else {}
        except ValueError as error:
            message = f"mock-endpoint: the body is not JSON: {error}"
            return 400, "application/json", json.dumps({"error": {"message": message}}).encode(), "HTTP 400"
        request = read_request(target.api, document if isinstance(document, dict) else {}, target.call)
        answer = self._reply(request)
        status, content_type, data = render(target.api, request.model, answer, request.stream)
        return status, content_type, data, _said(request, answer)

    def _reply(self, request: Request) -> Answer:
        state = self.state
        if state.fail_status is not None or request.model == "fail":
            return Answer(status=state.fail_status or 500, text="scripted failure")
        if state.script is not None:
            return scripted_reply(request, state.script, state.source)
        answer = default_reply(request, command=state.command, always_tool=state.always_tool, number=0)
        if not answer.calls:
            return answer
        with state.lock:  # the calls the endpoint made are numbered 1, 2, ... in the order it made them
            number = next(state.numbers)
        return default_reply(request, command=state.command, always_tool=state.always_tool, number=number)

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _cut(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _said(request: Request, answer: Answer) -> str:
    """``openai-chat, model m, turn 2 (3 tools, after a tool result) -> tool call bash {...}``."""
    tools = f"{len(request.tools)} tool{'s' if len(request.tools) != 1 else ''}"
    after = ", after a tool result" if request.after_tool else ""
    head = f"{request.api}, model {request.model}, turn {request.assistant_turns + 1} ({tools}{after})"
    if answer.status != 200:
        return f"{head} -> HTTP {answer.status}: {_cut(answer.text)}"
    parts = [f"text {_cut(answer.text, 40)!r}"] if answer.text else []
    parts += [f"tool call {call.name} {_cut(call.arguments, 60)}" for call in answer.calls]
    return f"{head} -> {'; '.join(parts) or 'an empty answer'}"
