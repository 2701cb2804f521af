"""Judging a suite's own checks, with no model: ``alisio eval selfcheck`` (and ``eval validate --selfcheck``).

The shell (``alisio.shell.lab.selfcheck``) copies each task's fixture, runs its verifiers and hands over
what happened as a ``TaskObservation``; every decision is made here:

- **no-op**: the verifiers that can be judged without a run (all but ``tool-sequence``, which needs an event
  log) run on the untouched copy. When every one of them passes, the task is flagged "passes with no change":
  an agent that does nothing would score. A verifier that cannot run there (``error``) is flagged too.
- **oracle**: where the task has a ``solution``, it is applied to a fresh copy and every judged verifier must
  pass; a failing verifier, or a solution that cannot be applied, is flagged.
- **repeat**: every ``command`` verifier runs N times on the same final tree (the oracle's when there is a
  solution, else the untouched copy). Outcomes that differ flag a nondeterministic verifier.
- **time**: a command verifier whose slowest run took more than half its ``timeoutMs`` is a warning, not a
  flag (a slower machine would time it out).

A task is clean when nothing is flagged; the command exits 1 when any task is flagged.

Each self-check is kept in the data directory under the suite's content hash (``StoredSelfCheck``, one entry
per task, the latest check of each task winning: ``merged_selfcheck``), and every report of the same suite
content says what it found over its own tasks (``self_check_block``, ``alisio.core.lab.reports.trust``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from alisio.core.base import Frozen
from alisio.core.lab.reports.trust import SelfCheckBlock
from alisio.core.lab.runs.records import VerifierResult, VerifierStatus

__all__ = [
    "SELFCHECK_SCHEMA_VERSION",
    "SelfCheck",
    "StoredSelfCheck",
    "StoredTask",
    "TaskCheck",
    "TaskObservation",
    "VerifierRepeat",
    "judge_task",
    "merged_selfcheck",
    "render_selfcheck",
    "self_check",
    "self_check_block",
    "task_line",
]

NoopCell = Literal["fails", "PASSES", "error"]
OracleCell = Literal["passes", "FAILS", "error", "none"]
RepeatCell = Literal["same", "DIFFERS", "none"]


class VerifierRepeat(Frozen, frozen=True, kw_only=True):
    """One command verifier run N times on the same tree."""

    id: str
    statuses: tuple[VerifierStatus, ...]
    durations_ms: tuple[int, ...]
    timeout_ms: int


class TaskObservation(Frozen, frozen=True, kw_only=True):
    """What the shell saw for one task."""

    task_id: str
    noop: tuple[VerifierResult, ...] = ()
    """The judged verifiers on the untouched copy."""
    noop_error: str = ""
    """The copy could not be prepared (then nothing else was run)."""
    oracle: tuple[VerifierResult, ...] | None = None
    """The judged verifiers after the solution; None when the task has no solution."""
    oracle_error: str = ""
    """The solution could not be applied."""
    repeats: tuple[VerifierRepeat, ...] = ()
    not_judged: tuple[str, ...] = ()
    """Verifiers that need a run (tool-sequence): not judged here."""


class TaskCheck(Frozen, frozen=True, kw_only=True):
    """The self-check of one task: the table's cells, then what is flagged and warned about."""

    task_id: str
    noop: NoopCell
    oracle: OracleCell
    repeat: RepeatCell
    runs: int
    """How many times each command verifier ran on the final tree."""
    slowest_ms: int | None
    """The slowest command verifier run, or None when the task has none."""
    flags: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    not_judged: tuple[str, ...] = ()


class SelfCheck(Frozen, frozen=True, kw_only=True):
    """A suite's self-check."""

    suite_id: str
    suite_version: str
    repeat: int
    tasks: tuple[TaskCheck, ...]
    flagged: int
    """Tasks with at least one flag."""
    warned: int
    """Tasks with at least one warning."""
    clean: bool


