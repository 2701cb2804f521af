"""One run's event log and clock: each event numbered in the order it happens and timed from the run's start.

The clock is the setup's (a monotonic clock in seconds on the scale of ``time.monotonic``); every part of the
loop (``alisio.shell.harness.agent``, ``provider_calls``, ``tool_calls``, ``checkpoint``) records through one
``RunLog``, so ``seq`` is the order of the whole run and ``setup.on_event`` sees each event as it happens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from alisio.core.harness.events import Event, IncidentKind, IncidentRaised

__all__ = ["RunLog"]


@dataclass
class RunLog:
    clock: Callable[[], float]
    start: float
    max_wall_ms: int
    on_event: Callable[[Event], None] | None = None
    events: list[Event] = field(default_factory=list)

    def elapsed_ms(self) -> int:
        return int((self.clock() - self.start) * 1000)

    def wall_left_s(self) -> float:
        """Seconds left before maxWallMs (what a provider call may take at most; never below 1 ms)."""
        return max(0.001, self.deadline() - self.clock())

    def deadline(self) -> float:
        """The run's maxWallMs as a time on the clock (the tools kill a command at it)."""
        return self.start + self.max_wall_ms / 1000

    def emit(self, event_type: type[Event], /, **fields: object) -> None:
        event = event_type(seq=len(self.events), elapsed_ms=self.elapsed_ms(), **fields)  # type: ignore[arg-type]
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def incident(self, kind: IncidentKind, message: str) -> None:
        self.emit(IncidentRaised, kind=kind, message=message)
