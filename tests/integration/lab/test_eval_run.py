"""``alisio eval run`` and ``alisio eval list`` end to end: the installed command on suites built in tmp_path,
with the scripted provider (``--script``) and against a real local SSE server."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from alisio.core.lab.runs.records import RunStatus
from alisio.shell.lab.directory import claim_run_dir, run_id_for
from alisio.shell.lab.suite_choice import NO_BUNDLED, bundled_suites_root
from tests.integration.helpers import (
    ALISIO,
    BUGGY,
    FIX,
    NOOP,
    RECORD,
    REPORT,
    alisio,
    eval_run,
    make_suite,
    read_report,
    read_runs,
    run_dirs,
    task,
    wait_until_sleeping,
    write_script,
)
from tests.integration.sse_server import Reply, SseServer

# --- judged outcomes -------------------------------------------------------------------------------------


def test_a_script_that_fixes_the_bug_passes_five_of_five(home: Path) -> None:
    """k = 5, every run fixes add: 5/5 with the Wilson interval [56.6%, 100%], exit 0, files in <dataDir>/eval."""
    suite = make_suite(home)
    result = eval_run(home, suite, "--k", "5", "--allow-write", script=write_script(home / "fix.json", FIX))
    assert result.returncode == 0, result.stderr
    (directory,) = run_dirs(home)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z", directory.name)
    assert {p.name for p in directory.iterdir()} == {
        "report.json",
        "report.md",
        "report.html",
        "runs.jsonl",
        "plan.json",
        "runs",
    }
    records = read_runs(directory)
    assert sorted(r.repetition for r in records) == [0, 1, 2, 3, 4]
    assert all(r.status is RunStatus.PASS for r in records)
    assert all(r.seed == r.repetition for r in records)
    assert records[0].measured.input_tokens == 350 and records[0].measured.usage_complete
    report = read_report(directory)
    (fix,) = report.tasks
    assert (fix.passes, fix.judged, fix.success_rate) == (5, 5, 1.0)
    assert fix.interval is not None
    assert round(fix.interval.low, 3) == 0.566 and fix.interval.high == 1.0
    assert fix.pass_at_k is True and fix.pass_hat_k is True and not fix.low_power
    c = report.conditions
    assert (c.suite_id, c.k, c.seed, c.provider, c.model, c.mode) == (
        "calc-suite",
        5,
        0,
        "scripted",
        "scripted",
        "live",
    )
    assert c.run_id == directory.name and len(c.suite_hash) == 64 and len(c.config_hash) == 64
    assert "100.0% [56.6%, 100.0%]" in (directory / "report.md").read_text()
    lines = result.stderr.splitlines()
    assert (
        sum(bool(re.match(r"\[\d/5\] fix-add rep \d: pass \(3 turns, \d+\.\d s\)", line)) for line in lines)
        == 5
    )
    assert "100.0% [56.6%, 100.0%]" in result.stdout  # the results table is data: stdout
    assert f"report: {directory / 'report.md'}" in result.stderr
    assert "warning: suite calc-suite is not a bundled suite" in result.stderr


def test_a_script_that_does_nothing_fails(home: Path) -> None:
    """The model changes nothing: the check fails, the run is fail (judged), exit 0."""
    suite = make_suite(home)
    result = eval_run(home, suite, "--k", "1", "--allow-write", script=write_script(home / "noop.json", NOOP))
    assert result.returncode == 0, result.stderr
    (record,) = read_runs(run_dirs(home)[0])
    assert record.status is RunStatus.FAIL
    check = record.verifiers[0]
    assert (check.id, check.status) == ("check", "fail")
    assert "fix-add rep 0: fail (1 turn" in result.stderr


def test_a_tiny_turn_budget_is_budget_exceeded(home: Path) -> None:
    """maxTurns 1 with a three-turn fix: budget_exceeded with reason maxTurns, counted as judged, not passed."""
    suite = make_suite(home, task("fix-add", budget={"maxTurns": 1, "maxWallMs": 60000}))
    result = eval_run(home, suite, "--k", "2", "--allow-write", script=write_script(home / "fix.json", FIX))
    assert result.returncode == 0, result.stderr
    directory = run_dirs(home)[0]
    assert [(r.status, r.reason) for r in read_runs(directory)] == [
        (RunStatus.BUDGET_EXCEEDED, "maxTurns")
    ] * 2
    (fix,) = read_report(directory).tasks
    assert (fix.judged, fix.passes, fix.budget_exceeded, fix.success_rate) == (2, 0, 2, 0.0)
    assert "budget_exceeded maxTurns" in result.stderr


def test_json_prints_records_as_runs_finish_then_the_report(home: Path) -> None:
    """--json: k lines that decode as RunRecords, then one line that decodes as the Report."""
    suite = make_suite(home)
    result = eval_run(
        home, suite, "--k", "3", "--allow-write", "--json", script=write_script(home / "f.json", FIX)
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 4
    records = [RECORD.decode(line) for line in lines[:3]]
    assert {r.repetition for r in records} == {0, 1, 2}
    report = REPORT.decode(lines[3])
    assert report.summary.passes == 3
    by_repetition = sorted(records, key=lambda record: record.repetition)  # stdout: as runs finish
    assert by_repetition == sorted(read_runs(run_dirs(home)[0]), key=lambda record: record.repetition)


def test_out_writes_the_three_files_there(home: Path) -> None:
    """--out DIR: the three files go directly into DIR, nothing into the data directory; "1 run", not "1 runs"."""
    suite = make_suite(home)
    out = home / "my-report"
    result = eval_run(
        home, suite, "--k", "1", "--allow-write", "--out", str(out), script=write_script(home / "f.json", FIX)
    )
    assert result.returncode == 0, result.stderr
    assert {p.name for p in out.iterdir()} == {
        "report.json",
        "report.md",
        "report.html",
        "runs.jsonl",
        "plan.json",
        "runs",
    }
    assert "calc-suite 1.0.0: 1 task x k=1 = 1 run (scripted" in result.stderr
    assert run_dirs(home) == []
    assert read_report(out).summary.passes == 1


def test_rates_give_an_estimated_cost(home: Path) -> None:
    """--input-rate and --output-rate together: estimated cost = tokens x rate / 1e6 (350 in, 27 out)."""
    suite = make_suite(home)
    result = eval_run(
        home, suite, "--k", "1", "--allow-write", "--input-rate", "2", "--output-rate", "10",
        script=write_script(home / "f.json", FIX),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = read_report(run_dirs(home)[0])
    assert report.conditions.rates is not None
    assert report.summary.estimated is not None
    assert report.summary.estimated.cost_usd == pytest.approx((350 * 2 + 27 * 10) / 1e6)


def test_script_directory_per_task(home: Path) -> None:
    """--script DIR plays <task-id>.json for each task: the fixing task passes, the idle one fails."""
    suite = make_suite(home, task("good"), task("idle"))
    scripts = home / "scripts"
    scripts.mkdir()
    write_script(scripts / "good.json", FIX)
    write_script(scripts / "idle.json", NOOP)
    result = eval_run(home, suite, "--k", "2", "--allow-write", script=scripts)
    assert result.returncode == 0, result.stderr
    by_task = {t.task_id: t for t in read_report(run_dirs(home)[0]).tasks}
    assert (by_task["good"].passes, by_task["idle"].fails) == (2, 2)


def test_tasks_selects_and_seed_orders(home: Path) -> None:
    """--tasks runs only the named task; the same --seed gives the same run order."""
    suite = make_suite(home, task("one"), task("two"), task("three"))
    script = write_script(home / "noop.json", NOOP)
    orders = []
    for _ in range(2):
        result = eval_run(
            home,
            suite,
            "--k",
            "2",
            "--seed",
            "7",
            "--tasks",
            "three,calc-suite/one",
            "--allow-write",
            "--json",
            "-j",
            "1",  # stdout gets records as runs finish: one at a time, they finish in plan order
            script=script,
        )
        assert result.returncode == 0, result.stderr
        records = [RECORD.decode(line) for line in result.stdout.splitlines()[:-1]]
        orders.append([(r.task_id, r.repetition) for r in records])
        assert all(r.seed == 7 + r.repetition for r in records)
    assert orders[0] == orders[1]
    assert sorted(orders[0]) == [("one", 0), ("one", 1), ("three", 0), ("three", 1)]


# --- refused before the first run ------------------------------------------------------------------------


def test_an_ungranted_effect_rejects_the_task_before_any_run(home: Path) -> None:
    """A task asking for process without --allow-process: exit 1, the task and the flag named, nothing run."""
    suite = make_suite(
        home, task("fix-add"), task("needs-bash", policy={"mode": "auto", "allow": ["write", "process"]})
    )
    result = eval_run(home, suite, "--allow-write", script=write_script(home / "f.json", FIX))
    assert result.returncode == 1
    assert "task needs-bash" in result.stderr and "--allow-process" in result.stderr
    assert "Traceback" not in result.stderr
    assert run_dirs(home) == [] and result.stdout == ""


def test_mode_full_needs_allow_suite_full(home: Path) -> None:
    """A task with mode full is rejected without --allow-suite-full and runs with it."""
    suite = make_suite(home, task("fix-add", policy={"mode": "full"}))
    script = write_script(home / "f.json", FIX)
    refused = eval_run(home, suite, "--k", "1", "--allow-write", script=script)
    assert refused.returncode == 1 and "--allow-suite-full" in refused.stderr
    accepted = eval_run(home, suite, "--k", "1", "--allow-write", "--allow-suite-full", script=script)
    assert accepted.returncode == 0, accepted.stderr


def test_read_only_rejects_a_writing_task(home: Path) -> None:
    """--read-only with a task that asks for write: rejected before the first run, saying --read-only denies it."""
    suite = make_suite(home)
    result = eval_run(home, suite, "--allow-write", "--read-only", script=write_script(home / "f.json", FIX))
    assert result.returncode == 1 and "which --read-only denies" in result.stderr


def test_a_suite_dir_without_yes_and_without_a_terminal_is_refused(home: Path) -> None:
    """--suite-dir is third-party code: without a terminal and without --yes, exit 1 and nothing runs."""
    suite = make_suite(home)
    script = write_script(home / "f.json", FIX)
    result = alisio(
        home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--allow-write", "--script", str(script)
    )
    assert result.returncode == 1
    assert "warning:" in result.stderr and "--yes" in result.stderr
    assert run_dirs(home) == []


def test_an_unknown_task_lists_the_known_ones(home: Path) -> None:
    """--tasks with an unknown id: exit 1, the id and the known task ids on stderr."""
    suite = make_suite(home, task("one"), task("two"))
    result = eval_run(
        home, suite, "--tasks", "one,nope", "--allow-write", script=write_script(home / "f.json", FIX)
    )
    assert result.returncode == 1
    assert "nope" in result.stderr and "known: one, two" in result.stderr


@pytest.mark.parametrize("command", ["run", "record", "variants"])
def test_a_task_named_twice_is_a_usage_error(home: Path, command: str) -> None:
    """--tasks one,calc-suite/one (eval run, record, variants): exit 1 naming the task, nothing run or written."""
    suite = make_suite(home, task("one"), task("two"))
    script = write_script(home / "f.json", FIX)
    extra: list[str] = []
    if command == "variants":
        compare = home / "compare.json"
        variants = [{"id": "a", "overrides": {}}, {"id": "b", "overrides": {"compaction.threshold": 0.6}}]
        compare.write_text(json.dumps({"suite": "calc-suite", "variants": variants}))
        extra = ["--variants", str(compare)]
    result = alisio(
        home, "eval", command, "calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write",
        "--script", str(script), "--tasks", "one,calc-suite/one", *extra,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "--tasks names one more than once" in result.stderr
    assert "Traceback" not in result.stderr
    assert run_dirs(home) == [] and not (suite / "cassettes").exists()


def test_an_unknown_suite_lists_the_known_ones(home: Path) -> None:
    """A suite name that matches nothing: exit 1 naming it and the suites found."""
    make_suite(home)
    result = alisio(home, "eval", "run", "nope", "--suite-dir", str(home), "--yes")
    assert result.returncode == 1
    assert "no suite 'nope'" in result.stderr and "calc-suite" in result.stderr


def test_an_invalid_suite_names_the_field(home: Path) -> None:
    """A suite whose task has no prompt: exit 1 with the file, the task and the field."""
    suite = make_suite(home)
    document = json.loads((suite / "suite.json").read_text())
    del document["tasks"][0]["prompt"]
    (suite / "suite.json").write_text(json.dumps(document))
    result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes")
    assert result.returncode == 1
    assert "suite.json" in result.stderr and "task fix-add" in result.stderr and "prompt" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mode", "replay"], "--script plays a scripted provider in live mode"),
        (["--input-rate", "1"], "--input-rate and --output-rate go together"),
        (["--k", "0"], "--k"),
        (["--cassette-dir", "x"], "--cassette-dir"),
    ],
)
def test_usage_errors_exit_1(home: Path, args: list[str], message: str) -> None:
    """Replay with --script, one rate alone, k = 0, a cassette dir in live mode: exit 1 with one message."""
    suite = make_suite(home)
    result = eval_run(home, suite, "--allow-write", *args, script=write_script(home / "f.json", FIX))
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr
    assert run_dirs(home) == []


# --- infrastructure errors -------------------------------------------------------------------------------


def test_an_unreachable_provider_makes_error_runs_and_exit_1(home: Path) -> None:
    """Nothing listens on port 9: the run ends error (provider_network), the report is still written, exit 1."""
    suite = make_suite(home)
    result = eval_run(
        home, suite, "--k", "1", "--allow-write", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"
    )
    assert result.returncode == 1
    (record,) = read_runs(run_dirs(home)[0])
    assert (record.status, record.reason) == (RunStatus.ERROR, "provider_network")
    assert record.errors
    report = read_report(run_dirs(home)[0])
    assert (report.summary.errored, report.summary.judged) == (1, 0)
    assert report.conditions.provider == "openai_compat" and report.conditions.model == "m"
    assert "error provider_network" in result.stderr


def test_a_fixture_git_without_git_is_an_error_run(home: Path, tmp_path: Path) -> None:
    """fixtureGit with no git on PATH: the run is error (fixture_git), the report is written, exit 1."""
    suite = make_suite(home, task("fix-add", fixtureGit=True))
    script = write_script(home / "f.json", FIX)
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(
        ALISIO_CONFIG_HOME=str(home / "config"),
        ALISIO_DATA_HOME=str(home / "data"),
        PATH=str(tmp_path / "empty"),
    )
    result = subprocess.run(
        [str(ALISIO), "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--k", "1",
         "--allow-write", "--script", str(script)],
        capture_output=True, text=True, timeout=60, check=False, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    (record,) = read_runs(run_dirs(home)[0])
    assert (record.status, record.reason) == (RunStatus.ERROR, "fixture_git")
    assert "git" in record.errors[0]


FIRST_QUICK_THEN_SLOW = "test -e ../go || { touch ../go; exit 0; }; echo $$ > ../sleeper; exec sleep 30"
"""The first run returns at once (and leaves a marker next to its workspace); later runs sleep."""


@pytest.mark.parametrize(
    ("sig", "code", "why"), [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM")]
)
def test_ctrl_c_writes_the_report_of_the_finished_runs(
    home: Path, tmp_path: Path, sig: signal.Signals, code: int, why: str
) -> None:
    """SIGINT (or SIGTERM) during the second run: exit 130 (143), the first run reported, no temporary
    workspace left behind, the running command's process stopped."""
    suite = make_suite(home, task("slow", policy={"mode": "auto", "allow": ["write", "process"]}))
    slow = {
        "turns": [
            {"toolCalls": [{"name": "bash", "arguments": {"command": FIRST_QUICK_THEN_SLOW}}]},
            {"text": "done"},
        ]
    }  # fmt: skip
    script = write_script(home / "slow.json", slow)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(ALISIO_CONFIG_HOME=str(home / "config"), ALISIO_DATA_HOME=str(home / "data"), TMPDIR=str(temp))
    process = subprocess.Popen(
        [str(ALISIO), "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--k", "3", "-j", "1",
         "--allow-write", "--allow-process", "--script", str(script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not any(p.is_file() and p.stat().st_size > 0 for p in home.glob("data/eval/*/runs.jsonl")):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    wait_until_sleeping(temp / "sleeper", process)  # the second run is inside its sleep
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == code, stderr  # 128 + the signal, as alisio run
    assert f"interrupted ({why}): the report of the 1 finished runs is written" in stderr
    assert "Traceback" not in stderr
    sleeper = int((temp / "sleeper").read_text())
    assert (
        not Path(f"/proc/{sleeper}").exists() or "Z" in Path(f"/proc/{sleeper}/stat").read_text().split()[2]
    )
    directory = run_dirs(home)[0]
    assert len(read_runs(directory)) == 1
    report = read_report(directory)
    assert report.summary.runs == 1
    assert (report.interrupted, report.planned_runs) == (True, 3)
    notice = f"> **Interrupted after 1 of 3 planned runs ({why}): tasks that never ran are missing.**"
    assert notice in (directory / "report.md").read_text()
    compared = alisio(home, "eval", "compare", str(directory), str(directory))
    assert compared.returncode == 0, compared.stderr
    assert "- the baseline was interrupted after 1 of 3 planned runs" in compared.stdout
    assert "- the candidate was interrupted after 1 of 3 planned runs" in compared.stdout
    assert [p.name for p in temp.iterdir() if p.name.startswith("alisio-")] == []


# --- a real provider over HTTP -----------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[SseServer]:
    with SseServer() as running:
        yield running


def _tool_reply(name: str, arguments: dict[str, object], call_id: str) -> Reply:
    call = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return Reply.sse(
        {
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}, "finish_reason": None}
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 90, "completion_tokens": 11, "total_tokens": 101}},
    ).split(seed=3, max_piece=17)


