"""docs/suite-format.md is true: its files, fragments and commands, run through the installed command.

- Every fenced block whose info string names a path (```json my-suite/suite.json) is written there, byte for
  byte (each line ends with a newline), into an empty directory: the doc's suites, fixtures and script.
- Every ``$ alisio ...`` line of a ``console`` block is run there as written. When the doc shows its output,
  stdout then stderr must be exactly those lines; when it shows none the command must exit 0, except the one
  live run that needs a provider (listed here, so no other command is skipped silently).
- Every unnamed ``json`` block is a set of task fields: merged into the first suite's task, it validates.
- The tour suite runs with a scripted model that does the task (every verifier passes) and with one that
  does it badly (exactly the verifiers the doc's rules say fail).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration import helpers
from tests.integration.helpers import SPEC_CHECK as CHECK
from tests.integration.helpers import SPEC_EXAMPLE
from tests.integration.helpers import SPEC_MATH as MATH

ALISIO = Path(sys.executable).with_name("alisio")
DOC = Path(__file__).resolve().parents[3] / "docs" / "suite-format.md"
NEEDS_A_PROVIDER = ("alisio eval run my-suite --suite-dir my-suite --k 5 --allow-write --allow-process",)
"""Commands of the doc that spend real tokens: the only ones not run here."""

_FENCE = re.compile(r"^```(\S*)[ \t]*(\S*)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    language: str
    path: str
    body: str


def blocks() -> list[Block]:
    text = DOC.read_text(encoding="utf-8")
    return [Block(m.group(1), m.group(2), m.group(3)) for m in _FENCE.finditer(text)]


def alisio(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command in ``cwd`` with an empty configuration, no key and no terminal."""
    env = {"ALISIO_CONFIG_HOME": str(cwd / ".config"), "ALISIO_DATA_HOME": str(cwd / ".data")}
    return helpers.alisio(None, *args, cwd=cwd, env=env)


@pytest.fixture
def written(tmp_path: Path) -> Path:
    """The doc's named files, written under tmp_path as the doc shows them."""
    (tmp_path / ".config").mkdir()
    named = [b for b in blocks() if b.path]
    assert {b.path for b in named} >= {"my-suite/suite.json", "tour/suite.json", "fix-add.script.json"}
    for block in named:
        target = tmp_path / block.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.body, encoding="utf-8")
    return tmp_path


def console_commands() -> list[tuple[str, list[str]]]:
    """Each ``$ alisio ...`` line of the doc's console blocks and the output lines shown under it."""
    commands: list[tuple[str, list[str]]] = []
    for block in blocks():
        if block.language != "console":
            continue
        for line in block.body.splitlines():
            if line.startswith("$ "):
                commands.append((line[2:], []))
            else:
                commands[-1][1].append(line)
    return commands


def test_the_doc_shows_commands_and_examples() -> None:
    """The extraction finds what the doc is about: both suites, the script, fragments and commands."""
    languages = [b.language for b in blocks()]
    assert languages.count("console") >= 4 and len([b for b in blocks() if b.language == "json"]) >= 8
    assert set(NEEDS_A_PROVIDER) <= {command for command, _ in console_commands()}


def test_the_first_suite_is_the_spec_example(written: Path) -> None:
    """The doc's first suite is the spec's "Writing a suite" example that test_policy_modes runs, and its
    fixture behaves like that test's: the same buggy add, a check that passes and fails on the same edits."""
    assert json.loads((written / "my-suite/suite.json").read_text()) == json.loads(SPEC_EXAMPLE)
    fixture = written / "my-suite/fixtures/fix-add"
    assert (fixture / "src/math.py").read_text() == MATH
    for body, code in (("a - b", 1), ("a + b", 0), ("a * b", 1)):
        (fixture / "src/math.py").write_text(MATH.replace("a - b", body))
        for check in ((fixture / "check.py").read_text(), CHECK):
            done = subprocess.run(
                [sys.executable, "-c", check], cwd=fixture, capture_output=True, check=False
            )
            assert done.returncode == code, (body, done.stdout, done.stderr)


