"""``alisio eval init DIR``: the commands it prints run as printed, in a pipe (CI) and on a terminal.

A ``--suite-dir`` suite is confirmed before it runs: on a terminal ``eval run`` asks, elsewhere it refuses
without ``--yes``. The printed commands carry ``--yes``: here the one with ``--script`` runs to its table with
no terminal (in this process, whose streams are not terminals) and on a pseudo-terminal (a real process), where
the same command without ``--yes`` asks, so the terminal is one that would have asked.
"""

from __future__ import annotations

import os
import pty
import select
import shlex
import subprocess
import time
from pathlib import Path

from tests.integration.helpers import ALISIO, alisio, command_env


def printed_commands(home: Path, directory: str) -> list[list[str]]:
    made = alisio(home, "eval", "init", directory, cwd=home)
    assert made.returncode == 0, made.stderr
    lines = made.stderr.splitlines()
    assert any(line.startswith("(--yes: the suite is yours, just written;") for line in lines), lines
    return [shlex.split(line) for line in lines if line.startswith("  alisio eval run ")]


def on_a_terminal(home: Path, args: list[str], answer: str = "", timeout_s: float = 60) -> tuple[int, str]:
    """Run the installed command with stdin, stdout and stderr on a pseudo-terminal (``answer`` typed once it
    asks "[y/N]"); its exit code and what it printed."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [str(ALISIO), *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=command_env(home, {"NO_COLOR": "1"}),
        cwd=home,
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if not ready:
            if process.poll() is not None:
                break
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
        if answer and b"[y/N]" in b"".join(chunks):
            os.write(master, answer.encode())
            answer = ""
    os.close(master)
    try:
        code = process.wait(timeout=max(deadline - time.monotonic(), 1))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(
            f"still running after {timeout_s} s: {b''.join(chunks).decode()[-2000:]}"
        ) from None
    return code, b"".join(chunks).decode().replace("\r\n", "\n")


def rows(table: str) -> dict[str, str]:
    return {
        line.split()[0]: line.split()[1]
        for line in table.splitlines()
        if line.split() and line.split()[0] in ("fix-add", "fix-mul", "total")
    }


def test_the_printed_commands_carry_yes_and_run_without_a_terminal(home: Path) -> None:
    scripted, live = printed_commands(home, "my suite")
    assert scripted[:5] == ["alisio", "eval", "run", "my suite", "--yes"]
    assert live[:5] == scripted[:5] and "--base-url" in live
    ran = alisio(home, *scripted[1:], "--out", str(home / "out"), cwd=home)
    assert ran.returncode == 0, ran.stderr
    assert rows(ran.stdout) == {"fix-add": "3/3", "fix-mul": "0/3", "total": "3/6"}
    assert "warning: suite starter is not a bundled suite (my suite)" in ran.stderr
    without = alisio(home, *[w for w in scripted[1:] if w != "--yes"], cwd=home)
    assert without.returncode == 1
    refusal = (
        "refusing to run a suite from outside the bundled ones without a terminal to confirm it; pass --yes"
    )
    assert refusal in without.stderr


def test_the_printed_command_runs_on_a_terminal_without_asking(home: Path) -> None:
    (scripted, _) = printed_commands(home, "starter-suite")
    code, shown = on_a_terminal(home, [*scripted[1:], "--k", "1", "--out", str(home / "out")])
    assert code == 0, shown
    assert rows(shown) == {"fix-add": "1/1", "fix-mul": "0/1", "total": "1/2"}
    asked, said = on_a_terminal(home, [w for w in scripted[1:] if w != "--yes"], answer="n\n")
    assert asked == 1, said
    assert "Run it? [y/N] " in said and "not confirmed; nothing was run" in said
