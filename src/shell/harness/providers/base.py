"""The provider contract every provider implements, and its one exception.

A provider turns a ``ProviderRequest`` into the stream events it received (``alisio.core.harness.protocol.StreamEvent``);
``alisio.core.harness.protocol.assemble`` folds them into a response. In-stream errors come back as ``StreamErrorEvent`` data;
failures to get a stream at all (auth, bad request, retries exhausted, a dropped connection) raise
``ProviderFailure``, which the agent loop turns into a run that ends ``error`` with ``failure.reason``; a
``deadline`` failure (the call outlived the time it was given) ends the run at its maxWallMs budget instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol

from alisio.core.harness.protocol import ProviderRequest, StreamEvent

FailureKind = Literal[
    "auth",  # 401/403
    "bad_request",  # 400, 404, 422: the provider's message says why
    "rate_limited",  # 429 after every retry
    "server",  # 5xx after every retry
    "network",  # connection refused/reset, DNS, dropped mid-stream
    "timeout",  # connect/read timeout after every retry
    "protocol",  # not SSE, malformed chunk, stream ended without a finish
    "too_large",  # the response passed provider.maxResponseBytes: never retried
    "script",  # the scripted provider ran out of turns or its file is invalid
    "deadline",  # the caller's time limit (the run's maxWallMs) passed during the call: never retried
    "divergence",  # replay: the harness asked something the cassette did not record (the lab's reason
    # is replay_divergence)
]

GIVE_UP_MARK = "provider.rateLimitGiveUpMs"
"""In the message of the 429 that gave up: what tells the lab to stop the command (here, not in
``transport``, so that the lab reads it without importing httpx)."""


class ProviderFailure(Exception):
    """A provider call that produced no usable stream. ``str()`` is one line for the user; no secrets."""

    def __init__(self, kind: FailureKind, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind: FailureKind = kind
        self.message = message
        self.status = status
        self.partial: tuple[StreamEvent, ...] = ()
        """What a ``deadline`` failure had received before the cut (the agent keeps an excerpt of it)."""

    @property
    def reason(self) -> str:
        """The run-end reason recorded for this failure, e.g. ``provider_auth``."""
        return f"provider_{self.kind}"


RetryNotice = Callable[[str], None]
"""Called with a one-line description each time a call is retried (the agent logs an incident)."""

FirstEvent = Callable[[], None]
"""Called once, when the first event of the answering stream arrives (the agent times it: time to first
event tells queueing on the server apart from the model's own time). A provider with no server never calls it."""


class Provider(Protocol):
    """Anything that answers provider requests with stream events."""

    @property
    def id(self) -> str:
        """The provider id recorded in reports (e.g. ``openai_compat``, ``scripted``)."""
        ...

    def stream(
        self,
        request: ProviderRequest,
        on_retry: RetryNotice | None = None,
        *,
        timeout_s: float | None = None,
        on_first_event: FirstEvent | None = None,
    ) -> tuple[StreamEvent, ...]:
        """Send one request; return every stream event received, in order. Raises ``ProviderFailure``.

        ``timeout_s`` bounds the whole call, retries and waits included (the agent passes what is left of the
        run's maxWallMs); when it passes, the call is abandoned with ``ProviderFailure("deadline")``.
        """
        ...
