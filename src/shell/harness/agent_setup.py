"""What one run of the agent loop is given (``AgentSetup``) and what it returns (``RunResult``).

``alisio.shell.harness.agent`` runs the loop; the CLI and the lab build the setup and read the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from alisio.core.harness.budget import RunBudget
from alisio.core.harness.config import MeasuredConfig
from alisio.core.harness.events import Effect, Event, RunOutcome
from alisio.core.harness.policy import Policy
from alisio.core.harness.protocol import ToolCall
from alisio.core.replay.fingerprint import Rules
from alisio.shell.harness.providers.base import Provider

if TYPE_CHECKING:
    from alisio.core.harness.prices import Rates
    from alisio.shell.sandbox.bwrap import SandboxRun

__all__ = ["AgentSetup", "ApprovalAnswer", "Approver", "RunResult"]

ApprovalAnswer = Literal["yes", "no", "always"]
"""``always`` grants the effect for the rest of the run (a session grant)."""

Approver = Callable[[ToolCall, Effect], ApprovalAnswer]


@dataclass(frozen=True)
class AgentSetup:
    """Everything one run needs, built once by the caller (the CLI or the lab)."""

    prompt: str
    workspace: Path
    provider: Provider
    model: str
    measured: MeasuredConfig
    policy: Policy
    granted: frozenset[Effect]
    """The ceiling: every effect for ``alisio run`` (a user is present), the ``--allow-*`` flags in the lab."""
    budget: RunBudget
    agent: str | None = None
    approver: Approver | None = None
    """Asked on ``Ask`` decisions; ``None`` is headless: every ask is denied (``approval_denied``)."""
    clock: Callable[[], float] = time.monotonic
    normalize_rules: Rules = ()
    """Fingerprint normalisation (the workspace path becomes ``<workspace>``, a task's replayNormalize)."""
    harness_version: str = "0"
    config_hash: str = ""
    on_event: Callable[[Event], None] | None = None
    """Called with each event as it happens (``--json`` streams the log)."""
    env: Mapping[str, str] | None = None
    """The environment of ``bash`` commands (``None``: the tools' default)."""
    sandbox: SandboxRun | None = None
    """Where ``bash`` commands run (``--sandbox bwrap``); ``None``: as plain subprocesses."""
    rates: Rates | None = None  # the model's prices: budget.max_cost_usd is counted at them (None: no cost)
    system: str | None = None  # a context's text, appended to the agent's system prompt (None: none)
    mcp_servers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """MCP servers (stdio) given to the run: server name -> the argv that starts it (config.toml's
    ``[mcp.servers.NAME]``, a context's ``mcp``). Each is started in the workspace (in the sandbox under
    ``sandbox``) and its tools offered as ``mcp__<server>__<tool>``; they need ``process`` in ``granted``."""


@dataclass(frozen=True)
class RunResult:
    """How a run ended, with its whole event log."""

    events: tuple[Event, ...]
    outcome: RunOutcome
    reason: str | None
    final_text: str
    turns: int
    tool_calls: int
    main_tokens: int | None
    """Main-loop input + output tokens reported; ``None`` when no turn reported usage."""
    usage_complete: bool
    """Whether every main turn reported usage (token figures are only trusted when it did)."""
    message: str | None = None
    """One line for the user when the run ended ``error`` (never holds a key)."""
