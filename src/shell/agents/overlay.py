"""A context's files written under a directory: a fresh fixture copy before its snapshot (the lab's
``prepare_workspace``), or an external agent's private HOME (``alisio.shell.agents.runner``).

The files were read, and checked, before the first run (``alisio.shell.lab.contexts``); here they are only
written. A file the directory already has is replaced; nothing is written through a symlink that leads out
of the directory.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ContextOverlayFile", "overlay", "within"]


@dataclass(frozen=True)
class ContextOverlayFile:
    """One file a context adds: where it goes (relative, normalised), its bytes, whether it is executable."""

    path: str
    data: bytes
    executable: bool = False


def within(path: Path, base: Path) -> bool:
    """Whether ``path`` is ``base`` or below it (both resolved)."""
    return path == base or path.is_relative_to(base)


def overlay(files: tuple[ContextOverlayFile, ...], root: Path) -> None:
    """Write ``files`` under ``root`` (parents made; a file the fixture had is replaced).

    Raises:
        OSError: a file cannot be written (a fixture's file where the context has a directory), or its
            directory is a symlink of the fixture's that leads out of ``root`` (nothing is written there).
    """
    base = root.resolve()
    for file in files:
        target = root / file.path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not within(target.parent.resolve(), base):
            raise OSError(f"{file.path}: its directory is a symlink that leads out of the copy")
        if target.is_symlink() or target.exists():
            target.unlink()
        target.write_bytes(file.data)
        if file.executable:
            target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
