"""What names a run, and what a report leads with (issue 26, items 1, 6 and 7), through the CLI: a scripted run
is its own mode and its script a condition; the built-in agent is ``alisio <version>``; a report written
before the agent was recorded still loads, compares and says the agent is unknown; ``eval runs`` shows a run
in progress; report.html and the comparison page open with the answer; identical failures are one entry; an
``edit_file`` is a diff in the HTML transcript as in ``eval show``; ``make demo``'s compare is the summary
off a terminal; ``--json`` says JSON Lines where it prints them."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

from alisio.core.lab.reports.naming import script_digest
from tests.integration.helpers import (
    FIX,
    NOOP,
    alisio,
    make_suite,
    task,
    wait_until_sleeping,
    write_script,
)

ALISIO = Path(sys.executable).with_name("alisio")
ROOT = Path(__file__).resolve().parents[3]
VERSION = version("alisio")
OTHER_FIX = {"turns": [*FIX["turns"][:-1], {"text": "Fixed add, and said so differently."}]}


def _run(home: Path, suite: Path, script: Path, out: str, *args: str) -> subprocess.CompletedProcess[str]:
    ran = alisio(
        home, "eval", "run", "calc-suite", "--suite-dir", suite, "--yes", "--allow-write", "--script", script,
        "--out", home / out, *args,
    )  # fmt: skip
    assert ran.returncode in (0, 1), ran.stderr
    return ran


def _digest(home: Path, out: str) -> str:
    return str(json.loads((home / out / "report.json").read_text())["conditions"]["scriptHash"])


def test_a_scripted_run_is_its_own_mode_and_its_script_a_condition(home: Path) -> None:
    """Scripted runs read ``scripted`` (not ``scripted (live)``), name the built-in agent ``alisio <version>``
    and their script's digest; two different scripts compare as different, the same one twice does not."""
    suite = make_suite(home)
    one, other = write_script(home / "one.json", FIX), write_script(home / "other.json", OTHER_FIX)
    first = _run(home, suite, one, "a", "-k", "1")
    _run(home, suite, other, "b", "-k", "1")
    _run(home, suite, one, "c", "-k", "1")
    digest = _digest(home, "a")
    assert (
        re.fullmatch(r"[0-9a-f]{64}", digest)
        and digest != _digest(home, "b")
        and digest == _digest(home, "c")
    )
    headline = next(line for line in first.stderr.splitlines() if line.startswith("calc-suite 1.0.0: "))
    assert f", agent alisio {VERSION}, script {digest[:16]}, seed 0," in headline, headline
    markdown = (home / "a" / "report.md").read_text()
    assert markdown.startswith("# Eval report: calc-suite 1.0.0 (scripted)\n")
    for row in (
        f"| Agent | alisio {VERSION} (built-in) |",
        f"| Script | `{digest}` |",
        "| Mode | scripted |",
    ):
        assert row in markdown
    listed = alisio(home, "eval", "runs").stdout.splitlines()
    assert len(listed) == 4 and all("(live)" not in line for line in listed)
    row = next(line for line in listed if f"script {digest[:16]}" in line)
    assert re.search(rf"  alisio {re.escape(VERSION)}, script {digest[:16]}  scripted  ", row), row
    differs = alisio(home, "eval", "compare", home / "a", home / "b", "--format", "summary")
    assert differs.returncode == 0, differs.stderr
    assert f"warning: script differs: {digest} -> {_digest(home, 'b')}" in differs.stdout
    same = alisio(home, "eval", "compare", home / "a", home / "c", "--format", "summary")
    assert same.returncode == 0 and "differs" not in same.stdout, same.stdout


