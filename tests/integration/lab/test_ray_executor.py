"""--executor ray through the installed CLI, on real Ray: a local instance the command starts, and a cluster.

One Ray head per module (``ray start --head --block``, on 127.0.0.1, with its own token and temporary
directory), joined with ``--ray-address``; every Ray test runs in one xdist group so that the head is started
once. What they cost on the 2-core machine: the head starts in 10-20 s, a command that joins it takes 3-6 s,
one that starts its own local instance 12-25 s.

What is checked: scripted outcomes identical to ``--jobs 1`` (records equal but for timings, in plan order);
a recording's cassettes identical to the thread executor's, and their replay; Ctrl-C stops the runs in flight
(their commands killed, their workspaces removed) and exits 130; a worker that dies mid-run is an ``error``
run (``worker_lost``), not a hang; ``provider.maxConcurrency`` holds across the workers, the key reaches the
provider and is written nowhere; a sequential run (``--until-width``) starts no run of a stopped task;
``--faults`` (eval run, a variants file's arms, a recording and its replay, scripted and live) gives the
thread executor's records, hits and outcomes.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import msgspec
import pytest

from alisio.core.harness.faults import fault_at, parse_faults
from alisio.core.lab.runs.records import RunRecord
from alisio.shell.lab.portable import suite_archive, suite_entries, unpack_suite
from alisio.shell.lab.suites import load_suite
from tests.integration.helpers import (
    ALISIO,
    BUGGY,
    CHECK,
    FIX,
    NOOP,
    make_suite,
    read_report,
    read_runs,
    task,
    write_script,
)
from tests.integration.servers import QuietServer

RAY_INSTALL = "pip install 'alisio[ray]'"
needs_ray = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason=f"Ray is not installed: {RAY_INSTALL}"
)
pytestmark = pytest.mark.xdist_group("ray")

SHELL_POLICY = {"mode": "auto", "allow": ["write", "process"]}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class RayHead:
    address: str
    env: dict[str, str]
    """What a process needs to join it: the token, loopback only, no usage statistics."""
    tmp: Path
    """The workers' temporary directory (their workspaces and unpacked suites)."""


def _ray_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "RAY_ADDRESS")}
    env.update(
        RAY_AUTH_MODE="token",
        RAY_AUTH_TOKEN=secrets.token_hex(16),
        RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",  # one node, on 127.0.0.1 only
        RAY_USAGE_STATS_ENABLED="0",
        TMPDIR=str(tmp),
    )
    return env


@pytest.fixture(scope="module")
def ray_head() -> Iterator[RayHead]:
    """A Ray head on 127.0.0.1 with 4 CPUs, stopped (its process group) after the module."""
    if importlib.util.find_spec("ray") is None:
        pytest.skip(f"Ray is not installed: {RAY_INSTALL}")
    root = Path(tempfile.mkdtemp(prefix="alisio-rt-", dir="/tmp"))  # short: Ray's socket paths are limited
    (root / "tmp").mkdir()
    env = _ray_env(root / "tmp")
    port = _free_port()
    ports = {
        name: _free_port()
        for name in (
            "dashboard-agent-listen",
            "dashboard-agent-grpc",
            "metrics-export",
            "runtime-env-agent",
        )
    }
    command = [str(Path(sys.executable).with_name("ray")), "start", "--head", "--block", f"--port={port}",
               "--num-cpus=4", "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={root / 'ray'}",
               *(f"--{name}-port={value}" for name, value in ports.items())]  # fmt: skip
    log = (root / "head.log").open("wb")
    head = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while b"Ray runtime started" not in (root / "head.log").read_bytes():
            assert head.poll() is None and time.monotonic() < deadline, (root / "head.log").read_text()
            time.sleep(0.2)
        yield RayHead(address=f"127.0.0.1:{port}", env=env, tmp=root / "tmp")
    finally:
        _stop_head(head)
        log.close()
        shutil.rmtree(root, ignore_errors=True)


def _stop_head(head: subprocess.Popen[bytes]) -> None:
    """SIGTERM to ``ray start`` (it stops what it started), then SIGKILL to its process group if need be."""
    with contextlib.suppress(ProcessLookupError):
        head.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        head.wait(timeout=60)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(head.pid, signal.SIGKILL)
    head.wait(timeout=10)


def alisio(
    home: Path, env: dict[str, str], *args: str, timeout: float = 110
) -> subprocess.CompletedProcess[str]:
    """The installed command with an empty configuration under ``home`` and ``env``."""
    env = {**env, "ALISIO_CONFIG_HOME": str(home / "config"), "ALISIO_DATA_HOME": str(home / "data")}
    return subprocess.run([str(ALISIO), *args], capture_output=True, text=True, timeout=timeout, check=False,
                          env=env, stdin=subprocess.DEVNULL)  # fmt: skip


def _timeless(record: RunRecord) -> dict[str, Any]:
    data = msgspec.to_builtins(record)
    data["measured"].pop("wallMs", None)
    data["measured"].pop("startedAt", None)
    return data


