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

The same tracking serves the recording proxy of an external agent's run (``alisio.shell.agents.proxy``): its
client's connections are a ``Connections`` of their own, which the proxy aborts when the run ends, so a call
still streaming (or waiting for its headers) is cut at once instead of holding its connection open. A read
that finds the end of a connection the proxy aborted is an error too: a body delimited by the connection's
close (no length, not chunked) would otherwise end there as if whole, and the cut call be kept as finished.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import typing

import httpcore
import httpx

from alisio.shell import cancel

__all__ = ["CancellableBackend", "Connections", "abort_connections", "cancellable_transport"]


class Connections:
    """A set of open connections that ``abort`` shuts down (and after which none opens)."""

    def __init__(self) -> None:
        self._live: set[_TrackedStream] = set()
        self._lock = threading.Lock()
        self.aborted = False

    def add(self, stream: _TrackedStream) -> None:
        with self._lock:
            self._live.add(stream)

    def discard(self, stream: _TrackedStream) -> None:
        with self._lock:
            self._live.discard(stream)

    def check(self) -> None:
        """Refuse a new connection once aborted."""
        if self.aborted:
            raise httpcore.ConnectError("the connections were aborted (the run ended)")

    def abort(self, *, refuse_new: bool = True) -> None:
        """Shut every open connection down: a thread blocked reading one wakes with an error. With
        ``refuse_new``, no connection opens after it."""
        with self._lock:
            self.aborted = self.aborted or refuse_new
            streams = list(self._live)
        for stream in streams:
            sock = stream.get_extra_info("socket")
            if isinstance(sock, socket.socket):
                with contextlib.suppress(OSError):  # already closed by its own thread
                    sock.shutdown(socket.SHUT_RDWR)


_PROCESS = Connections()
"""Every provider connection of the process (the built-in agent's)."""


def abort_connections() -> None:
    """Shut down every open provider connection of the process (a cancellation was requested)."""
    _PROCESS.abort(refuse_new=False)  # a cancellation stops new connections with cancel.check


class _TrackedStream(httpcore.NetworkStream):
    """A connection known to ``abort_connections`` until it closes; a read or write that fails (or ends)
    after a cancellation raises ``Cancelled`` instead of a network error."""

    def __init__(self, inner: httpcore.NetworkStream, connections: Connections) -> None:
        self._inner = inner
        self._connections = connections
        connections.add(self)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            data = self._inner.read(max_bytes, timeout)
        except Exception:
            cancel.check()
            raise
        if not data:
            cancel.check()
            if self._connections.aborted:
                # shut down by ``abort``: a body that ends with its connection (no length, not chunked)
                # must not read as whole
                raise httpcore.ReadError("the connection was aborted (the run ended)")
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        try:
            self._inner.write(buffer, timeout)
        except Exception:
            cancel.check()
            raise

    def close(self) -> None:
        self._connections.discard(self)
        self._inner.close()

    def start_tls(
        self,
        ssl_context: typing.Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        self._connections.discard(self)
        inner = self._inner.start_tls(ssl_context, server_hostname, timeout)
        return _TrackedStream(inner, self._connections)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class CancellableBackend(httpcore.NetworkBackend):
    """httpcore's synchronous backend, every connection tracked (see the module docstring): in the process's
    ``Connections``, or in ``connections`` when given."""

    def __init__(self, connections: Connections | None = None) -> None:
        self._inner = httpcore.SyncBackend()
        self._connections = _PROCESS if connections is None else connections

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.NetworkStream:
        cancel.check()
        self._connections.check()
        stream = self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _TrackedStream(stream, self._connections)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.NetworkStream:
        cancel.check()
        self._connections.check()
        stream = self._inner.connect_unix_socket(path, timeout, socket_options)
        return _TrackedStream(stream, self._connections)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def cancellable_transport(connections: Connections | None = None) -> httpx.HTTPTransport:
    """An ``httpx.HTTPTransport`` whose connections a cancellation closes (and ``connections.abort``, when
    given)."""
    transport = httpx.HTTPTransport()
    pool = transport._pool
    if isinstance(pool, httpcore.ConnectionPool):
        pool._network_backend = CancellableBackend(connections)
    return transport


cancel.on_request(abort_connections)