def test_every_command_of_the_doc_does_what_the_doc_shows(written: Path) -> None:
    """Validation, the scripted run and the refused run print exactly what the doc says."""
    ran = 0
    for command, shown in console_commands():
        argv = shlex.split(command)
        assert argv[0] == "alisio", command
        if command in NEEDS_A_PROVIDER:
            continue
        result = alisio(written, *argv[1:])
        ran += 1
        if shown:
            assert (result.stdout + result.stderr).splitlines() == shown, command
        else:
            assert result.returncode == 0, f"{command}\n{result.stderr}"
    assert ran >= 4
    records = [json.loads(line) for line in (written / "out/my-suite/runs.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == ["pass", "pass"]
    assert all([v["status"] for v in r["verifiers"]] == ["pass", "pass"] for r in records)


def test_the_wrong_edit_fails_with_the_detail_the_doc_quotes(written: Path) -> None:
    """The doc's script with ``a * b``: check fails with exactly the detail quoted in the doc."""
    script = json.loads((written / "fix-add.script.json").read_text())
    script["turns"][1]["toolCalls"][0]["arguments"]["new_string"] = "a * b"
    (written / "wrong.json").write_text(json.dumps(script))
    result = alisio(
        written, "eval", "run", "my-suite", "--suite-dir", "my-suite", "--k", "1", "--allow-write",
        "--allow-process", "--yes", "--script", "wrong.json", "--out", "out/wrong",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = json.loads((written / "out/wrong/runs.jsonl").read_text())
    check = record["verifiers"][0]
    assert (record["status"], check["id"], check["status"]) == ("fail", "check", "fail")
    flat_doc = " ".join(DOC.read_text(encoding="utf-8").split())
    assert f"`check` fails with the detail `{check['detail']}`" in flat_doc


def test_every_json_fragment_is_valid_task_fields(written: Path) -> None:
    """Each unnamed json block, merged into my-suite's task (one suite directory per fragment), passes
    ``alisio eval validate``."""
    fragments = [json.loads(b.body) for b in blocks() if b.language == "json" and not b.path]
    assert len(fragments) >= 6
    suite = json.loads((written / "my-suite/suite.json").read_text())
    directories = []
    for index, fragment in enumerate(fragments):
        assert isinstance(fragment, dict) and fragment
        directory = written / f"fragment-{index}"
        shutil.copytree(written / "my-suite", directory)
        merged = {**suite, "tasks": [{**suite["tasks"][0], **fragment}]}
        (directory / "suite.json").write_text(json.dumps(merged))
        directories.append(directory.name)
    result = alisio(written, "eval", "validate", *directories)
    assert result.returncode == 0, f"{fragments}\n{result.stderr}"
    assert result.stdout.splitlines() == [f"ok my-suite 1.0.0 (1 task) {name}" for name in directories]


def read_greet(then: list[dict[str, Any]]) -> dict[str, Any]:
    """A script that reads greet.py, makes each call in ``then`` in its own turn, and stops."""
    turns = [{"toolCalls": [{"name": "read_file", "arguments": {"path": "greet.py"}}]}]
    turns += [{"toolCalls": [call]} for call in then]
    return {"turns": [*turns, {"text": "done"}]}


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"name": "edit_file", "arguments": {"path": path, "old_string": old, "new_string": new}}


GOOD = read_greet(
    [
        edit(
            "greet.py", '    # TODO: greet the whole world\n    return "Hello"', '    return "Hello, world!"'
        ),
        {"name": "bash", "arguments": {"command": "rm TODO.txt"}},
        {"name": "write_file", "arguments": {"path": "notes/done.md", "content": "greets the world\n"}},
    ]
)
BAD = read_greet(
    [
        edit("greet.py", 'return "Hello"', 'return "Hello, world!"'),
        {"name": "read_file", "arguments": {"path": "README.md"}},
        edit("README.md", "A one-function", "A tiny"),
    ]
)


def run_tour(root: Path, script: dict[str, Any], out: str) -> list[tuple[str, str]]:
    (root / f"{out}.json").write_text(json.dumps(script))
    result = alisio(
        root, "eval", "run", "tour", "--suite-dir", "tour", "--k", "1", "--allow-write", "--allow-process",
        "--yes", "--script", f"{out}.json", "--out", out,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = json.loads((root / out / "runs.jsonl").read_text())
    return [(v["id"], v["status"]) for v in record["verifiers"]]


def test_the_tour_passes_when_the_task_is_done(written: Path) -> None:
    """Every verifier of the tour passes for a correct run (the README hash, git, grep, cwd are right)."""
    assert run_tour(written, GOOD, "good") == [
        ("unit", "pass"),
        ("no-todo-left", "pass"),
        ("tests-untouched", "pass"),
        ("readme-untouched", "pass"),
        ("greets-world", "pass"),
        ("todo-deleted", "pass"),
        ("scope", "pass"),
        ("habits", "pass"),
    ]


def test_the_tour_fails_where_the_task_was_not_done(written: Path) -> None:
    """A run that keeps the TODO comment and file and edits the README fails exactly those verifiers."""
    assert run_tour(written, BAD, "bad") == [
        ("unit", "pass"),
        ("no-todo-left", "fail"),
        ("tests-untouched", "pass"),
        ("readme-untouched", "fail"),
        ("greets-world", "pass"),
        ("todo-deleted", "fail"),
        ("scope", "fail"),
        ("habits", "pass"),
    ]
