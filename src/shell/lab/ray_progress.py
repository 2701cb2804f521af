"""The live status of a command on Ray: what each run's worker forwards to the driver while the run goes on.

With threads, the live status sees every event of every run as it happens (``RunContext.on_event``); on Ray the
runs are in other processes, which send their record only when they finish. So the driver starts one
``ProgressRelay`` actor per command, and each worker forwards to it the few events the status line reads:
- a ``provider_retry`` incident (what the run waits on, for how long; the retries so far), its message
  redacted with the worker's credentials as the transcript is;
- each ``provider_response`` that reported usage (the tokens so far), without the response's text: the model's
  words do not travel, only the numbers.
Each forward is one actor call that is not waited for, about one per provider call. The driver drains the actor
between its waits for finished runs (every ``ray_executor._POLL_S``), without blocking on it, and hands each
event to its own ``on_event``, as the thread executor does. The actor reserves no CPU and ends with the
command. Import this module only where Ray is installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import ray

from alisio.core.harness.events import Event, IncidentKind, IncidentRaised, ProviderResponded
from alisio.core.lab.suites.schedule import RunSpec
from alisio.core.share.secrets import redact

__all__ = ["Drain", "ProgressRelay", "forwarded", "forwarder", "start_relay"]

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Event)


class ProgressRelay:
    """The actor: the events the workers pushed, by run (the driver's ``owner`` of it), until drained."""

    def __init__(self) -> None:
        self._events: list[tuple[str, bytes]] = []

    def push(self, owner: str, data: bytes) -> None:
        self._events.append((owner, data))

    def drain(self) -> list[tuple[str, bytes]]:
        """Every event pushed since the last drain, in the order each worker pushed them."""
        events, self._events = self._events, []
        return events


def start_relay() -> Any:
    """Start the command's ``ProgressRelay`` actor (no CPU reserved) and return its handle."""
    return ray.remote(ProgressRelay).options(num_cpus=0).remote()


def forwarded(event: Event, credentials: tuple[tuple[str, str], ...]) -> Event | None:
    """What of ``event`` travels to the driver (see the module docstring), or ``None`` when nothing does."""
    if isinstance(event, IncidentRaised) and event.kind is IncidentKind.PROVIDER_RETRY:
        return msgspec.structs.replace(event, message=redact(event.message, credentials))
    if isinstance(event, ProviderResponded) and event.usage is not None:
        return msgspec.structs.replace(event, text="")
    return None


def forwarder(
    relay: Any, owner: str, credentials: tuple[tuple[str, str], ...]
) -> Callable[[RunSpec, Event], None]:
    """The ``on_event`` of a run on a worker: forwards what the live status reads, waiting for nothing."""

    def forward(spec: RunSpec, event: Event) -> None:
        kept = forwarded(event, credentials)
        if kept is not None:
            relay.push.remote(owner, _encoder.encode(kept))

    return forward


class Drain:
    """The driver's side: collects the relay's events without ever blocking on it (one drain in flight)."""

    def __init__(self, relay: Any) -> None:
        self._relay = relay
        self._pending = relay.drain.remote()

    def ready(self) -> list[tuple[str, Event]]:
        """The events the last drain returned, if it has answered (then another drain is asked), else none."""
        done, _ = ray.wait([self._pending], timeout=0)
        if not done:
            return []
        events = ray.get(self._pending)
        self._pending = self._relay.drain.remote()
        return [(owner, _decoder.decode(data)) for owner, data in events]
