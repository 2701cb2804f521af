"""Cassettes (``cassette/v1``): one task's provider calls, recorded, and the pure logic of replaying them.

A cassette is JSONL. The first line is the header (``format``, ``suiteId``, ``suiteVersion``, ``taskId``,
``configHash``, ``harnessVersion``, ``model``, ``provider``, ``servedModels`` and ``systemFingerprints`` when
the responses named what served them, ``faults``, ``faultRecord``, ``partialEvents`` and ``readTimeoutMs`` when
it was recorded with ``--faults``); each further line is one provider call in order (``call``,
``purpose``, ``fingerprint``, ``request``, ``events``).

Rules this module keeps:

- Nothing in a cassette depends on when or where it was recorded: no timestamp, and the request is stored
  *normalised* (per-run paths are ``<workspace>``, a task's replayNormalize applied), so two consecutive
  recordings of the same harness are byte-identical. The request is kept whole so a divergence can name the
  field; the events are the provider's stream events exactly as received (tool call ids and continuation data
  verbatim), which is what replay serves.
- ``match_call`` compares fingerprints: equal means the harness asked what was recorded; different means a
  divergence whose field ``alisio.core.replay.fingerprint.first_difference`` names. A call past the end of the recording is
  an extra call; ``unplayed`` reports recorded calls the run never made. Both are divergences too.
- Limits: a cassette holds at most ``MAX_CASSETTE_BYTES`` (256 KB) and a cassette directory at most
  ``MAX_DIRECTORY_BYTES`` (2 MB); ``size_problem`` says why a write must be refused.
- ``cut_points_problem``: a cassette recorded with ``cut`` faults replays them only with the recorded cut
  points (``faultRecord``: where each cut broke, which depends on the provider's bytes the cassette does not
  keep); one without them, or whose record is not the spec's schedule, is refused.
- Decoding never raises: ``decode_cassette`` returns ``Failure(CassetteError)`` naming the file and the
  1-based line (with msgspec's field path).
"""

from __future__ import annotations

from typing import Literal, Protocol, TypeVar

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.harness.config_provider import PositiveMs
from alisio.core.harness.faults import FaultSpec, fault_at
from alisio.core.harness.protocol import ProviderRequest, Purpose, StreamEvent
from alisio.core.lab.runs.records import Divergence, RunFaults, RunRecord, RunStatus
from alisio.core.replay.fingerprint import fingerprint, first_difference
from alisio.core.text import plural

__all__ = [
    "CASSETTE_FORMAT",
    "MAX_CASSETTE_BYTES",
    "MAX_DIRECTORY_BYTES",
    "REPLAY_DIVERGENCE",
    "Cassette",
    "CassetteError",
    "CassetteHeader",
    "RecordedCall",
    "cut_points_problem",
    "decode_cassette",
    "decode_lines",
    "divergence_message",
    "encode_cassette",
    "match_call",
    "size_problem",
    "unplayed",
    "with_divergence",
]

CASSETTE_FORMAT = "cassette/v1"
MAX_CASSETTE_BYTES = 256 * 1024
"""The largest cassette the writer accepts (256 KB)."""
MAX_DIRECTORY_BYTES = 2 * 1024 * 1024
"""The largest total of the cassettes of one directory the writer accepts (2 MB)."""
REPLAY_DIVERGENCE = "replay_divergence"
"""The reason of a replayed run that diverged from its cassette."""


class CassetteError(Frozen, frozen=True, kw_only=True, tag="cassette_error"):
    """A cassette file that cannot be read as ``cassette/v1``. ``str()`` is the one line users see."""

    source: str
    """The file."""
    line: int
    """The 1-based line of the problem (0 when it concerns the whole file)."""
    message: str

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"{where}: {self.message}"


