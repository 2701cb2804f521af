"""One run on a Ray worker: the command's context rebuilt from its portable form, ``run_one``, the result.

``run_remote`` is the Ray task of ``alisio.shell.lab.ray_executor``. It never raises but for
``KeyboardInterrupt`` (a non-forced ``ray.cancel``: ``run_one`` kills the run's commands and removes its
workspace on the way out), like ``run_one`` itself. Per worker process, it keeps:
- the decoded ``PortableRun`` of the command (fetched from the object store on the first run only);
- the suite, unpacked once into ``alisio-<pid>-suite-*`` in the temporary directory and loaded again: it must
  hash to the driver's ``suite_hash``. Ray kills its workers without running ``atexit``, so these directories
  (and the workspaces of a worker that died) are removed by the next worker or command on that machine
  (``alisio.shell.stale``), as a killed command's are.
A worker that cannot set up (another alisio version, a suite that does not unpack or hash the same) returns an
``error`` record with reason ``worker_setup``, naming why.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import tarfile
import tempfile
import threading
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import msgspec
from returns.result import Failure

from alisio.core.harness.config import config_hash
from alisio.core.harness.endpoint import endpoint_of
from alisio.core.harness.sandbox import SandboxLimits
from alisio.core.lab.judges.outcome import SetupError, record_from_run
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.suites.schedule import RunSpec
from alisio.core.replay.cassette import RecordedCall
from alisio.shell.harness.providers.gate import Gate
from alisio.shell.lab.plans import ProviderPlan, script_player
from alisio.shell.lab.portable import (
    PortableLive,
    PortableProvider,
    PortableReplay,
    PortableRun,
    PortableScripted,
    RunSecrets,
    decode_run,
)
from alisio.shell.lab.run_one import Arm, Finished, RunContext, run_one
from alisio.shell.lab.suites import LoadedSuite, load_suite
from alisio.shell.sandbox.bwrap import Sandbox
from alisio.shell.stale import owned_prefix, remove_stale

__all__ = ["WORKER_SETUP", "RemoteResult", "decode_result", "provider_plan", "run_remote"]

WORKER_SETUP = "worker_setup"
"""The reason of a run whose worker could not set up (another alisio, a suite that does not hash the same)."""


class RemoteResult(msgspec.Struct, frozen=True, kw_only=True):
    """What a worker sends back for one run."""

    record: RunRecord
    transcript: bytes = b""
    """The run's transcript (redacted on the worker), which the driver writes."""
    workspace: bytes = b""
    """The run's kept workspace diff (redacted on the worker), which the driver writes."""
    calls: tuple[RecordedCall, ...] | None = None
    """A recording's provider calls (``None`` when the command does not record)."""
    lines: tuple[str, ...] = ()
    """Lines for people (a kept workspace's path on the worker's machine)."""


_result_encoder = msgspec.msgpack.Encoder()
_result_decoder = msgspec.msgpack.Decoder(RemoteResult)
_spec_decoder = msgspec.msgpack.Decoder(RunSpec)
_secrets_decoder = msgspec.msgpack.Decoder(RunSecrets)


def _sent(finished: Finished, calls: tuple[RecordedCall, ...] | None, lines: tuple[str, ...]) -> RemoteResult:
    """What the worker sends back of a finished run: its record, transcript and kept workspace diff."""
    return RemoteResult(
        record=finished.record,
        transcript=finished.transcript,
        workspace=finished.workspace,
        calls=calls,
        lines=lines,
    )


def decode_result(data: bytes) -> RemoteResult:
    """The ``RemoteResult`` a worker encoded."""
    return _result_decoder.decode(data)


_runs: dict[str, PortableRun] = {}
"""Object id -> the command's decoded context (one per command this worker process served)."""
_suites: dict[str, LoadedSuite] = {}
"""Suite content hash -> the suite unpacked in this worker process."""


def _portable(run_box: list[Any]) -> PortableRun:
    import ray

    ref = run_box[0]  # boxed: Ray does not fetch it for every task, only on this worker's first run
    key = ref.hex()
    if key not in _runs:
        _runs.clear()  # a worker process serves one command (one Ray job) at a time
        _runs[key] = decode_run(ray.get(ref))
    return _runs[key]


