"""Running a suite's self-check: the facts ``alisio.core.lab.judges.selfcheck`` judges, gathered with no model.

For each task, in throwaway copies made by the lab's own ``prepare_workspace`` and judged by the lab's own
``run_verifiers`` (the same code a run uses, so a self-check sees what a run would):

1. the untouched copy: every verifier but ``tool-sequence`` (it needs a run's event log);
2. with a ``solution``, a fresh copy with it applied (a directory is laid over the copy; a file is run with
   ``bash`` in it, within the task's ``maxWallMs``), judged the same way;
3. on that final tree (2's, else 1's), each ``command`` verifier alone, ``repeat`` times, timed (its first
   outcome is its result in 1 or 2).

The file and tree-diff verifiers are judged before the commands (the tree is snapshot before any command
writes to it, as in a run): a file verifier that reads what a command verifier writes is not supported here.

Tasks run in parallel on ``jobs`` threads (the work is subprocesses). Nothing here raises for what a suite
holds: a copy or a solution that fails is an observation with its reason.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import msgspec

from alisio.core.harness.toolenv import scrubbed_env
from alisio.core.lab.judges.selfcheck import SelfCheck, TaskObservation, VerifierRepeat, self_check
from alisio.core.lab.records import VerifierResult
from alisio.core.lab.suites.suite import CommandVerifier, Task, ToolSequenceVerifier
from alisio.core.lab.suites.suite_paths import normalize
from alisio.shell.lab.suites import LoadedSuite
from alisio.shell.lab.verifiers import run_argv, run_verifiers
from alisio.shell.lab.workspace import Workspace, WorkspaceError, prepare_workspace

__all__ = ["apply_solution", "observe_task", "run_selfcheck"]


def run_selfcheck(loaded: LoadedSuite, *, repeat: int = 3, jobs: int = 1) -> SelfCheck:
    """Self-check every task of ``loaded`` (``repeat`` runs of each command verifier, ``jobs`` tasks at once)."""
    env = scrubbed_env(os.environ)
    tasks = loaded.suite.tasks
    if jobs <= 1:
        observations = [observe_task(loaded, task, repeat=repeat, env=env) for task in tasks]
    else:
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="alisio-selfcheck") as pool:
            observations = list(pool.map(lambda t: observe_task(loaded, t, repeat=repeat, env=env), tasks))
    return self_check(loaded.suite.suite_id, loaded.suite.suite_version, repeat, observations)


def observe_task(loaded: LoadedSuite, task: Task, *, repeat: int, env: Mapping[str, str]) -> TaskObservation:
    """The no-op, oracle and repeat facts of one task."""
    judged = msgspec.structs.replace(
        task, verifiers=tuple(v for v in task.verifiers if not isinstance(v, ToolSequenceVerifier))
    )
    not_judged = tuple(v.id for v in task.verifiers if isinstance(v, ToolSequenceVerifier))
    fixture = loaded.fixture_dir(task)
    prefix = f"alisio-selfcheck-{task.id[:40]}-"
    try:
        with prepare_workspace(fixture, fixture_git=task.fixture_git, keep=False, prefix=prefix) as work:
            noop, repeats = _judge_tree(judged, work, repeat if task.solution is None else 1, env)
        if task.solution is None:
            return TaskObservation(task_id=task.id, noop=noop, repeats=repeats, not_judged=not_judged)
        with prepare_workspace(fixture, fixture_git=task.fixture_git, keep=False, prefix=prefix) as work:
            problem = apply_solution(loaded.directory / normalize(task.solution), work, task, env)
            if problem is not None:
                return TaskObservation(
                    task_id=task.id, noop=noop, oracle_error=problem, not_judged=not_judged
                )
            oracle, repeats = _judge_tree(judged, work, repeat, env)
    except WorkspaceError as error:
        return TaskObservation(task_id=task.id, noop_error=str(error), not_judged=not_judged)
    return TaskObservation(task_id=task.id, noop=noop, oracle=oracle, repeats=repeats, not_judged=not_judged)


def apply_solution(solution: Path, work: Workspace, task: Task, env: Mapping[str, str]) -> str | None:
    """Apply a reference solution to ``work``; None when it was applied, else why it could not be."""
    if solution.is_dir():
        try:
            shutil.copytree(solution, work.path, symlinks=True, dirs_exist_ok=True)
        except (shutil.Error, OSError) as error:
            return f"cannot lay {solution} over the copy: {error}"
        return None
    if not solution.is_file():
        return f"{solution} is neither a directory nor a file"
    facts = run_argv(
        ["bash", str(solution.resolve())],
        cwd=str(work.path),
        env=env,
        timeout_s=task.budget.max_wall_ms / 1000,
    )
    if not facts.started:
        return f"{solution} did not start: {facts.start_error}"
    if facts.timed_out:
        return f"{solution} timed out after {task.budget.max_wall_ms} ms (the task's maxWallMs)"
    if facts.exit_code != 0:
        tail = (facts.stderr_excerpt or facts.stdout).strip().splitlines()[-1:] or ["no output"]
        return f"{solution} exited {facts.exit_code}: {tail[0][:200]}"
    return None


def _judge_tree(
    task: Task, work: Workspace, runs: int, env: Mapping[str, str]
) -> tuple[tuple[VerifierResult, ...], tuple[VerifierRepeat, ...]]:
    """Every verifier of ``task`` on the tree as it is (in suite order), each command one ``runs`` times.

    The file and tree-diff verifiers are judged first, by one ``run_verifiers`` call (so the tree is
    snapshot before any command writes to it, as in a run); then each command verifier alone, timed, ``runs``
    times: its first outcome is its result.
    """
    others = msgspec.structs.replace(
        task, verifiers=tuple(v for v in task.verifiers if not isinstance(v, CommandVerifier))
    )
    by_id: dict[str, VerifierResult] = {}
    if others.verifiers:
        by_id = {result.id: result for result in run_verifiers(others, work, (), env=env)}
    repeats: list[VerifierRepeat] = []
    for verifier in task.verifiers:
        if not isinstance(verifier, CommandVerifier):
            continue
        alone = msgspec.structs.replace(task, verifiers=(verifier,))
        results: list[VerifierResult] = []
        durations: list[int] = []
        for _ in range(runs):
            started = time.monotonic()
            results += run_verifiers(alone, work, (), env=env)
            durations.append(round((time.monotonic() - started) * 1000))
        by_id[verifier.id] = results[0]
        repeats.append(
            VerifierRepeat(
                id=verifier.id,
                statuses=tuple(result.status for result in results),
                durations_ms=tuple(durations),
                timeout_ms=verifier.timeout_ms,
            )
        )
    return tuple(by_id[verifier.id] for verifier in task.verifiers), tuple(repeats)
