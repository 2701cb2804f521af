"""Injected faults in the built-in provider's HTTP layer (``--faults SPEC``), and the run's retry setting.

Every HTTP provider's client sends through a ``FaultTransport`` (an ``httpx`` transport wrapping the real
one). Outside a run with faults it passes every request through untouched. Inside ``run_wire(RunWire)``
(which the lab's built-in runner and ``alisio run`` enter around a run) each model request is one call of the
run's schedule (``alisio.core.harness.faults.fault_at``): the call index counts every attempt, so the
provider's own retries (``alisio.shell.harness.providers.transport``) see a real failure, retry it, and the
retry may be faulted again. What a fault does:

- ``429``, ``500``, ``503``: the request never reaches the endpoint; the answer is that status with the
  api's headers and error body (``fault_answer``), the api given (the proxy's) or read off the request's
  path. Only model calls count, as the wire formats' records tell them by their paths: listing the models
  and counting tokens are never faulted;
- ``stall``: nothing arrives until the request's read timeout passes, then ``httpx.ReadTimeout``: what a
  silent server gives (the wait ends early on a cancellation);
- ``cut``: the real answer, whose body breaks after half of its bytes with ``httpx.RemoteProtocolError``.
  The hit keeps where it broke (``cut_point``): how many SSE events the transport reads from the kept bytes,
  read as it reads them (httpx-sse, then the format's decoder, which may end the answer before the break).
  The request passed on carries its hit (``FAULT_EXTENSION``), so an endpoint that stands in for the provider
  (a faulted replay) can answer as the recorded cut did;
- ``slow``: the real answer in ``DRIP_PIECES`` pieces, ``drip-ms`` apart.

Each faulted call is kept in the run's ``hits`` (the run record's ``faults``). The same context carries the
run's ``retries.max`` (the measured configuration's), which the transport reads in place of its own
default: a variant without retries is a real harness without retries.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

import httpx
from httpx_sse import EventSource
from returns.result import Failure

from alisio.core.agents.mock import target_of
from alisio.core.harness.faults import DRIP_PIECES, FaultHit, FaultSpec, fault_answer, fault_at
from alisio.core.harness.wire import Api, wire_format
from alisio.core.harness.wire_format import StreamDecoder
from alisio.core.lab.runs.records import RunFaults
from alisio.shell import cancel

__all__ = ["FAULT_EXTENSION", "FaultTransport", "RunWire", "current_retries", "cut_point", "run_wire"]

FAULT_EXTENSION = "alisio.fault"
"""The ``httpx.Request`` extension naming the fault of a request passed on to the endpoint (a ``cut``'s
``FaultHit``): what a faulted replay's endpoint reads to answer as the recording's cut did."""

_STEP_S = 0.05
"""How often a stall or a drip looks for a cancellation."""


@dataclass
class RunWire:
    """One run's faults (``None``: none) and retry setting; ``hits`` grows as calls are faulted."""

    faults: FaultSpec | None
    run: str
    """The run's name in the schedule (``<task>/<repetition>``; ``alisio.core.harness.faults.fault_at``)."""
    max_retries: int | None = None
    """``retries.max`` of the run's measured configuration (``None``: the transport's default)."""
    hits: list[FaultHit] = field(default_factory=list)
    _calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_call(self) -> FaultHit | None:
        """The fault of the run's next model call (and that call counted)."""
        with self._lock:
            call = self._calls
            self._calls += 1
            kind = None if self.faults is None else fault_at(self.faults, self.run, call)
            if kind is None:
                return None
            hit = FaultHit(call=call, kind=kind)
            self.hits.append(hit)
            return hit

    def broke(self, hit: FaultHit, events: int, ended: bool) -> None:
        """Where the cut ``hit`` broke: after ``events`` events, ``ended`` when the answer's end was among them."""
        with self._lock:
            self.hits[self.hits.index(hit)] = FaultHit(
                call=hit.call, kind=hit.kind, events=events, ended=ended
            )

    def recorded(self) -> RunFaults | None:
        """What the run record keeps: the calls made and the faulted ones (``None``: a run without faults)."""
        if self.faults is None:
            return None
        with self._lock:
            return RunFaults(calls=self._calls, hits=tuple(self.hits))


_CURRENT: ContextVar[RunWire | None] = ContextVar("alisio_run_wire", default=None)


@contextlib.contextmanager
def run_wire(wire: RunWire) -> Iterator[RunWire]:
    """Within the block (on this thread), model requests follow ``wire``'s faults and retry setting."""
    token = _CURRENT.set(wire)
    try:
        yield wire
    finally:
        _CURRENT.reset(token)


def current_retries(default: int) -> int:
    """The retries of the run on this thread (``retries.max``), else ``default``."""
    wire = _CURRENT.get()
    return default if wire is None or wire.max_retries is None else wire.max_retries


def _never() -> bool:
    return False


def _wait(seconds: float, aborted: Callable[[], bool] = _never) -> bool:
    """Wait ``seconds``, or less when a cancellation or ``aborted`` ends it; whether it was aborted."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        cancel.check()
        if aborted():
            return True
        time.sleep(min(_STEP_S, left))
    return False


class _CutStream(httpx.SyncByteStream):
    """The answer's bytes up to ``keep``, then a broken connection."""

    def __init__(self, inner: httpx.SyncByteStream, keep: int, request: httpx.Request) -> None:
        self._inner, self._keep, self._request = inner, keep, request

    def __iter__(self) -> Iterator[bytes]:
        sent = 0
        for chunk in self._inner:
            if sent + len(chunk) >= self._keep:
                if self._keep > sent:
                    yield chunk[: self._keep - sent]
                raise httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body (injected fault: cut)",
                    request=self._request,
                )
            sent += len(chunk)
            yield chunk

    def close(self) -> None:
        self._inner.close()


