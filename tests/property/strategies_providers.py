"""Hypothesis strategies for provider requests and responses (alisio.core.harness.protocol, alisio.core.harness.sse, alisio.core.replay.fingerprint)."""

from __future__ import annotations

import itertools
import json
from typing import Any, TypeVar

from hypothesis import strategies as st

from alisio.core.harness.protocol import (
    AssistantMessage,
    FinishEvent,
    Message,
    ProviderRequest,
    ReasoningBlock,
    ReasoningDelta,
    StreamErrorEvent,
    StreamEvent,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolMessage,
    ToolSpec,
    Usage,
    UsageEvent,
    UserMessage,
)

# A small alphabet makes near-identical requests (and so subtle differences) common.
small_text = st.text(alphabet='ab c\n{}"é😊', max_size=12)
names = st.sampled_from(["read_file", "edit_file", "bash", "search", "list_dir"])
call_ids = st.text(alphabet="abc_01", min_size=1, max_size=6)

tool_calls = st.builds(ToolCall, id=call_ids, name=names, arguments=small_text)

messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(UserMessage, content=small_text),
    st.builds(SystemMessage, content=small_text),
    st.builds(
        AssistantMessage,
        content=st.none() | small_text,
        tool_calls=st.lists(tool_calls, max_size=3).map(tuple),
        reasoning=st.none() | small_text,
        reasoning_blocks=st.lists(
            st.builds(
                ReasoningBlock, kind=st.sampled_from(["thinking", "reasoning"]), wire=st.just('{"a":1}')
            ),
            max_size=1,
        ).map(tuple),
    ),
    st.builds(ToolMessage, tool_call_id=call_ids, name=names, content=small_text),
)

schemas = st.dictionaries(
    st.sampled_from(["path", "offset", "command", "pattern"]),
    st.sampled_from([{"type": "string"}, {"type": "integer"}]),
    max_size=3,
).map(
    lambda props: json.dumps({"type": "object", "properties": props}, sort_keys=True, separators=(",", ":"))
)


@st.composite
def tool_specs(draw: st.DrawFn) -> tuple[ToolSpec, ...]:
    chosen = draw(st.lists(names, unique=True, max_size=4))
    return tuple(
        ToolSpec(name=name, description=draw(small_text), parameters_json=draw(schemas)) for name in chosen
    )


requests = st.builds(
    ProviderRequest,
    model=st.sampled_from(["m1", "m2", "gpt-x"]),
    instructions=small_text,
    messages=st.lists(messages, max_size=6).map(tuple),
    tools=tool_specs(),
    max_output_tokens=st.none() | st.integers(1, 5000),
    reasoning_effort=st.none() | st.sampled_from(["low", "high"]),
    purpose=st.sampled_from(["main", "compaction"]),
)

