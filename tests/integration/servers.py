"""The HTTP server every local test server is built on: it never prints, and it leaves nothing running.

``http.server``'s ``handle_error`` prints a traceback to ``sys.stderr``, from the handler's thread, whenever
it likes: a client that hung up on purpose (a run stopped, a timeout tested) makes one, and a thread still
writing after its test ended puts it in the stderr of whatever CLI the next test runs in this process (an
xdist worker runs many tests). So here:

- a client that hangs up (``ConnectionError``: a broken pipe, a reset) is what tests do on purpose: ignored;
- any other error of a handler is kept in ``errors`` (never printed) and raised by ``close`` in the test that
  owns the server, so a broken test server still fails its own test;
- ``close`` (or leaving ``serving``) stops the server, sets ``closing`` (a handler that waits should wait on
  it), shuts the sockets still open and joins every handler thread (bounded), so no thread outlives its test.

Usage::

    with serving(QuietServer(Handler)) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}"
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final, TypeVar

__all__ = ["QuietServer", "serving"]

_JOIN_S: Final = 5.0


class QuietServer(ThreadingHTTPServer):
    """A ``ThreadingHTTPServer`` on 127.0.0.1 (a free port by default) that never prints; see the module."""

    daemon_threads = True

    def __init__(
        self, handler: Callable[..., BaseHTTPRequestHandler], address: tuple[str, int] = ("127.0.0.1", 0)
    ) -> None:
        super().__init__(address, handler)
        self.errors: list[str] = []
        self.closing = threading.Event()
        self._open: dict[threading.Thread, socket.socket] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self, poll_s: float = 0.02) -> None:
        """Serve from a daemon thread."""
        self._thread = threading.Thread(target=self.serve_forever, args=(poll_s,), daemon=True)
        self._thread.start()

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._handle, args=(request, client_address), daemon=True, name="test-server-handler"
        )
        with self._lock:
            self._open[thread] = request
        thread.start()

    def _handle(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._open.pop(threading.current_thread(), None)

    def handle_error(self, request: object, client_address: object) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError) or self.closing.is_set():
            return
        with self._lock:
            self.errors.append(traceback.format_exc())

    def close(self) -> None:
        """Stop serving, end every handler thread, then raise what a handler failed with, if anything."""
        self.closing.set()
        if self._thread is not None:
            self.shutdown()
            self._thread.join(_JOIN_S)
        with self._lock:
            left = dict(self._open)
        for request in left.values():
            with contextlib.suppress(OSError):
                request.shutdown(socket.SHUT_RDWR)
        for thread in left:
            thread.join(_JOIN_S)
        self.server_close()
        if self.errors:
            raise AssertionError("the test server's handler failed:\n" + "\n".join(self.errors))


Server = TypeVar("Server", bound=QuietServer)


@contextlib.contextmanager
def serving(server: Server, poll_s: float = 0.02) -> Iterator[Server]:
    """``server`` serving from a thread for the ``with`` block, closed after it (see ``QuietServer.close``)."""
    server.start(poll_s)
    try:
        yield server
    finally:
        server.close()
