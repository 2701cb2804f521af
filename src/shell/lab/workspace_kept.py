"""A run's workspace kept as a diff against its fixture, and that diff applied to a fresh copy
(``alisio.core.lab.runs.workspace_diff`` holds the format and the rules; this module reads and writes files).

``changes_of(workspace, after, known)`` compares the snapshot taken when the agent stopped with the one taken
before it started, and reads what it needs: the original of a changed text file from the fixture, what the
run left from the workspace (a file larger than ``TEXT_MAX_BYTES``, or one that is not text, is named by its
hash and size, never read whole). ``known`` are the exact credentials its text is redacted of.

``apply_changes(diff, root)`` replays a kept diff in a fresh copy of the (possibly changed) fixture. It
returns ``None`` once every change is applied, else the first reason it cannot be: a text patch that no
longer matches, a binary file (its bytes were not kept), a redacted text, a file that the diff deletes or
changes and that the fixture no longer has, a file it adds that the fixture now has, a path under ``.git``,
``node_modules`` or ``__pycache__`` (no snapshot holds one; a ``.git/config`` can make a verifier's ``git
status`` run a command), a link that leads out of the workspace (a kept diff may come from someone else's
report: the verifiers must never read or write the host through it). Nothing is written through a link: a
parent that is a link is refused.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

from returns.result import Failure, Success

from alisio.core.lab.judges.verify import TreeSnapshot, is_ignored
from alisio.core.lab.runs.workspace_diff import (
    MAX_DIFF_BYTES,
    TEXT_MAX_BYTES,
    FileChange,
    WorkspaceDiff,
    apply_text_patch,
    text_of,
    text_patch,
)
from alisio.core.share.secrets import redact
from alisio.shell.lab.workspace import Workspace

__all__ = ["apply_changes", "changes_of"]


def _read(path: Path) -> bytes | None:
    """The bytes of a regular file no larger than ``TEXT_MAX_BYTES`` (else ``None``: kept by hash)."""
    info = path.lstat()
    if not stat.S_ISREG(info.st_mode) or info.st_size > TEXT_MAX_BYTES:
        return None
    return path.read_bytes()


def _left(path: Path, relative: str, kind: str, digest: str, old: str | None, known: tuple[tuple[str, str], ...], *, read: bool = True) -> FileChange:  # fmt: skip
    """What the run left at ``path``: ``old`` is the fixture's text (``None``: added, or not text); without
    ``read``, a file is named by its hash and size only."""
    change: Literal["added", "modified"] = "added" if old is None else "modified"
    if kind == "symlink":
        return FileChange(
            path=relative, change="added", kind="symlink", target=os.readlink(path), sha256=digest
        )
    if kind == "special":
        return FileChange(path=relative, change="added", kind="special")
    info = path.lstat()
    executable = bool(info.st_mode & stat.S_IXUSR)
    data = _read(path) if read else None
    text = text_of(data) if data is not None else None
    if text is None:
        return FileChange(path=relative, change=change, kind="binary", sha256=digest, size=info.st_size,
                          executable=executable)  # fmt: skip
    patch = text_patch(old or "", text)
    clean = redact(patch, known)
    return FileChange(path=relative, change=change, kind="text", patch=clean, sha256=digest, size=info.st_size,
                      executable=executable, redacted=clean != patch)  # fmt: skip


def _original(workspace: Workspace, relative: str, kind: str) -> str | None:
    """The starting text of a file the run changed: a context's, else the fixture's (``None``: not a text
    file)."""
    if kind != "file":
        return None
    data = (
        workspace.overlay[relative]
        if relative in workspace.overlay
        else _read(workspace.fixture_dir / relative)
    )
    return text_of(data) if data is not None else None


def _kind_of(entry: str) -> Literal["binary", "symlink", "special"]:
    """A snapshot entry's kind as a deleted change names it (a file is named ``binary``: no text is kept)."""
    return "symlink" if entry == "symlink" else "special" if entry == "special" else "binary"


