"""The recording proxy's provider client (``client_transport``): where an external agent's model calls go,
and the injected faults (``--faults``) they meet on the way.

An external agent talks to the provider through its run's proxy (``alisio.shell.agents.proxy``), whose client
sends, from the top down, through:

1. with faults, ``alisio.shell.harness.providers.faults.FaultTransport`` bound to the run's ``RunWire``: every
   model call the agent makes (each of its own retries included) is one call of the run's seeded schedule,
   and the proxy relays what the faulted client got exactly as it relays a provider's answer. So the agent
   sees each fault on its own wire format, as a real provider would send it:

   - ``429``, ``500``, ``503``: that status, the api's error body and headers (a 429's ``retry-after``;
     ``alisio.core.harness.faults.fault_answer``: OpenAI's ``{"error": {...}}`` for Chat Completions and
     Responses, Anthropic's ``{"type": "error", "error": {...}}``); the request never reaches the provider;
   - ``stall``: no byte (not even the status line) until the agent gives up on its own read timeout; the
     proxy holds the call until the run ends or its own read timeout (600 s) passes, then answers a 502;
   - ``cut``: the provider's real answer is relayed, and the connection breaks after half of its bytes (no
     last chunk: the agent sees a stream that broke);
   - ``slow``: the real answer, relayed in pieces ``drip-ms`` apart;

2. the tap (``_Tap``): a model call that gets here passed the faults; it fills the call's ``Tapped`` (the
   handler's, ``alisio.shell.agents.proxy_http``) with that, and with the answer's body as it arrives, whole
   even when the call above it is cut;
3. the provider (``live``), or in replay mode the cassette (``_CassetteTransport``: each model call answered
   by the run's ``Replayer``; anything else still goes to ``live``), where the provider was.

So a recording and its replay count the same calls against the same schedule: a call a ``429``, ``500``,
``503`` or ``stall`` answered never reached the provider, is kept by the proxy as a call (the agent saw it)
but not in the cassette, and in replay is answered by the faults again without consuming a cassette entry;
a ``cut`` call keeps the provider's whole answer in the cassette (``Call.whole``), which the replay cuts
again; a ``slow`` one is the recorded answer dripped again. The run's record keeps the schedule's hits
(``RunWire.recorded``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx

from alisio.core.harness.wire import Api
from alisio.shell.agents.proxy_http import KEPT_BYTES, TAPPED, ReplayDiverged, Replayer, Tapped
from alisio.shell.harness.providers.faults import FaultTransport, RunWire

__all__ = ["client_transport"]


def client_transport(
    live: httpx.BaseTransport,
    wire: RunWire | None,
    aborted: Callable[[], bool],
    api: Api,
    replay: Replayer | None = None,
) -> httpx.BaseTransport:
    """The proxy client's transport (module docstring): ``live``, or the cassette of ``replay``, tapped, under
    ``wire``'s faults when the run has some, in ``api``'s error shape (``aborted``: the run ended, which ends a
    stall or a drip)."""
    tapped = _Tap(live if replay is None else _CassetteTransport(replay, live))
    if wire is None or wire.faults is None:
        return tapped
    return FaultTransport(tapped, wire=wire, aborted=aborted, api=api)


class _TapStream(httpx.SyncByteStream):
    """An answer's body, copied into its call's ``Tapped`` as it is read."""

    def __init__(self, inner: httpx.SyncByteStream, tapped: Tapped) -> None:
        self._inner, self._tapped = inner, tapped

    def __iter__(self) -> Iterator[bytes]:
        size = 0
        for chunk in self._inner:
            if size < KEPT_BYTES:  # as the proxy keeps its own copy
                self._tapped.body.append(chunk)
                size += len(chunk)
            yield chunk
        self._tapped.complete = True

    def close(self) -> None:
        self._inner.close()


class _Tap(httpx.BaseTransport):
    """Below the faults: fills each model call's ``Tapped`` (module docstring)."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        tapped = request.extensions.get(TAPPED)
        if not isinstance(tapped, Tapped):
            return self._inner.handle_request(request)
        tapped.passed = True
        response = self._inner.handle_request(request)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if isinstance(response.stream, httpx.SyncByteStream) and encoding == "identity":
            response.stream = _TapStream(response.stream, tapped)  # an encoded body is not kept whole
        return response

    def close(self) -> None:
        self._inner.close()


class _CassetteTransport(httpx.BaseTransport):
    """Replay: each model call (a request carrying a ``Tapped``) answered from the cassette, or
    ``ReplayDiverged``; anything else (listing the models, counting tokens) goes to ``live``."""

    def __init__(self, replay: Replayer, live: httpx.BaseTransport) -> None:
        self._replay, self._live = replay, live

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if TAPPED not in request.extensions:
            return self._live.handle_request(request)
        answer = self._replay.answer(request.read())
        if isinstance(answer, str):
            raise ReplayDiverged(answer)
        status, content_type, body = answer
        return httpx.Response(status, headers={"content-type": content_type}, content=body, request=request)

    def close(self) -> None:
        self._live.close()
