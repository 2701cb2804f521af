"""The sandboxes of one run of a task: the agent's, and its command verifiers' (``--sandbox bwrap``).

Both put the copy at the task's ``sandbox.workdir`` (default ``/workspace``); only the verifiers' gets the
task's ``sandbox.verifierMounts`` (suite paths bound read-only, fresh writable directories), so the agent
never sees a task's tests or its solution: they stay in the suite directory, which is not in the sandbox.
A script ``solution`` run by ``eval selfcheck`` gets the agent's sandbox plus its own directory at
``/solution`` (``solution_sandbox``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from alisio.core.harness.sandbox import BIND_ROOTS, SOLUTION, Bind
from alisio.core.lab.suites.harbor import NEEDS_SANDBOX
from alisio.core.lab.suites.suite import Task
from alisio.core.lab.suites.suite_sandbox import mount_parts
from alisio.shell.sandbox.bwrap import Sandbox, SandboxRun

__all__ = ["sandbox_refusal", "solution_sandbox", "task_sandboxes", "visible_suite"]


def sandbox_refusal(task: Task, *, sandboxed: bool) -> str | None:
    """Why ``task`` cannot run (``sandboxed``: under ``--sandbox bwrap``), in one line without its id, or
    ``None``: a task with a ``sandbox`` section needs the sandbox, and a Harbor task imported before tasks had
    one (tagged ``needs-sandbox-bwrap``, its tests inside the copy) must be imported again."""
    spec = task.sandbox
    if spec is None and NEEDS_SANDBOX in task.tags:
        return (
            f"tagged {NEEDS_SANDBOX} but has no sandbox section: it was imported by an earlier alisio (its "
            "tests are inside the copy, readable by the agent); import it again (alisio eval import harbor)"
        )
    if spec is None or sandboxed:
        return None
    paths = [spec.workdir, *(mount.target for mount in spec.verifier_mounts)]
    return (
        f"needs --sandbox bwrap: its commands use the fixed paths {', '.join(paths)}, which only the sandbox "
        "provides (outside it they would be this machine's)"
    )


def visible_suite(task: Task, suite_dir: Path) -> str | None:
    """Why the verifiers' mounts of ``task`` would be readable by the agent (the suite directory lies in a
    directory the sandbox binds read-only, such as /usr), or ``None``."""
    if task.sandbox is None or not task.sandbox.verifier_mounts:
        return None
    real = str(suite_dir.resolve())
    for root in BIND_ROOTS:
        if real == root or real.startswith(root + "/"):
            return (
                f"the suite directory {real} is under {root}, which the sandbox shows the agent: its tests "
                "would be readable; move the suite elsewhere"
            )
    return None


def task_sandboxes(
    sandbox: Sandbox | None, task: Task, suite_dir: Path, workspace: Path, *, network: bool
) -> tuple[SandboxRun | None, SandboxRun | None]:
    """The agent's and the command verifiers' sandbox of one run of ``task`` (``None``, ``None`` without one)."""
    if sandbox is None:
        return None, None
    agent = SandboxRun(sandbox=sandbox, workspace=str(workspace.resolve()), network=network)
    if task.sandbox is None:
        return agent, agent
    agent = dataclasses.replace(agent, workdir=task.sandbox.workdir)
    binds, scratch = mount_parts(task.sandbox, str(suite_dir.resolve()))
    shown = tuple(Bind(source=source, target=target) for source, target in binds)
    return agent, dataclasses.replace(agent, binds=shown, scratch=scratch)


def solution_sandbox(agent: SandboxRun, solution: Path) -> SandboxRun:
    """``agent``'s sandbox with the directory of the script ``solution`` read-only at ``/solution``."""
    return dataclasses.replace(agent, binds=(Bind(source=str(solution.resolve().parent), target=SOLUTION),))
