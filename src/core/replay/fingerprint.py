"""Request fingerprints for replay: normalise what varies between runs, hash the rest, explain a difference.

A cassette stores, for each provider call, the fingerprint of the normalised request. Replay recomputes it
from what the harness would send now; a mismatch is a divergence, and ``first_difference`` names the first
field that differs (for example ``tools[edit_file].description`` or ``messages[3].tool.result``).

Rules:

- ``normalize_request`` applies every ``(pattern, replacement)`` rule, in order, as a global regular
  expression (RE2 syntax, ``alisio.core.share.linear_regex``: no backtracking, so no pattern can hang a run)
  with a *literal* replacement, to every string the harness controls: the instructions, every
  message content, assistant tool-call arguments and tool results. Tool names, descriptions and schemas, call
  ids and the model are never rewritten, so a change there always shows. The rules are per-run paths
  (``path_rules``: the workspace becomes ``<workspace>``), generated ids and a task's ``replayNormalize``;
- ``fingerprint`` hashes exactly what the provider receives, given an already normalised request: model,
  instructions, messages (without the assistant's reasoning text, which is never sent back, but with the
  reasoning blocks that are: thinking signatures, encrypted reasoning), tools with their schemas, the output
  limit and the reasoning effort, and ``cache`` when it is off. ``purpose`` is not hashed: a compaction call
  is told apart by its content. What was added after version 1 (reasoning blocks, ``cache``) enters the
  encoding only when it is set, so the fingerprints of cassettes recorded before stay the same;
- the hash is sha256 over msgspec's deterministic JSON encoding, prefixed by ``FINGERPRINT_VERSION`` so a
  change of the hashed shape is explicit.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.harness.protocol import (
    AssistantMessage,
    Message,
    ProviderRequest,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from alisio.core.share.linear_regex import LinearPattern, compile_linear
from alisio.core.text import plural

if TYPE_CHECKING:
    from hashlib import _Hash as _Sha256
else:
    _Sha256 = object

FINGERPRINT_VERSION = "alisio-fingerprint/1"
EXCERPT_CONTEXT = 40
"""Characters shown on each side of the first differing character."""

Rules = tuple[tuple[str, str], ...]
"""``(pattern, replacement)`` pairs: a Python regular expression and the literal text it becomes."""

WORKSPACE = "<workspace>"


class RuleError(Frozen, frozen=True, kw_only=True, tag="rule_error"):
    """A normalisation rule whose pattern does not compile, or needs backtracking (which cannot be bounded)."""

    pattern: str
    message: str

    def __str__(self) -> str:
        return f"replayNormalize pattern {self.pattern!r}: {self.message}"


class Divergence(Frozen, frozen=True, kw_only=True):
    """The first field where an actual request differs from the recorded one, with excerpts around it."""

    field: str
    """A path such as ``model``, ``tools[edit_file].description``, ``messages[3].tool.result``."""
    expected_excerpt: str
    """The recorded value around the first difference."""
    actual_excerpt: str
    """What the harness sends now, around the same place."""
    changed: tuple[str, ...] = ()
    """When the first difference is a file's hash (``sha256: ...``) and both texts go on with the file's
    lines: the first lines that differ, ``-`` recorded and ``+`` now (``CHANGED_LINES`` at most)."""

    def __str__(self) -> str:
        return f"{self.field}: expected {self.expected_excerpt!r}, got {self.actual_excerpt!r}"


# --- normalisation ------------------------------------------------------------------------------------


def validate_rules(rules: Rules) -> Result[Rules, RuleError]:
    """Check that every pattern compiles for RE2 (``normalize_request`` assumes it)."""
    for pattern, _ in rules:
        match compile_linear(pattern):
            case Failure(message):
                return Failure(RuleError(pattern=pattern, message=message))
    return Success(rules)


def path_rules(*paths: str) -> Rules:
    """Rules that turn each per-run path (a workspace and its resolved form) into ``<workspace>``.

    Longer paths come first so ``/private/tmp/x`` is replaced before ``/tmp/x``; empty paths are skipped, and
    so is a path that is not UTF-8 (no pattern can name it; it stays in the text, and replay says where).
    """
    unique = sorted({path.rstrip("/") for path in paths if path.rstrip("/")}, key=lambda p: (-len(p), p))
    return tuple((re.escape(path), WORKSPACE) for path in unique if _is_text(path))


def _is_text(path: str) -> bool:
    return not any("\ud800" <= char <= "\udfff" for char in path)


def normalize_request(request: ProviderRequest, rules: Rules) -> ProviderRequest:
    """Apply ``rules`` to every string the harness sends (see the module docstring for which).

    Patterns must compile (check them once with ``validate_rules``); an invalid one raises ``ValueError``.
    Each rule costs one linear search per match (RE2), whatever the pattern and the text.
    """
    if not rules:
        return request
    compiled = _compile(rules)

    def apply(text: str) -> str:
        for pattern, replacement in compiled:
            text = pattern.replace_all(text, replacement)  # literal: no group references, no escapes
        return text

    return msgspec.structs.replace(
        request,
        instructions=apply(request.instructions),
        messages=tuple(_normalize_message(message, apply) for message in request.messages),
    )


@lru_cache(maxsize=256)
def _compile(rules: Rules) -> tuple[tuple[LinearPattern, str], ...]:
    return tuple((_compiled(pattern), replacement) for pattern, replacement in rules)


def _compiled(pattern: str) -> LinearPattern:
    match compile_linear(pattern):
        case Success(LinearPattern() as compiled):
            return compiled
        case Failure(message):
            raise ValueError(f"replayNormalize pattern {pattern!r} was not validated: {message}")
    raise AssertionError("unreachable")  # mypy: the match above is exhaustive over Result


def _normalize_message(message: Message, apply: Callable[[str], str]) -> Message:
    match message:
        case SystemMessage(content=content) | UserMessage(content=content):
            return msgspec.structs.replace(message, content=apply(content))
        case AssistantMessage(content=content, tool_calls=calls):
            return msgspec.structs.replace(
                message,
                content=None if content is None else apply(content),
                tool_calls=tuple(
                    msgspec.structs.replace(call, arguments=apply(call.arguments)) for call in calls
                ),
            )
        case ToolMessage(content=content):
            return msgspec.structs.replace(message, content=apply(content))


# --- hashing ------------------------------------------------------------------------------------------


class _Hashed(Frozen, frozen=True, kw_only=True):
    version: str
    model: str
    instructions: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    max_output_tokens: int | None
    reasoning_effort: str | None


class _HashedCacheOff(_Hashed, frozen=True, kw_only=True):
    cache: bool


class _HashedSampled(_HashedCacheOff, frozen=True, kw_only=True):
    """A request with a sampling setting (added later: requests without one hash as they always did)."""

    temperature: float | None
    top_p: float | None
    seed: int | None


class _AssistantV1(Frozen, frozen=True, kw_only=True, tag="assistant", tag_field="role"):
    """An assistant message as version 1 hashed it (before reasoning blocks existed)."""

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str | None = None


_ENCODER = msgspec.json.Encoder(order="deterministic")
_MESSAGES_KEY = b'"messages":['


def fingerprint(request: ProviderRequest) -> str:
    """The sha256 hex digest of what the provider receives; pass a request ``normalize_request`` returned."""
    return ConversationHash.start(request).extended(request.messages).fingerprint(request)


class ConversationHash:
    """A fingerprint computed incrementally over a conversation that only grows.

    ``fingerprint`` hashes the bytes ``head + b",".join(encoded messages) + tail`` of the ``_Hashed`` encoding,
    where ``head`` ends with ``"messages":[`` (model and instructions come before the messages) and ``tail``
    starts with ``]`` (tools and limits come after). sha256 is a stream, so the state after the messages hashed
    so far can be kept, copied and extended: a main loop that appends two messages per turn hashes only those
    two, not the whole conversation, and the digest is byte for byte the one ``fingerprint`` gives (it is how
    ``fingerprint`` is computed).

    A value: ``extended`` returns a new hash and never changes this one. Use it only while the model and the
    instructions stay the same and messages are only appended; ``fingerprint`` raises ``ValueError`` (a bug in
    the caller) when the request does not match what was hashed.
    """

    __slots__ = ("_count", "_instructions", "_model", "_state")

    def __init__(self, state: _Sha256, model: str, instructions: str, count: int) -> None:
        self._state = state
        self._model = model
        self._instructions = instructions
        self._count = count

    @property
    def count(self) -> int:
        """How many messages are hashed."""
        return self._count

    @classmethod
    def start(cls, request: ProviderRequest) -> ConversationHash:
        """The hash of ``request``'s model and instructions, with no message yet."""
        head = _head_and_tail(request)[0]
        return cls(hashlib.sha256(head), request.model, request.instructions, 0)

    def extended(self, messages: Sequence[Message]) -> ConversationHash:
        """A new hash with ``messages`` appended to the conversation."""
        if not messages:
            return self
        state = self._state.copy()
        encoded = b",".join(_ENCODER.encode(_without_reasoning(message)) for message in messages)
        state.update(b"," + encoded if self._count else encoded)
        return ConversationHash(state, self._model, self._instructions, self._count + len(messages))

    def matches(self, request: ProviderRequest) -> bool:
        """Whether ``request`` has the model and instructions hashed, and at least ``count`` messages."""
        return (
            request.model == self._model
            and request.instructions == self._instructions
            and len(request.messages) >= self._count
        )

    def fingerprint(self, request: ProviderRequest) -> str:
        """The fingerprint of ``request``, whose first ``count`` messages (all of them) are the ones hashed.

        Only the model, the instructions and the message count are checked (comparing every message would
        cost what this saves); the caller keeps the messages in step.
        """
        if not self.matches(request) or len(request.messages) != self._count:
            raise ValueError("ConversationHash.fingerprint: the request is not the conversation hashed")
        state = self._state.copy()
        state.update(_head_and_tail(request)[1])
        return state.hexdigest()


