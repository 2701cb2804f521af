"""``alisio eval selfcheck`` and ``eval validate --selfcheck``: suites whose checks cannot be trusted are flagged.

Each test writes a small suite with one known defect (a verifier that passes the untouched fixture, a broken
reference solution, a verifier whose outcome alternates on the same tree, a slow verifier) and checks the
table, the flag line, --json and the exit code; the bundled suites self-check clean.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from alisio.shell.cli.main import run_cli

ALISIO = Path(sys.executable).with_name("alisio")
SUITES = Path(__file__).resolve().parents[3] / "suites"

CHECK = "import sys\nfrom calc import add\nsys.exit(0 if add(2, 3) == 5 else 1)\n"


def alisio(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ALISIO), *args], capture_output=True, text=True, timeout=120, check=False)


def task(task_id: str, verifiers: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "id": task_id,
        "prompt": "Fix add in calc.py.",
        "fixture": f"fixtures/{task_id}",
        "budget": {"maxTurns": 5, "maxWallMs": 60000},
        "policy": {"mode": "auto", "allow": ["write", "process"]},
        "verifiers": verifiers,
        **extra,
    }


def check_verifier(timeout_ms: int = 30000) -> dict[str, Any]:
    return {
        "kind": "command",
        "id": "check",
        "command": [sys.executable, "check.py"],
        "timeoutMs": timeout_ms,
    }


def write_suite(root: Path, tasks: list[dict[str, Any]]) -> Path:
    """A suite at ``root``; each task's fixture holds a wrong calc.py and check.py."""
    for item in tasks:
        fixture = root / item["fixture"]
        fixture.mkdir(parents=True)
        (fixture / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
        (fixture / "check.py").write_text(CHECK, encoding="utf-8")
    suite = {
        "schemaVersion": 1,
        "suiteId": "probe",
        "suiteVersion": "1.0.0",
        "description": "",
        "tasks": tasks,
    }
    (root / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
    return root


def solution_dir(root: Path, name: str, body: str) -> str:
    (root / "solutions" / name).mkdir(parents=True)
    (root / "solutions" / name / "calc.py").write_text(
        f"def add(a, b):\n    return {body}\n", encoding="utf-8"
    )
    return f"solutions/{name}"


def test_a_sound_suite_is_clean_with_directory_and_script_solutions(tmp_path: Path) -> None:
    """A failing fixture, a directory solution and a script solution that pass: exit 0, the table says so."""
    root = tmp_path / "suite"
    root.mkdir()
    (root / "solve.sh").write_text("sed -i 's/a - b/a + b/' calc.py\n", encoding="utf-8")
    scope = {"kind": "tree-diff-within", "id": "scope", "allowed": ["calc.py"]}
    write_suite(
        root,
        [
            task("by-dir", [check_verifier(), scope], solution=solution_dir(root, "by-dir", "a + b")),
            task("by-script", [check_verifier(), scope], solution="solve.sh"),
        ],
    )
    result = alisio("eval", "selfcheck", str(root), "--yes")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["task", "no-op", "oracle", "repeat", "time"]
    assert lines[1].split()[:5] == ["by-dir", "fails", "passes", "same", "(3x)"]
    assert lines[2].split()[:5] == ["by-script", "fails", "passes", "same", "(3x)"]
    assert lines[-1] == "selfcheck probe 1.0.0: 2 tasks, clean, 0 with warnings"


def test_a_verifier_passing_the_untouched_fixture_is_flagged(tmp_path: Path) -> None:
    """Only a tree-diff verifier (or a check that always passes): "passes with no change", exit 1, --json."""
    root = tmp_path / "suite"
    always = {
        "kind": "command",
        "id": "always",
        "command": [sys.executable, "-c", "pass"],
        "timeoutMs": 30000,
    }
    write_suite(root, [task("lenient", [always]), task("sound", [check_verifier()])])
    result = alisio("eval", "selfcheck", str(root), "--yes", "--json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    lenient, sound = data["tasks"]
    assert lenient["noop"] == "PASSES" and lenient["flags"] == [
        "passes with no change (on the untouched fixture: always)"
    ]
    assert sound["noop"] == "fails" and sound["flags"] == [] and sound["oracle"] == "none"
    assert data["flagged"] == 1 and data["clean"] is False
    text = alisio("eval", "selfcheck", str(root), "--yes")
    assert "flagged: lenient: passes with no change (on the untouched fixture: always)" in text.stdout
    assert text.stdout.splitlines()[-1] == "selfcheck probe 1.0.0: 2 tasks, 1 flagged, 0 with warnings"


def test_a_broken_solution_is_flagged(tmp_path: Path) -> None:
    """A solution that does not fix the bug, and a solution script that exits 1: both flagged, exit 1."""
    root = tmp_path / "suite"
    root.mkdir()
    (root / "fail.sh").write_text("echo cannot solve >&2\nexit 1\n", encoding="utf-8")
    write_suite(
        root,
        [
            task("wrong", [check_verifier()], solution=solution_dir(root, "wrong", "a * b")),
            task("crash", [check_verifier()], solution="fail.sh"),
        ],
    )
    result = alisio("eval", "selfcheck", str(root), "--yes", "--json")
    assert result.returncode == 1
    wrong, crash = json.loads(result.stdout)["tasks"]
    assert wrong["oracle"] == "FAILS"
    assert wrong["flags"][0].startswith("the reference solution does not pass: check: exit 1 (expected 0)")
    assert crash["oracle"] == "error"
    assert crash["flags"][0].endswith("fail.sh exited 1: cannot solve")


def test_a_nondeterministic_verifier_is_flagged(tmp_path: Path) -> None:
    """A check that passes every other time on the same tree: "nondeterministic verifier", with the outcomes."""
    counter = tmp_path / "counter"
    flip = (
        "import pathlib, sys\n"
        f"p = pathlib.Path({str(counter)!r})\n"
        "n = int(p.read_text()) if p.exists() else 0\n"
        "p.write_text(str(n + 1))\n"
        "sys.exit(n % 2)\n"
    )
    flaky = {"kind": "command", "id": "flaky", "command": [sys.executable, "-c", flip], "timeoutMs": 30000}
    root = tmp_path / "suite"
    write_suite(root, [task("flips", [check_verifier(), flaky])])
    result = alisio("eval", "selfcheck", str(root), "--yes", "--repeat", "4")
    assert result.returncode == 1
    assert "flagged: flips: nondeterministic verifier flaky: pass, fail, pass, fail on the same tree" in (
        result.stdout
    )
    assert result.stdout.splitlines()[1].split()[:5] == ["flips", "fails", "none", "DIFFERS", "(4x)"]


def test_a_slow_verifier_is_warned_about_not_flagged(tmp_path: Path) -> None:
    """A check that takes over half its timeoutMs: a warning line, and the exit stays 0."""
    slow = {
        "kind": "command",
        "id": "slow",
        "command": [sys.executable, "-c", "import time, sys; time.sleep(0.3); sys.exit(1)"],
        "timeoutMs": 400,
    }
    root = tmp_path / "suite"
    write_suite(root, [task("sluggish", [slow])])
    result = alisio("eval", "selfcheck", str(root), "--yes", "--repeat", "1")
    assert result.returncode == 0, result.stdout
    assert "warning: sluggish: verifier slow took" in result.stdout
    assert "more than half its timeoutMs (400)" in result.stdout
    assert result.stdout.splitlines()[-1].endswith("clean, 1 with warnings")


def test_validate_selfcheck_and_usage_errors(tmp_path: Path) -> None:
    """validate --selfcheck adds the table and exits 1 on a flag; a bad --repeat is a usage error, a missing solution one line."""
    root = tmp_path / "suite"
    lenient = {"kind": "tree-diff-within", "id": "scope", "allowed": ["calc.py"]}
    write_suite(root, [task("lenient", [lenient])])
    result = alisio("eval", "validate", str(root), "--selfcheck", "--yes")
    assert result.returncode == 1
    assert result.stdout.startswith("ok probe 1.0.0 (1 task)")
    assert "flagged: lenient: passes with no change" in result.stdout
    bad = alisio("eval", "selfcheck", str(root), "--yes", "--repeat", "0")
    assert bad.returncode == 1 and "alisio eval selfcheck: --repeat: 0 is below 1" in bad.stderr
    huge = alisio("eval", "selfcheck", str(root), "--yes", "--repeat", "99999999999")
    assert huge.returncode == 1 and "--repeat: 99999999999 is above 100, the most allowed" in huge.stderr
    data = json.loads((root / "suite.json").read_text(encoding="utf-8"))
    data["tasks"][0]["solution"] = "solutions/missing"
    (root / "suite.json").write_text(json.dumps(data), encoding="utf-8")
    missing = alisio("eval", "selfcheck", str(root), "--yes")
    assert missing.returncode == 1
    assert missing.stderr.strip() == (
        f'alisio eval selfcheck: {root}/suite.json: task lenient: solution: "solutions/missing" does not '
        "exist (a directory to lay over the copy, or a script)"
    )


@pytest.mark.parametrize(
    ("suite", "repeat"),
    [("smoke-coding", "2"), ("tool-sequences", "2"), ("long-context", "2"), ("long-context-stress", "1")],
)
def test_bundled_suites_self_check_clean(suite: str, repeat: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Every bundled suite: no task passes untouched, every bundled solution passes, verifiers repeat
    (long-context-stress's 25 command verifiers run once each here, to keep the test fast)."""
    assert run_cli(["eval", "selfcheck", suite, "--jobs", "2", "--repeat", repeat]) == 0, (
        capsys.readouterr().out
    )
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith(f"selfcheck {suite} ")
    rows = out.splitlines()[1:-1]
    assert all(row.split()[1] == "fails" for row in rows if not row.startswith("warning:"))
    if suite != "tool-sequences":
        assert all(row.split()[2] == "passes" for row in rows if not row.startswith("warning:"))


def test_tasks_selects_as_eval_run_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--tasks checks only the tasks named (suite/id accepted), in that order; an unknown or repeated id is
    the error eval run gives, and nothing is checked."""
    root = write_suite(tmp_path / "suite", [task(name, [check_verifier()]) for name in ("a", "b", "c")])
    assert run_cli(["eval", "selfcheck", str(root), "--yes", "--tasks", "c,probe/a", "--repeat", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[1:-1]] == ["c", "a"]
    assert lines[-1] == "selfcheck probe 1.0.0: 2 tasks, clean, 0 with warnings"
    errors = []
    for wanted in ("a,nope,zz", "a,probe/a"):
        assert run_cli(["eval", "selfcheck", str(root), "--yes", "--tasks", wanted]) == 1
        checked = capsys.readouterr()
        assert checked.out == ""
        script = tmp_path / "noop.json"
        script.write_text(json.dumps({"turns": [{"text": "done"}]}), encoding="utf-8")
        run = ["eval", "run", "probe", "--suite-dir", str(root), "--tasks", wanted, "--script", str(script)]
        assert run_cli([*run, "--out", str(tmp_path / "r")]) == 1
        said = capsys.readouterr().err.removeprefix("alisio eval run: ")
        assert checked.err.removeprefix("alisio eval selfcheck: ") == said
        errors.append(said)
    assert errors == [
        "unknown tasks nope, zz in suite probe (known: a, b, c)\n",
        "--tasks names a more than once: name each task once (--k sets repetitions)\n",
    ]


@pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)
def test_sandboxed_selfcheck_runs_the_solution_script_from_solution(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under --sandbox bwrap the verifier runs in /workspace and the script solution as /solution/NAME, its
    directory read-only; an unknown --sandbox value is a usage error."""
    root = tmp_path / "suite"
    (root / "fix").mkdir(parents=True)
    (root / "fix" / "solve.sh").write_text(
        'test "$0" = /solution/solve.sh && test "$PWD" = /workspace && ! touch /solution/x '
        "&& sed -i 's/a - b/a + b/' calc.py\n",
        encoding="utf-8",
    )
    inside = {**check_verifier(), "command": ["python3", "check.py"]}
    write_suite(root, [task("fix", [inside], solution="fix/solve.sh")])
    assert run_cli(["eval", "selfcheck", str(root), "--yes", "--repeat", "1"]) == 1
    plain = capsys.readouterr().out  # outside the sandbox $0 is the script's real path
    assert plain.splitlines()[1].split()[:3] == ["fix", "fails", "error"], plain
    assert run_cli(["eval", "selfcheck", str(root), "--yes", "--repeat", "1", "--sandbox", "bwrap"]) == 0
    boxed = capsys.readouterr().out
    assert boxed.splitlines()[1].split()[:3] == ["fix", "fails", "passes"], boxed
    assert run_cli(["eval", "selfcheck", str(root), "--yes", "--sandbox", "docker"]) == 1
    assert "--sandbox" in capsys.readouterr().err


def test_suite_dir_finds_the_suite_as_eval_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--suite-dir with a suite outside the bundled ones and the working directory: the one suite DIR holds,
    or SUITE by id in a directory of suites, confirmed as eval run confirms it (the warning; --yes without a
    terminal); every refusal is eval run's own line, and nothing is checked."""
    elsewhere = tmp_path / "far" / "away"
    write_suite(elsewhere / "probe-dir", [task("a", [check_verifier()])])
    assert (
        run_cli(["eval", "selfcheck", "--suite-dir", str(elsewhere / "probe-dir"), "--yes", "--repeat", "1"])
        == 0
    )
    checked = capsys.readouterr()
    assert checked.out.splitlines()[1].split()[:2] == ["a", "fails"]
    assert checked.out.splitlines()[-1] == "selfcheck probe 1.0.0: 1 task, clean, 0 with warnings"
    assert checked.err.startswith(
        f"warning: suite probe is not a bundled suite ({elsewhere / 'probe-dir'}): its verifier commands and "
        "the tools it enables run with your privileges, not sandboxed. Only run suites you trust.\n"
    )
    assert (
        run_cli(["eval", "selfcheck", "probe", "--suite-dir", str(elsewhere), "--yes", "--repeat", "1"]) == 0
    )
    assert capsys.readouterr().out.splitlines()[-1] == "selfcheck probe 1.0.0: 1 task, clean, 0 with warnings"
    write_suite(elsewhere / "second", [task("b", [check_verifier()])])
    script = tmp_path / "noop.json"
    script.write_text(json.dumps({"turns": [{"text": "done"}]}), encoding="utf-8")
    errors = []
    for args in (
        ["probe", "--suite-dir", str(elsewhere / "probe-dir")],  # no --yes, no terminal
        ["--suite-dir", str(elsewhere)],  # two suites there
        ["--suite-dir", str(tmp_path / "missing"), "--yes"],
        ["nope", "--suite-dir", str(elsewhere), "--yes"],
    ):
        assert run_cli(["eval", "selfcheck", *args]) == 1
        checked = capsys.readouterr()
        assert checked.out == ""
        run = ["eval", "run", *args, "--script", str(script), "--allow-write", "--allow-process"]
        assert run_cli([*run, "--out", str(tmp_path / "r")]) == 1
        said = capsys.readouterr().err.splitlines()[-1].removeprefix("alisio eval run: ")
        assert checked.err.splitlines()[-1].removeprefix("alisio eval selfcheck: ") == said
        errors.append(said)
    assert errors == [
        "refusing to run a suite from outside the bundled ones without a terminal to confirm it; pass --yes to "
        "accept it",
        f"--suite-dir {elsewhere} holds 2 suites (probe-dir, second): name the SUITE to run",
        f"--suite-dir {tmp_path / 'missing'}: no such directory",
        f"no suite 'nope' (known: {', '.join(sorted({'probe', *bundled_ids()}))})",
    ]
    assert not (tmp_path / "r").exists()
    assert run_cli(["eval", "selfcheck"]) == 1
    assert capsys.readouterr().err == (
        "alisio eval selfcheck: name a SUITE to check (a suite directory, its suite.json or a bundled suite's "
        "id), or pass --suite-dir DIR holding one suite\n"
    )


def bundled_ids() -> set[str]:
    return {json.loads((path / "suite.json").read_text())["suiteId"] for path in SUITES.iterdir()
            if (path / "suite.json").is_file()}  # fmt: skip
