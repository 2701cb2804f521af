"""The agent loop: drives a provider and the tools for one task, and yields the run's event log.

Every decision is a call into the core: ``alisio.core.harness.budget.check`` before each turn and each tool
call, ``alisio.core.harness.compaction`` for when and what to compact, ``alisio.core.harness.agent_step`` for what
a response means and whether a tool call runs (``policy`` inside it). This module only performs the effects
(provider calls, tools, the approver, the clock) and records each as an event.

Rules this module keeps:
- events are numbered in the order they happen and timed with the injected clock, which must be a monotonic
  clock in seconds on the same scale as ``time.monotonic`` (the tools kill a command at ``deadline``);
- main-loop tokens (and cost, at ``setup.rates``) are of main-loop responses that reported usage; a
  checkpoint call's usage goes into its ``Compacted`` event only;
- one ``usage_unreported`` incident per main turn without usage (the spec allows the run to overshoot
  maxTokens by that response);
- a turn asking for more than ``tools.maxCallsPerTurn`` calls raises one ``too_many_tool_calls`` incident
  first, runs the calls up to the cap, then answers each call past it with a refusal (a ``tool_result`` with
  ok=false, no ``tool_call`` event: it never ran, and it does not count against maxToolCalls);
- nothing a tool or the model does ends the loop with an exception: a tool failure (even an exception escaping
  a tool) is a result the model sees, a provider failure ends the run with outcome ``error`` and
  ``failure.reason``, and any other exception ends it with ``error``, reason ``internal_error`` and the
  exception's type and message: the event log always ends with ``run_end``;
- when the run ends, every process its bash commands started that is still running (found by the run's
  process mark, even one that left its process group) is stopped, and so is every MCP server it started
  (``alisio.shell.harness.mcp_client``), also when the run ends by an error, a budget or Ctrl-C;
- a run given MCP servers starts them before its first turn (the start counts against maxWallMs) and needs
  ``process`` granted; a server that does not start ends the run ``error``, reason ``mcp_start``, with a
  line naming it; its tools are offered after the harness's own, and each call is a ``tool_call`` and a
  ``tool_result`` event like any other (effect ``process``);
- maxWallMs bounds everything: a running tool is killed at it, and each provider call (checkpoint calls too) is
  given only the wall time left, so a hung stream stops the run with ``budget_exceeded`` maxWallMs on time;
- a call cut short (at maxWallMs, a stream that broke off or ended early) still gets its ``provider_response``
  (``CUT_REASONS``): an excerpt of what it streamed and the input tokens it reported before the cut;
- the conversation size is kept as a running sum of message sizes, and the request fingerprint is a
  ``ConversationHash`` extended by the new messages only, so a turn costs O(new messages), not O(conversation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import msgspec
from returns.result import Failure, Success

from alisio.core.harness.agent_step import (
    AgentProfile,
    AskUser,
    CallTools,
    Finish,
    Refuse,
    RunTool,
    after_response,
    approval_refusal,
    gate_tool,
    over_cap_incident,
    over_cap_refusal,
    response_incidents,
    select_agent,
    with_system_text,
)
from alisio.core.harness.budget import BudgetStop, check, cost_after, output_limit, tokens_of
from alisio.core.harness.compaction import (
    apply_checkpoint,
    checkpoint_request,
    message_chars,
    plan_compaction,
    recent_to_keep,
    should_compact,
)
from alisio.core.harness.endpoint import redact_credentials
from alisio.core.harness.events import (
    CUT_REASONS,
    ApprovalDecided,
    BudgetStopped,
    Compacted,
    Effect,
    Event,
    IncidentKind,
    IncidentRaised,
    ProviderRequested,
    ProviderResponded,
    RunEnded,
    RunOutcome,
    RunStarted,
    ToolCalled,
    ToolResulted,
    excerpt,
)
from alisio.core.harness.mcp import MCP_EFFECT
from alisio.core.harness.protocol import (
    AssistantMessage,
    Message,
    ProviderRequest,
    ProviderResponse,
    StreamEvent,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
    assemble,
    usage_before_cut,
)
from alisio.core.harness.text_calls import text_tool_call
from alisio.core.harness.tooldefs import effect_of, tool_specs
from alisio.core.harness.wire import parse_events
from alisio.core.replay.fingerprint import ConversationHash, fingerprint, normalize_request
from alisio.shell import cancel
from alisio.shell.harness.agent_setup import AgentSetup, ApprovalAnswer, Approver, RunResult
from alisio.shell.harness.mcp_client import McpClients, McpStartError, start_servers
from alisio.shell.harness.providers.base import ProviderFailure
from alisio.shell.harness.tools.dispatch import ToolContext, ToolOutcome, execute_tool
from alisio.shell.harness.tools.processes import stop_marked

__all__ = ["KEEP_RECENT_MESSAGES", "AgentSetup", "ApprovalAnswer", "Approver", "RunResult", "run_agent"]

_MESSAGE_CHARS = 2000
"""An unexpected exception's message is cut to this many characters in a tool result or a run's error."""

KEEP_RECENT_MESSAGES = 6
"""The latest messages kept as they are on compaction (about 3 tool exchanges; at most half the threshold)."""
DEADLINE_EXCERPT_CHARS = 2000
"""How much of a call cut at maxWallMs is kept in its provider_response (the count is of all of it)."""
_CUT = dict(
    zip(CUT_REASONS, ("cut at the deadline", "cut mid-stream", "ended by an error event"), strict=True)
)
"""A cut call's finish reason in its provider_response -> how its usage_unreported incident says it."""