def _head_and_tail(request: ProviderRequest) -> tuple[bytes, bytes]:
    """The ``_Hashed`` encoding of ``request`` without messages, cut where the messages go.

    The cut is the first ``"messages":[``: model, instructions and the version are JSON strings before it, in
    which every quote is escaped, so the key is the first place those bytes appear.
    """
    fields = {
        "version": FINGERPRINT_VERSION,
        "model": request.model,
        "instructions": request.instructions,
        "messages": (),
        "tools": request.tools,
        "max_output_tokens": request.max_output_tokens,
        "reasoning_effort": request.reasoning_effort,
    }
    sampling = {"temperature": request.temperature, "top_p": request.top_p, "seed": request.seed}
    hashed: _Hashed
    if any(value is not None for value in sampling.values()):
        hashed = _HashedSampled(**fields, cache=request.cache, **sampling)  # type: ignore[arg-type]
    else:
        hashed = _Hashed(**fields) if request.cache else _HashedCacheOff(**fields, cache=False)  # type: ignore[arg-type]
    empty = _ENCODER.encode(hashed)
    cut = empty.index(_MESSAGES_KEY) + len(_MESSAGES_KEY)
    return empty[:cut], empty[cut:]


def _without_reasoning(message: Message) -> Message | _AssistantV1:
    if not isinstance(message, AssistantMessage):
        return message
    if not message.reasoning_blocks:
        return _AssistantV1(content=message.content, tool_calls=message.tool_calls)
    return msgspec.structs.replace(message, reasoning=None)