def changes_of(
    workspace: Workspace, after: TreeSnapshot, known: tuple[tuple[str, str], ...], cap: int = MAX_DIFF_BYTES
) -> tuple[WorkspaceDiff, bool]:
    """The entries of ``workspace`` that differ from its fixture, as ``after`` saw them (module docstring),
    and whether every file was read: once the text kept passes ``cap`` the diff cannot be kept, so the files
    after that are named by their hash and size, never read (a run that wrote gigabytes of text costs no
    more than the cap).

    Raises:
        OSError: a file cannot be read.
    """
    was, now = workspace.before.as_mapping(), after.as_mapping()
    changes: list[FileChange] = []
    held, skipped = 0, False
    for relative in sorted(set(was) | set(now)):
        if was.get(relative) == now.get(relative):
            continue
        if relative not in now:
            changes.append(FileChange(path=relative, change="deleted", kind=_kind_of(was[relative][0])))
            continue
        new_kind, digest = now[relative]
        old, read = None, held <= cap
        skipped = skipped or not read
        if relative in was:
            old_kind = was[relative][0]
            old = _original(workspace, relative, old_kind) if old_kind == new_kind and read else None
            if old is None and (
                read or old_kind != new_kind
            ):  # another kind, or not text: one goes, one comes
                changes.append(FileChange(path=relative, change="deleted", kind=_kind_of(old_kind)))
        changes.append(_left(workspace.path / relative, relative, new_kind, digest, old, known, read=read))
        held += len(changes[-1].patch)
    return WorkspaceDiff(changes=tuple(changes)), not skipped


def _safe_parent(root: Path, relative: str) -> Path | None:
    """``root/relative``'s parent made real inside ``root``; ``None`` when a part of it is a link or a file."""
    here = root
    for part in relative.split("/")[:-1]:
        here = here / part
        if here.is_symlink() or (here.exists() and not here.is_dir()):
            return None
        here.mkdir(exist_ok=True)
    return here


def _apply_one(change: FileChange, root: Path) -> str | None:
    target = root / change.path
    if is_ignored(
        change.path
    ):  # never in a snapshot, so never in a diff a run kept (.git/config runs commands)
        return f"{change.path}: lies under .git, node_modules or __pycache__, which a kept diff never holds"
    if _safe_parent(root, change.path) is None:
        return f"{change.path}: a directory above it is a link or a file in this fixture"
    present = target.is_symlink() or target.exists()
    if change.change == "deleted":
        if not present:
            return f"{change.path}: the run deleted it, and the fixture no longer has it"
        target.unlink()
        return None
    if change.kind in ("binary", "special"):
        return f"{change.path}: the run left a {change.kind} file; only its hash and size were kept"
    if change.redacted:
        return f"{change.path}: its text held a credential and was redacted when kept"
    if change.kind == "symlink":
        if present:
            target.unlink()
        os.symlink(change.target, target)
        return None
    if change.change == "added" and present:
        return f"{change.path}: the run added it, and the fixture now has one"
    if change.change == "modified" and (not present or target.is_symlink()):
        return f"{change.path}: the run changed it, and the fixture no longer has it"
    old = target.read_text(encoding="utf-8") if present else ""
    match apply_text_patch(old, change.patch):
        case Failure(problem):
            return f"{change.path}: {problem}"
        case Success(text):
            target.write_bytes(text.encode("utf-8"))
    mode = target.stat().st_mode
    target.chmod(mode | 0o111 if change.executable else mode & ~0o111)
    return None


def _link_out(diff: WorkspaceDiff, root: Path) -> str | None:
    """The first link the diff made that leads out of ``root`` once every change is in place (an absolute
    target, ``..`` past the root, or through another link: ``up -> .`` then ``x -> up/../..``)."""
    inside = os.path.realpath(root)
    for change in diff.changes:
        if change.kind == "symlink" and change.change != "deleted":
            where = os.path.realpath(root / change.path)
            if os.path.commonpath([inside, where]) != inside:
                return f"{change.path}: a link to {change.target!r} leads out of the workspace; refused"
    return None


def apply_changes(diff: WorkspaceDiff, root: Path) -> str | None:
    """Apply ``diff`` in ``root`` (module docstring): ``None``, or why it does not apply."""
    for change in diff.changes:
        try:
            problem = _apply_one(change, root)
        except (OSError, UnicodeDecodeError) as error:
            problem = f"{change.path}: {getattr(error, 'strerror', None) or error}"
        if problem is not None:
            return problem
    return _link_out(diff, root)
