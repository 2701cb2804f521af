"""``eval rejudge``: a report's runs judged again by the suite as it is now, without the model.

For each run of the report (``alisio.core.lab.judges.rejudge`` decides what happens to it): a fresh copy of the
task's fixture (``prepare_workspace``, as a run makes it), the run's kept workspace diff applied to it
(``workspace_kept.apply_changes``), its protected files checked and put back (``integrity``), then the task's
verifiers (``verifiers.run_verifiers``), with the run's transcript as the event log the tool-sequence
verifiers read. No provider is built and no model is called. Runs are judged ``jobs`` at once (the work is
the verifiers' subprocesses); the records come back in the report's order.

The new report (runs.jsonl, report.json, report.md, report.html, and each run's transcript and kept diff,
copied so ``eval show`` and ``eval diff`` read them) goes to ``--out`` or to a new run directory of
``<dataDir>/eval``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from returns.result import Failure, Success

from alisio.core.agents.external import kind_tools
from alisio.core.harness.events import AgentExited, Event, RunEnded, RunStarted
from alisio.core.lab.judges.outcome import record_from_run
from alisio.core.lab.judges.rejudge import (
    DIFF_DOES_NOT_APPLY,
    TASK_MISSING,
    TRANSCRIPT_MISSING,
    WORKSPACE_NOT_KEPT,
    not_judged_record,
    rejudged_record,
)
from alisio.core.lab.judges.verify import AgentTools
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.runs.transcript import decode_transcript, transcript_path
from alisio.core.lab.runs.workspace_diff import decode_workspace_diff, diff_path
from alisio.core.lab.suites.schedule import RunSpec
from alisio.core.lab.suites.suite import Task
from alisio.shell.lab.integrity import guard_protected
from alisio.shell.lab.store import read_regular
from alisio.shell.lab.suites import LoadedSuite
from alisio.shell.lab.task_sandbox import task_sandboxes
from alisio.shell.lab.verifiers import run_verifiers
from alisio.shell.lab.workspace import WorkspaceError, prepare_workspace, snapshot_tree
from alisio.shell.lab.workspace_kept import apply_changes
from alisio.shell.sandbox.bwrap import Sandbox

__all__ = ["Judged", "Rejudging", "copy_evidence", "rejudge_runs", "staged"]


@dataclass(frozen=True)
class Rejudging:
    """What every run's rejudge shares."""

    source: Path
    """The report directory judged again."""
    loaded: LoadedSuite
    env: Mapping[str, str]
    """The verifiers' environment."""
    agent_tools: Mapping[str, frozenset[str]]
    """The lab tools of each configured external agent, by name."""
    sandbox: Sandbox | None = None
    jobs: int = 1


@dataclass(frozen=True)
class Judged:
    """One run's new record, and whether it was judged again (or kept as it was)."""

    record: RunRecord
    rejudged: bool
    kept: bool


def _events(source: Path, record: RunRecord) -> tuple[Event, ...] | None:
    try:
        return decode_transcript(read_regular(source / transcript_path(record.task_id, record.repetition)))
    except (OSError, ValueError):
        return None


def _tools(events: Sequence[Event], configured: Mapping[str, frozenset[str]]) -> AgentTools | None:
    """An external agent's tools (``None``: the built-in agent, every tool), for tool-sequence rules."""
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    if started is None or started.policy_mode != "external" or started.agent is None:
        return None
    if started.agent in configured:
        return AgentTools(agent=started.agent, tools=configured[started.agent])
    exited = next((e for e in events if isinstance(e, AgentExited)), None)
    return AgentTools(agent=started.agent, tools=kind_tools(exited.kind if exited else "command"))


def _judge(
    ctx: Rejudging, task: Task, record: RunRecord, events: tuple[Event, ...], ended: RunEnded
) -> RunRecord:
    """Apply the kept diff to a fresh copy, check the protected files, run the verifiers."""
    source = ctx.source / diff_path(record.task_id, record.repetition)
    try:
        data = read_regular(source)
    except OSError as error:
        why = f"{source.name}: {error.strerror or error}"
        return not_judged_record(record, WORKSPACE_NOT_KEPT, f"the kept workspace cannot be read: {why}")
    match decode_workspace_diff(data, source.name):
        case Failure(problem):
            return not_judged_record(record, WORKSPACE_NOT_KEPT, problem)
        case Success(diff):
            pass
    fixture = ctx.loaded.fixture_dir(task)
    with prepare_workspace(fixture, fixture_git=task.fixture_git, keep=False, prefix=_prefix(task)) as ws:
        problem = apply_changes(diff, ws.path)
        if problem is not None:
            return not_judged_record(
                record, DIFF_DOES_NOT_APPLY, f"the kept diff no longer applies: {problem}"
            )
        tampered = guard_protected(task, ws, snapshot_tree(ws.path))
        _, verify_in = task_sandboxes(ctx.sandbox, task, ctx.loaded.directory, ws.path, network=False)
        verifiers = run_verifiers(
            task, ws, events, env=ctx.env, agent=_tools(events, ctx.agent_tools), sandbox=verify_in
        )
    spec = RunSpec(
        task_id=record.task_id, repetition=record.repetition, seed=record.seed, variant=record.variant
    )
    judged = record_from_run(
        spec,
        events,
        ended.outcome,
        ended.reason,
        verifiers,
        config_hash=record.config_hash,
        expected_verifiers=len(task.verifiers),
        tampered=tampered,
    )
    return rejudged_record(record, judged)