# --- divergence ---------------------------------------------------------------------------------------


def first_difference(recorded: ProviderRequest, actual: ProviderRequest) -> Divergence | None:
    """The first field (in the order below) where ``actual`` differs from ``recorded``, or ``None``.

    Order: ``model``, ``reasoning_effort``, ``max_output_tokens``, ``instructions``, ``tools`` (a missing,
    added or reordered tool, then ``tools[NAME].description`` / ``.parameters``), ``messages`` (0-based over
    the conversation, the instructions excluded: ``messages[i].role``, ``messages[i].content``,
    ``messages[i].tool_calls[j].name|arguments|id``, ``messages[i].tool.result|name|call_id``, then a
    missing or extra message as ``messages[i]``). Assistant reasoning and ``purpose`` are ignored, as in
    ``fingerprint``. Both requests should be normalised with the same rules first.
    """
    for field, expected, got in (
        ("model", recorded.model, actual.model),
        ("reasoning_effort", recorded.reasoning_effort, actual.reasoning_effort),
        ("max_output_tokens", recorded.max_output_tokens, actual.max_output_tokens),
        ("cache", recorded.cache, actual.cache),
        ("instructions", recorded.instructions, actual.instructions),
    ):
        if expected != got:
            return _divergence(field, expected, got)
    return _tools_difference(recorded.tools, actual.tools) or _messages_difference(
        recorded.messages, actual.messages
    )


