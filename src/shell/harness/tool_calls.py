"""One run's tool calls: each gated (``alisio.core.harness.agent_step.gate_tool``), put to the approver when the
policy asks, run (a harness tool or an MCP server's), and answered with the tool message the model reads.

Rules this module keeps:
- nothing a tool does ends the run: a tool failure (even an exception escaping a tool) is a result the model
  sees; a refused call (unknown, invalid, denied, declined, past the per-turn cap) is a ``tool_result`` with
  ok=false; a call past the per-turn cap gets no ``tool_call`` event (it never ran);
- an approver's ``always`` grants the effect for the rest of the run (a session grant); with no approver every
  ask is denied (``approval_denied``, by ``headless``);
- a run given MCP servers starts them before its first turn (the start counts against maxWallMs) and needs
  ``process`` granted; a server that does not start ends the run ``error``, reason ``mcp_start``, with a line
  naming it; its tools are offered after the harness's own, and each call is a ``tool_call`` and a
  ``tool_result`` event like any other (effect ``process``);
- ``close`` stops every process the run's bash commands left running (found by the run's process mark, even one
  that left its process group) and every MCP server the run started; the loop calls it however the run ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from alisio.core.harness.agent_step import (
    AgentProfile,
    AskUser,
    Failed,
    Refuse,
    RunTool,
    approval_refusal,
    gate_tool,
    over_cap_refusal,
)
from alisio.core.harness.endpoint import redact_credentials
from alisio.core.harness.events import (
    ApprovalDecided,
    Effect,
    IncidentKind,
    ToolCalled,
    ToolResulted,
    excerpt,
)
from alisio.core.harness.mcp import MCP_EFFECT
from alisio.core.harness.protocol import ToolCall, ToolMessage, ToolSpec
from alisio.core.harness.tooldefs import effect_of
from alisio.shell.harness.agent_setup import AgentSetup, ApprovalAnswer
from alisio.shell.harness.mcp_client import McpClients, McpStartError, start_servers
from alisio.shell.harness.run_log import RunLog
from alisio.shell.harness.tools.dispatch import ToolContext, ToolOutcome, execute_tool
from alisio.shell.harness.tools.processes import stop_marked

__all__ = ["MESSAGE_CHARS", "ToolCalls"]

MESSAGE_CHARS = 2000
"""An unexpected exception's message is cut to this many characters in a tool result or a run's error."""


@dataclass
class ToolCalls:
    setup: AgentSetup
    log: RunLog
    profile: AgentProfile
    specs: tuple[ToolSpec, ...]
    """The tools offered to the model: the agent's, then its MCP servers' (once ``start_mcp`` ran)."""
    session_grants: frozenset[Effect] = frozenset()
    context: ToolContext | None = None
    mcp: McpClients | None = None
    """The run's MCP sessions (``None``: the run was given no MCP server)."""
    started_processes: bool = False
    """A process tool (bash) ran: only then can a process carry the run's mark, for ``close`` to look for."""

    def start_mcp(self) -> Failed | None:
        """Start the run's MCP servers and offer their tools; the run's end when they cannot start."""
        setup = self.setup
        try:
            self.mcp = start_servers(
                setup.mcp_servers,
                setup.granted,
                setup.workspace,
                setup.env,
                setup.sandbox,
                self.log.wall_left_s(),
            )
        except McpStartError as error:
            return Failed(reason="mcp_start", message=str(error))
        if self.mcp is not None:
            self.specs = (*self.specs, *self.mcp.listing.specs())
        return None

    def close(self) -> None:
        """Stop what the run's commands left running and the run's MCP servers (safe to call twice)."""
        if self.context is not None and self.started_processes:
            stop_marked(self.context.process_mark)  # what a command left running (each call already swept)
        mcp, self.mcp = self.mcp, None
        if mcp is not None:
            mcp.close()

    def tool_context(self) -> ToolContext:
        """The tools' context, built once per run (``read_hashes`` grows in it as the run reads files)."""
        if self.context is not None:
            return self.context
        tools = self.setup.measured.tools
        self.context = ToolContext(
            workspace=self.setup.workspace,
            bash_output_limit_chars=tools.bash_output_limit_chars,
            bash_default_timeout_ms=tools.bash_timeout_ms,
            read_max_chars=tools.read_max_chars,
            deadline=self.log.deadline(),
            env=self.setup.env,
            sandbox=self.setup.sandbox,
        )
        return self.context

    def run(self, call: ToolCall, *, from_text: bool = False) -> ToolMessage:
        """Gate, ask, run one call (``from_text``: the model wrote it as text); the tool message that answers it
        (a refusal when it did not run)."""
        setup = self.setup
        listing = None if self.mcp is None else self.mcp.listing
        gate = gate_tool(call, self.profile.tools, setup.policy, setup.granted, self.session_grants, listing)
        target = None if listing is None else listing.target(call.name)
        effect = MCP_EFFECT if target is not None else effect_of(call.name)
        self.log.emit(
            ToolCalled,
            call_id=call.id,
            name=call.name,
            arguments=call.arguments,
            effect=effect,
            from_text=from_text,
        )
        match gate:
            case Refuse():
                return self.refuse(call, gate)
            case AskUser(effect=asked):
                refusal = self.ask(call, asked)
                if refusal is not None:
                    return self.refuse(call, refusal)
            case RunTool():
                pass
        self.started_processes |= effect_of(call.name) is Effect.PROCESS
        started = setup.clock()
        try:
            outcome = (
                execute_tool(call, self.tool_context())
                if target is None or self.mcp is None
                else self.mcp.call_tool(
                    call, target, self.tool_context(), setup.measured.tools.bash_timeout_ms
                )
            )
        except Exception as error:  # execute_tool turns failures into results; this is the last safety net
            detail = redact_credentials(f"{type(error).__name__}: {error}")[:MESSAGE_CHARS]
            outcome = ToolOutcome(False, f"{call.name} failed: {detail}")
        duration_ms = int((setup.clock() - started) * 1000)
        if outcome.timed_out:
            self.log.incident(
                IncidentKind.TOOL_TIMEOUT, f"{call.name} was killed at its timeout or at maxWallMs"
            )
        if outcome.denied is not None:
            self.log.incident(
                IncidentKind.SANDBOX_DENIED, f"{call.name}: the sandbox refused {outcome.denied}"
            )
        self.log.emit(
            ToolResulted,
            call_id=call.id,
            name=call.name,
            ok=outcome.ok,
            output_excerpt=excerpt(outcome.output),
            duration_ms=duration_ms,
        )
        return ToolMessage(tool_call_id=call.id, name=call.name, content=outcome.output)

    def ask(self, call: ToolCall, effect: Effect) -> Refuse | None:
        """Put an ``Ask`` to the approver (or deny headless); a refusal when it was not approved."""
        approver = self.setup.approver
        answer: ApprovalAnswer = "no" if approver is None else approver(call, effect)
        by: Literal["user", "headless"] = "headless" if approver is None else "user"
        self.log.emit(
            ApprovalDecided, call_id=call.id, name=call.name, effect=effect, granted=answer != "no", by=by
        )
        if answer == "always":
            self.session_grants = self.session_grants | {effect}
        return approval_refusal(effect, by) if answer == "no" else None

    def refuse(self, call: ToolCall, refusal: Refuse) -> ToolMessage:
        self.log.incident(refusal.incident, f"{call.name}: {refusal.message}")
        return self.refused(call, refusal.message)

    def refuse_over_cap(self, refused: tuple[ToolCall, ...], cap: int) -> list[ToolMessage]:
        """Answer each call past the per-turn cap with a refusal (no tool_call event: it never ran)."""
        refusal = over_cap_refusal(cap)
        return [self.refused(call, refusal.message) for call in refused]

    def refused(self, call: ToolCall, message: str) -> ToolMessage:
        """The failed tool_result event of a call that did not run, and the tool message that answers it."""
        self.log.emit(
            ToolResulted,
            call_id=call.id,
            name=call.name,
            ok=False,
            output_excerpt=excerpt(message),
            duration_ms=0,
        )
        return ToolMessage(tool_call_id=call.id, name=call.name, content=message)
