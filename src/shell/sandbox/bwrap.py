"""bubblewrap on this machine: whether it can run (``probe_sandbox``), and one command inside it.

Rules:

- ``probe_sandbox`` runs before the first run of a command: bwrap must be on PATH (else the message names
  ``apt-get install bubblewrap``), it must create its namespaces (a real ``bwrap --unshare-all ... true``;
  where user namespaces are not allowed its own error is named), and ``prlimit`` must exist under ``/usr``.
  A failure is a ``SandboxUnavailable`` with one line: a command that asked for the sandbox never runs
  without it;
- ``RLIMIT_NPROC`` does not bind root, so running as root each command gets a pids cgroup of its own
  (``pids.max`` = the process limit), joined before bwrap starts by a one-line ``sh`` wrapper (no
  ``preexec_fn``: commands start from worker threads). Where no pids cgroup can be made, the probe says the
  process limit is not enforced (``Sandbox.warnings``); the other limits still are;
- running as root, where a memory cgroup can be made (cgroup v1's memory hierarchy, or v2 with the memory
  controller enabled for this process's children), each command also gets one whose limit is the memory
  limit: the memory of all its processes together (the kernel's OOM killer ends one past it), besides each
  process's address space (``RLIMIT_AS``). Elsewhere only the address space is bounded;
- a command's cgroup is removed when it ends (the PID namespace is gone by then: bwrap's init kills every
  process inside before it exits).
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from alisio.core.harness.sandbox import (
    BIND_ROOTS,
    WORKSPACE,
    Bind,
    RootEntry,
    SandboxLimits,
    bwrap_argv,
)

__all__ = [
    "INSTALL_HINT",
    "MASKED",
    "Sandbox",
    "SandboxRun",
    "SandboxUnavailable",
    "probe_sandbox",
    "require_sandbox",
]

INSTALL_HINT: Final = "apt-get install bubblewrap"
_PROBE_TIMEOUT_S: Final = 20.0
_CGROUP_PREFIX: Final = "alisio-"
_JOIN: Final = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
"""The ``sh -c`` wrapper that moves itself into the cgroup ``$0``, then becomes bwrap."""
_JOIN_TWO: Final = 'echo $$ > "$0/cgroup.procs" && echo $$ > "$1/cgroup.procs" && shift && exec "$@"'
"""The same for two cgroups, ``$0`` and ``$1`` (cgroup v1: pids and memory are separate hierarchies)."""


class SandboxUnavailable(Exception):
    """``--sandbox bwrap`` cannot run here; ``str()`` is the one line that says why."""


@dataclass(frozen=True)
class Sandbox:
    """bubblewrap, checked on this machine: what every sandboxed command of a lab command shares."""

    bwrap: str
    roots: tuple[RootEntry, ...]
    limits: SandboxLimits
    prlimit: str
    pids_cgroup: str | None = None
    """The directory under which each command gets its pids cgroup (running as root), else ``None``."""
    memory_cgroup: str | None = None
    """The directory under which each command gets its memory cgroup (running as root), else ``None``."""
    warnings: tuple[str, ...] = ()
    """Limits that cannot be enforced here, one line each."""

    @contextlib.contextmanager
    def command(
        self,
        argv: Sequence[str],
        *,
        workspace: str,
        cwd: str = WORKSPACE,
        network: bool = False,
        binds: Sequence[Bind] = (),
        workdir: str = WORKSPACE,
        scratch: Sequence[str] = (),
        env: Sequence[tuple[str, str]] = (),
    ) -> Iterator[list[str]]:
        """The argv running ``argv`` in the sandbox, for the block (its cgroup is removed after it).

        Args:
            workspace: the real host path bound at ``workdir`` (``/workspace``).
            cwd: where the command starts, inside the sandbox.
            network: share the host's network.
            binds: more host paths to bind.
            scratch: fresh, empty, writable directories inside (``alisio.core.harness.sandbox.bwrap_argv``).
            env: variables set inside after the sandbox's own HOME, TMPDIR and PWD.
        """
        inner = bwrap_argv(
            argv,
            bwrap=self.bwrap,
            roots=self.roots,
            workspace=workspace,
            cwd=cwd,
            network=network,
            limits=self.limits,
            binds=binds,
            prlimit=self.prlimit,
            workdir=workdir,
            scratch=scratch,
            env=env,
        )
        groups = self._cgroups()
        try:
            if not groups:
                yield list(inner)
            else:
                yield ["/bin/sh", "-c", _JOIN if len(groups) == 1 else _JOIN_TWO, *groups, *inner]
        finally:
            for group in groups:
                _remove_cgroup(group)

    def _cgroups(self) -> list[str]:
        """The command's new cgroups: pids (``pids.max``) and memory (``memory.max`` or v1's
        ``memory.limit_in_bytes``), one group for both where they share a hierarchy (cgroup v2)."""
        limits = self.limits
        wanted: dict[str, dict[str, int]] = {}
        if self.pids_cgroup is not None:
            wanted[self.pids_cgroup] = {"pids.max": limits.max_processes}
        if self.memory_cgroup is not None:
            v2 = Path(self.memory_cgroup, "cgroup.controllers").exists()
            file = "memory.max" if v2 else "memory.limit_in_bytes"
            wanted.setdefault(self.memory_cgroup, {})[file] = limits.max_memory_bytes
        groups: list[str] = []
        try:
            for base, settings in wanted.items():
                groups.append(_new_cgroup(base, settings))
        except OSError:
            for group in groups:
                _remove_cgroup(group)
            raise
        return groups


@dataclass(frozen=True)
class SandboxRun:
    """The sandbox of one run: its workspace, and whether the ``external`` effect gives it the network.

    A task's ``sandbox`` section can put the workspace elsewhere (``workdir``) and give its command
    verifiers more (``binds``, ``scratch``): the lab builds one ``SandboxRun`` for the agent, without them,
    and one for the verifiers (``alisio.shell.lab.task_sandbox``).
    """

    sandbox: Sandbox
    workspace: str
    """The workspace's real host path (bound at ``workdir``)."""
    network: bool = False
    workdir: str = WORKSPACE
    """Where the workspace is inside the sandbox; commands start there."""
    binds: tuple[Bind, ...] = ()
    scratch: tuple[str, ...] = ()

    def command(
        self, argv: Sequence[str], cwd: str | None = None
    ) -> contextlib.AbstractContextManager[list[str]]:
        """``Sandbox.command`` for this run (``cwd`` inside the sandbox; default ``workdir``)."""
        return self.sandbox.command(
            argv,
            workspace=self.workspace,
            cwd=cwd or self.workdir,
            network=self.network,
            binds=self.binds,
            workdir=self.workdir,
            scratch=self.scratch,
        )


