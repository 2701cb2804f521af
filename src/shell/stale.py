"""Temporary directories left behind by a lab command that was killed (SIGKILL, a crash, a power cut).

Every run's workspace (and a recording's report directory) is named ``alisio-<pid>@<mark>.<start>-...``
after the process that made it: its PID, a mark of its PID namespace and boot (the first 12 hex digits of
the sha256 of the boot id and the namespace's inode), and its start time (in clock ticks since boot, from
``/proc/<pid>/stat``). A kept workspace (``--keep``) is named ``alisio-kept-...`` and is never removed here.

When a lab command starts, ``remove_stale`` removes a directory only when it is provably ours and dead: its
mark is this process's (the same boot and the same PID namespace, so its PID means the same process here),
and that PID is gone or now belongs to a process that started at another time (a reused PID). Everything
else is left alone: a live process's, another PID namespace's (a container sharing ``/tmp``: its PIDs mean
other processes here), another boot's, an older alisio's (``alisio-<pid>-...``, no mark) and anything that
cannot be judged. Without ``/proc`` (macOS) the mark and start time are empty and a directory is judged by
its PID alone, as there are no PID namespaces to confuse.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

__all__ = ["owned_prefix", "process_mark", "remove_stale", "start_time"]

_OWNED = re.compile(r"^alisio-(\d+)@([0-9a-f]{12}|)\.(\d*)-")


@functools.cache
def process_mark() -> str:
    """This process's boot and PID namespace, as 12 hex digits (empty where ``/proc`` does not say)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.stat("/proc/self/ns/pid")
    except OSError:
        return ""
    identity = f"{boot}:{namespace.st_dev}:{namespace.st_ino}"
    return hashlib.sha256(identity.encode()).hexdigest()[:12]


def start_time(pid: int) -> str:
    """When process ``pid`` (of this PID namespace) started, in clock ticks since boot; empty when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    fields = stat[stat.rfind(")") + 2 :].split()  # the command name may hold spaces and parentheses
    return fields[19] if len(fields) > 19 else ""


def owned_prefix(label: str) -> str:
    """The name prefix of a temporary directory this process owns: ``alisio-<pid>@<mark>.<start>-<label>-``."""
    pid = os.getpid()
    return f"alisio-{pid}@{process_mark()}.{_own_start()}-{label}-"


@functools.cache
def _own_start() -> str:
    return start_time(os.getpid())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive, and not ours to judge
        return True
    return True


def _dead_and_ours(name: str) -> bool:
    """Whether the directory ``name`` was made by a process of this boot and PID namespace that is gone."""
    match = _OWNED.match(name)
    if match is None:
        return False  # not ours, or an older alisio's (no mark): not provably ours
    pid, mark, started = int(match.group(1)), match.group(2), match.group(3)
    if mark != process_mark():
        return False  # another PID namespace or another boot: its PID means nothing here
    if not _alive(pid):
        return True
    # the PID is alive: the same process only if it started when the mark says (else the PID was reused)
    return bool(started) and start_time(pid) not in ("", started)


def remove_stale(directory: Path | None = None) -> list[Path]:
    """Remove the directories of ``directory`` (default: the temporary directory) that are provably ours and
    dead (see the module docstring); return what was removed (best effort: one that cannot be removed stays)."""
    root = directory if directory is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if not _dead_and_ours(entry.name) or entry.is_symlink() or not entry.is_dir():
            continue
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            removed.append(entry)
    return removed
