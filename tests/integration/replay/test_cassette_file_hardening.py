"""A cassette is read as every other input is: a regular file of bounded size. ``eval run --mode replay`` with a
cassette that is a link to ``/dev/zero`` grew the process until memory ran out (a ``MemoryError`` traceback
under a limit), and one that is a FIFO hung the command, for the built-in agent's cassettes and an external
agent's alike. Both are now one line naming the file and why, exit 1, nothing run."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.helpers import ALISIO, command_env, write_config

WHY = {
    "device": "it is a character device, not a regular file",
    "fifo": "it is a FIFO (named pipe), not a regular file",
}
AGENT = '[agents.mine]\nkind = "command"\ncommand = ["python3", "/nonexistent/agent.py", "{prompt}"]\n'


def _hostile(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "device":
        path.symlink_to("/dev/zero")
    else:
        os.mkfifo(path)


@pytest.mark.parametrize("kind", sorted(WHY))
@pytest.mark.parametrize("agent", ["built-in", "external"])
def test_a_cassette_that_is_a_device_or_a_fifo_is_refused_at_once(
    tmp_path: Path, agent: str, kind: str
) -> None:
    write_config(tmp_path, AGENT)
    cassettes = tmp_path / "cassettes"
    external = agent == "external"
    cassette = cassettes / "mine" / "fix-add.jsonl" if external else cassettes / "fix-add.jsonl"
    _hostile(cassette, kind)
    args = [
        "eval",
        "run",
        "smoke-coding",
        "--tasks",
        "fix-add",
        "--mode",
        "replay",
        "--cassette-dir",
        str(cassettes),
    ]
    args += ["--allow-write", "--allow-process", "--out", str(tmp_path / "out")]
    args += ["--agent", "mine"] if external else []
    started = time.monotonic()
    done = subprocess.run(
        [str(ALISIO), *args], capture_output=True, text=True, env=command_env(tmp_path), stdin=subprocess.DEVNULL,
        timeout=60, check=False,
    )  # fmt: skip
    assert time.monotonic() - started < 30
    assert done.returncode == 1, done.stderr
    first = done.stderr.splitlines()[0]
    if external:
        assert (
            first
            == f"alisio eval run: {cassette}: {WHY[kind]} (record it with eval record --agent mine --tasks fix-add)"
        )
    else:
        assert first == f"alisio eval run: task fix-add: {cassette}: cannot read: {WHY[kind]}"
    assert "Traceback" not in done.stderr and not (tmp_path / "out" / "runs.jsonl").exists()
