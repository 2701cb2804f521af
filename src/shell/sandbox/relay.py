"""The relay inside an external agent's sandbox: a loopback TCP address in front of a unix socket.

Run inside the sandbox (``alisio.shell.sandbox.agents`` binds this file there and starts it with the
system's ``python3``; it imports nothing but the standard library)::

    python3 -I relay.py SOCKET HOST PORT -- ARGV...

It listens on ``HOST:PORT`` (a loopback address of the sandbox's own network namespace) *before* it starts
``ARGV`` as its child, so the agent never races it; each connection accepted there is joined to a new
connection to the unix socket ``SOCKET`` (bound in from the host, where the recording proxy listens), bytes
unchanged in both directions, each direction closed on its own (a half-close is passed on). When the agent
exits, the relay exits with its exit code (128 + N for a signal N); SIGTERM, SIGINT and SIGHUP are passed to
the agent. A connection the unix socket refuses is closed at once. An agent that cannot be started (its
executable is not in the sandbox) is one stderr line starting ``START_FAILED`` and exit code 127.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading

_CHUNK = 1 << 16
START_FAILED = "alisio relay: cannot start "
"""The start of the one stderr line (exit 127) when the agent's executable cannot be started inside."""


class Pair:
    """A client and its upstream; the second direction to finish closes both."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.sockets = (client, upstream)
        self.lock = threading.Lock()
        self.open = 2

    def pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(_CHUNK):
                target.sendall(data)
            target.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        with self.lock:
            self.open -= 1
            last = self.open == 0
        if last:
            for sock in self.sockets:
                sock.close()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            continue
        pair = Pair(client, upstream)
        threading.Thread(target=pair.pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pair.pump, args=(upstream, client), daemon=True).start()


def main(argv: list[str]) -> int:
    """Listen, start the agent, relay until it exits; its exit code."""
    if len(argv) < 5 or argv[3] != "--":
        sys.stderr.write("usage: relay.py SOCKET HOST PORT -- ARGV...\n")
        return 2
    path, host, port, command = argv[0], argv[1], int(argv[2]), argv[4:]
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(64)
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    try:
        child = subprocess.Popen(command)
    except OSError as error:  # the agent's executable is not in the sandbox: say so, as a shell would
        sys.stderr.write(f"{START_FAILED}{command[0]}: {error.strerror or error}\n")
        return 127
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda number, frame: child.send_signal(number))
    code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.stdout.flush()
    os._exit(main(sys.argv[1:]))
