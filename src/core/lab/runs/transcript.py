"""A run's transcript: its whole event log, kept beside the report as ``runs/<task>/<repetition>.jsonl``.

One JSON event per line (``alisio.core.harness.events``): the assistant's text, every tool call with its
arguments, every tool result as the model saw it (up to 64 KiB, the cut stated), approvals, incidents,
compactions, usage and timing. Before it is written every string is passed through the secret scanner's
``redact`` (exact credentials of the environment, well-known key shapes, URLs with a password): the same
safety net as cassettes, replacing instead of refusing, because a transcript is evidence to keep.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from alisio.core.harness.events import Event
from alisio.core.share.secrets import redact

__all__ = ["RUNS_DIR", "decode_transcript", "encode_transcript", "transcript_path"]

RUNS_DIR = "runs"

_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(Event)


def transcript_path(task_id: str, repetition: int) -> str:
    """Where a run's transcript goes, relative to its report directory: ``runs/<task>/<repetition>.jsonl``."""
    return f"{RUNS_DIR}/{task_id}/{repetition}.jsonl"


def _redacted(value: object, known: tuple[tuple[str, str], ...]) -> object:
    if isinstance(value, str):
        return redact(value, known)
    if isinstance(value, dict):
        return {key: _redacted(item, known) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item, known) for item in value]
    return value


def encode_transcript(events: Sequence[Event], known: tuple[tuple[str, str], ...]) -> bytes:
    """The transcript's bytes: one redacted JSON event per line."""
    lines = (_ENCODER.encode(_redacted(msgspec.to_builtins(event), known)) + b"\n" for event in events)
    return b"".join(lines)


def decode_transcript(data: bytes) -> tuple[Event, ...]:
    """The events of a transcript (raises ``msgspec.DecodeError`` naming the line's problem)."""
    return tuple(_DECODER.decode(line) for line in data.splitlines() if line.strip())
