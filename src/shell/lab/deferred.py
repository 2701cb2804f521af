"""Signals held back while the reports are written: a report is never left half-written by Ctrl-C.

Writing the report files after the runs takes well under a second; an interrupt that arrives then (Ctrl-C,
SIGTERM, SIGHUP) is remembered, the files are written, and the command then ends as interrupted, with the
signal's exit code (130, 143, 129). A second signal during the block is remembered the same way (the first
one decides the exit code); SIGKILL cannot be held, which is why every file is written atomically.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from alisio.shell.errors import Terminated

__all__ = ["Held", "held_signals"]


@dataclass
class Held:
    """The signals that arrived while they were held, in order."""

    signals: list[int] = field(default_factory=list)

    @property
    def interrupt(self) -> KeyboardInterrupt | None:
        """The first held signal as the interrupt it would have raised, or ``None``."""
        if not self.signals:
            return None
        first = self.signals[0]
        return KeyboardInterrupt() if first == signal.SIGINT else Terminated(first)


@contextlib.contextmanager
def held_signals() -> Iterator[Held]:
    """Hold SIGINT, SIGTERM and SIGHUP for the block (main thread only; elsewhere nothing is held)."""
    held = Held()
    if threading.current_thread() is not threading.main_thread():
        yield held
        return

    def remember(signum: int, frame: object) -> None:
        held.signals.append(signum)

    wanted = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, remember) for sig in wanted}
    try:
        yield held
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
