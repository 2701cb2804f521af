"""A provider that plays a fixed list of assistant turns from a JSON file, ignoring what it is asked.

It is how the bundled cassettes are made and how most tests run: no network, no model, the same answers
every time. The file format (camelCase keys; unknown keys are errors)::

    {
      "turns": [
        {"text": "I'll read it first.",
         "toolCalls": [{"name": "read_file", "arguments": {"path": "src/math.py"}}],
         "usage": {"inputTokens": 120, "outputTokens": 14, "cachedInputTokens": 0}},
        {"text": "Done.", "finishReason": "stop"}
      ],
      "checkpoint": "optional: the text every compaction call answers"
    }

Rules:

- each main-loop call (``purpose == "main"``) plays the next turn; when none is left the call raises
  ``ProviderFailure("script")`` saying how many turns the file has;
- a turn has optional ``text``, ``reasoning``, ``toolCalls``, ``usage`` and ``finishReason`` (``stop``,
  ``tool_calls``, ``length`` or ``content_filter``; default ``tool_calls`` when the turn calls tools, else
  ``stop``). A turn without ``usage`` reports none (the harness records ``usage_unreported``). Usage keys are
  ``inputTokens``, ``outputTokens``, ``totalTokens``, ``cachedInputTokens``, ``reasoningTokens``;
- a tool call has ``name``, optional ``id`` (default ``call_<turn>_<n>``, both counted from 1 in file order)
  and optional ``arguments``: a JSON object (sent as compact JSON text, keys in file order) or a string sent
  verbatim (so a script can send invalid JSON on purpose); default ``{}``;
- ``when`` (a string) plays the turn only when the request holds that text (its system prompt, a message or
  a tool result), ``unless`` only when it does not: a turn whose condition fails is passed over for good and
  the next one is tried, so a script can act like an agent that reads a file only when it is there (the
  worked example of docs/context-experiments.md). ``eval mock-endpoint`` picks turns by position and
  refuses them;
- ``error`` (a string) makes the turn end with an in-stream error instead of a finish reason; ``failure``
  (``{"kind": "rate_limited", "message": "..."}``) makes the call raise ``ProviderFailure`` of that kind.
  Both consume the turn;
- a compaction call (``purpose == "compaction"``) does not consume a turn. It answers ``checkpoint`` when the
  file has one, else a deterministic summary of the request's messages: every user message verbatim (so a
  rule stated in the prompt survives), assistant text and tool calls, and tool results cut to
  ``RESULT_EXCERPT`` characters. It reports no usage;
- an invalid file raises ``ProviderFailure("script")`` with one line naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

import msgspec

from alisio.core.harness.protocol import (
    AssistantMessage,
    FinishEvent,
    ProviderRequest,
    ReasoningDelta,
    StreamErrorEvent,
    StreamEvent,
    SystemMessage,
    TextDelta,
    ToolCallDelta,
    ToolMessage,
    Usage,
    UsageEvent,
    UserMessage,
)
from alisio.core.text import plural
from alisio.shell.harness.providers.base import FailureKind, FirstEvent, ProviderFailure, RetryNotice

RESULT_EXCERPT = 200
MAX_SCRIPT_BYTES: Final = 64 << 20
"""The most a script file may hold: a link to ``/dev/zero`` or a runaway file is refused, not read until
memory runs out."""


def read_script_bytes(path: Path | str) -> bytes:
    """The bytes of the script file ``path``: a regular file (a link to one is fine) of at most
    ``MAX_SCRIPT_BYTES``, opened without blocking, so a FIFO never hangs the reader.

    Raises:
        OSError: it cannot be opened or read, is a directory, is not a regular file or is too large (the
            strerror says which).
    """
    from alisio.shell.harness.bounded_read import read_bounded

    return read_bounded(path, MAX_SCRIPT_BYTES, "a script")


class _Strict(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    pass


class ScriptedToolCall(_Strict, frozen=True, kw_only=True):
    name: str
    id: str | None = None
    arguments: str | dict[str, Any] = msgspec.field(default_factory=dict)


class ScriptedUsage(_Strict, frozen=True, kw_only=True):
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None


class ScriptedFailure(_Strict, frozen=True, kw_only=True):
    kind: FailureKind
    message: str


class ScriptedTurn(_Strict, frozen=True, kw_only=True):
    text: str | None = None
    reasoning: str | None = None
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    usage: ScriptedUsage | None = None
    finish_reason: Literal["stop", "tool_calls", "length", "content_filter"] | None = None
    error: str | None = None
    failure: ScriptedFailure | None = None
    when: str | None = None
    """Played only when the request holds this text; else passed over."""
    unless: str | None = None
    """Played only when the request does not hold this text; else passed over."""


class Script(_Strict, frozen=True, kw_only=True):
    turns: tuple[ScriptedTurn, ...]
    checkpoint: str | None = None


class ScriptedProvider:
    """Plays ``script`` turn by turn (see the module docstring). Not thread-safe: one run, one provider."""

    def __init__(self, script: Script, source: str = "<script>") -> None:
        self._script = script
        self._source = source
        self._next = 0
        self._conditional = any(t.when is not None or t.unless is not None for t in script.turns)

    @classmethod
    def from_file(cls, path: Path | str) -> ScriptedProvider:
        """Load a script file; ``ProviderFailure("script")`` names the file and the field when it is invalid."""
        try:
            data = read_script_bytes(path)
        except OSError as error:
            raise ProviderFailure("script", f"{path}: cannot read the script: {error.strerror}") from None
        return cls.from_json(data, str(path))

    @classmethod
    def from_json(cls, data: bytes | str, source: str = "<script>") -> ScriptedProvider:
        """Parse a script from JSON text; ``source`` names it in error messages."""
        try:
            script = msgspec.json.decode(data, type=Script)
        except msgspec.ValidationError as error:
            raise ProviderFailure("script", f"{source}: invalid script: {error}") from None
        except msgspec.DecodeError as error:
            raise ProviderFailure("script", f"{source}: not valid JSON: {error}") from None
        if not script.turns:
            raise ProviderFailure("script", f"{source}: invalid script: `$.turns` is empty")
        return cls(script, source)

    @property
    def id(self) -> str:
        return "scripted"

    @property
    def remaining(self) -> int:
        """Turns not played yet."""
        return len(self._script.turns) - self._next

    def stream(
        self,
        request: ProviderRequest,
        on_retry: RetryNotice | None = None,
        *,
        timeout_s: float | None = None,
        on_first_event: FirstEvent | None = None,
    ) -> tuple[StreamEvent, ...]:
        """The next turn's events (or the checkpoint for a compaction call); the request is not inspected.

        ``timeout_s`` is accepted for the provider contract and ignored: playing a turn takes no time.
        """
        if request.purpose == "compaction":
            text = self._script.checkpoint
            return (
                TextDelta(text=text if text is not None else summary(request)),
                FinishEvent(reason="stop"),
            )
        if self._next >= len(self._script.turns):
            count = len(self._script.turns)
            raise ProviderFailure(
                "script",
                f"{self._source}: the script has no turn left "
                + (
                    "(its one turn was played)"
                    if count == 1
                    else f"(all {plural(count, 'turn')} were played)"
                ),
            )
        text = request_text(request) if self._conditional else ""
        while self._next < len(self._script.turns) and not _applies(self._script.turns[self._next], text):
            self._next += 1
        if self._next >= len(self._script.turns):
            raise ProviderFailure(
                "script", f"{self._source}: no turn left whose when/unless the request meets"
            )
        number = self._next + 1
        turn = self._script.turns[self._next]
        self._next += 1
        if turn.failure is not None:
            raise ProviderFailure(turn.failure.kind, turn.failure.message)
        return turn_events(turn, number)


def turn_events(turn: ScriptedTurn, number: int) -> tuple[StreamEvent, ...]:
    """The stream events of turn ``number`` (from 1): reasoning, text, tool calls, finish or error, usage."""
    events: list[StreamEvent] = []
    if turn.reasoning:
        events.append(ReasoningDelta(text=turn.reasoning))
    if turn.text:
        events.append(TextDelta(text=turn.text))
    for index, call in enumerate(turn.tool_calls):
        arguments = (
            call.arguments
            if isinstance(call.arguments, str)
            else msgspec.json.encode(call.arguments).decode()
        )
        events.append(
            ToolCallDelta(
                index=index, id=call.id or f"call_{number}_{index + 1}", name=call.name, arguments=arguments
            )
        )
    if turn.error is not None:
        events.append(StreamErrorEvent(message=turn.error))
    else:
        default = "tool_calls" if turn.tool_calls else "stop"
        events.append(FinishEvent(reason=turn.finish_reason or default))
    if turn.usage is not None:
        events.append(
            UsageEvent(
                usage=Usage(
                    input_tokens=turn.usage.input_tokens,
                    output_tokens=turn.usage.output_tokens,
                    total_tokens=turn.usage.total_tokens,
                    cached_input_tokens=turn.usage.cached_input_tokens,
                    reasoning_tokens=turn.usage.reasoning_tokens,
                )
            )
        )
    return tuple(events)


def _applies(turn: ScriptedTurn, text: str) -> bool:
    """Whether ``turn``'s ``when`` and ``unless`` hold for a request whose text is ``text``."""
    if turn.when is not None and turn.when not in text:
        return False
    return turn.unless is None or turn.unless not in text


def request_text(request: ProviderRequest) -> str:
    """The request as text ``when`` and ``unless`` look in: the instructions, every message's content and
    tool calls."""
    parts = [request.instructions]
    for message in request.messages:
        parts.append(message.content or "")
        if isinstance(message, AssistantMessage):
            parts.extend(f"{call.name} {call.arguments}" for call in message.tool_calls)
    return "\n".join(parts)


def summary(request: ProviderRequest) -> str:
    """A deterministic checkpoint of ``request.messages``: user messages verbatim, the rest in short."""
    lines = [f"Checkpoint of the conversation so far ({len(request.messages)} messages):"]
    for message in request.messages:
        match message:
            case UserMessage(content=content):
                lines.append(f"- user: {content}")
            case SystemMessage(content=content):
                lines.append(f"- system: {content}")
            case AssistantMessage(content=content, tool_calls=calls):
                called = "".join(f" [called {call.name} {call.arguments}]" for call in calls)
                lines.append(f"- assistant: {content or ''}{called}")
            case ToolMessage(name=name, content=content):
                cut = content if len(content) <= RESULT_EXCERPT else content[:RESULT_EXCERPT] + "…"
                lines.append(f"- tool {name}: {cut}")
    return "\n".join(lines)
