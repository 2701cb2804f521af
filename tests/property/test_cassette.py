"""Properties of alisio.core.replay.cassette: cassettes round-trip byte for byte, replay matches exactly what was recorded,
and every other request, extra call or missing call is a divergence that names the first differing field."""

from __future__ import annotations

import msgspec
from hypothesis import assume, given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.harness.protocol import ProviderRequest, ToolSpec, UserMessage
from alisio.core.lab.runs.records import Divergence, Measured, RunRecord, RunStatus
from alisio.core.replay.cassette import (
    MAX_CASSETTE_BYTES,
    MAX_DIRECTORY_BYTES,
    REPLAY_DIVERGENCE,
    Cassette,
    CassetteError,
    CassetteHeader,
    decode_cassette,
    divergence_message,
    encode_cassette,
    match_call,
    size_problem,
    unplayed,
    with_divergence,
)
from alisio.core.replay.fingerprint import first_difference
from tests.property.strategies_cassette import cassettes, recorded_call
from tests.property.strategies_providers import requests, small_text


@given(cassettes())
def test_round_trip(cassette: Cassette) -> None:
    """decode(encode(c)) is c, and encoding the decoded cassette gives the same bytes."""
    data = encode_cassette(cassette)
    decoded = decode_cassette(data, "c.jsonl")
    assert decoded == Success(cassette)
    assert encode_cassette(decoded.unwrap()) == data


@given(cassettes())
def test_one_header_line_then_one_line_per_call(cassette: Cassette) -> None:
    """The JSONL has a header line and one line per call; the header names cassette/v1 and has no timestamp."""
    lines = encode_cassette(cassette).splitlines()
    assert len(lines) == 1 + len(cassette.calls)
    header = msgspec.json.decode(lines[0])
    assert header["format"] == "cassette/v1"
    assert set(header) == {
        "format",
        "suiteId",
        "suiteVersion",
        "taskId",
        "configHash",
        "harnessVersion",
        "model",
        "provider",
    }


@given(cassettes(min_calls=1), st.data())
def test_a_broken_line_is_named(cassette: Cassette, data: st.DataObject) -> None:
    """A call line that is not JSON fails with the file and its 1-based line number."""
    lines = encode_cassette(cassette).splitlines()
    broken = data.draw(st.integers(1, len(lines) - 1))
    lines[broken] = lines[broken][:-1]
    result = decode_cassette(b"\n".join(lines), "c.jsonl")
    assert isinstance(result, Failure)
    error = result.failure()
    assert isinstance(error, CassetteError) and error.line == broken + 1
    assert str(error).startswith(f"c.jsonl:{broken + 1}: ")


def test_a_missing_or_foreign_header_is_refused() -> None:
    """An empty file, a header of another format and calls out of order are errors, not cassettes."""
    assert isinstance(decode_cassette(b"", "e.jsonl"), Failure)
    other = b'{"format":"cassette/v2","suiteId":"s","suiteVersion":"1","taskId":"t","configHash":"h",'
    other += b'"harnessVersion":"0","model":"m","provider":"p"}\n'
    result = decode_cassette(other, "o.jsonl")
    assert isinstance(result, Failure) and result.failure().line == 1


@given(cassettes(min_calls=2))
def test_calls_out_of_order_are_refused(cassette: Cassette) -> None:
    """Swapping two call lines is an error at the first line out of order."""
    lines = encode_cassette(cassette).splitlines()
    lines[1], lines[2] = lines[2], lines[1]
    result = decode_cassette(b"\n".join(lines), "c.jsonl")
    assert isinstance(result, Failure) and result.failure().line == 2


@given(cassettes(min_calls=1), st.data())
def test_the_recorded_request_replays_its_events(cassette: Cassette, data: st.DataObject) -> None:
    """Each recorded request, asked at its own index, gets exactly its recorded events."""
    index = data.draw(st.integers(0, len(cassette.calls) - 1))
    call = cassette.calls[index]
    assert match_call(cassette, index, call.request) == Success(call.events)


@given(cassettes(min_calls=1), requests, st.data())
def test_a_different_request_names_the_first_differing_field(
    cassette: Cassette, actual: ProviderRequest, data: st.DataObject
) -> None:
    """A request that differs diverges at its index, at the field first_difference names, with its excerpts."""
    index = data.draw(st.integers(0, len(cassette.calls) - 1))
    recorded = cassette.calls[index].request
    expected = first_difference(recorded, actual)
    assume(expected is not None)
    assert expected is not None
    result = match_call(cassette, index, actual)
    assert isinstance(result, Failure)
    found = result.failure()
    assert found.call_index == index
    assert (found.field, found.expected, found.actual) == (
        expected.field,
        expected.expected_excerpt,
        expected.actual_excerpt,
    )


