"""Provider connections that a cancellation closes: a run blocked in a request stops at once.

With ``--jobs`` > 1 a signal reaches only the main thread; the runs on worker threads stop at their next
``alisio.shell.cancel.check``. A run blocked in a provider request (waiting for the response headers, or for
the next chunk of a stream that went silent) makes no check until the server answers: 50 s was seen, and
forever against a server that sends headers and then nothing. So every connection the provider opens is
tracked (``CancellableBackend``, the network backend of the provider's HTTP client), and
``alisio.shell.cancel.request`` shuts each one down (``shutdown(SHUT_RDWR)``, which wakes a thread blocked in
``recv``, as ``close`` does not). The blocked read then raises ``Cancelled`` in its worker thread, and the run
stops the way a run on the main thread stops on Ctrl-C. No new connection opens once cancellation was asked.

httpx 0.28 takes no network backend as a parameter; ``cancellable_transport`` sets it on the transport's
connection pool, the one attribute httpcore reads it from (``ConnectionPool._network_backend``).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import typing

import httpcore
import httpx

from alisio.shell import cancel

__all__ = ["CancellableBackend", "abort_connections", "cancellable_transport"]

_live: set[_TrackedStream] = set()
_lock = threading.Lock()


def abort_connections() -> None:
    """Shut down every open provider connection of the process (a cancellation was requested)."""
    with _lock:
        streams = list(_live)
    for stream in streams:
        sock = stream.get_extra_info("socket")
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):  # already closed by its own thread
                sock.shutdown(socket.SHUT_RDWR)


class _TrackedStream(httpcore.NetworkStream):
    """A connection known to ``abort_connections`` until it closes; a read or write that fails (or ends)
    after a cancellation raises ``Cancelled`` instead of a network error."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner
        with _lock:
            _live.add(self)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            data = self._inner.read(max_bytes, timeout)
        except Exception:
            cancel.check()
            raise
        if not data:
            cancel.check()
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        try:
            self._inner.write(buffer, timeout)
        except Exception:
            cancel.check()
            raise

    def close(self) -> None:
        with _lock:
            _live.discard(self)
        self._inner.close()

    def start_tls(
        self,
        ssl_context: typing.Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        with _lock:
            _live.discard(self)
        return _TrackedStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class CancellableBackend(httpcore.NetworkBackend):
    """httpcore's synchronous backend, every connection tracked (see the module docstring)."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.NetworkStream:
        cancel.check()
        return _TrackedStream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.NetworkStream:
        cancel.check()
        return _TrackedStream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def cancellable_transport() -> httpx.HTTPTransport:
    """An ``httpx.HTTPTransport`` whose connections a cancellation closes."""
    transport = httpx.HTTPTransport()
    pool = transport._pool
    if isinstance(pool, httpcore.ConnectionPool):
        pool._network_backend = CancellableBackend()
    return transport


cancel.on_request(abort_connections)
