"""The Ray executor (``--executor ray``): each planned run is a Ray task, on a local instance or a cluster.

The driver (this process) alone writes runs.jsonl and the reports: the run loop sees the records as the Ray
tasks finish, exactly as with threads. Rules:
- what a run needs travels by content (``alisio.shell.lab.portable``): the command's ``PortableRun`` and the
  suite archive are put in the object store once; the API key (and a base URL that holds a password) goes
  with each task, in its arguments (``RunSecrets``: small arguments are inlined in the task and never enter
  the object store, which may spill to disk);
- at most ``jobs`` runs are in flight, started in plan order; each run reserves one CPU of the cluster. A
  local instance is started with ``max(jobs, CPUs)`` logical CPUs, so ``--jobs`` means what it means with
  threads;
- ``provider.maxConcurrency`` (default ``jobs``) holds over the cluster, and a ``Retry-After`` pauses every
  worker of the endpoint: one ``EndpointSlots`` actor per command with a live provider (``ray_gate``);
- the live status's events (a provider's retry notices, each response's usage) come from the workers while
  their runs go on, through one ``ProgressRelay`` actor per command (``ray_progress``), drained between waits;
- a task is never retried (``max_retries=0``): a worker that dies mid-run gives an ``error`` record with
  reason ``worker_lost`` and Ray's message, and the loop goes on;
- stopping early (Ctrl-C, a signal, the loop closing the iterator) cancels the tasks in flight without force:
  Ray raises ``KeyboardInterrupt`` inside them, so their commands' process groups are killed and their
  workspaces removed; a task still running after ``grace_s`` is force-cancelled (its worker killed);
- without an address a local Ray instance is started for the command (its usage statistics off unless
  ``RAY_USAGE_STATS_ENABLED`` says otherwise) and stopped after; in a process where Ray is already initialised
  (``ray_session`` around several commands, as ``eval ci`` does) that session is used and left running.
Ray is imported only once a session starts (``check_address`` needs none).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import msgspec

from alisio.core.harness.config import config_hash
from alisio.core.harness.endpoint import redact_credentials
from alisio.core.lab.judges.outcome import SetupError, record_from_run
from alisio.core.lab.suites.schedule import RunSpec
from alisio.shell.errors import CommandError, Terminated
from alisio.shell.lab.deferred import Held, held_signals
from alisio.shell.lab.errors import LabStopped
from alisio.shell.lab.portable import (
    PortableArm,
    PortableLive,
    PortableRun,
    RunSecrets,
    encode_run,
    suite_archive,
    suite_entries,
)
from alisio.shell.lab.ray_worker import decode_result
from alisio.shell.lab.run_one import INTERNAL_ERROR, Arm, Finished, RunContext
from alisio.shell.lab.runner import SpecFeed

__all__ = ["RAY_INSTALL", "WORKER_LOST", "RayExecutor", "check_address", "ray_session", "require_ray"]

WORKER_LOST = "worker_lost"
"""The reason of a run whose Ray worker (or node) died before it sent its record back."""

_POLL_S = 0.5
"""How long one ``ray.wait`` blocks: signals (Ctrl-C, SIGTERM) are handled between waits."""
_CONNECT_TIMEOUT_S = 5.0
_LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""``0``: Ray binds a single-node instance to 127.0.0.1 instead of the machine's network address."""


RAY_INSTALL = "pip install 'alisio[ray]'"


def require_ray(*, local: bool) -> None:
    """Ray imports; for a ``local`` instance, set first to listen on the loopback address only.

    Raises:
        CommandError: Ray is not installed (one line saying how to install it).
    """
    if local:
        _local_defaults()
    try:
        import ray  # noqa: F401 (only whether it imports)
    except ImportError:
        raise CommandError(f"--executor ray needs Ray, an optional extra: {RAY_INSTALL}") from None