def test_a_report_without_the_agent_loads_compares_and_says_it_is_unknown(home: Path) -> None:
    """report.json written before the agent and the script were recorded: ``eval runs``, ``eval show`` and
    ``eval compare`` read it, and say the agent is unknown instead of guessing or failing."""
    suite = make_suite(home)
    script = write_script(home / "fix.json", FIX)
    _run(home, suite, script, "new", "-k", "1")
    _run(home, suite, script, "old", "-k", "1")
    path = home / "old" / "report.json"
    report = json.loads(path.read_text())
    del report["conditions"]["agent"], report["conditions"]["scriptHash"]
    path.write_text(json.dumps(report))
    listed = alisio(home, "eval", "runs", "--json")
    rows = {row["directory"]: row for row in json.loads(listed.stdout)["runs"]}
    assert rows[str(home / "old")]["agent"] == "unknown"
    assert rows[str(home / "new")]["agent"].startswith(f"alisio {VERSION}, script ")
    shown = alisio(home, "eval", "show", home / "old")
    assert shown.returncode == 0 and shown.stdout.startswith(
        "Agent: unknown (not recorded)\nfix-add rep 0: pass"
    )
    compared = alisio(home, "eval", "compare", home / "old", home / "new", "--format", "summary")
    assert compared.returncode == 0, compared.stderr
    assert f"warning: agent differs: unknown (not recorded) -> alisio {VERSION} (built-in)" in compared.stdout
    assert "warning: script differs: not recorded -> " in compared.stdout
    page = alisio(home, "eval", "compare", home / "old", home / "new", "--html", home / "c.html")
    assert page.returncode == 0, page.stderr
    assert (
        '<tr class="differs"><th>Agent</th><td>unknown (not recorded)</td>' in (home / "c.html").read_text()
    )


FIRST_QUICK_THEN_SLOW = "test -e ../go || { touch ../go; exit 0; }; echo $$ > ../sleeper; exec sleep 60"


def test_eval_runs_shows_a_run_in_progress_then_one_stopped_without_a_report(
    home: Path, tmp_path: Path
) -> None:
    """While a command writes a run, ``eval runs`` says ``running (1/3 done)``, never "unreadable report", and
    names its agent from plan.json; killed before its report, the run reads ``stopped (1/3 done, no report:
    ...)``."""
    suite = make_suite(home, task("slow", policy={"mode": "auto", "allow": ["write", "process"]}))
    slow = {"turns": [{"toolCalls": [{"name": "bash", "arguments": {"command": FIRST_QUICK_THEN_SLOW}}]},
                      {"text": "done"}]}  # fmt: skip
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
    try:
        deadline = time.monotonic() + 60
        while not any(p.is_file() and p.stat().st_size > 0 for p in home.glob("data/eval/*/runs.jsonl")):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        sleeper = wait_until_sleeping(temp / "sleeper", process)
        listed = alisio(home, "eval", "runs")
        assert listed.returncode == 0, listed.stderr
        (row,) = listed.stdout.splitlines()[1:]
        assert "calc-suite 1.0.0" in row and "scripted" in row and "running (1/3 done)" in row, row
        agent = f"alisio {VERSION}, script {script_digest([('', script.read_bytes())])[:16]}"
        assert agent in row, row  # named from plan.json, as the report will name it
        assert "running (1/3 done)" in alisio(home, "eval", "runs", "--suite", "calc-suite").stdout
        (data,) = json.loads(alisio(home, "eval", "runs", "--json").stdout)["runs"]
        assert (data["state"], data["done"], data["planned"], data["readable"]) == ("running", 1, 3, False)
        assert data["agent"] == agent
    finally:
        process.kill()
        process.communicate(timeout=30)
    os.kill(sleeper, signal.SIGKILL)  # the run's own command, orphaned by the kill
    (row,) = alisio(home, "eval", "runs").stdout.splitlines()[1:]
    assert "stopped (1/3 done, no report: eval run --resume continues it)" in row and agent in row, row


