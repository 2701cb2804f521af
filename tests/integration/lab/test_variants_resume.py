"""``eval variants --resume DIR|RUN_ID``: a variants job killed with SIGKILL part-way continues in its root
directory, fixed k or ``--sequential``, with ``--jobs`` above 1 too; what changed since is refused.

The provider is the stand-in model of ``tests.integration.seq_model`` (a local server; its outcome per
variant and task is fixed: rates 0 and 1) behind ``Holding``, which holds every run's first request after the
first ``after`` runs: the killed command then has exactly ``after`` finished runs and ``--jobs`` runs in
flight, whatever the machine's speed. The reports after the resume are compared with those of the same job
run without a kill.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import msgspec

from alisio.core.lab.comparisons.variants import VariantsComparison
from alisio.core.lab.report import Report
from tests.integration.helpers import (
    ALISIO,
    alisio,
    command_env,
    read_report,
    read_runs,
    variants,
)
from tests.integration.seq_model import StandIn, compare_file, seq_suite
from tests.integration.sse_server import RecordedRequest, Reply, SseServer

COMPARISON = msgspec.json.Decoder(VariantsComparison)
RATES = {"base": {"differs": 0.0, "same": 1.0}, "cand": {"differs": 1.0, "same": 1.0}}


class Holding:
    """The stand-in model, holding each new run's first request once ``after`` runs have started (until the
    server closes): the runs before it finish, the ones after it stay in flight."""

    def __init__(self, model: StandIn, after: int) -> None:
        self.model, self.after = model, after
        self.started = self.held = 0
        self.holding = True

    def __call__(self, request: RecordedRequest) -> Reply:  # called under the server's lock
        first = not any(m.get("role") == "tool" for m in request.json()["messages"])
        if first and self.holding:
            if self.started >= self.after:
                self.held += 1
                return Reply.sse({"choices": []}, pause_s=120)
            self.started += 1
        return self.model(request)


def _killed_job(home: Path, server: SseServer, holding: Holding, jobs: int, *args: str | Path) -> None:
    """Start ``eval variants`` in a new process, wait until ``holding.after`` runs are recorded and ``jobs``
    runs are held in flight, and SIGKILL it."""
    command = [str(ALISIO), "eval", "variants", "calc-suite", "--yes", "--base-url", server.base_url,
               "--model", "m", "--jobs", str(jobs), *map(str, args)]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=command_env(home), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while holding.held < jobs or _recorded(home / "out") < holding.after:
        assert time.monotonic() < deadline and process.poll() is None, process.stderr
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    holding.holding = False  # the resume's runs are answered at once


def _recorded(out: Path) -> int:
    return sum(len(p.read_bytes().splitlines()) for p in out.glob("*/runs.jsonl"))


def _runs(directory: Path) -> list[tuple[str, int, str]]:
    return sorted((r.task_id, r.repetition, str(r.status)) for r in read_runs(directory))


def _numbers(report: Report) -> list[tuple[Any, ...]]:
    """What a report says of each task: its counts and rates, not when or how fast."""
    return [
        (t.task_id, t.runs, t.passes, t.fails, t.errored, t.success_rate, msgspec.to_builtins(t.interval))
        for t in report.tasks
    ]


def _timeless(value: Any) -> Any:
    """``value`` without its wall times (how fast a run was)."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k != "wallMsMedian"}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def _comparison(out: Path) -> Any:
    """comparison.json but what differs between any two jobs: the conditions (run ids, dates), the wall times."""
    document = json.loads((out / "comparison.json").read_text())
    entries = [
        {k: v for k, v in entry["comparison"].items() if k not in ("baseline", "candidate")}
        for entry in document["comparisons"]
    ]
    return _timeless(entries), document.get("sequential")