def _in_order_of(reference: list[RunRecord], records: list[RunRecord]) -> list[dict[str, Any]]:
    """``records`` sorted in the order of ``reference`` (a ``--jobs 1`` run: plan order), without timings."""
    order = {(r.variant, r.task_id, r.repetition): i for i, r in enumerate(reference)}
    return [_timeless(r) for r in sorted(records, key=lambda r: order[(r.variant, r.task_id, r.repetition)])]


def _timeless_transcripts(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Every transcript under ``out/runs`` (by its path), each event without its timings."""
    clock = {"elapsedMs", "durationMs", "wallMs"}
    return {
        str(path.relative_to(out)): [
            {k: v for k, v in json.loads(line).items() if k not in clock}
            for line in path.read_text().splitlines()
        ]
        for path in sorted((out / "runs").rglob("*.jsonl"))
    }


def _suite_with_files_outside_fixtures(home: Path, *, sandboxed: bool) -> tuple[Path, Path]:
    """Two tasks (a fix, a no-op) whose suite.json names files outside fixtures/: a solution directory (reached
    through a symlinked directory), a script solution and, ``sandboxed``, a verifier script directory bound
    at /tests; their scripts' directory."""
    check = {"kind": "command", "id": "check", "command": ["python3", "check.py"], "timeoutMs": 30000}
    mounted = {"sandbox": {"verifierMounts": [{"target": "/tests", "source": "verify"}]}}
    if sandboxed:
        check = {**check, "id": "tests", "command": ["python3", "/tests/check.py"]}
    verifiers = [check, {"kind": "tree-diff-within", "id": "scope", "allowed": ["src/calc.py"]}]
    extra = mounted if sandboxed else {}
    suite = make_suite(home, task("fix", solution="answers/fix", verifiers=verifiers, **extra),
                       task("noop", solution="solutions/noop.sh", verifiers=verifiers, **extra))  # fmt: skip
    (suite / "solutions" / "fix" / "src").mkdir(parents=True)
    (suite / "solutions" / "fix" / "src" / "calc.py").write_text(BUGGY.replace("a - b", "a + b"))
    (suite / "solutions" / "noop.sh").write_text("sed -i 's/a - b/a + b/' src/calc.py\n")
    (suite / "answers").symlink_to("solutions")
    (suite / "verify").mkdir()
    (suite / "verify" / "check.py").write_text(CHECK.replace("'src'", "'/workspace/src'"))
    scripts = home / "scripts"
    scripts.mkdir()
    write_script(scripts / "fix.json", FIX)
    write_script(scripts / "noop.json", NOOP)
    return suite, scripts


def _calc_scripts(home: Path) -> tuple[Path, Path]:
    suite = make_suite(home, task("a"), task("b"), task("c"))
    scripts = home / "scripts"
    scripts.mkdir()
    for name, script in (("a", FIX), ("b", NOOP), ("c", FIX)):
        write_script(scripts / f"{name}.json", script)
    return suite, scripts


# --- without Ray, or before anything runs -------------------------------------------------------------------


def test_executor_ray_without_ray_says_how_to_install_it(home: Path, tmp_path: Path) -> None:
    """Ray missing: one line naming the extra to install, exit 1, no traceback, nothing written."""
    code = (
        "import sys; sys.modules['ray'] = None\n"  # what an environment without Ray looks like to an import
        "from alisio.shell.cli.main import run_cli\n"
        "sys.exit(run_cli(sys.argv[1:]))\n"
    )
    out = tmp_path / "out"
    env = {**os.environ, "ALISIO_CONFIG_HOME": str(home / "config"), "ALISIO_DATA_HOME": str(home / "data")}
    result = subprocess.run([sys.executable, "-c", code, "eval", "run", "tool-sequences", "--mode", "replay",
                             "--executor", "ray", "--out", str(out)],
                            capture_output=True, text=True, env=env, timeout=60, check=False)  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"alisio eval run: --executor ray needs Ray, an optional extra: {RAY_INSTALL}"
    ]
    assert not out.exists()


def test_ray_address_needs_the_ray_executor(home: Path) -> None:
    """--ray-address with the thread executor: a usage error naming both flags."""
    result = alisio(
        home,
        dict(os.environ),
        "eval",
        "run",
        "tool-sequences",
        "--mode",
        "replay",
        "--ray-address",
        "127.0.0.1:1",
    )
    assert result.returncode == 1
    assert (
        "--ray-address is only used with --executor ray" in result.stderr and "Traceback" not in result.stderr
    )


@needs_ray
def test_an_unreachable_cluster_is_refused_before_anything_runs(home: Path, tmp_path: Path) -> None:
    """A Ray address where nothing listens (also from RAY_ADDRESS): one line, exit 1, no report, no wait."""
    out = tmp_path / "out"
    env = {**os.environ, "RAY_ADDRESS": f"127.0.0.1:{_free_port()}"}
    started = time.monotonic()
    result = alisio(home, env, "eval", "run", "tool-sequences", "--mode", "replay", "--allow-write",
                    "--allow-process", "--executor", "ray", "--out", str(out))  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "cannot connect" in result.stderr and env["RAY_ADDRESS"] in result.stderr
    assert "Traceback" not in result.stderr and not out.exists()
    assert time.monotonic() - started < 30