class _Stop(Exception):
    """Ends the loop from deep inside a turn with the result to return."""

    def __init__(self, result: RunResult) -> None:
        super().__init__(result.reason)
        self.result = result


@dataclass
class _Run:
    setup: AgentSetup
    profile: AgentProfile
    tools: tuple[ToolSpec, ...]
    start: float
    events: list[Event] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    chars: int = 0
    turns: int = 0
    tool_calls: int = 0
    provider_calls: int = 0
    main_tokens: int | None = None
    main_cost: float | None = None
    usage_complete: bool = True
    session_grants: frozenset[Effect] = frozenset()
    normalized: list[Message] = field(default_factory=list)
    """``messages`` with the fingerprint rules applied, kept in step so each message is normalised once."""
    normalized_instructions: str = ""
    hashed: ConversationHash | None = None
    """The fingerprint state of the first ``hashed.count`` normalised messages (reset when compaction rewrites)."""
    context: ToolContext | None = None
    mcp: McpClients | None = None
    """The run's MCP sessions (``None``: the run was given no MCP server)."""
    started_processes: bool = False
    """A process tool (bash) ran: only then can a process carry the run's mark, for ``end`` to look for."""

    # --- recording ------------------------------------------------------------------------------------

    def elapsed_ms(self) -> int:
        return int((self.setup.clock() - self.start) * 1000)

    def wall_left_s(self) -> float:
        """Seconds left before maxWallMs (what a provider call may take at most; never below 1 ms)."""
        return max(0.001, self.start + self.setup.budget.max_wall_ms / 1000 - self.setup.clock())

    def emit(self, event_type: type[Event], /, **fields: object) -> None:
        event = event_type(seq=len(self.events), elapsed_ms=self.elapsed_ms(), **fields)  # type: ignore[arg-type]
        self.events.append(event)
        if self.setup.on_event is not None:
            self.setup.on_event(event)

    def incident(self, kind: IncidentKind, message: str) -> None:
        self.emit(IncidentRaised, kind=kind, message=message)

    def append(self, message: Message) -> None:
        self.messages.append(message)
        self.normalized.append(self.normalize(message))
        self.chars += message_chars(message)

    def normalize(self, message: Message) -> Message:
        rules = self.setup.normalize_rules
        if not rules:
            return message
        alone = ProviderRequest(model="", instructions="", messages=(message,))
        return normalize_request(alone, rules).messages[0]

    def end(
        self, outcome: RunOutcome, reason: str | None = None, final_text: str = "", message: str | None = None
    ) -> RunResult:
        if self.context is not None and self.started_processes:
            stop_marked(self.context.process_mark)  # what a command left running (each call already swept)
        self.close_mcp()
        self.emit(
            RunEnded, outcome=outcome, reason=reason, final_text=final_text, turns=self.turns, message=message
        )
        return RunResult(
            events=tuple(self.events),
            outcome=outcome,
            reason=reason,
            final_text=final_text,
            turns=self.turns,
            tool_calls=self.tool_calls,
            main_tokens=self.main_tokens,
            usage_complete=self.usage_complete,
            message=message,
        )

    def close_mcp(self) -> None:
        mcp, self.mcp = self.mcp, None
        if mcp is not None:
            mcp.close()

    def budget_stop(self, stop: BudgetStop) -> RunResult:
        self.emit(BudgetStopped, budget=stop.budget, limit=stop.limit, value=stop.value)
        return self.end("budget_exceeded", reason=stop.budget)

    def check_budget(self, turns: int, tool_calls: int) -> None:
        cancel.check()  # before each turn and each tool call: a cancelled run stops as on Ctrl-C
        run = self
        stop = check(run.setup.budget, turns, tool_calls, run.elapsed_ms(), run.main_tokens, run.main_cost)
        if stop is not None:
            raise _Stop(self.budget_stop(stop))

    # --- provider -------------------------------------------------------------------------------------

    def call_provider(
        self, request: ProviderRequest, request_fingerprint: str | None = None
    ) -> tuple[ProviderResponse, int]:
        """One provider call with its request/response events; raises ``_Stop`` on failure.

        ``request_fingerprint`` is the fingerprint of the normalised request, when the caller has it already.
        """
        call = self.provider_calls
        self.provider_calls += 1
        if request_fingerprint is None:
            request_fingerprint = fingerprint(normalize_request(request, self.setup.normalize_rules))
        self.emit(
            ProviderRequested,
            call=call,
            turn=self.turns,
            purpose=request.purpose,
            fingerprint=request_fingerprint,
            message_count=len(request.messages),
        )
        started = self.setup.clock()
        first_at: list[float] = []
        try:
            stream = self.setup.provider.stream(
                request,
                lambda note: self.incident(IncidentKind.PROVIDER_RETRY, redact_credentials(note)),
                timeout_s=self.wall_left_s(),
                on_first_event=lambda: first_at.append(self.setup.clock()),
            )
        except ProviderFailure as failure:
            raise _Stop(self.provider_failed(call, request, failure, started)) from None
        duration_ms = int((self.setup.clock() - started) * 1000)
        match assemble(stream):
            case Failure(error):
                self.cut_short(call, request, stream, started, "cut")
                message = redact_credentials(f"the provider's stream failed: {error.message}")
                raise _Stop(self.end("error", reason="provider_stream", message=message))
            case Success(response):
                pass
        self.emit(
            ProviderResponded,
            call=call,
            purpose=request.purpose,
            finish_reason=response.finish_reason,
            usage=response.usage,
            text_chars=len(response.text),
            text=response.text,
            tool_calls=len(response.tool_calls),
            duration_ms=duration_ms,
            first_event_ms=int((first_at[-1] - started) * 1000) if first_at else None,
            served_model=response.served_model,
            system_fingerprint=response.system_fingerprint,
        )
        return response, duration_ms

    def provider_failed(
        self, call: int, request: ProviderRequest, failure: ProviderFailure, started: float
    ) -> RunResult:
        """The end of a run whose provider call failed: at maxWallMs a budget stop, else ``error``."""
        if failure.kind == "deadline":
            # The call was cut off at the run's maxWallMs: a budget stop, not a provider error.
            self.cut_short(call, request, failure.partial, started, "deadline")
            budget = self.setup.budget
            return self.budget_stop(
                BudgetStop(budget="maxWallMs", limit=budget.max_wall_ms, value=self.elapsed_ms())
            )
        if failure.partial:  # the stream broke off after some events: keep what they reported
            self.cut_short(call, request, failure.partial, started, "cut")
        return self.end("error", reason=failure.reason, message=redact_credentials(str(failure)))

    def cut_short(
        self, call: int, request: ProviderRequest, events: tuple[StreamEvent, ...], started: float, why: str
    ) -> None:
        """A call cut before its end (``why``: ``deadline`` at maxWallMs, else ``cut``; ``error`` when the stream
        ended in an error event): what it streamed (an excerpt), and the input tokens it reported before."""
        seconds = self.setup.clock() - started
        partial = parse_events(events)
        usage = usage_before_cut(partial.usage)
        why = "error" if partial.error is not None and why == "cut" else why
        self.usage_complete = False
        self.emit(
            ProviderResponded,
            call=call,
            purpose=request.purpose,
            finish_reason=why,
            usage=usage,
            text_chars=len(partial.text),
            text=partial.text[:DEADLINE_EXCERPT_CHARS],
            tool_calls=len(partial.tool_calls),
            duration_ms=int(seconds * 1000),
        )
        note = f"{_CUT[why]} after {seconds:.1f} s, {len(partial.text)} characters: " + (
            "the provider reported no usage for this call"
            if usage is None
            else f"the {usage.input_tokens:,} input tokens it reported before the cut are kept, its output "
            "tokens were not reported"
        )
        self.incident(IncidentKind.USAGE_UNREPORTED, note)

    def main_request(self) -> tuple[ProviderRequest, str]:
        """The next main-loop request, and the fingerprint of the same request normalised."""
        measured = self.setup.measured
        request = ProviderRequest(
            model=self.setup.model,
            instructions=self.profile.instructions,
            messages=tuple(self.messages),
            tools=self.tools,
            max_output_tokens=output_limit(
                measured.limits.max_output_tokens, self.setup.budget.max_tokens, self.main_tokens
            ),
            reasoning_effort=measured.reasoning.effort,
            cache=measured.cache,
            temperature=measured.sampling.temperature,
            top_p=measured.sampling.top_p,
            seed=measured.sampling.seed,
        )
        normalized = msgspec.structs.replace(
            request, instructions=self.normalized_instructions, messages=tuple(self.normalized)
        )
        hashed = self.hashed
        if hashed is None or not hashed.matches(normalized):
            hashed = ConversationHash.start(normalized)
        self.hashed = hashed.extended(self.normalized[hashed.count :])
        return request, self.hashed.fingerprint(normalized)

    # --- compaction -----------------------------------------------------------------------------------

    def maybe_compact(self) -> None:
        measured = self.setup.measured
        if not should_compact(self.chars, measured.compaction.threshold, measured.limits.max_context_chars):
            return
        messages = tuple(self.messages)
        threshold_chars = measured.compaction.threshold * measured.limits.max_context_chars
        keep = recent_to_keep(messages, threshold_chars / 2, KEEP_RECENT_MESSAGES)
        plan = plan_compaction(messages, keep)
        if plan.empty:
            return
        request = checkpoint_request(
            self.setup.model,
            self.setup.prompt,
            messages[plan.start : plan.end],
            max_output_tokens=measured.limits.max_output_tokens,
            reasoning_effort=measured.reasoning.effort,
            cache=measured.cache,
            sampling=measured.sampling,
        )
        response, _ = self.call_provider(request)
        if not response.text.strip():
            # An empty checkpoint would silently drop the older turns: keep them and try again next turn.
            return
        before = self.chars
        self.messages = []
        self.normalized = []
        self.hashed = None
        self.chars = len(self.profile.instructions)
        for message in apply_checkpoint(messages, plan, response.text):
            self.append(message)
        replaced, usage = plan.replaced, response.usage
        self.emit(
            Compacted, chars_before=before, chars_after=self.chars, messages_replaced=replaced, usage=usage
        )
        what = f"replaced {plan.replaced} older messages by a checkpoint"
        self.incident(IncidentKind.COMPACTION, f"{what} ({before} -> {self.chars} characters)")

    # --- tools ----------------------------------------------------------------------------------------

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
            deadline=self.start + self.setup.budget.max_wall_ms / 1000,
            env=self.setup.env,
            sandbox=self.setup.sandbox,
        )
        return self.context

    def refuse(self, call: ToolCall, refusal: Refuse) -> ToolMessage:
        self.incident(refusal.incident, f"{call.name}: {refusal.message}")
        return self.refused(call, refusal.message)

    def refuse_over_cap(self, refused: tuple[ToolCall, ...], cap: int) -> None:
        """Answer each call past the per-turn cap with a refusal (no tool_call event: it never ran)."""
        refusal = over_cap_refusal(cap)
        for call in refused:
            self.append(self.refused(call, refusal.message))

    def refused(self, call: ToolCall, message: str) -> ToolMessage:
        """The failed tool_result event of a call that did not run, and the tool message that answers it."""
        self.emit(
            ToolResulted,
            call_id=call.id,
            name=call.name,
            ok=False,
            output_excerpt=excerpt(message),
            duration_ms=0,
        )
        return ToolMessage(tool_call_id=call.id, name=call.name, content=message)

    def ask(self, call: ToolCall, effect: Effect) -> Refuse | None:
        """Put an ``Ask`` to the approver (or deny headless); a refusal when it was not approved."""
        approver = self.setup.approver
        answer: ApprovalAnswer = "no" if approver is None else approver(call, effect)
        by: Literal["user", "headless"] = "headless" if approver is None else "user"
        self.emit(
            ApprovalDecided, call_id=call.id, name=call.name, effect=effect, granted=answer != "no", by=by
        )
        if answer == "always":
            self.session_grants = self.session_grants | {effect}
        return approval_refusal(effect, by) if answer == "no" else None

    def run_tool(self, call: ToolCall) -> ToolMessage:
        setup = self.setup
        listing = None if self.mcp is None else self.mcp.listing
        gate = gate_tool(call, self.profile.tools, setup.policy, setup.granted, self.session_grants, listing)
        target = None if listing is None else listing.target(call.name)
        effect = MCP_EFFECT if target is not None else effect_of(call.name)
        self.emit(ToolCalled, call_id=call.id, name=call.name, arguments=call.arguments, effect=effect)
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
            detail = redact_credentials(f"{type(error).__name__}: {error}")[:_MESSAGE_CHARS]
            outcome = ToolOutcome(False, f"{call.name} failed: {detail}")
        duration_ms = int((setup.clock() - started) * 1000)
        if outcome.timed_out:
            self.incident(IncidentKind.TOOL_TIMEOUT, f"{call.name} was killed at its timeout or at maxWallMs")
        if outcome.denied is not None:
            self.incident(IncidentKind.SANDBOX_DENIED, f"{call.name}: the sandbox refused {outcome.denied}")
        self.emit(
            ToolResulted,
            call_id=call.id,
            name=call.name,
            ok=outcome.ok,
            output_excerpt=excerpt(outcome.output),
            duration_ms=duration_ms,
        )
        return ToolMessage(tool_call_id=call.id, name=call.name, content=outcome.output)

    def start_mcp(self) -> None:
        """Start the run's MCP servers and offer their tools; raises ``_Stop`` when they cannot start."""
        setup, wall = self.setup, self.wall_left_s()
        try:
            self.mcp = start_servers(
                setup.mcp_servers, setup.granted, setup.workspace, setup.env, setup.sandbox, wall
            )
        except McpStartError as error:
            raise _Stop(self.end("error", reason="mcp_start", message=str(error))) from None
        if self.mcp is not None:
            self.tools = (*self.tools, *self.mcp.listing.specs())

    # --- the loop -------------------------------------------------------------------------------------

    def record_usage(self, response: ProviderResponse) -> None:
        for kind, message in response_incidents(response):
            self.incident(kind, message)
        tokens = tokens_of(response.usage)
        if tokens is None:
            self.usage_complete = False
        else:
            self.main_tokens = (self.main_tokens or 0) + tokens
        self.main_cost = cost_after(self.main_cost, self.setup.rates, response.usage)

    def turn(self) -> RunResult | None:
        self.check_budget(self.turns + 1, self.tool_calls)
        self.turns += 1
        self.maybe_compact()
        response, _ = self.call_provider(*self.main_request())
        self.record_usage(response)
        self.append(
            AssistantMessage(
                content=response.text or None,
                tool_calls=response.tool_calls,
                reasoning=response.reasoning,
                reasoning_blocks=response.reasoning_blocks,
            )
        )
        cap = self.setup.measured.tools.max_calls_per_turn
        match after_response(response, cap):
            case Finish(final_text=text):
                written = text_tool_call(text, tuple(tool.name for tool in self.tools))
                if written is not None:
                    self.incident(IncidentKind.TEXT_TOOL_CALL, written)
                return self.end("completed", final_text=text)
            case CallTools(calls=calls, refused=refused) as step:
                over_cap = over_cap_incident(step, cap)
                if over_cap is not None:
                    self.incident(*over_cap)
                for call in calls:
                    self.check_budget(self.turns, self.tool_calls + 1)
                    self.tool_calls += 1
                    self.append(self.run_tool(call))
                self.refuse_over_cap(refused, cap)
        return None

    def loop(self) -> RunResult:
        try:
            self.start_mcp()
            while True:
                result = self.turn()
                if result is not None:
                    return result
        except _Stop as stop:
            return stop.result
        except Exception as error:  # a bug must not lose the run: the log ends with run_end, the lab goes on
            message = redact_credentials(f"unexpected {type(error).__name__}: {error}")[:_MESSAGE_CHARS]
            return self.end("error", reason="internal_error", message=message)
        except KeyboardInterrupt:
            # The user stopped the run (a running command's group is already killed): close the event log so
            # it still ends with run_end, then let the interrupt stop the caller too (a lab stops all tasks).
            self.end("error", reason="interrupted", message="interrupted by the user")
            raise


