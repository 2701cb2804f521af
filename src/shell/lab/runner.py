"""The one run loop of the lab: every planned run through an executor, each record kept as it finishes.

``eval run``, ``record``, ``variants`` and ``ci`` all run here: a plain run is the one-arm case of a variants
run. The loop takes the function that runs one planned run and an executor that decides how runs are carried
out (one after another here; concurrent and distributed executors implement the same ``Executor``).

Rules the loop keeps:
- each finished record is appended at once, as one whole line, to its arm's runs.jsonl (``RunsLog``): a crash
  or a kill keeps every finished run, and a failed write (a full disk) truncates the file back to its last
  whole line and stops the command;
- the records come back in plan order whatever order the runs finished in, so a report does not depend on
  the executor;
- Ctrl-C (or SIGTERM/SIGHUP, raised as ``KeyboardInterrupt``) stops the loop: the executor stops what is in
  flight, the finished records are returned and ``interrupted`` says by what;
- a run that shows every further run is pointless (the provider refused the key, the endpoint cannot be
  reached after the retries) stops the loop too, with one line saying why (``stop_reason``);
- the executors pull the runs from a ``SpecFeed`` only as they can start them: a fixed plan is every spec in
  order; a sequential plan (``--sequential``, ``--until-width``) also skips, at the moment a run would start,
  the specs of a task that has stopped, which the feed learns from each finished record
  (``alisio.shell.lab.seq_watch``).
- a run after which no new run may start (a command-wide cap reached, ``drain``) closes the gate: the runs
  not started are skipped (never run, never recorded), the runs in flight finish and are kept, and the loop
  ends with the drain's line as why it stopped.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

import msgspec

from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.runs.transcript import transcript_path
from alisio.core.lab.runs.workspace_diff import diff_path
from alisio.core.lab.suites.schedule import RunSpec
from alisio.shell.errors import CommandError, Terminated
from alisio.shell.lab.errors import LabStopped
from alisio.shell.lab.run_one import Finished
from alisio.shell.lab.store import RUNS_JSONL, write_bytes_atomic

__all__ = ["Executor", "LoopResult", "RunsLog", "SerialExecutor", "SpecFeed", "ThreadExecutor", "run_loop"]

RunFn = Callable[[RunSpec], Finished | None]
"""Runs one planned run and returns its record and transcript (never raises but for ``KeyboardInterrupt``);
``None``: the run was not started (the loop's gate was closed)."""

_WAKE_S = 0.25
"""How long the main thread sleeps at most while runs are in flight: the latest a missed Ctrl-C is raised."""


class SpecFeed:
    """The planned runs, handed out one at a time as an executor can start one.

    ``skip`` (``None``: none) is asked of each spec at the moment it would start, so it may depend on the
    records finished so far: ``finished`` hands each finished record to ``learn`` before the executor
    pulls the next spec. Indexes are positions in ``specs`` (the plan), skipped or not.
    """

    def __init__(
        self,
        specs: Sequence[RunSpec],
        skip: Callable[[RunSpec], bool] | None = None,
        learn: Callable[[RunRecord], None] | None = None,
    ) -> None:
        self.specs = tuple(specs)
        self.skip = skip
        self.learn = learn

    def __len__(self) -> int:
        return len(self.specs)

    def __getitem__(self, index: int) -> RunSpec:
        return self.specs[index]

    def __iter__(self) -> Iterator[tuple[int, RunSpec]]:
        """``(index, spec)`` of each spec to start, decided lazily, in plan order."""
        for index, spec in enumerate(self.specs):
            if self.skip is None or not self.skip(spec):
                yield index, spec

    def finished(self, record: RunRecord) -> None:
        """A run finished (before the next spec is pulled)."""
        if self.learn is not None:
            self.learn(record)


class Executor(Protocol):
    """How the planned runs are carried out."""

    def run(self, run: RunFn, specs: SpecFeed) -> Iterator[tuple[int, Finished | None]]:
        """Run the specs ``specs`` hands out, yielding ``(index in specs, record)`` as each run finishes.

        Pull a spec from ``specs`` only when it can start (after the records yielded before are handled: a
        sequential feed decides from them). Closing the iterator early (the loop stops) must stop the runs
        still in flight.
        """
        ...


class SerialExecutor:
    """One run after another, in plan order, on the calling thread."""

    def run(self, run: RunFn, specs: SpecFeed) -> Iterator[tuple[int, Finished | None]]:
        for index, spec in specs:
            yield index, run(spec)


class ThreadExecutor:
    """Up to ``jobs`` runs at once on worker threads, started in plan order, yielded as they finish.

    Threads, not processes: a run spends its time waiting (for the provider, for a command), the live
    provider's HTTP client and its limits are shared in one process, and a run needs no pickling (measured in
    bench/bench_jobs.py). Stopping early (Ctrl-C or a signal in the main thread, or the loop closing the
    iterator) cancels the runs not started, asks the runs in flight to stop (``alisio.shell.cancel``: their
    commands' process groups are killed, their workspaces removed) and waits for them for ``grace_s``.

    The main thread waits for the runs ``_WAKE_S`` at a time: Python raises Ctrl-C's ``KeyboardInterrupt`` in
    the main thread when it next runs Python code, and a thread asleep on a lock is woken only by a signal the
    kernel hands to that thread, at a moment it is asleep. A SIGINT that a worker thread receives, or that comes
    just before the main thread falls asleep, would otherwise wait for a run to finish (a command's minutes).
    """

    def __init__(self, jobs: int, grace_s: float = 30.0) -> None:
        self.jobs = jobs
        self.grace_s = grace_s

    def run(self, run: RunFn, specs: SpecFeed) -> Iterator[tuple[int, Finished | None]]:
        from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

        from alisio.shell import cancel

        cancel.reset()
        pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="alisio-run")
        upcoming = iter(specs)
        pending: dict[Future[Finished | None], int] = {}

        def fill() -> None:  # a worker per run in flight: the next spec is pulled when one is free
            while len(pending) < self.jobs and (item := next(upcoming, None)) is not None:
                pending[pool.submit(run, item[1])] = item[0]

        try:
            fill()
            while pending:
                # a timeout, not a bare wait: a signal handled while this thread was not yet asleep (or taken
                # by a worker thread) wakes nothing; the next wake-up raises it here (ThreadExecutor docs)
                done, _ = wait(pending, timeout=_WAKE_S, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=pending.__getitem__):
                    index = pending.pop(future)
                    yield index, future.result()
                fill()
        finally:
            if pending:  # stopped early: nothing new starts, the runs in flight stop at their next check
                cancel.request()
                pool.shutdown(wait=False, cancel_futures=True)
                wait([f for f in pending if not f.cancelled()], timeout=self.grace_s)
            pool.shutdown(wait=False)
            cancel.reset()


