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
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from alisio.core.lab.comparisons.variants import VariantsComparison
from alisio.core.lab.reports.report import Report
from tests.integration.helpers import (
    ALISIO,
    NOOP,
    alisio,
    command_env,
    read_report,
    read_runs,
    variants,
    write_script,
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
    while holding.held < jobs or _recorded(home) < holding.after:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"the job ended or hung before the kill: {process.communicate()[1]}")
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    holding.holding = False  # the resume's runs are answered at once


def _recorded(root: Path) -> int:
    """The records of every runs.jsonl under ``root``."""
    return sum(len(p.read_bytes().splitlines()) for p in root.rglob("runs.jsonl"))


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
    plan.json is at the root and no report is written; --resume RUN_ID runs the 7 others only (the 2 in flight
    again, none of the 5), and the reports and comparison say what an uninterrupted job's say."""
    home = tmp_path
    suite = seq_suite(tmp_path, "differs", "same")
    compare = compare_file(tmp_path / "compare.json", "base", "cand")
    model = StandIn(RATES)
    holding = Holding(model, after=5)
    with SseServer(respond=holding) as server:
        _killed_job(home, server, holding, 2, "--suite-dir", suite, "--variants", compare, "-k", "3")
        (out,) = (home / "data" / "eval").iterdir()
        assert (out / "plan.json").is_file()
        assert not (out / "comparison.json").exists() and not (out / "base" / "report.json").exists()
        assert _recorded(out) == 5 and sum(model.runs.values()) == 5
        resumed = alisio(home, "eval", "variants", "--resume", out.name, "--jobs", "2", process=True)
        assert resumed.returncode == 0, resumed.stderr
        assert "[7/7]" in resumed.stderr and "[8/" not in resumed.stderr
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
        assert report.conditions.run_id == f"{out.name}/{arm}"
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


# --- what a resume refuses -----------------------------------------------------------------------------------


def _finished_job(home: Path, *variant_ids: str, k: int = 1) -> tuple[Path, Path, Path]:
    """A variants job run to its end with a script (every run passes): the suite, compare.json and --out."""
    suite = seq_suite(home, "same")
    compare = compare_file(home / "compare.json", *variant_ids)
    script = write_script(home / "noop.json", NOOP)
    out = home / "out"
    done = variants(home, suite, compare, "--script", script, "-k", str(k), "--jobs", "1", "--out", out)
    assert done.returncode == 0, done.stderr
    return suite, compare, out


def _refused(home: Path, *args: str | Path) -> str:
    result = alisio(home, "eval", *args)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stdout == ""
    return result.stderr


def test_a_finished_job_resumed_runs_nothing_and_rewrites_the_same_reports(tmp_path: Path) -> None:
    """--resume of a job with every run recorded starts no run; the reports say what they said."""
    _, _, out = _finished_job(tmp_path, "base", "cand", k=2)
    before = {arm: _numbers(read_report(out / arm)) for arm in ("base", "cand")}
    runs = {arm: (out / arm / "runs.jsonl").read_bytes() for arm in ("base", "cand")}
    again = alisio(tmp_path, "eval", "variants", "--resume", out)
    assert again.returncode == 0, again.stderr
    assert " rep " not in again.stderr  # no progress line: nothing ran
    assert {arm: _numbers(read_report(out / arm)) for arm in ("base", "cand")} == before
    assert {arm: (out / arm / "runs.jsonl").read_bytes() for arm in ("base", "cand")} == runs


