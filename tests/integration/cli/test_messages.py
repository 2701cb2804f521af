"""Messages in our words: an option's invalid value, suite.json mistakes and suite names are one line naming the
flag or the file, never the words of the library underneath (typer, pydantic, msgspec). In-process
(``run_cli``): the same code path as the installed command, without its start-up time."""

from __future__ import annotations

from pathlib import Path

import pytest

from alisio.shell.cli.main import run_cli


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "config").mkdir()
    monkeypatch.setenv("ALISIO_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ALISIO_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return tmp_path


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["run", "--policy", "yolo", "hi"], "alisio run: --policy: expected ask, auto or full, got 'yolo'"),
        (
            ["eval", "show", "latest", "--rep", "x"],
            "alisio eval show: --rep: expected a whole number, got 'x'",
        ),
        (
            ["eval", "run", "smoke-coding", "-k", "x"],
            "alisio eval run: --k: expected a whole number, got 'x'",
        ),
        (["eval", "run", "smoke-coding", "--k=-3"], "alisio eval run: --k: -3 is below 1"),
        (
            ["eval", "run", "x", "--executor", "foo"],
            "alisio eval run: --executor: expected thread or ray, got 'foo'",
        ),
    ],
)
def test_an_invalid_option_value_is_one_line_in_our_words(
    home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], line: str
) -> None:
    """--policy yolo, --rep x, -k x: exit 1 and one line naming the flag, what it takes and what was given
    (was: "Value error, 'yolo' is not one of ..." and "Input should be a valid integer ...")."""
    assert run_cli(argv) == 1
    err = capsys.readouterr().err
    assert err == line + "\n"


def _suite(root: Path, document: str) -> Path:
    suite = root / "one"
    suite.mkdir(parents=True)
    (suite / "suite.json").write_text(document)
    return suite


def test_a_suite_json_syntax_error_gives_line_and_column(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing ':' on line 3: "at line 3, column 14", not a byte offset."""
    suite = _suite(home, '{\n  "schemaVersion": 1,\n  "suiteId" "x"\n}\n')
    assert run_cli(["eval", "validate", str(suite)]) == 1
    assert (
        capsys.readouterr().err
        == f"{suite / 'suite.json'}: not valid JSON: expected ':' (at line 3, column 13)\n"
    )


def test_a_verifier_kind_typo_gets_did_you_mean(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``"kind": "comand"``: the error names the field and suggests command."""
    task = {
        "id": "t",
        "prompt": "p",
        "fixture": "fixtures/f",
        "budget": {"maxTurns": 1, "maxWallMs": 1000},
        "verifiers": [{"kind": "comand", "id": "check", "command": ["true"]}],
    }
    import json

    suite = _suite(home, json.dumps({"schemaVersion": 1, "suiteId": "one", "suiteVersion": "1.0.0",
                                     "description": "d", "tasks": [task]}))  # fmt: skip
    (suite / "fixtures" / "f").mkdir(parents=True)
    assert run_cli(["eval", "validate", str(suite)]) == 1
    err = capsys.readouterr().err
    assert 'task t: verifiers[0].kind: unknown verifier kind "comand" (did you mean command? expected ' in err


def test_validate_takes_a_bundled_suite_id(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``eval validate smoke-coding`` validates the bundled suite of that id, as ``eval run`` finds it; an
    unknown name says it is neither a path nor a bundled suite."""
    assert run_cli(["eval", "validate", "smoke-coding"]) == 0
    assert capsys.readouterr().out.startswith("ok smoke-coding ")
    assert run_cli(["eval", "validate", "no-such-suite"]) == 1
    assert capsys.readouterr().err == (
        "no-such-suite: no such file or directory, and no bundled suite of that id\n"
    )


def test_a_suite_dir_holding_one_suite_needs_no_suite_name(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``eval run --suite-dir DIR`` with one suite in DIR runs it; with two it names them and asks for one."""
    from tests.integration.helpers import NOOP, make_suite, write_script

    root = home / "suites"
    make_suite(root)
    script = write_script(home / "s.json", NOOP)
    argv = ["eval", "run", "--suite-dir", str(root), "--yes", "-k", "1", "--allow-write", "--script", str(script),
            "--out", str(home / "out"), "--quiet"]  # fmt: skip
    assert run_cli(argv) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith("task ")
    assert (home / "out" / "report.json").is_file()
    make_suite(root, suite_id="other-suite")
    assert run_cli([*argv[:-3], "--out", str(home / "out2")]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"alisio eval run: --suite-dir {root} holds 2 suites (calc-suite, other-suite): name the SUITE to run"
    )