class RunsLog:
    """The runs.jsonl of each arm, open for the command's life; one whole line appended per finished run."""

    def __init__(self, directories: Mapping[str | None, Path]) -> None:
        self._encoder = msgspec.json.Encoder()
        self._files: dict[str | None, tuple[Path, IO[bytes]]] = {}
        try:
            for arm, directory in directories.items():
                directory.mkdir(parents=True, exist_ok=True)
                self._files[arm] = (directory, (directory / RUNS_JSONL).open("ab"))
        except OSError as error:
            self.close()
            why = error.strerror or str(error)
            raise CommandError(
                f"{error.filename or directories}: cannot write the report there ({why}); nothing was run"
            ) from None

    def append(self, finished: Finished) -> None:
        """Write the run's transcript and its kept workspace diff, then append its record to its arm's runs.jsonl, flushed to disk.

        Raises:
            LabStopped: a write failed (a full disk...): runs.jsonl is truncated back to its last whole line.
        """
        record = finished.record
        directory, handle = self._files[record.variant]
        kept = ((transcript_path, finished.transcript), (diff_path, finished.workspace))
        for where, data in kept:
            if not data:
                continue
            path = directory / where(record.task_id, record.repetition)
            try:
                write_bytes_atomic(path, data)
            except OSError as error:
                why = error.strerror or str(error)
                raise LabStopped(f"{directory}: cannot write {path.name}: {why}") from None
        line = self._encoder.encode(record) + b"\n"
        size = handle.tell()
        try:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        except OSError as error:
            _truncate(handle, size)
            why = error.strerror or str(error)
            raise LabStopped(f"{directory}: cannot append to {RUNS_JSONL}: {why}") from None

    def close(self) -> None:
        for _, handle in self._files.values():
            with contextlib.suppress(OSError):  # a write already failed and said so
                handle.close()
        self._files.clear()


