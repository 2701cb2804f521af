"""The recording proxy sends the real key to the configured provider and nowhere else: a request target that
is not a path on the provider (``.attacker.example/...``, ``@evil/...``, an absolute ``http://evil/...``) is refused, never
glued to the base URL."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from alisio.core.harness.budget import RunBudget
from alisio.shell.agents.proxy import RunProxy
from tests.integration.servers import QuietServer, serving

KEY = "sk-proxy-origin-not-a-real-key-0123456789"
TOKEN = "alisio-run-origin-test"


@pytest.fixture
def upstream() -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """A provider on 127.0.0.1 that records (path, authorization) of every request it gets."""
    seen: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("authorization", "")))
            body = b'{"data": []}'
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with serving(QuietServer(Handler)) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen


def _raw_get(url: str, target: str) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        auth = f"Authorization: Bearer {TOKEN}\r\n"
        conn.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n".encode())
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize(
    "target", [".attacker.example/v1/models", "@127.0.0.2/v1/models", "http://evil.example/v1/models"]
)
def test_a_target_off_the_providers_origin_is_refused_and_the_key_goes_nowhere(
    upstream: tuple[str, list[tuple[str, str]]], target: str
) -> None:
    base, seen = upstream
    budget = RunBudget(max_turns=5, max_wall_ms=60000)
    with RunProxy("openai-chat", base, KEY, budget, token=TOKEN) as proxy:
        refused = _raw_get(proxy.url, target)
        allowed = _raw_get(proxy.url, "/v1/models")
    assert refused.startswith(b"HTTP/1.0 400") or refused.startswith(b"HTTP/1.1 400")
    assert b"not a path on the provider" in refused and KEY.encode() not in refused
    assert seen == [("/models", f"Bearer {KEY}")]  # only the real path reached the provider
    assert b" 200 " in allowed.split(b"\r\n", 1)[0]
