"""The cgroups of sandboxed commands, running as root, and the launch of a command into them.

``RLIMIT_NPROC`` does not bind root, so as root each sandboxed command runs in a pids cgroup (``pids.max``: the
process limit) and, where one can be made, a memory cgroup (the memory of all its processes together).

Rules:

- moving a process into a cgroup waits for an RCU grace period whenever no move happened just before: 10 to
  20 ms on this project's machines, more than the rest of the sandbox's start. So a command is never moved:
  it is born in its cgroups. Where every controller is on cgroup v1 (which moves single threads), a *slot* is
  a pair of cgroups holding one thread of alisio, made once; that thread only starts commands
  (``subprocess.Popen``), and what it starts is born in the slot's cgroups. A slot serves one command at a
  time and is reused after it (``pids.max`` counts its thread: the process limit plus one);
- cgroup v2 moves whole processes only: there each command gets cgroups of its own, joined by a one-line
  ``sh`` before bwrap starts (no ``preexec_fn``: commands start from worker threads), removed after it;
- a slot's thread is never a thread group leader, so the memory cgroup's OOM killer, which picks among group
  leaders, never picks alisio;
- when a command ends, whatever of it is left in its cgroups is killed (bwrap's init ends every process
  inside first, so this is only the exiting ones); a slot that cannot be emptied is retired;
- a command whose caller is interrupted (Ctrl-C, SIGTERM) while it starts is killed before the interruption
  goes on: nothing runs unsupervised in a slot;
- the pools live as long as the process (one per set of limits: probing again gives the same one); when
  alisio exits (``atexit``) their threads end, then their cgroups are removed. The empty cgroups of alisio
  processes gone (``alisio-PID-...``, left by a SIGKILL) are removed when a sandbox is probed from the same
  cgroup.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import queue
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final, Generic, TypeVar

__all__ = ["CommandCgroups", "Launch", "command_cgroups", "pids_cgroup", "writable_base"]

_PREFIX: Final = "alisio-"
_JOIN: Final = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
"""The ``sh -c`` wrapper that moves itself into the cgroup ``$0``, then becomes bwrap (cgroup v2)."""
_JOIN_TWO: Final = 'echo $$ > "$0/cgroup.procs" && echo $$ > "$1/cgroup.procs" && shift && exec "$@"'
"""The same for two cgroups, ``$0`` and ``$1``."""
_SLOT_THREADS: Final = 1
"""A slot's own thread, which its pids cgroup counts."""
_EMPTY_TRIES: Final = 50
_EMPTY_WAIT_S: Final = 0.01

Stream = int | IO[bytes] | None
_T = TypeVar("_T")


@dataclass(frozen=True)
class Launch:
    """One sandboxed command, ready to start: its argv, and the slot whose thread must start it (or none)."""

    argv: list[str]
    slot: _Slot | None = None

    def popen(
        self,
        *,
        cwd: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        stdin: Stream = subprocess.DEVNULL,
        stdout: Stream = None,
        stderr: Stream = None,
    ) -> subprocess.Popen[bytes]:
        """``subprocess.Popen(argv, ...)`` in a new session with no inherited descriptors, from the right
        thread. Raises what ``Popen`` raises."""

        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                self.argv,
                cwd=cwd,
                env=env,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
                close_fds=True,
            )

        return start() if self.slot is None else self.slot.call(start, undo=_stop)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Kill and reap a command whose caller was interrupted while it started (nobody supervises it)."""
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        process.kill()
    _uninterrupted(process.wait)


class _Result(Generic[_T]):
    """What a call on another thread returned or raised, once it is there."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: _T | None = None
        self._error: BaseException | None = None

    def run(self, function: Callable[[], _T]) -> None:
        try:
            self._value = function()
        except BaseException as error:  # handed to the caller, which raises it
            self._error = error
        self._done.set()

    def wait(self, undo: Callable[[_T], object] | None = None) -> _T:
        """The call's value (or its exception, raised). Interrupted (Ctrl-C, SIGTERM), it waits on for the
        call to finish (milliseconds), gives its value to ``undo``, then raises the interruption."""
        try:
            self._done.wait()
        except BaseException:
            _uninterrupted(self._done.wait)
            if self._error is None and undo is not None:
                undo(self._value)  # type: ignore[arg-type]
            raise
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


def _uninterrupted(wait: Callable[[], object]) -> None:
    """``wait()``, again whenever a signal handler raises in it (a second Ctrl-C)."""
    while True:
        try:
            wait()
            return
        except BaseException:  # the wait is short; the first interruption is raised after it
            continue


