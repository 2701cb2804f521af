"""One endpoint shared fairly by the concurrent runs of a command.

``EndpointGate`` is shared by every run that calls one endpoint (the live provider is built once per
command): at most ``limit`` requests are in flight at once (``provider.maxConcurrency``, default ``--jobs``),
and when the endpoint answers 429 or 503 with ``Retry-After`` every caller waits that long before its next
request, not only the one that got it: hammering a rate-limited endpoint with the other workers' requests
would only earn more 429s. Retries stay bounded by the provider (``max_retries``).

Waiting for a slot or a pause counts against the call's deadline (the run's maxWallMs) like any provider
latency, and stops at once when the command is cancelled (``alisio.shell.cancel``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

from alisio.shell import cancel

__all__ = ["EndpointGate", "Gate", "GateTimeout"]

_STEP_S = 0.05


class GateTimeout(Exception):
    """The call's deadline passed while it waited for a slot or a pause."""


class Gate(Protocol):
    """What a provider asks of its endpoint's gate: ``EndpointGate`` for the threads of one process,
    ``alisio.shell.lab.ray_gate.ClusterGate`` for Ray workers on many machines."""

    def pause(self, seconds: float) -> None:
        """Make every caller wait ``seconds`` from now before its next request."""
        ...

    def slot(self, deadline: float | None) -> AbstractContextManager[None]:
        """Hold one slot for the block, after any pause; ``GateTimeout`` when ``deadline`` (monotonic) passes."""
        ...


class EndpointGate:
    """A semaphore of ``limit`` slots and a shared pause (see the module docstring)."""

    def __init__(self, limit: int, clock: Callable[[], float] = time.monotonic) -> None:
        if limit < 1:
            raise ValueError(f"an endpoint gate needs at least one slot, got {limit}")
        self.limit = limit
        self._clock = clock
        self._slots = threading.BoundedSemaphore(limit)
        self._lock = threading.Lock()
        self._paused_until = 0.0

    def pause(self, seconds: float) -> None:
        """Make every caller wait ``seconds`` from now before its next request (the longest pause wins)."""
        with self._lock:
            self._paused_until = max(self._paused_until, self._clock() + seconds)

    def _wait_pause(self, deadline: float | None) -> None:
        while True:
            with self._lock:
                left = self._paused_until - self._clock()
            if left <= 0:
                return
            if deadline is not None and self._clock() + left > deadline:
                raise GateTimeout("the endpoint asked every caller to wait past this call's deadline")
            cancel.check()
            time.sleep(min(left, _STEP_S))

    @contextmanager
    def slot(self, deadline: float | None) -> Iterator[None]:
        """Hold one of the ``limit`` slots for the block, after any pause the endpoint asked for.

        Raises:
            GateTimeout: ``deadline`` (a ``clock`` time) passed first.
        """
        self._wait_pause(deadline)
        while not self._slots.acquire(timeout=_STEP_S):
            cancel.check()
            if deadline is not None and self._clock() >= deadline:
                raise GateTimeout("every slot of the endpoint stayed busy until this call's deadline")
        try:
            yield
        finally:
            self._slots.release()
