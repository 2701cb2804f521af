"""A real local HTTP server for provider tests: serves a queue of canned replies and records every request.

Usage::

    with SseServer() as server:
        server.enqueue(Reply.sse({"choices": [...]}), Reply.json({"error": {"message": "no"}}, status=401))
        provider = OpenAICompatProvider(server.base_url, "m", client=...)
        ...
        server.requests[0].json()["stream"]

Each reply is written with chunked transfer encoding, one chunk per piece with a flush after each (so a body
split with ``split_body`` reaches the client at those byte boundaries), on a socket with Nagle disabled.
``drop_after`` closes the socket abruptly after that many body bytes (no terminating chunk: the client sees a
broken stream). Replies are served in order, one per request; with the queue empty the server answers 500 and
says so; a ``respond`` function, when given, answers each request from what it asks instead (a
stand-in model whose success depends on the task). The server listens on 127.0.0.1 on a free port and runs in a daemon thread.
"""

from __future__ import annotations

import json
import random
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any, Self

from tests.integration.servers import QuietServer


@dataclass(frozen=True)
class Reply:
    """One canned HTTP response."""

    status: int = 200
    body: bytes = b""
    content_type: str = "text/event-stream"
    headers: tuple[tuple[str, str], ...] = ()
    pieces: tuple[bytes, ...] | None = None
    """The body as written, piece by piece; ``None`` writes ``body`` in one piece."""
    drop_after: int | None = None
    """Close the connection abruptly after this many body bytes."""
    pause_s: float = 0.0
    """Sleep between pieces (and before the first one)."""

    @classmethod
    def sse(cls, *payloads: object, done: bool = True, **options: Any) -> Reply:
        """An event stream of ``data:`` events: dicts are JSON-encoded, strings are sent as they are."""
        return cls(body=sse_body(payloads, done=done), **options)

    @classmethod
    def json(cls, payload: object, status: int = 200, **options: Any) -> Reply:
        """A JSON response (an error body, or a non-streamed completion)."""
        return cls(
            status=status, body=json.dumps(payload).encode(), content_type="application/json", **options
        )

    def split(self, seed: int, max_piece: int = 64) -> Reply:
        """The same reply, its body written in random pieces of 1..``max_piece`` bytes."""
        return Reply(
            status=self.status,
            body=self.body,
            content_type=self.content_type,
            headers=self.headers,
            pieces=split_body(self.body, seed, max_piece),
            drop_after=self.drop_after,
            pause_s=self.pause_s,
        )


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    body: bytes
    header_lines: tuple[tuple[str, str], ...] = ()
    """Every header as received, in order, duplicates included."""

    def json(self) -> Any:
        return json.loads(self.body)


def sse_body(payloads: Iterable[object], done: bool = True) -> bytes:
    """Frame ``payloads`` as ``data:`` events separated by blank lines, optionally ending with ``[DONE]``."""
    parts = [f"data: {p if isinstance(p, str) else json.dumps(p)}\n\n" for p in payloads]
    if done:
        parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def split_body(data: bytes, seed: int, max_piece: int = 64) -> tuple[bytes, ...]:
    """``data`` cut at random byte boundaries (possibly inside a UTF-8 character or a ``\\r\\n``)."""
    rng = random.Random(seed)
    pieces: list[bytes] = []
    at = 0
    while at < len(data):
        size = rng.randint(1, max_piece)
        pieces.append(data[at : at + size])
        at += size
    return tuple(pieces)


@dataclass
class _State:
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    respond: Callable[[RecordedRequest], Reply] | None = None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # silence the stderr access log
        return

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        state = self.server.state
        with state.lock:
            request = RecordedRequest(
                method=self.command,
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                header_lines=tuple(self.headers.items()),
            )
            state.requests.append(request)
            reply: Reply | None
            if state.respond is not None:
                reply = state.respond(request)  # under the lock: a responder may keep state
            else:
                reply = state.replies.popleft() if state.replies else None
        if reply is None:
            reply = Reply.json({"error": {"message": "sse_server: no reply queued"}}, status=500)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.close_connection = True
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()
        sent = 0
        for piece in reply.pieces if reply.pieces is not None else (reply.body,):
            if reply.pause_s:
                self.server.closing.wait(reply.pause_s)
            if reply.drop_after is not None and sent + len(piece) >= reply.drop_after:
                self._write_chunk(piece[: reply.drop_after - sent])
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self._write_chunk(piece)
            sent += len(piece)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write_chunk(self, piece: bytes) -> None:
        if piece:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()


class _Server(QuietServer):
    """Quiet (``servers.QuietServer``): a client that hangs up mid-answer (a run stopped, a request cancelled)
    is what several tests do on purpose, and a traceback would land in the stderr of a CLI run in this process."""

    def __init__(self, state: _State) -> None:
        super().__init__(_Handler)
        self.state = state


class SseServer:
    """A local OpenAI-compatible stand-in: ``enqueue`` replies, point a provider at ``base_url``."""

    def __init__(self, *replies: Reply, respond: Callable[[RecordedRequest], Reply] | None = None) -> None:
        """``respond``, when given, answers every request instead of the queue (from what it asks)."""
        self._state = _State(replies=deque(replies), respond=respond)
        self._server = _Server(self._state)
        self._server.start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no path)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """``url`` + ``/v1``: what a user passes as ``--base-url``."""
        return self.url + "/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def pending(self) -> int:
        """Replies not served yet."""
        with self._state.lock:
            return len(self._state.replies)

    def enqueue(self, *replies: Reply) -> None:
        with self._state.lock:
            self._state.replies.extend(replies)

    def close(self) -> None:
        self._server.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
