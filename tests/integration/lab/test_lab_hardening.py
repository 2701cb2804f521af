"""The lab never loses its other runs, and says in one line what stopped it (issue 9's lab cases).

A run that raises is an ``error`` run and the lab goes on; a write that fails (a full disk; here a file-size
limit, which fails the same ``write`` the same way on any machine) leaves runs.jsonl with whole lines only and
stops with one line; an unwritable data directory is refused before any run, naming it and its variable.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
from pathlib import Path

import msgspec

from alisio.core.harness.config import MeasuredConfig
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.lab.suites.schedule import RunSpec
from alisio.shell.lab.plans import ProviderPlan
from alisio.shell.lab.run_one import Arm, RunContext, run_one
from alisio.shell.lab.suites import load_suite
from tests.integration.helpers import ALISIO, FIX, alisio, make_suite, task, write_script


def test_a_run_that_raises_is_an_error_run_naming_the_exception(home: Path) -> None:
    """An unexpected exception inside a run (here the provider's factory) gives an error record with the
    exception's type and message, never an exception out of run_one."""
    suite = make_suite(home)
    loaded = load_suite(suite).unwrap()

    def broken(task: object, spec: object) -> object:
        raise RuntimeError("the provider factory broke")

    plan = ProviderPlan(id="broken", model="m", factory=broken, close=lambda: None)  # type: ignore[arg-type]
    ctx = RunContext(
        loaded=loaded, provider=plan, granted=frozenset(), read_only=False, keep=False, harness_version="t"
    )
    arm = Arm(variant=None, measured=MeasuredConfig(), directory=home / "out", run_id="r")
    finished = run_one(ctx, arm, loaded.suite.tasks[0], RunSpec(task_id="fix-add", repetition=0, seed=0))
    record = finished.record
    assert (record.status, record.reason) == (RunStatus.ERROR, "internal_error")
    assert record.errors == ("RuntimeError: the provider factory broke",)


def test_a_failed_write_keeps_whole_lines_and_stops_with_one_line(home: Path) -> None:
    """runs.jsonl cannot grow past a size limit (EFBIG, like ENOSPC on a full disk): the command stops with one
    line naming the directory and the error, exit 1, and every line left in runs.jsonl is a whole record."""
    policy = {"mode": "auto", "allow": ["write"]}
    suite = make_suite(home, task("fix-add", policy=policy))
    script = write_script(home / "f.json", FIX)
    out = home / "out"
    out.mkdir()
    limit = 12_000

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(ALISIO_CONFIG_HOME=str(home / "config"), ALISIO_DATA_HOME=str(home / "data"))
    done = subprocess.run(
        [str(ALISIO), "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "40", "-j", "1",
         "--allow-write", "--script", str(script), "--out", str(out)],
        capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL, preexec_fn=limited, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{out}: cannot append to runs.jsonl: File too large" in done.stderr
    raw = (out / "runs.jsonl").read_bytes()
    assert raw.endswith(b"\n") and len(raw) <= limit
    lines = raw.splitlines()
    assert 0 < len(lines) < 40
    for line in lines:
        msgspec.json.decode(line, type=RunRecord)


def test_an_unwritable_data_home_is_refused_before_any_run(home: Path) -> None:
    """ALISIO_DATA_HOME under a regular file: one line naming the directory and the variable, exit 1."""
    suite = make_suite(home)
    blocker = home / "a-file"
    blocker.write_text("not a directory")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(ALISIO_CONFIG_HOME=str(home / "config"), ALISIO_DATA_HOME=str(blocker / "data"))
    done = subprocess.run(
        [str(ALISIO), "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1", "--allow-write",
         "--script", str(write_script(home / "f.json", FIX))],
        capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr
    assert any(f"{blocker} is not a directory" in line and "ALISIO_DATA_HOME" in line for line in lines), (
        lines
    )
    assert alisio(home, "eval", "runs").returncode == 0
