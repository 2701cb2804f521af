"""plan.json: what a lab run was asked to do, written in its report directory before the first run.

``eval run --resume`` reads it to continue the run in the same directory: the same suite (by content hash),
tasks, k, seed, mode, provider, model, endpoint and measured configuration, so the runs it adds measure the
same thing as the runs already there. ``differences`` names what changed since (exit 1 on resume); the plan
itself is recomputed from tasks, k and seed (``alisio.core.lab.suites.schedule.plan_runs`` is deterministic).

A torn last line of runs.jsonl (a kill in the middle of a write by an older version) is dropped with a
warning by ``whole_lines``; every other line must decode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import msgspec
from msgspec import Meta
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.errors import ReportError
from alisio.core.lab.comparisons.variants import Override
from alisio.core.lab.plans.shards import PlannedRun, ShardBlock, ShardRun
from alisio.core.lab.reports.report import AnswerSource, Rates
from alisio.core.lab.reports.seq_block import SequentialPlan
from alisio.core.lab.runs.records import RunRecord, RunStatus, TaskId
from alisio.core.lab.suites.schedule import MAX_K, RunSpec

__all__ = [
    "MANIFEST_SCHEMA_VERSION",
    "ManifestAgent",
    "ManifestVariant",
    "ReusedFrom",
    "RunManifest",
    "decode_manifest",
    "differences",
    "encode_manifest",
    "measurement_differences",
    "remaining",
    "whole_lines",
]

MANIFEST_SCHEMA_VERSION = 1


class ManifestAgent(Frozen, frozen=True, kw_only=True):
    """An external agent a run used, as plan.json keeps it: a resume runs the rest with the same one."""

    name: str
    kind: str
    version: str
    """What its version command printed."""
    config: str
    """The sha256 of its ``[agents.NAME]`` settings as parsed (command, api, env, binary...)."""


class ManifestVariant(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One variant of an ``eval variants`` job, as plan.json keeps it: a resume measures each the same way."""

    id: TaskId
    """The variant's id (its report directory's name: checked as a task id is)."""
    config_hash: str
    model: str | None = None
    agent: str | None = None
    overrides: tuple[Override, ...] = ()
    """Its overrides as the variants file writes them (``eval merge`` puts them in comparison.json)."""
    faults: str | None = None
    """The faults its runs get (its own ``faults``, else the command's ``--faults``; canonical spec)."""
    context: str | None = None
    """The digest of its context (``alisio.core.lab.reports.context``); ``None``: none."""


class ReusedFrom(Frozen, frozen=True, kw_only=True):
    """Runs a command took from a stored run instead of running them (``--reuse``), as plan.json keeps them."""

    run_id: str
    directory: str
    runs: tuple[ShardRun, ...]


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
    tasks: Annotated[tuple[TaskId, ...], Meta(min_length=1)]
    k: Annotated[int, Meta(ge=1, le=MAX_K)]
    seed: Annotated[int, Meta(ge=0)]
    mode: AnswerSource
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
    agent: str | None = None
    """``--agent NAME`` of the run (a resume runs the rest with the same agent); ``None``: each task's own."""
    harness_version: str | None = None
    """The alisio version that started the run (``None`` in plan.json written before it was recorded)."""
    script_hash: str | None = None
    """The sha256 of the ``--script`` content the run started with (of each selected task's file, for a
    directory); ``None`` for a live or replay run, or in plan.json written before it was recorded."""
    sandbox: str = "none"
    """Where commands ran (``none`` or ``bwrap``): a resume runs them the same way."""
    label: str | None = None
    """``--label TEXT``, kept by a resume."""
    faults: str | None = None
    """``--faults SPEC`` (canonical), kept by a resume; ``None``: none (a variant's own are in ``variants``)."""
    agents: tuple[ManifestAgent, ...] = ()
    """The external agents the run used, by name (empty: none, or plan.json written before it was kept)."""
    sequential: SequentialPlan | None = None
    """The sequential design (``--sequential --baseline``, ``--until-width``; ``k`` is its ``maxK``): a resume
    continues it, recomputing each task's stop from runs.jsonl; ``None``: a fixed k."""
    variants_file: str | None = None
    """``eval variants``: the ``--variants`` file (absolute) the job started with; ``None``: a plain run."""
    context_file: str | None = None
    """``--context FILE`` (absolute) of a plain run: a resume reads it again; ``None``: none."""
    context: str | None = None
    """The digest of a plain run's context (a variant's is in its entry); ``None``: none."""
    variants: tuple[ManifestVariant, ...] = ()
    """``eval variants``: each variant in the file's order, the baseline first (empty: a plain run)."""
    digest: str | None = None
    """The plan's digest (``alisio.core.lab.plans.plan_key.plan_digest``); ``None`` in plan.json written before it."""
    shard: ShardBlock | None = None
    """``--shard I/N``: the slice of the plan this directory holds; ``None``: the whole plan."""
    runs: tuple[PlannedRun, ...] = ()
    """``eval plan``: every run of the plan in order, with its seed and fingerprint (empty in a report's)."""
    reused: tuple[ReusedFrom, ...] = ()
    """``--reuse``: the runs taken from stored runs instead of being run."""


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
    ("sandbox", "the sandbox"),
    ("faults", "the injected faults (--faults)"),
)


