"""Concurrent runs (--jobs): the same plan and the same records whatever N, whole lines in runs.jsonl.

Replay and scripted runs are deterministic, so every record must be identical to ``--jobs 1`` but for
timings; the report is built in plan order; runs.jsonl holds one whole record per line.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from alisio.core.lab.runs.records import RunRecord
from tests.integration.helpers import (
    ALISIO,
    FIX,
    NOOP,
    make_suite,
    read_report,
    read_runs,
    task,
    write_script,
)
from tests.integration.helpers import alisio as in_process
from tests.integration.helpers import alisio_process as alisio  # concurrency between real processes


def _timeless(record: RunRecord) -> dict[str, Any]:
    """A record without what depends on the clock (wall times, the start time)."""
    data = msgspec.to_builtins(record)
    data["measured"].pop("wallMs", None)
    data["measured"].pop("startedAt", None)
    return data


def _raw_lines_are_whole(directory: Path) -> None:
    raw = (directory / "runs.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    for line in raw.splitlines():
        msgspec.json.decode(line, type=RunRecord)


@pytest.mark.parametrize("jobs", ["4", "8"])
def test_replay_records_are_the_same_whatever_jobs(home: Path, jobs: str) -> None:
    """tool-sequences replayed k=3 with -j 1 and -j N: the same records in the same (plan) order."""
    outs = {}
    for n in ("1", jobs):
        out = home / f"out-{n}"
        result = alisio(home, "eval", "run", "tool-sequences", "--mode", "replay", "-k", "3", "-j", n,
                        "--allow-write", "--allow-process", "--out", str(out), timeout=300)  # fmt: skip
        assert result.returncode == 0, result.stderr
        _raw_lines_are_whole(out)
        outs[n] = out
    one, many = (read_runs(outs[n]) for n in ("1", jobs))
    assert [_timeless(r) for r in one] == [_timeless(r) for r in many]
    first, second = (read_report(outs[n]) for n in ("1", jobs))
    assert [t.task_id for t in first.tasks] == [t.task_id for t in second.tasks]
    assert [(t.passes, t.judged) for t in first.tasks] == [(t.passes, t.judged) for t in second.tasks]


def test_scripted_runs_keep_the_plan_and_the_variants_interleaving(home: Path) -> None:
    """A scripted suite with -j 3: every (task, repetition, seed) of the plan once, the report in plan order."""
    suite = make_suite(home, task("a"), task("b"), task("c"))
    script_dir = home / "scripts"
    script_dir.mkdir()
    for name, script in (("a", FIX), ("b", NOOP), ("c", FIX)):
        write_script(script_dir / f"{name}.json", script)
    outs = {}
    for n in ("1", "3"):
        out = home / f"out-{n}"
        result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "4", "-j", n,
                        "--seed", "5", "--allow-write", "--script", str(script_dir), "--out", str(out))  # fmt: skip
        assert result.returncode == 0, result.stderr
        outs[n] = out
    one, many = (read_runs(outs[n]) for n in ("1", "3"))
    assert [_timeless(r) for r in one] == [_timeless(r) for r in many]
    assert sorted((r.task_id, r.repetition, r.seed) for r in many) == [
        (t, rep, 5 + rep) for t in "abc" for rep in range(4)
    ]
    assert [(t.task_id, t.passes) for t in read_report(outs["3"]).tasks] == [("a", 4), ("b", 0), ("c", 4)]


def test_jobs_below_one_is_a_usage_error(home: Path) -> None:
    """-j 0: one line naming --jobs, exit 1."""
    result = alisio(home, "eval", "run", "tool-sequences", "--mode", "replay", "-j", "0")
    assert result.returncode == 1 and "--jobs" in result.stderr and "Traceback" not in result.stderr


def test_lab_jobs_in_config_is_the_default(home: Path) -> None:
    """[lab] jobs = 3 in config.toml (not the 2 CPUs of CI) is taken when --jobs is not given, --jobs wins
    over it, and an unknown [lab] key is refused."""
    (home / "config" / "config.toml").write_text("[lab]\njobs = 3\n")
    replay = ("eval", "run", "tool-sequences", "--mode", "replay", "--allow-write", "--allow-process",
              "--tasks", "read-edit-config,move-file,blind-edit-refused")  # fmt: skip
    result = in_process(home, *replay, "--out", str(home / "o"))
    assert result.returncode == 0, result.stderr
    headline = result.stderr.splitlines()[0]
    assert headline.startswith("tool-sequences ") and headline.endswith(", seed 0, 3 at once)"), headline
    assert len(read_runs(home / "o")) == 3
    two = in_process(home, *replay[:-1], "read-edit-config,move-file", "--out", str(home / "two"))
    assert two.stderr.splitlines()[0].endswith(", seed 0, 2 at once)")  # never more than there are runs
    flag = in_process(home, *replay, "--jobs", "1", "--out", str(home / "p"))
    assert flag.returncode == 0, flag.stderr
    assert flag.stderr.splitlines()[0].endswith(", seed 0, 1 at once)")
    (home / "config" / "config.toml").write_text("[lab]\njobz = 2\n")
    bad = in_process(home, "eval", "run", "tool-sequences", "--mode", "replay")
    assert bad.returncode == 1 and "lab.jobz" in bad.stderr


def test_ctrl_c_stops_every_run_in_flight(home: Path, tmp_path: Path) -> None:
    """-j 3, three runs each inside a long command: SIGINT stops all three (their commands killed, their
    workspaces removed), writes the report of the finished runs (none) and exits 130."""
    suite = make_suite(home, task("slow", policy={"mode": "auto", "allow": ["write", "process"]}))
    sleeper = {"turns": [{"toolCalls": [{"name": "bash", "arguments": {"command": "echo $$ >> ../sleepers; exec sleep 60"}}]}, {"text": "done"}]}  # fmt: skip
    script = write_script(home / "sleep.json", sleeper)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(ALISIO_CONFIG_HOME=str(home / "config"), ALISIO_DATA_HOME=str(home / "data"), TMPDIR=str(temp))
    out = home / "out"
    process = subprocess.Popen(
        [str(ALISIO), "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "3", "-j", "3",
         "--allow-write", "--allow-process", "--script", str(script), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    pids_file = temp / "sleepers"
    deadline = time.monotonic() + 30
    while not (pids_file.exists() and len(pids_file.read_text().split()) == 3):
        assert time.monotonic() < deadline and process.poll() is None, process.communicate()
        time.sleep(0.05)
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert time.monotonic() - started < 15  # not the 60 s of the commands
    assert "interrupted (Ctrl-C): the report of the 0 finished runs is written" in stderr
    for pid in map(int, pids_file.read_text().split()):
        alive = Path(f"/proc/{pid}").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
        assert not alive, f"the command of a run in flight ({pid}) is still running"
    assert [p.name for p in temp.iterdir() if p.name.startswith("alisio-")] == []
    report = read_report(out)
    assert (report.interrupted, report.planned_runs, report.summary.runs) == (True, 3, 0)


def test_ctrl_c_a_worker_thread_takes_still_stops_the_runs() -> None:
    """A SIGINT the kernel hands to a worker thread (or that comes just before the main thread falls asleep)
    wakes no sleeping main thread: the executor's wait wakes on its own, raises it within a second, and the
    runs in flight are asked to stop (here they would otherwise run 5 s)."""
    from alisio.core.lab.suites.schedule import RunSpec
    from alisio.shell import cancel
    from alisio.shell.lab.runner import SpecFeed, ThreadExecutor

    stopped: list[bool] = []
    all_started = threading.Barrier(3)

    def run(spec: RunSpec) -> None:
        all_started.wait(timeout=5)  # the main thread is asleep in the executor's wait by now
        if spec.repetition == 0:  # the signal lands in this worker thread, not in the main thread
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        give_up = time.monotonic() + 5
        while not cancel.requested() and time.monotonic() < give_up:
            time.sleep(0.01)
        stopped.append(cancel.requested())

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    started = time.monotonic()
    try:
        specs = SpecFeed([RunSpec(task_id="t", repetition=n, seed=n) for n in range(3)])
        with pytest.raises(KeyboardInterrupt):
            list(ThreadExecutor(3).run(run, specs))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 2, "the Ctrl-C waited for the runs to end"
    # the runs are asked to stop, not waited for: each notices within its next 10 ms poll (on a loaded machine
    # a worker may not have been scheduled yet when the executor raised), long before its 5 s would end
    notice_by = time.monotonic() + 3
    while len(stopped) < 3 and time.monotonic() < notice_by:
        time.sleep(0.01)
    assert stopped == [True, True, True]


def test_live_status_on_a_terminal_plain_lines_without_one_and_quiet(home: Path) -> None:
    """On a terminal (a pty from script(1)) a status line shows done/total, the counts, the runs in flight,
    elapsed and ETA; without one each run is one plain line; --quiet prints only the table and the report's path."""
    import shutil

    base = [
        "eval",
        "run",
        "tool-sequences",
        "--mode",
        "replay",
        "-k",
        "2",
        "-j",
        "2",
        "--allow-write",
        "--allow-process",
    ]
    plain = alisio(home, *base, "--out", str(home / "plain"))
    assert plain.returncode == 0, plain.stderr
    assert "\x1b[" not in plain.stderr and "running" not in plain.stderr
    assert sum(line.startswith("[") and "/12] " in line for line in plain.stderr.splitlines()) == 12
    quiet = alisio(home, *base, "--quiet", "--out", str(home / "quiet"))
    assert quiet.returncode == 0
    assert quiet.stderr == f"report: {home / 'quiet' / 'report.md'} (report.html beside it)\n"
    lines = quiet.stdout.splitlines()  # the header, six tasks, the total row
    assert lines[0].startswith("task ") and len(lines) == 8 and lines[-1].startswith("total ")
    if shutil.which("script") is None:
        pytest.skip("script(1) from util-linux is needed for a terminal: apt-get install bsdutils")
    typescript = home / "typescript"
    command = " ".join([str(ALISIO), *base, "--out", str(home / "tty")])
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(ALISIO_CONFIG_HOME=str(home / "config"), ALISIO_DATA_HOME=str(home / "data"))
    done = subprocess.run(
        ["script", "-qc", command, str(typescript)], env=env, capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0
    shown = typescript.read_text(errors="replace")
    assert re.search(r"\d+/12 done \(\d+ pass\) · \d running · \d:\d\d elapsed · ETA \d:\d\d", shown), shown[
        -2000:
    ]
