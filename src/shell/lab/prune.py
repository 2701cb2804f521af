"""``eval runs --prune --older-than AGE``: remove the stored runs of ``<dataDir>/eval`` not written for AGE.

Only run directories under ``<dataDir>/eval`` are removed (each holds a report, runs.jsonl or plan.json, or
is a variants root), and only when no command is writing them (the lock ``eval run`` holds, taken here
without waiting). A registered ``--out`` directory is the user's: it is never removed, only dropped from the
registry when it no longer holds a report.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from alisio.shell.lab.registry import registered_directories, write_registered
from alisio.shell.lab.store import REPORT_JSON, RUNS_JSONL
from alisio.shell.lab.stored import variants_of

__all__ = ["Pruned", "prune_runs"]

_PLAN_JSON = "plan.json"


@dataclass(frozen=True)
class Pruned:
    """What ``prune_runs`` removed, kept (being written) and unregistered."""

    removed: tuple[str, ...]
    busy: tuple[str, ...]
    unregistered: int


def _is_run_dir(entry: Path) -> bool:
    return any((entry / name).is_file() for name in (REPORT_JSON, RUNS_JSONL, _PLAN_JSON)) or bool(
        variants_of(entry)
    )


def _newest_write(directory: Path) -> float:
    """The latest modification time of ``directory`` and the files in it (a resume writes into an old one)."""
    times = [directory.stat().st_mtime]
    for root, _, files in os.walk(directory):
        times += [(Path(root) / name).stat().st_mtime for name in files]
    return max(times)


def _remove_unlocked(directory: Path) -> bool:
    """Remove ``directory`` unless a command holds its lock; whether it was removed."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        shutil.rmtree(directory)
        return True
    finally:
        os.close(fd)


def prune_runs(data_root: Path, older_than_s: int, now: float) -> Pruned:
    """Remove every run directory of ``<dataRoot>/eval`` last written more than ``older_than_s`` before ``now``.

    Raises:
        OSError: a directory cannot be read or removed (the caller names it).
    """
    root = data_root / "eval"
    removed: list[str] = []
    busy: list[str] = []
    entries = sorted(root.iterdir()) if root.is_dir() else []
    for entry in entries:
        if not entry.is_dir() or entry.is_symlink() or not _is_run_dir(entry):
            continue
        if now - _newest_write(entry) <= older_than_s:
            continue
        (removed if _remove_unlocked(entry) else busy).append(entry.name)
    registered = registered_directories(data_root)
    kept = [d for d in registered if (d / REPORT_JSON).is_file() or variants_of(d)]
    if len(kept) != len(registered):
        write_registered(data_root, kept)
    return Pruned(removed=tuple(removed), busy=tuple(busy), unregistered=len(registered) - len(kept))