class CassetteHeader(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """The first line: what was recorded, under which conditions (no timestamp, on purpose)."""

    format: Literal["cassette/v1"]
    """Always ``cassette/v1``; another value is refused on reading."""
    suite_id: str
    """The recorded suite's id."""
    suite_version: str
    """The recorded suite's version."""
    task_id: str
    """The recorded task; the cassette file is ``<task-id>.jsonl``."""
    config_hash: str
    """The measured configuration's hash at recording; replay warns when it differs."""
    harness_version: str
    """The alisio version that recorded it."""
    model: str
    """The model that answered."""
    provider: str
    """The id of the provider that answered (``scripted`` for the bundled cassettes)."""
    served_models: tuple[str, ...] = ()
    """The ``model`` names the recorded responses gave (what answered); absent when none gave one."""
    system_fingerprints: tuple[str, ...] = ()
    """The ``system_fingerprint`` values the recorded responses gave; absent when none gave one."""
    faults: str | None = None
    """The ``--faults`` spec the run was recorded under (canonical, ``alisio.core.harness.faults.spec_text``);
    a replay injects the same faults at the same calls. Absent when none."""
    fault_record: RunFaults | None = None
    """The recorded run's faults, as its run record keeps them (``faults``: its model calls, every HTTP attempt,
    and the faulted ones, each cut with where it broke: ``alisio.core.harness.faults.FaultHit.events``); a
    replay's cuts break where these did. Absent when recorded without faults."""
    partial_events: tuple[StreamEvent, ...] = ()
    """When a cut after the answer's first event ended the recorded run (its last call, which failed and so is
    not among the calls): the events the harness had received from it, which the replay's failure carries as
    the recording's did (the agent keeps an excerpt of them). Absent otherwise."""
    read_timeout_ms: PositiveMs | None = None
    """With ``stall`` faults: the provider's read timeout when recorded (``provider.timeoutMs``, else the
    transport's default, 300000), which each stall lasted; a replay's stalls last as long, so a stall that
    ran into ``maxWallMs`` when recorded does again. Absent otherwise."""


class RecordedCall(Frozen, frozen=True, kw_only=True):
    """One provider call: what the harness asked (normalised) and what the provider streamed back."""

    call: int
    """0-based index of the call in the run (main and compaction calls share the count)."""
    purpose: Purpose
    """Why the harness called: the main loop or a compaction checkpoint."""
    fingerprint: str
    """``alisio.core.replay.fingerprint.fingerprint`` of ``request``."""
    request: ProviderRequest
    """The normalised request, so a divergence can name the field that differs."""
    events: tuple[StreamEvent, ...]
    """The stream events exactly as received."""


class Cassette(Frozen, frozen=True, kw_only=True):
    """A whole cassette: its header and its calls in order."""

    header: CassetteHeader
    """The first line: what was recorded and under which conditions."""
    calls: tuple[RecordedCall, ...]
    """One per provider call, in call order (main-loop and compaction calls alike)."""


_ENCODER = msgspec.json.Encoder(order="deterministic")
_HEADER = msgspec.json.Decoder(CassetteHeader)
_CALL = msgspec.json.Decoder(RecordedCall)


_IN_ORDER = msgspec.json.Encoder()
"""Keeps the key order ``to_builtins`` gives, which is the Structs' field order (as ``_ENCODER`` writes them)."""


def encode_cassette(cassette: Cassette) -> bytes:
    """The cassette's JSONL bytes: the header line, then one line per call, each ending with a newline.

    What was added to requests after the first cassettes (``cache`` when on, the sampling settings when not
    sent, an assistant message's empty ``reasoningBlocks``) is left out at its default, so a cassette recorded again is byte for byte the one
    recorded before (decoding fills the defaults back in).
    """
    lines = [_ENCODER.encode(cassette.header), *(_encode_call(call) for call in cassette.calls)]
    return b"".join(line + b"\n" for line in lines)


def _encode_call(call: RecordedCall) -> bytes:
    data = msgspec.to_builtins(call)
    request = data["request"]
    if request.get("cache") is True:
        del request["cache"]
    for key in ("temperature", "topP", "seed"):  # sampling, added later: left out when not sent
        if request.get(key, 0) is None:
            del request[key]
    for message in request["messages"]:
        if message.get("reasoningBlocks") in ((), []):
            del message["reasoningBlocks"]
    return _IN_ORDER.encode(data)


def _agent_cassette_message(first: bytes) -> str | None:
    """What to say of a header line that is an external agent's cassette (``agent-cassette/v1``), or None."""
    try:
        header = msgspec.json.decode(first)
    except msgspec.DecodeError:
        return None
    if not isinstance(header, dict) or header.get("format") != "agent-cassette/v1":
        return None
    agent = header.get("agent")
    name = agent if isinstance(agent, str) and agent.isprintable() and len(agent) <= 64 else "NAME"
    return (
        f"an external agent's cassette (agent-cassette/v1, agent {name}), not the built-in agent's "
        f"{CASSETTE_FORMAT}: replay it with eval run --mode replay --agent {name}"
    )


def decode_cassette(data: bytes, source: str) -> Result[Cassette, CassetteError]:
    """Parse cassette bytes; blank lines are skipped.

    Returns:
        The cassette, or ``Failure(CassetteError)`` naming the 1-based line: an empty file, a first line that
        is not a ``cassette/v1`` header, a call line that does not parse (msgspec's message has the field
        path), or calls out of order.
    """
    return decode_lines(data, source, CASSETTE_FORMAT, _HEADER, _CALL).map(
        lambda parts: Cassette(header=parts[0], calls=parts[1])
    )


class _Numbered(Protocol):
    @property
    def call(self) -> int: ...


_Header = TypeVar("_Header")
_Call = TypeVar("_Call", bound=_Numbered)


def decode_lines(
    data: bytes,
    source: str,
    format_name: str,
    header: msgspec.json.Decoder[_Header],
    call: msgspec.json.Decoder[_Call],
) -> Result[tuple[_Header, tuple[_Call, ...]], CassetteError]:
    """The header and the calls of a JSONL cassette of ``format_name`` (``cassette/v1``, an agent cassette);
    blank lines are skipped.

    Returns:
        (header, calls), or ``Failure(CassetteError)`` naming the 1-based line: an empty file, a first line
        that is not a header, a call line that does not parse (msgspec's message has the field path), or a
        call whose ``call`` number is not the next one.
    """
    lines = [(number, line) for number, line in enumerate(data.splitlines(), start=1) if line.strip()]
    if not lines:
        return Failure(CassetteError(source=source, line=0, message=f"empty file: no {format_name} header"))
    number, first = lines[0]
    try:
        head = header.decode(first)
    except msgspec.DecodeError as error:
        article = "an" if format_name[0] in "aeiou" else "a"
        agent = _agent_cassette_message(first) if format_name == CASSETTE_FORMAT else None
        message = agent or f"not {article} {format_name} header: {error}"
        return Failure(CassetteError(source=source, line=number, message=message))
    calls: list[_Call] = []
    for number, line in lines[1:]:
        try:
            decoded = call.decode(line)
        except msgspec.DecodeError as error:
            return Failure(CassetteError(source=source, line=number, message=f"invalid call: {error}"))
        if decoded.call != len(calls):
            message = f"call {decoded.call} where call {len(calls)} was expected (calls must be in order)"
            return Failure(CassetteError(source=source, line=number, message=message))
        calls.append(decoded)
    return Success((head, tuple(calls)))


def size_problem(cassette_bytes: int, directory_bytes: int) -> str | None:
    """Why a cassette of ``cassette_bytes`` may not be written, or ``None``.

    Args:
        cassette_bytes: the size of the encoded cassette.
        directory_bytes: the total size of the directory's cassettes once it is written (this one included).
    """
    if cassette_bytes > MAX_CASSETTE_BYTES:
        return f"the cassette is {_kb(cassette_bytes)}, over the {_kb(MAX_CASSETTE_BYTES)} limit per cassette"
    if directory_bytes > MAX_DIRECTORY_BYTES:
        return (
            f"the cassettes of the directory would total {_kb(directory_bytes)}, over the "
            f"{_kb(MAX_DIRECTORY_BYTES)} limit per directory"
        )
    return None


def _kb(size: int) -> str:
    return f"{size / 1024:.1f} KB"


def match_call(
    cassette: Cassette, call_index: int, actual: ProviderRequest
) -> Result[tuple[StreamEvent, ...], Divergence]:
    """The recorded events of call ``call_index`` when ``actual`` (normalised) is what was recorded.

    Returns:
        ``Success(events)`` when the fingerprints are equal; else ``Failure(Divergence)`` at ``call_index``:
        the first differing field with excerpts (``first_difference``), ``calls`` for a call past the end of
        the recording, or ``fingerprint`` when the hashes differ but no field does (a cassette edited by hand).
    """
    recorded = cassette.calls
    if call_index >= len(recorded):
        kind = "a compaction call" if actual.purpose == "compaction" else "a main call"
        return Failure(
            Divergence(
                call_index=call_index,
                field="calls",
                expected=f"{len(recorded)} recorded calls",
                actual=f"an extra call #{call_index} ({kind}, {len(actual.messages)} messages)",
            )
        )
    call = recorded[call_index]
    got = fingerprint(actual)
    if got == call.fingerprint:
        return Success(call.events)
    found = first_difference(call.request, actual)
    if found is None:
        return Failure(
            Divergence(call_index=call_index, field="fingerprint", expected=call.fingerprint, actual=got)
        )
    return Failure(
        Divergence(
            call_index=call_index,
            field=found.field,
            expected=found.expected_excerpt,
            actual=found.actual_excerpt,
            changed=found.changed,
        )
    )


def unplayed(cassette: Cassette, calls_made: int) -> Divergence | None:
    """The divergence of a run that ended after ``calls_made`` calls when more were recorded, or ``None``."""
    recorded = len(cassette.calls)
    if calls_made >= recorded:
        return None
    missing = recorded - calls_made
    noun = "call was" if missing == 1 else "calls were"
    return Divergence(
        call_index=calls_made,
        field="calls",
        expected=f"{recorded} recorded calls",
        actual=f"{plural(calls_made, 'call')} made ({missing} recorded {noun} never made)",
    )


def cut_points_problem(header: CassetteHeader, spec: FaultSpec | None) -> str | None:
    """Why a cassette cannot be replayed under ``spec`` (its recording's, already checked) for want of its cut
    points, or ``None``.

    A cut's effect depends on where the answer's bytes broke off (before its first event the call is retried,
    after it the call fails), so a replay cuts only where the recording did, at the points ``faultRecord``
    keeps. Refused: a spec with ``cut`` faults and no ``faultRecord`` (an older alisio, or an edited file), a
    record whose hits are not ``spec``'s schedule for the recorded run (``<task>/0``: ``eval record`` runs
    repetition 0), or a cut hit without its ``events``.
    """
    if spec is None or not any(kind == "cut" and rate > 0 for kind, rate in spec.rates):
        return None
    record = header.fault_record
    if record is None:
        return (
            "recorded with cut faults but without where each cut broke (no faultRecord in its header: an older "
            "alisio, or an edited file): record it again"
        )
    run = f"{header.task_id}/0"
    scheduled = [(call, kind) for call in range(record.calls) if (kind := fault_at(spec, run, call))]
    if [(hit.call, hit.kind) for hit in record.hits] != scheduled:
        return (
            f"faultRecord: its hits are not the schedule of --faults {header.faults} over its {record.calls} "
            "calls (an edited file): record it again"
        )
    for index, hit in enumerate(record.hits):
        if hit.kind == "cut" and hit.events is None:
            return (
                f"faultRecord.hits[{index}]: the cut at call {hit.call} does not say where it broke (events)"
            )
    return None


def divergence_message(divergence: Divergence) -> str:
    """``call 3: tools[edit_file].description: expected '…', got '…'``: one line for people."""
    return (
        f"call {divergence.call_index}: {divergence.field}: "
        f"expected {divergence.expected!r}, got {divergence.actual!r}"
    )


def with_divergence(record: RunRecord, divergence: Divergence) -> RunRecord:
    """``record`` as a replayed run that diverged: status error, reason ``replay_divergence``, the divergence
    filled and its one-line message added to ``errors`` (once). Whatever the verifiers said, a diverged run
    is not judged: what it did is not what was recorded."""
    message = f"replay diverged at {divergence_message(divergence)}"
    errors = tuple(e for e in record.errors if not e.startswith("replay diverged at call"))
    return msgspec.structs.replace(
        record,
        status=RunStatus.ERROR,
        reason=REPLAY_DIVERGENCE,
        divergence=divergence,
        errors=(message, *errors),
    )
