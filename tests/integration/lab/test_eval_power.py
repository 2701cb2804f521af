"""``alisio eval power`` through the installed command: the sizes, --json, and one-line usage errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.integration import helpers

ALISIO = Path(sys.executable).with_name("alisio")


def alisio(*args: str) -> subprocess.CompletedProcess[str]:
    return helpers.alisio(None, *args)


def test_runs_per_side_and_per_task() -> None:
    """0.5 -> 0.6: 388 runs per side; over 20 tasks, 22 runs per task and side (Markdown and --json)."""
    text = alisio("eval", "power", "--baseline-rate", "0.5", "--detect", "0.1", "--tasks", "20")
    assert text.returncode == 0, text.stderr
    assert "- one task: 388 runs per side (387.3 before rounding up;" in text.stdout
    assert "- 20 tasks paired by task," in text.stdout and "22 runs per task and side" in text.stdout
    result = alisio("eval", "power", "--baseline-rate", "0.5", "--detect", "0.1", "--tasks", "20", "--json")
    data = json.loads(result.stdout)
    assert data["runsPerSide"] == 388 and data["runsPerTask"] == 22 and data["candidateRate"] == 0.6
    assert result.stderr == ""


def test_usage_errors_are_one_line_exit_1() -> None:
    """A missing, non-numeric or out-of-range flag: exit 1, nothing on stdout, one line naming the flag."""
    cases = [
        (("--detect", "0.1"), "alisio eval power: --baseline-rate: is required"),
        (("--baseline-rate", "x", "--detect", "0.1"), "--baseline-rate: expected a number, got 'x'"),
        (("--baseline-rate", "0.5", "--detect", "0.6"), "--detect: 0.5 +0.6 = 1.1 is not a rate in [0, 1]"),
        (("--baseline-rate", "0.5", "--detect", "0.1", "--tasks", "1"), "--tasks: expected a whole number"),
    ]
    for args, message in cases:
        result = alisio("eval", "power", *args, "--json")
        assert result.returncode == 1, args
        assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1
        assert message in result.stderr and "Traceback" not in result.stderr
