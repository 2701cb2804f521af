"""The agent loop: drives a provider and the tools for one task, and yields the run's event log.

Every decision is a call into the core: ``alisio.core.harness.budget.check`` before each turn and each tool
call, ``alisio.core.harness.compaction`` for when and what to compact, ``alisio.core.harness.agent_step`` for what
a response means, whether a tool call runs (``policy`` inside it) and how a turn ends. The effects are each in
their own module, all recording through one ``RunLog`` (``run_log``): the provider calls with their retries,
cuts and usage (``provider_calls``), the tool calls with their gate, approver and MCP servers
(``tool_calls``), compaction's checkpoint call (``checkpoint``), the conversation and its fingerprint
(``conversation``). This module is the loop itself: a turn is a budget check, compaction when due, one main
call, then the model's tool calls; it ends as a value (``TurnEnd``: ``Continue`` or a ``Stop``), and a
``Stop`` is the run's end.

Rules this module keeps:
- events are numbered in the order they happen and timed with the injected clock, which must be a monotonic
  clock in seconds on the same scale as ``time.monotonic`` (the tools kill a command at ``deadline``);
- the budgets are checked before each turn and each tool call; a passed budget is a ``budget_stop`` event and
  the run ends ``budget_exceeded``; a cancelled run stops as on Ctrl-C;
- a turn asking for more than ``tools.maxCallsPerTurn`` calls raises one ``too_many_tool_calls`` incident
  first, runs the calls up to the cap, then answers each call past it with a refusal (it does not count
  against maxToolCalls);
- a response without tool calls that holds one written as text raises a ``text_tool_call`` incident; with
  ``tools.textCalls = "parse"`` such calls run as any other (``after_response``), and are answered in one user
  message naming each (no API has an id to answer them);
- nothing a tool or the model does ends the loop with an exception: a provider failure ends the run with
  outcome ``error`` and ``failure.reason``, and any other exception ends it with ``error``, reason
  ``internal_error`` and the exception's type and message: the event log always ends with ``run_end``;
- however the run ends (an error, a budget, Ctrl-C), what its commands left running and its MCP servers are
  stopped before ``run_end`` (``ToolCalls.close``);
- maxWallMs bounds everything: a running tool is killed at it, and each provider call is given only the wall
  time left.
"""

from __future__ import annotations

from dataclasses import dataclass

from returns.result import Failure, Success

from alisio.core.harness.agent_step import (
    BudgetExceeded,
    CallTools,
    Continue,
    Failed,
    Finish,
    Stop,
    TurnEnd,
    after_response,
    over_cap_incident,
    run_end_fields,
    select_agent,
    with_system_text,
)
from alisio.core.harness.budget import check, output_limit
from alisio.core.harness.endpoint import redact_credentials
from alisio.core.harness.events import BudgetStopped, IncidentKind, RunEnded, RunStarted
from alisio.core.harness.protocol import (
    AssistantMessage,
    Message,
    ProviderRequest,
    ProviderResponse,
    UserMessage,
)
from alisio.core.harness.text_calls import text_call_answer, text_tool_call
from alisio.core.harness.tooldefs import tool_specs
from alisio.shell import cancel
from alisio.shell.harness.agent_setup import AgentSetup, ApprovalAnswer, Approver, RunResult
from alisio.shell.harness.checkpoint import compact_if_due
from alisio.shell.harness.conversation import Conversation
from alisio.shell.harness.provider_calls import ProviderCalls
from alisio.shell.harness.run_log import RunLog
from alisio.shell.harness.tool_calls import MESSAGE_CHARS, ToolCalls

__all__ = ["AgentSetup", "ApprovalAnswer", "Approver", "RunResult", "run_agent"]