def require_sandbox(limits: SandboxLimits, env: Mapping[str, str]) -> Sandbox:
    """``probe_sandbox``, raising ``SandboxUnavailable`` with its reason."""
    found = probe_sandbox(limits, env)
    if isinstance(found, str):
        raise SandboxUnavailable(found)
    return found


def probe_sandbox(limits: SandboxLimits, env: Mapping[str, str]) -> Sandbox | str:
    """bubblewrap ready to run commands here, or the one line that says why it cannot."""
    bwrap = shutil.which("bwrap", path=env.get("PATH", os.defpath))
    if bwrap is None:
        return f"--sandbox bwrap: bubblewrap is not installed (no bwrap on PATH): {INSTALL_HINT}"
    prlimit = next((p for p in ("/usr/bin/prlimit", "/usr/sbin/prlimit") if os.access(p, os.X_OK)), None)
    if prlimit is None:
        return "--sandbox bwrap: prlimit (util-linux) is missing, so no limit can be set: apt-get install util-linux"
    roots = _roots()
    if not any(entry.path == "/usr" for entry in roots) or not any(entry.path == "/etc" for entry in roots):
        return "--sandbox bwrap: /usr and /etc must be directories to bind them read-only"
    problem = _try_bwrap(bwrap, roots)
    if problem is not None:
        return problem
    cgroup, warnings = _pids_cgroup()
    memory = _writable_base("memory") if os.geteuid() == 0 else None
    return Sandbox(
        bwrap=bwrap,
        roots=roots,
        limits=limits,
        prlimit=prlimit,
        pids_cgroup=cgroup,
        memory_cgroup=memory,
        warnings=warnings,
    )