def test_a_resume_refuses_what_changed_naming_it_and_runs_nothing(tmp_path: Path) -> None:
    """A variant's configuration edited in compare.json, another variants file, a fixture edited, -k or
    --sequential that differ: exit 1, one line naming what differs, runs.jsonl untouched."""
    suite, compare, out = _finished_job(tmp_path, "base", "cand")
    runs = {arm: (out / arm / "runs.jsonl").read_bytes() for arm in ("base", "cand")}
    document = json.loads(compare.read_text())
    document["variants"][1]["overrides"]["instructions"] = "Variant cand. Be brief."
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document))
    stderr = _refused(tmp_path, "variants", "--resume", out, "--variants", edited)
    assert "variant cand's configuration hash (its measured configuration changed) differs: " in stderr
    assert "variant base" not in stderr and "the configuration hash" not in stderr
    assert stderr.rstrip().endswith(
        "nothing was run: a resumed run must measure what the run started measuring"
    )
    other = compare_file(tmp_path / "other.json", "base", "other")
    stderr = _refused(tmp_path, "variants", "--resume", out, "--variants", other)
    assert "the variants differ: base, cand when the run started, base, other now" in stderr
    compare.write_text(json.dumps(document))  # the file the job names, edited where it is
    stderr = _refused(tmp_path, "variants", "--resume", out)
    assert "variant cand's configuration hash" in stderr
    compare_file(compare, "base", "cand")
    stderr = _refused(tmp_path, "variants", "--resume", out, "-k", "3")
    assert "-k: the run started with 1, given 3" in stderr
    stderr = _refused(tmp_path, "variants", "--resume", out, "--sequential")
    assert "the sequential design differs: a fixed k when the run started, --sequential, --max-k 50" in stderr
    (suite / "fixtures" / "calc" / "check.py").write_text("print('changed')\n")
    stderr = _refused(tmp_path, "variants", "--resume", out)
    assert "the suite's content (a task, fixture or verifier changed) differs" in stderr
    assert {arm: (out / arm / "runs.jsonl").read_bytes() for arm in ("base", "cand")} == runs


