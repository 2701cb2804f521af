"""``alisio eval import skill DIR`` through the installed CLI: a skill folder with skill-creator's
``evals/evals.json`` (``tests/fixtures/skills/word-count``) becomes a suite whose deterministic checks count
and whose grader sentences are advisory notes shown in report.md, never counted."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from tests.integration import helpers
from tests.integration.helpers import read_runs

SKILL = Path(__file__).resolve().parents[2] / "fixtures" / "skills" / "word-count"


def imported(home: Path, source: Path = SKILL) -> tuple[Path, Any]:
    out = home / "suite"
    return out, helpers.alisio(home, "eval", "import", "skill", source, "--out", out, "--yes")


def test_the_skill_becomes_a_suite_with_its_deterministic_evals(home: Path) -> None:
    out, result = imported(home)
    assert result.returncode == 0, result.stderr
    assert "eval-2: not imported, no deterministic check (2 advisory notes: The answer mentions " \
        "scripts/count.py | The answer is short)" in result.stderr  # fmt: skip
    suite = json.loads((out / "suite.json").read_text())
    assert suite["suiteId"] == "skill-word-count"
    first, third = suite["tasks"]
    assert (first["id"], third["id"]) == ("eval-1", "eval-3")
    assert first["verifiers"] == [
        {"id": "expect-2", "kind": "file-contains", "path": "count.txt", "text": "7"}
    ]
    assert first["advisory"] == ["expected output: count.txt holds 7", "The agent used scripts/count.py"]
    assert "advisory" not in third
    assert (out / "fixtures" / "eval-1" / "notes.txt").read_bytes() == (
        SKILL / "evals/files/notes.txt"
    ).read_bytes()
    copied = sorted(
        p.relative_to(out / "skill").as_posix() for p in (out / "skill").rglob("*") if p.is_file()
    )
    assert copied == ["word-count/SKILL.md", "word-count/scripts/count.py"]  # never its evals
    compare = json.loads((out / "compare.json").read_text())
    assert [v["id"] for v in compare["variants"]] == ["without-skill", "with-skill"]
    assert compare["variants"][1]["context"]["workspace"] == {"skills/word-count/": "skill/word-count/"}
    claude = json.loads((out / "context-claude-code.json").read_text())
    assert claude["home"] == {".claude/skills/word-count/": "skill/word-count/"}
    parity = json.loads((out / "parity.json").read_text())
    assert (parity["tasks"], parity["noopFails"]) == (2, 2)


def test_advisory_notes_are_in_the_report_and_not_counted(home: Path) -> None:
    out, result = imported(home)
    assert result.returncode == 0, result.stderr
    writes = {"turns": [{"toolCalls": [{"name": "write_file", "arguments": {"path": "count.txt", "content": "7\n"}}]},
                        {"text": "Wrote 7."}]}  # fmt: skip
    script = helpers.write_script(home / "s.json", writes)
    report = home / "report"
    run = helpers.alisio(home, "eval", "run", "skill-word-count", "--suite-dir", out, "--yes", "--allow-write",
                         "--allow-process", "--k", "1", "--script", script, "--out", report)  # fmt: skip
    assert run.returncode == 0, run.stderr
    status = {record.task_id: str(record.status) for record in read_runs(report)}
    assert status == {"eval-1": "pass", "eval-3": "fail"}  # 7 is right for notes.txt only
    page = (report / "report.md").read_text()
    advisory = page[page.index("## Advisory notes") :]
    assert "- eval-1: The agent used scripts/count.py" in advisory
    assert "- eval-1: expected output: count.txt holds 7" in advisory
    tasks = {task["taskId"]: task for task in json.loads((report / "report.json").read_text())["tasks"]}
    assert tasks["eval-1"]["advisory"] == [
        "expected output: count.txt holds 7",
        "The agent used scripts/count.py",
    ]
    assert (tasks["eval-1"]["passes"], tasks["eval-1"]["judged"]) == (1, 1)
    html = (report / "report.html").read_text()
    assert '<section id="advisory"><h2>Advisory notes</h2>' in html
    assert "<li>eval-1: The agent used scripts/count.py</li>" in html


def test_a_skill_whose_evals_have_no_deterministic_check_is_refused(home: Path) -> None:
    skill = home / "words"
    shutil.copytree(SKILL, skill)
    document = json.loads((skill / "evals/evals.json").read_text())
    for entry in document["evals"]:
        entry["expectations"] = [e for e in entry["expectations"] if isinstance(e, str)] or ["Looks right"]
    (skill / "evals/evals.json").write_text(json.dumps(document))
    out, result = imported(home, skill)
    assert result.returncode == 1
    (line,) = [line for line in result.stderr.splitlines() if "evals.json" in line]
    assert "none of its 3 evals has a deterministic check" in line
    assert not out.exists() and "Traceback" not in result.stderr


def test_bad_input_names_the_file_and_field_and_writes_nothing(home: Path) -> None:
    skill = home / "words"
    shutil.copytree(SKILL, skill)
    document = json.loads((skill / "evals/evals.json").read_text())
    del document["evals"][2]["prompt"]
    (skill / "evals/evals.json").write_text(json.dumps(document))
    out, result = imported(home, skill)
    assert result.returncode == 1
    assert f"{skill / 'evals/evals.json'}: evals[2].prompt: expected the task's prompt" in result.stderr
    document["evals"][2]["prompt"] = "Count."
    document["evals"][2]["files"] = ["../secret.txt"]
    (skill / "evals/evals.json").write_text(json.dumps(document))
    out, result = imported(home, skill)
    assert result.returncode == 1
    assert "evals[2].files[0]: '../secret.txt' must be a path inside the skill" in result.stderr
    assert not out.exists()


def test_a_link_leaving_the_skill_is_refused(home: Path) -> None:
    skill = home / "words"
    shutil.copytree(SKILL, skill)
    (home / "secret.txt").write_text("key")
    os.symlink(home / "secret.txt", skill / "scripts" / "leak.txt")
    out, result = imported(home, skill)
    assert result.returncode == 1
    assert "a symbolic link that leaves the source" in result.stderr and "leak.txt" in result.stderr
    assert not out.exists()


def test_the_list_alone_and_expected_are_read_as_published_skills_write_them(home: Path) -> None:
    """evals.json as a bare list, ``expected`` for ``expected_output``, no name in SKILL.md: the folder names it."""
    skill = home / "tally"
    shutil.copytree(SKILL, skill)
    (skill / "SKILL.md").write_text("# Tally\n\nCount words with scripts/count.py.\n")
    check = {"kind": "file-contains", "path": "count.txt", "text": "7"}
    evals = [{"id": "a", "prompt": "Count notes.txt into count.txt.", "files": ["evals/files/notes.txt"],
              "expected": "PASS", "expectations": [check]}]  # fmt: skip
    (skill / "evals/evals.json").write_text(json.dumps(evals))
    out, result = imported(home, skill)
    assert result.returncode == 0, result.stderr
    suite = json.loads((out / "suite.json").read_text())
    assert suite["suiteId"] == "skill-tally"
    (only,) = suite["tasks"]
    assert only["id"] == "eval-a" and only["advisory"] == ["expected: PASS"]