def test_a_live_run_against_a_local_sse_server_passes(home: Path, server: SseServer) -> None:
    """One live run over real HTTP/SSE: read, edit, answer; the run passes with the server's usage."""
    server.enqueue(
        _tool_reply("read_file", {"path": "src/calc.py"}, "call_1"),
        _tool_reply(
            "edit_file", {"path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"}, "call_2"
        ),
        Reply.sse(
            {
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": "Fixed."}, "finish_reason": None}
                ]
            },
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 95, "completion_tokens": 3, "total_tokens": 98}},
        ),
    )
    suite = make_suite(home)
    result = eval_run(
        home, suite, "--k", "1", "--allow-write", "--base-url", server.base_url, "--model", "m-live"
    )
    assert result.returncode == 0, result.stderr
    (record,) = read_runs(run_dirs(home)[0])
    assert record.status is RunStatus.PASS
    assert (record.measured.input_tokens, record.measured.output_tokens) == (275, 25)
    assert len(server.requests) == 3
    assert server.requests[0].json()["model"] == "m-live"
    assert "seed" not in server.requests[0].json()
    assert read_report(run_dirs(home)[0]).conditions.model == "m-live"


# --- eval list ---------------------------------------------------------------------------------------------


def test_list_shows_bundled_and_suite_dir_suites(home: Path) -> None:
    """eval list: the bundled example suite, and the --suite-dir one with its version and task count."""
    make_suite(home / "suites", task("one"), task("two"))
    result = alisio(home, "eval", "list", "--suite-dir", str(home / "suites"))
    assert result.returncode == 0, result.stderr
    assert re.search(r"^example  1\.0\.0  1 task  ", result.stdout, re.M)
    assert re.search(r"^calc-suite  1\.0\.0  2 tasks  Fix a wrong add\.", result.stdout, re.M)


