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
