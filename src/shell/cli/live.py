"""Progress of a lab command on stderr: a live status on a terminal, one plain line per run otherwise.

- On a terminal: a status line that updates in place (rich): done/total, the pass, fail, budget_exceeded and
  error counts, the runs in flight, elapsed time and an ETA (elapsed / done x left), then what the runs wait
  on (``rate-limited, retrying in 2 s``), the retries so far, the tokens reported so far and, where the
  command has rates, their cost (``12,345 tokens · 0.0421 USD``, main and compaction calls); each finished
  run's line is printed above it, cut to the terminal's width (the report keeps the whole text), its status
  coloured (pass green, fail red, budget_exceeded yellow, error magenta) unless ``NO_COLOR`` or
  ``--no-color``.
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
    from alisio.core.harness.events import Event
    from alisio.core.harness.prices import Rates
    from alisio.core.lab.runs.records import RunRecord
    from alisio.core.lab.suites.schedule import RunSpec

_STATUS_STYLE = {"pass": "green", "fail": "red", "budget_exceeded": "yellow", "error": "magenta"}

__all__ = ["Progress"]


def _styled(line: str, status: str, width: int) -> Any:
    """``line`` cut to ``width`` as rich text, its status word coloured (the console drops colour when off)."""
    from rich.text import Text

    from alisio.core.lab.outputs.live_status import fit_line

    text = Text(fit_line(line, width), no_wrap=True, overflow="ellipsis")
    at = text.plain.find(f": {status}")
    if at >= 0 and status in _STATUS_STYLE:
        text.stylize(_STATUS_STYLE[status], at + 2, at + 2 + len(status))
    return text


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
        self._waiting: dict[tuple[str | None, str, int], tuple[str, float]] = {}
        """Per waiting run: what it waits on and the monotonic time the wait ends."""
        self._retries = 0
        self._tokens: int | None = None
        self._rates: dict[str | None, Rates | None] = {}
        """Each arm's rates (variant id, ``None`` for a plain run): the cost is counted at them."""
        self._cost: float | None = None

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
        from alisio.core.lab.outputs.live_status import status_extras

        now = time.monotonic()
        with self._lock:
            waits = [(what, until - now) for what, until in self._waiting.values()]
            retries, tokens, cost = self._retries, self._tokens, self._cost
        return text + status_extras(waits, retries, tokens, cost)

    def on_event(self, spec: RunSpec, event: Event) -> None:
        """Follow a run's events (on its thread): retry waits, the end of a wait, tokens reported."""
        from alisio.core.harness.events import IncidentKind, IncidentRaised, ProviderResponded
        from alisio.core.harness.prices import cost_of_usage
        from alisio.core.lab.outputs.live_status import retry_wait

        key = (spec.variant, spec.task_id, spec.repetition)
        with self._lock:
            if isinstance(event, IncidentRaised) and event.kind is IncidentKind.PROVIDER_RETRY:
                self._retries += 1
                wait = retry_wait(event.message)
                if wait is not None:
                    self._waiting[key] = (wait[0], time.monotonic() + wait[1])
                return
            self._waiting.pop(key, None)
            usage = event.usage if isinstance(event, ProviderResponded) else None
            if usage is not None:
                self._tokens = (self._tokens or 0) + (usage.input_tokens or 0) + (usage.output_tokens or 0)
                rates = self._rates.get(spec.variant)
                cost = None if rates is None else cost_of_usage(rates, usage)
                self._cost = self._cost if cost is None else (self._cost or 0.0) + cost

    def run_started(self, spec: RunSpec) -> None:
        with self._lock:
            self._in_flight += 1

    def run_ended(self, spec: RunSpec) -> None:
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)
            self._waiting.pop((spec.variant, spec.task_id, spec.repetition), None)

    def run_finished(self, record: RunRecord, done: int, total: int) -> None:
        with self._lock:
            self._done, self._total = done, total
            self._counts[str(record.status)] += 1
        if self._quiet:
            return
        from alisio.shell.cli.safe_text import shown

        line = shown(self._line(done, total, record))  # a verifier's detail is untrusted text
        if self._live is not None:
            self._live.console.print(_styled(line, str(record.status), self._live.console.width))
        else:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def planned(self, total: int, rates: dict[str | None, Rates | None] | None = None) -> None:
        """How many runs the command plans, and each arm's rates (the status line's cost)."""
        with self._lock:
            self._total = total
            self._rates = dict(rates or {})

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
                return Text(self.progress.status(), style="bold", no_wrap=True, overflow="ellipsis")

        from alisio.shell.cli.style import colour_wanted

        console = Console(stderr=True, no_color=not colour_wanted(), highlight=False)
        status = _Status(self)
        with Live(
            status, console=console, refresh_per_second=4, transient=True, redirect_stdout=False
        ) as live:
            self._live = live
            try:
                yield self
            finally:
                self._live = None
