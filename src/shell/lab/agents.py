"""The agent seam: what runs one task in one workspace and hands back the run's events.

``run_one`` copies the fixture, asks its factory (``run_one.runner_for``) for the task's runner, runs it, then judges the copy. A
runner is anything with ``run(job) -> AgentRun``:

- ``BuiltinRunner``: alisio's own loop (``alisio.shell.harness.agent``) against the command's provider plan,
  wrapped by record or replay when the command records or replays;
- ``alisio.shell.lab.external.ExternalRunner``: another agent's CLI, run through a per-run recording proxy.

Rules every runner keeps: it never raises for what a run can do (an agent that fails is an ``AgentRun`` with
outcome ``error`` and its reason); its events end with ``run_end``; ``finish`` is applied to the judged record
(replay adds its divergence there).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from alisio.core.harness.config import MeasuredConfig
from alisio.core.harness.events import Effect, Event, RunOutcome
from alisio.core.harness.prices import Rates
from alisio.core.lab.judges.verify import AgentTools
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.suites.schedule import RunSpec
from alisio.core.lab.suites.suite import Task
from alisio.core.replay.fingerprint import Rules
from alisio.shell.lab.plans import ProviderPlan
from alisio.shell.lab.preflight import task_policy
from alisio.shell.sandbox.bwrap import SandboxRun

__all__ = ["AgentJob", "AgentRun", "AgentRunner", "BuiltinRunner"]


@dataclass(frozen=True)
class AgentJob:
    """One task to run in one prepared workspace."""

    task: Task
    spec: RunSpec
    workspace: Path
    rules: Rules
    """The run's fingerprint rules (its workspace path, then the task's replayNormalize)."""
    measured: MeasuredConfig
    config_hash: str
    agent: str | None
    """The main agent the run uses (``--agent``, else the task's ``agent``; ``None``: the built-in default)."""
    model: str | None = None
    """The model an external agent asks for (a variant's); ``None``: the configured one."""
    sandbox: SandboxRun | None = None
    """Where the run's commands run (``--sandbox bwrap``); ``None``: plain subprocesses."""
    rates: Rates | None = None
    """The arm's prices: ``budget.maxCostUsd`` is checked at them (``None``: no cost is counted)."""


def _same(record: RunRecord) -> RunRecord:
    return record


@dataclass(frozen=True)
class AgentRun:
    """What a runner hands back: the run's events and how it ended."""

    events: tuple[Event, ...]
    outcome: RunOutcome
    reason: str | None
    message: str | None = None
    """The one-line error of an ``error`` run."""
    finish: Callable[[RunRecord], RunRecord] = _same
    """Applied to the judged record (replay adds its divergence)."""
    tools: AgentTools | None = None
    """An external agent's tools, for tool-sequence rules (``None``: the built-in agent, every tool)."""


class AgentRunner(Protocol):
    """Runs one task in one workspace."""

    def run(self, job: AgentJob) -> AgentRun:
        """The run's events and outcome; never raises for what an agent can do."""
        ...


@dataclass(frozen=True)
class BuiltinRunner:
    """alisio's own agent loop against the command's provider plan (record and replay wrap the provider)."""

    plan: ProviderPlan
    granted: frozenset[Effect]
    read_only: bool
    harness_version: str
    tool_env: Mapping[str, str] | None
    on_event: Callable[[Event], None] | None = None
    """Sees each event as it happens (the live status)."""

    def run(self, job: AgentJob) -> AgentRun:
        from alisio.shell.harness.agent import AgentSetup, run_agent

        ctx = self
        provider = ctx.plan.factory(job.task, job.spec)
        hook = ctx.plan.hook
        if hook is not None:
            provider = hook.wrap(provider, job.task, job.rules)
        setup = AgentSetup(
            prompt=job.task.prompt,
            workspace=job.workspace,
            provider=provider,
            model=ctx.plan.model,
            measured=job.measured,
            policy=task_policy(job.task.policy, ctx.read_only),
            granted=ctx.granted,
            budget=job.task.budget,
            agent=job.agent,
            approver=None,
            normalize_rules=job.rules,
            harness_version=ctx.harness_version,
            config_hash=job.config_hash,
            env=ctx.tool_env,
            on_event=self.on_event,
            sandbox=job.sandbox,
            rates=job.rates,
        )
        result = run_agent(setup)
        message = result.message if result.outcome == "error" else None
        finish = _same if hook is None else (lambda record: hook.finish(provider, job.task, record))
        return AgentRun(
            events=result.events, outcome=result.outcome, reason=result.reason, message=message, finish=finish
        )
