"""The recording proxy's HTTP side: its servers (TCP or unix socket) and the handler of one request.

For each request, in this order: the run's token (401 in the api's error shape without it), the route (404 /
400: ``alisio.core.agents.routes``), the body (at most ``MAX_BODY_BYTES``: 413 past it), then, for a model
call, the budgets (``RunProxy.admit``: a 400 naming the budget), then the answer, relayed as it streams
(chunked) from the proxy's client, a bounded copy kept (``KEPT_BYTES``): the client sends to the provider, or
in replay mode to the cassette (``alisio.shell.agents.faults``), under the run's faults if it has some. A
model call carries a ``Tapped`` (the request's ``TAPPED`` extension), which the client fills below the faults:
whether the call got past them, and the answer as it came from the provider. A replay that diverges raises
``ReplayDiverged`` from the client: the agent gets a 400 naming it and the run ends. A relay that breaks
mid-stream (the provider dropped it, an injected ``cut``, or the run ended and the proxy cut it) keeps what
arrived: for an event stream, up to its last complete event. Nothing is printed: requests are recorded as
calls.
"""

from __future__ import annotations

import contextlib
import os
import socket
import socketserver
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Final, Protocol

import httpx
from returns.result import Failure, Result

from alisio.core.agents.exchange import Api
from alisio.core.agents.ledger import BudgetHit
from alisio.core.agents.routes import Route, RouteRefusal, error_body
from alisio.core.harness.wire_common import SseDecoder

__all__ = [
    "KEPT_BYTES",
    "MAX_BODY_BYTES",
    "TAPPED",
    "Owner",
    "ReplayDiverged",
    "Replayer",
    "Tapped",
    "serve",
    "server_url",
    "shut",
]

KEPT_BYTES: Final = 32 << 20
"""The copy of one answer the proxy keeps (the agent gets all of it)."""
MAX_BODY_BYTES: Final = 64 << 20
"""The largest request body forwarded."""
_HOP_OUT: Final = frozenset({"content-length", "transfer-encoding", "connection", "content-encoding"})
TAPPED: Final = "alisio.tapped"
"""The request extension that marks a model call and carries its ``Tapped``."""


class Replayer(Protocol):
    """Replay mode: answers a model call from a cassette instead of the provider."""

    def answer(self, body: bytes) -> tuple[int, str, bytes] | str:
        """``(status, content type, body)`` of the recorded answer, or the divergence's one line."""
        ...


class ReplayDiverged(Exception):
    """A replayed model call that the cassette does not hold (its one line is the message)."""


@dataclass
class Tapped:
    """One model call as it reached the provider (or, in replay, the cassette), filled by the proxy's client
    below the injected faults (``alisio.shell.agents.faults``)."""

    passed: bool = False
    """It got past the faults (a ``429``, ``500``, ``503`` or ``stall`` never does: it reached nothing)."""
    complete: bool = False
    """Its answer's body arrived whole (and unencoded): ``body`` is all of it."""
    body: list[bytes] = field(default_factory=list)
    """The answer's body as it arrived (at most ``KEPT_BYTES``, as the proxy's own copy)."""


class Owner(Protocol):
    """What the handler asks of its proxy (``alisio.shell.agents.proxy.RunProxy``)."""

    api: Api
    client: httpx.Client
    closing: bool
    diverged: bool
    on_stop: Callable[[], None]

    def authorized(self, authorization: str, api_key: str) -> bool: ...

    def given_key(self, header: Callable[[str, str], str]) -> str: ...

    def route(self, method: str, target: str) -> Result[tuple[Route, str], RouteRefusal]: ...

    def admit(self, body: bytes) -> tuple[int, BudgetHit | str | None]: ...

    def elapsed_ms(self) -> int: ...

    def headers(self, incoming: list[tuple[str, str]]) -> dict[str, str]: ...

    def keep(
        self,
        ticket: int,
        started_ms: int,
        request: bytes,
        answer: tuple[int, str, bytes],
        *,
        cut: bool = False,
        path: str = "",
        first_ms: int | None = None,
        tapped: Tapped | None = None,
    ) -> None: ...

    def release(self, ticket: int) -> None: ...


