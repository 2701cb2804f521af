"""Progress of a lab command on stderr: a live status on a terminal, one plain line per run otherwise.

- On a terminal: a status line that updates in place (rich): done/total, the pass, fail, budget_exceeded and
  error counts, the runs in flight, elapsed time and an ETA (elapsed / done x left); each finished run's line
  is printed above it, as without a terminal.
- Without a terminal (CI, a pipe, a file): one plain line per finished run, nothing that updates in place.
- ``--quiet``: nothing per run; the command prints only its final table (and problems).

Runs start and finish on worker threads: every count is updated under a lock and read by the status line.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from alisio.core.lab.records import RunRecord
    from alisio.core.lab.schedule import RunSpec

__all__ = ["Progress"]


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    """The per-run output of one command (see the module docstring)."""

    def __init__(
        self, line: Callable[[int, int, RunRecord], str], *, quiet: bool, terminal: bool | None = None
    ) -> None:
        self._line = line
        self._quiet = quiet
        self._terminal = sys.stderr.isatty() if terminal is None else terminal
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._done = self._total = self._in_flight = 0
        self._started = time.monotonic()
        self._live: Any = None

    def status(self) -> str:
        """``12/35 done (10 pass, 2 fail) · 4 running · 1:02 elapsed · ETA 2:58``."""
        with self._lock:
            done, total, running = self._done, self._total, self._in_flight
            counts = ", ".join(f"{n} {status}" for status, n in sorted(self._counts.items()) if n)
        elapsed = time.monotonic() - self._started
        text = f"{done}/{total} done" + (f" ({counts})" if counts else "") + f" · {running} running"
        text += f" · {_clock(elapsed)} elapsed"
        if done and total > done:
            text += f" · ETA {_clock(elapsed / done * (total - done))}"
        return text

    def run_started(self, spec: RunSpec) -> None:
        with self._lock:
            self._in_flight += 1

    def run_ended(self, spec: RunSpec) -> None:
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)

    def run_finished(self, record: RunRecord, done: int, total: int) -> None:
        with self._lock:
            self._done, self._total = done, total
            self._counts[str(record.status)] += 1
        if self._quiet:
            return
        line = self._line(done, total, record)
        if self._live is not None:
            self._live.console.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def planned(self, total: int) -> None:
        with self._lock:
            self._total = total

    @contextmanager
    def shown(self) -> Iterator[Progress]:
        """Show the live status line for the block (on a terminal, unless quiet)."""
        if self._quiet or not self._terminal:
            yield self
            return
        from rich.console import Console
        from rich.live import Live
        from rich.text import Text

        class _Status:
            def __init__(self, progress: Progress) -> None:
                self.progress = progress

            def __rich__(self) -> Text:
                return Text(self.progress.status(), style="bold")

        console = Console(stderr=True)
        status = _Status(self)
        with Live(
            status, console=console, refresh_per_second=4, transient=True, redirect_stdout=False
        ) as live:
            self._live = live
            try:
                yield self
            finally:
                self._live = None
