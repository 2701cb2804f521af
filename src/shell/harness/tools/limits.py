"""A time limit for work done inside the harness process (the file tools, search, fetch_url).

``time_limit(seconds)`` raises ``TimeLimitReached`` inside the block once ``seconds`` have passed, wherever
the block is: in Python code, in a blocking system call, or in a regular-expression match (CPython's ``re``
engine checks for signals every few thousand steps, so a catastrophic pattern such as ``^(a+)+$`` stops
within milliseconds of the limit). It is a one-shot ``SIGALRM`` timer (``setitimer``), so:

- it works only in the main thread (where ``alisio run`` and ``alisio eval`` run the tools); elsewhere it is
  a no-op, and only the checks the tools make between files and chunks apply;
- it coexists with a timer already armed (``pytest-timeout``, a host program): the earlier of the two fires
  first, the other one's handler is called at its own time, and the old timer is re-armed for what is left
  of it when the block ends;
- C code that never checks for signals (``compile`` of a huge file, a DNS lookup) is not interrupted: the tools
  bound those by size instead.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Final

__all__ = ["TimeLimitReached", "time_limit"]

_MIN_S: Final = 0.001


class TimeLimitReached(Exception):
    """The block of a ``time_limit`` ran out of time."""


Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


def _usable() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ``TimeLimitReached`` in the block after ``seconds`` (main thread only; see the module docstring)."""
    if not _usable():
        yield
        return
    start = time.monotonic()
    ours_at = start + max(seconds, _MIN_S)
    old_handler: Handler = signal.getsignal(signal.SIGALRM)
    old_left, old_interval = signal.getitimer(signal.ITIMER_REAL)
    old_at = start + old_left if old_left > 0 else None
    armed = True
    old_fired = False

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        nonlocal old_fired
        now = time.monotonic()
        if old_at is not None and now >= old_at - _MIN_S and not old_fired:
            old_fired = True  # the other timer's time has come: its handler acts as it would have
            if callable(old_handler):
                old_handler(signum, frame)
        if not armed:
            return  # ours, delivered after the block ended
        if now >= ours_at - _MIN_S:
            raise TimeLimitReached
        signal.setitimer(signal.ITIMER_REAL, max(ours_at - now, _MIN_S))

    try:
        signal.signal(signal.SIGALRM, on_alarm)
        first = ours_at if old_at is None else min(ours_at, old_at)
        signal.setitimer(signal.ITIMER_REAL, max(first - time.monotonic(), _MIN_S))
        try:
            yield
        finally:
            armed = False
            signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, old_handler)
        if old_at is not None and not old_fired:
            signal.setitimer(signal.ITIMER_REAL, max(old_at - time.monotonic(), _MIN_S), old_interval)
        elif old_interval > 0:
            signal.setitimer(signal.ITIMER_REAL, old_interval, old_interval)
