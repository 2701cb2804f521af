"""One run of one task: copy the fixture, run the agent headless, judge, and build the run's record.

``run_one`` never raises for anything a run can do: a fixture that cannot be copied is an ``error`` record
(reason ``fixture_copy``), and so is any unexpected exception inside the run (reason ``internal_error``,
its type and message in ``errors``), so one broken run never costs a lab its other runs. Only
``KeyboardInterrupt`` (Ctrl-C, SIGTERM, SIGHUP) goes through, after the workspace was removed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from alisio.core.harness.config import MeasuredConfig, config_hash
from alisio.core.harness.endpoint import redact_credentials
from alisio.core.harness.events import Effect, Event
from alisio.core.harness.faults import FaultSpec
from alisio.core.harness.policy import Allow, Policy, decide
from alisio.core.harness.prices import Rates
from alisio.core.lab.judges.outcome import SetupError, record_from_run
from alisio.core.lab.reports.context import context_used
from alisio.core.lab.runs.records import Incident, RunRecord
from alisio.core.lab.runs.transcript import encode_transcript
from alisio.core.lab.runs.workspace_diff import WorkspaceKept
from alisio.core.lab.suites.schedule import RunSpec
from alisio.core.lab.suites.suite import Task
from alisio.core.replay.fingerprint import WORKSPACE as WORKSPACE_TOKEN
from alisio.core.replay.fingerprint import Rules, path_rules
from alisio.shell.lab.contexts import mcp_servers_for
from alisio.shell.lab.plans import ProviderPlan
from alisio.shell.lab.preflight import task_policy
from alisio.shell.lab.suites import LoadedSuite
from alisio.shell.lab.task_sandbox import task_sandboxes
from alisio.shell.sandbox.bwrap import Sandbox, SandboxRun
from alisio.shell.stale import owned_prefix

if TYPE_CHECKING:
    from alisio.shell.agents.seam import AgentJob, AgentRunner
    from alisio.shell.lab.contexts import LoadedContext
    from alisio.shell.lab.workspace import Workspace

__all__ = ["INTERNAL_ERROR", "Arm", "Finished", "RunContext", "run_one", "runner_for"]

INTERNAL_ERROR = "internal_error"
"""The reason of a run that an unexpected exception ended (a bug of ours or of the environment)."""


@dataclass(frozen=True)
class Arm:
    """One configuration the command runs: a plain run has one, ``eval variants`` one per variant."""

    variant: str | None
    """The variant id (``None`` for a plain run)."""
    measured: MeasuredConfig
    directory: Path
    """Where this arm's report.json, report.md and runs.jsonl go."""
    run_id: str
    agent: str | None = None
    """The agent every task of this arm runs with (``--agent`` or the variant's); ``None``: each task's own."""
    model: str | None = None
    """The model this arm's external agent asks for (a variant's ``model``); ``None``: the configured one."""
    rates: Rates | None = None
    """The prices of this arm's model (``alisio.shell.lab.spend.arm_rates``); ``None``: no cost estimated."""
    rates_from: str | None = None
    """Where ``rates`` came from (the flags, or config.toml's table), as the report says it."""
    faults: FaultSpec | None = None
    """The provider faults this arm's runs get (``--faults``, a variant's ``faults``); ``None``: none."""
    context: LoadedContext | None = None
    """The files and text every run of this arm gets (``--context``, the variant's); ``None``: none."""


@dataclass(frozen=True)
class RunContext:
    """What every run of a command shares, decided before the first run."""

    loaded: LoadedSuite
    provider: ProviderPlan
    granted: frozenset[Effect]
    read_only: bool
    keep: bool
    harness_version: str
    tool_env: Mapping[str, str] | None = None
    """The environment of ``bash`` commands and command verifiers (``None``: the tools' default)."""
    say: Callable[[str], None] = lambda line: None
    """Prints one line for people (the path of a kept workspace)."""
    on_event: Callable[[RunSpec, Event], None] = lambda spec, event: None
    """Sees each event of each run as it happens (the live status: waits, retries, tokens)."""
    credentials: tuple[tuple[str, str], ...] = ()
    """The exact credentials of the environment (and the API key), redacted from transcripts."""
    agents: Mapping[str, AgentRunner] = field(default_factory=dict)
    """The runners of the external agents the command uses, by agent name (checked before the first run)."""
    sandbox: Sandbox | None = None
    """Where bash commands and command verifiers run (``--sandbox bwrap``); ``None``: plain subprocesses."""
    mcp_servers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """MCP servers given to every run (config.toml's ``[mcp.servers.NAME]``): server name -> argv."""


