"""Find and stop the processes a command left behind, even those that left its process group.

Killing a command's process group misses a process that moved to a session of its own (``setsid``, a
double-forked daemon). So every command the harness starts (each ``bash`` call, each command verifier) gets
a mark in its environment, ``ALISIO_RUN_MARK=<random>``, which its children inherit whatever group or
session they move to; ``stop_marked(mark)`` reads ``/proc/<pid>/environ`` of every process the user may
read and SIGKILLs each one that carries the mark.

Rules:

- a mark is 32 random hex digits, new for each run (or verifier command), so two runs never stop each
  other's processes;
- a process is pinned with a pidfd before its environment is read again and it is signalled, so a pid that
  was reused meanwhile is never hit; without pidfds (older kernels) plain ``kill`` is used;
- scanning repeats until a pass finds nothing (a process forking during a pass is caught on the next), at
  most ``_ROUNDS`` times;
- on a system without ``/proc`` (macOS) it finds nothing and stops nothing.

Not a sandbox: a process that clears its environment (``env -i``, ``unset``) or rewrites its memory drops
the mark and is not found; the harness's own process is never marked.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["MARK_VARIABLE", "StoppedProcess", "marked", "new_mark", "stop_marked"]

MARK_VARIABLE: Final = "ALISIO_RUN_MARK"
"""The environment variable that marks every process a run's commands start."""

_PROC: Final = "/proc"
_ROUNDS: Final = 5


@dataclass(frozen=True, slots=True)
class StoppedProcess:
    """A process that carried the mark and was killed."""

    pid: int
    name: str
    """Its command name (``/proc/<pid>/comm``), e.g. ``python3``."""

    def __str__(self) -> str:
        return f"{self.name} (pid {self.pid})"


def new_mark() -> str:
    """A fresh mark: 32 random hex digits."""
    return secrets.token_hex(16)


def marked(env: Mapping[str, str], mark: str) -> dict[str, str]:
    """``env`` with ``MARK_VARIABLE`` set to ``mark``."""
    return {**env, MARK_VARIABLE: mark}


def stop_marked(mark: str, *, spare_group: int | None = None) -> tuple[StoppedProcess, ...]:
    """SIGKILL every process (the user may see) whose environment carries ``mark``; what was stopped, by pid.

    Args:
        mark: the mark (``new_mark``).
        spare_group: a process group already killed as a whole (the command's own): its members, maybe still
            dying, are neither signalled again nor reported.
    """
    needle = f"\0{MARK_VARIABLE}={mark}\0".encode()
    stopped: dict[int, StoppedProcess] = {}
    for _ in range(_ROUNDS):
        found = [
            pid for pid in _marked_pids(needle) if pid not in stopped and not _in_group(pid, spare_group)
        ]
        if not found:
            break
        for pid in found:
            process = _kill_if_marked(pid, needle)
            if process is not None:
                stopped[pid] = process
    return tuple(stopped[pid] for pid in sorted(stopped))


def _pids() -> Iterator[int]:
    try:
        names = os.listdir(_PROC)
    except OSError:
        return
    own = os.getpid()
    yield from (int(name) for name in names if name.isdigit() and int(name) != own)


def _carries(pid: int, needle: bytes) -> bool:
    """Whether ``/proc/<pid>/environ`` holds ``needle`` (a zombie's, or one we may not read, holds nothing)."""
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as file:
            environ = file.read()
    except OSError:
        return False
    return needle in b"\0" + environ


def _in_group(pid: int, group: int | None) -> bool:
    if group is None:
        return False
    try:
        return os.getpgid(pid) == group
    except OSError:
        return True  # gone already: nothing to stop


def _marked_pids(needle: bytes) -> list[int]:
    return [pid for pid in _pids() if _carries(pid, needle)]


def _name(pid: int) -> str:
    try:
        with open(f"{_PROC}/{pid}/comm", encoding="utf-8", errors="replace") as file:
            return file.read().strip() or "?"
    except OSError:
        return "?"


def _kill_if_marked(pid: int, needle: bytes) -> StoppedProcess | None:
    """Pin ``pid``, check it still carries the mark, SIGKILL it; ``None`` when it is gone or not ours."""
    name = _name(pid)
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        if not _carries(pid, needle):  # exited, or the pid now names another process
            return None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if pidfd is not None:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
            return StoppedProcess(pid=pid, name=name)
        return None
    finally:
        if pidfd is not None:
            os.close(pidfd)