def _tools_difference(recorded: Sequence[ToolSpec], actual: Sequence[ToolSpec]) -> Divergence | None:
    recorded_names = [tool.name for tool in recorded]
    actual_names = [tool.name for tool in actual]
    for name in recorded_names:
        if name not in actual_names:
            return Divergence(field=f"tools[{name}]", expected_excerpt="(present)", actual_excerpt="(absent)")
    for name in actual_names:
        if name not in recorded_names:
            return Divergence(field=f"tools[{name}]", expected_excerpt="(absent)", actual_excerpt="(present)")
    if recorded_names != actual_names:
        return _divergence("tools", ", ".join(recorded_names), ", ".join(actual_names))
    for old, new in zip(recorded, actual, strict=True):
        if old.description != new.description:
            return _divergence(f"tools[{old.name}].description", old.description, new.description)
        if old.parameters_json != new.parameters_json:
            return _divergence(f"tools[{old.name}].parameters", old.parameters_json, new.parameters_json)
    return None


def _messages_difference(recorded: Sequence[Message], actual: Sequence[Message]) -> Divergence | None:
    for index, (old, new) in enumerate(zip(recorded, actual, strict=False)):
        found = _message_difference(f"messages[{index}]", old, new)
        if found is not None:
            return found
    if len(recorded) != len(actual):
        index = min(len(recorded), len(actual))
        expected = _summary(recorded[index]) if index < len(recorded) else "(no message)"
        got = _summary(actual[index]) if index < len(actual) else "(no message)"
        return Divergence(field=f"messages[{index}]", expected_excerpt=expected, actual_excerpt=got)
    return None


def _message_difference(path: str, old: Message, new: Message) -> Divergence | None:
    match old, new:
        case (SystemMessage() | UserMessage(), SystemMessage() | UserMessage()) if type(old) is type(new):
            return _first_of(((f"{path}.content", old.content, new.content),))
        case (AssistantMessage(), AssistantMessage()):
            blocks = (f"{path}.reasoning_blocks", _blocks(old), _blocks(new))
            return _first_of(((f"{path}.content", old.content, new.content), blocks)) or _calls_difference(
                path, old.tool_calls, new.tool_calls
            )
        case (ToolMessage(), ToolMessage()):
            return _first_of(
                (
                    (f"{path}.tool.call_id", old.tool_call_id, new.tool_call_id),
                    (f"{path}.tool.name", old.name, new.name),
                    (f"{path}.tool.result", old.content, new.content),
                )
            )
    return Divergence(field=f"{path}.role", expected_excerpt=_role(old), actual_excerpt=_role(new))


