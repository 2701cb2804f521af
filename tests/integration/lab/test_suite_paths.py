"""A suite named by its path, in every command that takes a suite, and the one trust rule.

``eval run ./my-suite`` (and record, variants, selfcheck, validate) takes the path as ``--suite-dir`` would,
plan.json keeps it for ``--resume``; every command about to run the commands of a suite from outside the
bundled suites warns and, without a terminal, needs ``--yes``, whatever form named the suite; a bundled suite
named by its path is not warned about.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.helpers import FIX, ROOT, alisio, make_suite, read_runs, run_dirs, task, write_script

WARNING = "warning: suite calc-suite is not a bundled suite ("
REFUSED = (
    "refusing to run a suite from outside the bundled ones without a terminal to confirm it; pass --yes to "
    "accept it"
)
GRANTS = ("--allow-write", "--allow-process")


def _variants(home: Path) -> Path:
    variants = home / "variants.json"
    variants.write_text(json.dumps({"suite": "calc-suite", "variants": [{"id": "a"}, {"id": "b"}]}))
    return variants


def _args(command: str, home: Path, script: Path) -> list[str | Path]:
    """What each command needs besides SUITE (a scripted provider: no model)."""
    if command == "selfcheck":
        return ["--repeat", "1"]
    if command == "validate":
        return ["--selfcheck"]
    extra: list[str | Path] = ["--script", script, *GRANTS]
    if command == "run":
        extra += ["--k", "1"]
    if command == "variants":
        extra += ["--k", "1", "--variants", _variants(home)]
    return extra


@pytest.mark.parametrize("command", ["run", "record", "variants", "selfcheck", "validate"])
def test_every_command_takes_a_suite_path_and_asks_before_running_it(tmp_path: Path, command: str) -> None:
    """``eval COMMAND ./calc-suite``: refused without --yes and a terminal (nothing run: no report, no
    cassette); with --yes it warns and runs the suite at that path."""
    make_suite(tmp_path)
    script = write_script(tmp_path / "fix.json", FIX)
    args = _args(command, tmp_path, script)
    refused = alisio(tmp_path, "eval", command, "./calc-suite", *args, cwd=tmp_path)
    assert refused.returncode == 1, refused.stderr
    assert WARNING + str(Path("calc-suite")) in refused.stderr, refused.stderr
    assert refused.stderr.rstrip().endswith(REFUSED), refused.stderr
    assert run_dirs(tmp_path) == [] and not (tmp_path / "calc-suite" / "cassettes").exists()
    assert "fails" not in refused.stdout  # no self-check table: nothing ran
    done = alisio(tmp_path, "eval", command, "./calc-suite", *args, "--yes", cwd=tmp_path)
    assert WARNING in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    if command in ("selfcheck", "validate"):
        assert done.stdout.splitlines()[-1].startswith("selfcheck calc-suite 1.0.0: 1 task")
        assert "fix-add" in done.stdout and "fails" in done.stdout
    elif command == "record":
        assert (tmp_path / "calc-suite" / "cassettes" / "fix-add.jsonl").is_file()
    else:
        assert len(run_dirs(tmp_path)) == 1


def test_a_suite_json_path_runs_and_resumes_from_anywhere(tmp_path: Path) -> None:
    """``eval run calc-suite/suite.json``: plan.json keeps the suite's absolute directory, so ``--resume``
    from another working directory finds it."""
    make_suite(tmp_path)
    script = write_script(tmp_path / "fix.json", FIX)
    done = alisio(
        tmp_path, "eval", "run", "calc-suite/suite.json", "--k", "2", "--script", script, *GRANTS, "--yes",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run,) = run_dirs(tmp_path)
    plan = json.loads((run / "plan.json").read_text())
    assert (plan["suiteId"], plan["suiteDir"]) == ("calc-suite", str(tmp_path / "calc-suite"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    resumed = alisio(tmp_path, "eval", "run", "--resume", run, cwd=elsewhere)
    assert resumed.returncode == 0, resumed.stderr
    assert [r.status.value for r in read_runs(run)] == ["pass", "pass"]


def test_a_bundled_suite_named_by_its_path_is_not_warned_about(tmp_path: Path) -> None:
    """The bundled smoke-coding, named by its path or as --suite-dir, runs without a warning or --yes."""
    script = write_script(tmp_path / "noop.json", {"turns": [{"text": "nothing to do"}]})
    for named in (["suites/smoke-coding"], ["--suite-dir", "suites/smoke-coding"]):
        done = alisio(
            tmp_path, "eval", "run", *named, "--tasks", "fix-add", "--k", "1", "--script", script, *GRANTS,
            "--out", tmp_path / named[-1].replace("/", "-") / named[0], cwd=ROOT,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "warning:" not in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("suite", "extra", "expected"),
    [
        ("./nothing-here", (), "SUITE nothing-here: no such file or directory (nor a bundled suite's id)"),
        ("./empty", (), "SUITE empty: no suite.json here or in its immediate sub-directories"),
        ("./two", (), "SUITE two holds 2 suites (a, b): name the one to run"),
        ("./calc-suite", ("--suite-dir", "two"), "SUITE ./calc-suite is a path: give it alone, or its name with --suite-dir"),
    ],
)  # fmt: skip
def test_a_suite_path_that_names_no_one_suite_is_one_line(
    tmp_path: Path, suite: str, extra: tuple[str, ...], expected: str
) -> None:
    """Nothing there, no suite there, two suites there, a path with --suite-dir: exit 1, one line."""
    make_suite(tmp_path)
    (tmp_path / "empty").mkdir()
    make_suite(tmp_path / "two", task("x"), suite_id="a")
    make_suite(tmp_path / "two", task("x"), suite_id="b")
    script = write_script(tmp_path / "fix.json", FIX)
    for command in ("run", "selfcheck"):
        args = ["--script", script, *GRANTS] if command == "run" else []
        done = alisio(tmp_path, "eval", command, suite, *extra, *args, "--yes", cwd=tmp_path)
        assert done.returncode == 1
        assert done.stderr == f"alisio eval {command}: {expected}\n", done.stderr
