"""--executor ray against --jobs with threads, on one machine: what Ray costs per run and per command.

Measured end to end through the installed CLI, on bench/suites/scripted-50 (read_file, write_file, a final
answer, a ``python3 check.py`` verifier; scripted, so the runs themselves are short and Ray's costs show):

1. joined to a running local Ray head (``ray start --head`` on 127.0.0.1, started here with 8 CPUs): 10 and
   50 runs at ``--jobs 2``, against the same with threads. The per-run overhead is the difference of the
   slopes, ((ray 50 - ray 10) - (thread 50 - thread 10)) / 40; the per-command overhead is what is left
   (joining the cluster, starting the command's workers, sending the suite).
2. a local instance started by the command (no address): the same 50 runs, to show the start-up cost.
3. live, the 32 runs x 3 turns of bench_jobs.py against a server that answers after 1 s, ``--jobs 8``: threads
   against Ray (joined), where a run waits on its provider and Ray's costs should vanish.

Run by hand (``make bench`` or ``python bench/bench_ray.py``): needs ``pip install 'alisio[ray]'``; timings on
a shared machine are noisy.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_jobs import ALISIO, SUITES, _env, _Slow, _timed  # the bench directory is no package

TASKS_10 = ",".join(f"summarize-{i:02d}" for i in range(1, 11))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ray_env(home: Path) -> dict[str, str]:
    env = _env(home)
    env.pop("RAY_ADDRESS", None)
    # one node on 127.0.0.1, its own token, no usage statistics
    env.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="token",
               RAY_AUTH_TOKEN=os.urandom(16).hex())  # fmt: skip
    return env


@contextlib.contextmanager
def ray_head(env: dict[str, str]) -> Iterator[str]:
    """A Ray head on 127.0.0.1 (8 CPUs) for the block; its address."""
    root = Path(tempfile.mkdtemp(prefix="alisio-rb-", dir="/tmp"))  # short: Ray's socket paths are limited
    port = _free_port()
    ports = [f"--{name}-port={_free_port()}" for name in ("dashboard-agent-listen", "dashboard-agent-grpc",
                                                           "metrics-export", "runtime-env-agent")]  # fmt: skip
    command = [str(ALISIO.with_name("ray")), "start", "--head", "--block", f"--port={port}", "--num-cpus=8",
               "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={root}", *ports]  # fmt: skip
    log = root / "head.log"
    with log.open("wb") as out:
        head = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        started = time.perf_counter()
        while b"Ray runtime started" not in log.read_bytes():
            if head.poll() is not None or time.perf_counter() - started > 120:
                raise SystemExit(f"ray start --head failed:\n{log.read_text()[-2000:]}")
            time.sleep(0.2)
        print(f"(a local Ray head started in {time.perf_counter() - started:.1f} s)")
        yield f"127.0.0.1:{port}"
    finally:
        head.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(timeout=60)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)
        head.wait()
        subprocess.run(["rm", "-rf", str(root)], check=False)


def _scripted(home: Path, env: dict[str, str], name: str, tasks: str, k: int, *extra: str) -> float:
    suite = SUITES / "scripted-50"
    args = ["eval", "run", "scripted-50", "--suite-dir", str(SUITES), "--yes", "-q", "--tasks", tasks, "-k", str(k),
            "--allow-write", "--script", str(suite / "scripts" / "summarize.json"), "-j", "2",
            "--out", str(home / name), *extra]  # fmt: skip
    return _timed(args, env)


def scripted(home: Path, env: dict[str, str], address: str) -> None:
    ray = ["--executor", "ray", "--ray-address", address]
    _scripted(
        home, env, "warm", TASKS_10, 1, *ray
    )  # the first command on a fresh head also imports Ray's own
    times = {}
    for label, extra in (("thread", ()), ("ray", ray)):
        for k in (1, 5):
            times[label, k] = _scripted(home, env, f"{label}-{k}", TASKS_10, k, *extra)
    per_run = ((times["ray", 5] - times["ray", 1]) - (times["thread", 5] - times["thread", 1])) / 40
    fixed = (times["ray", 1] - times["thread", 1]) - 10 * per_run
    print(
        f"scripted, --jobs 2, threads: 10 runs {times['thread', 1]:.1f} s, 50 runs {times['thread', 5]:.1f} s"
    )
    print(
        f"scripted, --jobs 2, Ray (joined): 10 runs {times['ray', 1]:.1f} s, 50 runs {times['ray', 5]:.1f} s"
    )
    print(f"Ray over threads: {per_run * 1000:.0f} ms per run, {fixed:.1f} s per command (joining, workers)")
    local = _scripted(home, env, "local", TASKS_10, 5, "--executor", "ray")
    print(f"scripted, 50 runs, --jobs 2, Ray on a local instance the command starts: {local:.1f} s")


def live(home: Path, env: dict[str, str], address: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    base = ["eval", "run", "scripted-50", "--suite-dir", str(SUITES), "--yes", "-q", "--tasks",
            "summarize-01,summarize-02,summarize-03,summarize-04", "-k", "8", "--allow-write", "--base-url", url,
            "--model", "m", "-j", "8"]  # fmt: skip
    thread = _timed([*base, "--out", str(home / "live-thread")], env)
    ray = _timed([*base, "--out", str(home / "live-ray"), "--executor", "ray", "--ray-address", address], env)
    server.shutdown()
    print(
        f"live, 32 runs x 3 turns, 1 s per answer, --jobs 8: threads {thread:.1f} s, Ray (joined) {ray:.1f} s"
    )


def main() -> int:
    if importlib.util.find_spec("ray") is None:
        print("skipped: Ray is not installed (pip install 'alisio[ray]')")
        return 0
    with tempfile.TemporaryDirectory(prefix="alisio-bench-ray-") as temp:
        home = Path(temp)
        env = _ray_env(home)
        with ray_head(env) as address:
            scripted(home, env, address)
            live(home, env, address)
    return 0


if __name__ == "__main__":
    sys.exit(main())