_HEADER = CassetteHeader(
    format="cassette/v1",
    suite_id="s",
    suite_version="1.0.0",
    task_id="t",
    config_hash="0" * 64,
    harness_version="0.1.0",
    model="m",
    provider="scripted",
)
TOOL = ToolSpec(name="edit_file", description="Replace one exact string.", parameters_json="{}")
BASE = ProviderRequest(
    model="m", instructions="Be careful.", messages=(UserMessage(content="Fix it."),), tools=(TOOL,)
)


@given(small_text.filter(lambda text: text != TOOL.description))
def test_a_changed_tool_description_is_named(description: str) -> None:
    """Changing a tool's description diverges at tools[edit_file].description, with both excerpts."""
    cassette = Cassette(header=_HEADER, calls=(recorded_call(0, BASE, ()),))
    changed = msgspec.structs.replace(BASE, tools=(msgspec.structs.replace(TOOL, description=description),))
    result = match_call(cassette, 0, changed)
    assert isinstance(result, Failure)
    assert result.failure().field == "tools[edit_file].description"
    assert result.failure().expected.startswith("Replace")


@given(cassettes(), requests)
def test_a_call_past_the_end_is_an_extra_call(cassette: Cassette, actual: ProviderRequest) -> None:
    """Asking for call N of a recording of N calls diverges at index N on ``calls``."""
    result = match_call(cassette, len(cassette.calls), actual)
    assert isinstance(result, Failure)
    found = result.failure()
    assert (found.call_index, found.field) == (len(cassette.calls), "calls")
    assert found.expected == f"{len(cassette.calls)} recorded calls"


@given(cassettes(), st.integers(0, 6))
def test_recorded_calls_never_made_diverge(cassette: Cassette, made: int) -> None:
    """A run that made fewer calls than recorded diverges at the first call it did not make; else none."""
    found = unplayed(cassette, made)
    if made >= len(cassette.calls):
        assert found is None
    else:
        assert found is not None
        assert (found.call_index, found.field) == (made, "calls")


@given(cassettes(min_calls=1))
def test_a_hand_edited_fingerprint_still_diverges(cassette: Cassette) -> None:
    """A recorded fingerprint that no longer matches its request diverges at ``fingerprint``."""
    call = cassette.calls[0]
    edited = msgspec.structs.replace(call, fingerprint="0" * 64)
    tampered = msgspec.structs.replace(cassette, calls=(edited, *cassette.calls[1:]))
    result = match_call(tampered, 0, call.request)
    assert isinstance(result, Failure) and result.failure().field == "fingerprint"


@given(st.integers(0, 2 * MAX_CASSETTE_BYTES), st.integers(0, 2 * MAX_DIRECTORY_BYTES))
def test_size_limits(cassette_bytes: int, directory_bytes: int) -> None:
    """A cassette is refused above 256 KB, a directory above 2 MB, and accepted at or under both."""
    problem = size_problem(cassette_bytes, directory_bytes)
    allowed = cassette_bytes <= 256 * 1024 and directory_bytes <= 2 * 1024 * 1024
    assert (problem is None) == allowed
    if cassette_bytes > 256 * 1024:
        assert problem is not None and "256.0 KB limit per cassette" in problem
    elif not allowed:
        assert problem is not None and "2048.0 KB limit per directory" in problem


@given(st.sampled_from(list(RunStatus)), st.lists(small_text, max_size=2).map(tuple))
def test_a_diverged_run_is_an_error_with_its_divergence(status: RunStatus, errors: tuple[str, ...]) -> None:
    """with_divergence makes any run error / replay_divergence, fills divergence and states it first, once."""
    record = RunRecord(
        task_id="t",
        repetition=0,
        seed=0,
        status=status,
        measured=Measured(wall_ms=1, turns=1, tool_calls=0, compactions=0, usage_complete=True),
        errors=(*errors, "replay diverged at call 2: model"),
    )
    divergence = Divergence(call_index=2, field="model", expected="a", actual="b")
    marked = with_divergence(record, divergence)
    assert (marked.status, marked.reason, marked.divergence) == (
        RunStatus.ERROR,
        REPLAY_DIVERGENCE,
        divergence,
    )
    assert marked.errors == ("replay diverged at call 2: model: expected 'a', got 'b'", *errors)
    assert with_divergence(marked, divergence) == marked


@given(st.integers(0, 50), small_text, small_text, small_text)
def test_divergence_message_is_one_line_naming_call_and_field(
    call: int, field: str, expected: str, actual: str
) -> None:
    """``call N: field: expected '…', got '…'`` on one line, the excerpts quoted with repr."""
    message = divergence_message(Divergence(call_index=call, field=field, expected=expected, actual=actual))
    assert message == f"call {call}: {field}: expected {expected!r}, got {actual!r}"
    assert "\n" not in message or "\n" in field
