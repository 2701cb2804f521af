"""Throwaway workspaces: a fresh temporary copy of a task's fixture for each run, and tree snapshots.

Rules:
- a run never touches the fixture itself: ``prepare_workspace`` copies it into a new temporary directory
  (symlinks are copied as links and never followed, so a link pointing outside stays a link; permission bits
  and mtimes are kept) and removes the copy on exit unless ``keep``;
- an empty regular file named ``.gitkeep`` is not copied (``PLACEHOLDER``): git keeps no empty directory, so a
  fixture that holds an empty directory (an imported Harbor task's empty ``/app``) keeps it in git with one;
  the copy has the directory, empty, as meant, and the placeholder is in no snapshot or tree diff;
- ``fixture_git`` makes the copy a git repository with exactly one commit, "fixture", whose author, committer
  and dates are fixed through the environment, with the user's and system git configuration ignored: the
  same fixture gives the same commit id on every machine, and no ``user.name`` is needed;
- a context's workspace files (``overlay``: ``--context``, a variant's ``context``) are written over the copy
  before its commit and its snapshot: they are part of the starting tree, never the agent's changes;
- the ``before`` snapshot is taken once the copy (and its commit) is ready; ``snapshot_tree`` hashes file
  bytes, records a symlink by its target text without following it, never opens a special file (a fifo
  would block), writes the bytes of a name (or link target) that is not UTF-8 as ``\\xNN``, and skips ``.git``, ``node_modules`` and ``__pycache__`` (``alisio.core.lab.judges.verify.IGNORED_DIRS``);
- anything that goes wrong while preparing raises ``WorkspaceError`` naming the fixture and the cause; the
  lab records the run as error with ``reason`` (``fixture_copy``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from alisio.core.lab.judges.verify import IGNORED_DIRS, TreeEntry, TreeSnapshot, tree_snapshot
from alisio.shell.agents.overlay import ContextOverlayFile
from alisio.shell.agents.overlay import overlay as write_overlay
from alisio.shell.harness.tools.dispatch import scrubbed_env

__all__ = [
    "FIXTURE_GIT_DATE",
    "PLACEHOLDER",
    "Workspace",
    "WorkspaceError",
    "prepare_workspace",
    "snapshot_tree",
]

PLACEHOLDER: Final = ".gitkeep"
"""The name of the empty file that keeps an empty fixture directory in git; a copy leaves it out."""

FIXTURE_GIT_DATE: Final = "2000-01-01T00:00:00+0000"
"""Author and committer date of the fixture commit (fixed, so the commit id is reproducible)."""
_GIT_IDENTITY: Final = {
    "GIT_AUTHOR_NAME": "alisio",
    "GIT_AUTHOR_EMAIL": "alisio@localhost",
    "GIT_AUTHOR_DATE": FIXTURE_GIT_DATE,
    "GIT_COMMITTER_NAME": "alisio",
    "GIT_COMMITTER_EMAIL": "alisio@localhost",
    "GIT_COMMITTER_DATE": FIXTURE_GIT_DATE,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
_GIT_TIMEOUT_S: Final = 60.0
_CHUNK: Final = 1 << 20


class WorkspaceError(Exception):
    """The workspace could not be prepared; ``str()`` names the fixture and the cause."""

    def __init__(self, message: str, *, reason: str = "fixture_copy") -> None:
        super().__init__(message)
        self.reason = reason
        """The run's error reason for runs.jsonl."""


@dataclass(frozen=True, slots=True)
class Workspace:
    """A prepared temporary copy of a fixture."""

    path: Path
    """The workspace root (real path, symlinks resolved): the agent's and the verifiers' working directory."""
    fixture_dir: Path
    """The fixture it was copied from (never modified)."""
    before: TreeSnapshot
    """The tree as prepared, before the run (what tree-diff-within compares against)."""
    kept: bool
    """True when the directory is left in place on exit (``keep=True``): print ``path`` for the user."""
    overlay: Mapping[str, bytes] = field(default_factory=dict)
    """A context's files written over the copy, by relative path: the starting text of those paths."""


@contextlib.contextmanager
def prepare_workspace(
    fixture_dir: Path,
    *,
    fixture_git: bool,
    keep: bool,
    prefix: str,
    overlay: tuple[ContextOverlayFile, ...] = (),
) -> Iterator[Workspace]:
    """Copy ``fixture_dir`` into a new temporary directory and yield it as a ``Workspace``.

    Args:
        fixture_dir: the task's fixture directory (``LoadedSuite.fixture_dir(task)``).
        fixture_git: initialise a git repository with one commit "fixture" in the copy.
        keep: leave the directory in place on exit instead of removing it.
        prefix: the temporary directory's name prefix, e.g. ``"alisio-fix-add-"``.
        overlay: a context's workspace files, written over the copy before its commit and its snapshot:
            they are part of the starting tree (``tree-diff-within`` and the kept diff do not count them).

    Raises:
        WorkspaceError: the fixture is missing or cannot be copied, git is missing or fails, or the copy
            cannot be snapshot. The partly made directory is removed first (even with ``keep``).
    """
    root = Path(tempfile.mkdtemp(prefix=prefix)).resolve()
    try:
        workspace = _prepared(fixture_dir, root, fixture_git=fixture_git, keep=keep, overlay=overlay)
    except BaseException:
        _remove_tree(root)
        raise
    try:
        yield workspace
    finally:
        if not keep:
            _remove_tree(root)


