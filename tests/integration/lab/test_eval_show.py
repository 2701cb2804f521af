"""Transcripts, ``eval show``, ``eval runs`` and the transcripts of ``eval export``, through the installed CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec

from alisio.core.harness.events import ProviderResponded, ToolCalled, ToolResulted
from alisio.core.lab.runs.transcript import decode_transcript
from tests.integration.helpers import FIX, alisio, make_suite, read_runs, write_script

WRONG = {
    "turns": [
        {"text": "Let me look.", "toolCalls": [{"name": "read_file", "arguments": {"path": "src/calc.py"}}]},
        {
            "toolCalls": [
                {
                    "name": "edit_file",
                    "arguments": {"path": "src/calc.py", "old_string": "a - b", "new_string": "a * b"},
                }
            ]
        },
        {"text": "Changed it to multiply. <script>alert(1)</script>"},
    ]
}


def _run(home: Path, script: dict[str, object], *args: str) -> Path:
    suite = make_suite(home)
    out = home / "out"
    result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "2", "-j", "1",
                    "--allow-write", "--script", str(write_script(home / "s.json", script)), "--out", str(out), *args)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out


def test_every_run_keeps_its_transcript(home: Path) -> None:
    """runs/<task>/<rep>.jsonl: the assistant's whole text, the tool calls with arguments, the results."""
    out = _run(home, WRONG)
    for record in read_runs(out):
        events = decode_transcript(
            (out / "runs" / record.task_id / f"{record.repetition}.jsonl").read_bytes()
        )
        texts = [e.text for e in events if isinstance(e, ProviderResponded)]
        assert texts == ["Let me look.", "", "Changed it to multiply. <script>alert(1)</script>"]
        calls = [e for e in events if isinstance(e, ToolCalled)]
        assert [c.name for c in calls] == ["read_file", "edit_file"]
        assert json.loads(calls[1].arguments)["new_string"] == "a * b"
        results = [e for e in events if isinstance(e, ToolResulted)]
        assert "def add(a, b):" in results[0].output_excerpt


def test_show_opens_the_first_failing_run_with_its_diff_and_verifiers(home: Path) -> None:
    """eval show DIR: the first failing run, its turns, the edit as a diff, then each verifier's detail."""
    out = _run(home, WRONG)
    result = alisio(home, "eval", "show", str(out))
    assert result.returncode == 0, result.stderr
    agent, script, *rest = result.stdout.splitlines(keepends=True)
    assert agent.startswith("Agent: alisio ") and agent.endswith(" (built-in)\n")
    assert script.startswith("Script: ")
    text = "".join(rest)
    assert text.startswith("fix-add rep 0: fail")
    assert "why: check: exit 1" in text
    assert "-    return a - b" not in text  # the diff is of what the edit replaced, not the whole file
    assert "--- a/src/calc.py" in text and "-a - b" in text and "+a * b" in text
    assert "    @@ -2 +2 @@\n" in text  # the file's line (the edit is on line 2), not old_string's line 1
    assert "Changed it to multiply. <script>alert(1)</script>" in text
    assert "verifiers:" in text and "fail  check (command)" in text
    second = alisio(home, "eval", "show", str(out), "--task", "fix-add", "--rep", "1")
    assert second.stdout.splitlines()[2].startswith("fix-add rep 1: fail")
    events = alisio(home, "eval", "show", str(out), "--rep", "1", "--json")
    assert events.returncode == 0
    types = [json.loads(line)["type"] for line in events.stdout.splitlines()]
    assert (types[0], types[-1], types.count("tool_call")) == ("run_start", "run_end", 2)


def test_show_names_what_is_there_when_the_run_is_not(home: Path) -> None:
    """An unknown task or repetition, or a run id that does not exist: one line naming what there is, exit 1."""
    out = _run(home, FIX)
    no_task = alisio(home, "eval", "show", str(out), "--task", "nope")
    assert no_task.returncode == 1 and "no task 'nope' in this report (tasks: fix-add)" in no_task.stderr
    no_rep = alisio(home, "eval", "show", str(out), "--task", "fix-add", "--rep", "7")
    assert no_rep.returncode == 1 and "has no rep 7 (reps: 0, 1)" in no_rep.stderr
    no_run = alisio(home, "eval", "show", "2020-01-01T00-00-00-000Z")
    assert no_run.returncode == 1 and "no run" in no_run.stderr and "Traceback" not in no_run.stderr


def test_runs_lists_the_stored_runs_newest_first(home: Path) -> None:
    """eval runs: one line per report of <dataDir>/eval, newest first, with suite, agent, model and mode
    (``scripted``, its own mode), and pass rate."""
    suite = make_suite(home)
    script = str(write_script(home / "f.json", FIX))
    for k in ("1", "2"):
        done = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", k,
                      "--allow-write", "--script", script)  # fmt: skip
        assert done.returncode == 0, done.stderr
    listed = alisio(home, "eval", "runs")
    assert listed.returncode == 0, listed.stderr
    header, *lines = listed.stdout.splitlines()
    assert header.split() == ["RUN", "ID", "SUITE", "AGENT", "MODEL", "(MODE)", "CREATED", "RESULT", "LABEL"]
    assert len(lines) == 2
    assert re.search(r"calc-suite 1\.0\.0  alisio \S+, script [0-9a-f]{16}  scripted  ", lines[0]), lines[0]
    assert "2/2 pass" in lines[0] and "1/1 pass" in lines[1] and "(live)" not in listed.stdout
    document = msgspec.json.decode(alisio(home, "eval", "runs", "--json").stdout)
    assert [run["judged"] for run in document["runs"]] == [2, 1]


def test_export_takes_a_directory_and_carries_the_transcripts(home: Path) -> None:
    """eval export DIR: the bundle holds each run's scrubbed transcript; a secret in one refuses the export."""
    out = _run(home, WRONG)
    bundle_path = home / "bundle.json"
    done = alisio(home, "eval", "export", str(out), "--out", str(bundle_path))
    assert done.returncode == 0, done.stderr
    bundle = json.loads(bundle_path.read_text())
    assert sorted(bundle["transcripts"]) == ["fix-add/0", "fix-add/1"]
    assert bundle["transcripts"]["fix-add/0"][0]["type"] == "run_start"
    assert str(home) not in bundle_path.read_text()  # absolute paths are placeholders