def _suite(expected: str, suite_box: list[Any]) -> LoadedSuite | str:
    """The suite unpacked and loaded on this worker, or why it cannot be."""
    import ray

    if expected in _suites:
        return _suites[expected]
    remove_stale()  # the suites and workspaces of workers and commands that are gone
    directory = Path(tempfile.mkdtemp(prefix=owned_prefix("suite")))
    from alisio.shell.lab.portable import unpack_suite

    try:
        unpack_suite(ray.get(suite_box[0]), directory)
    except (tarfile.TarError, OSError) as error:
        return f"cannot unpack the suite on {socket.gethostname()}: {error}"
    result = load_suite(directory)
    if isinstance(result, Failure):
        return f"the suite does not load on {socket.gethostname()}: {result.failure()}"
    loaded: LoadedSuite = result.unwrap()
    if loaded.content_hash != expected:
        return f"the suite unpacked on {socket.gethostname()} does not hash as the driver's"
    _suites[expected] = loaded
    return loaded


def _interruptible() -> None:
    """Let a non-forced ``ray.cancel`` interrupt this task: it raises ``KeyboardInterrupt`` through SIGINT,
    which a worker inherits ignored when the command was started in the background by a shell script."""
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    ):
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _setup_problem(portable: PortableRun) -> str | None:
    mine = version("alisio")
    if mine != portable.harness_version:
        return (
            f"the worker on {socket.gethostname()} runs alisio {mine}, the command alisio "
            f"{portable.harness_version}: install the same version on every node"
        )
    found = _sandbox(portable.sandbox)
    return f"on {socket.gethostname()}: {found}" if isinstance(found, str) else None


_sandboxes: dict[SandboxLimits, Sandbox | str] = {}
"""The limits of ``--sandbox bwrap`` -> bubblewrap checked on this worker (or why it cannot run)."""


def _sandbox(limits: SandboxLimits | None) -> Sandbox | str | None:
    """This worker's sandbox for ``limits`` (checked once per worker process), why it cannot run, or ``None``."""
    if limits is None:
        return None
    if limits not in _sandboxes:
        from alisio.shell.sandbox.bwrap import probe_sandbox

        _sandboxes[limits] = probe_sandbox(limits, os.environ)
    return _sandboxes[limits]


def provider_plan(provider: PortableProvider, secrets: RunSecrets, gate: Gate | None) -> ProviderPlan:
    """The run's provider plan on the worker, from its portable form (``gate``: the live endpoint's)."""
    from alisio.shell.lab.record import replay_plan

    match provider:
        case PortableLive():
            from alisio.shell.harness.providers.registry import build_provider

            live = build_provider(
                provider.api,
                secrets.base_url or provider.base_url,
                provider.model,
                api_key=secrets.api_key,
                provider_id=provider.id,
                max_response_bytes=provider.max_response_bytes,
                gate=gate,
                rate_limit_give_up_ms=provider.rate_limit_give_up_ms,
            )
            return ProviderPlan(
                id=provider.id,
                model=provider.model,
                factory=lambda _task, _spec: live,
                close=live.close,
                key=secrets.api_key,
                endpoint=endpoint_of(provider.base_url),
            )
        case PortableScripted():
            return _scripted_plan(provider)
        case PortableReplay():
            return replay_plan(provider.cassettes, provider.faults)


def _scripted_plan(provider: PortableScripted) -> ProviderPlan:
    from alisio.core.lab.outputs.formats import SCRIPTED_PROVIDER

    scripts = {key: (data, provider.sources[key]) for key, data in provider.scripts.items()}
    factory = script_player(
        scripts, provider.model, over_http=provider.over_http, timeout_ms=provider.timeout_ms
    )
    return ProviderPlan(id=SCRIPTED_PROVIDER, model=provider.model, factory=factory, close=lambda: None)


