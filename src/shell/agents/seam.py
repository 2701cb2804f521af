"""The agent seam: what runs one task in one workspace and hands back the run's events.

``alisio.shell.lab.run_one`` copies the fixture, asks its factory (``run_one.runner_for``) for the task's runner,
runs it, then judges the copy. A runner is anything with ``run(job) -> AgentRun``:

- ``alisio.shell.lab.agents.BuiltinRunner``: alisio's own loop (``alisio.shell.harness.agent``) against the
  command's provider plan, wrapped by record or replay when the command records or replays;
- ``alisio.shell.agents.runner.ExternalRunner``: another agent's CLI, run through a per-run recording proxy.

Rules every runner keeps: it never raises for what a run can do (an agent that fails is an ``AgentRun`` with
outcome ``error`` and its reason); its events end with ``run_end``; ``finish`` is applied to the judged record
(replay adds its divergence there). The seam sits on the agents' floor, below the lab that uses it and beside
the external runner that implements it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from alisio.core.harness.config import MeasuredConfig
from alisio.core.harness.events import Event, RunOutcome
from alisio.core.harness.faults import FaultSpec
from alisio.core.harness.prices import Rates
from alisio.core.lab.judges.verify import AgentTools
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.suites.schedule import RunSpec
from alisio.core.lab.suites.suite import Task
from alisio.core.replay.fingerprint import Rules
from alisio.shell.agents.overlay import ContextOverlayFile
from alisio.shell.sandbox.bwrap import SandboxRun

__all__ = ["AgentJob", "AgentRun", "AgentRunner", "same_record"]


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
    faults: FaultSpec | None = None
    """The arm's injected provider faults (``--faults``, a variant's ``faults``); ``None``: none."""
    context_system: str | None = None
    """The arm's context's ``system`` text, appended to the built-in agent's system prompt (``None``: none;
    its workspace files are already in ``workspace``)."""
    context_home: tuple[ContextOverlayFile, ...] = ()
    """The arm's context's ``home`` files, put in an external agent's private HOME."""
    mcp_servers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """MCP servers (stdio) given to the run: server name -> argv. The built-in agent starts them itself
    (``AgentSetup.mcp_servers``); an external agent gets them in its own config format
    (``alisio.core.agents.mcp_config``)."""


def same_record(record: RunRecord) -> RunRecord:
    """The judged record as it is: an ``AgentRun``'s ``finish`` when the runner adds nothing."""
    return record


@dataclass(frozen=True)
class AgentRun:
    """What a runner hands back: the run's events and how it ended."""

    events: tuple[Event, ...]
    outcome: RunOutcome
    reason: str | None
    message: str | None = None
    """The one-line error of an ``error`` run."""
    finish: Callable[[RunRecord], RunRecord] = same_record
    """Applied to the judged record (replay adds its divergence)."""
    tools: AgentTools | None = None
    """An external agent's tools, for tool-sequence rules (``None``: the built-in agent, every tool)."""


class AgentRunner(Protocol):
    """Runs one task in one workspace."""

    def run(self, job: AgentJob) -> AgentRun:
        """The run's events and outcome; never raises for what an agent can do."""
        ...