def _local_defaults() -> None:
    """A one-command instance sends no usage statistics and listens on 127.0.0.1 only (nothing outside
    this machine can submit work to it), unless the environment says otherwise. Ray reads both when it is
    first imported: call this before."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault(_LOOPBACK_ONLY, "0")


def check_address(address: str) -> None:
    """The head of the Ray cluster at ``address`` answers on its port, in gRPC (Ray itself waits for minutes
    when not: at an HTTP server such as the dashboard's port, 824 s and 60 warnings were seen).

    Raises:
        CommandError: ``address`` is not ``HOST:PORT`` (``ray://HOST:PORT``, ``auto`` and ``local`` pass),
            nothing answers there, or what answers does not speak gRPC (within about 10 s in all).
    """
    if address in ("auto", "local"):
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise CommandError(
            f"Ray address {address!r} (--ray-address or RAY_ADDRESS): expected HOST:PORT, the address "
            "'ray start --head' prints"
        )
    try:
        answer = _grpc_probe(host.strip("[]"), int(port))
    except OSError as error:
        why = error.strerror or str(error) or type(error).__name__
        raise CommandError(
            f"Ray address {address} (--ray-address or RAY_ADDRESS): cannot connect ({why}): "
            "start the head with 'ray start --head', or leave the address out for a local instance"
        ) from None
    if answer is not None:
        raise CommandError(
            f"Ray address {address} (--ray-address or RAY_ADDRESS): something listens there but it is not "
            f"a Ray head ({answer}); give the address 'ray start --head' prints (port 6379 by default), "
            "not the dashboard's"
        )


_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
"""HTTP/2's client preface and an empty SETTINGS frame: what a gRPC client (Ray's) sends first."""


def _grpc_probe(host: str, port: int) -> str | None:
    """Whether what listens at ``host:port`` speaks gRPC, as a Ray head (its GCS) or Ray Client server does:
    ``None`` when it answers the HTTP/2 preface with a SETTINGS frame, else what it did instead (an HTTP/1
    answer, nothing, a closed connection). Ray itself would wait for minutes (824 s was seen) at anything else.

    Raises:
        OSError: nothing can be connected to there.
    """
    with socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT_S) as conn:
        conn.sendall(_H2_PREFACE)
        data = b""
        try:
            while len(data) < 9:
                chunk = conn.recv(256)
                if not chunk:
                    return "it closed the connection at gRPC's first bytes"
                data += chunk
        except TimeoutError:
            return f"it did not answer gRPC's first bytes within {_CONNECT_TIMEOUT_S:g} s"
    if data[3] == 0x04 and not data.startswith(b"HTTP/"):  # a SETTINGS frame: HTTP/2, as gRPC is
        return None
    first = data.splitlines()[0][:40].decode("ascii", "replace") if data.strip() else ""
    return f"it answered {first!r}" if first.isprintable() and first else "it answered, but not in HTTP/2"


def _init(address: str | None, jobs: int, say: Callable[[str], None]) -> KeyboardInterrupt | None:
    """``ray.init`` for the command, the command's own signal handling kept (Ray replaces it); returns the
    interrupt that arrived while Ray started, to raise once the session is there to shut down."""
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
    if address is None:
        say("starting a local Ray instance (--ray-address or RAY_ADDRESS joins a cluster instead)")
        _local_defaults()
        options.update(address="local", num_cpus=max(jobs, os.cpu_count() or 1), include_dashboard=False)
    else:
        options["address"] = address
    import ray

    _messages_to_stderr()
    with _held_during_init() as held:
        try:
            ray.init(**options)
        # Ray raises ConnectionError, RuntimeError, OSError, ValueError...: one line
        except Exception as error:
            raise LabStopped(_init_failure(address, error)) from None
    return held.interrupt


@contextlib.contextmanager
def _held_during_init() -> Iterator[Held]:
    """Signals held while Ray starts: Ray's own SIGTERM handler (``sys.exit(15)`` in the middle of its start,
    or an abort of its core worker: exit 15 or 134, no report) is not installed, and a Ctrl-C, SIGTERM or
    SIGHUP that arrives is raised once Ray is up, through the command's handlers (130/143/129, the report)."""
    from ray._private import utils

    installer = utils.set_sigterm_handler
    utils.set_sigterm_handler = lambda handler: None
    try:
        with held_signals() as held:
            yield held
    finally:
        utils.set_sigterm_handler = installer


def _messages_to_stderr() -> None:
    """Ray prints what its raylets report (a worker that died...) on the driver's ``sys.stdout``, which is
    the command's data (``--json``): send those lines to stderr, where lines for people go."""
    from ray._private import worker

    original = getattr(worker, "print_to_stdstream", None)
    if original is None or getattr(original, "to_stderr", False):
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        original({**data, "is_err": True}, ignore_prefix)

    to_stderr.to_stderr = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = to_stderr


def _init_failure(address: str | None, error: Exception) -> str:
    """One line saying why Ray could not start or be joined, and what to do about it when we know."""
    where = "start a local Ray instance" if address is None else f"join the Ray cluster at {address}"
    text = str(error).strip()
    line = f"cannot {where}: {text.splitlines()[0] if text else type(error).__name__}"
    if "AF_UNIX path length" in text:
        return f"{line} (set RAY_TMPDIR to a shorter directory)"
    if address is not None and isinstance(error, ConnectionError):
        return f"{line} (a cluster with token authentication needs RAY_AUTH_MODE=token and its token here)"
    return line


