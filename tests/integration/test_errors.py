"""The command-wide errors (``alisio.shell.errors``): ``CommandError``, ``Terminated`` and ``expect``."""

from __future__ import annotations

import re

import pytest
from returns.result import Failure, Success

from alisio.core.errors import ReportError
from alisio.shell.cli.main import app, run_command_line
from alisio.shell.errors import CommandError, Terminated, expect
from alisio.shell.harness.tools.context import ToolError
from alisio.shell.lab import errors as lab_errors


def test_expect_gives_the_value_of_a_success() -> None:
    """A Success is unwrapped, whatever the context."""
    assert expect(Success(3), "--k") == 3


def test_expect_raises_one_command_error_line_naming_the_context() -> None:
    """A Failure is one line, ``context: failure`` (the failure alone without a context), then the extra lines."""
    failure = Failure(ReportError(source="a/report.json", message="no such file"))
    with pytest.raises(CommandError) as raised:
        expect(failure, "", "nothing was run")
    assert raised.value.lines == (str(failure.failure()), "nothing was run")
    with pytest.raises(CommandError) as named:
        expect(Failure("bad value"), "--agent")
    assert named.value.lines == ("--agent: bad value",)


def test_expect_raises_the_error_class_it_is_given() -> None:
    """A tool's Failure is the model-facing ToolError, with the same line."""
    with pytest.raises(ToolError, match=re.escape("invalid regular expression 'a(': missing )")):
        expect(Failure("missing )"), "invalid regular expression 'a('", error=ToolError)


def test_the_labs_errors_are_the_command_wide_ones() -> None:
    """The lab has no error class of its own but ``LabStopped``, a ``CommandError``: no second name for one."""
    assert lab_errors.__all__ == ["LabStopped"]
    assert not hasattr(lab_errors, "LabError")
    assert issubclass(lab_errors.LabStopped, CommandError)
    assert issubclass(Terminated, KeyboardInterrupt)


def test_alisio_run_stops_on_a_command_error_with_one_line_and_exit_1(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """``alisio run --cwd MISSING`` raises CommandError: one line on stderr prefixed ``alisio run``, exit 1."""
    code = run_command_line(app, ["run", "--cwd", "/nonexistent/alisio-dir", "--script", "x.json", "hi"])
    assert code == 1
    assert capsys.readouterr().err == "alisio run: --cwd /nonexistent/alisio-dir: no such directory\n"
