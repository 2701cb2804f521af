"""One record per run: what happened, how it was judged, and what it measured (``runs.jsonl``).

Rules this module keeps:

- ``RunRecord`` is persisted and read back across versions: it carries ``schemaVersion``, every new field gets
  a default, and unknown fields are ignored on reading (no ``forbid_unknown_fields``), so a newer harness's
  runs.jsonl still loads.
- A run's status is one of the spec's four: ``pass``, ``fail``, ``budget_exceeded`` (counts as not passing;
  ``reason`` names the budget, e.g. ``maxWallMs``) and ``error`` (infrastructure: excluded from every rate;
  ``reason`` says what broke, e.g. ``replay_divergence``, ``fixture_copy``, ``provider_auth``).
- Provider-reported numbers are absent (``None``) when the provider did not report them, never 0:
  ``usageComplete`` says whether every turn reported usage, ``cachedPartial`` whether only some turns
  reported cached input. The report leaves such runs out of the token and cached-input figures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from enum import StrEnum
from typing import Annotated

import msgspec
from msgspec import Meta
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.errors import ReportError
from alisio.core.harness.faults import FaultHit
from alisio.core.lab.runs.workspace_diff import WorkspaceKept

__all__ = [
    "ID_PATTERN",
    "RUN_RECORD_SCHEMA_VERSION",
    "TOOL_NAME_MAX",
    "TOOL_SEQUENCE_MAX",
    "Divergence",
    "Incident",
    "Measured",
    "RunFaults",
    "RunRecord",
    "RunStatus",
    "TaskId",
    "VerifierResult",
    "VerifierStatus",
    "decode_runs",
    "encode_runs",
    "incident_counts",
    "schema_version_problem",
]

RUN_RECORD_SCHEMA_VERSION = 1


ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z"
"""A task or variant id, as suite.json and variants files allow them: also checked when runs.jsonl is read,
because readers build paths from it (``runs/<task>/<rep>.jsonl``): ``../../private`` must never be one."""
TaskId = Annotated[str, Meta(pattern=ID_PATTERN)]
Repetition = Annotated[int, Meta(ge=0)]
TokenTotal = Annotated[int, Meta(ge=0, le=10**15)]
"""A run's token total: a provider's count is at most ``MAX_TOKEN_COUNT`` (10**9) per call, so a larger total
is no measurement; reading runs.jsonl refuses it (naming the line and field) rather than overflow a report's
sums."""


class RunStatus(StrEnum):
    """How a run ended. Judged runs are ``pass``, ``fail`` and ``budget_exceeded``; ``error`` is not judged."""

    PASS = "pass"
    FAIL = "fail"
    BUDGET_EXCEEDED = "budget_exceeded"
    ERROR = "error"


class VerifierStatus(StrEnum):
    """A verifier's result: ``error`` means it could not run, which is neither a pass nor a fail."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"