def serve(owner: Owner, address: tuple[str, int], unix: str | None) -> ThreadingHTTPServer:
    """A server for ``owner`` on ``address`` (or the unix socket ``unix``), serving on a thread.

    Raises:
        OSError: the address cannot be bound.
    """

    class Handler(_Handler):
        proxy = owner
        disable_nagle_algorithm = unix is None  # TCP_NODELAY is a TCP option

    server = _Server(address, Handler) if unix is None else _UnixServer(unix, Handler)  # type: ignore[arg-type]
    threading.Thread(target=server.serve_forever, name="alisio-proxy", daemon=True).start()
    return server


def server_url(server: object) -> str:
    """``http://HOST:PORT`` of a TCP server."""
    assert isinstance(server, ThreadingHTTPServer)
    host, port = server.server_address[:2]
    return f"http://{host!s}:{port}"


def shut(server: object, before_close: Callable[[], None]) -> None:
    """Stop accepting, run ``before_close`` (cut the calls in flight, wait for them), then close."""
    assert isinstance(server, ThreadingHTTPServer)
    server.shutdown()
    before_close()
    server.server_close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        return None  # an agent that drops its connection (killed at a budget) is not our error to print


class _UnixServer(_Server):
    address_family = socket.AF_UNIX

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)  # HTTPServer's would look the path up as a host name
        os.chmod(str(self.server_address), 0o600)
        self.server_name, self.server_port = "localhost", 0


