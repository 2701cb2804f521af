"""The per-run pass-through proxy an external agent talks to: ``RunProxy``.

It listens on 127.0.0.1 at a random port (or on a unix socket: the one bound into a sandboxed agent's
bubblewrap, ``alisio.shell.sandbox.agents``), forwards each request's body unchanged (the exact bytes) to the
lab's configured provider, adding the real key, and streams the answer back as it arrives while keeping a
bounded copy (``alisio.shell.agents.proxy_http``). Each model call is read with
``alisio.core.agents.exchange`` and kept as a ``Call``.

Rules it keeps:
- **who**: a request must carry the run's token (``token``: the only "API key" the agent was given, random
  per run) as ``Authorization: Bearer``, ``x-api-key`` or its api's own key header (``x-goog-api-key``); any
  other caller (another local process, another user) gets a 401 in the api's error shape, and nothing is
  forwarded;
- **what**: one decision per request target (``alisio.core.agents.routes.route``) says both whether it is a
  model call and where it goes: only the api's version segment + its own paths are forwarded (the model call;
  listing the models; Anthropic's and Gemini's token counts), compared byte for byte; anything else is refused
  (404, or 400 for a target that is not a path), so no spelling of a target is forwarded with the key and
  left uncounted;
- **budgets** (``alisio.core.agents.ledger``): a model call is let through, refused (a 400 naming the budget:
  the proxy's ``stop`` is set and ``on_stop`` is called, the runner ends the agent) or held until calls in
  flight finish, when their reservations could reach ``maxTokens`` or ``maxCostUsd``;
- **the key** is added in the header the api's record names (``Authorization: Bearer``, ``x-api-key``,
  ``x-goog-api-key``: the built-in provider's own), never logged or kept; the agent's own key headers (its
  token) are not forwarded;
- **the run's end** (``close``): every call still in flight is cut (its provider connection shut down at
  once, by the proxy's own client, ``Connections``) and kept as a cut call with what had arrived; ``close``
  returns once they are kept, so the run's record counts them;
- a provider that cannot be reached is answered with a 502 and kept as a failed call;
- **replay** (``replay``) and **faults** (``faults``) are the client's (``alisio.shell.agents.faults``): in
  replay mode its model calls are answered from the cassette where the provider was, and the run's injected
  faults sit above either, so a call a fault answered is kept as a call (``Call.injected``) that never
  reached the provider or the cassette.
"""

from __future__ import annotations

import hmac
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import httpx
from returns.result import Failure, Result, Success

from alisio.core.agents.exchange import Api, Exchange, read_exchange
from alisio.core.agents.ledger import (
    Admit,
    BudgetHit,
    Ledger,
    Refuse,
    admit,
    reservation_of,
    settle,
)
from alisio.core.agents.routes import Route, RouteRefusal, route
from alisio.core.harness.budget import RunBudget
from alisio.core.harness.prices import Rates
from alisio.core.harness.wire import wire_format
from alisio.shell.agents.faults import client_transport
from alisio.shell.agents.proxy_http import Replayer, Tapped, serve, server_url, shut
from alisio.shell.harness.providers.cancellable import Connections, cancellable_transport
from alisio.shell.harness.providers.faults import RunWire

__all__ = ["BudgetHit", "Call", "Replayer", "RunProxy"]

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
_CLOSE_WAIT_S: Final = 10.0
"""How long ``close`` waits for the calls it cut to be kept."""
_TIMEOUT: Final = httpx.Timeout(600.0, connect=10.0)


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
    cut: bool = False
    """Still in flight when the run ended: the proxy cut it; ``response`` is what had arrived."""
    first_event_ms: int | None = None
    """From the call's start to its answer's first event (prompt processing on a local server): the first SSE
    event of an event stream, keep-alive comments not counted, else the body's first bytes; ``None`` when no
    event or body arrived."""
    injected: bool = False
    """An injected fault answered it (``429``, ``500``, ``503``, ``stall``): it never reached the provider
    (nor, in replay, the cassette), and a recording's cassette leaves it out."""
    whole: bytes | None = None
    """An injected ``cut``: the provider's whole answer, of which ``response`` is what the agent got; a
    recording's cassette keeps this one (``alisio.shell.agents.faults``)."""