def _failures(results: Sequence[VerifierResult], status: VerifierStatus) -> list[str]:
    return [f"{result.id}: {result.detail}" for result in results if result.status is status]


def _noop(observation: TaskObservation) -> tuple[NoopCell, list[str]]:
    errors = _failures(observation.noop, VerifierStatus.ERROR)
    if observation.noop_error or errors:
        why = observation.noop_error or "; ".join(errors)
        return "error", [f"a verifier cannot run on the untouched fixture: {why}"]
    if all(result.status is VerifierStatus.PASS for result in observation.noop):
        passing = ", ".join(result.id for result in observation.noop) or "no verifier can be judged"
        return "PASSES", [f"passes with no change (on the untouched fixture: {passing})"]
    return "fails", []


def _oracle(observation: TaskObservation) -> tuple[OracleCell, list[str]]:
    if observation.oracle_error:
        return "error", [f"the reference solution cannot be applied: {observation.oracle_error}"]
    if observation.oracle is None:
        return "none", []
    bad = _failures(observation.oracle, VerifierStatus.FAIL) + _failures(
        observation.oracle, VerifierStatus.ERROR
    )
    if bad:
        return "FAILS", [f"the reference solution does not pass: {'; '.join(bad)}"]
    return "passes", []


def _repeat(observation: TaskObservation) -> tuple[RepeatCell, list[str], list[str]]:
    flags: list[str] = []
    warnings: list[str] = []
    for repeat in observation.repeats:
        if len(set(repeat.statuses)) > 1:
            shown = ", ".join(str(status) for status in repeat.statuses)
            flags.append(f"nondeterministic verifier {repeat.id}: {shown} on the same tree")
        slowest = max(repeat.durations_ms, default=0)
        if slowest * 2 > repeat.timeout_ms:
            warnings.append(
                f"verifier {repeat.id} took {slowest} ms, more than half its timeoutMs ({repeat.timeout_ms})"
            )
    if not observation.repeats:
        return "none", flags, warnings
    return ("DIFFERS" if flags else "same"), flags, warnings


def judge_task(observation: TaskObservation) -> TaskCheck:
    """The table row, flags and warnings of one task."""
    noop, noop_flags = _noop(observation)
    oracle, oracle_flags = _oracle(observation)
    repeat, repeat_flags, warnings = _repeat(observation)
    durations = [ms for repeat_ in observation.repeats for ms in repeat_.durations_ms]
    return TaskCheck(
        task_id=observation.task_id,
        noop=noop,
        oracle=oracle,
        repeat=repeat,
        runs=max((len(r.statuses) for r in observation.repeats), default=0),
        slowest_ms=max(durations) if durations else None,
        flags=(*noop_flags, *oracle_flags, *repeat_flags),
        warnings=tuple(warnings),
        not_judged=observation.not_judged,
    )


def self_check(
    suite_id: str, suite_version: str, repeat: int, observations: Sequence[TaskObservation]
) -> SelfCheck:
    """Judge every task; the suite is clean when no task is flagged (warnings do not count)."""
    tasks = tuple(judge_task(observation) for observation in observations)
    flagged = sum(1 for task in tasks if task.flags)
    return SelfCheck(
        suite_id=suite_id,
        suite_version=suite_version,
        repeat=repeat,
        tasks=tasks,
        flagged=flagged,
        warned=sum(1 for task in tasks if task.warnings),
        clean=flagged == 0,
    )


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()


