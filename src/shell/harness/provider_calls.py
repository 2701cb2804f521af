"""One run's provider calls: each call with its request and response events, its retries, its cut, its usage.

A call returns the assembled response or the ``Stop`` the run ends with (``alisio.core.harness.agent_step``):
a failure is a value here, never an exception the loop must catch.

Rules this module keeps:
- each call is given only the wall time left before maxWallMs (checkpoint calls too), so a hung stream stops
  the run with ``budget_exceeded`` maxWallMs on time (``provider_stop``);
- each retry the provider makes is a ``provider_retry`` incident (its note redacted);
- a call cut short (at maxWallMs, a stream that broke off or ended early) still gets its ``provider_response``
  (``CUT_REASONS``): an excerpt of what it streamed, the input tokens it reported before the cut, and a
  ``usage_unreported`` incident; the run's usage is then incomplete;
- main-loop tokens (and cost, at ``setup.rates``) are of main-loop responses that reported usage
  (``record_main``); a checkpoint call's usage goes into its ``Compacted`` event only; one
  ``usage_unreported`` incident per main turn without usage (the spec allows the run to overshoot maxTokens by
  that response).
"""

from __future__ import annotations

from dataclasses import dataclass

from returns.result import Failure, Success

from alisio.core.harness.agent_step import Failed, Stop, provider_stop, response_incidents
from alisio.core.harness.budget import cost_after, tokens_of
from alisio.core.harness.endpoint import redact_credentials
from alisio.core.harness.events import CUT_REASONS, IncidentKind, ProviderRequested, ProviderResponded
from alisio.core.harness.protocol import (
    ProviderRequest,
    ProviderResponse,
    StreamEvent,
    assemble,
    usage_before_cut,
)
from alisio.core.harness.wire import parse_events
from alisio.core.replay.fingerprint import fingerprint, normalize_request
from alisio.shell.harness.agent_setup import AgentSetup
from alisio.shell.harness.providers.base import ProviderFailure
from alisio.shell.harness.run_log import RunLog

__all__ = ["DEADLINE_EXCERPT_CHARS", "ProviderCalls"]

DEADLINE_EXCERPT_CHARS = 2000
"""How much of a call cut at maxWallMs is kept in its provider_response (the count is of all of it)."""
_CUT = dict(
    zip(CUT_REASONS, ("cut at the deadline", "cut mid-stream", "ended by an error event"), strict=True)
)
"""A cut call's finish reason in its provider_response -> how its usage_unreported incident says it."""


@dataclass
class ProviderCalls:
    setup: AgentSetup
    log: RunLog
    calls: int = 0
    main_tokens: int | None = None
    main_cost: float | None = None
    usage_complete: bool = True

    def call(
        self, request: ProviderRequest, turn: int, request_fingerprint: str | None = None
    ) -> ProviderResponse | Stop:
        """One provider call with its request/response events; the run's ``Stop`` when it failed.

        ``request_fingerprint`` is the fingerprint of the normalised request, when the caller has it already.
        """
        setup, log = self.setup, self.log
        call = self.calls
        self.calls += 1
        if request_fingerprint is None:
            request_fingerprint = fingerprint(normalize_request(request, setup.normalize_rules))
        log.emit(
            ProviderRequested,
            call=call,
            turn=turn,
            purpose=request.purpose,
            fingerprint=request_fingerprint,
            message_count=len(request.messages),
        )
        started = setup.clock()
        first_at: list[float] = []
        try:
            stream = setup.provider.stream(
                request,
                lambda note: log.incident(IncidentKind.PROVIDER_RETRY, redact_credentials(note)),
                timeout_s=log.wall_left_s(),
                on_first_event=lambda: first_at.append(setup.clock()),
            )
        except ProviderFailure as failure:
            return self.failed(call, request, failure, started)
        duration_ms = int((setup.clock() - started) * 1000)
        match assemble(stream):
            case Failure(error):
                self.cut_short(call, request, stream, started, "cut")
                message = redact_credentials(f"the provider's stream failed: {error.message}")
                return Failed(reason="provider_stream", message=message)
            case Success(assembled):
                response: ProviderResponse = assembled
        log.emit(
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
        return response

    def failed(self, call: int, request: ProviderRequest, failure: ProviderFailure, started: float) -> Stop:
        """How the run ends when a provider call failed, after recording what the call streamed before."""
        deadline = failure.kind == "deadline"
        if (
            deadline or failure.partial
        ):  # cut at maxWallMs, or broke off after some events: keep what they said
            self.cut_short(call, request, failure.partial, started, "deadline" if deadline else "cut")
        message = redact_credentials(str(failure))
        return provider_stop(deadline, failure.reason, message, self.setup.budget, self.log.elapsed_ms())

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
        self.log.emit(
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
        self.log.incident(IncidentKind.USAGE_UNREPORTED, note)

    def record_main(self, response: ProviderResponse) -> None:
        """Count a main-loop response's usage (and cost) towards the run's budgets; raise its incidents."""
        for kind, message in response_incidents(response):
            self.log.incident(kind, message)
        tokens = tokens_of(response.usage)
        if tokens is None:
            self.usage_complete = False
        else:
            self.main_tokens = (self.main_tokens or 0) + tokens
        self.main_cost = cost_after(self.main_cost, self.setup.rates, response.usage)
