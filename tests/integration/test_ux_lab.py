"""What a user of the lab sees, through the installed ``alisio``: vacuous rules, text written as a tool call,
the closing hints and table, replay's recorded tokens, what served a run, and time to the first event."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_eval_run import NOOP, alisio, eval_run, make_suite, read_runs, task, write_script

SEQUENCE = {
    "kind": "tool-sequence",
    "id": "seq",
    "rules": [
        {"type": "before", "first": "read_file", "then": "edit_file"},
        {"type": "max-calls", "tool": "bash", "max": 2},
    ],
}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "config").mkdir()
    return tmp_path


def _task(**overrides: Any) -> dict[str, Any]:
    return task("fix-add", verifiers=[SEQUENCE], **overrides)


def test_rules_held_over_no_call_say_vacuous(home: Path) -> None:
    """A rule whose tool was never called passes, its detail and the verifier list saying "vacuous"."""
    suite = make_suite(home, _task())
    out = home / "out"
    result = eval_run(
        home, suite, "-k", "1", "--allow-write", "--out", str(out), script=write_script(home / "s.json", NOOP)
    )
    assert result.returncode == 0, result.stderr
    (verifier,) = read_runs(out)[0].verifiers
    assert verifier.status == "pass" and verifier.vacuous_rules == 2
    assert verifier.detail == (
        "2 rule(s) hold over 0 tool call(s); vacuous (held over 0 calls): before(read_file, edit_file), "
        "max-calls(bash, 2)"
    )
    shown = alisio(home, "eval", "show", str(out))
    assert "pass  seq (tool-sequence, 2 rule(s) vacuous)" in shown.stdout, shown.stdout
    html = (out / "report.html").read_text()
    assert "tool-sequence, 2 rule(s) vacuous" in html


CALL = '{"name": "edit_file", "arguments": {"path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"}}'


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (CALL, "as bare JSON"),
        (f"I will fix it.\n```json\n{CALL}\n```", "in a fenced block"),
        (f"<tool_call>\n{CALL}\n</tool_call>", "in <tool_call> tags"),
    ],
)
def test_a_tool_call_written_as_text_is_an_incident(home: Path, text: str, where: str) -> None:
    """A final text that parses as a call of an offered tool: a text_tool_call incident, named on the fail
    line and counted in report.md's incidents column."""
    suite = make_suite(home)
    out = home / "out"
    script = write_script(home / "s.json", {"turns": [{"text": text}]})
    result = eval_run(home, suite, "-k", "1", "-j", "1", "--allow-write", "--out", str(out), script=script)
    assert result.returncode == 0, result.stderr
    (record,) = read_runs(out)
    (incident,) = [i for i in record.incidents if i.kind == "text_tool_call"]
    assert incident.message.startswith(
        f"the final text is a call of edit_file written {where}, not a tool call"
    )
    line = next(line for line in result.stderr.splitlines() if line.startswith("[1/1]"))
    assert "fail (1 turn" in line and ": text_tool_call (a tool call written as text); check: " in line
    assert "text_tool_call 1" in (out / "report.md").read_text()


def test_prose_naming_a_tool_is_no_incident(home: Path) -> None:
    """Text that mentions a tool, or JSON naming a tool not offered, raises no text_tool_call."""
    suite = make_suite(home)
    out = home / "out"
    text = 'I would call edit_file here. {"name": "deploy", "arguments": {}}'
    script = write_script(home / "s.json", {"turns": [{"text": text}]})
    result = eval_run(home, suite, "-k", "1", "--allow-write", "--out", str(out), script=script)
    assert result.returncode == 0, result.stderr
    assert not [i for i in read_runs(out)[0].incidents if i.kind == "text_tool_call"]


def test_runs_cut_mid_stream_at_several_jobs_suggest_one_job(home: Path) -> None:
    """Several provider_stream errors with jobs > 1: the closing lines name the cause and --jobs 1."""
    suite = make_suite(home)
    script = write_script(home / "s.json", {"turns": [{"text": "par", "error": "request cancelled"}]})
    result = eval_run(
        home, suite, "-k", "3", "-j", "2", "--allow-write", "--out", str(home / "o"), script=script
    )
    assert result.returncode == 1, result.stderr
    hint = result.stderr.splitlines()[-1]
    assert hint.startswith("3 runs ended provider_stream (the server cut their streams)"), hint
    assert "with 2 runs at once" in hint and "cancels concurrent requests" in hint
    assert "--jobs 1" in hint and "provider.maxConcurrency" in hint
    alone = eval_run(
        home, suite, "-k", "3", "-j", "1", "--allow-write", "--out", str(home / "p"), script=script
    )
    assert "--jobs 1" not in alone.stderr
