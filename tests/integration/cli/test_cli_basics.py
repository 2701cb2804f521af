"""The CLI's exit-code contract, through the installed ``alisio`` command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ALISIO = Path(sys.executable).with_name("alisio")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ALISIO), *args], capture_output=True, text=True, timeout=60, check=False)


def test_help_exits_zero_and_names_the_sub_commands() -> None:
    """``alisio --help`` succeeds and lists ``eval``."""
    result = run("--help")
    assert result.returncode == 0
    assert "eval" in result.stdout


def test_unknown_option_is_a_usage_error_with_exit_1_not_2() -> None:
    """Click's usage errors exit 2 by default; 2 means replay divergence here, so they must exit 1."""
    result = run("eval", "--no-such-option")
    assert result.returncode == 1
    assert "No such option" in result.stderr