class _Slot:
    """Cgroups holding one thread of alisio, which starts the commands that run in them."""

    def __init__(self, groups: tuple[str, ...]) -> None:
        self.groups = groups
        self._calls: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        joined: _Result[int] = _Result()
        self._thread = threading.Thread(
            target=self._serve, args=(joined,), name="alisio-sandbox-slot", daemon=True
        )
        self._thread.start()
        self.tid = joined.wait(undo=lambda _: self.close())  # raises the OSError of a cgroup not joined

    def _serve(self, joined: _Result[int]) -> None:
        joined.run(self._join)
        if joined._error is not None:
            return
        while (call := self._calls.get()) is not None:
            call()

    def _join(self) -> int:
        tid = threading.get_native_id()
        for group in self.groups:
            Path(group, "tasks").write_text(str(tid), encoding="ascii")
        return tid

    def call(self, function: Callable[[], _T], *, undo: Callable[[_T], object]) -> _T:
        """``function()`` run on the slot's thread; ``undo`` gets its value if the caller is interrupted."""
        result: _Result[_T] = _Result()
        self._calls.put(lambda: result.run(function))
        return result.wait(undo)

    def empty(self) -> bool:
        """Whether only the slot's thread is left in its cgroups (the others killed, waited for a while)."""
        own = set(os.listdir("/proc/self/task"))
        for attempt in range(_EMPTY_TRIES):
            left = [tid for group in self.groups for tid in _members(group) if tid not in own]
            if not left:
                return True
            if attempt == 10:
                _kill(left)
            time.sleep(_EMPTY_WAIT_S)
        return False

    def close(self) -> None:
        """End the thread, then remove the cgroups (once it has left them)."""
        if self._thread.is_alive():
            self._calls.put(None)
            self._thread.join(5.0)
        for group in self.groups:
            remove_cgroup(group)


class CommandCgroups:
    """Where each sandboxed command of this process gets its pids and memory cgroups."""

    def __init__(self, wanted: Mapping[str, Mapping[str, int]], *, threads: bool) -> None:
        self._wanted = {base: dict(settings) for base, settings in wanted.items()}
        self._threads = threads
        self._free: list[_Slot] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def launch(self, argv: Sequence[str]) -> Iterator[Launch]:
        """``argv`` ready to start in cgroups of its own, for the block (they are emptied after it).

        Raises:
            OSError: a cgroup could not be made or joined.
        """
        if not self._threads:
            groups = self._new_groups(extra=0)
            try:
                script = _JOIN if len(groups) == 1 else _JOIN_TWO
                yield Launch(["/bin/sh", "-c", script, *groups, *argv])
            finally:
                for group in groups:
                    remove_cgroup(group)
            return
        slot = self._take()
        try:
            yield Launch(list(argv), slot)
        finally:
            self._give_back(slot)

    def _take(self) -> _Slot:
        with self._lock:
            if self._free:
                return self._free.pop()
        groups = self._new_groups(extra=_SLOT_THREADS)
        try:
            return _Slot(groups)
        except BaseException:
            for group in groups:
                remove_cgroup(group)
            raise

    def _give_back(self, slot: _Slot) -> None:
        try:
            emptied = slot.empty()
        except BaseException:
            slot.close()
            raise
        if emptied:
            with self._lock:
                self._free.append(slot)
        else:
            slot.close()

    def _new_groups(self, *, extra: int) -> tuple[str, ...]:
        groups: list[str] = []
        try:
            for base, settings in self._wanted.items():
                values = {
                    file: value + extra if file == "pids.max" else value for file, value in settings.items()
                }
                groups.append(_new_cgroup(base, values))
        except OSError:
            for group in groups:
                remove_cgroup(group)
            raise
        return tuple(groups)

    def close(self) -> None:
        """End every idle slot and remove its cgroups."""
        with self._lock:
            slots, self._free = self._free, []
        for slot in slots:
            slot.close()


_Key = tuple[tuple[str, tuple[tuple[str, int], ...]], ...]
_POOLS: Final[dict[tuple[_Key, bool], CommandCgroups]] = {}
"""Every pool of this process, one per set of cgroup settings (probing twice gives the same pool)."""
_POOLS_LOCK: Final = threading.Lock()


@atexit.register
def _close_pools() -> None:
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
    for pool in pools:
        pool.close()