def test_list_shows_a_broken_suite_with_its_error(home: Path) -> None:
    """A broken suite is listed with its error and does not hide a valid one; --json carries every error."""
    make_suite(home / "suites")
    broken = home / "suites" / "broken"
    broken.mkdir()
    (broken / "suite.json").write_text('{"schemaVersion": 1}')
    text = alisio(home, "eval", "list", "--suite-dir", str(home / "suites"))
    assert text.returncode == 0
    assert re.search(r"^broken  invalid: .*suite\.json", text.stdout, re.M)
    assert "calc-suite" in text.stdout
    data = json.loads(alisio(home, "eval", "list", "--suite-dir", str(home / "suites"), "--json").stdout)
    rows = {row.get("suiteId", row.get("directory")): row for row in data["suites"]}
    assert rows["broken"]["valid"] is False and rows["broken"]["errors"]
    assert rows["calc-suite"] == {
        "suiteId": "calc-suite",
        "suiteVersion": "1.0.0",
        "tasks": 1,
        "description": "Fix a wrong add.",
        "source": "suite-dir",
        "path": str(home / "suites" / "calc-suite"),
        "valid": True,
    }


def test_list_with_a_missing_suite_dir_exits_1(home: Path) -> None:
    """--suite-dir that does not exist: exit 1, one line naming it."""
    result = alisio(home, "eval", "list", "--suite-dir", str(home / "nowhere"))
    assert result.returncode == 1 and "nowhere" in result.stderr


