"""The run's event log: one ordered sequence of events per run, designed once.

It is the single source that tool-sequence verifiers, runs.jsonl and cassettes are read off, so every fact
they need is here as data: each provider call with its request fingerprint and usage, each tool call with its
arguments, effect and result, approvals, incidents, compactions, budget stops, and how the run ended.

Rules:
- ``seq`` numbers events from 0 in the order they happened; ``elapsed_ms`` is time since the run started,
  measured by the shell's clock (the only non-deterministic field);
- an API key never appears in an event: requests are represented by their fingerprint, not their headers;
- an assistant turn's text is kept whole (``ProviderResponded.text``); a tool result is kept as the model saw
  it, up to ``EXCERPT_CHARS`` characters (64 KiB), past which ``excerpt`` keeps the head and states the cut.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from alisio.core.base import Frozen
from alisio.core.harness.protocol import Usage

EXCERPT_CHARS = 65_536
"""A tool result longer than this keeps its first ``EXCERPT_CHARS`` characters in the event log."""


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` up to ``limit`` characters; past that its head and ``[... N characters not kept ...]``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} characters not kept in the event log ...]"


class Effect(StrEnum):
    """What a tool does to the world; the policy decides per effect."""

    READ = "read"
    WRITE = "write"
    PROCESS = "process"
    EXTERNAL = "external"
    ANALYSIS = "analysis"


class IncidentKind(StrEnum):
    """Things worth counting that are not the end of a run."""

    APPROVAL_DENIED = "approval_denied"
    """ask mode without a terminal (or a user who said no) denied an effect."""
    EFFECT_REFUSED = "effect_refused"
    """auto/full mode refused an effect that was not granted (no approval was asked)."""
    USAGE_UNREPORTED = "usage_unreported"
    """a provider turn reported no usage, so maxTokens could not be enforced on it."""
    TRUNCATED_OUTPUT = "truncated_output"
    """the provider stopped at its output limit (finish_reason length)."""
    COMPACTION = "compaction"
    """the older conversation was replaced by a checkpoint."""
    INVALID_TOOL_CALL = "invalid_tool_call"
    """the model called an unknown tool or sent arguments that do not parse."""
    TOOL_TIMEOUT = "tool_timeout"
    """a bash command was killed at its timeout or at maxWallMs."""
    PROVIDER_RETRY = "provider_retry"
    """a provider call was retried after a 429, 5xx or connection error."""
    TOO_MANY_TOOL_CALLS = "too_many_tool_calls"
    """one assistant turn asked for more than tools.maxCallsPerTurn tool calls; the calls past it did not run."""
    TEXT_TOOL_CALL = "text_tool_call"
    """the final text parses as a call of an offered tool: the server did not parse the model's call."""
    SANDBOX_DENIED = "sandbox_denied"
    """a sandboxed command (bash, a command verifier) was refused something, as its output shows: a write
    outside the workspace, a network connection, a file or process past a limit."""
    AGENT_EXITED = "agent_exited"
    """an external agent exited non-zero after its first model call (the verifiers still judge the run)."""


class RunStarted(Frozen, frozen=True, kw_only=True, tag="run_start", tag_field="type"):
    seq: int
    elapsed_ms: int
    prompt: str
    provider: str
    model: str
    policy_mode: str
    agent: str | None = None
    config_hash: str
    harness_version: str


class ProviderRequested(Frozen, frozen=True, kw_only=True, tag="provider_request", tag_field="type"):
    seq: int
    elapsed_ms: int
    call: int
    """Index of the provider call in this run, from 0 (main and compaction calls share the count)."""
    turn: int
    """The main-loop turn the call belongs to, from 1."""
    purpose: Literal["main", "compaction"]
    fingerprint: str
    """``alisio.core.replay.fingerprint`` of the normalised request."""
    message_count: int


CUT_REASONS: tuple[str, ...] = ("deadline", "cut", "error")
"""The finish reasons the harness gives a call that did not end: cut at maxWallMs, cut mid-stream (the
connection broke, or the stream ended without a finish), ended by an error event. Its usage keeps only the
input side the provider reported before the cut (``alisio.core.harness.protocol.usage_before_cut``)."""