def _prepared(
    fixture_dir: Path, root: Path, *, fixture_git: bool, keep: bool, overlay: tuple[ContextOverlayFile, ...]
) -> Workspace:
    if not fixture_dir.is_dir():
        raise WorkspaceError(f"cannot copy fixture {fixture_dir}: it is not a directory")
    try:
        shutil.copytree(fixture_dir, root, symlinks=True, dirs_exist_ok=True, ignore=_placeholders)
    except (shutil.Error, OSError) as error:
        raise WorkspaceError(f"cannot copy fixture {fixture_dir}: {_copy_cause(error)}") from error
    try:
        write_overlay(overlay, root)
    except OSError as error:
        raise WorkspaceError(
            f"cannot add the context's files to the copy of fixture {fixture_dir}: {error.strerror or error}",
            reason="context_copy",
        ) from error
    if fixture_git:
        _git_init(root, fixture_dir)
    try:
        before = snapshot_tree(root)
    except OSError as error:
        raise WorkspaceError(f"cannot read the copy of fixture {fixture_dir}: {error}") from error
    originals = {file.path: file.data for file in overlay}
    return Workspace(path=root, fixture_dir=fixture_dir, before=before, kept=keep, overlay=originals)


def _placeholders(directory: str, names: list[str]) -> set[str]:
    """``PLACEHOLDER`` when it is among ``names`` as an empty regular file (not a link): it is not copied."""
    if PLACEHOLDER not in names:
        return set()
    try:
        info = os.lstat(os.path.join(directory, PLACEHOLDER))
    except OSError:
        return set()
    return {PLACEHOLDER} if stat.S_ISREG(info.st_mode) and info.st_size == 0 else set()


def _copy_cause(error: BaseException) -> str:
    """The first cause of a copy failure (``shutil.Error`` carries a list of (src, dst, why))."""
    if isinstance(error, shutil.Error) and error.args and isinstance(error.args[0], list):
        failures = error.args[0]
        first = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        return f"{first[0]}: {first[2]}{more}" if len(first) == 3 else f"{first}{more}"
    return str(error)


def _git_init(root: Path, fixture_dir: Path) -> None:
    """``git init`` + ``git add -A`` + one commit "fixture", deterministic and independent of user config."""
    env = {**scrubbed_env(os.environ), **_GIT_IDENTITY}
    steps = (
        ("-c", "init.defaultBranch=main", "init", "-q"),
        ("add", "-A"),
        ("-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "--no-verify", "-m", "fixture"),
    )
    for step in steps:
        try:
            done = subprocess.run(
                ["git", *step],
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_GIT_TIMEOUT_S,
                check=False,
            )
        except FileNotFoundError as error:
            raise WorkspaceError(
                f"fixture {fixture_dir} asks for fixtureGit, but git was not found on PATH",
                reason="fixture_git",
            ) from error
        except (OSError, subprocess.TimeoutExpired) as error:
            raise WorkspaceError(
                f"fixtureGit for fixture {fixture_dir}: git {step[-1]} failed: {error}", reason="fixture_git"
            ) from error
        if done.returncode != 0:
            output = done.stderr.decode("utf-8", "replace").strip()[-500:]
            raise WorkspaceError(
                f"fixtureGit for fixture {fixture_dir}: `git {' '.join(step)}` exited {done.returncode}: "
                f"{output}",
                reason="fixture_git",
            )


def snapshot_tree(root: Path) -> TreeSnapshot:
    """Every file and symlink under ``root`` with its digest, not following links, ignored dirs skipped.

    Raises:
        OSError: a directory cannot be listed or a file cannot be read.
    """
    entries: list[TreeEntry] = []

    def fail(error: OSError) -> None:
        raise error

    for here, dirnames, filenames in os.walk(root, onerror=fail):  # followlinks=False: links are entries
        base = Path(here)
        dirnames[:] = [name for name in dirnames if name not in IGNORED_DIRS]
        for name in (*dirnames, *filenames):
            entry = base / name
            relative = _text(entry.relative_to(root).as_posix())
            mode = entry.lstat().st_mode
            if stat.S_ISLNK(mode):
                entries.append(TreeEntry(path=relative, kind="symlink", digest=_text(os.readlink(entry))))
            elif stat.S_ISREG(mode):
                entries.append(TreeEntry(path=relative, kind="file", digest=_sha256_of(entry)))
            elif not stat.S_ISDIR(mode):
                entries.append(TreeEntry(path=relative, kind="special"))
    return tree_snapshot(entries)


def _text(name: str) -> str:
    """``name`` as UTF-8-safe text: a run may create names that are not UTF-8 (``touch $'\\xff'``), which
    ``os`` hands back with lone surrogates that no report, runs.jsonl or cassette can hold; their bytes are
    written ``\\xNN`` instead (so ``tree-diff-within`` names them, and the record can be written)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _remove_tree(root: Path) -> None:
    """Remove ``root``; if the run left read-only directories, make them writable and try once more."""
    try:
        shutil.rmtree(root)
    except OSError:
        for here, dirnames, _ in os.walk(root):
            for name in dirnames:
                directory = Path(here) / name
                if not directory.is_symlink():  # a link's own mode cannot be changed on Linux
                    with contextlib.suppress(OSError):
                        directory.chmod(0o700)
        with contextlib.suppress(OSError):
            root.chmod(0o700)
        shutil.rmtree(root, ignore_errors=True)
