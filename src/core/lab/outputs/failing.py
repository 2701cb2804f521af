"""The runs that did not pass, as every report lists them: each with what stopped it and the command that
opens it, and a task's runs with the same message grouped ("fix-add, 5 runs: fail: check: exit 1").

Rules this module keeps:

- The runs that did not pass (fail, budget_exceeded, error) are listed in task and repetition order, each
  with its failing verifiers and the first ``DETAIL_LINES`` lines of their details, its errors, its
  incidents (``text_tool_call``: often the reason a run did nothing), where a replay diverged, and the
  ``alisio eval show`` command that opens its transcript.
- Text that comes from a run (verifier details, errors) is untrusted: it passes through the secret
  scanner's ``redact`` before it is cut, and is never interpreted (the renderers escape it).
- A task's runs whose message is the same (status, reason, the same verifiers with the same shown details,
  the same errors and divergence) are one group, listed once with every run it holds, in the order of its
  first run: a hundred runs failing one way read as one thing to fix, not a hundred.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from alisio.core.base import Frozen
from alisio.core.lab.runs.records import Divergence, RunRecord, RunStatus, VerifierStatus
from alisio.core.share.secrets import redact
from alisio.core.text import plural

__all__ = [
    "DETAIL_LINES",
    "LINE_CHARS",
    "FailingRun",
    "FailureGroup",
    "VerifierProblem",
    "divergence_lines",
    "failing_runs",
    "group_failures",
    "runs_text",
    "shell_word",
    "show_command",
]

DETAIL_LINES = 5
"""Lines of a verifier's detail (or an error) shown per run."""
LINE_CHARS = 300
"""Characters of one such line shown."""


class VerifierProblem(Frozen, frozen=True, kw_only=True):
    """A verifier that did not pass, with the first lines of its detail (redacted, cut)."""

    id: str
    kind: str
    status: VerifierStatus
    detail: tuple[str, ...]
    more_lines: int = 0
    """Lines of the detail not shown."""


class FailingRun(Frozen, frozen=True, kw_only=True):
    """A run that did not pass: what stopped it, and how to open it."""

    task_id: str
    repetition: int
    status: RunStatus
    reason: str | None = None
    """The budget (``maxWallMs``) or what broke (``provider_network``)."""
    verifiers: tuple[VerifierProblem, ...] = ()
    errors: tuple[str, ...] = ()
    """The first line of each error (at most three)."""
    divergence: str | None = None
    """Where a replay diverged: the call and the field."""
    divergence_lines: tuple[str, ...] = ()
    """How a file the recording read had changed, when the divergence was its hash (redacted)."""
    incidents: tuple[tuple[str, int], ...] = ()
    """(kind, how many) of the run's incidents, in the order each kind first happened."""
    incident_lines: tuple[str, ...] = ()
    """``kind: message`` of its first ``DETAIL_LINES`` distinct incidents (redacted, cut)."""
    show: str
    """The ``alisio eval show`` command that prints its transcript."""

    @property
    def label(self) -> str:
        """``fail``, ``budget_exceeded maxWallMs``, ``error provider_network``."""
        return (
            f"{self.status} {self.reason}"
            if self.reason  # a fail has one only when it tampered with its verifiers
            else str(self.status)
        )

    @property
    def message(self) -> str:
        """The first thing to read: ``check: exit 1`` (a verifier's first detail line), the first error, or
        where a replay diverged; empty when the run says nothing more than its label."""
        for v in self.verifiers:
            return f"{v.id}: {v.detail[0]}" if v.detail else f"{v.id}: {v.status}"
        if self.errors:
            return self.errors[0]
        return f"diverged at {self.divergence}" if self.divergence else ""

    @property
    def message_key(self) -> tuple[object, ...]:
        """What must be equal for two runs to be listed once: the task (report.html filters by task) and all
        the run says."""
        return (
            self.task_id,
            self.status,
            self.reason,
            self.verifiers,
            self.errors,
            self.divergence,
            self.divergence_lines,
            tuple(kind for kind, _ in self.incidents),
        )


class FailureGroup(Frozen, frozen=True, kw_only=True):
    """Runs that did not pass with the same message; ``runs[0]`` shows it for all of them."""

    runs: tuple[FailingRun, ...]

    @property
    def first(self) -> FailingRun:
        """The run that shows the group's message (its first in task and repetition order)."""
        return self.runs[0]

    @property
    def heading(self) -> str:
        """``fix-add rep 0: fail`` for one run; ``fix-add, 5 runs: fail: check: exit 1`` for several."""
        first = self.first
        if len(self.runs) == 1:
            return f"{first.task_id} rep {first.repetition}: {first.label}"
        message = f": {first.message}" if first.message else ""
        return f"{first.task_id}, {plural(len(self.runs), 'run')}: {first.label}{message}"


