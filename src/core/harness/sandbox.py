"""The sandbox commands run in: what ``--sandbox bwrap`` builds, and how a denial shows in a command's output.

``bwrap_argv`` is the whole policy, as data: the shell gathers the facts (which of ``/bin``, ``/lib``... exist
on this machine and whether they are links, the workspace's real path) and runs the argv it returns.

Rules this module keeps:

- the root is a fresh tmpfs, remounted read-only once built: ``/usr``, ``/etc`` and each existing ``/bin``,
  ``/sbin``, ``/lib*`` are bound read-only (a top-level link such as ``/bin -> usr/bin`` stays a link);
- the workspace is bound read-write at ``WORKSPACE`` (``/workspace``), a fixed path whatever the copy's real
  path, so what a command prints is the same in every run; the command starts there (or below it). A task
  may name another fixed path (``workdir``: ``/app`` for a Harbor task; ``sandbox_path_problem`` says which are
  refused), and give its verifiers more read-only binds and fresh writable directories (``scratch``);
- ``/tmp``, ``HOME`` (``SANDBOX_HOME``) and ``/dev/shm`` are private tmpfs mounts of at most
  ``limits.tmp_bytes`` each; ``/dev`` is bwrap's minimal one (null, zero, full, random, urandom, tty, pts),
  read-only but for its devices and ``/dev/shm`` (bwrap's own is an unbounded tmpfs), and ``/proc`` the new
  PID namespace's own;
- new user, PID, IPC, UTS, cgroup and network namespaces (``--unshare-all``); the command is the PID
  namespace's init (``--as-pid-1``), so when it ends every process inside is killed, daemons included, and
  bwrap reaps it before it returns (no orphaned zombie for an init that may never reap it); with
  ``--die-with-parent`` the same happens when alisio itself dies; the network is the host's (``--share-net``) only when ``network`` is on (the ``external``
  effect is granted), else only an unconnected loopback exists;
- resource limits are set inside, just before the command (``prlimit``): processes (``RLIMIT_NPROC``, which
  counts the sandbox's own user namespace), the size of one file (``RLIMIT_FSIZE``) and the address space
  of one process (``RLIMIT_AS``); the shell adds a pids cgroup where the kernel ignores ``RLIMIT_NPROC``
  (running as root);
- HOME, TMPDIR and PWD are the sandbox's; the ``XDG_*`` directories of the host are unset; ``env`` (paths
  inside the sandbox, given by the caller) is set after them;
- the command itself comes last, after ``--``, verbatim: nothing of it is parsed by bwrap or prlimit.

``denial_in`` says when a command's output shows the sandbox refused something (a write to the read-only
root, a connection without network), for the ``sandbox_denied`` incident.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated, Final

from msgspec import Meta

from alisio.core.base import Frozen

__all__ = [
    "BIND_ROOTS",
    "DEFAULT_LIMITS",
    "DEV_SHM",
    "HOST_PATH_VARIABLES",
    "SANDBOX_HOME",
    "SOLUTION",
    "WORKSPACE",
    "Bind",
    "RootEntry",
    "SandboxKind",
    "SandboxLimits",
    "bwrap_argv",
    "denial_in",
    "inside_path",
    "limit_args",
    "sandbox_path_problem",
]

WORKSPACE: Final = "/workspace"
"""Where the run's workspace is, inside the sandbox."""
SOLUTION: Final = "/solution"
"""Where a task's script ``solution`` has its directory (read-only) when ``eval selfcheck`` runs it sandboxed."""
DEV_SHM: Final = "/dev/shm"
"""Shared memory inside the sandbox: a private tmpfs of at most ``SandboxLimits.tmp_bytes``."""
SANDBOX_HOME: Final = "/home/sandbox"
"""HOME inside the sandbox: a private, empty tmpfs."""
BIND_ROOTS: Final = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""The host's top-level entries bound read-only (those that exist; ``/usr`` and ``/etc`` must)."""


HOST_PATH_VARIABLES: Final = (
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
)
"""Unset inside: they name host directories that do not exist there (programs fall back to HOME's)."""


class SandboxKind(StrEnum):
    """``--sandbox``: where the agent's commands and the command verifiers run."""

    NONE = "none"
    """As a subprocess with the user's privileges (the mark and process-group sweep only)."""
    BWRAP = "bwrap"
    """Inside bubblewrap, as this module describes."""


