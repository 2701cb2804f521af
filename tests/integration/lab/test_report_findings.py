"""Small findings of the real-model run (issue 31), each through the CLI:

- a failing run's section of report.md shows its incidents (a ``text_tool_call`` says why it did nothing);
- ``eval compare``'s low-power reason is plain text (``fewer than 5``), not an HTML entity, on a terminal too;
- ``eval record`` of one task says 1 at once, whatever ``--jobs`` is.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.helpers import FIX, NOOP, alisio, make_suite, write_script

CALL = {
    "name": "edit_file",
    "arguments": {"path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"},
}


def test_a_failing_runs_section_shows_its_incidents(home: Path) -> None:
    """A run whose answer is a call written as text: its section names text_tool_call and its message."""
    suite = make_suite(home)
    text = f"I will fix it:\n```json\n{json.dumps(CALL)}\n```"
    script = write_script(
        home / "s.json", {"turns": [{"text": text, "usage": {"inputTokens": 9, "outputTokens": 3}}]}
    )
    result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1",
                    "--allow-write", "--script", str(script), "--out", str(home / "o"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = (home / "o" / "report.md").read_text()
    section = report[report.index("## Runs that did not pass") :]
    assert "- incidents: text_tool_call 1\n" in section
    assert (
        "incident text_tool_call: the final text is a call of edit_file written in a fenced block" in section
    )


def test_compare_says_fewer_than_5_not_an_entity(home: Path) -> None:
    """Two reports of 2 runs each: the low-power reason reads "(fewer than 5)" in the Markdown printed."""
    suite = make_suite(home)
    for name, script in (("a", NOOP), ("b", FIX)):
        run = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "2",
                     "--allow-write", "--script", str(write_script(home / f"{name}.json", script)),
                     "--out", str(home / name))  # fmt: skip
        assert run.returncode == 0, run.stderr
    result = alisio(home, "eval", "compare", str(home / "a"), str(home / "b"), "--format", "md")
    assert result.returncode == 0, result.stderr
    assert "2 judged runs on the baseline and 2 on the candidate (fewer than 5)" in result.stdout
    assert "&lt;" not in result.stdout


def test_record_of_one_task_says_one_at_once(home: Path) -> None:
    """eval record of one task with --jobs 4: the headline says 1 at once (one run is all there is)."""
    suite = make_suite(home)
    result = alisio(home, "eval", "record", "calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write",
                    "--script", str(write_script(home / "s.json", FIX)), "-j", "4")  # fmt: skip
    assert result.returncode == 0, result.stderr
    (headline,) = [line for line in result.stderr.splitlines() if line.startswith("recording calc-suite")]
    assert headline.endswith(", 1 at once)"), headline