@dataclass(frozen=True)
class Finished:
    """A finished run: its record, and its transcript's bytes (redacted; written by the driver)."""

    record: RunRecord
    transcript: bytes
    workspace: bytes = b""
    """The workspace the agent left, as a diff (``alisio.core.lab.runs.workspace_diff``); empty when not kept."""


def _rules(task: Task, workspace: Path, sandbox: SandboxRun | None) -> Rules:
    """The fingerprint rules of a run: its workspace path (and ``/workspace``, or the task's workdir, where
    sandboxed commands see it, so a run fingerprints the same with and without the sandbox), then the task's
    replayNormalize."""
    rules = path_rules(str(workspace), str(workspace.resolve()))
    if sandbox is not None:  # as a path only: Codex's </workspace_roots> tag is not the workspace
        rules += ((re.escape(sandbox.workdir) + r"\b", WORKSPACE_TOKEN),)
    return rules + tuple((rule.pattern, rule.replace) for rule in task.replay_normalize)


def _sandbox_runs(
    ctx: RunContext, task: Task, policy: Policy, workspace: Path
) -> tuple[SandboxRun | None, SandboxRun | None]:
    """The run's sandboxes, the agent's and the verifiers' (``task_sandboxes``): the host network only when
    the ``external`` effect runs without asking."""
    network = isinstance(decide(Effect.EXTERNAL, policy, ctx.granted), Allow)
    return task_sandboxes(ctx.sandbox, task, ctx.loaded.directory, workspace, network=network)


def runner_for(ctx: RunContext, job: AgentJob) -> AgentRunner:
    """The runner of one run (the factory ``run_one`` asks): the external agent the job names, else the
    built-in loop over the command's provider."""
    from alisio.shell.lab.agents import BuiltinRunner

    if job.agent is not None and job.agent in ctx.agents:
        return ctx.agents[job.agent]

    return BuiltinRunner(
        plan=ctx.provider,
        granted=ctx.granted,
        read_only=ctx.read_only,
        harness_version=ctx.harness_version,
        tool_env=ctx.tool_env,
        on_event=lambda event: ctx.on_event(job.spec, event),
    )


def _judged_run(ctx: RunContext, arm: Arm, task: Task, spec: RunSpec) -> Finished:
    """The run itself; raises ``WorkspaceError`` when the fixture cannot be prepared."""
    from alisio.shell.agents.seam import AgentJob
    from alisio.shell.lab.verifiers import run_verifiers
    from alisio.shell.lab.workspace import prepare_workspace

    measured_hash = config_hash(arm.measured)
    fixture = ctx.loaded.fixture_dir(task)
    prefix = f"alisio-kept-{task.id}-" if ctx.keep else owned_prefix(task.id)
    overlay = arm.context.workspace if arm.context is not None else ()
    with prepare_workspace(
        fixture, fixture_git=task.fixture_git, keep=ctx.keep, prefix=prefix, overlay=overlay
    ) as ws:
        if ws.kept:
            ctx.say(f"  kept {task.id} rep {spec.repetition}: {ws.path}")
        sandbox, verifier_sandbox = _sandbox_runs(ctx, task, task_policy(task.policy, ctx.read_only), ws.path)
        job = AgentJob(
            task=task,
            spec=spec,
            workspace=ws.path,
            rules=_rules(task, ws.path, sandbox),
            measured=arm.measured,
            config_hash=measured_hash,
            agent=arm.agent or task.agent,
            model=arm.model,
            sandbox=sandbox,
            rates=arm.rates,
            **_from_arm(ctx, arm),
        )
        result = runner_for(ctx, job).run(job)
        kept, tampered = _after_agent(task, ws, ctx.credentials, keep=result.outcome != "error")
        denied: list[Incident] = []
        verifiers = run_verifiers(
            task,
            ws,
            result.events,
            env=ctx.tool_env,
            agent=result.tools,
            sandbox=verifier_sandbox,
            on_denied=lambda verifier, what: denied.append(_denied(verifier, what)),
        )
    record = record_from_run(
        spec,
        result.events,
        result.outcome,
        result.reason,
        verifiers,
        config_hash=measured_hash,
        error=result.message,
        expected_verifiers=len(task.verifiers),
        tampered=tampered,
    )
    if denied:  # the verifiers' sandbox_denied incidents, after the loop's
        record = msgspec.structs.replace(record, incidents=(*record.incidents, *denied))
    record = msgspec.structs.replace(record, workspace=kept[1], context_used=_used(arm, result.events))
    return Finished(
        record=result.finish(record),
        transcript=encode_transcript(result.events, ctx.credentials),
        workspace=kept[0],
    )


