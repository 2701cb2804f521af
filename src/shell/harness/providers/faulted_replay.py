"""A replay that meets the faults its recording met (``--mode replay`` of a cassette recorded with ``--faults``).

A cassette keeps each provider call as the harness got it, after the transport's retries; the faults were
injected below those retries (``alisio.shell.harness.providers.faults``). So the replay puts the cassette where
the provider was: each call goes through the shared transport (``alisio.shell.harness.providers.transport``)
to an in-memory endpoint, whose client sends through the same ``FaultTransport`` under the run's ``RunWire``.
The schedule counts the same HTTP attempts as when recording (a pure function of the spec, the run and the
call's index): a ``429``, ``500``, ``503`` or ``stall`` never reaches the endpoint and so never consumes a
cassette entry, the transport retries it (or gives up) exactly as it did, and a ``slow`` answer is the
recorded answer dripped. The endpoint answers an attempt that gets through with the next recorded call,
matched as ``ReplayProvider`` matches it (a mismatch is the run's divergence).

``cut`` is not replayed: whether a cut answer is retried depends on where its bytes broke off in the
provider's own wire format, which a cassette does not keep (``eval record`` refuses it).
"""

from __future__ import annotations

import dataclasses

import httpx

from alisio.core.harness.faults import DRIP_PIECES
from alisio.core.harness.protocol import ProviderRequest, StreamEvent
from alisio.core.harness.wire import wire_format
from alisio.core.replay.cassette import Cassette
from alisio.core.replay.fingerprint import Rules
from alisio.shell.harness.providers.base import FirstEvent, ProviderFailure, RetryNotice
from alisio.shell.harness.providers.faults import FaultTransport
from alisio.shell.harness.providers.replay import ReplayProvider
from alisio.shell.harness.providers.transport import Transport

__all__ = ["FaultedReplayProvider"]

REPLAY_URL = "http://replay.invalid/v1/chat/completions"
"""Where the in-memory endpoint answers (never a network address); a model call's path, so it is faulted."""


class FaultedReplayProvider(ReplayProvider):
    """Plays ``cassette`` through the transport and the run's faults (see the module docstring)."""

    def __init__(self, cassette: Cassette, rules: Rules = ()) -> None:
        super().__init__(cassette, rules)
        self._asked: ProviderRequest | None = None
        self._served: tuple[StreamEvent, ...] = ()
        self._wire = dataclasses.replace(wire_format("openai-chat"), body_events=lambda _body: self._served)
        client = httpx.Client(transport=FaultTransport(httpx.MockTransport(self._answer)))
        # as the scripted endpoint the recording was served by (alisio.shell.lab.scripted_http)
        self._transport = Transport(REPLAY_URL, headers={}, client=client, backoff_base=0.05, backoff_cap=0.5)

    def with_rules(self, rules: Rules) -> FaultedReplayProvider:
        return FaultedReplayProvider(self._cassette, rules)

    def _answer(self, _request: httpx.Request) -> httpx.Response:
        """An attempt that got past the faults: the next recorded call's events (or the divergence)."""
        assert self._asked is not None  # stream set it
        self._served = super().stream(self._asked)
        return httpx.Response(
            200, headers={"content-type": "application/json"}, content=b"{}".ljust(DRIP_PIECES)
        )  # a slow answer drips in as many pieces

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