def test_a_resume_whose_variants_file_became_a_fifo_or_huge_is_refused_at_once(tmp_path: Path) -> None:
    """D8 on --resume: the variants file plan.json names, replaced by a FIFO no one writes (which hung) or by
    a 16 MiB + 1 file: exit 1 at once, one line naming the file and why, runs.jsonl untouched."""
    _, compare, out = _finished_job(tmp_path, "base", "cand")
    runs = {arm: (out / arm / "runs.jsonl").read_bytes() for arm in ("base", "cand")}
    compare.unlink()
    os.mkfifo(compare)
    done = subprocess.run(
        [str(ALISIO), "eval", "variants", "--resume", str(out)], capture_output=True, text=True, timeout=60,
        env=command_env(tmp_path), stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout == "", done.stderr
    why = "cannot read: it is a FIFO (named pipe), not a regular file"
    assert done.stderr.strip() == f"alisio eval variants: variants file {compare}: {why}"
    compare.unlink()
    with compare.open("wb") as file:
        file.truncate((16 << 20) + 1)
    stderr = _refused(tmp_path, "variants", "--resume", out)
    assert stderr.strip() == (
        f"alisio eval variants: variants file {compare}: cannot read: it is larger than 16 MiB, the most a "
        "variants file may hold"
    )
    assert {arm: (out / arm / "runs.jsonl").read_bytes() for arm in ("base", "cand")} == runs


def test_each_command_resumes_its_own_kind_of_run(tmp_path: Path) -> None:
    """eval run --resume of a variants job, or of one of its variants, and eval variants --resume of a plain
    run, name the command that continues it; --retry-errors and a missing --variants say what they need."""
    suite, _, out = _finished_job(tmp_path, "base", "cand")
    stderr = _refused(tmp_path, "run", "--resume", out)
    assert f"is an eval variants job: continue it with alisio eval variants --resume {out}" in stderr
    stderr = _refused(tmp_path, "run", "--resume", out / "cand")
    assert f"is one variant of the eval variants job in {out}" in stderr
    plain = tmp_path / "plain"
    script = tmp_path / "noop.json"
    done = alisio(tmp_path, "eval", "run", "calc-suite", "--suite-dir", suite, "--yes", "-k", "1",
                  "--script", script, "--out", plain)  # fmt: skip
    assert done.returncode == 0, done.stderr
    stderr = _refused(tmp_path, "variants", "--resume", plain)
    assert (
        f"is a plain eval run, not a variants job: continue it with alisio eval run --resume {plain}"
        in stderr
    )
    stderr = _refused(tmp_path, "variants", "calc-suite", "--suite-dir", suite, "--retry-errors")
    assert "--retry-errors goes with --resume DIR|RUN_ID" in stderr
    stderr = _refused(tmp_path, "variants", "calc-suite", "--suite-dir", suite)
    assert (
        "--variants FILE names the variants to run (or --resume DIR|RUN_ID continues a variants job)"
        in stderr
    )


def test_retry_errors_runs_each_variants_errored_runs_again_and_keeps_them_apart(tmp_path: Path) -> None:
    """Every run errors (the script runs out of turns); the script fixed, --resume --retry-errors runs them
    again: each variant's old records are in its own retried/runs.jsonl, and each report counts its own."""
    suite = seq_suite(tmp_path, "same")
    compare = compare_file(tmp_path / "compare.json", "base", "cand")
    broken = {"turns": [{"toolCalls": [{"name": "read_file", "arguments": {"path": "src/calc.py"}}]}]}
    script = write_script(tmp_path / "s.json", broken)
    out = tmp_path / "out"
    first = variants(tmp_path, suite, compare, "--script", script, "-k", "2", "--jobs", "1", "--out", out)
    assert first.returncode == 1
    assert [str(r.status) for r in read_runs(out / "cand")] == ["error", "error"]
    write_script(script, NOOP)
    retried = alisio(tmp_path, "eval", "variants", "--resume", out, "--retry-errors")
    assert retried.returncode == 0, retried.stderr
    for arm in ("base", "cand"):
        assert _runs(out / arm) == [("same", 0, "pass"), ("same", 1, "pass")]
        apart = (out / arm / "retried" / "runs.jsonl").read_text().splitlines()
        assert [(json.loads(line)["variant"], json.loads(line)["status"]) for line in apart] == [
            (arm, "error")
        ] * 2
        report = read_report(out / arm)
        assert (report.retried, report.summary.passes, report.summary.errored) == (2, 2, 0)


@pytest.mark.xdist_group("external-agents")
def test_a_resume_refuses_another_version_of_a_variants_agent(tmp_path: Path) -> None:
    """A variants job of an external agent, then its version command prints another version: the resume is
    refused naming the agent and both versions."""
    from alisio.shell.agents.mock_endpoint import MockEndpoint
    from tests.integration.agents.test_external_agents import FAKE, _config, _suite, _task

    def agents(version: str) -> str:
        command = json.dumps(["python3", str(FAKE), "--prompt-file", "{prompt_file}"])
        return f'[agents.fake]\nkind = "command"\ncommand = {command}\nversion = ["echo", "{version}"]\n'

    _config(tmp_path, agents("fake 1"))
    suite = _suite(tmp_path, [{**_task("plain", "fake"), "agent": None}])
    document = {"suite": "agents-suite", "variants": [{"id": "a", "agent": "fake"}, {"id": "b", "agent": "fake", "model": "m2"}]}  # fmt: skip
    (tmp_path / "compare.json").write_text(json.dumps(document))
    out = tmp_path / "out"
    with MockEndpoint() as endpoint:
        done = alisio(tmp_path, "eval", "variants", "agents-suite", "--suite-dir", suite, "--yes", "-k", "1",
                      "--variants", tmp_path / "compare.json", "--base-url", endpoint.base_url, "--allow-write",
                      "--allow-process", "--out", out)  # fmt: skip
        assert done.returncode == 0, done.stderr
        calls = len(endpoint.model_calls)
        _config(tmp_path, agents("fake 2"))
        stderr = _refused(tmp_path, "variants", "--resume", out)
        assert len(endpoint.model_calls) == calls  # the refused resume asked nothing
    assert "agent fake's version differs: fake 1 when the run started, fake 2 now" in stderr
