"""What the harness and a provider say to each other, as plain data.

A provider call is a ``ProviderRequest`` in and a sequence of ``StreamEvent`` out; ``assemble`` folds the
events into one ``ProviderResponse``. Keeping the stream as data lets the same events be parsed from SSE
(``alisio.shell.harness.providers.openai_compat``), played from a script (``scripted``), stored in a cassette and replayed.

Rules:
- usage that a provider did not report is ``None``, never 0 (the report omits what was not measured); usage
  whose counts cannot be trusted (a negative count, one that is not an integer, or one above
  ``MAX_TOKEN_COUNT``) is treated as unreported for that response, and ``ProviderResponse.usage_problem`` says
  why;
- tool-call arguments are kept as the raw JSON text the model produced: decoding them is the tool's job,
  and invalid JSON is a tool error the model sees, never a crash;
- a tool's JSON schema is stored as canonical JSON text so requests stay hashable values.
"""

from __future__ import annotations

from typing import Final, Literal

from returns.result import Failure, Result, Success

from alisio.core.base import Frozen

MAX_TOKEN_COUNT: Final = 1_000_000_000
"""The largest token count one response may report (a billion: far above any model's context window). A
larger one (``prompt_tokens: 10**30`` from a hostile or broken server) is not a measurement: it would overflow
the report's sums, so the usage is treated as unreported, as a negative count is."""
MAX_NORMALISED_COUNT: Final = 4 * MAX_TOKEN_COUNT
"""The largest count of a ``Usage`` in the lab's convention: some are sums of what the provider reported
(Anthropic's input is three counts, its total four), each at most ``MAX_TOKEN_COUNT``."""
COUNT_RULE: Final = f"a count must be an integer from 0 to {MAX_TOKEN_COUNT}"
"""The rule a usable token count keeps, as the ``usage_unreported`` incidents state it."""


class ToolCall(Frozen, frozen=True, kw_only=True):
    """One tool call the model asked for."""

    id: str
    """The provider's call id, stored verbatim (cassettes replay it)."""
    name: str
    arguments: str
    """The arguments as the raw JSON text the model sent (may be invalid JSON)."""


class SystemMessage(Frozen, frozen=True, kw_only=True, tag="system", tag_field="role"):
    content: str


class UserMessage(Frozen, frozen=True, kw_only=True, tag="user", tag_field="role"):
    content: str


class ReasoningBlock(Frozen, frozen=True, kw_only=True):
    """A reasoning item the provider needs back verbatim in the next request.

    Anthropic's ``thinking`` (with its ``signature``) and ``redacted_thinking`` blocks, OpenAI Responses'
    ``reasoning`` items (with ``encrypted_content``). ``wire`` is the item as JSON text, exactly as it is sent
    back; only the wire format that produced it sends it (``kind`` says which: ``thinking``,
    ``redacted_thinking`` or ``reasoning``).
    """

    kind: str
    wire: str


class AssistantMessage(Frozen, frozen=True, kw_only=True, tag="assistant", tag_field="role"):
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str | None = None
    """Reasoning text the provider streamed; kept for the log, not sent back to the provider."""
    reasoning_blocks: tuple[ReasoningBlock, ...] = ()
    """Reasoning the provider needs back (thinking signatures, encrypted reasoning), sent before the tool
    calls it led to. Empty for Chat Completions."""


class ToolMessage(Frozen, frozen=True, kw_only=True, tag="tool", tag_field="role"):
    tool_call_id: str
    name: str
    content: str


Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage


class ToolSpec(Frozen, frozen=True, kw_only=True):
    """A tool as the model sees it."""

    name: str
    description: str
    parameters_json: str
    """The JSON schema of the arguments, as canonical JSON text (sorted keys)."""


Purpose = Literal["main", "compaction"]


class ProviderRequest(Frozen, frozen=True, kw_only=True):
    """Everything the harness asks of the provider in one call (what a fingerprint hashes)."""

    model: str
    instructions: str
    """The system prompt."""
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int | None = None
    reasoning_effort: str | None = None
    purpose: Purpose = "main"
    """``compaction`` calls write a checkpoint; their tokens are counted apart from the main loop."""
    cache: bool = True
    """Mark prompt-cache breakpoints where the wire format has them (Anthropic's ``cache_control``); the
    measured key ``cache``."""
    temperature: float | None = None
    """``sampling.temperature``; ``None`` sends none."""
    top_p: float | None = None
    """``sampling.topP``; ``None`` sends none."""
    seed: int | None = None
    """``sampling.seed`` (Chat Completions only); ``None`` sends none."""