@contextlib.contextmanager
def ray_session(address: str | None, jobs: int, say: Callable[[str], None]) -> Iterator[None]:
    """Ray, initialised for the block: the cluster at ``address`` joined, or a local instance started.

    A session that is already there is used and left as it is.

    Raises:
        LabStopped: Ray cannot be started or the cluster cannot be joined (one line, Ray's reason).
    """
    if _initialized():
        yield
        return
    interrupt = _init(address, jobs, say)
    import ray

    try:
        if interrupt is not None:
            raise interrupt
        yield
    finally:
        ray.shutdown()


def _initialized() -> bool:
    """Whether this process already holds a Ray session (without importing Ray when it does not)."""
    ray = sys.modules.get("ray")
    return ray is not None and bool(ray.is_initialized())


@contextlib.contextmanager
def _signals_remembered() -> Iterator[list[int]]:
    """The SIGTERM and SIGHUP received in the block, in order.

    Ray runs Python's signal handlers inside its own waits and turns whatever they raise into a plain
    ``KeyboardInterrupt``: remembering the signal keeps SIGTERM's exit 143 (and SIGHUP's 129).
    """
    seen: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    previous: dict[signal.Signals, Any] = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        handler = signal.getsignal(sig)
        if callable(handler):

            def remembering(signum: int, frame: Any, handler: Callable[[int, Any], Any] = handler) -> None:
                seen.append(signum)
                handler(signum, frame)

            previous[sig] = signal.signal(sig, remembering)
    try:
        yield seen
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def _portable_run(ctx: RunContext, arms: Sequence[Arm], record: bool) -> tuple[PortableRun, RunSecrets]:
    """The command's context by content, and its secrets, which travel apart (with each task)."""
    provider = ctx.provider.portable
    if provider is None:
        raise LabStopped(f"the provider {ctx.provider.id} cannot run on Ray workers")
    secrets = RunSecrets(api_key=ctx.provider.key)
    if isinstance(provider, PortableLive) and redact_credentials(provider.base_url) != provider.base_url:
        secrets = RunSecrets(api_key=ctx.provider.key, base_url=provider.base_url)
        provider = msgspec.structs.replace(provider, base_url=redact_credentials(provider.base_url))
    run = PortableRun(
        harness_version=ctx.harness_version,
        suite_hash=ctx.loaded.content_hash,
        provider=provider,
        arms=tuple(
            PortableArm(
                variant=a.variant, measured=a.measured, run_id=a.run_id, rates=a.rates, faults=a.faults
            )
            for a in arms
        ),
        granted=tuple(sorted(ctx.granted)),
        read_only=ctx.read_only,
        keep=ctx.keep,
        record=record,
        sandbox=ctx.sandbox.limits if ctx.sandbox is not None else None,
    )
    return run, secrets


def _archive(ctx: RunContext) -> bytes:
    loaded = ctx.loaded
    try:
        return suite_archive(loaded.directory, loaded.suite_json, suite_entries(loaded.suite))
    except OSError as error:
        raise LabStopped(f"{loaded.directory}: cannot pack the suite for the workers: {error}") from None


