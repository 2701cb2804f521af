"""``provider.maxConcurrency`` over a Ray cluster: one actor per command counts the endpoint's slots.

The driver starts one ``EndpointSlots`` actor for a live provider with ``maxConcurrency`` and hands it to every
run; each run's provider waits in ``ClusterGate.slot`` around each request, wherever the run is. Rules:
- at most ``limit`` slots are held at once, over every worker of the cluster; waiters are served in order;
- a slot is held per run (the ``owner``): a run whose worker died is ``forget``-ten by the driver, which frees
  its slots, and a run interrupted while waiting forgets itself, so no slot is lost to a dead run;
- the actor belongs to the driver: it ends with the command.
Import this module only where Ray is installed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import ray

__all__ = ["ClusterGate", "EndpointSlots", "start_slots"]


class EndpointSlots:
    """The actor: ``limit`` slots, each held by one run (``owner``) for one request."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._free = asyncio.Semaphore(limit)
        self._held: dict[str, int] = {}
        self._gone: set[str] = set()

    async def acquire(self, owner: str) -> bool:
        """Wait for a slot; ``False`` (and no slot held) when ``owner`` was forgotten meanwhile."""
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
    """The ``RequestGate`` of one run on a Ray worker: its slots come from the command's actor."""

    def __init__(self, slots: Any, owner: str) -> None:
        self._slots = slots
        self._owner = owner

    @contextlib.contextmanager
    def slot(self, timeout_s: float | None) -> Iterator[None]:
        try:
            wait = None if timeout_s is None else max(timeout_s, 0.0)
            granted = ray.get(self._slots.acquire.remote(self._owner), timeout=wait)
        except ray.exceptions.GetTimeoutError:
            self._slots.forget.remote(self._owner)  # the run ends at its deadline: it asks for no more slots
            raise TimeoutError from None
        except BaseException:  # interrupted while waiting: the slot it may still get must not be lost
            self._slots.forget.remote(self._owner)
            raise
        if not granted:
            raise KeyboardInterrupt("the run was stopped while it waited for a provider slot")
        try:
            yield
        finally:
            self._slots.release.remote(self._owner)
