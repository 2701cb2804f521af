"""Concurrent runs (--jobs): the targets of issue 8, measured end to end through the installed CLI.

1. Live: a local OpenAI-compatible server that answers every request after 1 s; 32 runs of 3 turns
   (read_file, list_dir, a final answer). Target: ``--jobs 8`` at least 6x faster than ``--jobs 1``.
2. Scripted: bench/suites/scripted-50 (10 tasks x k=5; read_file, write_file, a final answer, a
   ``python3 check.py`` verifier). Its floor is a shell loop that copies the fixture to a fresh temporary
   directory and runs ``python3 check.py`` there, 50 times. Targets: ``--jobs 1`` at most 1.5x the floor;
   ``--jobs 2`` faster than the floor.

Run by hand (``make bench``): timings on a shared machine are too noisy for a test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
ALISIO = Path(sys.executable).with_name("alisio")
SUITES = HERE / "suites"
DELAY_S = 1.0


def _sse(*chunks: dict[str, object]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def _reply(turn: int) -> bytes:
    usage = {"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}
    if turn < 2:
        name, args = ("read_file", {"path": "notes.txt"}) if turn == 0 else ("list_dir", {"path": "."})
        call = {
            "index": 0,
            "id": f"c{turn}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        delta = {"role": "assistant", "tool_calls": [call]}
        finish = "tool_calls"
    else:
        delta, finish = {"role": "assistant", "content": "Done."}, "stop"
    return _sse({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}, usage)  # fmt: skip


class _Slow(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        turn = sum(message.get("role") == "assistant" for message in body["messages"])
        time.sleep(DELAY_S)
        data = _reply(turn)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def _timed(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([str(ALISIO), *args], capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"alisio {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


def _env(home: Path) -> dict[str, str]:
    """No API key; this venv's ``bin`` first on PATH (as in an activated venv), so that the floor's
    ``python3`` and the verifiers' are the same interpreter (a pyenv shim costs ~140 ms a call)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["PATH"] = f"{ALISIO.parent}{os.pathsep}{env.get('PATH', '')}"
    (home / "config").mkdir(exist_ok=True)
    env.update(ALISIO_CONFIG_HOME=str(home / "config"), ALISIO_DATA_HOME=str(home / "data"))
    return env


def live(home: Path) -> bool:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    base = ["eval", "run", "scripted-50", "--suite-dir", str(SUITES), "--yes", "-q", "--tasks",
            "summarize-01,summarize-02,summarize-03,summarize-04", "-k", "8", "--allow-write", "--base-url", url,
            "--model", "m"]  # fmt: skip
    times = {}
    for jobs in ("1", "8"):
        times[jobs] = _timed([*base, "-j", jobs, "--out", str(home / f"live-{jobs}")], _env(home))
    server.shutdown()
    speedup = times["1"] / times["8"]
    print(
        f"live, 32 runs x 3 turns, 1 s per answer: --jobs 1 {times['1']:.1f} s, --jobs 8 {times['8']:.1f} s: {speedup:.1f}x"
    )
    print(f"target: --jobs 8 at least 6x faster -> {'ok' if speedup >= 6 else 'MISSED'}")
    return speedup >= 6


def scripted(home: Path) -> bool:
    suite = SUITES / "scripted-50"
    floor_script = (
        'for i in $(seq 50); do d=$(mktemp -d); cp -r "$1"/. "$d"; (cd "$d" && python3 check.py >/dev/null); '
        'rm -rf "$d"; done'
    )
    start = time.perf_counter()
    floor_argv = ["bash", "-c", floor_script, "floor", str(suite / "fixtures" / "notes")]
    subprocess.run(floor_argv, check=True, env=_env(home))
    floor = time.perf_counter() - start
    base = ["eval", "run", "scripted-50", "--suite-dir", str(SUITES), "--yes", "-q", "-k", "5", "--allow-write",
            "--script", str(suite / "scripts" / "summarize.json")]  # fmt: skip
    one = _timed([*base, "-j", "1", "--out", str(home / "s1")], _env(home))
    two = _timed([*base, "-j", "2", "--out", str(home / "s2")], _env(home))
    print(
        f"scripted, 50 runs: floor {floor:.2f} s, --jobs 1 {one:.2f} s ({one / floor:.2f}x), --jobs 2 {two:.2f} s ({two / floor:.2f}x)"
    )
    ok = one <= 1.5 * floor and two < floor
    print(f"targets: --jobs 1 at most 1.5x the floor, --jobs 2 below it -> {'ok' if ok else 'MISSED'}")
    return ok


def main() -> int:
    with tempfile.TemporaryDirectory() as temp:
        home = Path(temp)
        results = [scripted(home), live(home)]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