def _roots() -> tuple[RootEntry, ...]:
    entries = []
    for path in BIND_ROOTS:
        if os.path.islink(path):
            target = os.readlink(path)
            if os.path.isdir(path):
                entries.append(RootEntry(path=path, link=target))
        elif os.path.isdir(path):
            entries.append(RootEntry(path=path))
    hidden = [*MASKED, *sorted(glob.glob("/etc/ssh/ssh_host_*_key"))]
    entries += [RootEntry(path=path, masked=True) for path in hidden if _regular(path)]
    return tuple(entries)


MASKED: Final = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers")
"""Host files under the read-only ``/etc`` that a sandboxed command never reads: as root it could."""


def _regular(path: str) -> bool:
    return os.path.isfile(path) and not os.path.islink(path)


def _try_bwrap(bwrap: str, roots: tuple[RootEntry, ...]) -> str | None:
    """Run ``true`` in the real sandbox once; ``None`` when it worked, else why not."""
    with contextlib.ExitStack() as stack:
        probe = stack.enter_context(_temporary_dir())
        argv = bwrap_argv(["true"], bwrap=bwrap, roots=roots, workspace=probe, prlimit=None)
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_PROBE_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"--sandbox bwrap: {bwrap} cannot be run: {error}"
    if done.returncode == 0:
        return None
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    why = said[-1] if said else f"exit code {done.returncode}"
    return (
        f"--sandbox bwrap: bubblewrap cannot create its sandbox here ({why}); user namespaces may not be "
        "allowed (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone, or AppArmor's "
        "kernel.apparmor_restrict_unprivileged_userns)"
    )


@contextlib.contextmanager
def _temporary_dir() -> Iterator[str]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="alisio-sandbox-probe-") as path:
        yield os.path.realpath(path)


# --- the pids and memory cgroups (root only) --------------------------------------------------------------


def _pids_cgroup() -> tuple[str | None, tuple[str, ...]]:
    """Where per-command pids cgroups can be made, and a warning when the process limit goes unenforced."""
    if os.geteuid() != 0:
        return None, ()  # RLIMIT_NPROC binds every other user
    base = _writable_base("pids")
    if base is not None:
        return base, ()
    return None, (
        "sandbox: running as root with no writable pids cgroup, the process limit is not enforced (a fork "
        "bomb is stopped only by the command's timeout); the file size and memory limits are",
    )


def _writable_base(controller: str) -> str | None:
    """The first directory of ``_bases(controller)`` where a cgroup can be made (stale ones removed)."""
    for base in _bases(controller):
        probe = os.path.join(base, f"{_CGROUP_PREFIX}probe-{secrets.token_hex(6)}")
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


def _new_cgroup(base: str, settings: dict[str, int]) -> str:
    group = os.path.join(base, f"{_CGROUP_PREFIX}{os.getpid()}-{secrets.token_hex(8)}")
    os.mkdir(group)
    try:
        for file, value in settings.items():
            Path(group, file).write_text(str(value), encoding="ascii")
    except OSError:
        os.rmdir(group)
        raise
    return group


def _remove_cgroup(group: str) -> None:
    """Remove ``group`` once its processes are gone (they are dying, or reaped already)."""
    for attempt in range(50):
        try:
            os.rmdir(group)
            return
        except FileNotFoundError:
            return
        except OSError:
            if attempt == 10:
                _kill_members(group)
            time.sleep(0.01)


def _kill_members(group: str) -> None:
    import signal

    with contextlib.suppress(OSError):
        for pid in Path(group, "cgroup.procs").read_text(encoding="ascii").split():
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)


def _remove_stale(base: str) -> None:
    """Remove the empty cgroups that commands of alisio processes now gone left behind."""
    with contextlib.suppress(OSError):
        for name in os.listdir(base):
            if not name.startswith(_CGROUP_PREFIX):
                continue
            owner = name[len(_CGROUP_PREFIX) :].split("-", 1)[0]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(base, name))
