"""Resolve a path the model gave into a real path inside the workspace, or refuse it.

Rules:
- a relative path is taken from the workspace root; an absolute path is accepted only if it lies inside;
- ``..`` and every symlink on the way (the final component included, even a dangling one) are resolved
  with ``os.path.realpath`` before the check, so a link pointing outside, or a path under a directory that
  links outside, is refused; a write target that does not exist yet is checked the same way;
- the workspace-relative key (``ResolvedPath.relative``, POSIX form) is the same for every spelling of a
  file, so "read before edit" bookkeeping cannot be dodged with ``./a/../a``.

This mediates the file tools only: a command run by ``bash`` is not confined (a policy is not a sandbox).
A check-then-use race with a process that swaps a directory for a symlink meanwhile is not defended.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple


class WorkspacePathError(Exception):
    """A path the model gave that cannot be used; ``str()`` is the message the model sees."""


class ResolvedPath(NamedTuple):
    absolute: str
    """The real absolute path (symlinks resolved)."""
    relative: str
    """The path relative to the workspace root, POSIX form; ``.`` for the root itself."""


def real_root(workspace: Path) -> str:
    """The workspace root with symlinks resolved (what every resolved path is compared against)."""
    return os.path.realpath(workspace)


def resolve_in_workspace(root: str, given: str) -> ResolvedPath:
    """Resolve ``given`` (relative to ``root``, or absolute) and check that it stays inside ``root``.

    Args:
        root: the real path of the workspace root (``real_root``).
        given: the path as the model sent it; empty means the root.

    Raises:
        WorkspacePathError: the path contains a NUL byte, or it (or a symlink it goes through) leads outside.
    """
    if "\0" in given:
        raise WorkspacePathError(f"invalid path {given!r}: it contains a NUL character")
    candidate = os.path.join(root, given) if given else root
    real = os.path.realpath(candidate)
    if real == root:
        return ResolvedPath(real, ".")
    prefix = root if root.endswith(os.sep) else root + os.sep
    if not real.startswith(prefix):
        raise WorkspacePathError(
            f"path {given!r} is outside the workspace (it resolves to {real}); "
            "use a path relative to the workspace root"
        )
    relative = real[len(prefix) :]
    if os.sep != "/":
        relative = relative.replace(os.sep, "/")
    return ResolvedPath(real, relative)