def _prefix(task: Task) -> str:
    from alisio.shell.stale import owned_prefix

    return owned_prefix(f"rejudge-{task.id[:40]}")


def _one(ctx: Rejudging, tasks: Mapping[str, Task], record: RunRecord) -> Judged:
    task = tasks.get(record.task_id)
    if task is None:
        message = f"the suite has no task {record.task_id} any more"
        return Judged(record=not_judged_record(record, TASK_MISSING, message), rejudged=False, kept=False)
    events = _events(ctx.source, record)
    ended = next((e for e in reversed(events or ()) if isinstance(e, RunEnded)), None)
    if events is None or ended is None:
        where = transcript_path(record.task_id, record.repetition)
        message = f"{where} is missing or unreadable: the run's events are needed to judge it"
        return Judged(
            record=not_judged_record(record, TRANSCRIPT_MISSING, message), rejudged=False, kept=False
        )
    if ended.outcome == "error":  # the agent's run broke: nothing was left to judge
        return Judged(record=record, rejudged=False, kept=True)
    if record.workspace is None or not record.workspace.kept:
        why = (
            record.workspace.reason if record.workspace is not None else "it was written before runs kept it"
        )
        message = f"the workspace the agent left was not kept: {why}"
        return Judged(
            record=not_judged_record(record, WORKSPACE_NOT_KEPT, message), rejudged=False, kept=False
        )
    try:
        new = _judge(ctx, task, record, events, ended)
    except (WorkspaceError, OSError) as error:
        return Judged(
            record=not_judged_record(record, "fixture_copy", str(error)), rejudged=False, kept=False
        )
    return Judged(
        record=new, rejudged=new.reason not in (DIFF_DOES_NOT_APPLY, WORKSPACE_NOT_KEPT), kept=False
    )


def rejudge_runs(
    ctx: Rejudging, records: Sequence[RunRecord], on_done: Callable[[Judged], None] = lambda judged: None
) -> tuple[Judged, ...]:
    """Every run of ``records`` judged again (module docstring), in their order."""
    tasks = {task.id: task for task in ctx.loaded.suite.tasks}

    def one(record: RunRecord) -> Judged:
        judged = _one(ctx, tasks, record)
        on_done(judged)
        return judged

    if ctx.jobs <= 1:
        return tuple(one(record) for record in records)
    with ThreadPoolExecutor(max_workers=ctx.jobs, thread_name_prefix="alisio-rejudge") as pool:
        return tuple(pool.map(one, records))


def copy_evidence(source: Path, target: Path, records: Sequence[RunRecord]) -> None:
    """Copy each run's transcript and kept diff from ``source`` to ``target`` (those that exist).

    Raises:
        OSError: a file cannot be copied.
    """
    for record in records:
        for relative in (
            transcript_path(record.task_id, record.repetition),
            diff_path(record.task_id, record.repetition),
        ):
            if (source / relative).is_file():
                (target / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source / relative, target / relative)


@contextlib.contextmanager
def staged(directory: Path) -> Iterator[Path]:
    """A new directory beside ``directory`` to write the report into: when the block ends without an error its
    files take ``directory``'s place (one rename when ``directory`` is absent or empty, else entry by entry);
    when it raises, nothing of it is left and ``directory`` is as it was (no half-written report).

    Raises:
        OSError: the staging directory cannot be created, or its files cannot be moved into place.
    """
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    try:
        yield staging
        try:
            os.replace(staging, directory)
        except OSError as error:
            if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            entries = sorted(staging.iterdir())
            taken = [entry.name for entry in entries if (directory / entry.name).exists()]
            if taken:  # checked before any is moved: all of the report goes in, or none
                raise FileExistsError(errno.EEXIST, f"it holds {', '.join(taken)} already") from None
            for entry in entries:
                os.replace(entry, directory / entry.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
