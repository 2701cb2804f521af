"""``python -m alisio.shell.replay.bundled [--tasks suite/task,...] [--out DIR]`` (``make record-bundled``).

Exit 0 when every cassette was written and every recorded run passed; 1 otherwise, with one line on stderr
saying why (``record-bundled: ...``). The recording itself is ``alisio.shell.replay.bundled.record_bundled``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["main"]


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def record_bundled_command(
    tasks: Annotated[str | None, typer.Option("--tasks", help="Only these: suite/task,...")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write DIR/<suite>/<task>.jsonl instead.")] = None,
) -> None:
    """Record every bundled cassette with the scripted provider."""
    from alisio.shell.lab.pipeline import LabError
    from alisio.shell.replay.bundled import record_bundled

    try:
        failed = record_bundled(tasks, out)
    except LabError as error:
        for line in error.lines:
            _say(f"record-bundled: {line}")
        raise typer.Exit(1) from None
    if failed:
        _say(f"record-bundled: {failed} recorded runs did not pass: fix the script or the task")
        raise typer.Exit(1)


def main() -> None:
    """Run the command with ``sys.argv`` (what ``python -m alisio.shell.replay.bundled`` does)."""
    typer.run(record_bundled_command)