def test_bundled_suites_only_from_a_checkout(tmp_path: Path) -> None:
    """The checkout's suites/ is found from src/shell/lab; an installed package has none (and says how to fix it)."""
    root = bundled_suites_root()
    assert root is not None and (root / "example" / "suite.json").is_file()
    installed = tmp_path / "lib" / "python3.11" / "site-packages" / "alisio" / "shell" / "lab" / "pipeline.py"
    assert bundled_suites_root(installed) is None
    assert "pass --suite-dir" in NO_BUNDLED


# --- workspaces, run directories, confirmation -----------------------------------------------------------


def test_keep_leaves_each_workspace_and_prints_its_path(home: Path) -> None:
    """--keep: each run's temporary copy stays, its path is printed, and it holds the agent's fix."""
    suite = make_suite(home)
    result = eval_run(
        home, suite, "--k", "2", "--allow-write", "--keep", script=write_script(home / "f.json", FIX)
    )
    assert result.returncode == 0, result.stderr
    kept = [
        Path(line.split(": ", 1)[1])
        for line in result.stderr.splitlines()
        if line.startswith("  kept fix-add rep ")
    ]
    assert len(kept) == 2 and kept[0] != kept[1]
    try:
        for path in kept:
            assert (path / "src" / "calc.py").read_text() == BUGGY.replace("a - b", "a + b")
        assert (suite / "fixtures" / "calc" / "src" / "calc.py").read_text() == BUGGY
    finally:
        for path in kept:
            shutil.rmtree(path, ignore_errors=True)


