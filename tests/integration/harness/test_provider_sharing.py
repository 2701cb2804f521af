"""One endpoint shared by concurrent runs: provider.maxConcurrency caps the requests in flight, and a 429
with Retry-After pauses every worker of that endpoint, not only the one that got it (a real local server)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from tests.integration.helpers import alisio_process as alisio  # requests in flight across real processes
from tests.integration.helpers import make_suite, read_report, task
from tests.integration.servers import QuietServer, serving


def _sse(*chunks: dict[str, object]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def _reply(turn: int) -> bytes:
    if turn == 0:
        call = {
            "index": 0,
            "id": "c0",
            "type": "function",
            "function": {"name": "list_dir", "arguments": '{"path": "."}'},
        }
        delta: dict[str, object] = {"role": "assistant", "tool_calls": [call]}
        finish = "tool_calls"
    else:
        delta, finish = {"role": "assistant", "content": "Done."}, "stop"
    usage = {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}
    return _sse({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}, usage)  # fmt: skip


class Endpoint:
    """Answers after ``delay_s``; the first request gets ``first_status`` with Retry-After when set."""

    def __init__(
        self, delay_s: float, first_status: int | None = None, retry_after: str = "1", pair: bool = False
    ) -> None:
        self.delay_s, self.first_status, self.retry_after = delay_s, first_status, retry_after
        self.pair = pair
        """Hold the first request until a second one is in flight (at most 30 s): two overlap however slowly
        the runs start on a loaded machine, instead of by the luck of ``delay_s``."""
        self.lock = threading.Lock()
        self.overlapped = threading.Condition(self.lock)
        self.in_flight = self.max_in_flight = self.count = 0
        self.starts: list[float] = []
        self.limited_at: float | None = None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with endpoint.lock:
                    endpoint.count += 1
                    first = endpoint.count == 1
                    endpoint.starts.append(time.monotonic())
                    endpoint.in_flight += 1
                    endpoint.max_in_flight = max(endpoint.max_in_flight, endpoint.in_flight)
                    endpoint.overlapped.notify_all()
                    if endpoint.pair:
                        endpoint.overlapped.wait_for(lambda: endpoint.max_in_flight >= 2, timeout=30)
                counted = True
                try:
                    if first and endpoint.first_status is not None:
                        endpoint.limited_at = time.monotonic()
                        data = b'{"error": {"message": "slow down"}}'
                        self.send_response(endpoint.first_status)
                        self.send_header("Retry-After", endpoint.retry_after)
                        self.send_header("Content-Type", "application/json")
                    else:
                        time.sleep(endpoint.delay_s)
                        turn = sum(m.get("role") == "assistant" for m in body["messages"])
                        data = _reply(turn)
                        self.send_response(200)
                        self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    # no longer in flight once the client can have all of it: counted after the write, a
                    # client that read the reply and sent its next request first would be counted twice
                    with endpoint.lock:
                        endpoint.in_flight -= 1
                        counted = False
                    self.wfile.write(data)
                finally:
                    if counted:
                        with endpoint.lock:
                            endpoint.in_flight -= 1

            def log_message(self, *args: object) -> None:
                pass

        return Handler


def _serve(endpoint: Endpoint) -> Iterator[str]:
    with serving(QuietServer(endpoint.handler())) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_max_concurrency_caps_the_requests_in_flight(home: Path) -> None:
    """provider.maxConcurrency = 2 with --jobs 6: never more than 2 requests in flight; every run passes."""
    endpoint = Endpoint(delay_s=0.3, pair=True)
    suite = make_suite(
        home,
        *(
            task(f"t{i}", verifiers=[{"kind": "file-absent", "id": "absent", "path": "nothing-here"}])
            for i in range(6)
        ),
    )
    for url in _serve(endpoint):
        (home / "config" / "config.toml").write_text(
            f'[provider]\nbaseUrl = "{url}"\nmodel = "m"\nmaxConcurrency = 2\n'
        )
        result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1", "-j", "6",
                        "--allow-write", "--out", str(home / "out"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert endpoint.count == 12 and endpoint.max_in_flight == 2
    assert read_report(home / "out").summary.passes == 6


def test_a_retry_after_pauses_every_worker_of_the_endpoint(home: Path) -> None:
    """The first request gets 429 with Retry-After: 1: no worker sends a new request in the second that
    follows (the runs in flight finish theirs), then all go on and pass."""
    endpoint = Endpoint(delay_s=0.05, first_status=429, retry_after="1")
    suite = make_suite(
        home,
        *(
            task(f"t{i}", verifiers=[{"kind": "file-absent", "id": "absent", "path": "nothing-here"}])
            for i in range(3)
        ),
    )
    for url in _serve(endpoint):
        result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "2", "-j", "3",
                        "--allow-write", "--base-url", url, "--model", "m", "--out", str(home / "out"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert endpoint.limited_at is not None
    window = [t - endpoint.limited_at for t in endpoint.starts if 0.1 < t - endpoint.limited_at < 0.9]
    assert window == [], f"requests started {window} s after the 429"
    assert read_report(home / "out").summary.passes == 6