class Usage(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """Token usage as the provider reported it; ``None`` means not reported, never 0."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cached_input_tokens: int | None = None
    """``prompt_tokens_details.cached_tokens``, else DeepSeek's ``prompt_cache_hit_tokens``."""
    reasoning_tokens: int | None = None
    """``completion_tokens_details.reasoning_tokens`` (Responses: ``output_tokens_details.reasoning_tokens``)."""
    cache_write_input_tokens: int | None = None
    """Input tokens written to the prompt cache (Anthropic's ``cache_creation_input_tokens``); they are part of
    ``input_tokens`` too."""
    provider_fields: str | None = None
    """The provider's own usage object as JSON text, verbatim (the new wire formats record it; the
    normalised counts above follow the lab's convention: input includes cached input)."""
    invalid: str | None = None
    """Why the counts cannot be used, as the parser found it (``completion_tokens is 12.5``): a count the
    provider sent that is not an integer from 0 to ``MAX_TOKEN_COUNT``. ``None`` when every count it sent is
    one."""


_COUNTS: tuple[tuple[str, str], ...] = (
    ("inputTokens", "input_tokens"),
    ("outputTokens", "output_tokens"),
    ("totalTokens", "total_tokens"),
    ("cachedInputTokens", "cached_input_tokens"),
    ("reasoningTokens", "reasoning_tokens"),
    ("cacheWriteInputTokens", "cache_write_input_tokens"),
)


def usage_problem(usage: Usage) -> str | None:
    """Why ``usage`` cannot be used (the parser's ``invalid``, or a count below 0 or above
    ``MAX_NORMALISED_COUNT``), or ``None`` when it can.

    Such a count may come from a scripted turn or a cassette as well as from a provider: no token total,
    budget or report may be built on it.
    """
    if usage.invalid:
        return usage.invalid
    for wire, attribute in _COUNTS:
        value = getattr(usage, attribute)
        if value is not None and not 0 <= value <= MAX_NORMALISED_COUNT:
            return f"{wire} is {value}"
    return None


def usage_before_cut(usage: Usage | None) -> Usage | None:
    """What a call cut before its end (a stream that broke off, ended without a finish, or was cut at the
    deadline) keeps of the last usage it reported: its input side (input, cached and cache-write tokens, and
    the provider's fields verbatim), never its output, whose count sent before the end is not the call's
    (Anthropic's ``message_start`` says 1, a first Chat Completions chunk 0).

    Returns:
        That usage, or ``None`` when none was reported, it cannot be used (``usage_problem``) or it has no
        input count.
    """
    if usage is None or usage.input_tokens is None or usage_problem(usage) is not None:
        return None
    return Usage(
        input_tokens=usage.input_tokens,
        cached_input_tokens=usage.cached_input_tokens,
        cache_write_input_tokens=usage.cache_write_input_tokens,
        provider_fields=usage.provider_fields,
    )


# --- the stream -------------------------------------------------------------------------------------------


class TextDelta(Frozen, frozen=True, kw_only=True, tag="text", tag_field="type"):
    text: str


class ReasoningDelta(Frozen, frozen=True, kw_only=True, tag="reasoning", tag_field="type"):
    text: str


class ToolCallDelta(Frozen, frozen=True, kw_only=True, tag="tool_call", tag_field="type"):
    """A fragment of tool call ``index``: id/name arrive once, arguments in fragments to concatenate."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class ReasoningItemEvent(Frozen, frozen=True, kw_only=True, tag="reasoning_item", tag_field="type"):
    """A complete reasoning item to send back (``ReasoningBlock``), once the stream has closed it."""

    kind: str
    wire: str


class FinishEvent(Frozen, frozen=True, kw_only=True, tag="finish", tag_field="type"):
    reason: str


class UsageEvent(Frozen, frozen=True, kw_only=True, tag="usage", tag_field="type"):
    usage: Usage


class StreamErrorEvent(Frozen, frozen=True, kw_only=True, tag="error", tag_field="type"):
    """An error the provider sent inside a 200 stream (an ``error`` object or an ``event: error``)."""

    message: str
    code: str | None = None


class ServedEvent(Frozen, frozen=True, kw_only=True, tag="served", tag_field="type", omit_defaults=True):
    """What served the response: the ``model`` and ``system_fingerprint`` of its chunks.

    A provider sends them on every chunk; the stream keeps one event each time they change
    (``served_changes``), so a cassette holds one, not one per chunk.
    """

    model: str | None = None
    system_fingerprint: str | None = None


StreamEvent = (
    TextDelta
    | ReasoningDelta
    | ToolCallDelta
    | ReasoningItemEvent
    | FinishEvent
    | UsageEvent
    | StreamErrorEvent
    | ServedEvent
)


def served_changes(events: tuple[StreamEvent, ...]) -> tuple[StreamEvent, ...]:
    """``events`` with every ``ServedEvent`` equal to the last one kept dropped (the order is unchanged)."""
    kept: list[StreamEvent] = []
    last: ServedEvent | None = None
    for event in events:
        if isinstance(event, ServedEvent):
            if event == last:
                continue
            last = event
        kept.append(event)
    return tuple(kept)


class ProviderResponse(Frozen, frozen=True, kw_only=True):
    """One assembled assistant turn."""

    text: str
    reasoning: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str
    usage: Usage | None
    """The last usage the stream reported, or ``None`` when it reported none or it cannot be used."""
    usage_problem: str | None = None
    """Why the last reported usage cannot be used (``usage_problem``): the response then counts as one that
    reported no usage. ``None`` when usage was reported and usable, or not reported at all."""
    served_model: str | None = None
    """The ``model`` the stream named last (what actually answered; ``None`` when it named none)."""
    system_fingerprint: str | None = None
    """The ``system_fingerprint`` the stream named last (the backend configuration; often absent)."""
    reasoning_blocks: tuple[ReasoningBlock, ...] = ()
    """The reasoning items to send back with this turn, in stream order."""


class StreamError(Frozen, frozen=True, kw_only=True):
    """Why a stream could not be assembled into a response."""

    message: str
    code: str | None = None


class _CallSlots:
    """Tool-call fragments grouped into calls, one slot per call in arrival order.

    The lists grow in place so long arguments assemble in linear time. A fragment with its own id and name, at an
    index whose call already has another id, starts a new call (gateways that send each whole call in its own
    chunk without an index).
    """

    def __init__(self) -> None:
        self.indexes: list[int] = []
        self.ids: list[str | None] = []
        self.names: list[str | None] = []
        self.parts: list[list[str]] = []
        self.open_at: dict[
            int, int
        ] = {}  # index -> the slot of the call that fragments at that index continue

    def add(self, delta: ToolCallDelta) -> None:
        slot = self.open_at.get(delta.index)
        if slot is None or (delta.id and delta.name and self.ids[slot] and self.ids[slot] != delta.id):
            slot = self.open_at[delta.index] = len(self.indexes)
            self.indexes.append(delta.index)
            self.ids.append(None)
            self.names.append(None)
            self.parts.append([])
        self.ids[slot] = self.ids[slot] or delta.id
        self.names[slot] = self.names[slot] or delta.name
        self.parts[slot].append(delta.arguments)

    def calls(self) -> tuple[ToolCall, ...]:
        """The calls ordered by index; calls at the same index keep their arrival order (a stable sort)."""
        return tuple(
            ToolCall(
                id=self.ids[slot] or f"call_{self.indexes[slot]}",
                name=self.names[slot] or "",
                arguments="".join(self.parts[slot]),
            )
            for slot in sorted(range(len(self.indexes)), key=self.indexes.__getitem__)
        )


def assemble(events: tuple[StreamEvent, ...]) -> Result[ProviderResponse, StreamError]:
    """Fold a provider's stream events into one response.

    Text and reasoning fragments are concatenated in order; tool calls are grouped by index (id and name from
    the first fragment that carries them, arguments concatenated), except that a fragment with its own id and
    name, at an index whose call already has another id, starts a new call (gateways that send each whole
    call in its own chunk without an index); the finish reason is the last one sent; usage is the last
    reported, or ``None`` with ``usage_problem`` set when it cannot be used. Fails on an in-stream error
    event, or when the stream never finished (a stream that stops without a finish reason is an error, not a
    silent truncation).
    """
    text: list[str] = []
    reasoning: list[str] = []
    calls = _CallSlots()
    blocks: list[ReasoningBlock] = []
    finish: str | None = None
    usage: Usage | None = None
    served = ServedEvent()
    for event in events:
        match event:
            case ServedEvent(model=model, system_fingerprint=system):
                served = ServedEvent(
                    model=model or served.model, system_fingerprint=system or served.system_fingerprint
                )
            case TextDelta(text=fragment):
                text.append(fragment)
            case ReasoningDelta(text=fragment):
                reasoning.append(fragment)
            case ToolCallDelta():
                calls.add(event)
            case ReasoningItemEvent(kind=kind, wire=wire):
                blocks.append(ReasoningBlock(kind=kind, wire=wire))
            case FinishEvent(reason=reason):
                finish = reason
            case UsageEvent(usage=reported):
                usage = reported
            case StreamErrorEvent(message=message, code=code):
                return Failure(StreamError(message=message, code=code))
    if finish is None:
        return Failure(StreamError(message="the stream ended without a finish reason (truncated response)"))
    problem = None if usage is None else usage_problem(usage)
    return Success(
        ProviderResponse(
            text="".join(text),
            reasoning="".join(reasoning) if reasoning else None,
            tool_calls=calls.calls(),
            finish_reason=finish,
            usage=None if problem else usage,
            usage_problem=problem,
            served_model=served.model,
            system_fingerprint=served.system_fingerprint,
            reasoning_blocks=tuple(blocks),
        )
    )
