"""A whole external agent (a CLI and everything it starts) inside the sandbox, reaching only its proxy.

``agent_command`` is what an external-agent adapter calls: it wraps the agent's argv in bubblewrap with the
run's workspace at ``/workspace``, a private HOME (empty, or a host directory of the run's), and no network
but one route: a unix socket on the host (where the recording proxy listens) bound into the sandbox, with
``relay.py`` inside listening on the loopback address the agent is given (``http://127.0.0.1:PORT``). The
agent can reach the model through the proxy and nothing else; everything it starts dies with it.

``unix_socket_for`` serves a unix socket in front of a TCP address on the host, for a proxy that listens
on TCP only.

Rules:

- ``network=True`` (the ``external`` effect granted) shares the host network instead, and the relay is not
  needed (it still runs when a proxy is given, so the agent's address is the same either way);
- the relay needs ``python3`` in the sandbox's ``/usr/bin`` (Debian's ``python3``): without it the wrap
  refuses (``SandboxUnavailable``), it never runs the agent without its relay;
- paths inside are fixed (``/workspace``, ``/home/sandbox``, ``/run/alisio/proxy.sock``), so the agent's
  requests are the same in every run, as replay needs.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from alisio.core.harness.sandbox import SANDBOX_HOME, WORKSPACE, Bind
from alisio.shell.sandbox.bwrap import Sandbox, SandboxUnavailable
from alisio.shell.sandbox.relay import Pair

__all__ = [
    "PROXY_SOCKET",
    "RELAY_PYTHON",
    "ProxyRoute",
    "agent_command",
    "unix_socket_for",
]

PROXY_SOCKET: Final = "/run/alisio/proxy.sock"
"""Where the proxy's unix socket is inside the sandbox."""
RELAY_PATH: Final = "/run/alisio/relay.py"
RELAY_PYTHON: Final = "/usr/bin/python3"
"""The interpreter of the relay inside the sandbox (the host's, bound read-only with ``/usr``)."""
_RELAY_SOURCE: Final = Path(__file__).with_name("relay.py")


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


@contextlib.contextmanager
def agent_command(
    argv: Sequence[str],
    *,
    sandbox: Sandbox,
    workspace: Path,
    home: Path | None = None,
    proxy: ProxyRoute | None = None,
    network: bool = False,
    cwd: str = WORKSPACE,
) -> Iterator[list[str]]:
    """The argv that runs the external agent ``argv`` inside ``sandbox`` (its cgroup lives for the block).

    Start it with ``subprocess.Popen(argv, env=..., cwd=workspace, start_new_session=True, ...)``; the
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
        cwd: where the agent starts, inside the sandbox.

    Raises:
        SandboxUnavailable: a proxy was given and the sandbox has no ``/usr/bin/python3`` for the relay.
    """
    binds: list[Bind] = []
    command = list(argv)
    if home is not None:
        binds.append(Bind(source=os.path.realpath(home), target=SANDBOX_HOME, writable=True))
    if proxy is not None:
        if not os.access(RELAY_PYTHON, os.X_OK):
            raise SandboxUnavailable(
                f"--sandbox bwrap: the proxy relay needs {RELAY_PYTHON} inside the sandbox: apt-get install python3"
            )
        binds.append(Bind(source=os.path.realpath(proxy.socket), target=PROXY_SOCKET, writable=True))
        binds.append(Bind(source=str(_RELAY_SOURCE), target=RELAY_PATH))
        relay = [RELAY_PYTHON, "-I", RELAY_PATH, PROXY_SOCKET, proxy.host, str(proxy.port), "--"]
        command = relay + command
    with sandbox.command(
        command, workspace=os.path.realpath(workspace), cwd=cwd, network=network, binds=binds
    ) as wrapped:
        yield wrapped


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