def command_cgroups(
    pids_base: str | None, memory_base: str | None, *, max_processes: int, max_memory_bytes: int
) -> CommandCgroups | None:
    """The cgroups for commands with these limits, under these bases (``None``: that controller is not used)."""
    wanted: dict[str, dict[str, int]] = {}
    if pids_base is not None:
        wanted[pids_base] = {"pids.max": max_processes}
    if memory_base is not None:
        v2 = _is_v2(memory_base)
        wanted.setdefault(memory_base, {})["memory.max" if v2 else "memory.limit_in_bytes"] = max_memory_bytes
    if not wanted:
        return None
    threads = not any(_is_v2(base) for base in wanted)
    key = (
        tuple((base, tuple(sorted(settings.items()))) for base, settings in sorted(wanted.items())),
        threads,
    )
    with _POOLS_LOCK:
        if key not in _POOLS:
            _POOLS[key] = CommandCgroups(wanted, threads=threads)
        return _POOLS[key]


def _is_v2(base: str) -> bool:
    return Path(base, "cgroup.controllers").exists()


# --- finding, making and removing cgroups ---------------------------------------------------------------


def pids_cgroup() -> tuple[str | None, tuple[str, ...]]:
    """Where pids cgroups can be made, and a warning when the process limit goes unenforced."""
    if os.geteuid() != 0:
        return None, ()  # RLIMIT_NPROC binds every other user
    base = writable_base("pids")
    if base is not None:
        return base, ()
    return None, (
        "sandbox: running as root with no writable pids cgroup, the process limit is not enforced (a fork "
        "bomb is stopped only by the command's timeout); the file size and memory limits are",
    )


def writable_base(controller: str) -> str | None:
    """The first directory of ``_bases(controller)`` where a cgroup can be made (stale ones removed)."""
    for base in _bases(controller):
        probe = os.path.join(base, f"{_PREFIX}probe-{secrets.token_hex(6)}")
        try:
            os.mkdir(probe)
            os.rmdir(probe)
        except OSError:
            continue
        _remove_stale(base)
        return base
    return None


def _bases(controller: str) -> Iterator[str]:
    """Candidate directories: this process's cgroup in a cgroup-v1 hierarchy of ``controller``, or in
    cgroup v2 where ``controller`` is enabled for its children."""
    try:
        mounts = Path("/proc/self/mounts").read_text(encoding="utf-8").splitlines()
        own = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return
    paths = {}
    for line in own:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    for line in mounts:
        fields = line.split()
        if len(fields) < 4:
            continue
        where, kind, options = fields[1], fields[2], fields[3].split(",")
        if kind == "cgroup" and controller in options and controller in paths:
            yield where + paths[controller].rstrip("/")
        elif kind == "cgroup2" and "" in paths:
            base = where + paths[""].rstrip("/")
            with contextlib.suppress(OSError):
                if controller in Path(base, "cgroup.subtree_control").read_text(encoding="utf-8").split():
                    yield base


def _new_cgroup(base: str, settings: Mapping[str, int]) -> str:
    group = os.path.join(base, f"{_PREFIX}{os.getpid()}-{secrets.token_hex(8)}")
    os.mkdir(group)
    try:
        for file, value in settings.items():
            Path(group, file).write_text(str(value), encoding="ascii")
    except OSError:
        os.rmdir(group)
        raise
    return group


def remove_cgroup(group: str) -> None:
    """Remove ``group`` once its processes are gone (they are dying, or reaped already); never alisio."""
    own = set(os.listdir("/proc/self/task"))
    for attempt in range(_EMPTY_TRIES):
        try:
            os.rmdir(group)
            return
        except FileNotFoundError:
            return
        except OSError:
            if attempt == 10:
                _kill([tid for tid in _members(group) if tid not in own])
            time.sleep(_EMPTY_WAIT_S)


def _members(group: str) -> list[str]:
    """The ids of the tasks in ``group`` (cgroup v1's ``tasks``: threads; v2's ``cgroup.procs``)."""
    for file in ("tasks", "cgroup.procs"):
        with contextlib.suppress(OSError):
            return Path(group, file).read_text(encoding="ascii").split()
    return []


def _kill(tids: Sequence[str]) -> None:
    for tid in tids:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(tid), signal.SIGKILL)


def _remove_stale(base: str) -> None:
    """Remove the empty cgroups that commands of alisio processes now gone left behind."""
    with contextlib.suppress(OSError):
        for name in os.listdir(base):
            if not name.startswith(_PREFIX):
                continue
            owner = name[len(_PREFIX) :].split("-", 1)[0]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(base, name))
