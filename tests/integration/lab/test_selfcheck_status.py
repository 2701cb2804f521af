"""Every report says whether its suite was self-checked (``eval selfcheck``, kept in the data directory under
the suite's content hash), and flags a task whose untouched fixture passes (through the CLI, scripted runs)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.helpers import FIX, alisio, make_suite, read_report, task, write_script

ALREADY = {"kind": "file-contains", "id": "has-add", "path": "src/calc.py", "text": "def add"}


def _run(home: Path, suite: Path, name: str) -> Path:
    out = home / name
    result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1",
                    "--allow-write", "--script", str(write_script(home / "fix.json", FIX)), "--out", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out


def test_a_report_says_its_suite_was_not_self_checked_then_what_the_self_check_found(home: Path) -> None:
    """Before eval selfcheck the report says "not self-checked"; after it, the next report counts the checked
    tasks, names the one that passes untouched (a warning in report.md and report.html), and report.json holds
    the same; a changed suite is not self-checked again."""
    suite = make_suite(home, task("fix-add"), task("trivial", verifiers=[ALREADY]))
    before = read_report(_run(home, suite, "before"))
    assert before.self_check is not None and before.self_check.checked == 0
    assert "> Self-check: not self-checked" in (home / "before" / "report.md").read_text()

    checked = alisio(home, "eval", "selfcheck", "--suite-dir", str(suite), "--yes")
    assert checked.returncode == 1  # trivial passes with no change: flagged
    kept = list((home / "data" / "selfcheck").iterdir())
    assert [path.name for path in kept] == [f"{before.conditions.suite_hash}.json"]

    out = _run(home, suite, "after")
    block = read_report(out).self_check
    assert block is not None
    assert (block.tasks, block.checked, block.noop_passing, block.solutions) == (2, 2, ("trivial",), 0)
    md = (out / "report.md").read_text()
    assert "> Self-check: no-op passes 1 of 2 tasks; no task has a reference solution." in md
    warning = "trivial passes with no change: its untouched fixture passes its verifiers (eval selfcheck)"
    assert warning in md and warning in (out / "report.html").read_text()

    document = json.loads((suite / "suite.json").read_text())
    document["description"] = "changed"  # not part of the content hash: still self-checked
    (suite / "suite.json").write_text(json.dumps(document))
    assert read_report(_run(home, suite, "same")).self_check.checked == 2  # type: ignore[union-attr]
    (suite / "fixtures" / "calc" / "README").write_text("a new fixture file\n")  # another content hash
    assert read_report(_run(home, suite, "changed")).self_check.checked == 0  # type: ignore[union-attr]


def test_a_partial_self_check_counts_only_the_tasks_it_checked(home: Path) -> None:
    """eval selfcheck --tasks fix-add: a report of both tasks says 1 of 2 tasks was checked."""
    suite = make_suite(home, task("fix-add"), task("other"))
    assert (
        alisio(home, "eval", "selfcheck", "--suite-dir", str(suite), "--yes", "--tasks", "fix-add").returncode
        == 0
    )
    block = read_report(_run(home, suite, "out")).self_check
    assert block is not None and (block.tasks, block.checked, block.noop_passing) == (2, 1, ())
    assert "(1 of 2 tasks not checked)" in (home / "out" / "report.md").read_text()
