"""Temporary directories left behind by a lab command that was killed (SIGKILL, a crash, a power cut).

Every run's workspace (and a recording's report directory) is named ``alisio-<pid>-...`` after the process
that made it; a kept workspace (``--keep``) is named ``alisio-kept-...`` and is never removed here. When a
lab command starts, ``remove_stale`` removes the ``alisio-<pid>-*`` directories of the temporary directory
whose process is gone, and only those: a directory of a live process (this one, or another command running at
the same time) is left alone.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

__all__ = ["owned_prefix", "remove_stale"]

_OWNED = re.compile(r"^alisio-(\d+)-")


def owned_prefix(label: str) -> str:
    """The name prefix of a temporary directory this process owns: ``alisio-<pid>-<label>-``."""
    return f"alisio-{os.getpid()}-{label}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive, and not ours to judge
        return True
    return True


def remove_stale(directory: Path | None = None) -> list[Path]:
    """Remove the ``alisio-<pid>-*`` directories of ``directory`` (default: the temporary directory) whose
    process is gone; return what was removed (best effort: a directory that cannot be removed stays)."""
    root = directory if directory is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _OWNED.match(entry.name)
        if match is None or _alive(int(match.group(1))) or not entry.is_dir() or entry.is_symlink():
            continue
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            removed.append(entry)
    return removed