def test_a_taken_run_id_gets_a_suffix(tmp_path: Path) -> None:
    """Two commands started in the same millisecond get distinct run directories (-2 appended)."""
    from datetime import UTC, datetime

    run_id = run_id_for(datetime(2026, 10, 13, 12, 0, 0, 7000, tzinfo=UTC))
    assert run_id == "2026-10-13T12-00-00-007Z"
    first = claim_run_dir(tmp_path, run_id, {})
    second = claim_run_dir(tmp_path, run_id, {})
    assert first == (run_id, tmp_path / "eval" / run_id)
    assert second == (f"{run_id}-2", tmp_path / "eval" / f"{run_id}-2")


def test_a_missing_per_task_script_is_named(home: Path) -> None:
    """--script DIR without <task-id>.json for a selected task: exit 1 naming the file, nothing run."""
    suite = make_suite(home, task("good"), task("unscripted"))
    scripts = home / "scripts"
    scripts.mkdir()
    write_script(scripts / "good.json", FIX)
    result = eval_run(home, suite, "--allow-write", script=scripts)
    assert result.returncode == 1 and "unscripted.json" in result.stderr
    assert run_dirs(home) == []


def confirm_on_terminal(home: Path, answer: bytes, *args: str) -> tuple[int, str]:
    """Run ``alisio eval run`` with stdin and stderr on a pseudo-terminal, answering the confirmation."""
    import pty
    import select

    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(ALISIO_CONFIG_HOME=str(home / "config"), ALISIO_DATA_HOME=str(home / "data"))
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [str(ALISIO), "eval", "run", *args], stdin=slave, stderr=slave, stdout=subprocess.PIPE, env=env
    )
    os.close(slave)
    seen = b""
    answered = False
    while True:
        ready, _, _ = select.select([master], [], [], 30)
        if not ready:
            process.kill()
            raise AssertionError(f"no output from the terminal: {seen!r}")
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
        if not answered and b"[y/N]" in seen:
            os.write(master, answer)
            answered = True
    assert process.stdout is not None
    process.stdout.read()
    code = process.wait(timeout=30)
    os.close(master)
    return code, seen.decode(errors="replace")