class VerifierResult(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One verifier's judgement of one run."""

    id: str
    """The verifier id from suite.json."""
    kind: str
    """The verifier kind (command, file-equals, tree-diff-within, tool-sequence...)."""
    status: VerifierStatus
    detail: str = ""
    """A short human-readable explanation (exit code, first differing path, the rule that failed)."""
    vacuous_rules: int = 0
    """Tool-sequence rules that held over 0 calls (vacuously: no evidence either way; the detail names them)."""


class Incident(Frozen, frozen=True, kw_only=True):
    """Something notable during a run that is not an outcome (usage_unreported, approval_denied, compaction...)."""

    kind: str
    """The incident kind; the report counts incidents by it."""
    message: str = ""
    """A short human-readable explanation."""


class Divergence(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """Where a replayed run first asked the provider for something different from the cassette."""

    call_index: int
    """The provider call (0-based) that diverged; a missing or extra call is reported at its index."""
    field: str
    """The field path of the first difference, e.g. ``tools[edit_file].description``."""
    expected: str
    """An excerpt of the recorded value around the first difference."""
    actual: str
    """An excerpt of what the harness sent."""
    changed: tuple[str, ...] = ()
    """When the first difference is a file's hash and the recording holds the file's lines: the first lines
    that differ, ``-`` recorded, ``+`` now (``alisio.core.replay.fingerprint.changed_lines``)."""


class Measured(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """What a run measured. Token counts are main-loop only (compaction calls excluded) and absent when the
    provider did not report them: never 0 by default.
    """

    wall_ms: int
    """Wall time of the run in milliseconds (agent loop, not verifiers)."""
    turns: int
    tool_calls: int
    compactions: int
    usage_complete: bool
    """True when every main-loop turn reported usage; token totals of other runs are partial and left out."""
    input_tokens: TokenTotal | None = None
    output_tokens: TokenTotal | None = None
    reasoning_tokens: TokenTotal | None = None
    cached_input_tokens: TokenTotal | None = None
    """Input tokens the provider served from its prompt cache, summed over turns; absent when not reported."""
    cache_write_input_tokens: TokenTotal | None = None
    """Input tokens written to the prompt cache (Anthropic's ``cache_creation_input_tokens``), summed over the
    turns that reported them; part of ``input_tokens``; absent when no turn reported any."""
    cached_partial: bool = False
    """True when only some turns reported cached input: the run is left out of the cached-input ratio."""
    first_event_ms: tuple[int, ...] = ()
    """Time to the first event of each provider call that had a server (main and compaction, in order)."""
    served_models: tuple[str, ...] = ()
    """The distinct ``model`` names the responses gave, in order of first appearance (what served the run)."""
    system_fingerprints: tuple[str, ...] = ()
    """The distinct ``system_fingerprint`` values the responses gave, in order of first appearance."""
    started_at: str | None = None
    """When the run started, ISO 8601 UTC to the millisecond (passed in by the shell); absent in records written
    before it was recorded. Its events' ``elapsedMs`` count from here (the trajectory exports' timestamps)."""
    tool_sequence: tuple[str, ...] = ()
    """The names of the tools the agent called, in order (at most ``TOOL_SEQUENCE_MAX``, each cut to
    ``TOOL_NAME_MAX`` characters): how alike a task's repetitions went (the reliability profile). Absent in
    records written before it was kept, and for a run that called no tool."""


TOOL_SEQUENCE_MAX = 2000
"""Most tool calls a record lists in ``Measured.tool_sequence`` (the first ones)."""
TOOL_NAME_MAX = 64
"""Longest tool name kept in ``Measured.tool_sequence`` (a name is the model's text)."""


class RunFaults(Frozen, frozen=True, kw_only=True):
    """The faults injected into one run (``alisio.core.harness.faults``): its schedule's hits."""

    calls: int
    """Model calls the run made (every HTTP attempt, retries included)."""
    hits: tuple[FaultHit, ...] = ()
    """The faulted calls, in order."""


class RunRecord(Frozen, frozen=True, kw_only=True):
    """One run of one task: one line of runs.jsonl."""

    schema_version: int = RUN_RECORD_SCHEMA_VERSION
    """The runs.jsonl record format; a reader refuses a higher one (``schema_version_problem``)."""
    task_id: TaskId
    """The task's id in suite.json."""
    repetition: Repetition
    """0-based repetition index within the task."""
    seed: int
    """The run's seed: the command's --seed plus the repetition (it only orders runs)."""
    status: RunStatus
    """How the run ended: pass, fail, budget_exceeded (judged) or error (not judged)."""
    reason: str | None = None
    """For budget_exceeded the budget (``maxWallMs``, ``maxTurns``...); for error what broke."""
    verifiers: tuple[VerifierResult, ...] = ()
    """Each verifier's judgement of the run."""
    measured: Measured
    """What the run measured (wall time, turns, tool calls, provider tokens when reported)."""
    incidents: tuple[Incident, ...] = ()
    """Notable events that are not outcomes (compaction, approval_denied, usage_unreported...), in order."""
    errors: tuple[str, ...] = ()
    """Infrastructure or tool error messages, in order."""
    divergence: Divergence | None = None
    """Where a replayed run first differed from its cassette (its status is then error)."""
    variant: TaskId | None = None
    """The variant id when the run belongs to ``eval variants``."""
    config_hash: str = ""
    """Hash of the measured configuration the run used."""
    faults: RunFaults | None = None
    """``--faults``: the run's model calls and which of them were faulted, and how (``None``: no faults were
    injected, and in records written before faults existed)."""
    workspace: WorkspaceKept | None = None
    """Whether the workspace the agent left was kept as a diff (``runs/<task>/<rep>.workspace.json``, for
    ``eval rejudge``); ``None`` when the agent's loop never ran or ended error (nothing to judge again), and
    in records written before it was kept."""
    context_used: bool | None = None
    """Whether the run used its context (``alisio.core.lab.reports.context.context_used``: a tool call named one of
    its files or went to one of its MCP servers); ``None``: the run had no context."""

    @property
    def judged(self) -> bool:
        """Whether the run counts toward rates (pass, fail or budget_exceeded; not error)."""
        return self.status is not RunStatus.ERROR


def incident_counts(records: Iterable[RunRecord]) -> tuple[tuple[str, int], ...]:
    """Incidents over ``records`` counted by kind, sorted by kind."""
    counts: Counter[str] = Counter(i.kind for r in records for i in r.incidents)
    return tuple(sorted(counts.items()))


def schema_version_problem(found: int, supported: int) -> str | None:
    """Why a persisted record with ``schemaVersion`` ``found`` cannot be read by this version, or ``None``.

    Unknown fields are ignored so that additive changes load, but a higher schemaVersion means an
    incompatible change: reading it as ours would silently misread its numbers, so it is refused.
    """
    if found > supported:
        return (
            f"schemaVersion {found} is newer than this alisio reads ({supported}): upgrade alisio to read it"
        )
    if found < 1:
        return f"schemaVersion {found} is not a valid schema version"
    return None


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(RunRecord)


def encode_runs(records: Iterable[RunRecord]) -> bytes:
    """runs.jsonl bytes: one JSON record per line, each line ending with a newline."""
    return b"".join(_ENCODER.encode(r) + b"\n" for r in records)


def decode_runs(data: bytes, source: str) -> Result[tuple[RunRecord, ...], ReportError]:
    """Parse runs.jsonl bytes; blank lines are skipped, unknown fields ignored.

    Returns:
        The records in file order, or ``Failure(ReportError)`` naming the 1-based line and msgspec's message
        (which holds the field path, e.g. ``at `$.measured.wallMs```), or the schemaVersion a newer alisio
        wrote.
    """
    records: list[RunRecord] = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = _DECODER.decode(line)
        except msgspec.DecodeError as error:
            return Failure(ReportError(source=source, message=f"line {number}: {error}"))
        problem = schema_version_problem(record.schema_version, RUN_RECORD_SCHEMA_VERSION)
        if problem is not None:
            return Failure(ReportError(source=source, message=f"line {number}: {problem}"))
        records.append(record)
    return Success(tuple(records))