Bytes = Annotated[int, Meta(ge=1 << 20, le=1 << 50)]
Processes = Annotated[int, Meta(ge=16, le=1 << 20)]


class SandboxLimits(Frozen, frozen=True, kw_only=True):
    """The resource limits of one sandboxed command (``[lab] sandboxProcesses``... in config.toml)."""

    max_processes: Processes = 512
    """Processes and threads at once inside the sandbox: a fork bomb stops here."""
    max_file_bytes: Bytes = 1 << 30
    """The largest file a process may write (a larger write fails with EFBIG, "File too large")."""
    max_memory_bytes: Bytes = 8 << 30
    """The address space of one process (a larger allocation fails: MemoryError, ENOMEM)."""
    tmp_bytes: Bytes = 1 << 30
    """The size of the private /tmp, of the private HOME and of /dev/shm (each a tmpfs held in memory)."""


DEFAULT_LIMITS: Final = SandboxLimits()


class RootEntry(Frozen, frozen=True, kw_only=True):
    """A top-level host entry of ``BIND_ROOTS`` that exists, as the shell found it."""

    path: str
    link: str | None = None
    """Its target when it is a symbolic link (``usr/bin`` for ``/bin`` on a merged-/usr system)."""
    masked: bool = False
    """A host file below a bound root that is hidden (``/dev/null`` bound over it): a secret that the
    read-only ``/etc`` would show to a command running as root (``/etc/shadow``, SSH host keys)."""


class Bind(Frozen, frozen=True, kw_only=True):
    """One more host path bound into the sandbox (a unix socket for an external agent's relay...)."""

    source: str
    target: str
    writable: bool = False


def inside_path(relative: str, workdir: str = WORKSPACE) -> str:
    """The path inside the sandbox of a workspace-relative path (``.`` is the workspace, at ``workdir``)."""
    clean = relative.strip("/")
    return workdir if clean in ("", ".") else f"{workdir}/{clean}"


_RESERVED: Final = (*BIND_ROOTS, "/tmp", "/dev", "/proc", "/home", "/run/alisio", SOLUTION)
"""Paths the sandbox itself builds: a workdir or a bind may lie neither at nor under one of them."""


def sandbox_path_problem(path: str) -> str | None:
    """Why ``path`` cannot be a workdir or a bind target inside the sandbox, or ``None``.

    It must be absolute and normalised (no ``.``, ``..``, ``//`` or trailing ``/``), not ``/``, and outside
    what the sandbox builds itself (``/usr``, ``/etc``, ``/bin``..., ``/tmp``, ``/dev``, ``/proc``, ``/home``,
    ``/run/alisio``, ``/solution``).
    """
    parts = path.split("/")
    if not path.startswith("/") or path == "/":
        return "must be an absolute path other than / (such as /app)"
    if any(part in ("", ".", "..") for part in parts[1:]) or "\0" in path:
        return "must be a normalised absolute path (no ., .., // or trailing /)"
    for reserved in _RESERVED:
        if path == reserved or path.startswith(reserved + "/"):
            return f"lies in {reserved}, which the sandbox builds itself"
    return None


def limit_args(limits: SandboxLimits) -> tuple[str, ...]:
    """``prlimit``'s options for ``limits`` (soft and hard limit alike)."""
    return (
        f"--nproc={limits.max_processes}",
        f"--fsize={limits.max_file_bytes}",
        f"--as={limits.max_memory_bytes}",
    )


def _system_mounts(roots: Sequence[RootEntry], limits: SandboxLimits) -> list[str]:
    """bwrap's options for what every sandbox has before its workspace: the read-only roots (masked files
    last), ``/dev``, ``/proc``, and the private ``/tmp``, ``/dev/shm`` and HOME."""
    args: list[str] = []
    for entry in sorted(roots, key=lambda entry: entry.masked):
        if entry.link is not None:
            args += ["--symlink", entry.link, entry.path]
        else:
            args += ["--ro-bind", "/dev/null" if entry.masked else entry.path, entry.path]
    # bwrap's /dev is a tmpfs of its own with no size, /dev/shm a directory in it: /dev/shm gets a bounded
    # tmpfs, and the rest of /dev is made read-only (its device nodes are mounts of their own: still usable)
    args += ["--dev", "/dev", "--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", DEV_SHM]
    args += ["--remount-ro", "/dev", "--proc", "/proc"]
    for private in ("/tmp", SANDBOX_HOME):
        args += ["--perms", "1777" if private == "/tmp" else "0700", "--size", str(limits.tmp_bytes)]
        args += ["--tmpfs", private]
    return args


