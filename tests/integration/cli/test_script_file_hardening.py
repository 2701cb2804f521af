"""A ``--script`` file is read as every other input is: a regular file of bounded size, through the installed
commands that take one (``eval run``, ``eval mock-endpoint``, ``alisio run``). A link to ``/dev/zero`` grew the
process until the OOM killer came, and a FIFO no one writes hung the command; both, and a file over
``MAX_SCRIPT_BYTES``, are now one line naming the file and why, exit 1, at once."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from alisio.shell.harness.providers.scripted import MAX_SCRIPT_BYTES
from tests.integration.helpers import ALISIO, command_env

WHY = {
    "device": "it is a character device, not a regular file",
    "fifo": "it is a FIFO (named pipe), not a regular file",
    "huge": f"it is larger than {MAX_SCRIPT_BYTES >> 20} MiB, the most a script may hold",
}
COMMANDS = {
    "eval run": (
        ["eval", "run", "smoke-coding", "--tasks", "fix-add", "-k", "1", "--allow-write", "--allow-process"],
        "cannot read",
    ),
    "eval mock-endpoint": (["eval", "mock-endpoint"], "cannot read the script"),
    "run": (["run", "fix add"], "cannot read the script"),
}


def _script(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / "script.json"
    if kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        with path.open("wb") as file:
            file.truncate(MAX_SCRIPT_BYTES + 1)  # sparse: nothing is written
    return path


@pytest.mark.parametrize("kind", sorted(WHY))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_script_that_is_a_device_a_fifo_or_huge_is_refused_at_once(
    tmp_path: Path, command: str, kind: str
) -> None:
    args, verb = COMMANDS[command]
    script = _script(tmp_path, kind)
    started = time.monotonic()
    done = subprocess.run(
        [str(ALISIO), *args, "--script", str(script)], capture_output=True, text=True, env=command_env(tmp_path),
        stdin=subprocess.DEVNULL, cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    assert time.monotonic() - started < 30
    assert done.returncode == 1, done.stderr
    flag = "" if command == "eval mock-endpoint" else "--script "
    assert done.stderr == f"alisio {command}: {flag}{script}: {verb}: {WHY[kind]}\n"
    assert done.stdout == ""
