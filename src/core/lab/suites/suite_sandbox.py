"""A task's ``sandbox`` section: where its copy is under ``--sandbox bwrap``, and what its verifiers see.

Some tasks are written for fixed absolute paths (a Harbor task works in ``/app``, its tests are at
``/tests`` and write their reward to ``/logs/verifier``). A task says so in suite.json::

    "sandbox": {
      "workdir": "/app",
      "verifierMounts": [
        {"target": "/tests", "source": "harbor/hello-world/tests"},
        {"target": "/logs/verifier"}
      ]
    }

- ``workdir``: where the copy is inside the sandbox (default ``/workspace``); the agent's ``bash`` commands,
  the command verifiers and a script ``solution`` start there.
- ``verifierMounts``: for each command verifier only (never the agent, never the solution), a suite path
  (``source``, a file or a directory inside the suite) bound read-only at ``target``, or, without a
  ``source``, a fresh empty writable directory at ``target`` for each verifier command.

A task with a ``sandbox`` section runs only under ``--sandbox bwrap`` (``eval run`` and ``eval selfcheck``
refuse it otherwise, before the first run): outside the sandbox these paths would be the host's. The paths
are checked here (``sandbox_problems``): each target is a normalised absolute path outside what the sandbox
builds itself (``alisio.core.harness.sandbox.sandbox_path_problem``), no target is, holds or lies in another
target or the workdir, and each source stays inside the suite directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from alisio.core.base import Frozen
from alisio.core.harness.sandbox import WORKSPACE, sandbox_path_problem
from alisio.core.lab.suites.suite_paths import PathFacts, lexical_problem, normalize, resolve
from alisio.core.shape import FieldPath, Problem, json_repr

__all__ = ["Mount", "TaskSandbox", "mount_parts", "sandbox_problems"]


class Mount(Frozen, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """One path a task's command verifiers see inside the sandbox."""

    target: str
    """Where it is inside the sandbox (an absolute path)."""
    source: str | None = None
    """A file or directory of the suite (relative to the suite directory), bound read-only; ``None``: a fresh
    empty writable directory for each verifier command."""


class TaskSandbox(Frozen, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """A task's ``sandbox`` section (the module docstring)."""

    workdir: str = WORKSPACE
    verifier_mounts: tuple[Mount, ...] = ()


def mount_parts(sandbox: TaskSandbox, suite_dir: str) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """The read-only binds (host path, target) under ``suite_dir`` and the scratch targets of ``sandbox``."""
    binds = tuple(
        (f"{suite_dir.rstrip('/')}/{normalize(mount.source)}", mount.target)
        for mount in sandbox.verifier_mounts
        if mount.source is not None
    )
    return binds, tuple(mount.target for mount in sandbox.verifier_mounts if mount.source is None)


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def sandbox_problems(
    task: dict[str, Any], misshapen: list[FieldPath], facts: PathFacts, links: Mapping[str, str | None]
) -> list[Problem]:
    """The rule violations of a task's ``sandbox`` section (decoded JSON; none when it has no section, or a
    shape problem there, reported already), paths relative to the task."""
    raw = task.get("sandbox")
    if not isinstance(raw, dict) or any(path[:1] == ("sandbox",) for path in misshapen):
        return []
    problems: list[Problem] = []
    workdir = raw.get("workdir", WORKSPACE)
    if (why := sandbox_path_problem(workdir)) is not None:
        problems.append((("sandbox", "workdir"), why))
    seen: list[str] = []
    for index, mount in enumerate(raw.get("verifierMounts", [])):
        where = ("sandbox", "verifierMounts", index)
        target = mount["target"]
        if (why := sandbox_path_problem(target)) is not None:
            problems.append(((*where, "target"), why))
        elif _overlaps(target, workdir):
            problems.append(((*where, "target"), f"overlaps the workdir {json_repr(workdir, limit=200)}"))
        elif (
            other := next((j for j, seen_at in enumerate(seen) if _overlaps(target, seen_at)), None)
        ) is not None:
            problems.append(
                ((*where, "target"), f"overlaps verifierMounts[{other}].target {json_repr(seen[other])}")
            )
        seen.append(target)
        source = mount.get("source")
        if source is not None and (why := _source_problem(source, facts, links)) is not None:
            problems.append(((*where, "source"), why))
    return problems


def _source_problem(source: str, facts: PathFacts, links: Mapping[str, str | None]) -> str | None:
    lexical = lexical_problem(source, "suite directory")
    if lexical is not None or not facts.gathered:
        return lexical
    resolved = resolve(normalize(source), links)
    if resolved is None:
        return "escapes the suite directory through a symlink"
    if resolved not in facts.directories and resolved not in facts.files:
        return f"{json_repr(source, limit=200)} does not exist in the suite directory"
    return None