def _truncate(handle: IO[bytes], size: int) -> None:
    """Drop a partly written line: the file ends with its last whole line again (best effort)."""
    with contextlib.suppress(OSError):  # then a reader drops the torn last line
        os.ftruncate(handle.fileno(), size)
        handle.seek(size)


@dataclass(frozen=True)
class LoopResult:
    """The finished records in plan order, and why the loop stopped early (if it did)."""

    records: tuple[RunRecord, ...]
    interrupted: KeyboardInterrupt | None
    """Ctrl-C (``KeyboardInterrupt``) or a signal (``Terminated``) stopped it."""
    stopped: str | None
    """One line saying why it stopped before the plan finished (``None``: every planned run finished)."""


def _interrupt_line(interrupt: KeyboardInterrupt) -> str:
    """``Ctrl-C``, ``SIGTERM`` or ``SIGHUP``: what stopped the runs."""
    if isinstance(interrupt, Terminated):
        import signal

        return signal.Signals(interrupt.signum).name
    return "Ctrl-C"


class _Gate:
    """Runs each spec until ``drain`` names a finished run; then starts none (each is ``None``, not started).

    The drain is asked on the thread that ran the run, before that thread can take the next spec, so no run
    starts after the one that closed the gate has finished.
    """

    def __init__(self, run: RunFn, drain: Callable[[RunRecord], str | None]) -> None:
        self.run, self.drain = run, drain
        self.closed = threading.Event()
        self.line: str | None = None
        """Why the gate closed (the first line the drain gave)."""

    def __call__(self, spec: RunSpec) -> Finished | None:
        if self.closed.is_set():
            return None
        done = self.run(spec)
        if done is not None and (line := self.drain(done.record)) is not None and not self.closed.is_set():
            self.line = line
            self.closed.set()
        return done


def run_loop(
    specs: SpecFeed,
    run: RunFn,
    executor: Executor,
    log: RunsLog,
    *,
    on_record: Callable[[RunRecord, int, int], None],
    stop_reason: Callable[[RunRecord], str | None],
    drain: Callable[[RunRecord], str | None] = lambda record: None,
) -> LoopResult:
    """Run every spec through ``executor``, appending each record to ``log`` as it finishes.

    Args:
        on_record: called with each finished record, how many have finished, and the number planned.
        stop_reason: says, of a finished record, why no further run is worth starting (``None``: go on).
        drain: says, of a finished record, why no new run may start while the runs in flight finish.

    Returns:
        The finished records in plan order, and whether (and why) the loop stopped early. A failed append
        (``LabStopped``) stops it too; that run is then in neither runs.jsonl nor the result.
    """
    finished: dict[int, RunRecord] = {}
    interrupted: KeyboardInterrupt | None = None
    stopped: str | None = None
    gated = _Gate(run, drain)
    results = executor.run(gated, specs)
    try:
        for index, done in results:
            if done is None:
                continue
            log.append(done)
            record = finished[index] = done.record
            specs.finished(record)
            on_record(record, len(finished), len(specs))
            stopped = stop_reason(record)
            if stopped is not None:
                break
    except KeyboardInterrupt as interrupt:
        interrupted, stopped = interrupt, _interrupt_line(interrupt)
    except LabStopped as error:
        stopped = error.lines[0]
    finally:
        close = getattr(results, "close", None)
        if callable(close):
            close()
    return LoopResult(
        records=tuple(finished[i] for i in sorted(finished)),
        interrupted=interrupted,
        stopped=stopped or gated.line,
    )
