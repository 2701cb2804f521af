"""eval run --resume DIR|RUN_ID [--retry-errors]: continue a run in its own directory, after a kill too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from alisio.core.lab.runs.records import RunStatus
from tests.integration.helpers import (
    ALISIO,
    FIX,
    alisio,
    make_suite,
    read_report,
    read_runs,
    task,
    wait_until_sleeping,
    write_script,
)

POLICY = {"mode": "auto", "allow": ["write", "process"]}


def _env(home: Path, temp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(ALISIO_CONFIG_HOME=str(home / "config"), ALISIO_DATA_HOME=str(home / "data"), TMPDIR=str(temp))
    return env


def _resume(home: Path, temp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ALISIO), "eval", "run", "--resume", *args],
        capture_output=True, text=True, timeout=120, check=False, env=_env(home, temp), stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_a_killed_run_resumes_where_it_stopped(home: Path, tmp_path: Path) -> None:
    """SIGKILL after the first of four runs: --resume RUN_ID runs the three others only, removes the killed
    command's workspace, and the report covers the four."""
    suite = make_suite(home, task("fix-add", policy=POLICY))
    flag = home / "slow"
    flag.touch()
    fix_then_wait = {"turns": [*FIX["turns"][:2], {"toolCalls": [{"name": "bash", "arguments": {"command": f"test -e ../first || {{ touch ../first; exit 0; }}; test -e {flag} && {{ echo $$ > ../sleeper; exec sleep 60; }}; true"}}]}, {"text": "Fixed."}]}  # fmt: skip
    script = write_script(home / "fix.json", fix_then_wait)
    temp = tmp_path / "tmp"
    temp.mkdir()
    process = subprocess.Popen(
        [str(ALISIO), "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "4", "-j", "1",
         "--allow-write", "--allow-process", "--script", str(script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(home, temp), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not any(p.is_file() and p.stat().st_size > 0 for p in home.glob("data/eval/*/runs.jsonl")):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    wait_until_sleeping(temp / "sleeper", process)  # the second run sleeps in its command
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    (directory,) = (home / "data" / "eval").iterdir()
    assert (directory / "plan.json").is_file() and not (directory / "report.json").exists()
    assert len(read_runs(directory)) == 1
    assert [p for p in temp.iterdir() if p.name.startswith("alisio-")]  # the killed run's workspace is left
    flag.unlink()
    result = _resume(home, temp, directory.name)
    assert result.returncode == 0, result.stderr
    assert "3 runs" in result.stderr.splitlines()[0] or "[3/3]" in result.stderr
    records = read_runs(directory)
    assert sorted(r.repetition for r in records) == [0, 1, 2, 3]
    assert all(r.status is RunStatus.PASS for r in records)
    report = read_report(directory)
    assert (report.summary.runs, report.planned_runs, report.interrupted) == (4, 4, False)
    assert report.conditions.run_id == directory.name
    assert [
        p.name for p in temp.iterdir() if p.name.startswith("alisio-")
    ] == []  # removed when resume started


def test_retry_errors_runs_the_errored_runs_again_and_keeps_their_records_apart(
    home: Path, tmp_path: Path
) -> None:
    """Two error runs (the script runs out of turns), the script fixed, --resume DIR --retry-errors: both run
    again and pass; the old records are in retried/runs.jsonl, the report says 2 were retried."""
    suite = make_suite(home)
    broken = {"turns": [{"toolCalls": [{"name": "read_file", "arguments": {"path": "src/calc.py"}}]}]}
    script = write_script(home / "s.json", broken)
    out = home / "out"
    first = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "2",
                   "--allow-write", "--script", str(script), "--out", str(out))  # fmt: skip
    assert first.returncode == 1
    assert {r.status for r in read_runs(out)} == {RunStatus.ERROR}
    write_script(script, FIX)
    temp = tmp_path / "tmp"
    temp.mkdir()
    plain = _resume(home, temp, str(out))
    assert plain.returncode == 1  # nothing left to run: the errored runs stay as they are
    assert len(read_runs(out)) == 2 and read_report(out).summary.errored == 2
    retried = _resume(home, temp, str(out), "--retry-errors")
    assert retried.returncode == 0, retried.stderr
    assert {r.status for r in read_runs(out)} == {RunStatus.PASS}
    apart = [json.loads(line) for line in (out / "retried" / "runs.jsonl").read_text().splitlines()]
    assert [a["status"] for a in apart] == ["error", "error"]
    report = read_report(out)
    assert (report.retried, report.summary.passes, report.summary.errored) == (2, 2, 0)
    assert "2 errored runs were run again (--retry-errors)" in (out / "report.md").read_text()


def test_resume_refuses_a_changed_suite_or_model(home: Path, tmp_path: Path) -> None:
    """A fixture edited since, or another --model: exit 1 naming what differs, nothing run, files untouched."""
    suite = make_suite(home)
    out = home / "out"
    script = write_script(home / "f.json", FIX)
    first = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1",
                   "--allow-write", "--script", str(script), "--out", str(out))  # fmt: skip
    assert first.returncode == 0, first.stderr
    before = (out / "runs.jsonl").read_bytes()
    temp = tmp_path / "tmp"
    temp.mkdir()
    other_model = _resume(home, temp, str(out), "--model", "another")
    assert (
        other_model.returncode == 1
        and "the model differs: scripted when the run started, another now" in other_model.stderr
    )
    (suite / "fixtures" / "calc" / "check.py").write_text("print('changed')\n")
    changed = _resume(home, temp, str(out))
    assert changed.returncode == 1 and "the suite's content" in changed.stderr
    assert (out / "runs.jsonl").read_bytes() == before
    flags = _resume(home, temp, str(out), "-k", "9")
    assert flags.returncode == 1 and "-k: the run started with 1, given 9" in flags.stderr


def test_a_torn_last_line_is_dropped_with_a_warning(home: Path, tmp_path: Path) -> None:
    """runs.jsonl ending in half a record (an older version killed mid-write): resume warns, drops it and runs
    that run again."""
    suite = make_suite(home)
    out = home / "out"
    script = write_script(home / "f.json", FIX)
    first = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "2", "-j", "1",
                   "--allow-write", "--script", str(script), "--out", str(out))  # fmt: skip
    assert first.returncode == 0
    lines = (out / "runs.jsonl").read_bytes().splitlines(keepends=True)
    (out / "runs.jsonl").write_bytes(lines[0] + lines[1][: len(lines[1]) // 2])
    temp = tmp_path / "tmp"
    temp.mkdir()
    result = _resume(home, temp, str(out))
    assert result.returncode == 0, result.stderr
    assert "the last line was cut off" in result.stderr
    assert sorted(r.repetition for r in read_runs(out)) == [0, 1]


def test_resume_needs_a_plan(home: Path, tmp_path: Path) -> None:
    """--resume of a directory without plan.json, or an unknown run id: one line, exit 1."""
    (home / "empty").mkdir()
    temp = tmp_path / "tmp"
    temp.mkdir()
    no_plan = _resume(home, temp, str(home / "empty"))
    assert no_plan.returncode == 1 and f"{home / 'empty'}: no report here" in no_plan.stderr
    assert "invalid run id" not in no_plan.stderr  # a directory given is a directory, not a run id
    (home / "empty" / "runs.jsonl").write_text("")
    no_plan = _resume(home, temp, str(home / "empty"))
    assert no_plan.returncode == 1 and "holds no plan.json" in no_plan.stderr
    unknown = _resume(home, temp, "2020-01-01T00-00-00-000Z")
    assert unknown.returncode == 1 and "no run 2020-01-01T00-00-00-000Z in" in unknown.stderr
