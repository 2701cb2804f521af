"""A replay that meets the faults its recording met (``--mode replay`` of a cassette recorded with ``--faults``).

A cassette keeps each provider call as the harness got it, after the transport's retries; the faults were
injected below those retries (``alisio.shell.harness.providers.faults``). So the replay puts the cassette where
the provider was: each call goes through the shared transport (``alisio.shell.harness.providers.transport``)
to an in-memory endpoint, whose client sends through the same ``FaultTransport`` under the run's ``RunWire``.
The schedule counts the same HTTP attempts as when recording (a pure function of the spec, the run and the
call's index): a ``429``, ``500``, ``503`` or ``stall`` never reaches the endpoint and so never consumes a
cassette entry, the transport retries it (or gives up) exactly as it did (a stall lasts the recording's read
timeout, the header's ``readTimeoutMs``), and a ``slow`` answer is the recorded answer dripped. The endpoint
answers an attempt that gets through with the next recorded call, matched as ``ReplayProvider`` matches it (a
mismatch is the run's divergence), as one JSON body.

A ``cut`` breaks where the recording's did: the header's ``faultRecord`` says, per cut call, how many events
the harness had received (``FaultHit.events``), and the endpoint answers that attempt (the request says it is
cut: ``FAULT_EXTENSION``) with an event stream of its own whose first half holds exactly that many events,
read with a decoder of its own (``_Served``), so the same ``FaultTransport`` cuts it at the same point:

- 0 events: a body that breaks before any event, which the transport retries; no cassette entry is consumed
  (the recording's cut answer was never recorded);
- N events: N events, then the break: the transport's final ``network`` failure after N events, the first
  event timed, and the failure's partial events the recording's (the header's ``partialEvents``); no entry is
  consumed (a failed call is not recorded);
- N events, the answer's end among them: the next recorded call, whole, its end event the Nth.

The recorded cut points are those of the recorded run (``eval record`` runs repetition 0); a cut at a call
the recording never cut (a run that made more attempts than the recording) is a divergence.
"""

from __future__ import annotations

import dataclasses

import httpx
from returns.result import Result, Success

from alisio.core.harness.faults import DEFAULT_READ_TIMEOUT_MS, DRIP_PIECES, FaultHit
from alisio.core.harness.protocol import ProviderRequest, StreamEvent
from alisio.core.harness.wire import wire_format
from alisio.core.harness.wire_common import ChunkError
from alisio.core.lab.runs.records import Divergence
from alisio.core.replay.cassette import Cassette
from alisio.core.replay.fingerprint import Rules
from alisio.shell.harness.providers.base import FirstEvent, ProviderFailure, RetryNotice
from alisio.shell.harness.providers.faults import FAULT_EXTENSION, FaultTransport
from alisio.shell.harness.providers.replay import ReplayProvider
from alisio.shell.harness.providers.transport import Transport

__all__ = ["FaultedReplayProvider"]

REPLAY_URL = "http://replay.invalid/v1/chat/completions"
"""Where the in-memory endpoint answers (never a network address); a model call's path, so it is faulted."""

_PARTIAL, _MORE, _END = "partial", "more", "end"
"""The data of the endpoint's own stream events: the recorded partial events, nothing, the served call."""


class _Served:
    """The decoder of the endpoint's event stream (a ``StreamDecoder``): ``partial`` gives the recorded cut's
    partial events, ``end`` the served call's events and ends the answer, anything else nothing."""

    def __init__(self, provider: FaultedReplayProvider) -> None:
        self._provider = provider
        self.done = False

    def feed(self, event: str, data: str) -> Result[tuple[StreamEvent, ...], ChunkError]:
        if data == _END:
            self.done = True
            return Success(self._provider.served)
        return Success(self._provider.partial if data == _PARTIAL else ())


def _event_stream(data: list[str]) -> httpx.Response:
    """An event stream of one event per ``data``, padded so that its first half is exactly those events."""
    events = b"".join(f"data: {item}\n\n".encode() for item in data)
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=events + b":" * len(events)
    )


class FaultedReplayProvider(ReplayProvider):
    """Plays ``cassette`` through the transport and the run's faults (see the module docstring)."""

    def __init__(self, cassette: Cassette, rules: Rules = ()) -> None:
        super().__init__(cassette, rules)
        record = cassette.header.fault_record
        self._cuts = {hit.call: hit for hit in (record.hits if record else ()) if hit.kind == "cut"}
        self.partial = cassette.header.partial_events
        self._asked: ProviderRequest | None = None
        self.served: tuple[StreamEvent, ...] = ()
        self._wire = dataclasses.replace(
            wire_format("openai-chat"),
            body_events=lambda _body: self.served,
            stream_decoder=lambda: _Served(self),
        )
        faulted = FaultTransport(httpx.MockTransport(self._answer), decoder=self._wire.stream_decoder)
        # as the scripted endpoint the recording was served by (alisio.shell.lab.scripted_http); a stall lasts
        # the recording's read timeout
        client = httpx.Client(transport=faulted)
        stall_s = (cassette.header.read_timeout_ms or DEFAULT_READ_TIMEOUT_MS) / 1000
        self._transport = Transport(
            REPLAY_URL, headers={}, client=client, backoff_base=0.05, backoff_cap=0.5, read_timeout=stall_s
        )

    def with_rules(self, rules: Rules) -> FaultedReplayProvider:
        return FaultedReplayProvider(self._cassette, rules)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        """An attempt that got past the faults, or that a cut lets start: the next recorded call's events (or
        the divergence), or the recorded cut's answer."""
        fault = request.extensions.get(FAULT_EXTENSION)
        if isinstance(fault, FaultHit) and fault.kind == "cut":
            return self._cut_answer(fault.call)
        self._serve()
        return httpx.Response(
            200, headers={"content-type": "application/json"}, content=b"{}".ljust(DRIP_PIECES)
        )  # a slow answer drips in as many pieces

    def _serve(self) -> None:
        assert self._asked is not None  # stream set it
        self.served = super().stream(self._asked)

    def _cut_answer(self, call: int) -> httpx.Response:
        """The answer whose cut breaks where the recording's cut of ``call`` did (the module docstring)."""
        point = self._cuts.get(call)
        if point is None or point.events is None:
            found = Divergence(
                call_index=self._next,
                field="faults",
                expected=f"the cuts the recording met (calls {', '.join(map(str, self._cuts)) or 'none'})",
                actual=f"a cut at call {call}",
            )
            self._divergence = found
            raise ProviderFailure("divergence", f"replay diverged at call {found.call_index}: faults")
        if point.ended:
            self._serve()
            return _event_stream([_MORE] * (point.events - 1) + [_END])
        if point.events == 0:
            return httpx.Response(200, headers={"content-type": "application/json"}, content=b"{}")
        return _event_stream([_PARTIAL] + [_MORE] * (point.events - 1))

    def stream(
        self,
        request: ProviderRequest,
        on_retry: RetryNotice | None = None,
        *,
        timeout_s: float | None = None,
        on_first_event: FirstEvent | None = None,
    ) -> tuple[StreamEvent, ...]:
        """The recorded events of the next call, after the faults the schedule puts before it."""
        if self._divergence is not None:
            raise ProviderFailure("divergence", "the replay already diverged")
        self._asked = request
        return self._transport.post(
            REPLAY_URL, b"{}", self._wire, on_retry, timeout_s=timeout_s, on_first_event=on_first_event
        )
