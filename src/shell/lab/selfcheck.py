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

With a ``sandbox`` (``--sandbox bwrap``) the verifiers and a script solution run inside it, as in a run:
the copy at the task's ``sandbox.workdir``, the verifiers with its ``verifierMounts``, the solution with its
own directory at ``/solution`` (``alisio.shell.lab.task_sandbox``). A task that needs the sandbox is refused
without one, before anything runs.

Tasks run in parallel on ``jobs`` threads (the work is subprocesses). Nothing here raises for what a suite
holds: a copy or a solution that fails is an observation with its reason.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import msgspec

from alisio.core.harness.sandbox import SOLUTION
from alisio.core.harness.toolenv import scrubbed_env
from alisio.core.lab.judges.selfcheck import (
    SelfCheck,
    TaskCheck,
    TaskObservation,
    VerifierRepeat,
    judge_task,
    self_check,
)
from alisio.core.lab.runs.records import VerifierResult
from alisio.core.lab.suites.suite import CommandVerifier, Task, ToolSequenceVerifier
from alisio.core.lab.suites.suite_paths import normalize
from alisio.shell.errors import CommandError
from alisio.shell.lab.preflight import grouped
from alisio.shell.lab.suites import LoadedSuite
from alisio.shell.lab.task_sandbox import sandbox_refusal, solution_sandbox, task_sandboxes
from alisio.shell.lab.verifiers import run_argv, run_verifiers
from alisio.shell.lab.workspace import Workspace, WorkspaceError, prepare_workspace
from alisio.shell.sandbox.bwrap import Sandbox, SandboxRun

__all__ = ["Checker", "apply_solution", "observe_task", "run_selfcheck"]


@dataclass(frozen=True)
class Checker:
    """What every task's self-check shares."""

    loaded: LoadedSuite
    repeat: int
    env: Mapping[str, str]
    sandbox: Sandbox | None = None


def run_selfcheck(
    loaded: LoadedSuite,
    *,
    repeat: int = 3,
    jobs: int = 1,
    sandbox: Sandbox | None = None,
    tasks: Sequence[Task] | None = None,
    confirm: Callable[[], None] | None = None,
    on_task: Callable[[int, int, TaskCheck], None] | None = None,
) -> SelfCheck:
    """Self-check ``tasks`` of ``loaded`` (default: all; ``repeat`` runs of each command verifier, ``jobs``
    tasks at once), in ``sandbox`` when given; ``confirm`` is called once every task could run, before the
    first command (the trust rule: it raises to refuse); ``on_task(done, total, check)`` as each task ends
    (from the thread that checked it, one call at a time).

    Raises:
        CommandError: without a sandbox, a task that needs one; a Harbor task imported by an earlier alisio
            (``sandbox_refusal``; one line each); nothing was checked. What ``confirm`` raises.
    """
    chosen = tuple(loaded.suite.tasks if tasks is None else tasks)
    refusals = [(task.id, sandbox_refusal(task, sandboxed=sandbox is not None)) for task in chosen]
    refused = [(task_id, refusal) for task_id, refusal in refusals if refusal is not None]
    if refused:
        raise CommandError(*grouped(refused), "nothing was checked")
    if confirm is not None:
        confirm()
    checker = Checker(loaded=loaded, repeat=repeat, env=scrubbed_env(os.environ), sandbox=sandbox)
    lock, done = threading.Lock(), [0]

    def observed(task: Task) -> TaskObservation:
        observation = observe_task(checker, task)
        if on_task is not None:
            with lock:
                done[0] += 1
                on_task(done[0], len(chosen), judge_task(observation))
        return observation

    if jobs <= 1:
        observations = [observed(task) for task in chosen]
    else:
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="alisio-selfcheck") as pool:
            observations = list(pool.map(observed, chosen))
    return self_check(loaded.suite.suite_id, loaded.suite.suite_version, repeat, observations)


def observe_task(checker: Checker, task: Task) -> TaskObservation:
    """The no-op, oracle and repeat facts of one task."""
    loaded, repeat, env = checker.loaded, checker.repeat, checker.env
    judged = msgspec.structs.replace(
        task, verifiers=tuple(v for v in task.verifiers if not isinstance(v, ToolSequenceVerifier))
    )
    not_judged = tuple(v.id for v in task.verifiers if isinstance(v, ToolSequenceVerifier))
    fixture = loaded.fixture_dir(task)
    prefix = f"alisio-selfcheck-{task.id[:40]}-"
    try:
        with prepare_workspace(fixture, fixture_git=task.fixture_git, keep=False, prefix=prefix) as work:
            _, verify_in = task_sandboxes(checker.sandbox, task, loaded.directory, work.path, network=False)
            noop, repeats = _judge_tree(judged, work, repeat if task.solution is None else 1, env, verify_in)
        if task.solution is None:
            return TaskObservation(task_id=task.id, noop=noop, repeats=repeats, not_judged=not_judged)
        with prepare_workspace(fixture, fixture_git=task.fixture_git, keep=False, prefix=prefix) as work:
            agent, verify_in = task_sandboxes(
                checker.sandbox, task, loaded.directory, work.path, network=False
            )
            solution = loaded.directory / normalize(task.solution)
            problem = apply_solution(solution, work, task, env, agent)
            if problem is not None:
                return TaskObservation(
                    task_id=task.id, noop=noop, oracle_error=problem, not_judged=not_judged
                )
            oracle, repeats = _judge_tree(judged, work, repeat, env, verify_in)
    except WorkspaceError as error:
        return TaskObservation(task_id=task.id, noop_error=str(error), not_judged=not_judged)
    return TaskObservation(task_id=task.id, noop=noop, oracle=oracle, repeats=repeats, not_judged=not_judged)


def apply_solution(
    solution: Path, work: Workspace, task: Task, env: Mapping[str, str], sandbox: SandboxRun | None = None
) -> str | None:
    """Apply a reference solution to ``work``; None when it was applied, else why it could not be.

    A script runs with ``bash`` in the copy; in a ``sandbox``, as ``bash /solution/NAME`` with its
    directory at ``/solution`` (read-only), from the copy (the task's workdir)."""
    if solution.is_dir():
        try:
            shutil.copytree(solution, work.path, symlinks=True, dirs_exist_ok=True)
        except (shutil.Error, OSError) as error:
            return f"cannot lay {solution} over the copy: {error}"
        return None
    if not solution.is_file():
        return f"{solution} is neither a directory nor a file"
    inside = None if sandbox is None else solution_sandbox(sandbox, solution)
    facts = run_argv(
        ["bash", str(solution.resolve()) if inside is None else f"{SOLUTION}/{solution.resolve().name}"],
        cwd=str(work.path),
        env=env,
        timeout_s=task.budget.max_wall_ms / 1000,
        sandbox=inside,
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
    task: Task, work: Workspace, runs: int, env: Mapping[str, str], sandbox: SandboxRun | None
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
        by_id = {result.id: result for result in run_verifiers(others, work, (), env=env, sandbox=sandbox)}
    repeats: list[VerifierRepeat] = []
    for verifier in task.verifiers:
        if not isinstance(verifier, CommandVerifier):
            continue
        alone = msgspec.structs.replace(task, verifiers=(verifier,))
        results: list[VerifierResult] = []
        durations: list[int] = []
        for _ in range(runs):
            started = time.monotonic()
            results += run_verifiers(alone, work, (), env=env, sandbox=sandbox)
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
