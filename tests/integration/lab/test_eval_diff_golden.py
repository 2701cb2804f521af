"""Golden tests of ``alisio eval diff`` on recorded runs (tests/fixtures/trajectories: the built-in agent, and
Claude Code and Codex through the proxy; its README says how they were recorded): the output is the committed
one, and it names the first differing call.

``ALISIO_GOLDEN=write`` rewrites the ``.diff.txt`` files (after an intended change of the output: review it).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.integration.helpers import ROOT, alisio

FIXTURES = ROOT / "tests" / "fixtures" / "trajectories"
PAIRS = [
    ("builtin-good", "builtin-bad", "first divergence at step 2: A edit_file, B bash"),
    ("claude-good", "claude-bad", "first divergence at step 1: A bash, B bash"),
    ("codex-good", "codex-bad", "first divergence at step 1: A bash, B bash"),
    ("claude-good", "codex-bad", "first divergence at step 1: A bash, B bash"),
]


@pytest.mark.parametrize(("a", "b", "named"), PAIRS, ids=[f"{a}--{b}" for a, b, _ in PAIRS])
def test_eval_diff_of_recorded_runs_is_the_golden_output(home: Path, a: str, b: str, named: str) -> None:
    """The diff of two recorded transcripts is the committed output, and its headline names the first call
    where they part."""
    result = alisio(home, "eval", "diff", f"{a}.jsonl", f"{b}.jsonl", cwd=FIXTURES)
    assert result.returncode == 0, result.stderr
    golden = FIXTURES / f"{a}--{b}.diff.txt"
    if os.environ.get("ALISIO_GOLDEN") == "write":
        golden.write_text(result.stdout)
    assert result.stdout == golden.read_text()
    assert result.stdout.splitlines()[3] == named


def test_the_agents_shell_calls_differ_in_the_command_they_ran() -> None:
    """Claude Code's Bash and Codex's exec_command are both ``bash`` (each preset's tool map); between two runs of
    one agent the argument that differs is the command, whole."""
    claude = (FIXTURES / "claude-good--claude-bad.diff.txt").read_text()
    assert (
        "    command: \"sed -i 's/return a - b/return a + b/' src/calc.py\" -> "
        "\"sed -i 's/return a - b/return a * b/' src/calc.py\""
    ) in claude
    codex = (FIXTURES / "codex-good--codex-bad.diff.txt").read_text()
    assert "    cmd: \"sed -i 's/return a - b/return a + b/' src/calc.py\" -> " in codex