class RayExecutor:
    """Runs each spec as a Ray task (see the module docstring); yields records as the tasks finish.

    ``run``, the driver's own run function, is not used: it holds what cannot travel (an open HTTP client,
    paths of this machine). Each task runs ``run_one`` on a worker over the ``PortableRun`` instead.
    """

    def __init__(
        self,
        ctx: RunContext,
        arms: Sequence[Arm],
        *,
        jobs: int,
        address: str | None,
        on_start: Callable[[RunSpec], None] = lambda spec: None,
        on_end: Callable[[RunSpec], None] = lambda spec: None,
        grace_s: float = 30.0,
    ) -> None:
        self.ctx = ctx
        self.arms = tuple(arms)
        self.jobs = jobs
        self.address = address
        self.on_start = on_start
        """Called (on this thread) as each run is handed to Ray."""
        self.on_end = on_end
        """Called (on this thread) as each run's result comes back, or as it is cancelled."""
        self.grace_s = grace_s

    def run(
        self, run: Callable[[RunSpec], Finished | None], specs: SpecFeed
    ) -> Iterator[tuple[int, Finished | None]]:
        from alisio.shell.lab.record import RecordHook

        hook = self.ctx.provider.hook
        recording = hook if isinstance(hook, RecordHook) else None
        portable, secrets = _portable_run(self.ctx, self.arms, record=recording is not None)
        archive = _archive(self.ctx)
        with ray_session(self.address, self.jobs, self.ctx.say), _signals_remembered() as seen:
            try:
                yield from self._stream(specs, portable, secrets, archive, recording)
            except KeyboardInterrupt as interrupt:
                if seen and not isinstance(interrupt, Terminated):
                    raise Terminated(seen[-1]) from None
                raise

    def _stream(
        self,
        specs: SpecFeed,
        portable: PortableRun,
        secrets: RunSecrets,
        archive: bytes,
        recording: Any,
    ) -> Iterator[tuple[int, Finished | None]]:
        import ray

        from alisio.shell.lab.ray_progress import Drain, start_relay
        from alisio.shell.lab.ray_worker import run_remote

        remote = ray.remote(run_remote).options(num_cpus=1, max_retries=0, retry_exceptions=False)
        boxes = ([ray.put(encode_run(portable))], [ray.put(archive)])
        provider = portable.provider
        slots = None
        if isinstance(provider, PortableLive):  # the cap, and a Retry-After that pauses every worker
            from alisio.shell.lab.ray_gate import start_slots

            slots = start_slots(provider.max_concurrency or self.jobs)
        relay = start_relay()  # the live status's events (tokens, retry waits) while the runs go on
        progress = Drain(relay)
        encoder = msgspec.msgpack.Encoder()
        secret = encoder.encode(secrets)  # a few hundred bytes: inlined in each task, never in the store
        upcoming = iter(specs)  # pulled as slots free up: a sequential feed skips stopped tasks
        pending: dict[Any, int] = {}

        def fill() -> None:
            while len(pending) < self.jobs and (item := next(upcoming, None)) is not None:
                index, spec = item
                ref = remote.remote(*boxes, secret, encoder.encode(spec), slots, str(index), relay)
                pending[ref] = index
                self.on_start(spec)

        try:
            fill()
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=_POLL_S)
                self._relayed(progress, specs, set(pending.values()))
                if ready:  # every task done by now, in plan order
                    ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0)
                for ref in sorted(ready, key=pending.__getitem__):
                    index = pending.pop(ref)
                    finished = self._finished(ref, index, specs[index], slots, recording)
                    self.on_end(specs[index])
                    yield index, finished
                fill()
        finally:
            if pending:
                self._cancel(list(pending))
                for index in pending.values():
                    self.on_end(specs[index])

    def _relayed(self, progress: Any, specs: SpecFeed, running: set[int]) -> None:
        """Hand the workers' forwarded events to ``on_event``: tokens always, a retry wait only while its run
        is still in flight (one drained after the run's end would show a wait that never ends)."""
        from alisio.core.harness.events import IncidentRaised

        for owner, event in progress.ready():
            if int(owner) in running or not isinstance(event, IncidentRaised):
                self.ctx.on_event(specs[int(owner)], event)

    def _finished(self, ref: Any, index: int, spec: RunSpec, slots: Any, recording: Any) -> Finished:
        """The record a task sent back, or the ``error`` record of a task that did not."""
        import ray

        try:
            result = decode_result(ray.get(ref))
        except ray.exceptions.RayTaskError as error:  # our task raised: a bug, named like run_one's
            cause = getattr(error, "cause", None) or error  # Ray's own first line only names the task
            what = f"{type(cause).__name__}: {self._first_line(cause)}"
            return self._error_record(spec, INTERNAL_ERROR, f"the Ray task failed: {what}")
        except ray.exceptions.RayError as error:  # the worker or its node died, an object was lost
            if slots is not None:
                slots.forget.remote(str(index))  # its slot, if it held one, is free again
            return self._error_record(
                spec, WORKER_LOST, f"the Ray worker running this run was lost: {self._first_line(error)}"
            )
        for line in result.lines:
            self.ctx.say(line)
        if recording is not None and result.calls is not None:
            recording.recorded[spec.task_id] = (result.calls, result.record)
        return Finished(record=result.record, transcript=result.transcript, workspace=result.workspace)

    def _first_line(self, error: BaseException) -> str:
        """The first line of Ray's message, with no credential in it."""
        text = str(error).strip()
        line = text.splitlines()[0] if text else type(error).__name__
        for value in self._secret_values():
            line = line.replace(value, "<redacted>")
        return redact_credentials(line)

    def _secret_values(self) -> tuple[str, ...]:
        key = self.ctx.provider.key
        return (key,) if key else ()

    def _error_record(self, spec: RunSpec, reason: str, message: str) -> Finished:
        arm = next(arm for arm in self.arms if arm.variant == spec.variant)
        setup = SetupError(reason=reason, message=message)
        record = record_from_run(
            spec, (), None, None, (), config_hash=config_hash(arm.measured), setup_error=setup
        )
        return Finished(record=record, transcript=b"")

    def _cancel(self, refs: list[Any]) -> None:
        """Stop the tasks in flight: ``KeyboardInterrupt`` in each, then force after ``grace_s``."""
        import ray

        for ref in refs:
            ray.cancel(ref, force=False)
        _, left = ray.wait(refs, num_returns=len(refs), timeout=self.grace_s)
        for ref in left:
            ray.cancel(ref, force=True)
