"""The ``alisio`` command run in-process (``run_cli``): the installed command's code path without its start-up
time, for tests that make many calls. A test module's ``home`` fixture returns ``in_process_home``: an empty configuration and
data home under ``tmp_path`` (also the working directory); ``alisio(home, *args)`` returns the exit code and what
the command printed, as ``subprocess.run`` would."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from alisio.shell.cli.main import run_cli


@dataclass(frozen=True)
class Result:
    """One command's exit code, stdout and stderr."""

    returncode: int
    stdout: str
    stderr: str


_CAPTURE: list[pytest.CaptureFixture[str]] = []
"""The running test's capsys (set by ``in_process_home``), so that ``alisio`` keeps the signature of the subprocess helpers."""


def in_process_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    """An empty configuration and data home; the command runs in-process (``run_cli``, the installed
    command's code path without its start-up time), in ``tmp_path``."""
    (tmp_path / "config").mkdir()
    monkeypatch.setenv("ALISIO_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ALISIO_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    _CAPTURE[:] = [capsys]
    return tmp_path


def alisio(home: Path, *args: str | Path) -> Result:
    capsys = _CAPTURE[0]
    capsys.readouterr()
    code = run_cli([str(arg) for arg in args])
    out, err = capsys.readouterr()
    return Result(code, out, err)