class RunProxy:
    """A proxy for one run; ``start`` binds it (``OSError`` when it cannot), ``close`` stops it."""

    def __init__(
        self,
        api: Api,
        base_url: str,
        key: str | None,
        budget: RunBudget,
        *,
        token: str,
        on_stop: Callable[[], None] = lambda: None,
        host: str = "127.0.0.1",
        port: int = 0,
        replay: Replayer | None = None,
        unix: str | None = None,
        rates: Rates | None = None,
        timeout: httpx.Timeout = _TIMEOUT,
        faults: RunWire | None = None,
    ) -> None:
        """``token``: the run's token, the only key the agent has; ``unix``: listen on this unix socket path
        instead of ``host:port``; ``timeout``: the provider client's (connect, and each read); ``faults``:
        the run's injected faults (``alisio.shell.agents.faults``)."""
        self.api, self.base_url, self._key, self.budget = api, base_url.rstrip("/"), key, budget
        self._wire = wire_format(api)
        self._token = token.encode()
        self.rates = rates
        """The model's prices: ``budget.max_cost_usd`` is counted at them (``None``: no cost is counted)."""
        self.on_stop = on_stop
        self._connections = Connections()
        transport = client_transport(
            cancellable_transport(self._connections), faults, lambda: self._connections.aborted, api, replay
        )
        self.client = httpx.Client(timeout=timeout, trust_env=False, transport=transport)
        """The proxy's own client (to the provider, or the cassette of ``replay``): its connections are this
        run's, cut at ``close``."""
        self._address = (host, port)
        self._unix = unix
        self.diverged = False
        self._ledger = Ledger()
        self._calls: list[Call] = []
        self._in_flight: set[int] = set()
        self._tickets = itertools.count()
        self._cond = threading.Condition()
        self.closing = False
        self._server: object | None = None
        self._start = time.monotonic()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no path)."""
        assert self._server is not None
        return server_url(self._server)

    @property
    def calls(self) -> tuple[Call, ...]:
        with self._cond:
            return tuple(self._calls)

    @property
    def stop(self) -> BudgetHit | None:
        with self._cond:
            return self._ledger.stop

    def start(self) -> RunProxy:
        """Bind and serve on a thread. Raises ``OSError`` when the address cannot be bound."""
        self._server = serve(self, self._address, self._unix)
        return self

    def close(self) -> None:
        """Stop serving, cut the calls in flight (kept as cut calls), and wait until they are kept."""
        with self._cond:
            self.closing = True
            self._cond.notify_all()
        if self._server is not None:
            shut(self._server, before_close=self._cut_in_flight)
            self._server = None
        self.client.close()

    def _cut_in_flight(self) -> None:
        self._connections.abort()
        with self._cond:
            self._cond.wait_for(lambda: not self._in_flight, timeout=_CLOSE_WAIT_S)

    def __enter__(self) -> RunProxy:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- used by the handler ---------------------------------------------------------------------------

    def elapsed_ms(self) -> int:
        return round((time.monotonic() - self._start) * 1000)

    def authorized(self, authorization: str, api_key: str) -> bool:
        """Whether a request carries the run's token: its ``Authorization: Bearer`` header, or its
        ``x-api-key``."""
        given = authorization[7:] if authorization[:7].lower() == "bearer " else api_key
        return hmac.compare_digest(given.strip().encode("utf-8", "replace"), self._token)

    def given_key(self, header: Callable[[str, str], str]) -> str:
        """The key a request carries in ``x-api-key`` or its api's own key header (``header(name, "")``)."""
        return header("x-api-key", "") or header(self._wire.key_header, "")

    def route(self, method: str, target: str) -> Result[tuple[Route, str], RouteRefusal]:
        """The route of a request and the provider URL it goes to, or why it is refused."""
        match route(self.api, method, target):
            case Success(found):
                url = self._upstream(found)
                if url is None:
                    message = "the request target is not a path on the provider; refused"
                    return Failure(RouteRefusal(status=400, message=message))
                return Success((found, url))
            case Failure(refusal):
                return Failure(refusal)
        raise AssertionError("unreachable")  # pragma: no cover

    def _upstream(self, found: Route) -> str | None:
        """``base_url`` + the route, or ``None`` when that would leave the provider's origin (belt and
        braces: a route's path is one of the api's own)."""
        target = self.base_url + found.suffix
        try:
            url, base = httpx.URL(target), httpx.URL(self.base_url)
        except httpx.InvalidURL:
            return None
        if (url.scheme, url.host, url.port) != (base.scheme, base.host, base.port):
            return None
        return target

    def admit(self, body: bytes) -> tuple[int, BudgetHit | str | None]:
        """A ticket for a model call, and the budget that refuses it (``None``: let through). Blocks while
        calls in flight could reach a budget together; a run that ends meanwhile refuses it (a ``str``
        saying so)."""
        reservation = reservation_of(self.api, body, self.rates)
        with self._cond:
            ticket = next(self._tickets)
            while True:
                decision = admit(self._ledger, self.budget, ticket, reservation)
                match decision:
                    case Admit(ledger=ledger):
                        self._ledger = ledger
                        self._in_flight.add(ticket)
                        return ticket, None
                    case Refuse(ledger=ledger, hit=hit):
                        self._ledger = ledger
                        return ticket, hit
                if self.closing:
                    return ticket, "the run ended while this call waited for the calls in flight"
                self._cond.wait(timeout=1.0)

    def headers(self, incoming: list[tuple[str, str]]) -> dict[str, str]:
        own = self._wire.key_header.lower()
        headers = {
            name: value for name, value in incoming if name.lower() not in _HOP and name.lower() != own
        }
        headers["accept-encoding"] = "identity"
        if self._key:
            headers.update(self._wire.key_headers(self._key))
        return headers

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
    ) -> None:
        """Keep one model call (its answer: status, content type, body; ``path``: where it went, after the
        base URL) and count it against the budgets; ``first_ms`` is when its first event arrived
        (since the proxy started); ``tapped``: what of it reached the provider (``Call.injected``,
        ``Call.whole``)."""
        status, content_type, response = answer
        injected, whole = _reached(tapped, response)
        duration = self.elapsed_ms() - started_ms
        match read_exchange(self.api, request, status, content_type, response, path):
            case Success(exchange):
                read: Exchange | None = exchange
                problem = None
            case Failure(error):
                read, problem = None, str(error)
        with self._cond:
            index = len(self._calls)
            first = None if first_ms is None else first_ms - started_ms
            call = Call(
                index,
                started_ms,
                duration,
                read,
                problem,
                request,
                status,
                content_type,
                response,
                cut,
                first,
                injected,
                whole,
            )
            self._calls.append(call)
            usage, tools = (read.usage, len(read.tool_calls)) if read is not None else (None, 0)
            self._ledger = settle(self._ledger, ticket, usage, tools, self.rates)
            self._in_flight.discard(ticket)
            self._cond.notify_all()

    def release(self, ticket: int) -> None:
        """A ticket let through whose call was not kept (a replay divergence): its reservation is freed."""
        with self._cond:
            self._ledger = settle(self._ledger, ticket, None, 0, self.rates)
            self._in_flight.discard(ticket)
            self._cond.notify_all()


def _reached(tapped: Tapped | None, response: bytes) -> tuple[bool, bytes | None]:
    """``Call.injected`` and ``Call.whole`` of a call whose answer (as the agent got it) is ``response``."""
    if tapped is None:
        return False, None
    body = b"".join(tapped.body) if tapped.complete else None
    return not tapped.passed, body if body is not None and body != response else None
