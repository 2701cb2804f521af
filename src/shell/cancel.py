"""Cancellation of the runs in flight, when they run on worker threads.

A signal (Ctrl-C, SIGTERM, SIGHUP) is delivered to the main thread only. With concurrent runs, the main thread
``request``s cancellation, and every place that waits inside a run (the agent loop between steps, the poll loop
of a running command, a provider stream between chunks) calls ``check``, which raises ``Cancelled`` (a
``KeyboardInterrupt``) in that worker thread: the run stops the way a run on the main thread stops on Ctrl-C,
its command's process group killed, its event log closed with ``run_end``, its workspace removed.

A thread blocked in a provider request makes no check; ``on_request`` hooks wake it (the provider's
connections are shut down). One flag per process: a command is one process, as a signal is for the whole process. ``reset`` clears it
(the next command in the same process, as tests run several).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["Cancelled", "check", "on_request", "request", "requested", "reset"]

_requested = threading.Event()
_hooks: list[Callable[[], None]] = []


class Cancelled(KeyboardInterrupt):
    """Raised in a worker thread once cancellation was requested."""


def on_request(hook: Callable[[], None]) -> None:
    """Call ``hook`` on every ``request`` (after the flag is set): what a check cannot reach, such as a
    thread blocked in a provider request (``alisio.shell.harness.providers.cancellable``)."""
    _hooks.append(hook)


def request() -> None:
    """Ask every run in flight to stop at its next check, and wake what waits where no check is made."""
    _requested.set()
    for hook in tuple(_hooks):
        hook()


def requested() -> bool:
    """Whether cancellation was requested."""
    return _requested.is_set()


def check() -> None:
    """Raise ``Cancelled`` when cancellation was requested (a no-op otherwise)."""
    if _requested.is_set():
        raise Cancelled()


def reset() -> None:
    """Forget a request (before a new command starts its runs)."""
    _requested.clear()