# Rules whose patterns can never match inside any replacement (digits, hex, fixed prefixes), so applying them
# twice changes nothing: the shape of real rules (timestamps, PIDs, run ids, workspace paths).
SAFE_RULES = (
    (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z", "<TIMESTAMP>"),
    (r"pid \d+", "pid <PID>"),
    (r"/tmp/alisio-run-[0-9a-f]+", "<workspace>"),
    (r"run_[0-9a-f]{8}", "<RUN_ID>"),
)
safe_rules = st.lists(st.sampled_from(SAFE_RULES), unique=True, max_size=4).map(tuple)

NOISE_SHAPES = (
    lambda n: f"2026-{n % 12 + 1:02d}-{n % 28 + 1:02d}T10:{n % 60:02d}:00Z",
    lambda n: f"pid {n}",
    lambda n: f"/tmp/alisio-run-{n:x}",
    lambda n: f"run_{n % 2**32:08x}",
)
"""Per-run noise shapes; each is normalised by exactly one of ``SAFE_RULES``."""

noise = st.builds(lambda shape, n: shape(n), st.sampled_from(NOISE_SHAPES), st.integers(0, 2**40))
noise_pairs = st.builds(
    lambda shape, a, b: (shape(a), shape(b)),
    st.sampled_from(NOISE_SHAPES),
    st.integers(0, 2**40),
    st.integers(0, 2**40),
)
"""The same kind of noise from two different runs."""


def split_text(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut into consecutive fragments at drawn positions."""
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=4))))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


# --- streams for alisio.core.harness.protocol.assemble -------------------------------------------------------------------

usages = st.builds(
    Usage,
    input_tokens=st.none() | st.integers(0, 10_000),
    output_tokens=st.none() | st.integers(0, 10_000),
    total_tokens=st.none() | st.integers(0, 20_000),
    cached_input_tokens=st.none() | st.integers(0, 10_000),
    reasoning_tokens=st.none() | st.integers(0, 10_000),
)
finish_reasons = st.sampled_from(["stop", "tool_calls", "length", "content_filter"])
stream_errors = st.builds(
    StreamErrorEvent, message=small_text, code=st.none() | st.sampled_from(["rate_limit", "server_error"])
)
plain_events: st.SearchStrategy[StreamEvent] = st.one_of(
    st.builds(TextDelta, text=small_text),
    st.builds(ReasoningDelta, text=small_text),
    st.builds(UsageEvent, usage=usages),
    st.builds(FinishEvent, reason=finish_reasons),
)
"""Every event kind but tool-call fragments and errors (which the tests place on purpose)."""

Item = TypeVar("Item")


def interleave(draw: st.DrawFn, sequences: list[list[Item]]) -> list[Item]:
    """One drawn merge of ``sequences`` that keeps the order within each of them."""
    pending = [list(reversed(sequence)) for sequence in sequences if sequence]
    merged: list[Item] = []
    while pending:
        chosen = draw(st.integers(0, len(pending) - 1))
        merged.append(pending[chosen].pop())
        if not pending[chosen]:
            del pending[chosen]
    return merged


@st.composite
def fragmented_calls(draw: st.DrawFn) -> tuple[tuple[int, str | None, str | None, str], list[ToolCallDelta]]:
    """One tool call at a drawn index cut into fragments, with the ``(index, id, name, arguments)`` it means.

    The id and the name each arrive on a drawn fragment (or never); a later fragment may repeat the same
    id and name, as some providers do. ``id``/``name`` in the expectation are ``None`` when never sent.
    """
    index = draw(st.integers(0, 6))
    arguments = draw(small_text)
    pieces = split_text(draw, arguments) or [""]
    call_id = draw(st.none() | call_ids)
    name = draw(st.none() | names)
    id_at = draw(st.integers(0, len(pieces) - 1))
    name_at = draw(st.integers(0, len(pieces) - 1))
    repeat = draw(st.booleans()) and call_id is not None and name is not None
    fragments = [
        ToolCallDelta(
            index=index,
            id=call_id if n == id_at or (repeat and n > max(id_at, name_at)) else None,
            name=name if n == name_at or (repeat and n > max(id_at, name_at)) else None,
            arguments=piece,
        )
        for n, piece in enumerate(pieces)
    ]
    return (index, call_id, name, arguments), fragments


@st.composite
def tool_call_streams(
    draw: st.DrawFn,
) -> tuple[tuple[tuple[int, str | None, str | None, str], ...], tuple[StreamEvent, ...]]:
    """Calls at distinct indexes, their fragments interleaved with other events, and a finish at the end."""
    drawn = draw(st.lists(fragmented_calls(), max_size=4, unique_by=lambda call: call[0][0]))
    others = draw(st.lists(plain_events.filter(lambda e: not isinstance(e, FinishEvent)), max_size=4))
    sequences: list[list[StreamEvent]] = [list(fragments) for _, fragments in drawn]
    merged = interleave(draw, [*sequences, others])
    expected = tuple(sorted((meaning for meaning, _ in drawn), key=lambda meaning: meaning[0]))
    return expected, (*merged, FinishEvent(reason="tool_calls"))


# --- Gemini -------------------------------------------------------------------------------------------

ARGS = st.dictionaries(st.sampled_from(["path", "command", "n"]), st.integers(0, 9) | small_text, max_size=3)
SIGNATURES = st.none() | st.text(alphabet="ABCabc012+/=", min_size=1, max_size=12)


@st.composite
def gemini_answers(
    draw: st.DrawFn,
) -> tuple[list[dict[str, Any]], str, list[tuple[str, dict[str, Any], str | None]]]:
    """A Gemini answer's parts (thoughts, text pieces, signed or unsigned calls), the text, and the calls."""
    parts: list[dict[str, Any]] = []
    for thought in draw(st.lists(small_text.filter(bool), max_size=2)):
        parts.append({"text": thought, "thought": True})
    pieces = draw(st.lists(small_text, max_size=3))
    parts += [{"text": piece} for piece in pieces]
    calls = draw(st.lists(st.tuples(names, ARGS, SIGNATURES), max_size=3))
    for name, args, signature in calls:
        part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
        if signature:
            part["thoughtSignature"] = signature
        parts.append(part)
    return parts, "".join(pieces), calls
