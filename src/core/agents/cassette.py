"""Agent cassettes (``agent-cassette/v1``): an external agent's model calls through the proxy, and replaying them.

A cassette is JSONL: a header line, then one line per model call in order (``call``, ``path``, ``request``,
``fingerprint``, ``status``, ``contentType``, ``response``). It is written by ``eval record --agent NAME`` into
``<cassettes>/<agent>/<task>.jsonl`` and served by the proxy in replay mode. Recorded under ``--faults``, its
header keeps the spec (``faults``) and its calls are those that reached the provider: the replay puts the
cassette where the provider was, below the same faults.

Rules this module keeps:
- nothing depends on when or where it was recorded: the request is stored normalised (the workspace path is
  ``<workspace>``, the task's replayNormalize and the agent's known per-run noise applied), and so is the
  response (the workspace path only, put back for the run that replays it);
- ``match_agent_call``: equal fingerprints serve the recorded answer; a different request is a divergence at
  the first differing JSON field (``messages[2].content``) with excerpts; a call past the recording's end, or
  recorded calls the run never made (``unplayed_divergence``), are divergences too;
- decoding never raises: ``decode_agent_cassette`` returns ``Failure(CassetteError)`` naming the line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.lab.runs.records import Divergence
from alisio.core.replay.cassette import CassetteError, decode_lines

__all__ = [
    "AGENT_CASSETTE_FORMAT",
    "MAX_AGENT_CASSETTE_BYTES",
    "AgentCall",
    "AgentCassette",
    "AgentCassetteHeader",
    "decode_agent_cassette",
    "encode_agent_cassette",
    "json_difference",
    "match_agent_call",
    "unplayed_divergence",
]

AGENT_CASSETTE_FORMAT: Final = "agent-cassette/v1"
MAX_AGENT_CASSETTE_BYTES: Final = 8 << 20
"""The largest agent cassette the writer accepts (8 MiB: a Codex request alone is ~40 KB)."""
_EXCERPT: Final = 60


class AgentCassetteHeader(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """What was recorded, under which conditions (no timestamp)."""

    format: Literal["agent-cassette/v1"]
    suite_id: str
    suite_version: str
    task_id: str
    agent: str
    kind: str
    api: str
    model: str
    provider: str
    faults: str | None = None
    """The ``--faults`` spec the run was recorded under (canonical, ``alisio.core.harness.faults.spec_text``);
    a replay meets the same faults at the same calls. Absent when none."""


class AgentCall(Frozen, frozen=True, kw_only=True):
    """One model call: the normalised request, and the provider's answer."""

    call: int
    path: str
    request: str
    fingerprint: str
    status: int
    content_type: str
    response: str


class AgentCassette(Frozen, frozen=True, kw_only=True):
    header: AgentCassetteHeader
    calls: tuple[AgentCall, ...]


_ENCODER: Final = msgspec.json.Encoder(order="deterministic")
_HEADER: Final = msgspec.json.Decoder(AgentCassetteHeader)
_CALL: Final = msgspec.json.Decoder(AgentCall)
_ANY: Final = msgspec.json.Decoder()


def encode_agent_cassette(cassette: AgentCassette) -> bytes:
    """The JSONL bytes: the header, then one line per call."""
    lines = [_ENCODER.encode(cassette.header), *(_ENCODER.encode(call) for call in cassette.calls)]
    return b"".join(line + b"\n" for line in lines)


def decode_agent_cassette(data: bytes, source: str) -> Result[AgentCassette, CassetteError]:
    """Parse an agent cassette; ``Failure(CassetteError)`` names the 1-based line of the first problem."""
    return decode_lines(data, source, AGENT_CASSETTE_FORMAT, _HEADER, _CALL).map(
        lambda parts: AgentCassette(header=parts[0], calls=parts[1])
    )


def _show(value: object) -> str:
    text = value if isinstance(value, str) else _ENCODER.encode(value).decode()
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "…"


def _excerpts(old: str, new: str) -> tuple[str, str]:
    start = next(
        (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new))
    )
    begin = max(0, start - _EXCERPT // 3)
    lead = "…" if begin else ""
    return lead + _show(old[begin:]), lead + _show(new[begin:])


def _difference(path: str, old: object, new: object) -> tuple[str, str, str] | None:
    if old == new:
        return None
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in [*old, *(k for k in new if k not in old)]:
            where = f"{path}.{key}" if path else str(key)
            if (key in old) != (key in new):
                shown = (_show(old[key]), "(absent)") if key in old else ("(absent)", _show(new[key]))
                return (where, *shown)
            found = _difference(where, old[key], new[key])
            if found:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list):
        for index, (a, b) in enumerate(zip(old, new, strict=False)):
            found = _difference(f"{path}[{index}]", a, b)
            if found:
                return found
        return f"{path}.length", f"{len(old)} items", f"{len(new)} items"
    if isinstance(old, str) and isinstance(new, str):
        return (path or "$", *_excerpts(old, new))
    return path or "$", _show(old), _show(new)


def json_difference(recorded: str, actual: str) -> tuple[str, str, str]:
    """The first differing field of two JSON texts (``messages[2].content``) and excerpts of both values."""
    try:
        old, new = _ANY.decode(recorded), _ANY.decode(actual)
    except msgspec.DecodeError:
        return ("$", *_excerpts(recorded, actual))
    return _difference("", old, new) or ("$", "(same JSON, different text)", "(same JSON, different text)")


def match_agent_call(
    cassette: AgentCassette, played: frozenset[int], request: str, fingerprint: str
) -> Result[AgentCall, Divergence]:
    """The first recorded call not played yet whose request is ``request`` (agents may make calls at once, in
    either order: OpenCode's title call), else the divergence against the first call not played yet."""
    left = [call for call in cassette.calls if call.call not in played]
    for call in left:
        if call.fingerprint == fingerprint:
            return Success(call)
    index = len(played)
    if not left:
        n = len(cassette.calls)
        actual = f"a call past the end ({index + 1} calls)"
        return Failure(
            Divergence(call_index=index, field="calls", expected=f"{n} recorded calls", actual=actual)
        )
    field, expected, actual = json_difference(left[0].request, request)
    return Failure(Divergence(call_index=left[0].call, field=field, expected=expected, actual=actual))


def unplayed_divergence(cassette: AgentCassette, played: int) -> Divergence | None:
    """A divergence when the run made fewer calls than were recorded."""
    if played >= len(cassette.calls):
        return None
    n = len(cassette.calls)
    return Divergence(
        call_index=played, field="calls", expected=f"{n} recorded calls", actual=f"{played} calls"
    )


def calls_of(
    records: Sequence[tuple[str, str, str, int, str, str]],
) -> tuple[AgentCall, ...]:
    """``AgentCall`` values from ``(path, request, fingerprint, status, content_type, response)`` tuples."""
    return tuple(
        AgentCall(call=i, path=p, request=r, fingerprint=f, status=s, content_type=c, response=b)
        for i, (p, r, f, s, c, b) in enumerate(records)
    )
