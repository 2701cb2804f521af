"""plan.json: what a lab run was asked to do, written in its report directory before the first run.

``eval run --resume`` reads it to continue the run in the same directory: the same suite (by content hash),
tasks, k, seed, mode, provider, model, endpoint and measured configuration, so the runs it adds measure the
same thing as the runs already there. ``differences`` names what changed since (exit 1 on resume); the plan
itself is recomputed from tasks, k and seed (``alisio.core.lab.schedule.plan_runs`` is deterministic).

A torn last line of runs.jsonl (a kill in the middle of a write by an older version) is dropped with a
warning by ``whole_lines``; every other line must decode.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.errors import ReportError
from alisio.core.lab.records import RunRecord, RunStatus
from alisio.core.lab.report import Mode, Rates
from alisio.core.lab.schedule import RunSpec

__all__ = [
    "MANIFEST_SCHEMA_VERSION",
    "RunManifest",
    "decode_manifest",
    "differences",
    "encode_manifest",
    "remaining",
    "whole_lines",
]

MANIFEST_SCHEMA_VERSION = 1


class RunManifest(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """plan.json: the run as it was asked, and what it measures (compared on resume)."""

    schema_version: int = MANIFEST_SCHEMA_VERSION
    run_id: str
    created_at: str
    suite_id: str
    suite_version: str
    suite_hash: str
    """The suite's content hash: a changed fixture, verifier or task refuses the resume."""
    suite_dir: str | None = None
    """The ``--suite-dir`` the suite came from (absolute); ``None`` for a bundled suite."""
    tasks: tuple[str, ...]
    k: int
    seed: int
    mode: Mode
    cassette_dir: str | None = None
    script: str | None = None
    """The ``--script`` file or directory (absolute), when the provider was scripted."""
    provider: str
    model: str
    endpoint: str | None = None
    config_hash: str
    granted: tuple[str, ...]
    """The effects the runner granted (read included), in effect order."""
    read_only: bool = False
    allow_suite_full: bool = False
    rates: Rates | None = None
    label: str | None = None
    """``--label TEXT``, kept by a resume."""


_DECODER = msgspec.json.Decoder(RunManifest)
_ENCODER = msgspec.json.Encoder()


def encode_manifest(manifest: RunManifest) -> bytes:
    """plan.json's bytes (one JSON document and a newline)."""
    return _ENCODER.encode(manifest) + b"\n"


def decode_manifest(data: bytes, source: str) -> Result[RunManifest, ReportError]:
    """Parse plan.json; a malformed file or a newer schema is a ``ReportError`` naming the file."""
    try:
        manifest = _DECODER.decode(data)
    except msgspec.DecodeError as error:
        return Failure(ReportError(source=source, message=str(error)))
    if manifest.schema_version > MANIFEST_SCHEMA_VERSION:
        message = (
            f"schemaVersion {manifest.schema_version} was written by a newer alisio; upgrade to resume it"
        )
        return Failure(ReportError(source=source, message=message))
    return Success(manifest)


_COMPARED = (
    ("suite_id", "the suite id"),
    ("suite_version", "the suite version"),
    ("suite_hash", "the suite's content (a task, fixture or verifier changed)"),
    ("config_hash", "the configuration hash (the measured configuration changed)"),
    ("model", "the model"),
    ("endpoint", "the endpoint"),
    ("provider", "the provider"),
    ("mode", "the mode"),
)


def differences(stored: RunManifest, current: RunManifest) -> tuple[str, ...]:
    """What keeps ``current`` from continuing ``stored``: one line per differing condition, both values named.

    The suite (id, version, content), the measured configuration, the provider, model, endpoint and mode must
    be the same; an empty tuple means the resume may go on.
    """
    lines = []
    for field, what in _COMPARED:
        before, now = getattr(stored, field), getattr(current, field)
        if before != now:
            lines.append(f"{what} differs: {_shown(before)} when the run started, {_shown(now)} now")
    return tuple(lines)


def _shown(value: object) -> str:
    if value is None:
        return "none"
    text = str(value)
    return text[:16] if len(text) == 64 and all(c in "0123456789abcdef" for c in text) else text


def whole_lines(data: bytes) -> tuple[bytes, bool]:
    """``data`` cut after its last newline, and whether a torn last line was dropped."""
    if not data or data.endswith(b"\n"):
        return data, False
    cut = data.rfind(b"\n") + 1
    return data[:cut], True


def remaining(
    plan: Sequence[RunSpec], records: Sequence[RunRecord], retry_errors: bool
) -> tuple[tuple[RunSpec, ...], tuple[RunRecord, ...], tuple[RunRecord, ...]]:
    """What a resume runs, keeps and sets apart.

    Args:
        plan: every planned run (``plan_runs`` / ``interleave`` of the stored tasks, k and seed).
        records: the records already in runs.jsonl.
        retry_errors: also run again the planned runs whose record ended ``error``.

    Returns:
        The specs still to run (plan order), the records kept (plan order; a record outside the plan, or a
        second record of the same run, is not kept), and the records set apart (the ``error`` records of the
        runs run again, kept in retried/runs.jsonl, never counted).
    """
    planned = {(spec.variant, spec.task_id, spec.repetition): index for index, spec in enumerate(plan)}
    kept: dict[int, RunRecord] = {}
    apart: list[RunRecord] = []
    for record in records:
        index = planned.get((record.variant, record.task_id, record.repetition))
        if index is None or index in kept:
            continue
        if retry_errors and record.status is RunStatus.ERROR:
            apart.append(record)
        else:
            kept[index] = record
    todo = tuple(spec for index, spec in enumerate(plan) if index not in kept)
    return todo, tuple(kept[i] for i in sorted(kept)), tuple(apart)
