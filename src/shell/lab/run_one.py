"""One run of one task: copy the fixture, run the agent headless, judge, and build the run's record.

``run_one`` never raises for anything a run can do: a fixture that cannot be copied is an ``error`` record
(reason ``fixture_copy``), and so is any unexpected exception inside the run (reason ``internal_error``,
its type and message in ``errors``), so one broken run never costs a lab its other runs. Only
``KeyboardInterrupt`` (Ctrl-C, SIGTERM, SIGHUP) goes through, after the workspace was removed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from alisio.core.harness.budget import RunBudget
from alisio.core.harness.config import MeasuredConfig, config_hash
from alisio.core.harness.endpoint import redact_credentials
from alisio.core.harness.events import Effect, Event
from alisio.core.harness.policy import Allow, Policy, decide
from alisio.core.harness.sandbox import WORKSPACE
from alisio.core.lab.outcome import SetupError, record_from_run
from alisio.core.lab.records import Incident, RunRecord, VerifierResult
from alisio.core.lab.schedule import RunSpec
from alisio.core.lab.suite import Task
from alisio.core.lab.transcript import encode_transcript
from alisio.core.replay.fingerprint import Rules, path_rules
from alisio.shell.lab.plans import ProviderPlan
from alisio.shell.lab.preflight import task_policy
from alisio.shell.lab.stale import owned_prefix
from alisio.shell.lab.suites import LoadedSuite
from alisio.shell.sandbox.bwrap import Sandbox, SandboxRun

if TYPE_CHECKING:
    from alisio.shell.harness.agent import RunResult

__all__ = ["INTERNAL_ERROR", "Arm", "Finished", "RunContext", "run_one"]

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
    sandbox: Sandbox | None = None
    """Where bash commands and command verifiers run (``--sandbox bwrap``); ``None``: plain subprocesses."""


@dataclass(frozen=True)
class Finished:
    """A finished run: its record, and its transcript's bytes (redacted; written by the driver)."""

    record: RunRecord
    transcript: bytes


def _budget(task: Task) -> RunBudget:
    budget = task.budget
    return RunBudget(
        max_turns=budget.max_turns,
        max_wall_ms=budget.max_wall_ms,
        max_tokens=budget.max_tokens,
        max_tool_calls=budget.max_tool_calls,
    )


def _rules(task: Task, workspace: Path, sandboxed: bool) -> Rules:
    """The fingerprint rules of a run: its workspace path (and ``/workspace``, where sandboxed commands see
    it, so a run fingerprints the same with and without the sandbox), then the task's replayNormalize."""
    paths = (str(workspace), str(workspace.resolve()), *((WORKSPACE,) if sandboxed else ()))
    rules = path_rules(*paths)
    return rules + tuple((rule.pattern, rule.replace) for rule in task.replay_normalize)


def _sandbox_run(ctx: RunContext, policy: Policy, workspace: Path) -> SandboxRun | None:
    """The run's sandbox: the host network only when the ``external`` effect runs without asking."""
    if ctx.sandbox is None:
        return None
    network = isinstance(decide(Effect.EXTERNAL, policy, ctx.granted), Allow)
    return SandboxRun(sandbox=ctx.sandbox, workspace=str(workspace.resolve()), network=network)


def _judged_run(ctx: RunContext, arm: Arm, task: Task, spec: RunSpec) -> Finished:
    """The run itself; raises ``WorkspaceError`` when the fixture cannot be prepared."""
    from alisio.shell.harness.agent import AgentSetup, run_agent
    from alisio.shell.lab.verifiers import run_verifiers
    from alisio.shell.lab.workspace import prepare_workspace

    measured_hash = config_hash(arm.measured)
    fixture = ctx.loaded.fixture_dir(task)
    prefix = f"alisio-kept-{task.id}-" if ctx.keep else owned_prefix(task.id)
    with prepare_workspace(fixture, fixture_git=task.fixture_git, keep=ctx.keep, prefix=prefix) as ws:
        if ws.kept:
            ctx.say(f"  kept {task.id} rep {spec.repetition}: {ws.path}")
        policy = task_policy(task.policy, ctx.read_only)
        sandbox = _sandbox_run(ctx, policy, ws.path)
        rules = _rules(task, ws.path, sandbox is not None)
        provider = ctx.provider.factory(task, spec)
        if ctx.provider.hook is not None:
            provider = ctx.provider.hook.wrap(provider, task, rules)
        setup = AgentSetup(
            prompt=task.prompt,
            workspace=ws.path,
            provider=provider,
            model=ctx.provider.model,
            measured=arm.measured,
            policy=policy,
            granted=ctx.granted,
            budget=_budget(task),
            agent=task.agent,
            approver=None,
            normalize_rules=rules,
            harness_version=ctx.harness_version,
            config_hash=measured_hash,
            env=ctx.tool_env,
            on_event=lambda event: ctx.on_event(spec, event),
            sandbox=sandbox,
        )
        result = run_agent(setup)
        denied: list[Incident] = []
        verifiers = run_verifiers(
            task,
            ws,
            result.events,
            env=ctx.tool_env,
            sandbox=sandbox,
            on_denied=lambda verifier, what: denied.append(_denied(verifier, what)),
        )
    record = _record(spec, result, verifiers, measured_hash, tuple(denied))
    hook = ctx.provider.hook
    record = record if hook is None else hook.finish(provider, task, record)
    return Finished(record=record, transcript=encode_transcript(result.events, ctx.credentials))


def _record(
    spec: RunSpec,
    result: RunResult,
    verifiers: tuple[VerifierResult, ...],
    measured_hash: str,
    denied: tuple[Incident, ...],
) -> RunRecord:
    """The run's record, with the verifiers' ``sandbox_denied`` incidents after the loop's."""
    message = result.message if result.outcome == "error" else None
    record = record_from_run(
        spec,
        result.events,
        result.outcome,
        result.reason,
        verifiers,
        config_hash=measured_hash,
        error=message,
    )
    return msgspec.structs.replace(record, incidents=(*record.incidents, *denied)) if denied else record


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
    try:
        return _judged_run(ctx, arm, task, spec)
    except WorkspaceError as error:
        setup = SetupError(reason=error.reason, message=str(error))
    except Exception as error:  # a lab never loses its other runs because one run went wrong
        message = redact_credentials(f"{type(error).__name__}: {error}")
        setup = SetupError(reason=INTERNAL_ERROR, message=message)
    record = record_from_run(spec, (), None, None, (), config_hash=measured_hash, setup_error=setup)
    return Finished(record=record, transcript=b"")