class _DripStream(httpx.SyncByteStream):
    """The answer's bytes in ``DRIP_PIECES`` pieces, ``delay`` seconds apart."""

    def __init__(self, body: bytes, delay: float, aborted: Callable[[], bool]) -> None:
        self._body, self._delay, self._aborted = body, delay, aborted

    def __iter__(self) -> Iterator[bytes]:
        size = max(1, -(-len(self._body) // DRIP_PIECES))
        for start in range(0, len(self._body), size):
            if _wait(self._delay, self._aborted):
                return
            yield self._body[start : start + size]


def cut_point(
    response: httpx.Response, body: bytes, keep: int, decoder: StreamDecoder, request: httpx.Request
) -> tuple[int, bool]:
    """Where ``body`` (``response``'s, read) cut after ``keep`` bytes breaks for the transport
    (``alisio.shell.harness.providers.transport``): how many SSE events it reads before the break, and whether
    the format's end event (``decoder.done``) was among them, when it stops reading and never meets the break.

    The kept bytes are read as the transport reads them: an answer that is not a 2xx event stream is read
    whole first, so it breaks before any event; an event stream through httpx-sse's ``EventSource``, each event
    fed to ``decoder`` (a malformed one stops the count there, as it stops the transport).
    """
    content_type = response.headers.get("content-type", "")
    if not response.is_success or "text/event-stream" not in content_type:
        return 0, False
    kept = httpx.Response(
        response.status_code,
        headers=_plain(response.headers),
        stream=_CutStream(httpx.ByteStream(body), keep, request),
        request=request,
    )
    events = 0
    try:
        for sse in EventSource(kept).iter_sse():
            events += 1
            if isinstance(decoder.feed(sse.event or "message", sse.data), Failure):
                break
            if decoder.done:
                return events, True
    except httpx.TransportError:
        pass
    return events, False


def _model_call(request: httpx.Request) -> Api | None:
    """The api of a model call (which the schedule counts), by its path (the wire formats' records:
    ``alisio.core.agents.mock.target_of``); ``None`` for anything else (listing models, counting tokens)."""
    target = target_of(request.url.path) if request.method == "POST" else None
    return None if target is None or target.call is None else target.api


def _plain(headers: httpx.Headers) -> list[tuple[str, str]]:
    """The headers of an answer whose body was read (decoded) and is sent again in other pieces."""
    dropped = ("content-encoding", "content-length", "transfer-encoding")
    return [(name, value) for name, value in headers.items() if name.lower() not in dropped]


class FaultTransport(httpx.BaseTransport):
    """``inner`` with the faults of the run on the calling thread (see the module docstring).

    ``wire``: one run's faults for every request, whatever the thread (the recording proxy of an external
    agent's run, whose requests arrive on its server's threads); ``aborted``: ends a stall or a drip early
    (the proxy's run ended); ``decoder``: the stream decoder a cut's point is read with (``cut_point``; by
    default the api's wire format's, as the transport reads it).
    """

    def __init__(
        self,
        inner: httpx.BaseTransport,
        wire: RunWire | None = None,
        aborted: Callable[[], bool] = _never,
        api: Api | None = None,
        decoder: Callable[[], StreamDecoder] | None = None,
    ) -> None:
        self._inner = inner
        self._wire = wire
        self._aborted = aborted
        self._api = api
        self._decoder = decoder

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        wire = self._wire or _CURRENT.get()
        called = _model_call(request)
        if wire is None or wire.faults is None or called is None:
            return self._inner.handle_request(request)
        api = self._api or called
        spec = wire.faults
        hit = wire.next_call()
        match None if hit is None else hit.kind:
            case None:
                return self._inner.handle_request(request)
            case "429" | "500" | "503" as kind:
                answer = fault_answer(api, kind, spec)
                return httpx.Response(
                    answer.status, headers=list(answer.headers), content=answer.body, request=request
                )
            case "stall":
                timeouts = request.extensions.get("timeout", {})
                _wait(float(timeouts.get("read") or 0.0), self._aborted)  # or until the proxy's run ends
                raise httpx.ReadTimeout(
                    "no bytes before the read timeout (injected fault: stall)", request=request
                )
            case "cut":
                assert hit is not None  # matched its kind
                return self._cut(request, wire, hit, api)
            case "slow":
                response = self._inner.handle_request(request)
                body = response.read()
                return httpx.Response(
                    response.status_code,
                    headers=_plain(response.headers),
                    stream=_DripStream(body, spec.drip_ms / 1000, self._aborted),
                    request=request,
                )
        raise AssertionError("unreachable")  # pragma: no cover

    def _cut(self, request: httpx.Request, wire: RunWire, hit: FaultHit, api: Api) -> httpx.Response:
        """The real answer (to a request that says it is cut), broken after half of its bytes; the hit
        gets where it broke."""
        request.extensions = {**request.extensions, FAULT_EXTENSION: hit}
        response = self._inner.handle_request(request)
        body = response.read()
        keep = len(body) // 2
        decoder = (self._decoder or wire_format(api).stream_decoder)()
        wire.broke(hit, *cut_point(response, body, keep, decoder, request))
        return httpx.Response(
            response.status_code,
            headers=_plain(response.headers),
            stream=_CutStream(httpx.ByteStream(body), keep, request),
            request=request,
        )

    def close(self) -> None:
        self._inner.close()