class ProviderResponded(Frozen, frozen=True, kw_only=True, tag="provider_response", tag_field="type"):
    seq: int
    elapsed_ms: int
    call: int
    purpose: Literal["main", "compaction"]
    finish_reason: str
    usage: Usage | None
    """``None`` when the provider reported no usage for this call."""
    text_chars: int
    tool_calls: int
    duration_ms: int
    text: str = ""
    """The assistant's text of this response, whole (what a transcript shows)."""
    first_event_ms: int | None = None
    """From sending the request to the first event of the answering stream (retries and waits included):
    queueing on the server shows here, the model's own time after it. ``None``: no server (scripted, replay)."""
    served_model: str | None = None
    """The ``model`` the response named (what answered; an alias resolves here). ``None``: it named none."""
    system_fingerprint: str | None = None
    """The response's ``system_fingerprint`` (the backend configuration), when the provider sends one."""


class ToolCalled(Frozen, frozen=True, kw_only=True, tag="tool_call", tag_field="type", omit_defaults=True):
    seq: int
    elapsed_ms: int
    call_id: str
    name: str
    arguments: str
    """The raw JSON text of the arguments, as the model sent it (compact JSON for a call written as text)."""
    effect: Effect | None
    """``None`` for a tool the harness does not know."""
    from_text: bool = False
    """The model wrote this call as text and ``tools.textCalls = "parse"`` ran it (absent when false)."""


class ToolResulted(Frozen, frozen=True, kw_only=True, tag="tool_result", tag_field="type"):
    seq: int
    elapsed_ms: int
    call_id: str
    name: str
    ok: bool
    output_excerpt: str
    """What the model was shown, up to ``EXCERPT_CHARS`` characters (``excerpt`` states a cut)."""
    duration_ms: int


class ApprovalDecided(Frozen, frozen=True, kw_only=True, tag="approval", tag_field="type"):
    seq: int
    elapsed_ms: int
    call_id: str
    name: str
    effect: Effect
    granted: bool
    by: Literal["user", "headless"]


class IncidentRaised(Frozen, frozen=True, kw_only=True, tag="incident", tag_field="type"):
    seq: int
    elapsed_ms: int
    kind: IncidentKind
    message: str


class Compacted(Frozen, frozen=True, kw_only=True, tag="compaction", tag_field="type"):
    seq: int
    elapsed_ms: int
    chars_before: int
    chars_after: int
    messages_replaced: int
    usage: Usage | None
    """Usage of the checkpoint call: counted apart, never in main-loop tokens."""


class BudgetStopped(Frozen, frozen=True, kw_only=True, tag="budget_stop", tag_field="type"):
    seq: int
    elapsed_ms: int
    budget: Literal["maxTurns", "maxWallMs", "maxTokens", "maxToolCalls", "maxCostUsd"]
    limit: int | float
    """The limit passed (``maxCostUsd`` in USD, the others counts or milliseconds)."""
    value: int | float


class AgentExited(Frozen, frozen=True, kw_only=True, tag="agent_exit", tag_field="type"):
    """An external agent's process ended (``alisio.shell.agents``): its exit code and its output, bounded."""

    seq: int
    elapsed_ms: int
    agent: str
    kind: str
    exit_code: int | None
    """``None`` when it was killed (maxWallMs, a budget, its output past the limit)."""
    killed: str | None = None
    """Why it was killed (``maxWallMs``, ``budget``, ``output``), ``None`` when it exited by itself."""
    stdout: str = ""
    """Its stdout, head and tail kept past the limit (saying how much was cut)."""
    stderr: str = ""
    stopped: tuple[str, ...] = ()
    """Processes it left behind that were stopped (``name (pid N)``)."""


RunOutcome = Literal["completed", "budget_exceeded", "error"]


class RunEnded(Frozen, frozen=True, kw_only=True, tag="run_end", tag_field="type"):
    seq: int
    elapsed_ms: int
    outcome: RunOutcome
    """``completed``: the model stopped calling tools; the verifiers judge pass or fail."""
    reason: str | None = None
    """The budget name for ``budget_exceeded``; the cause for ``error`` (e.g. provider_auth)."""
    final_text: str = ""
    turns: int
    message: str | None = None
    """For ``error``, what the reason code alone does not say (the provider's message, redacted)."""


Event = (
    RunStarted
    | ProviderRequested
    | ProviderResponded
    | ToolCalled
    | ToolResulted
    | ApprovalDecided
    | IncidentRaised
    | Compacted
    | BudgetStopped
    | RunEnded
    | AgentExited
)
