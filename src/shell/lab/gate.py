"""A cap on the requests in flight to one endpoint: the small interface a provider waits on.

``provider.maxConcurrency`` caps the requests in flight to one endpoint over every run of a command. Where
the runs are (threads of one process, or Ray workers on many machines) decides how the slots are counted, so
the provider only sees a ``RequestGate``: ``with gate.slot(): <one request, its retries included>``.
``GatedProvider`` puts any provider behind a gate; ``alisio.shell.lab.ray_gate.ClusterGate`` is the gate of
the Ray executor (one named actor per command counts the slots of the whole cluster).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from alisio.core.harness.protocol import ProviderRequest, StreamEvent
from alisio.shell.harness.providers.base import Provider, RetryNotice

__all__ = ["GatedProvider", "RequestGate"]


class RequestGate(Protocol):
    """Hands out the slots of one endpoint."""

    def slot(self) -> AbstractContextManager[None]:
        """Wait (without a time limit) for a free slot, and free it when the block ends, however it ends."""
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
        with self._gate.slot():
            return self._inner.stream(request, on_retry, timeout_s=timeout_s)