class _BodyTooLarge(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    proxy: Owner
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:
        return None  # requests are recorded as calls; nothing goes to stderr

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        proxy = self.proxy
        if not proxy.authorized(self.headers.get("authorization", ""), proxy.given_key(self.headers.get)):
            message = (
                "alisio proxy: this request does not carry the run's key; refused (nothing was forwarded)"
            )
            self._error(401, "authentication_error", message, close=True)
            return
        routed = proxy.route(self.command, self.path)
        if isinstance(routed, Failure):
            refusal = routed.failure()
            self._error(refusal.status, "proxy_error", refusal.message, close=True)
            return
        found, url = routed.unwrap()
        try:
            body = self._body()
        except _BodyTooLarge:
            message = f"alisio proxy: the request body passed {MAX_BODY_BYTES} bytes; refused"
            self._error(413, "proxy_error", message, close=True)
            return
        if not found.model_call:
            self._relay(url, body)  # not counted: listing models, counting tokens
            return
        ticket, hit = proxy.admit(body)
        if hit is not None:
            self._refuse(hit)
            return
        self._model_call(ticket, url, body, found.path)

    def _model_call(self, ticket: int, url: str, body: bytes, path: str) -> None:
        proxy = self.proxy
        started = proxy.elapsed_ms()
        tapped = Tapped()
        kept = False
        try:
            answer, broken, first_ms = self._relay(url, body, tapped)
            cut = broken and proxy.closing
            kept_answer = _complete(answer) if broken else answer
            proxy.keep(
                ticket, started, body, kept_answer, cut=cut, path=path, first_ms=first_ms, tapped=tapped
            )
            kept = True
        except ReplayDiverged as diverged:  # answered before any byte of the call was sent
            proxy.diverged = True
            self._error(400, "replay_divergence", f"alisio replay: {diverged}; the lab ends this run")
            proxy.on_stop()
        finally:
            if not kept:
                proxy.release(ticket)

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            parts: list[bytes] = []
            size = 0
            while True:
                length = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if length == 0:
                    self.rfile.readline()
                    return b"".join(parts)
                size += length
                if size > MAX_BODY_BYTES:
                    raise _BodyTooLarge
                parts.append(self.rfile.read(length))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        if length < 0 or length > MAX_BODY_BYTES:
            raise _BodyTooLarge
        return self.rfile.read(length)

    def _send(self, status: int, content_type: str, body: bytes, *, close: bool = False) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        if close:
            self.send_header("connection", "close")
            self.close_connection = True  # a body left unread must not be read as the next request
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, kind: str, message: str, *, close: bool = False) -> bytes:
        body = error_body(self.proxy.api, status, kind, message)
        with contextlib.suppress(OSError):
            self._send(status, "application/json", body, close=close)
        return body

    def _refuse(self, hit: BudgetHit | str) -> None:
        if isinstance(hit, str):  # the run ended while the call waited for calls in flight
            self._error(503, "proxy_error", f"alisio proxy: {hit}; the call was not forwarded", close=True)
            return
        message = f"alisio: budget {hit.budget} exceeded (limit {hit.limit}, reached {hit.value}); the lab ends this run"
        self._error(400, "budget_exceeded", message)
        self.proxy.on_stop()

    def _relay(
        self, url: str, body: bytes, tapped: Tapped | None = None
    ) -> tuple[tuple[int, str, bytes], bool, int | None]:
        """Forward to ``url``, stream the answer back (chunked) as it comes, and return it (bounded), whether
        it broke before its end and when its first bytes arrived (the proxy's clock; ``None``: none did). A
        provider that cannot be reached is a 502. ``tapped``: a model call's (module docstring)."""
        proxy = self.proxy
        headers = proxy.headers(list(self.headers.items()))
        extensions = {} if tapped is None else {TAPPED: tapped}
        request = proxy.client.build_request(
            self.command, url, content=body, headers=headers, extensions=extensions
        )
        try:
            response = proxy.client.send(request, stream=True)
        except httpx.HTTPError as error:
            message = f"alisio proxy: the provider cannot be reached: {type(error).__name__}: {error}"
            return (502, "application/json", self._error(502, "proxy_error", message)), False, None
        kept: list[bytes] = []
        first = _FirstEvent(response.headers.get("content-type", ""))
        size = 0
        broken = False
        try:
            with contextlib.suppress(OSError):  # the agent went away: keep reading what the model said
                self.send_response(response.status_code)
                for name, value in response.headers.multi_items():
                    if name.lower() not in _HOP_OUT:
                        self.send_header(name, value)
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
            try:
                for chunk in response.iter_bytes():
                    first.feed(chunk, proxy.elapsed_ms)
                    if size < KEPT_BYTES:
                        kept.append(chunk)
                        size += len(chunk)
                    with contextlib.suppress(OSError):
                        self.wfile.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
            except httpx.HTTPError:
                broken = True  # the provider dropped it, or the run's end cut it
                self.close_connection = True  # no last chunk: the agent sees the stream broke
            else:
                with contextlib.suppress(OSError):
                    self.wfile.write(b"0\r\n\r\n")
        finally:
            response.close()
        answer = (response.status_code, response.headers.get("content-type", ""), b"".join(kept))
        return answer, broken, first.ms


class _FirstEvent:
    """When an answer's first event arrived: for an event stream, the chunk that completes its first SSE event
    (keep-alive comments are not one: llama.cpp's server sends one every 30 s while it processes a prompt, so
    counting bytes measured the ping, not the answer); for any other body, its first bytes."""

    def __init__(self, content_type: str) -> None:
        self._events = SseDecoder() if "text/event-stream" in content_type.lower() else None
        self.ms: int | None = None

    def feed(self, chunk: bytes, now: Callable[[], int]) -> None:
        if self.ms is not None or not chunk:
            return
        if self._events is None or self._events.feed(chunk):
            self.ms = now()


def _complete(answer: tuple[int, str, bytes]) -> tuple[int, str, bytes]:
    """A broken answer as far as it is whole: an event stream up to its last complete event."""
    status, content_type, body = answer
    if "text/event-stream" not in content_type:
        return answer
    end = max(body.rfind(b"\n\n"), body.rfind(b"\r\n\r\n"), body.rfind(b"\r\r"))
    ending = 4 if body[end : end + 4] == b"\r\n\r\n" else 2
    return status, content_type, body[: end + ending] if end >= 0 else b""