def run_agent(setup: AgentSetup) -> RunResult:
    """Run one task to its end: completed, budget_exceeded or error. Never raises for a model or tool failure.

    Returns:
        The result with its full event log (also streamed to ``setup.on_event`` as it happens).
    """
    start = setup.clock()
    run = _Run(setup=setup, profile=AgentProfile(name=None, instructions="", tools=()), tools=(), start=start)
    run.emit(
        RunStarted,
        prompt=setup.prompt,
        provider=setup.provider.id,
        model=setup.model,
        policy_mode=str(setup.policy.mode),
        agent=setup.agent,
        config_hash=setup.config_hash,
        harness_version=setup.harness_version,
    )
    match select_agent(setup.measured, setup.agent):
        case Failure(unknown_agent):
            return run.end("error", reason="config", message=str(unknown_agent))
        case Success(profile):
            run.profile = with_system_text(profile, setup.system)
    match tool_specs(run.profile.tools):
        case Failure(unknown_tool):
            return run.end("error", reason="config", message=str(unknown_tool))
        case Success(specs):
            run.tools = specs
    run.chars = len(run.profile.instructions)
    instructions_only = ProviderRequest(model="", instructions=run.profile.instructions, messages=())
    run.normalized_instructions = normalize_request(instructions_only, setup.normalize_rules).instructions
    run.append(UserMessage(content=setup.prompt))
    return run.loop()
