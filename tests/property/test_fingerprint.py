"""Properties of alisio.core.replay.fingerprint: normalisation is idempotent, the hash sees exactly what the provider receives,
and ``first_difference`` agrees with the hash and names the field."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import msgspec
from hypothesis import assume, given
from hypothesis import strategies as st

from alisio.core.harness.protocol import (
    AssistantMessage,
    ProviderRequest,
    ReasoningBlock,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from alisio.core.replay.fingerprint import (
    FINGERPRINT_VERSION,
    ConversationHash,
    _AssistantV1,
    _Hashed,
    fingerprint,
    first_difference,
    normalize_request,
    path_rules,
    validate_rules,
)
from tests.property.strategies_providers import (
    SAFE_RULES,
    noise,
    noise_pairs,
    requests,
    safe_rules,
    small_text,
)


def with_noise(request: ProviderRequest, chunks: list[str]) -> ProviderRequest:
    """The request with per-run noise woven into its instructions and every message body."""
    tag = " ".join(chunks)
    messages = []
    for message in request.messages:
        if isinstance(message, AssistantMessage):
            calls = tuple(msgspec.structs.replace(c, arguments=c.arguments + tag) for c in message.tool_calls)
            messages.append(msgspec.structs.replace(message, tool_calls=calls))
        else:
            messages.append(msgspec.structs.replace(message, content=message.content + tag))
    return msgspec.structs.replace(request, instructions=request.instructions + tag, messages=tuple(messages))


@given(requests, safe_rules, st.lists(noise, max_size=3))
def test_normalize_is_idempotent(request: ProviderRequest, rules: Any, chunks: list[str]) -> None:
    """Normalising twice is normalising once."""
    once = normalize_request(with_noise(request, chunks), rules)
    assert normalize_request(once, rules) == once


@given(requests, st.lists(noise_pairs, min_size=1, max_size=3))
def test_fingerprint_ignores_what_the_rules_normalise(
    request: ProviderRequest, pairs: list[tuple[str, str]]
) -> None:
    """Two runs that differ only in timestamps, PIDs, run ids and workspace paths hash the same."""
    a = normalize_request(with_noise(request, [first for first, _ in pairs]), SAFE_RULES)
    b = normalize_request(with_noise(request, [second for _, second in pairs]), SAFE_RULES)
    assert fingerprint(a) == fingerprint(b)
    assert first_difference(a, b) is None


@given(requests, st.lists(noise_pairs, min_size=1, max_size=3))
def test_without_rules_the_noise_shows(request: ProviderRequest, pairs: list[tuple[str, str]]) -> None:
    """The same two runs without normalisation hash differently (the rules are what makes them equal)."""
    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    assume(first != second)
    assert fingerprint(with_noise(request, first)) != fingerprint(with_noise(request, second))


@given(requests)
def test_fingerprint_ignores_reasoning_and_purpose(request: ProviderRequest) -> None:
    """Reasoning is never sent back and purpose is not sent at all: neither changes the hash."""
    stripped = msgspec.structs.replace(
        request,
        purpose="main",
        messages=tuple(
            msgspec.structs.replace(m, reasoning=None) if isinstance(m, AssistantMessage) else m
            for m in request.messages
        ),
    )
    assert fingerprint(stripped) == fingerprint(request)
    assert first_difference(stripped, request) is None


def mutations(request: ProviderRequest) -> st.SearchStrategy[tuple[str, ProviderRequest]]:
    """One relevant field changed, with the field path ``first_difference`` must report."""
    options: list[st.SearchStrategy[tuple[str, ProviderRequest]]] = [
        st.just(("model", msgspec.structs.replace(request, model=request.model + "-new"))),
        st.just(("instructions", msgspec.structs.replace(request, instructions=request.instructions + "!"))),
        st.just(
            (
                "max_output_tokens",
                msgspec.structs.replace(request, max_output_tokens=(request.max_output_tokens or 0) + 1),
            )
        ),
        st.just(
            (
                "reasoning_effort",
                msgspec.structs.replace(request, reasoning_effort=(request.reasoning_effort or "") + "x"),
            )
        ),
        st.just(("messages[" + str(len(request.messages)) + "]", _appended(request))),
    ]
    for index, tool in enumerate(request.tools):
        changed = msgspec.structs.replace(tool, description=tool.description + " (changed)")
        tools = (*request.tools[:index], changed, *request.tools[index + 1 :])
        options.append(
            st.just((f"tools[{tool.name}].description", msgspec.structs.replace(request, tools=tools)))
        )
    for index, message in enumerate(request.messages):
        path = f"messages[{index}]"
        if isinstance(message, ToolMessage):
            changed_message: Any = msgspec.structs.replace(message, content=message.content + "?")
            path += ".tool.result"
        elif isinstance(message, AssistantMessage) and message.tool_calls:
            call = message.tool_calls[0]
            calls = (msgspec.structs.replace(call, arguments=call.arguments + " "), *message.tool_calls[1:])
            changed_message = msgspec.structs.replace(message, tool_calls=calls)
            path += ".tool_calls[0].arguments"
        elif isinstance(message, AssistantMessage):
            changed_message = msgspec.structs.replace(message, content=(message.content or "") + "?")
            path += ".content"
        else:
            changed_message = msgspec.structs.replace(message, content=message.content + "?")
            path += ".content"
        messages = (*request.messages[:index], changed_message, *request.messages[index + 1 :])
        options.append(st.just((path, msgspec.structs.replace(request, messages=messages))))
    return st.one_of(options)


def _appended(request: ProviderRequest) -> ProviderRequest:
    return msgspec.structs.replace(request, messages=(*request.messages, UserMessage(content="more")))


@given(st.data(), requests)
def test_fingerprint_changes_when_a_relevant_field_changes(
    data: st.DataObject, request: ProviderRequest
) -> None:
    """Changing the model, instructions, limit, effort, a tool description, a message or a tool result changes
    the hash, and ``first_difference`` names exactly that field."""
    path, changed = data.draw(mutations(request))
    assert fingerprint(changed) != fingerprint(request)
    divergence = first_difference(request, changed)
    assert divergence is not None
    assert divergence.field == path
    assert divergence.expected_excerpt != divergence.actual_excerpt


@given(requests, requests)
def test_first_difference_agrees_with_the_fingerprint(a: ProviderRequest, b: ProviderRequest) -> None:
    """Two requests hash the same exactly when ``first_difference`` finds nothing."""
    assert (fingerprint(a) == fingerprint(b)) == (first_difference(a, b) is None)


def test_a_reasoning_block_of_another_kind_is_a_difference() -> None:
    """The same wire under another kind (a ``thinking`` block replayed as a ``reasoning`` item) hashes apart,
    and ``first_difference`` names the blocks (it compared the wires alone)."""

    def request(kind: str) -> ProviderRequest:
        block = ReasoningBlock(kind=kind, wire='{"a":1}')
        message = AssistantMessage(content=None, tool_calls=(), reasoning_blocks=(block,))
        return ProviderRequest(model="m", instructions="", messages=(message,), tools=(), max_output_tokens=1)

    divergence = first_difference(request("thinking"), request("reasoning"))
    assert fingerprint(request("thinking")) != fingerprint(request("reasoning"))
    assert divergence is not None and divergence.field == "messages[0].reasoning_blocks"


@given(requests)
def test_first_difference_of_a_request_with_itself_is_none(request: ProviderRequest) -> None:
    """A request never diverges from itself, and its fingerprint is a sha256 hex digest."""
    assert first_difference(request, request) is None
    assert re.fullmatch(r"[0-9a-f]{64}", fingerprint(request))


@given(small_text, small_text, small_text)
def test_excerpts_surround_the_first_difference(prefix: str, old: str, new: str) -> None:
    """The excerpts are cut around the first differing character, which both show."""
    assume(old[:1] != new[:1])
    base = ProviderRequest(model="m", instructions=prefix * 20 + old, messages=())
    other = msgspec.structs.replace(base, instructions=prefix * 20 + new)
    divergence = first_difference(base, other)
    assert divergence is not None and divergence.field == "instructions"
    assert old[:1] in divergence.expected_excerpt
    assert new[:1] in divergence.actual_excerpt
    assert len(divergence.expected_excerpt) <= 82
    assert len(divergence.actual_excerpt) <= 82


def test_spec_field_paths() -> None:
    """The paths the spec prints: tools[edit_file].description and messages[3].tool.result."""
    edit = ToolSpec(name="edit_file", description="Edit a file.", parameters_json="{}")
    messages = (
        UserMessage(content="fix"),
        AssistantMessage(tool_calls=(ToolCall(id="c1", name="read_file", arguments='{"path":"a"}'),)),
        ToolMessage(tool_call_id="c1", name="read_file", content="x = 1"),
        ToolMessage(tool_call_id="c1", name="read_file", content="run at 10:00"),
    )
    recorded = ProviderRequest(model="m", instructions="i", messages=messages, tools=(edit,))
    described = msgspec.structs.replace(
        recorded, tools=(msgspec.structs.replace(edit, description="Edit one file."),)
    )
    divergence = first_difference(recorded, described)
    assert divergence is not None
    assert (divergence.field, divergence.expected_excerpt, divergence.actual_excerpt) == (
        "tools[edit_file].description",
        "Edit a file.",
        "Edit one file.",
    )
    result = msgspec.structs.replace(
        recorded, messages=(*messages[:3], msgspec.structs.replace(messages[3], content="run at 10:01"))
    )
    divergence = first_difference(recorded, result)
    assert divergence is not None and divergence.field == "messages[3].tool.result"
    assert str(divergence) == "messages[3].tool.result: expected 'run at 10:00', got 'run at 10:01'"
    missing = msgspec.structs.replace(recorded, tools=())
    divergence = first_difference(recorded, missing)
    assert divergence is not None and divergence.field == "tools[edit_file]"


def test_replacement_is_literal_and_paths_become_workspace() -> None:
    """A replacement is inserted literally (no group references); workspace paths, longest first, become
    ``<workspace>``; an invalid pattern is reported by validate_rules."""
    rules = (*path_rules("/tmp/run-1", "/private/tmp/run-1/"), (r"(\d+) files", r"\1 <N>"))
    request = ProviderRequest(
        model="m",
        instructions="cwd /private/tmp/run-1/src and /tmp/run-1/a, 12 files",
        messages=(ToolMessage(tool_call_id="c", name="bash", content="/tmp/run-1/x"),),
    )
    normalized = normalize_request(request, rules)
    assert normalized.instructions == r"cwd <workspace>/src and <workspace>/a, \1 <N>"
    assert normalized.messages[0] == ToolMessage(tool_call_id="c", name="bash", content="<workspace>/x")
    assert validate_rules(rules).unwrap() == rules
    assert (
        str(validate_rules((("(oops", "x"),)).failure())
        == "replayNormalize pattern '(oops': missing ): (oops"
    )


def test_fingerprint_is_stable_across_versions() -> None:
    """The hash of a fixed request is pinned: a change here invalidates every recorded cassette."""
    request = ProviderRequest(
        model="gpt-x",
        instructions="Be careful.",
        messages=(
            UserMessage(content="fix add"),
            AssistantMessage(
                content=None, tool_calls=(ToolCall(id="call_1_1", name="read_file", arguments="{}"),)
            ),
            ToolMessage(tool_call_id="call_1_1", name="read_file", content="def add(a, b): return a - b"),
        ),
        tools=(ToolSpec(name="read_file", description="Read a file.", parameters_json='{"type":"object"}'),),
        max_output_tokens=1024,
        reasoning_effort="low",
    )
    assert fingerprint(request) == PINNED
    assert one_shot_fingerprint(request) == PINNED


def _as_hashed(message: Any) -> Any:
    """An assistant message as hashed: its reasoning text dropped; without reasoning blocks, the version 1
    shape (so cassettes recorded before reasoning blocks existed keep their fingerprints)."""
    if not isinstance(message, AssistantMessage):
        return message
    if not message.reasoning_blocks:
        return _AssistantV1(content=message.content, tool_calls=message.tool_calls)
    return msgspec.structs.replace(message, reasoning=None)


def one_shot_fingerprint(request: ProviderRequest) -> str:
    """The reference: sha256 of the whole request encoded at once (what ``fingerprint`` must always equal)."""
    hashed = _Hashed(
        version=FINGERPRINT_VERSION,
        model=request.model,
        instructions=request.instructions,
        messages=tuple(_as_hashed(m) for m in request.messages),
        tools=request.tools,
        max_output_tokens=request.max_output_tokens,
        reasoning_effort=request.reasoning_effort,
    )
    return hashlib.sha256(msgspec.json.Encoder(order="deterministic").encode(hashed)).hexdigest()


@given(requests, st.lists(st.integers(min_value=0, max_value=4), max_size=6))
def test_the_incremental_hash_equals_the_one_shot_hash_at_every_step(
    request: ProviderRequest, steps: list[int]
) -> None:
    """Extending a conversation hash message by message (any grouping) gives the one-shot fingerprint each time."""
    chain = ConversationHash.start(request)
    at = 0
    for step in [*steps, len(request.messages)]:
        end = min(len(request.messages), at + step)
        chain = chain.extended(request.messages[at:end])
        at = end
        prefix = msgspec.structs.replace(request, messages=request.messages[:at])
        assert chain.fingerprint(prefix) == one_shot_fingerprint(prefix) == fingerprint(prefix)
    assert chain.count == len(request.messages)


@given(requests)
def test_a_conversation_hash_refuses_a_request_it_did_not_hash(request: ProviderRequest) -> None:
    """Another model, other instructions or a different message count is a ValueError, never a wrong digest."""
    chain = ConversationHash.start(request).extended(request.messages)
    for other in (
        msgspec.structs.replace(request, model=request.model + "x"),
        msgspec.structs.replace(request, instructions=request.instructions + "x"),
        msgspec.structs.replace(request, messages=(*request.messages, UserMessage(content="more"))),
    ):
        try:
            chain.fingerprint(other)
        except ValueError:
            continue
        raise AssertionError("a request that was not hashed got a fingerprint")


PINNED = "e84bf3641119847f0e6df2560ad965724f96887a07a3748801d63098f6343c65"


def test_the_messages_key_inside_strings_does_not_move_the_cut() -> None:
    """Instructions, a model and contents that spell ``"messages":[`` still hash as the one-shot encoding."""
    tricky = '"messages":[] \\"messages\\":['
    request = ProviderRequest(
        model=tricky,
        instructions=tricky,
        messages=(UserMessage(content=tricky), AssistantMessage(content=tricky, reasoning="r")),
        tools=(ToolSpec(name="t", description=tricky, parameters_json=tricky),),
    )
    assert fingerprint(request) == one_shot_fingerprint(request)
