"""After the agent stops, before the verifiers run: were the files the verifiers read changed, and if so, put
the originals back (``alisio.core.lab.judges.integrity`` decides; this module snapshots and copies).

``guard_protected(task, workspace, after)`` compares the protected files of ``task``
(``alisio.core.lab.judges.integrity.protected_of`` over the fixture's files, as the workspace held them
before the agent started) with ``after``, the workspace's snapshot once the agent stopped. Each protected
file the agent changed or deleted is copied back from the fixture (a link as a link; whatever stands at its
path is removed first), each entry it added under a protected directory is removed. It returns the
incident's message, or ``None`` when nothing was changed.

Raises ``WorkspaceError`` (reason ``protected_restore``) when an original cannot be put back: then the
verifiers would judge the agent's version, so the run is an error, never a verdict.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from alisio.core.lab.judges.integrity import protected_of, tamper_message, tampering
from alisio.core.lab.judges.verify import TreeSnapshot
from alisio.core.lab.suites.suite import Task
from alisio.shell.lab.workspace import Workspace, WorkspaceError

__all__ = ["RESTORE_FAILED", "guard_protected"]

RESTORE_FAILED = "protected_restore"
"""The reason of a run whose protected files could not be put back."""


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


def _clear_parents(root: Path, relative: str) -> None:
    """Make every directory above ``root/relative`` a real directory inside the workspace: a link or a file
    the agent put in its way is removed (a link to ``/etc`` must never be written through)."""
    here = root
    for part in relative.split("/")[:-1]:
        here = here / part
        if here.is_symlink() or (here.exists() and not here.is_dir()):
            here.unlink()
        if not here.exists():
            here.mkdir()


def _put_back(original: Path, root: Path, relative: str) -> None:
    _clear_parents(root, relative)
    target = root / relative
    if target.is_symlink() or target.exists():
        _remove(target)
    if original.is_symlink():
        os.symlink(os.readlink(original), target)
    else:
        shutil.copy2(original, target)


def guard_protected(task: Task, workspace: Workspace, after: TreeSnapshot) -> str | None:
    """Put back what the agent changed of the protected files (module docstring); the incident's message."""
    fixture_files = [entry.path for entry in workspace.before.entries if entry.kind != "special"]
    files, directories = protected_of(task, fixture_files)
    found = tampering(files, directories, workspace.before, after)
    if not found:
        return None
    try:
        for change in found:
            if change.what == "added":
                _clear_parents(workspace.path, change.path)
                _remove(workspace.path / change.path)
            else:
                _put_back(workspace.fixture_dir / change.path, workspace.path, change.path)
    except OSError as error:
        raise WorkspaceError(
            f"cannot put back the protected files the agent changed: {error.strerror or error}"
            f"{f': {error.filename}' if error.filename else ''}",
            reason=RESTORE_FAILED,
        ) from error
    return tamper_message(found)