def _from_arm(ctx: RunContext, arm: Arm) -> dict[str, Any]:
    """What the agent seam carries of the arm besides its configuration: its provider faults, the MCP servers
    (the command's and its context's), its context's system text and home files (its workspace files are
    already in the copy)."""
    parts: dict[str, Any] = {
        "faults": arm.faults,
        "mcp_servers": {**ctx.mcp_servers, **mcp_servers_for(arm.context)},
    }
    if arm.context is not None:
        parts |= {"context_system": arm.context.system, "context_home": arm.context.home}
    return parts


def _used(arm: Arm, events: tuple[Event, ...]) -> bool | None:
    """Whether the run used its arm's context (``alisio.core.lab.reports.context.context_used``); ``None``: none."""
    return None if arm.context is None else context_used(arm.context.condition, events)


def _after_agent(
    task: Task, ws: Workspace, known: tuple[tuple[str, str], ...], *, keep: bool
) -> tuple[tuple[bytes, WorkspaceKept | None], str | None]:
    """What the agent left, before anything is put back: kept as a diff (``alisio.shell.lab.workspace_kept``;
    a diff that cannot be read is not kept, saying why; none at all without ``keep``: a loop that ended error
    left nothing to judge again), then its protected files checked and put back (``alisio.shell.lab.integrity``):
    the kept diff and the tampering message."""
    from alisio.core.lab.runs.workspace_diff import kept_diff
    from alisio.shell.lab.integrity import guard_protected
    from alisio.shell.lab.workspace import WorkspaceError, snapshot_tree
    from alisio.shell.lab.workspace_kept import changes_of

    try:
        after = snapshot_tree(ws.path)
    except OSError as error:
        raise WorkspaceError(
            f"cannot read the workspace after the run: {error.strerror or error}", reason="workspace_read"
        ) from error
    kept: tuple[bytes, WorkspaceKept | None] = (b"", None)
    try:
        if keep:
            diff, complete = changes_of(ws, after, known)
            kept = kept_diff(diff, complete=complete)
    except OSError as error:
        kept = (
            b"",
            WorkspaceKept(kept=False, reason=f"cannot read the workspace: {error.strerror or error}"),
        )
    return kept, guard_protected(task, ws, after)


def _denied(verifier: str, what: str) -> Incident:
    return Incident(kind="sandbox_denied", message=f"verifier {verifier}: the sandbox refused {what}")


def run_one(ctx: RunContext, arm: Arm, task: Task, spec: RunSpec) -> Finished:
    """Run ``task`` once as ``spec`` says, under ``arm``'s configuration: its record, never an exception.

    Returns:
        The judged record and its transcript; an ``error`` record (and an empty transcript) when the fixture
        cannot be prepared or anything unexpected raised (``KeyboardInterrupt`` still goes through).
    """
    from alisio.shell.lab.workspace import WorkspaceError

    measured_hash = config_hash(arm.measured)
    started_at = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    try:
        finished = _judged_run(ctx, arm, task, spec)
        return replace(finished, record=_started(finished.record, started_at))
    except WorkspaceError as error:
        setup = SetupError(reason=error.reason, message=str(error))
    except Exception as error:  # a lab never loses its other runs because one run went wrong
        message = redact_credentials(f"{type(error).__name__}: {error}")
        setup = SetupError(reason=INTERNAL_ERROR, message=message)
    record = record_from_run(spec, (), None, None, (), config_hash=measured_hash, setup_error=setup)
    return Finished(record=_started(record, started_at), transcript=b"")


def _started(record: RunRecord, started_at: str) -> RunRecord:
    """``record`` with the time its run started."""
    measured = msgspec.structs.replace(record.measured, started_at=started_at)
    return msgspec.structs.replace(record, measured=measured)
