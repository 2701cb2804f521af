"""A cap on the requests in flight to one endpoint: the small interface a provider waits on.

``provider.maxConcurrency`` caps the requests in flight to one endpoint over every run of a command. Where
the runs are (threads of one process, or Ray workers on many machines) decides how the slots are counted, so
the provider only sees a ``RequestGate``: ``with gate.slot(timeout): <one request, its retries included>``.
The wait for a slot is part of the call: it counts toward the run's ``maxWallMs`` and ends at its deadline.
``GatedProvider`` puts any provider behind a gate; ``alisio.shell.lab.ray_gate.ClusterGate`` is the gate of
the Ray executor (one named actor per command counts the slots of the whole cluster).
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from typing import Protocol

from alisio.core.harness.protocol import ProviderRequest, StreamEvent
from alisio.shell.harness.providers.base import Provider, ProviderFailure, RetryNotice

__all__ = ["GatedProvider", "RequestGate"]


class RequestGate(Protocol):
    """Hands out the slots of one endpoint."""

    def slot(self, timeout_s: float | None) -> AbstractContextManager[None]:
        """Wait for a free slot, and free it when the block ends, however it ends.

        Raises:
            TimeoutError: no slot came free within ``timeout_s`` (``None``: wait as long as it takes).
        """
        ...


class GatedProvider:
    """``inner`` with each request, retries included, inside one of ``gate``'s slots."""

    def __init__(self, inner: Provider, gate: RequestGate) -> None:
        self._inner = inner
        self._gate = gate

    @property
    def id(self) -> str:
        return self._inner.id

    def stream(
        self, request: ProviderRequest, on_retry: RetryNotice | None = None, *, timeout_s: float | None = None
    ) -> tuple[StreamEvent, ...]:
        started = time.monotonic()
        try:
            with self._gate.slot(timeout_s):
                left = None if timeout_s is None else timeout_s - (time.monotonic() - started)
                if left is not None and left <= 0:
                    raise TimeoutError
                return self._inner.stream(request, on_retry, timeout_s=left)
        except TimeoutError:  # the wait for a slot is part of the call: it ends at the run's deadline
            raise ProviderFailure(
                "deadline", "the run's time ran out while it waited for a provider slot"
            ) from None