def test_the_suite_archive_holds_every_file_the_tasks_name(tmp_path: Path) -> None:
    """What a worker unpacks loads there and hashes as the driver's suite: the fixtures, a solution directory
    reached through a symlink (the link kept), a script solution and a verifier mount's directory; nothing
    else of the suite directory."""
    suite, _ = _suite_with_files_outside_fixtures(tmp_path, sandboxed=True)
    (suite / "notes.txt").write_text("not named by any task")
    driver = load_suite(suite).unwrap()
    assert suite_entries(driver.suite) == ("answers/fix", "fixtures/calc", "solutions/noop.sh", "verify")
    worker = tmp_path / "worker"
    worker.mkdir()
    unpack_suite(suite_archive(suite, driver.suite_json, suite_entries(driver.suite)), worker)
    assert load_suite(worker).unwrap().content_hash == driver.content_hash
    assert os.readlink(worker / "answers") == "solutions"
    assert (
        worker / "solutions" / "fix" / "src" / "calc.py"
    ).read_text() == "def add(a, b):\n    return a + b\n"
    assert (worker / "verify" / "check.py").read_text() == (suite / "verify" / "check.py").read_text()
    assert not (worker / "notes.txt").exists()


# --- on Ray ---------------------------------------------------------------------------------------------


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A temporary directory with a short path (Ray's socket paths under it must stay within 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="alisio-rt-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@needs_ray
def test_a_local_instance_gives_the_records_of_jobs_1(home: Path, short_tmp: Path) -> None:
    """No address: a local Ray instance for the command; 3 tasks x k=3 give -j 1's records, in plan order."""
    suite, scripts = _calc_scripts(home)
    env = _ray_env(short_tmp)
    outs = {}
    for name, extra in (("serial", ["-j", "1"]), ("ray", ["-j", "3", "--executor", "ray"])):
        outs[name] = home / name
        result = alisio(home, env, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "3",
                        "--seed", "7", "--allow-write", "--script", str(scripts), "--out", str(outs[name]), *extra)  # fmt: skip
        assert result.returncode == 0, result.stderr
    assert "starting a local Ray instance" in result.stderr
    serial, on_ray = read_runs(outs["serial"]), read_runs(outs["ray"])
    assert _in_order_of(serial, on_ray) == [_timeless(r) for r in serial]
    transcripts = _timeless_transcripts(outs["serial"])  # written by the driver, from what the workers sent
    assert len(transcripts) == 9 and _timeless_transcripts(outs["ray"]) == transcripts
    assert [(t.task_id, t.passes, t.judged) for t in read_report(outs["ray"]).tasks] == [
        ("a", 3, 3), ("b", 0, 3), ("c", 3, 3)
    ]  # fmt: skip


@needs_ray
def test_recording_and_replay_on_a_cluster(home: Path, ray_head: RayHead) -> None:
    """eval record on the cluster writes the cassettes the thread executor writes; their replay on the cluster
    gives the thread executor's records, every run passing."""
    suite, scripts = _calc_scripts(home)
    cassettes = {}
    for name, extra in (
        ("thread", ["-j", "1"]),
        ("ray", ["-j", "3", "--executor", "ray", "--ray-address", ray_head.address]),
    ):
        cassettes[name] = home / f"cassettes-{name}"
        result = alisio(home, ray_head.env, "eval", "record", "calc-suite", "--suite-dir", str(suite), "--yes",
                        "--allow-write", "--script", str(scripts), "--cassette-dir", str(cassettes[name]), *extra)  # fmt: skip
        assert result.returncode == 0, result.stderr
    names = sorted(path.name for path in cassettes["thread"].iterdir())
    assert names == ["a.jsonl", "b.jsonl", "c.jsonl"]
    assert [(cassettes["ray"] / n).read_bytes() for n in names] == [
        (cassettes["thread"] / n).read_bytes() for n in names
    ]
    outs = {}
    for name, extra in (("thread", ["-j", "1"]), ("ray", ["-j", "2", "--executor", "ray"])):
        outs[name] = home / f"replay-{name}"
        env = {**ray_head.env, "RAY_ADDRESS": ray_head.address}  # the address from the environment
        result = alisio(home, env, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--mode", "replay",
                        "-k", "2", "--allow-write", "--cassette-dir", str(cassettes["ray"]), "--out", str(outs[name]), *extra)  # fmt: skip
        assert result.returncode == 0, result.stderr
    thread, on_ray = read_runs(outs["thread"]), read_runs(outs["ray"])
    assert _in_order_of(thread, on_ray) == [_timeless(r) for r in thread]
    assert [(r.task_id, r.status) for r in thread].count(("a", "pass")) == 2


@needs_ray
@pytest.mark.parametrize(
    ("sig", "code", "named"), [(signal.SIGINT, 130, "Ctrl-C")]
)  # SIGTERM takes Ctrl-C's path (tests/integration/lab/test_lab_hardening.py tests it with threads)
def test_ctrl_c_cancels_the_ray_tasks_in_flight(
    home: Path, ray_head: RayHead, sig: signal.Signals, code: int, named: str
) -> None:
    """-j 3 on the cluster, three runs inside a long command: SIGINT (or SIGTERM) kills the three commands,
    removes their workspaces, writes the report of the finished runs (none) and exits 130 (143)."""
    suite = make_suite(home, task("slow", policy=SHELL_POLICY))
    sleeper = {"turns": [{"toolCalls": [{"name": "bash", "arguments": {"command": f"echo $$ >> ../sleepers-{sig.name}; exec sleep 60"}}]}, {"text": "done"}]}  # fmt: skip
    script = write_script(home / "sleep.json", sleeper)
    pids_file = ray_head.tmp / f"sleepers-{sig.name}"
    out = home / "out"
    env = {**ray_head.env, "ALISIO_CONFIG_HOME": str(home / "config"), "ALISIO_DATA_HOME": str(home / "data")}
    process = subprocess.Popen(
        [str(ALISIO), "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "3", "-j", "3",
         "--allow-write", "--allow-process", "--script", str(script), "--out", str(out),
         "--executor", "ray", "--ray-address", ray_head.address],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (pids_file.exists() and len(pids_file.read_text().split()) == 3):
            assert time.monotonic() < deadline and process.poll() is None, process.communicate()
            time.sleep(0.1)
        started = time.monotonic()
        process.send_signal(sig)
        _, stderr = process.communicate(timeout=45)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == code, stderr
    assert time.monotonic() - started < 20  # not the 60 s of the commands, nor the 30 s before force
    assert f"interrupted ({named}): the report of the 0 finished runs is written" in stderr
    for pid in map(int, pids_file.read_text().split()):
        alive = Path(f"/proc/{pid}").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
        assert not alive, f"the command of a run in flight ({pid}) is still running"
    assert [p.name for p in ray_head.tmp.glob("alisio-*-slow-*")] == []
    report = read_report(out)
    assert (report.interrupted, report.planned_runs, report.summary.runs) == (True, 3, 0)


@needs_ray
def test_a_worker_that_dies_mid_run_is_an_error_run(home: Path, ray_head: RayHead) -> None:
    """A run whose command SIGKILLs its own Ray worker ends error (worker_lost, naming it) while the other runs
    pass: exit 1, no hang."""
    suite = make_suite(home, task("dies", policy=SHELL_POLICY), task("fix", policy=SHELL_POLICY))
    scripts = home / "scripts"
    scripts.mkdir()
    killer = {"turns": [{"toolCalls": [{"name": "bash", "arguments": {"command": "kill -9 $PPID; sleep 30"}}]}, {"text": "done"}]}  # fmt: skip
    write_script(scripts / "dies.json", killer)
    write_script(scripts / "fix.json", FIX)
    out = home / "out"
    result = alisio(home, ray_head.env, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "2",
                    "-j", "4", "--allow-write", "--allow-process", "--script", str(scripts), "--out", str(out),
                    "--executor", "ray", "--ray-address", ray_head.address, "--json")  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "2 runs ended error" in result.stderr
    for line in result.stdout.splitlines():  # stdout stays data: Ray's own messages go to stderr
        json.loads(line)
    records = {(r.task_id, r.repetition): r for r in read_runs(out)}
    assert len(records) == 4
    for rep in (0, 1):
        died = records[("dies", rep)]
        assert (died.status, died.reason) == ("error", "worker_lost")
        assert died.errors[0].startswith("the Ray worker running this run was lost: ")
        assert records[("fix", rep)].status == "pass"


class _SlowEndpoint(QuietServer):
    """An OpenAI-compatible endpoint on 127.0.0.1 that answers after ``delay_s`` and counts requests in flight."""

    def __init__(self, delay_s: float) -> None:
        super().__init__(_SlowHandler)
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.in_flight = self.most = 0
        self.authorizations: list[str] = []


class _SlowHandler(BaseHTTPRequestHandler):
    server: _SlowEndpoint

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        server = self.server
        with server.lock:
            server.in_flight += 1
            server.most = max(server.most, server.in_flight)
            server.authorizations.append(self.headers.get("Authorization", ""))
        time.sleep(server.delay_s)
        with server.lock:
            server.in_flight -= 1
        chunks = [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Nothing to do."}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 4, "total_tokens": 44}},
        ]  # fmt: skip
        body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())


@contextlib.contextmanager
def _configured_endpoint(home: Path, delay_s: float, more: str = "") -> Iterator[_SlowEndpoint]:
    """A ``_SlowEndpoint`` serving for the block, config.toml's provider (model ``m-slow``, then ``more``)."""
    endpoint = _SlowEndpoint(delay_s=delay_s)
    endpoint.start(0.05)
    try:
        host, port = endpoint.server_address[:2]
        (home / "config" / "config.toml").write_text(
            f'[provider]\nbaseUrl = "http://{host!s}:{port}/v1"\nmodel = "m-slow"\n{more}'
        )
        yield endpoint
    finally:
        endpoint.close()


@needs_ray
def test_max_concurrency_holds_across_the_workers_and_the_key_travels_unwritten(
    home: Path, ray_head: RayHead
) -> None:
    """provider.maxConcurrency = 1 with -j 4 on the cluster: one request in flight at a time over every worker;
    each request carries the key, which is in no output and no report file."""
    with _configured_endpoint(home, 0.4, "maxConcurrency = 1\n") as endpoint:
        key = "sk-ray-" + secrets.token_hex(12)
        suite = make_suite(home, task("look"))
        out = home / "out"
        env = {**ray_head.env, "OPENAI_API_KEY": key}
        result = alisio(home, env, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "4",
                        "-j", "4", "--allow-write", "--out", str(out), "--executor", "ray",
                        "--ray-address", ray_head.address)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert [r.status for r in read_runs(out)] == ["fail"] * 4  # the model fixed nothing: judged, not error
    assert endpoint.authorizations == [f"Bearer {key}"] * 4
    assert endpoint.most == 1
    written = b"".join(path.read_bytes() for path in out.rglob("*") if path.is_file())
    assert key not in result.stdout + result.stderr and key.encode() not in written


class _LimitedOnce(_SlowHandler):
    """Answers the first request 429 with ``Retry-After: 2``, then as ``_SlowHandler`` (40 + 4 tokens each)."""

    def do_POST(self) -> None:
        with self.server.lock:
            first = not self.server.authorizations
            self.server.authorizations.append("seen")
        if not first:
            return super().do_POST()
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'{"error": {"message": "slow down"}}'
        self.send_response(429)
        self.send_header("Retry-After", "2")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return None


def _stderr_on_a_terminal(env: dict[str, str], args: list[str]) -> tuple[int, str]:
    """The installed command with stderr on a pseudo-terminal (80 columns): (exit code, what it showed)."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
    process = subprocess.Popen([str(ALISIO), *args], stdout=subprocess.DEVNULL, stderr=follower,
                               stdin=subprocess.DEVNULL, env=env)  # fmt: skip
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the command closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    return process.wait(timeout=120), shown.decode(errors="replace")


@needs_ray
def test_the_live_status_shows_the_workers_waits_and_tokens(home: Path, ray_head: RayHead) -> None:
    """-j 1 -k 3 on the cluster against an endpoint that answers its first request 429 (Retry-After 2 s):
    the live status on the terminal shows the wait and the retry while it lasts, then the tokens the
    workers' responses reported (44 per run), as it does with threads: the workers forward those events
    while their runs go on, where they used to report only when a run finished."""
    endpoint = _SlowEndpoint(delay_s=0.6)
    endpoint.RequestHandlerClass = _LimitedOnce
    threading.Thread(target=endpoint.serve_forever, args=(0.05,), daemon=True).start()
    try:
        host, port = endpoint.server_address[:2]
        (home / "config" / "config.toml").write_text(
            f'[provider]\nbaseUrl = "http://{host!s}:{port}/v1"\nmodel = "m-slow"\n'
        )
        suite = make_suite(home, task("look"))
        env = {
            **ray_head.env,
            "ALISIO_CONFIG_HOME": str(home / "config"),
            "ALISIO_DATA_HOME": str(home / "data"),
        }
        code, shown = _stderr_on_a_terminal(env, [
            "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "3", "-j", "1",
            "--allow-write", "--out", str(home / "out"), "--executor", "ray", "--ray-address", ray_head.address,
        ])  # fmt: skip
    finally:
        endpoint.shutdown()
        endpoint.server_close()
    assert code == 0, shown
    assert "rate-limited, retrying in" in shown and "1 retry so far" in shown, shown
    assert re.search(r"· (44|88|132) tokens", shown), shown


@needs_ray
def test_a_worker_forwards_only_what_the_live_status_reads() -> None:
    """A retry notice travels with the credentials redacted, a response with usage without its text; a
    response without usage and any other event do not travel."""
    from alisio.core.harness.events import Effect, IncidentKind, IncidentRaised, ProviderResponded, ToolCalled
    from alisio.core.harness.protocol import Usage
    from alisio.shell.lab.ray_progress import forwarded

    known = (("DEPLOY_TOKEN", "tok-123456789"),)
    retry = IncidentRaised(seq=3, elapsed_ms=10, kind=IncidentKind.PROVIDER_RETRY,
                           message="HTTP 429 (tok-123456789); retrying in 2 s")  # fmt: skip
    sent = forwarded(retry, known)
    assert (
        isinstance(sent, IncidentRaised)
        and "tok-123456789" not in sent.message
        and "retrying in 2 s" in sent.message
    )
    response = ProviderResponded(seq=4, elapsed_ms=20, call=0, purpose="main", finish_reason="stop",
                                 usage=Usage(input_tokens=40, output_tokens=4), text_chars=9, tool_calls=0,
                                 duration_ms=5, text="the model's words")  # fmt: skip
    kept = forwarded(response, known)
    assert isinstance(kept, ProviderResponded) and kept.text == "" and kept.usage == response.usage
    assert forwarded(msgspec.structs.replace(response, usage=None), known) is None
    call = ToolCalled(seq=5, elapsed_ms=30, call_id="c1", name="bash", arguments="{}", effect=Effect.PROCESS)
    assert forwarded(call, known) is None


# --- the endpoint's slots, without a cluster --------------------------------------------------------------


@needs_ray
def test_endpoint_slots_free_the_slots_of_a_forgotten_run() -> None:
    """One slot: a second run waits until the first is forgotten (its worker died); a forgotten run's late
    waiter takes nothing; releasing a slot not held frees nothing."""
    import asyncio

    from alisio.shell.lab.ray_gate import EndpointSlots

    async def scenario() -> None:
        slots = EndpointSlots(1)
        assert await slots.acquire("0")
        second = asyncio.create_task(slots.acquire("1"))
        await asyncio.sleep(0.05)
        assert not second.done()
        await slots.release("2")  # holds nothing: frees nothing
        await asyncio.sleep(0.05)
        assert not second.done() and await slots.in_use() == 1
        await slots.forget("0")
        assert await asyncio.wait_for(second, 1) and await slots.in_use() == 1
        await slots.forget("3")
        late = asyncio.create_task(slots.acquire("3"))
        await slots.release("1")
        assert await asyncio.wait_for(late, 1) is False and await slots.in_use() == 0

    asyncio.run(scenario())


_CLUSTER_GATE = """
import sys, time
import ray
from alisio.shell.harness.providers.gate import GateTimeout
from alisio.shell.lab.ray_gate import ClusterGate, start_slots

ray.init(address=sys.argv[1], log_to_driver=False)
slots = start_slots(1)
first, second = ClusterGate(slots, "0"), ClusterGate(slots, "1")
with first.slot(None):
    started = time.monotonic()
    try:
        with second.slot(time.monotonic() + 0.5):
            print("second got a slot held by the first")
    except GateTimeout:
        print(f"timeout after {time.monotonic() - started:.1f}")
deadline = time.monotonic() + 5
while ray.get(slots.in_use.remote()) and time.monotonic() < deadline:
    time.sleep(0.05)
print("in use", ray.get(slots.in_use.remote()))
first.pause(1.0)
started = time.monotonic()
with first.slot(None):
    print(f"paused {time.monotonic() - started:.1f}")
deadline = time.monotonic() + 5  # a release is not waited for: it lands soon after the block
while ray.get(slots.in_use.remote()) and time.monotonic() < deadline:
    time.sleep(0.05)
print("in use", ray.get(slots.in_use.remote()))
"""


@needs_ray
def test_the_cluster_gate_caps_pauses_and_ends_at_the_deadline(ray_head: RayHead) -> None:
    """ClusterGate over the command's actor: a second caller waits for the only slot until its deadline
    (GateTimeout, its slot never taken later); a pause asked by one caller delays the next slot."""
    result = subprocess.run([sys.executable, "-c", _CLUSTER_GATE, ray_head.address], capture_output=True,
                            text=True, env=ray_head.env, timeout=100, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("timeout after ") and 0.4 <= float(lines[0].split()[-1]) < 3
    assert lines[1] == "in use 0"
    assert lines[2].startswith("paused ") and 0.8 <= float(lines[2].split()[-1]) < 4
    assert lines[3] == "in use 0"


# --- the adversarial review (issue 15, items 6 and 7) -----------------------------------------------------


@needs_ray
def test_sigterm_while_the_local_instance_starts_gives_143_and_the_report(
    home: Path, short_tmp: Path
) -> None:
    """SIGTERM while the local Ray instance starts (just after the command says so): exit
    143 with the report of the 0 finished runs, marked interrupted; never exit 15 or Ray's C++ abort (134)."""
    suite, scripts = _calc_scripts(home)
    out = home / "out"
    env = {
        **_ray_env(short_tmp),
        "ALISIO_CONFIG_HOME": str(home / "config"),
        "ALISIO_DATA_HOME": str(home / "data"),
    }
    process = subprocess.Popen(
        [str(ALISIO), "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1", "--allow-write",
         "--script", str(scripts), "--out", str(out), "-j", "2", "--executor", "ray"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stderr is not None
    lines: list[str] = []
    try:
        for line in process.stderr:
            lines.append(line)
            if "starting a local Ray instance" in line:
                break
        time.sleep(0.5)  # inside ray.init: it takes seconds
        process.send_signal(signal.SIGTERM)
        _, rest = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            process.kill()
    stderr = "".join(lines) + rest
    assert process.returncode == 143, stderr
    assert "Traceback" not in stderr and "terminate called" not in stderr
    assert "interrupted (SIGTERM): the report of the 0 finished runs is written" in stderr, stderr
    report = read_report(out)
    assert (report.interrupted, report.summary.runs) == (True, 0)


def test_a_ray_address_at_an_http_server_fails_fast_in_one_line(home: Path, tmp_path: Path) -> None:
    """--ray-address at something that listens but is not Ray (an HTTP server, as the dashboard's port is):
    one line saying so, exit 1, well within 20 s, nothing run; Ray is not even started."""
    from tests.integration.sse_server import SseServer

    out = tmp_path / "out"
    with SseServer() as server:
        address = server.url.removeprefix("http://")
        started = time.monotonic()
        result = alisio(home, dict(os.environ), "eval", "run", "tool-sequences", "--mode", "replay",
                        "--allow-write", "--allow-process", "--executor", "ray", "--ray-address", address,
                        "--out", str(out), timeout=60)  # fmt: skip
        took = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "something listens there but it is not a Ray head" in lines[0], result.stderr
    assert address in lines[0] and "it answered" in lines[0]
    assert took < 20 and not out.exists()


@needs_ray
def test_a_sequential_run_on_the_cluster_starts_no_run_of_a_stopped_task(
    home: Path, ray_head: RayHead
) -> None:
    """--until-width with 3 runs at once on the cluster: the workers pull each run from the sequential feed
    only when a slot frees up, so once the task has stopped no new run starts; the runs in flight then are
    waited for and counted (``afterStop``), never discarded."""
    suite = make_suite(home, task("a"))
    scripts = home / "scripts"
    scripts.mkdir()
    write_script(scripts / "a.json", FIX)
    out = home / "out"
    result = alisio(home, ray_head.env, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes",
                    "--allow-write", "--script", str(scripts), "--until-width", "0.5", "-j", "3",
                    "--executor", "ray", "--ray-address", ray_head.address, "--out", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = read_report(out)
    assert report.sequential is not None
    (stop,) = report.sequential.tasks
    assert stop.reason == "width" and stop.stopped_at == 8  # 8 passes: the sequence is narrower than 0.5
    assert stop.runs == len(read_runs(out)) == 8 + stop.after_stop
    # Past the stop: the runs started before the decision, the two other slots and any run that finished out
    # of order while an earlier repetition was still running (the decision waits for the complete prefix,
    # so a slot freed meanwhile starts one more run). Far fewer than the 50 of --max-k: the task stopped.
    assert 0 <= stop.after_stop < 8
    assert stop.runs_saved == 50 - stop.runs


@needs_ray
@pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap is not installed (apt-get install bubblewrap): verifier mounts need --sandbox bwrap",
)
def test_a_suite_with_files_outside_its_fixtures_runs_on_the_cluster(home: Path, ray_head: RayHead) -> None:
    """A suite whose tasks name a solution directory, a script solution or a verifier script directory (outside
    fixtures/, bound at /tests under --sandbox bwrap) gives on the cluster the thread executor's records: the
    fix passes, the no-op fails; no run ends ``worker_setup`` because the suite did not load on the worker."""
    suite, scripts = _suite_with_files_outside_fixtures(home, sandboxed=True)
    outs = {}
    for name, extra in (
        ("thread", ["-j", "1"]),
        ("ray", ["-j", "2", "--executor", "ray", "--ray-address", ray_head.address]),
    ):
        outs[name] = home / name
        result = alisio(home, ray_head.env, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1",
                        "--allow-write", "--allow-process", "--script", str(scripts), "--out", str(outs[name]),
                        "--sandbox", "bwrap", *extra)  # fmt: skip
        assert result.returncode == 0, result.stderr
    thread, on_ray = read_runs(outs["thread"]), read_runs(outs["ray"])
    verdicts = sorted((r.task_id, r.repetition, r.status) for r in thread)
    assert verdicts == [("fix", 0, "pass"), ("noop", 0, "fail")]
    assert _in_order_of(thread, on_ray) == [_timeless(r) for r in thread]


_FAULTS = "429:0.25,500:0.25,seed=3,retry-after=0"
"""On calc-suite's a/b/c x k=2: 12 faulted calls of both kinds, every run answered within the default 4
retries; without retries 4 of the 6 runs end at their first faulted call."""


def _untimed(records: list[RunRecord]) -> list[dict[str, Any]]:
    """``_timeless`` records, in task and repetition order, without what the clock decides under faults: each
    answer's first-event latency, and a retry's jittered backoff in its notice."""
    untimed = []
    for record in sorted(records, key=lambda r: (r.task_id, r.repetition)):
        data = _timeless(record)
        data["measured"].pop("firstEventMs", None)
        for incident in data["incidents"]:
            incident["message"] = re.sub(r" in [0-9.]+ s$", " in N s", incident["message"])
        untimed.append(data)
    return untimed


def _faults_of(records: list[RunRecord]) -> list[tuple[str, int, str, str | None, Any]]:
    """Each run's outcome and faults, in task and repetition order."""
    ordered = sorted(records, key=lambda r: (r.task_id, r.repetition))
    return [(r.task_id, r.repetition, r.status, r.reason, msgspec.to_builtins(r.faults)) for r in ordered]


@needs_ray
@pytest.mark.slow  # a minute of make pytest's 10 on 2 cores: make test-slow (CI) runs it
@pytest.mark.timeout(300)  # seven commands, five on the cluster: 70 s on 2 idle cores, 140 s loaded
def test_faults_on_the_cluster_give_the_thread_executors_records(home: Path, ray_head: RayHead) -> None:
    """--faults on eval run and a variants file's clean and faulted (no retries) arms: on the cluster every run
    record is the thread executor's (the same hits at the same calls, the same outcomes), each worker setting up
    the run's faults and retries.max as a thread does; a recording under faults on the cluster replays there
    with eval run's faults and outcomes, and a live endpoint's runs get their schedule's faults too."""
    suite, scripts = _calc_scripts(home)
    compare = home / "compare.json"
    arms = [{"id": "clean"}, {"id": "faulted", "faults": _FAULTS, "overrides": {"retries.max": 0}}]
    compare.write_text(json.dumps({"suite": "calc-suite", "variants": arms}))
    suite_args = ["calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write"]
    common = [*suite_args, "--script", str(scripts)]
    on_ray = ["-j", "3", "--executor", "ray", "--ray-address", ray_head.address]
    for name, extra in (("thread", ["-j", "1"]), ("ray", on_ray)):
        result = alisio(home, ray_head.env, "eval", "run", *common, "-k", "2", "--faults", _FAULTS,
                        "--out", str(home / f"run-{name}"), *extra)  # fmt: skip
        assert result.returncode == 0, result.stderr
        result = alisio(home, ray_head.env, "eval", "variants", *common, "-k", "2", "--variants", str(compare),
                        "--out", str(home / f"variants-{name}"), *extra)  # fmt: skip
        assert result.returncode == 1, result.stderr  # the faulted arm's runs that a fault ended are errors
        assert "Traceback" not in result.stderr
    for out in ("run-{}", "variants-{}/clean", "variants-{}/faulted"):
        thread = read_runs(home / out.format("thread"))
        assert _untimed(read_runs(home / out.format("ray"))) == _untimed(thread)
    faulted = read_runs(home / "run-thread")
    hits = [hit.kind for r in faulted if r.faults is not None for hit in r.faults.hits]
    assert sorted(set(hits)) == ["429", "500"] and len(hits) == 12
    # retried: the faults cost nothing (the fixes pass, the no-op fails, no run ended error)
    assert {(r.task_id, r.status) for r in faulted} == {("a", "pass"), ("b", "fail"), ("c", "pass")}
    assert all(r.faults is None for r in read_runs(home / "variants-ray/clean"))
    no_retries = _faults_of(read_runs(home / "variants-ray/faulted"))
    assert [status for _, _, status, _, _ in no_retries].count("error") == 4
    # eval record under the faults on the cluster, then its replay there: eval run's repetition 0, call by call
    cassettes = home / "cassettes"
    result = alisio(home, ray_head.env, "eval", "record", *common, "--faults", _FAULTS,
                    "--cassette-dir", str(cassettes), *on_ray)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert {json.loads(p.read_text().splitlines()[0])["faults"] for p in cassettes.iterdir()} == {_FAULTS}
    result = alisio(home, ray_head.env, "eval", "run", *suite_args, "--mode", "replay", "--cassette-dir", str(cassettes),
                    "--faults", _FAULTS, "-k", "1", "--out", str(home / "replay"), *on_ray)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert _faults_of(read_runs(home / "replay")) == [row for row in _faults_of(faulted) if row[1] == 0]
    # a live endpoint: each worker's own provider behind the command's endpoint slots (an injected 429's
    # retry-after pauses them, as the threads' gate); every run makes its schedule's calls, one answered
    with _configured_endpoint(home, 0.0) as endpoint:
        result = alisio(home, {**ray_head.env, "OPENAI_API_KEY": "sk-faults"}, "eval", "run", *suite_args, "-k", "2",
                        "--faults", _FAULTS, "--out", str(home / "live"), *on_ray)  # fmt: skip
    assert result.returncode == 0, result.stderr
    spec = parse_faults(_FAULTS).unwrap()
    assert spec is not None
    live = read_runs(home / "live")
    for record in live:
        assert record.status == "fail" and record.faults is not None  # judged: the model fixed nothing
        schedule = [fault_at(spec, f"{record.task_id}/{record.repetition}", call) for call in range(9)]
        answered = schedule.index(None)  # the run's one model call, after its faulted attempts
        assert record.faults.calls == answered + 1
        assert [(hit.call, hit.kind) for hit in record.faults.hits] == list(enumerate(schedule[:answered]))
    assert sum(len(r.faults.hits) for r in live if r.faults is not None) > 0
    assert len(endpoint.authorizations) == 6  # the faulted calls never reached it