@dataclass
class _Loop:
    """One run's turns: the counters the budgets read, and the parts that perform the effects."""

    setup: AgentSetup
    log: RunLog
    conversation: Conversation
    provider: ProviderCalls
    tools: ToolCalls
    turns: int = 0
    tool_calls: int = 0

    def budget_passed(self, turns: int, tool_calls: int) -> BudgetExceeded | None:
        """Whether going to ``turns`` turns and ``tool_calls`` tool calls passes a budget (checked before each)."""
        cancel.check()  # before each turn and each tool call: a cancelled run stops as on Ctrl-C
        spent = self.provider
        stop = check(
            self.setup.budget, turns, tool_calls, self.log.elapsed_ms(), spent.main_tokens, spent.main_cost
        )
        return None if stop is None else BudgetExceeded(stop=stop)

    def main_request(self) -> tuple[ProviderRequest, str]:
        """The next main-loop request, and the fingerprint of the same request normalised."""
        setup, measured = self.setup, self.setup.measured
        request = ProviderRequest(
            model=setup.model,
            instructions=self.conversation.instructions,
            messages=tuple(self.conversation.messages),
            tools=self.tools.specs,
            max_output_tokens=output_limit(
                measured.limits.max_output_tokens, setup.budget.max_tokens, self.provider.main_tokens
            ),
            reasoning_effort=measured.reasoning.effort,
            cache=measured.cache,
            temperature=measured.sampling.temperature,
            top_p=measured.sampling.top_p,
            seed=measured.sampling.seed,
        )
        return request, self.conversation.fingerprint(request)

    def turn(self) -> TurnEnd:
        """One turn: the budgets, compaction when due, the main call, then the model's tool calls."""
        passed = self.budget_passed(self.turns + 1, self.tool_calls)
        if passed is not None:
            return passed
        self.turns += 1
        stopped = compact_if_due(self.conversation, self.provider, self.turns)
        if stopped is not None:
            return stopped
        request, request_fingerprint = self.main_request()
        response = self.provider.call(request, self.turns, request_fingerprint)
        if not isinstance(response, ProviderResponse):
            return response
        self.provider.record_main(response)
        self.conversation.append(
            AssistantMessage(
                content=response.text or None,
                tool_calls=response.tool_calls,
                reasoning=response.reasoning,
                reasoning_blocks=response.reasoning_blocks,
            )
        )
        tools = self.setup.measured.tools
        cap, offered = tools.max_calls_per_turn, tuple(tool.name for tool in self.tools.specs)
        if not response.tool_calls and (written := text_tool_call(response.text, offered)) is not None:
            self.log.incident(IncidentKind.TEXT_TOOL_CALL, written)
        match after_response(response, cap, offered, self.turns, tools.text_calls):
            case Finish() as finish:
                return finish
            case CallTools() as step:
                return self.call_tools(step, cap)

    def call_tools(self, step: CallTools, cap: int) -> TurnEnd:
        """Run a turn's tool calls up to the cap, each after a budget check; refuse the ones past it; answer
        them (calls written as text in one user message naming each: no API has an id to answer them)."""
        over_cap = over_cap_incident(step, cap)
        if over_cap is not None:
            self.log.incident(*over_cap)
        answers: list[Message] = []
        for call in step.calls:
            passed = self.budget_passed(self.turns, self.tool_calls + 1)
            if passed is not None:
                return passed
            self.tool_calls += 1
            answers.append(self.tools.run(call, from_text=step.from_text))
        answers += self.tools.refuse_over_cap(step.refused, cap)
        if step.from_text:
            answers = [text_call_answer(answers)]
        for answer in answers:
            self.conversation.append(answer)
        return Continue()

    def turns_until_stop(self) -> Stop:
        """Start the MCP servers, then run turns until one stops the run."""
        stopped = self.tools.start_mcp()
        if stopped is not None:
            return stopped
        while True:
            match self.turn():
                case Continue():
                    pass
                case stop:
                    return stop

    def run(self) -> RunResult:
        """The run to its end: whatever happens inside, the event log ends with ``run_end``."""
        try:
            return self.end(self.turns_until_stop())
        except Exception as error:  # a bug must not lose the run: the log ends with run_end, the lab goes on
            message = redact_credentials(f"unexpected {type(error).__name__}: {error}")[:MESSAGE_CHARS]
            return self.end(Failed(reason="internal_error", message=message))
        except KeyboardInterrupt:
            # The user stopped the run (a running command's group is already killed): close the event log so
            # it still ends with run_end, then let the interrupt stop the caller too (a lab stops all tasks).
            self.end(Failed(reason="interrupted", message="interrupted by the user"))
            raise

    def end(self, stop: Stop) -> RunResult:
        """Record how the run ended and stop what it left running (``_end_run``)."""
        return _end_run(self.log, stop, self.turns, self.tool_calls, self.provider, self.tools)


def _end_run(
    log: RunLog,
    stop: Stop,
    turns: int,
    tool_calls: int,
    provider: ProviderCalls | None,
    tools: ToolCalls | None,
) -> RunResult:
    """The run's ``budget_stop`` (for a budget), its tools closed, its ``run_end``, and its result."""
    if isinstance(stop, BudgetExceeded):
        passed = stop.stop
        log.emit(BudgetStopped, budget=passed.budget, limit=passed.limit, value=passed.value)
    if tools is not None:
        tools.close()
    outcome, reason, final_text, message = run_end_fields(stop)
    log.emit(RunEnded, outcome=outcome, reason=reason, final_text=final_text, turns=turns, message=message)
    return RunResult(
        events=tuple(log.events),
        outcome=outcome,
        reason=reason,
        final_text=final_text,
        turns=turns,
        tool_calls=tool_calls,
        main_tokens=None if provider is None else provider.main_tokens,
        usage_complete=True if provider is None else provider.usage_complete,
        message=message,
    )


def run_agent(setup: AgentSetup) -> RunResult:
    """Run one task to its end: completed, budget_exceeded or error. Never raises for a model or tool failure.

    Returns:
        The result with its full event log (also streamed to ``setup.on_event`` as it happens).
    """
    log = RunLog(
        clock=setup.clock, start=setup.clock(), max_wall_ms=setup.budget.max_wall_ms, on_event=setup.on_event
    )
    log.emit(
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
            return _end_run(log, Failed(reason="config", message=str(unknown_agent)), 0, 0, None, None)
        case Success(configured):
            profile = with_system_text(configured, setup.system)
    match tool_specs(profile.tools):
        case Failure(unknown_tool):
            return _end_run(log, Failed(reason="config", message=str(unknown_tool)), 0, 0, None, None)
        case Success(specs):
            pass
    conversation = Conversation.start(setup.normalize_rules, profile.instructions)
    conversation.append(UserMessage(content=setup.prompt))
    provider = ProviderCalls(setup=setup, log=log)
    tools = ToolCalls(setup=setup, log=log, profile=profile, specs=specs)
    return _Loop(setup=setup, log=log, conversation=conversation, provider=provider, tools=tools).run()
