"""bubblewrap on this machine: whether it can run (``probe_sandbox``), and one command inside it.

Rules:

- ``probe_sandbox`` runs before the first run of a command: bwrap must be on PATH (else the message names
  ``apt-get install bubblewrap``), it must create its namespaces (a real ``bwrap --unshare-all ... true``;
  where user namespaces are not allowed its own error is named), and ``prlimit`` must exist under ``/usr``.
  A failure is a ``SandboxUnavailable`` with one line: a command that asked for the sandbox never runs
  without it;
- running as root, each command gets a pids cgroup (``pids.max``: the process limit, which ``RLIMIT_NPROC``
  does not enforce for root) and, where one can be made, a memory cgroup (the memory of all its processes
  together), born in them rather than moved (``alisio.shell.sandbox.cgroups``). Where no pids cgroup can be
  made, the probe says the process limit is not enforced (``Sandbox.warnings``); the other limits still are.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from alisio.core.harness.sandbox import (
    BIND_ROOTS,
    WORKSPACE,
    Bind,
    RootEntry,
    SandboxLimits,
    bwrap_argv,
)
from alisio.shell.sandbox.cgroups import CommandCgroups, Launch, command_cgroups, pids_cgroup, writable_base

__all__ = [
    "INSTALL_HINT",
    "MASKED",
    "Launch",
    "Sandbox",
    "SandboxRun",
    "SandboxUnavailable",
    "probe_sandbox",
    "require_sandbox",
]

INSTALL_HINT: Final = "apt-get install bubblewrap"
_PROBE_TIMEOUT_S: Final = 20.0


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
    cgroups: CommandCgroups | None = field(init=False, compare=False, repr=False)
    """Where the commands' cgroups are made: from ``pids_cgroup``, ``memory_cgroup`` and ``limits``."""

    def __post_init__(self) -> None:
        limits = self.limits
        found = command_cgroups(
            self.pids_cgroup,
            self.memory_cgroup,
            max_processes=limits.max_processes,
            max_memory_bytes=limits.max_memory_bytes,
        )
        object.__setattr__(self, "cgroups", found)

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
    ) -> Iterator[Launch]:
        """``argv`` ready to start in the sandbox (``Launch.popen``), for the block (its cgroups, as root,
        are emptied after it: start it and wait for it inside the block).

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
        if self.cgroups is None:
            yield Launch(list(inner))
        else:
            with self.cgroups.launch(inner) as launch:
                yield launch


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
    ) -> contextlib.AbstractContextManager[Launch]:
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
    cgroup, warnings = pids_cgroup()
    memory = writable_base("memory") if os.geteuid() == 0 else None
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