def bwrap_argv(
    command: Sequence[str],
    *,
    bwrap: str,
    roots: Sequence[RootEntry],
    workspace: str,
    cwd: str = WORKSPACE,
    network: bool = False,
    limits: SandboxLimits = DEFAULT_LIMITS,
    binds: Sequence[Bind] = (),
    prlimit: str | None = "/usr/bin/prlimit",
    workdir: str = WORKSPACE,
    scratch: Sequence[str] = (),
    env: Sequence[tuple[str, str]] = (),
) -> tuple[str, ...]:
    """The argv that runs ``command`` in the sandbox this module describes.

    Args:
        command: the command's argv (run as given: ``["bash", "-c", text]`` for the bash tool).
        bwrap: the bwrap executable.
        roots: the entries of ``BIND_ROOTS`` that exist on the host.
        workspace: the workspace's real host path, bound read-write at ``workdir``.
        cwd: where the command starts, inside the sandbox.
        network: share the host's network (the ``external`` effect is granted).
        binds: more paths to bind (after the workspace, so they may lie inside ``/tmp`` or HOME).
        prlimit: the ``prlimit`` executable inside the sandbox; ``None`` sets no rlimits.
        workdir: where the workspace is inside the sandbox (``WORKSPACE`` unless a task names another).
        scratch: directories made fresh, empty and writable for this command (each a tmpfs of at most
            ``limits.tmp_bytes``), after the binds.
        env: variables set inside after the sandbox's own, so they win (an external agent's HOME and
            ``XDG_*`` directories, which name paths inside the sandbox).
    """
    args: list[str] = [bwrap, "--unshare-all", "--die-with-parent", "--as-pid-1"]
    if network:
        args.append("--share-net")
    args += _system_mounts(roots, limits)
    args += ["--bind", workspace, workdir]
    for bind in binds:
        args += ["--bind" if bind.writable else "--ro-bind", bind.source, bind.target]
    for directory in scratch:
        args += ["--size", str(limits.tmp_bytes), "--tmpfs", directory]
    args += ["--remount-ro", "/", "--hostname", "sandbox", "--chdir", cwd]
    args += ["--setenv", "HOME", SANDBOX_HOME, "--setenv", "TMPDIR", "/tmp", "--setenv", "PWD", cwd]
    for name in HOST_PATH_VARIABLES:
        args += ["--unsetenv", name]
    for name, value in env:
        args += ["--setenv", name, value]
    args.append("--")
    if prlimit is not None:
        args += [prlimit, *limit_args(limits), "--"]
    return (*args, *command)


_READ_ONLY: Final = ("Read-only file system", "EROFS")
_NO_NETWORK: Final = (
    "Network is unreachable",
    "ENETUNREACH",
    "Temporary failure in name resolution",
    "Could not resolve host",
    "Name or service not known",
    "nodename nor servname",
)
_REFUSED: Final = ("Connection refused", "ECONNREFUSED")
_TOO_LARGE: Final = ("File too large", "EFBIG", "File size limit exceeded")
_FORK: Final = ("fork: retry: Resource temporarily unavailable", "fork: Resource temporarily unavailable")


def denial_in(output: str, *, network: bool) -> str | None:
    """What the sandbox refused, as shown in a sandboxed command's ``output``, or ``None``.

    Args:
        output: what the command printed (stdout and stderr).
        network: whether the command had the host's network (then a refused or failed connection is the
            network's doing, not the sandbox's).

    Returns:
        A short phrase for the ``sandbox_denied`` incident: "a write to the read-only file system", "a
        network connection (no network in the sandbox)", "a file past the size limit", "a process past
        the process limit"; several joined with "; ".
    """
    found: list[str] = []
    if any(marker in output for marker in _READ_ONLY):
        found.append("a write outside the workspace (read-only file system)")
    if not network and any(marker in output for marker in (*_NO_NETWORK, *_REFUSED)):
        found.append("a network connection (no network in the sandbox)")
    if any(marker in output for marker in _TOO_LARGE):
        found.append("a file past the sandbox's file size limit")
    if any(marker in output for marker in _FORK):
        found.append("a process past the sandbox's process limit")
    return "; ".join(found) or None
