"""A whole external agent (a CLI and everything it starts) inside the sandbox, reaching only its proxy.

``agent_command`` is what an external-agent adapter calls: it wraps the agent's argv in bubblewrap with the
run's workspace at ``/workspace``, a private HOME (empty, or a host directory of the run's), and no network
but one route: a unix socket on the host (where the recording proxy listens) bound into the sandbox, with
``relay.py`` inside listening on the loopback address the agent is given (``http://127.0.0.1:PORT``). The
agent can reach the model through the proxy and nothing else; everything it starts dies with it.

``agent_files`` says which host paths an agent's command needs inside (its install tree, a script its
configured command names), to bind read-only at the same path. ``unix_socket_for`` serves a unix socket in front of a TCP
address on the host, for a proxy that listens on TCP only.

Rules:

- ``network=True`` (the ``external`` effect granted) shares the host network instead, and the relay is not
  needed (it still runs when a proxy is given, so the agent's address is the same either way);
- the relay needs ``python3`` in the sandbox's ``/usr/bin`` (Debian's ``python3``): without it the wrap
  refuses (``SandboxUnavailable``), it never runs the agent without its relay;
- paths inside are fixed (``/workspace``, ``/home/sandbox``, ``/run/alisio/proxy.sock``, and the relay's
  ``RELAY_PORT``), so the agent's requests are the same in every run, as replay needs;
- nothing of the host's file system is inside but the sandbox's read-only roots (``/usr``, ``/etc``...),
  the workspace, the private HOME, and the paths ``agent_files`` names, read-only: those are decided from
  the agent's executable and its configured command, never from what a run puts in (a task's prompt).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from alisio.core.harness.sandbox import BIND_ROOTS, SANDBOX_HOME, WORKSPACE, Bind
from alisio.shell.sandbox.bwrap import Launch, Sandbox, SandboxUnavailable
from alisio.shell.sandbox.relay import Pair

__all__ = [
    "PROXY_SOCKET",
    "RELAY_PORT",
    "RELAY_PYTHON",
    "ProxyRoute",
    "agent_command",
    "agent_files",
    "relay_problem",
    "unix_socket_for",
]

PROXY_SOCKET: Final = "/run/alisio/proxy.sock"
"""Where the proxy's unix socket is inside the sandbox."""
RELAY_PATH: Final = "/run/alisio/relay.py"
RELAY_PYTHON: Final = "/usr/bin/python3"
"""The interpreter of the relay inside the sandbox (the host's, bound read-only with ``/usr``)."""
_RELAY_SOURCE: Final = Path(__file__).with_name("relay.py")
RELAY_PORT: Final = 4141
"""The loopback port the relay listens on inside an agent's sandbox (its own network namespace: fixed, so
an agent's configuration is the same in every run)."""


@dataclass(frozen=True)
class ProxyRoute:
    """The one way out of an agent's sandbox: a host unix socket, reached inside at ``127.0.0.1:port``."""

    socket: Path
    """The unix socket the recording proxy listens on, on the host."""
    port: int
    """The loopback port the relay listens on inside (give the agent ``http://127.0.0.1:<port>``)."""
    host: str = "127.0.0.1"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``: what the agent is configured with (add ``/v1`` as its API needs)."""
        return f"http://{self.host}:{self.port}"


def relay_problem() -> str | None:
    """Why the proxy's relay cannot run in the sandbox here (no ``/usr/bin/python3``), or ``None``."""
    if os.access(RELAY_PYTHON, os.X_OK):
        return None
    return (
        f"--sandbox bwrap: the proxy relay needs {RELAY_PYTHON} inside the sandbox: apt-get install python3"
    )


@contextlib.contextmanager
def agent_command(
    argv: Sequence[str],
    *,
    sandbox: Sandbox,
    workspace: Path,
    home: Path | None = None,
    proxy: ProxyRoute | None = None,
    network: bool = False,
    cwd: str | None = None,
    env: Sequence[tuple[str, str]] = (),
    read_only: Sequence[str] = (),
    workdir: str = WORKSPACE,
) -> Iterator[Launch]:
    """The external agent ``argv`` ready to start inside ``sandbox``, for the block (its cgroups live for it).

    Start it with ``launch.popen(env=..., cwd=workspace, ...)`` and wait for it in the block; the
    environment passes through as given, except HOME, TMPDIR and PWD, which are the sandbox's, and the
    host's XDG_* directories, which are unset.

    Args:
        argv: the agent's command line, as it would run outside (``["codex", "exec", ...]``).
        sandbox: ``require_sandbox(...)``'s sandbox (checked once per command).
        workspace: the run's workspace on the host, bound read-write at ``/workspace``.
        home: a host directory bound read-write as HOME (``/home/sandbox``), for the agent's own config and
            state; ``None``: an empty private tmpfs.
        proxy: the recording proxy's route; ``None``: no way out at all (unless ``network``).
        network: share the host's network (only when the ``external`` effect is granted).
        cwd: where the agent starts, inside the sandbox (default: ``workdir``).
        env: variables set inside after the sandbox's own HOME, TMPDIR and PWD (the agent's HOME and XDG
            directories below ``/home/sandbox``).
        read_only: host paths bound read-only at the same path (``agent_files``).
        workdir: where the workspace is inside (``/workspace``, or a task's own, such as ``/app``).

    Raises:
        SandboxUnavailable: a proxy was given and the sandbox has no ``/usr/bin/python3`` for the relay.
    """
    binds = [Bind(source=path, target=path) for path in read_only]
    command = list(argv)
    if home is not None:
        binds.append(Bind(source=os.path.realpath(home), target=SANDBOX_HOME, writable=True))
    if proxy is not None:
        problem = relay_problem()
        if problem is not None:
            raise SandboxUnavailable(problem)
        binds.append(Bind(source=os.path.realpath(proxy.socket), target=PROXY_SOCKET, writable=True))
        binds.append(Bind(source=str(_RELAY_SOURCE), target=RELAY_PATH))
        relay = [RELAY_PYTHON, "-I", RELAY_PATH, PROXY_SOCKET, proxy.host, str(proxy.port), "--"]
        command = relay + command
    with sandbox.command(
        command,
        workspace=os.path.realpath(workspace),
        cwd=cwd or workdir,
        network=network,
        binds=binds,
        env=env,
        workdir=workdir,
    ) as launch:
        yield launch


