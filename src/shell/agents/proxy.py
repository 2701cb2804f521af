"""The per-run pass-through proxy an external agent talks to: ``RunProxy``.

It listens on 127.0.0.1 at a random port (or on a unix socket: the one bound into a sandboxed agent's
bubblewrap, ``alisio.shell.sandbox.agents``), forwards each request's body unchanged (the exact bytes) to the
lab's configured provider, adding the real key (the agent has only a dummy one), and streams the answer back
as it arrives while keeping a bounded copy. Each model call (a POST to ``.../chat/completions``,
``.../responses`` or ``.../messages``) is read with ``alisio.core.agents.exchange`` and kept as a ``Call``.

Rules it keeps:
- budgets are checked before a model call is forwarded: past ``maxTurns`` (model calls), ``maxTokens``
  (reported input + output) or ``maxToolCalls`` (tool calls the model asked for) the call is answered with a
  400 error naming the budget, the proxy's ``stop`` is set and ``on_stop`` is called (the runner ends the
  agent); nothing past a budget reaches the provider;
- the key is added as ``Authorization: Bearer`` (``x-api-key`` for anthropic) and never logged or kept;
- the path after ``/v1`` is appended to the provider's base URL (``/v1/chat/completions`` ->
  ``{baseUrl}/chat/completions``); other requests (``GET /v1/models``) are forwarded but are not model calls;
- a provider that cannot be reached is answered with a 502 and kept as a failed call.
"""

from __future__ import annotations

import contextlib
import os
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Final, Protocol

import httpx
from returns.result import Failure, Success

from alisio.core.agents.exchange import Api, Exchange, read_exchange
from alisio.core.harness.budget import RunBudget, cost_after
from alisio.core.harness.prices import Rates

__all__ = ["BudgetHit", "Call", "RunProxy"]

_MODEL_PATHS: Final = ("/chat/completions", "/responses", "/messages")
_HOP: Final = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "authorization",
        "x-api-key",
        "accept-encoding",
    }
)
_KEPT_BYTES: Final = 32 << 20


@dataclass(frozen=True)
class Call:
    """One model call through the proxy."""

    index: int
    started_ms: int
    """Since the proxy started."""
    duration_ms: int
    exchange: Exchange | None
    """``None`` when it could not be read (``problem`` says why)."""
    problem: str | None
    request: bytes
    status: int
    content_type: str
    response: bytes


class Replayer(Protocol):
    """Replay mode: answers a model call from a cassette instead of the provider."""

    def answer(self, body: bytes) -> tuple[int, str, bytes] | str:
        """``(status, content type, body)`` of the recorded answer, or the divergence's one line."""
        ...


@dataclass(frozen=True)
class BudgetHit:
    """The budget a call went past."""

    budget: str
    limit: int | float
    value: int | float