def test_report_html_leads_with_the_answer_and_groups_identical_failures(home: Path) -> None:
    """report.html opens with the answer (the suite rate and its interval, the runs, what made them), then the
    tasks, the conditions after; three runs failing the same way are one entry in report.md and report.html."""
    suite = make_suite(home)
    _run(home, suite, write_script(home / "noop.json", NOOP), "out", "-k", "3")
    page = (home / "out" / "report.html").read_text()
    answer = re.search(r'<p class="answer" id="answer">([^<]*)</p>', page)
    assert answer is not None
    assert html.unescape(answer.group(1)) == (
        "0.0% [0.0%, 56.1%] suite success rate over 1 task: 0 of 3 judged runs passed; model scripted, agent "
        f"alisio {VERSION}, script {_digest(home, 'out')[:16]}, scripted."
    )
    assert page.index('id="answer"') < page.index("<h2>Tasks</h2>") < page.index("<h2>Conditions</h2>")
    failing = re.findall(r'<ul class="failing" id="failing">(.*?)</ul>', page, re.DOTALL)[0]
    assert (
        failing.count("<li") == 1
        and "<b>fix-add, 3 runs: fail: check: exit 1 (expected 0); stdout: add is wrong</b>" in failing
    )
    assert failing.count('href="#run-fix-add-') == 3
    markdown = (home / "out" / "report.md").read_text()
    assert markdown.count("\n### ") == 1
    assert (
        "### fix-add, 3 runs: fail: check: exit 1 (expected 0); stdout: add is wrong\n\nRuns: fix-add rep 0, 1, 2.\n"
        in markdown
    )
    assert (
        markdown.count("check: exit 1 (expected 0); stdout: add is wrong") == 2
    )  # the heading, and the detail once


def test_an_edit_shows_as_the_same_diff_in_report_html_as_in_eval_show(home: Path) -> None:
    """The HTML transcript of a run that edited a file shows the edit as the unified diff ``eval show`` prints,
    numbered by the file's lines, the removed and added lines marked."""
    suite = make_suite(home)
    _run(home, suite, write_script(home / "fix.json", FIX), "out", "-k", "1")
    shown = alisio(home, "eval", "show", home / "out").stdout.splitlines()
    start = shown.index("> edit_file") + 1
    end = next(i for i in range(start, len(shown)) if shown[i].startswith("< "))
    diff = [line.removeprefix("    ") for line in shown[start:end]]
    assert diff == ["--- a/src/calc.py", "+++ b/src/calc.py", "@@ -2 +2 @@", "-a - b", "+a + b"]
    page = (home / "out" / "report.html").read_text()
    block = re.search(r'<pre class="diff">(.*?)</pre>', page, re.DOTALL)
    assert block is not None
    assert html.unescape(re.sub(r"<[^>]+>", "", block.group(1))).splitlines() == diff
    assert '<span class="del">-a - b</span>' in block.group(
        1
    ) and '<span class="add">+a + b</span>' in block.group(1)


def test_make_demo_prints_the_short_compare_summary_when_not_on_a_terminal(home: Path) -> None:
    """The compare line of ``make demo``, run as it runs it (its output not a terminal), prints the verdict
    table and the gate, not the whole comparison.md."""
    if shutil.which("make") is None:
        import pytest

        pytest.skip("make is not installed")
    planned = subprocess.run(["make", "-n", "demo"], cwd=ROOT, capture_output=True, text=True, check=True)
    line = next(line for line in planned.stdout.splitlines() if "/alisio eval compare" in line)
    args = line.split("/alisio ", 1)[1].split()
    done = alisio(home, *args, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Comparison: synthetic-example 1.0.0\n")
    assert "Gate: none" in done.stdout and "## Limits" not in done.stdout
    assert re.search(r"^task +verdict +baseline +candidate +change$", done.stdout, re.MULTILINE)


def test_json_help_says_json_lines_where_the_command_prints_them() -> None:
    """``--json`` of eval run, variants, record and show, and of alisio run, prints JSON Lines and says so;
    eval compare's one document says JSON."""
    for command in (("eval", "run"), ("eval", "variants"), ("eval", "record"), ("eval", "show"), ("run",)):
        text = " ".join(alisio(None, *command, "--help").stdout.split())
        assert "Machine-readable JSON Lines on stdout" in text, command
    text = " ".join(alisio(None, "eval", "compare", "--help").stdout.split())
    assert "Machine-readable JSON on stdout" in text