# --- what of the host an agent needs inside ----------------------------------------------------------------


_MOUNTS: Final = frozenset({"/", "/tmp", "/dev", "/proc", "/run", "/home", SANDBOX_HOME, WORKSPACE})
"""The sandbox's own mount points: an argument naming one is never bound over it."""


def _under_roots(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in BIND_ROOTS)


def _install_tree(real: str) -> list[str]:
    """The directory an installed executable needs with it: its venv (and the venv's base Python), its
    topmost ``node_modules``, else its own directory."""
    parents = [str(parent) for parent in Path(real).parents]
    for parent in parents:
        config = Path(parent, "pyvenv.cfg")
        if config.is_file():
            found = [parent]
            for line in config.read_text(encoding="utf-8", errors="replace").splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "home" and value.strip():
                    found.append(str(Path(os.path.realpath(value.strip())).parent))
            return found
    modules = [parent for parent in parents if Path(parent).name == "node_modules"]
    return [modules[-1]] if modules else [str(Path(real).parent)]


def _interpreter(real: str) -> str | None:
    """The absolute interpreter of a ``#!`` script (``None``: not a script, or ``#!/usr/bin/env ...``)."""
    try:
        with open(real, "rb") as file:
            first = file.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    return words[0] if words and os.path.isabs(words[0]) else None


def agent_files(
    argv: Sequence[str], path: str, named: Sequence[str] = ()
) -> tuple[list[str], tuple[str, ...]]:
    """The agent's argv as it runs inside, and the host paths to bind read-only (at the same path) for it.

    - An executable the sandbox has (``python3``, ``/usr/bin/node``) is run as it is there; one outside the
      sandbox's roots (``.agents/bin/opencode``, ``~/.local/bin/agent``) is run by its real path, with its
      install tree (a venv and its base Python, the topmost ``node_modules``, else its directory) and that
      of its ``#!`` interpreter;
    - each path of ``named`` that exists on the host (the agent's script, its config) is bound too. Nothing
      else of ``argv`` is: an argument a run put in (a task's prompt that is a host path) is only text.

    Args:
        path: the agent's ``PATH`` (the sandbox keeps only its entries under ``/usr``, ``/bin``...).
        named: the absolute paths the agent's own command names (``Invocation.host_paths``: decided from
            its configured arguments, before a run's prompt and model are put in).
    """
    if not argv:
        return [], ()
    inside = os.pathsep.join(entry for entry in path.split(os.pathsep) if _under_roots(entry))
    command, found = list(argv), []
    exe = argv[0] if os.path.isabs(argv[0]) else shutil.which(argv[0], path=inside or os.defpath)
    if exe is None or not _under_roots(os.path.realpath(exe)):
        host = argv[0] if os.path.isabs(argv[0]) else shutil.which(argv[0], path=path)
        if host is not None and os.path.exists(host):
            real = os.path.realpath(host)
            command[0] = real
            found += _install_tree(real)
            interpreter = _interpreter(real)
            if interpreter is not None and not _under_roots(os.path.realpath(interpreter)):
                found += _install_tree(os.path.realpath(interpreter))
    for arg in named:
        if os.path.isabs(arg) and os.path.exists(arg):
            found.append(os.path.normpath(arg))
    return command, _outermost(path for path in found if not _under_roots(path) and path not in _MOUNTS)


def _outermost(paths: Iterator[str] | Sequence[str]) -> tuple[str, ...]:
    """``paths`` without duplicates or paths inside another of them, sorted."""
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == other or path.startswith(other.rstrip("/") + "/") for other in kept):
            kept.append(path)
    return tuple(sorted(kept))


# --- a unix socket in front of a TCP proxy (host side) ----------------------------------------------------------


@contextlib.contextmanager
def unix_socket_for(host: str, port: int) -> Iterator[Path]:
    """A unix socket (in a new private directory) that forwards each connection to ``host:port``, for the
    block; pass it as ``ProxyRoute.socket`` when the proxy listens on TCP."""
    with tempfile.TemporaryDirectory(prefix="alisio-proxy-") as directory:
        path = Path(directory) / "proxy.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        listener.listen(64)
        thread = threading.Thread(target=_forward_all, args=(listener, host, port), daemon=True)
        thread.start()
        try:
            yield path
        finally:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
            thread.join(timeout=5)


def _forward_all(listener: socket.socket, host: str, port: int) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        try:
            upstream = socket.create_connection((host, port), timeout=30)
            upstream.settimeout(None)
        except OSError:
            client.close()
            continue
        pair = Pair(client, upstream)
        for source, target in ((client, upstream), (upstream, client)):
            threading.Thread(target=pair.pump, args=(source, target), daemon=True).start()