@dataclass
class _State:
    calls: list[Call] = field(default_factory=list)
    tokens: int = 0
    cost: float | None = None
    """Main-loop cost so far at the proxy's ``rates`` (``None`` until a call's usage could be priced)."""
    tool_calls: int = 0
    started: int = 0
    """Model calls let through so far, answered or still in flight (what ``maxTurns`` counts: calls made at
    once are all counted before any answer arrives)."""
    stop: BudgetHit | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class RunProxy:
    """A proxy for one run; ``start`` binds it (``OSError`` when it cannot), ``close`` stops it."""

    def __init__(
        self,
        api: Api,
        base_url: str,
        key: str | None,
        budget: RunBudget,
        client: httpx.Client,
        on_stop: Callable[[], None] = lambda: None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        replay: Replayer | None = None,
        unix: str | None = None,
        rates: Rates | None = None,
    ) -> None:
        """``unix``: listen on this unix socket path instead of ``host:port``."""
        self.api, self.base_url, self._key, self.budget = api, base_url.rstrip("/"), key, budget
        self.rates = rates
        """The model's prices: ``budget.max_cost_usd`` is counted at them (``None``: no cost is counted)."""
        self.client, self.on_stop = client, on_stop
        self._address = (host, port)
        self._unix = unix
        self.replay = replay
        self.diverged = False
        self.state = _State()
        self._server: ThreadingHTTPServer | None = None
        self._start = time.monotonic()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no path)."""
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def calls(self) -> tuple[Call, ...]:
        with self.state.lock:
            return tuple(self.state.calls)

    @property
    def stop(self) -> BudgetHit | None:
        return self.state.stop

    def start(self) -> RunProxy:
        """Bind and serve on a thread. Raises ``OSError`` when the address cannot be bound."""
        proxy = self

        class Handler(_Handler):
            owner = proxy
            disable_nagle_algorithm = self._unix is None  # TCP_NODELAY is a TCP option

        server = _Server(self._address, Handler) if self._unix is None else _UnixServer(self._unix, Handler)  # type: ignore[arg-type]
        server.daemon_threads = True
        self._server = server
        threading.Thread(target=server.serve_forever, name="alisio-proxy", daemon=True).start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> RunProxy:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- used by the handler ---------------------------------------------------------------------------

    def elapsed_ms(self) -> int:
        return round((time.monotonic() - self._start) * 1000)

    def over_budget(self) -> BudgetHit | None:
        """The budget the next model call would go past (and the proxy's stop), or ``None``."""
        state, budget = self.state, self.budget
        with state.lock:
            if state.stop is not None:
                return state.stop
            hit = None
            if budget.max_turns is not None and state.started >= budget.max_turns:
                hit = BudgetHit("maxTurns", budget.max_turns, state.started)
            elif budget.max_tokens is not None and state.tokens >= budget.max_tokens:
                hit = BudgetHit("maxTokens", budget.max_tokens, state.tokens)
            elif (
                budget.max_cost_usd is not None
                and state.cost is not None
                and state.cost >= budget.max_cost_usd
            ):
                hit = BudgetHit("maxCostUsd", budget.max_cost_usd, round(state.cost, 6))
            elif budget.max_tool_calls is not None and state.tool_calls > budget.max_tool_calls:
                hit = BudgetHit("maxToolCalls", budget.max_tool_calls, state.tool_calls)
            state.stop = hit
            if hit is None:
                state.started += 1
        return hit

    def upstream(self, path: str) -> str | None:
        """The provider URL of the request target ``path``, or ``None`` when it would leave the provider's
        origin (a target that does not start with one ``/``, such as ``.attacker.example/x`` or ``@evil/x``,
        glued to a base URL without a path): the real key goes to the configured provider and nowhere else."""
        if not path.startswith("/") or path.startswith("//"):
            return None
        target = self.base_url + (path[3:] if path.startswith("/v1/") else path)
        try:
            url, base = httpx.URL(target), httpx.URL(self.base_url)
        except httpx.InvalidURL:
            return None
        if (url.scheme, url.host, url.port) != (base.scheme, base.host, base.port):
            return None
        return target

    def headers(self, incoming: list[tuple[str, str]]) -> dict[str, str]:
        headers = {name: value for name, value in incoming if name.lower() not in _HOP}
        headers["accept-encoding"] = "identity"
        if self._key:
            if self.api == "anthropic":
                headers["x-api-key"] = self._key
            else:
                headers["authorization"] = f"Bearer {self._key}"
        return headers

    def keep(self, started_ms: int, request: bytes, status: int, content_type: str, response: bytes) -> None:
        duration = self.elapsed_ms() - started_ms
        match read_exchange(self.api, request, status, content_type, response):
            case Success(exchange):
                read: Exchange | None = exchange
                problem = None
            case Failure(error):
                read, problem = None, str(error)
        with self.state.lock:
            state = self.state
            call = Call(
                len(state.calls), started_ms, duration, read, problem, request, status, content_type, response
            )
            state.calls.append(call)
            if read is not None:
                usage = read.usage
                state.tokens += (usage.input_tokens or 0) + (usage.output_tokens or 0) if usage else 0
                state.cost = cost_after(state.cost, self.rates, usage)
                state.tool_calls += len(read.tool_calls)


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


class _Handler(BaseHTTPRequestHandler):
    owner: RunProxy
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:
        return None  # requests are recorded as calls; nothing goes to stderr

    def do_GET(self) -> None:
        self._forward(b"", model_call=False)

    def do_POST(self) -> None:
        body = self._body()
        self._forward(body, model_call=self.path.split("?")[0].endswith(_MODEL_PATHS))

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _refuse(self, hit: BudgetHit) -> None:
        message = f"alisio: budget {hit.budget} exceeded (limit {hit.limit}, reached {hit.value}); the lab ends this run"
        body = httpx.Response(400, json={"error": {"message": message, "type": "budget_exceeded"}}).content
        self._send(400, "application/json", body)
        self.owner.on_stop()

    def _forward(self, body: bytes, *, model_call: bool) -> None:
        proxy = self.owner
        target = proxy.upstream(self.path)
        if target is None:  # never forward the key off the provider's origin
            message = "alisio proxy: the request target is not a path on the provider; refused"
            answer = httpx.Response(400, json={"error": {"message": message, "type": "proxy_error"}}).content
            self._send(400, "application/json", answer)
            return
        if model_call and (hit := proxy.over_budget()) is not None:
            self._refuse(hit)
            return
        started = proxy.elapsed_ms()
        if model_call and proxy.replay is not None:
            self._replayed(started, body, proxy.replay)
            return
        headers = proxy.headers(list(self.headers.items()))
        try:
            status, content_type, kept = self._relay(target, body, headers)
        except httpx.HTTPError as error:
            message = f"alisio proxy: the provider cannot be reached: {type(error).__name__}: {error}"
            answer = httpx.Response(502, json={"error": {"message": message, "type": "proxy_error"}}).content
            with contextlib.suppress(OSError):
                self._send(502, "application/json", answer)
            status, content_type, kept = 502, "application/json", answer
        if model_call:
            proxy.keep(started, body, status, content_type, kept)

    def _replayed(self, started: int, body: bytes, replay: Replayer) -> None:
        """Answer from the cassette; a divergence is answered with an error and ends the run."""
        proxy = self.owner
        answer = replay.answer(body)
        if isinstance(answer, str):
            proxy.diverged = True
            message = f"alisio replay: {answer}; the lab ends this run"
            error = httpx.Response(
                400, json={"error": {"message": message, "type": "replay_divergence"}}
            ).content
            self._send(400, "application/json", error)
            proxy.on_stop()
            return
        status, content_type, data = answer
        self._send(status, content_type, data)
        proxy.keep(started, body, status, content_type, data)

    def _relay(self, target: str, body: bytes, headers: dict[str, str]) -> tuple[int, str, bytes]:
        """Forward to ``target``, stream the answer back (chunked) as it comes, and return it (bounded)."""
        proxy = self.owner
        request = proxy.client.build_request(self.command, target, content=body, headers=headers)
        response = proxy.client.send(request, stream=True)
        kept: list[bytes] = []
        size = 0
        try:
            self.send_response(response.status_code)
            for name, value in response.headers.multi_items():
                if name.lower() not in _HOP and name.lower() != "content-encoding":
                    self.send_header(name, value)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for chunk in response.iter_bytes():
                if size < _KEPT_BYTES:
                    kept.append(chunk)
                    size += len(chunk)
                with contextlib.suppress(OSError):  # the agent went away: keep reading what the model said
                    self.wfile.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
            with contextlib.suppress(OSError):
                self.wfile.write(b"0\r\n\r\n")
        finally:
            response.close()
        return response.status_code, response.headers.get("content-type", ""), b"".join(kept)
