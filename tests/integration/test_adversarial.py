"""The adversarial review's defects (issue 15), each through the installed command.

Real subprocesses where a signal or an exit code matters, real local servers for hostile providers.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.test_eval_run import ALISIO, FIX, alisio, make_suite, task, write_script


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "config").mkdir()
    return tmp_path


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(ALISIO_CONFIG_HOME=str(home / "config"), ALISIO_DATA_HOME=str(home / "data"))
    return env


def _wait_for(path: Path, process: subprocess.Popen[str], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline and process.poll() is None, "the command ended early"
        time.sleep(0.05)


SLEEPER = {
    "turns": [{"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]}, {"text": "done"}]
}
PROCESS = {"mode": "auto", "allow": ["write", "process"]}


def _run_args(suite: Path, script: Path, out: Path, *more: str) -> list[str]:
    return ["eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1", "--allow-write",
            "--allow-process", "--script", str(script), "--out", str(out), *more]  # fmt: skip


# --- 1, 2: --force ----------------------------------------------------------------------------------------


def test_force_into_a_directory_being_written_removes_nothing(home: Path) -> None:
    """Item 1: while a command writes --out DIR, `--out DIR --force` is refused before it removes anything:
    the first command's plan.json survives the refusal, and even a SIGKILL of the first command after it."""
    suite = make_suite(home, task("slow", policy=PROCESS))
    script = write_script(home / "slow.json", SLEEPER)
    out = home / "out"
    first = subprocess.Popen(
        [str(ALISIO), *_run_args(suite, script, out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(home), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_for(out / "plan.json", first)
        plan = (out / "plan.json").read_bytes()
        second = alisio(home, *_run_args(suite, script, out, "--force"))
        assert second.returncode == 1
        assert "is being written by another alisio command" in second.stderr
        assert (out / "plan.json").read_bytes() == plan
        assert (out / "runs.jsonl").exists()
    finally:
        first.kill()
        first.communicate(timeout=30)
    assert (out / "plan.json").read_bytes() == plan  # the killed run can still be resumed


def test_force_refuses_a_directory_holding_files_no_report_wrote(home: Path) -> None:
    """Item 2: `--out . --force` in a project whose runs/2024/important.csv is its own: refused in one line
    naming that file, exit 1, every file kept; a directory holding only a report is replaced."""
    suite = make_suite(home)
    script = write_script(home / "f.json", FIX)
    project = home / "project"
    args = ["eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1", "--allow-write",
            "--script", str(script), "--out", str(project)]  # fmt: skip
    assert alisio(home, *args).returncode == 0
    (project / "runs" / "2024").mkdir()
    (project / "runs" / "2024" / "important.csv").write_text("keep me\n")
    (project / "notes.txt").write_text("mine\n")
    before = sorted(str(p.relative_to(project)) for p in project.rglob("*"))
    forced = alisio(home, *args, "--force")
    assert forced.returncode == 1
    lines = [line for line in forced.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "holds files no alisio report wrote" in lines[0], forced.stderr
    assert "notes.txt" in lines[0] and "runs/2024" in lines[0]
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*")) == before
    assert (project / "runs" / "2024" / "important.csv").read_text() == "keep me\n"
    (project / "notes.txt").unlink()
    (project / "runs" / "2024" / "important.csv").unlink()
    (project / "runs" / "2024").rmdir()
    replaced = alisio(home, *args, "--force")
    assert replaced.returncode == 0, replaced.stderr
    assert len((project / "runs.jsonl").read_bytes().splitlines()) == 1
