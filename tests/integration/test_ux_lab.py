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