def test_a_killed_fixed_k_job_at_two_jobs_resumes_and_reports_as_an_uninterrupted_one(tmp_path: Path) -> None:
    """k = 3 over 2 tasks and 2 variants (12 runs), --jobs 2, SIGKILL with 5 runs recorded and 2 in flight:
    plan.json is at the root and no report is written; --resume DIR runs the 7 others only (the 2 in flight
    again, none of the 5), and the reports and comparison say what an uninterrupted job's say."""
    home = tmp_path
    suite = seq_suite(tmp_path, "differs", "same")
    compare = compare_file(tmp_path / "compare.json", "base", "cand")
    out = home / "out"
    model = StandIn(RATES)
    holding = Holding(model, after=5)
    with SseServer(respond=holding) as server:
        args = ("--suite-dir", suite, "--variants", compare, "-k", "3", "--out", out)
        _killed_job(home, server, holding, 2, *args)
        assert (out / "plan.json").is_file()
        assert not (out / "comparison.json").exists() and not (out / "base" / "report.json").exists()
        assert _recorded(out) == 5 and sum(model.runs.values()) == 5
        resumed = alisio(home, "eval", "variants", "--resume", out, "--jobs", "2", process=True)
        assert resumed.returncode == 0, resumed.stderr
        assert sum(model.runs.values()) == 12  # the 7 not recorded ran, the 5 recorded did not
        whole = home / "whole"
        again = variants(home, suite, compare, "--base-url", server.base_url, "--model", "m", "-k", "3",
                         "--jobs", "2", "--out", whole)  # fmt: skip
        assert again.returncode == 0, again.stderr
    for arm in ("base", "cand"):
        expected = "fail" if arm == "base" else "pass"
        assert _runs(out / arm) == [
            *(("differs", rep, expected) for rep in range(3)),
            *(("same", rep, "pass") for rep in range(3)),
        ]
        report, uninterrupted = read_report(out / arm), read_report(whole / arm)
        assert (report.summary.runs, report.planned_runs, report.interrupted) == (6, 6, False)
        assert report.conditions.run_id.endswith(f"/{arm}")
        assert _numbers(report) == _numbers(uninterrupted)
    assert _numbers(read_report(out / "base"))[0][1:4] == (3, 0, 3)
    assert _comparison(out) == _comparison(whole)
    assert resumed.stdout == (out / "comparison.md").read_text()


def test_a_killed_sequential_job_replays_its_decisions_and_stops_where_an_uninterrupted_one_stops(
    tmp_path: Path,
) -> None:
    """--sequential --max-k 20, --jobs 1, killed after 22 runs: task "same" had stopped (futility at 5 pairs)
    and starts no run again; "differs" goes on to its decision at 9 pairs; the blocks and the comparison equal
    the uninterrupted job's, and the runs the resume started are exactly the 6 left."""
    home = tmp_path
    suite = seq_suite(tmp_path, "differs", "same")
    compare = compare_file(tmp_path / "compare.json", "base", "cand")
    out = home / "out"
    model = StandIn(RATES)
    holding = Holding(model, after=22)
    seq = ("--sequential", "--max-k", "20")
    with SseServer(respond=holding) as server:
        _killed_job(home, server, holding, 1, "--suite-dir", suite, "--variants", compare, *seq, "--out", out)
        assert dict(model.runs) == {
            ("base", "same"): 5, ("cand", "same"): 5, ("base", "differs"): 6, ("cand", "differs"): 6,
        }  # fmt: skip
        resumed = alisio(home, "eval", "variants", "calc-suite", "--suite-dir", suite, "--yes", "--variants",
                         compare, *seq, "--out", out, "--resume", out, "--jobs", "1", process=True)  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr
        assert dict(model.runs) == {
            ("base", "same"): 5, ("cand", "same"): 5, ("base", "differs"): 9, ("cand", "differs"): 9,
        }  # fmt: skip
        whole = home / "whole"
        again = variants(home, suite, compare, "--base-url", server.base_url, "--model", "m", *seq,
                         "--jobs", "1", "--out", whole)  # fmt: skip
        assert again.returncode == 0, again.stderr
    for arm in ("base", "cand"):
        block, uninterrupted = read_report(out / arm).sequential, read_report(whole / arm).sequential
        assert block is not None and uninterrupted is not None
        assert [(s.task_id, s.reason, s.direction, s.runs) for s in block.tasks] == [
            ("differs", "decided", "improved", 9),
            ("same", "futility", None, 5),
        ]
        assert msgspec.to_builtins(block) == msgspec.to_builtins(uninterrupted)
    assert _comparison(out) == _comparison(whole)
    assert "52 of 80 runs saved over both variants" in resumed.stderr
