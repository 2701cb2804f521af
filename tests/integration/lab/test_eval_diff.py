"""``alisio eval diff``: two runs of the built-in agent (scripted) and the repetitions of one task (a stand-in
model playing a different script per run), through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.integration.helpers import FIX, alisio, make_suite, read_runs, write_script
from tests.integration.script_model import script_server

READ = {"name": "read_file", "arguments": {"path": "src/calc.py"}}
WRONG = {
    "turns": [
        {"text": "I'll read it.", "toolCalls": [READ], "usage": {"inputTokens": 100, "outputTokens": 10}},
        {
            "text": "It must multiply.",
            "toolCalls": [
                {
                    "name": "edit_file",
                    "arguments": {"path": "src/calc.py", "old_string": "a - b", "new_string": "a * b"},
                }
            ],
            "usage": {"inputTokens": 150, "outputTokens": 20},
        },
        {"text": "Done: it multiplies now.", "usage": {"inputTokens": 170, "outputTokens": 5}},
    ]
}
DETOUR = {
    "turns": [
        {"text": "Look around first.", "toolCalls": [{"name": "list_dir", "arguments": {"path": "."}}]},
        {"text": "Nothing to change, I think.", "usage": {"inputTokens": 90, "outputTokens": 9}},
    ]
}


def _run(home: Path, name: str, script: dict[str, Any], k: int = 1) -> Path:
    suite = home / "calc-suite" if (home / "calc-suite").is_dir() else make_suite(home)
    out = home / name
    result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", str(k), "-j", "1",
                    "--allow-write", "--script", str(write_script(home / f"{name}.json", script)), "--out", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out


def test_two_runs_name_their_first_differing_call_its_arguments_and_the_words_before_it(home: Path) -> None:
    """A passing run against a failing one: the same read_file, then edit_file with another new_string. The
    output names step 2, both calls, the argument that differs, each side's text before it, the steps with
    their token deltas, and how each run ended; --json holds the same."""
    good, bad = _run(home, "good", FIX), _run(home, "bad", WRONG)
    result = alisio(home, "eval", "diff", str(good), str(bad))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"A: {good} fix-add rep 0: pass"
    assert lines[1].startswith(f"B: {bad} fix-add rep 0: fail (check: exit 1")
    assert lines[3] == "first divergence at step 2: A edit_file, B edit_file"
    assert lines[4] == '  A: edit_file {"new_string":"a + b","old_string":"a - b","path":"src/calc.py"}'
    assert lines[5] == '  B: edit_file {"new_string":"a * b","old_string":"a - b","path":"src/calc.py"}'
    assert lines[6:8] == ["  arguments that differ:", '    new_string: "a + b" -> "a * b"']
    assert lines[8] == "  model text before A's call: (none: the model said nothing before it)"
    assert lines[9] == "  model text before B's call (turn 2): It must multiply."
    same = next(line for line in lines if line.startswith("  =   1   1"))
    assert 'read_file {"path":"src/calc.py"}' in same
    assert same.split()[-9:-6] == ["110", "110", "+0"]  # both had spent 100 + 10 tokens at step 1
    changed = next(line for line in lines if line.startswith("  ~   2   2"))
    assert changed.split()[-9:-6] == ["242", "280", "+38"]  # FIX: 110 + 132; WRONG: 110 + 170
    assert "  A: completed after 3 turns, 2 tool calls, 377 tokens" in result.stdout
    assert "  B: completed after 3 turns, 2 tool calls, 455 tokens" in result.stdout
    assert result.stdout.rstrip().endswith("Done: it multiplies now.")
    document = json.loads(alisio(home, "eval", "diff", str(good), str(bad), "--json").stdout)
    divergence = document["diff"]["divergence"]
    assert (divergence["stepA"], divergence["stepB"]) == (2, 2)
    assert divergence["changes"] == [{"name": "new_string", "a": '"a + b"', "b": '"a * b"'}]
    assert [row["kind"] for row in document["diff"]["rows"]] == ["same", "changed"]
    assert document["diff"]["rows"][1]["tokensDelta"] == 38
    assert (document["a"]["status"], document["b"]["status"]) == ("pass", "fail")


def test_a_run_that_stops_early_is_named_as_making_no_call(home: Path) -> None:
    """FIX against DETOUR: the first calls differ (read_file, list_dir), and the transcript files compare the
    same way as the runs (no verdict is known from a transcript alone)."""
    good, lost = _run(home, "good", FIX), _run(home, "lost", DETOUR)
    result = alisio(home, "eval", "diff", str(lost / "runs" / "fix-add" / "0.jsonl"), str(good / "runs" / "fix-add" / "0.jsonl"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "runs/fix-add/0.jsonl: no verdict (a transcript alone)" in result.stdout.splitlines()[0]
    assert "first divergence at step 1: A list_dir, B read_file" in result.stdout
    assert "  A: completed after 2 turns, 1 tool call" in result.stdout


def test_one_run_groups_its_repetitions_and_sets_a_passing_one_against_a_failing_one(home: Path) -> None:
    """k = 5 against a stand-in model playing FIX, WRONG, FIX, FIX, DETOUR: three groups (3 runs that
    passed, one that failed by multiplying, one that only looked), and the contrast takes the largest passing
    group's first run against the largest failing group's."""
    suite = make_suite(home)
    server, model = script_server([FIX, WRONG, DETOUR], [0, 1, 0, 0, 2])
    with server:
        out = home / "mixed"
        result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "5", "-j", "1",
                        "--allow-write", "--base-url", server.base_url, "--model", "m", "--out", str(out))  # fmt: skip
        assert result.returncode == 0, result.stderr
    assert model.runs == 5
    order = [record.repetition for record in read_runs(out)]  # plan order: run n played order[n]
    fixed = sorted(order[n] for n in (0, 2, 3))
    wrong, detour = order[1], order[4]
    diff = alisio(home, "eval", "diff", str(out))
    assert diff.returncode == 0, diff.stderr
    lines = diff.stdout.splitlines()
    assert lines[0] == f"fix-add in {out}: 5 runs, 3 trajectories"
    reps = ", ".join(map(str, fixed))
    assert lines[1] == f"  T1  3 runs (rep {reps}), 3 passed; 2 calls: read_file, edit_file"
    outline = {wrong: "2 calls: read_file, edit_file", detour: "1 call: list_dir"}
    second, third = sorted((wrong, detour))  # groups of one run: by their repetition
    assert lines[2] == f"  T2  1 run (rep {second}), 0 passed; {outline[second]}"
    assert lines[3] == f"  T3  1 run (rep {third}), 0 passed; {outline[third]}"
    assert f"passing rep {fixed[0]} against failing rep {second}:" in diff.stdout
    document = json.loads(alisio(home, "eval", "diff", str(out), "--json").stdout)
    assert [group["passed"] for group in document["groups"]] == [3, 0, 0]
    assert document["contrast"]["b"]["repetition"] == second


def test_report_html_names_the_first_divergence_of_a_task_with_mixed_outcomes(home: Path) -> None:
    """report.html of a run whose repetitions passed and failed: a "first divergence" line under the tasks,
    linking the passing run and the failing run the diff contrasts, with the eval diff command."""
    suite = make_suite(home)
    server, _ = script_server([FIX, WRONG], [0, 1])
    with server:
        out = home / "mixed"
        result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "2", "-j", "1",
                        "--allow-write", "--base-url", server.base_url, "--model", "m", "--out", str(out))  # fmt: skip
        assert result.returncode == 0, result.stderr
    order = [record.repetition for record in read_runs(out)]
    good, bad = order[0], order[1]
    page = (out / "report.html").read_text()
    line = next(part for part in page.split('<p class="divergence">')[1:]).split("</p>")[0]
    assert line.startswith("fix-add: first divergence at step 2: A edit_file, B edit_file. ")
    assert f'A: <a href="#run-fix-add-{good}">rep {good} (pass)</a>' in line
    assert f'B: <a href="#run-fix-add-{bad}">rep {bad} (fail)</a>' in line
    assert f"alisio eval diff {out} --task fix-add --rep {good} --rep {bad}" in line
    assert f'id="run-fix-add-{good}"' in page and f'id="run-fix-add-{bad}"' in page


def test_comparison_html_links_the_passing_and_failing_runs_where_they_part(home: Path) -> None:
    """eval compare GOOD BAD --html: the task's transcripts cell says where the baseline's passing run and
    the candidate's failing run part, each linked in its report.html."""
    good, bad = _run(home, "good", FIX), _run(home, "bad", WRONG)
    page = home / "comparison.html"
    result = alisio(home, "eval", "compare", str(good), str(bad), "--html", str(page))
    assert result.returncode == 0, result.stderr
    html = page.read_text()
    cell = html.split('<span class="divergence">')[1].split("</span>")[0]
    assert cell.startswith("first divergence at step 2: A edit_file, B edit_file: ")
    assert 'A <a href="good/report.html#run-fix-add-0">baseline rep 0 (pass)</a>' in cell
    assert 'B <a href="bad/report.html#run-fix-add-0">candidate rep 0 (fail)</a>' in cell