def _context(
    portable: PortableRun,
    secrets: RunSecrets,
    loaded: LoadedSuite,
    gate: Gate | None,
    say: Callable[[str], None],
) -> RunContext:
    from alisio.shell.harness.tools.dispatch import tool_env
    from alisio.shell.lab.cassettes import credentials_of
    from alisio.shell.lab.record import recording_plan

    key = secrets.api_key
    plan = provider_plan(portable.provider, secrets, gate)
    if portable.record:
        plan, _ = recording_plan(plan)
    return RunContext(
        loaded=loaded,
        provider=plan,
        granted=frozenset(portable.granted),
        read_only=portable.read_only,
        keep=portable.keep,
        harness_version=portable.harness_version,
        tool_env=tool_env(os.environ, key),  # this machine's environment, without any credential
        say=say,
        credentials=credentials_of(os.environ, key),  # what this machine's transcripts must not hold
        sandbox=sandbox if isinstance(sandbox := _sandbox(portable.sandbox), Sandbox) else None,
    )


def _arm(portable: PortableRun, variant: str | None, where: Path) -> Arm:
    arm = next(arm for arm in portable.arms if arm.variant == variant)
    # the report directory is the driver's: a worker never writes a report
    return Arm(
        variant=arm.variant,
        measured=arm.measured,
        directory=where,
        run_id=arm.run_id,
        rates=arm.rates,
        faults=arm.faults,
    )


def _setup_failed(portable: PortableRun, spec: RunSpec, why: str) -> bytes:
    """The encoded result of a run whose worker could not set up: an ``error`` record (``worker_setup``)."""
    arm = next(arm for arm in portable.arms if arm.variant == spec.variant)
    setup = SetupError(reason=WORKER_SETUP, message=why)
    record = record_from_run(
        spec, (), None, None, (), config_hash=config_hash(arm.measured), setup_error=setup
    )
    return _result_encoder.encode(RemoteResult(record=record))


def run_remote(
    run_box: list[Any],
    suite_box: list[Any],
    secret_data: bytes,
    spec_data: bytes,
    slots: Any,
    owner: str,
    relay: Any = None,
) -> bytes:
    """Run one planned run on this worker: the encoded ``RemoteResult``.

    Args:
        run_box, suite_box: one-element lists holding the object refs of the encoded ``PortableRun`` and of
            the suite archive (boxed, so Ray fetches them only when this process has not yet).
        secret_data: the ``RunSecrets`` (the API key...), msgpack-encoded, sent with the task, never stored.
        spec_data: the ``RunSpec``, msgpack-encoded.
        slots: the command's ``EndpointSlots`` actor (``None``: no live provider, so no endpoint to share).
        owner: the run's name at that actor (and at ``relay``).
        relay: the command's ``ProgressRelay`` actor, which gets the events the live status reads
            (``alisio.shell.lab.ray_progress``); ``None``: none are forwarded.
    """
    _interruptible()
    spec = _spec_decoder.decode(spec_data)
    portable = _portable(run_box)
    problem = _setup_problem(portable)
    loaded = _suite(portable.suite_hash, suite_box) if problem is None else problem
    if isinstance(loaded, str):
        return _setup_failed(portable, spec, loaded)
    gate = None
    if slots is not None:
        from alisio.shell.lab.ray_gate import ClusterGate

        gate = ClusterGate(slots, owner)
    lines: list[str] = []
    host = socket.gethostname()
    secrets = _secrets_decoder.decode(secret_data)
    ctx = _context(portable, secrets, loaded, gate, lambda line: lines.append(f"{line} (on {host})"))
    if relay is not None:
        from alisio.shell.lab.ray_progress import forwarder

        ctx = dataclasses.replace(ctx, on_event=forwarder(relay, owner, ctx.credentials))
    try:
        task = next(task for task in loaded.suite.tasks if task.id == spec.task_id)
        finished = run_one(ctx, _arm(portable, spec.variant, loaded.directory), task, spec)
    finally:
        ctx.provider.close()
    calls = None
    hook = ctx.provider.hook
    if portable.record:
        from alisio.shell.lab.record import RecordHook

        assert isinstance(hook, RecordHook)  # _context wrapped the plan
        calls = hook.recorded[task.id][0] if task.id in hook.recorded else ()
    return _result_encoder.encode(_sent(finished, calls, tuple(lines)))