def _blocks(message: AssistantMessage) -> str:
    """The reasoning blocks as the fingerprint hashes them: each one's kind and wire (a block of another kind
    with the same wire is another request)."""
    return "\n".join(f"{block.kind}: {block.wire}" for block in message.reasoning_blocks)


def _calls_difference(
    path: str, recorded: tuple[ToolCall, ...], actual: tuple[ToolCall, ...]
) -> Divergence | None:
    for index, (old, new) in enumerate(zip(recorded, actual, strict=False)):
        call = f"{path}.tool_calls[{index}]"
        found = _first_of(
            (
                (f"{call}.name", old.name, new.name),
                (f"{call}.arguments", old.arguments, new.arguments),
                (f"{call}.id", old.id, new.id),
            )
        )
        if found is not None:
            return found
    if len(recorded) != len(actual):
        return _divergence(f"{path}.tool_calls", plural(len(recorded), "call"), plural(len(actual), "call"))
    return None


def _first_of(fields: tuple[tuple[str, object, object], ...]) -> Divergence | None:
    for field, expected, got in fields:
        if expected != got:
            return _divergence(field, expected, got)
    return None


def _divergence(field: str, expected: object, got: object) -> Divergence:
    if isinstance(expected, str) and isinstance(got, str):
        old, new = _excerpts(expected, got)
        return Divergence(
            field=field, expected_excerpt=old, actual_excerpt=new, changed=changed_lines(expected, got)
        )
    return Divergence(field=field, expected_excerpt=_show(expected), actual_excerpt=_show(got))


CHANGED_LINES = 6
"""Lines of a file's change a divergence shows at most."""
_DIGEST_LINE = re.compile(r"\b[0-9a-f]{64}\b")


def changed_lines(old: str, new: str) -> tuple[str, ...]:
    """The first lines that differ after a hash, when the first difference of ``old`` and ``new`` is on a line
    holding a sha256 (a ``read_file`` header): the file changed, and its lines say how. ``-`` lines are the
    recording's, ``+`` lines now's, each cut at ``2 * EXCERPT_CONTEXT`` characters; empty when the first
    difference is elsewhere or no other line differs (the recording kept the hash alone)."""
    at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
    start = old.rfind("\n", 0, at) + 1
    end = old.find("\n", at)
    if not _DIGEST_LINE.search(old[start : len(old) if end < 0 else end]):
        return ()
    rest_old, rest_new = old[start:].splitlines()[1:], new[start:].splitlines()[1:]
    hunks = list(difflib.unified_diff(rest_old, rest_new, lineterm="", n=0))[2:]  # past the file headers
    diff = [line for line in hunks if not line.startswith("@@")]
    return tuple(_short(line) for line in diff[:CHANGED_LINES])


def _excerpts(old: str, new: str) -> tuple[str, str]:
    """Both strings cut to ``EXCERPT_CONTEXT`` characters around their first differing character."""
    at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
    start = max(0, at - EXCERPT_CONTEXT)

    def cut(text: str) -> str:
        end = at + EXCERPT_CONTEXT
        head = "…" if start > 0 else ""
        tail = "…" if end < len(text) else ""
        return head + text[start:end] + tail

    return cut(old), cut(new)


def _show(value: object) -> str:
    return "(none)" if value is None else str(value)


def _role(message: Message) -> str:
    return type(message).__name__.removesuffix("Message").lower()


def _summary(message: Message) -> str:
    match message:
        case AssistantMessage(content=content, tool_calls=calls) if calls:
            names = ", ".join(call.name for call in calls)
            return f"assistant: {_short(content or '')} [tool calls: {names}]"
        case ToolMessage(name=name, content=content):
            return f"tool {name}: {_short(content)}"
        case _:
            return f"{_role(message)}: {_short(message.content or '')}"


def _short(text: str) -> str:
    limit = 2 * EXCERPT_CONTEXT
    return text if len(text) <= limit else text[:limit] + "…"