def runs_text(runs: Sequence[FailingRun]) -> str:
    """``fix-add rep 0, 1, 4; parse-config rep 2``: which runs, task by task in their order."""
    tasks: dict[str, list[str]] = {}
    for run in runs:
        tasks.setdefault(run.task_id, []).append(str(run.repetition))
    return "; ".join(f"{task} rep {', '.join(reps)}" for task, reps in tasks.items())


_SHELL_SAFE = re.compile(r"[A-Za-z0-9._/:@%+=,-]+")


def shell_word(text: str) -> str:
    """``text`` as one POSIX shell word: as is when it holds only safe characters, else single-quoted."""
    if _SHELL_SAFE.fullmatch(text):
        return text
    return "'" + text.replace("'", "'\"'\"'") + "'"


def show_command(run_id: str, task_id: str, repetition: int) -> str:
    """``alisio eval show <runId> --task <task> --rep <n>``: the command that prints one run's transcript
    (``run_id`` may be a report directory's path instead: ``eval show`` takes either)."""
    return f"alisio eval show {shell_word(run_id)} --task {shell_word(task_id)} --rep {repetition}"


def divergence_lines(divergence: Divergence) -> tuple[str, ...]:
    """The lines under a divergence's message when its first difference was a file's hash and the recording
    holds the file's lines: a heading and how they changed (``-`` recorded, ``+`` now); none otherwise."""
    if not divergence.changed:
        return ()
    return ("the file's hash differs; its lines (- recorded, + now):", *divergence.changed)


def _cut_lines(text: str, known: tuple[tuple[str, str], ...]) -> tuple[tuple[str, ...], int]:
    """The first ``DETAIL_LINES`` non-blank lines of ``text`` (redacted), each cut at ``LINE_CHARS``, and
    how many lines were left out."""
    lines = [line.rstrip() for line in redact(text, known).splitlines() if line.strip()]
    shown = tuple(line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…" for line in lines)
    return shown[:DETAIL_LINES], max(0, len(lines) - DETAIL_LINES)


def _failing_run(record: RunRecord, run_id: str, known: tuple[tuple[str, str], ...]) -> FailingRun:
    verifiers = []
    for v in record.verifiers:
        if v.status is VerifierStatus.PASS:
            continue
        detail, more = _cut_lines(v.detail, known)
        verifiers.append(
            VerifierProblem(id=v.id, kind=v.kind, status=v.status, detail=detail, more_lines=more)
        )
    errors = tuple(lines[0] for lines, _ in (_cut_lines(e, known) for e in record.errors[:3]) if lines)
    divergence: str | None = None
    changed: tuple[str, ...] = ()
    if record.divergence is not None:
        d = record.divergence
        divergence = redact(f"call {d.call_index}, field {d.field}", known)
        changed = tuple(redact(line, known) for line in divergence_lines(d))
    counts: dict[str, int] = {}
    seen: dict[str, None] = {}
    for incident in record.incidents:
        counts[incident.kind] = counts.get(incident.kind, 0) + 1
        shown, _ = _cut_lines(f"{incident.kind}: {incident.message or incident.kind}", known)
        seen.update(dict.fromkeys(shown[:1]))
    return FailingRun(
        task_id=record.task_id,
        repetition=record.repetition,
        status=record.status,
        reason=record.reason,
        verifiers=tuple(verifiers),
        errors=errors,
        divergence=divergence,
        divergence_lines=changed,
        incidents=tuple(counts.items()),
        incident_lines=tuple(seen)[:DETAIL_LINES],
        show=show_command(run_id, record.task_id, record.repetition),
    )


def failing_runs(
    records: Iterable[RunRecord],
    run_id: str,
    known: tuple[tuple[str, str], ...] = (),
    limit: int | None = None,
) -> tuple[tuple[FailingRun, ...], int]:
    """The runs that did not pass, in task and repetition order, and how many there are.

    Args:
        records: the arm's records, in any order.
        run_id: the report's run id, or its directory's path (what the ``eval show`` command is given).
        known: exact credentials to redact from details and errors (``alisio.core.share.secrets``).
        limit: list at most this many (``None``: all); the count is of all of them.
    """
    failing = sorted(
        (r for r in records if r.status is not RunStatus.PASS), key=lambda r: (r.task_id, r.repetition)
    )
    shown = failing if limit is None else failing[:limit]
    return tuple(_failing_run(r, run_id, known) for r in shown), len(failing)


def group_failures(runs: Iterable[FailingRun]) -> tuple[FailureGroup, ...]:
    """``runs`` grouped by their message, each group in the order of its first run (runs in their order)."""
    groups: dict[tuple[object, ...], list[FailingRun]] = {}
    for run in runs:
        groups.setdefault(run.message_key, []).append(run)
    return tuple(FailureGroup(runs=tuple(mine)) for mine in groups.values())
