"""One endpoint shared fairly by the runs of a command over a Ray cluster: the cluster's ``Gate``.

``alisio.shell.harness.providers.gate.EndpointGate`` does this for the threads of one process; on Ray the runs
are in many processes on many machines, so the driver starts one ``EndpointSlots`` actor per command with a
live provider, and each run's provider gets a ``ClusterGate`` over it. Rules (the same as ``EndpointGate``):
- at most ``limit`` requests in flight at once over the whole cluster (``provider.maxConcurrency``, default
  ``--jobs``); waiters are served in order;
- a ``Retry-After`` pause asked by one worker makes every worker wait (the actor's clock says until when);
- waiting counts against the call's deadline, and stops at once when the run is cancelled;
- a slot is held by a run (``owner``): a run whose worker died is ``forget``-ten by the driver, which frees its
  slots, and a run that stops waiting (its deadline, a cancel) forgets itself, so no slot is lost to a dead run;
- the actor belongs to the driver: it ends with the command.
Import this module only where Ray is installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any

import ray

from alisio.shell.harness.providers.gate import GateTimeout

__all__ = ["ClusterGate", "EndpointSlots", "start_slots"]


class EndpointSlots:
    """The actor: ``limit`` slots, each held by one run (``owner``) for one request, and a shared pause."""

    def __init__(self, limit: int) -> None:
        self._free = asyncio.Semaphore(limit)
        self._held: dict[str, int] = {}
        self._gone: set[str] = set()
        self._paused_until = 0.0

    async def pause(self, seconds: float) -> None:
        """Every waiter waits ``seconds`` from now before it gets a slot (the longest pause wins)."""
        self._paused_until = max(self._paused_until, time.time() + seconds)

    async def acquire(self, owner: str) -> bool:
        """Wait out any pause, then for a slot; ``False`` (no slot held) when ``owner`` was forgotten."""
        while (left := self._paused_until - time.time()) > 0:
            await asyncio.sleep(left)
        await self._free.acquire()
        if owner in self._gone:
            self._free.release()
            return False
        self._held[owner] = self._held.get(owner, 0) + 1
        return True

    async def release(self, owner: str) -> None:
        """Free one slot ``owner`` holds (nothing when it holds none: it was forgotten)."""
        held = self._held.get(owner, 0)
        if held == 0:
            return
        if held == 1:
            del self._held[owner]
        else:
            self._held[owner] = held - 1
        self._free.release()

    async def forget(self, owner: str) -> None:
        """``owner`` ended abnormally: free every slot it holds, and refuse its waiters."""
        self._gone.add(owner)
        for _ in range(self._held.pop(owner, 0)):
            self._free.release()

    async def in_use(self) -> int:
        """How many slots are held now."""
        return sum(self._held.values())


def start_slots(limit: int) -> Any:
    """Start the command's ``EndpointSlots`` actor (no CPU reserved: it only counts) and return its handle."""
    actor = ray.remote(EndpointSlots).options(num_cpus=0, max_concurrency=1024)
    return actor.remote(limit)


class ClusterGate:
    """The ``Gate`` of one run on a Ray worker: its slots and pauses are the command's actor's."""

    def __init__(self, slots: Any, owner: str) -> None:
        self._slots = slots
        self._owner = owner

    def pause(self, seconds: float) -> None:
        ray.get(self._slots.pause.remote(seconds))  # in force before this worker's next request (rare: a 429)

    @contextlib.contextmanager
    def slot(self, deadline: float | None) -> Iterator[None]:
        wait = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        try:
            granted = ray.get(self._slots.acquire.remote(self._owner), timeout=wait)
        except ray.exceptions.GetTimeoutError:
            self._slots.forget.remote(self._owner)  # the run ends at its deadline: it asks for no more slots
            raise GateTimeout("every slot of the endpoint stayed busy until this call's deadline") from None
        except BaseException:  # interrupted while waiting: the slot it may still get must not be lost
            self._slots.forget.remote(self._owner)
            raise
        if not granted:
            raise KeyboardInterrupt("the run was stopped while it waited for a provider slot")
        try:
            yield
        finally:
            self._slots.release.remote(self._owner)  # not waited for: the next waiter gets it soon enough
