"""A provider that wraps another one and records every call for a cassette.

Each request is passed through unchanged (the wrapped provider gets the real request); what is recorded is
the request *normalised with the run's own rules* (``AgentSetup.normalize_rules``: the workspace path becomes
``<workspace>``, the task's replayNormalize applies), its fingerprint, and the stream events exactly as the
wrapped provider returned them. Using the run's rules is what makes record and replay agree: the fingerprint
stored here is the one the agent logs and the one replay recomputes.

A call that raises ``ProviderFailure`` is not recorded (there are no events to replay); the run ends error
and the recording holds the calls before it, and ``broken`` the events the failed call had received before
it broke (``ProviderFailure.partial``: a cut after the answer's first event, which a faulted replay gives back).
"""

from __future__ import annotations

from alisio.core.harness.protocol import ProviderRequest, StreamEvent
from alisio.core.replay.cassette import RecordedCall
from alisio.core.replay.fingerprint import Rules, fingerprint, normalize_request
from alisio.shell.harness.providers.base import FirstEvent, Provider, ProviderFailure, RetryNotice

__all__ = ["RecordingProvider"]


class RecordingProvider:
    """Passes requests to ``inner`` and keeps ``calls`` (one ``RecordedCall`` per answered call)."""

    def __init__(self, inner: Provider, rules: Rules) -> None:
        self._inner = inner
        self._rules = rules
        self._calls: list[RecordedCall] = []
        self.broken: tuple[StreamEvent, ...] = ()
        """The events of the last call that failed, received before it failed (``ProviderFailure.partial``)."""

    @property
    def id(self) -> str:
        return self._inner.id

    @property
    def calls(self) -> tuple[RecordedCall, ...]:
        """The calls recorded so far, in order."""
        return tuple(self._calls)

    def stream(
        self,
        request: ProviderRequest,
        on_retry: RetryNotice | None = None,
        *,
        timeout_s: float | None = None,
        on_first_event: FirstEvent | None = None,
    ) -> tuple[StreamEvent, ...]:
        """The wrapped provider's events for ``request``, recorded with the normalised request."""
        normalized = normalize_request(request, self._rules)
        try:
            events = self._inner.stream(request, on_retry, timeout_s=timeout_s, on_first_event=on_first_event)
        except ProviderFailure as failure:
            self.broken = failure.partial
            raise
        self._calls.append(
            RecordedCall(
                call=len(self._calls),
                purpose=request.purpose,
                fingerprint=fingerprint(normalized),
                request=normalized,
                events=events,
            )
        )
        return events