def render_selfcheck(check: SelfCheck) -> str:
    """The table (task, no-op, oracle, repeat, time), then each flag and warning, then a summary line."""
    header = ("task", "no-op", "oracle", "repeat", "time")
    rows = [
        (
            task.task_id,
            task.noop,
            task.oracle,
            f"{task.repeat} ({task.runs}x)" if task.repeat != "none" else "none",
            f"{task.slowest_ms} ms" if task.slowest_ms is not None else "-",
        )
        for task in check.tasks
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = [_row(header, widths), *(_row(row, widths) for row in rows)]
    for task in check.tasks:
        lines += [f"flagged: {task.task_id}: {flag}" for flag in task.flags]
        lines += [f"warning: {task.task_id}: {warning}" for warning in task.warnings]
    count = len(check.tasks)
    verdict = "clean" if check.clean else f"{check.flagged} flagged"
    lines.append(
        f"selfcheck {check.suite_id} {check.suite_version}: {count} task{'s' if count != 1 else ''}, "
        f"{verdict}, {check.warned} with warnings"
    )
    return "\n".join(lines) + "\n"


SELFCHECK_SCHEMA_VERSION = 1


class StoredTask(Frozen, frozen=True, kw_only=True):
    """One task's latest self-check, as the data directory keeps it."""

    task_id: str
    noop: NoopCell
    oracle: OracleCell
    checked_at: str
    """When it ran (ISO 8601 UTC)."""


class StoredSelfCheck(Frozen, frozen=True, kw_only=True):
    """The self-checks of one suite content (``<dataDir>/selfcheck/<contentHash>.json``)."""

    schema_version: int = SELFCHECK_SCHEMA_VERSION
    suite_id: str
    suite_version: str
    content_hash: str
    tasks: tuple[StoredTask, ...] = ()
    """Sorted by task id."""


def merged_selfcheck(
    previous: StoredSelfCheck | None, check: SelfCheck, content_hash: str, checked_at: str
) -> StoredSelfCheck:
    """``previous`` (of the same content hash) with the tasks of ``check`` replaced by what it found now."""
    now = {
        task.task_id: StoredTask(
            task_id=task.task_id, noop=task.noop, oracle=task.oracle, checked_at=checked_at
        )
        for task in check.tasks
    }
    kept = {task.task_id: task for task in previous.tasks} if previous is not None else {}
    tasks = tuple(sorted({**kept, **now}.values(), key=lambda task: task.task_id))
    return StoredSelfCheck(
        suite_id=check.suite_id, suite_version=check.suite_version, content_hash=content_hash, tasks=tasks
    )


def self_check_block(stored: StoredSelfCheck | None, task_ids: Sequence[str]) -> SelfCheckBlock:
    """What the self-checks kept for a suite's content say of ``task_ids`` (a report's tasks)."""
    by_id = {task.task_id: task for task in stored.tasks} if stored is not None else {}
    checked = [by_id[task_id] for task_id in sorted(set(task_ids)) if task_id in by_id]
    with_solution = [task for task in checked if task.oracle != "none"]
    return SelfCheckBlock(
        tasks=len(set(task_ids)),
        checked=len(checked),
        noop_passing=tuple(task.task_id for task in checked if task.noop == "PASSES"),
        noop_errors=tuple(task.task_id for task in checked if task.noop == "error"),
        solutions=len(with_solution),
        solution_passes=sum(1 for task in with_solution if task.oracle == "passes"),
        checked_at=max((task.checked_at for task in checked), default=None),
    )


def task_line(index: int, total: int, task: TaskCheck) -> str:
    """One task's progress line, as it is checked: ``[3/164] humaneval-2: no-op fails, oracle passes, repeat
    same (1x)``, then ``: flagged: <its first flag>`` (cut at 120 characters; the table after has it whole)
    and how many more, when it is flagged."""
    repeat = f"{task.repeat} ({task.runs}x)" if task.repeat != "none" else "none"
    line = f"[{index}/{total}] {task.task_id}: no-op {task.noop}, oracle {task.oracle}, repeat {repeat}"
    if not task.flags:
        return line
    more = f" (and {len(task.flags) - 1} more)" if len(task.flags) > 1 else ""
    flag = task.flags[0] if len(task.flags[0]) <= _FLAG_CHARS else task.flags[0][: _FLAG_CHARS - 1] + "…"
    return f"{line}: flagged: {flag}{more}"


_FLAG_CHARS = 120