def differences(stored: RunManifest, current: RunManifest) -> tuple[str, ...]:
    """What keeps ``current`` from continuing ``stored``: one line per differing condition, both values named.

    The suite (id, version, content), the measured configuration, the provider, model, endpoint and mode must
    be the same; an empty tuple means the resume may go on.
    """
    lines = []
    for field, what in _COMPARED:
        before, now = getattr(stored, field), getattr(current, field)
        if field == "config_hash" and stored.variants:
            continue  # a variants job says which variant's configuration changed (_variant_differences)
        if before != now:
            lines.append(f"{what} differs: {_shown(before)} when the run started, {_shown(now)} now")
    if stored.agents:  # plan.json written before agents were kept says nothing to compare
        lines += _agent_differences(stored.agents, current.agents)
    if stored.variants or current.variants:
        lines += _variant_differences(stored.variants, current.variants)
    if stored.shard is not None and (current.shard is None or stored.shard.runs != current.shard.runs):
        lines.append(
            f"shard {stored.shard.index} of {stored.shard.count}: the runs it owns differ from the slice this "
            "alisio cuts from the plan"
        )
    return tuple(lines)


def _variant_differences(stored: Sequence[ManifestVariant], current: Sequence[ManifestVariant]) -> list[str]:
    """The variants' ids and order, then each variant's configuration hash, model and agent."""
    before, now = [v.id for v in stored], [v.id for v in current]
    if before != now:
        was, is_ = ", ".join(before) or "none", ", ".join(now) or "none"
        return [f"the variants differ: {was} when the run started, {is_} now"]
    lines = []
    for old, new in zip(stored, current, strict=True):
        for field, what in (
            ("config_hash", "configuration hash (its measured configuration changed)"),
            ("model", "model"),
            ("agent", "agent"),
            ("faults", "injected faults"),
        ):
            was, is_ = getattr(old, field), getattr(new, field)
            if was != is_:
                lines.append(
                    f"variant {old.id}'s {what} differs: {_shown(was)} when the run started, {_shown(is_)} now"
                )
    return lines


def _agent_differences(stored: Sequence[ManifestAgent], current: Sequence[ManifestAgent]) -> list[str]:
    """One line per external agent whose kind, version or settings changed, or that is used or gone now."""
    before, now = {a.name: a for a in stored}, {a.name: a for a in current}
    lines = []
    for name in sorted(before.keys() | now.keys()):
        old, new = before.get(name), now.get(name)
        if old is None or new is None:
            was, is_ = ("not used", "used") if old is None else ("used", "not used")
            lines.append(f"agent {name} differs: {was} when the run started, {is_} now")
            continue
        for field, what in (
            ("kind", "kind differs"),
            ("version", "version differs"),
            ("config", "settings differ"),
        ):
            if getattr(old, field) != getattr(new, field):
                was, is_ = _shown(getattr(old, field)), _shown(getattr(new, field))
                lines.append(f"agent {name}'s {what}: {was} when the run started, {is_} now")
    return lines


def measurement_differences(
    stored: RunManifest, current: RunManifest, kept: Sequence[RunRecord]
) -> tuple[str, ...]:
    """What else keeps a resume from measuring what the run started measuring: the harness version and the
    ``--script`` content (when plan.json recorded them, and some record is ``kept``: with none kept, nothing
    would be mixed), each arm's context digest (``--context``'s file read again, a variant's), and each kept record whose configHash is not plan.json's (a record written by another
    configuration, one line for all of them; a variants job's record against its variant's hash)."""
    lines = []
    for field, what in (("harness_version", "the harness version"), ("script_hash", "the --script content")):
        before, now = getattr(stored, field), getattr(current, field)
        if kept and before is not None and before != now:
            lines.append(f"{what} differs: {_shown(before)} when the run started, {_shown(now)} now")
    contexts = [(None, stored.context, current.context)] + [
        (v.id, v.context, w.context)
        for v, w in zip(stored.variants, current.variants, strict=False)
        if v.id == w.id
    ]
    for variant, before, now in contexts:
        if kept and before != now:
            where = f" of variant {variant}" if variant else ""
            lines.append(
                f"the context{where} differs: {_shown(before)} when the run started, {_shown(now)} now"
            )
    expected = {v.id: v.config_hash for v in stored.variants}
    foreign = [
        r
        for r in kept
        if r.config_hash and r.config_hash != expected.get(r.variant or "", stored.config_hash)
    ]
    if foreign:
        first = foreign[0]
        where = f"{first.variant}/" if first.variant else ""
        lines.append(
            f"{len(foreign)} record{'s' if len(foreign) > 1 else ''} of {where}runs.jsonl "
            f"(first: task {first.task_id} rep {first.repetition}) measured configuration "
            f"{_shown(first.config_hash)}, not plan.json's "
            f"{_shown(expected.get(first.variant or '', stored.config_hash))}"
        )
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