@pytest.mark.parametrize(("answer", "code", "runs"), [(b"y\n", 0, 1), (b"\n", 1, 0)])
def test_on_a_terminal_a_suite_dir_suite_is_confirmed(
    home: Path, answer: bytes, code: int, runs: int
) -> None:
    """On a terminal a --suite-dir suite is put to the user: y runs it, Enter (the default, No) runs nothing."""
    suite = make_suite(home)
    script = write_script(home / "f.json", FIX)
    returncode, terminal = confirm_on_terminal(
        home,
        answer,
        "calc-suite",
        "--suite-dir",
        str(suite),
        "--k",
        "1",
        "--allow-write",
        "--script",
        str(script),
    )
    assert returncode == code, terminal
    assert "not sandboxed" in terminal
    assert len(run_dirs(home)) == runs


@pytest.mark.parametrize("command", ["run", "variants", "record", "ci"])
def test_an_unwritable_out_is_one_line_before_any_run(home: Path, command: str) -> None:
    """--out (--cassette-dir for record) under a regular file: exit 1, one line, no traceback, nothing written."""
    suite = make_suite(home, task("fix-add", policy={"mode": "auto", "allow": ["write"]}))
    script = write_script(home / "f.json", FIX)
    blocker = home / "a-file"
    blocker.write_text("")
    target = str(blocker / "report")
    common = ["--suite-dir", str(suite), "--yes"]
    args = {
        "run": [
            "run",
            "calc-suite",
            *common,
            "--allow-write",
            "--script",
            str(script),
            "--k",
            "1",
            "--out",
            target,
        ],
        "variants": [
            "variants",
            "calc-suite",
            *common,
            "--allow-write",
            "--script",
            str(script),
            "--k",
            "1",
            "--variants",
            str(home / "compare.json"),
            "--out",
            target,
        ],
        "record": [
            "record",
            "calc-suite",
            *common,
            "--allow-write",
            "--script",
            str(script),
            "--cassette-dir",
            target,
        ],
        "ci": ["ci", *common, "--out", target],
    }[command]
    (home / "compare.json").write_text(
        json.dumps(
            {
                "suite": "calc-suite",
                "variants": [
                    {"id": "a", "overrides": {}},
                    {"id": "b", "overrides": {"compaction.threshold": 0.6}},
                ],
            }
        )
    )
    result = alisio(home, "eval", *args)
    assert result.returncode == 1, result.stderr
    flag = "--cassette-dir" if command == "record" else "--out"
    assert result.stderr.splitlines()[-1] == (
        f"alisio eval {command}: {flag} {target}: {blocker} is not a directory; nothing was run"
    )
    assert "Traceback" not in result.stderr and "[1/" not in result.stderr
    assert run_dirs(home) == [] and blocker.read_text() == ""
    assert not (suite / "cassettes").exists()
