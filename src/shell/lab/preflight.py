"""Before the first run: which tasks run, and whether every one of them may run as it asks.

Every check here happens before anything runs, so a command either starts with a plan that can run to the
end or stops with every problem at once (one line each; the same problem shared by several tasks is one
line listing them):

- the tasks named by ``--tasks`` exist (``alisio.core.lab.suites.schedule.select_tasks``);
- each task's policy asks for no effect the ``--allow-*`` flags did not grant, and ``mode: "full"`` has
  ``--allow-suite-full`` (``alisio.core.harness.policy.check_task_policy``); never silently trimmed;
- each task's ``agent`` is a main agent of the configuration;
- a task with a ``sandbox`` section (an imported Harbor task: its fixed paths /app, /tests, /logs/verifier)
  runs only under ``--sandbox bwrap``, from a suite directory the sandbox does not show the agent, and with
  the built-in agent (an external agent's sandbox has the copy at /workspace);
- an output directory can be created and written (``unwritable_dir``), probed by making and removing a
  directory in it (``os.access`` says yes to root even in /proc).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from returns.result import Failure

from alisio.core.harness.agent_step import select_agent
from alisio.core.harness.config import MeasuredConfig
from alisio.core.harness.events import Effect
from alisio.core.harness.policy import Policy, PolicyMode, check_task_policy
from alisio.core.harness.sandbox import WORKSPACE
from alisio.core.lab.suites.schedule import select_tasks
from alisio.core.lab.suites.suite import Task, TaskPolicy
from alisio.shell.errors import CommandError, expect
from alisio.shell.lab.suites import LoadedSuite
from alisio.shell.lab.task_sandbox import sandbox_refusal, visible_suite

__all__ = [
    "NOTHING_RAN",
    "NOTHING_WRITTEN",
    "Agents",
    "grouped",
    "preflight",
    "task_policy",
    "unwritable_dir",
]


@dataclass(frozen=True)
class Agents:
    """Which agent runs the tasks: ``--agent`` (or a variant's), and the external agents' names."""

    override: str | None = None
    external: frozenset[str] = frozenset()


def task_policy(policy: TaskPolicy, read_only: bool) -> Policy:
    """The harness policy of a task (``--read-only`` restricts it further)."""
    return Policy(
        mode=PolicyMode(policy.mode),
        allow=frozenset(Effect(effect) for effect in policy.allow),
        read_only=policy.read_only or read_only,
    )


def _task_problems(
    task: Task,
    ceiling: frozenset[Effect],
    read_only: bool,
    allow_suite_full: bool,
    measured: MeasuredConfig,
    agents: Agents,
    suite_dir: Path | None,
) -> list[str]:
    """What keeps ``task`` from running as asked (no task id in the lines: the caller groups them).

    ``suite_dir`` is the suite's directory under ``--sandbox bwrap``, ``None`` without a sandbox."""
    problems: list[str] = []
    match check_task_policy(task_policy(task.policy, False), ceiling, allow_suite_full):
        case Failure(error):
            problems.append(error.under_read_only() if read_only else error.message)
        case _:
            pass
    agent = agents.override or task.agent
    if (refusal := sandbox_refusal(task, sandboxed=suite_dir is not None)) is not None:
        problems.append(refusal)
    elif suite_dir is not None and (visible := visible_suite(task, suite_dir)) is not None:
        problems.append(visible)
    elif task.sandbox is not None and task.sandbox.workdir != WORKSPACE and agent in agents.external:
        problems.append(
            f"external agent {agent!r}: its sandbox has the copy at {WORKSPACE}, not the task's workdir "
            f"{task.sandbox.workdir}; run it with the built-in agent"
        )
    if agent not in agents.external and isinstance(select_agent(measured, agent), Failure):
        problems.append(
            f"agent {agent!r} is not a main agent of the configuration (define [agents.{agent}] in config.toml)"
        )
    return problems


def grouped(problems: Sequence[tuple[str, str]]) -> list[str]:
    """``task a: X`` lines, one per problem, the tasks that share a problem listed together in one line."""
    tasks_of: dict[str, list[str]] = {}
    for task_id, problem in problems:
        tasks_of.setdefault(problem, []).append(task_id)
    lines = []
    for problem, task_ids in tasks_of.items():
        noun = "task" if len(task_ids) == 1 else "tasks"
        lines.append(f"{noun} {', '.join(task_ids)}: {problem}")
    return lines


def preflight(
    loaded: LoadedSuite,
    wanted: Sequence[str] | None,
    granted: frozenset[Effect],
    *,
    read_only: bool,
    allow_suite_full: bool,
    measured: MeasuredConfig,
    agents: Agents | None = None,
    sandboxed: bool = False,
) -> tuple[Task, ...]:
    """The selected tasks, once every one of them may run as asked (``sandboxed``: under ``--sandbox bwrap``).

    Raises:
        CommandError: an unknown task id (listing the known ones), or one line per problem (an effect that was
            not granted, with the flag to pass; mode full without ``--allow-suite-full``; an agent the
            configuration does not have), naming every task it concerns.
    """
    tasks = expect(select_tasks(loaded.suite, wanted))
    ceiling = frozenset({Effect.READ}) if read_only else granted
    problems = [
        (task.id, problem)
        for task in tasks
        for problem in _task_problems(
            task,
            ceiling,
            read_only,
            allow_suite_full,
            measured,
            agents or Agents(),
            loaded.directory if sandboxed else None,
        )
    ]
    if problems:
        noun = "task" if len({task_id for task_id, _ in problems}) == 1 else "tasks"
        raise CommandError(*grouped(problems), f"nothing was run: fix or grant the {noun} above")
    return tasks


NOTHING_RAN = "nothing was run"
"""How a refusal before the first run ends (a command that runs runs: eval run, record, ci...)."""
NOTHING_WRITTEN = "nothing was written"
"""How a refusal ends for a command that runs nothing (eval compare, eval stability): it wrote nothing."""


def unwritable_dir(
    directory: Path, flag: str, named: Path | None = None, then: str = NOTHING_RAN
) -> str | None:
    """Why ``directory`` cannot be created or written, checked before the first run, creating nothing.

    The first ancestor that exists must be a directory this process may write into. The message starts with
    ``flag`` and ``named`` (default: ``directory``; a file's flag names the file, not its directory) and ends
    with ``then`` (``NOTHING_RAN``, or ``NOTHING_WRITTEN`` for a command that runs nothing).
    """
    subject = f"{flag} {named or directory}"
    existing = directory
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        return f"{subject}: {existing} is not a directory; {then}"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{subject}: {existing} is not writable; {then}"
    # os.access says yes to root everywhere (even /proc): a probe directory made and removed is the real test.
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".alisio-probe-", dir=existing))
    except OSError as error:
        why = error.strerror or str(error)
        return f"{subject}: {existing} is not writable ({why}); {then}"
    return None
