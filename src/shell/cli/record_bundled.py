"""``python -m alisio.shell.cli.record_bundled [--tasks suite/task,...] [--out DIR]`` (``make record-bundled``).

Exit 0 when every cassette was written and every recorded run passed; 1 otherwise, with one line on stderr
saying why (``record-bundled: ...``); 130 after Ctrl-C. The recording itself is
``alisio.shell.replay.bundled.record_bundled``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from alisio.shell.cli.common import say

__all__ = ["main"]


def record_bundled_command(
    tasks: Annotated[
        str | None, typer.Option("--tasks", help="Only these: suite/task,...", metavar="IDS")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write DIR/<suite>/<task>.jsonl instead.", metavar="DIR")
    ] = None,
) -> int:
    """Record every bundled cassette with the scripted provider."""
    from alisio.core.exit_codes import ExitCode
    from alisio.shell.replay.bundled import record_bundled

    failed = record_bundled(tasks, out, say)
    if failed:
        say(f"record-bundled: {failed} recorded runs did not pass: fix the script or the task")
        return ExitCode.FAILURE
    return ExitCode.OK


def main() -> None:
    """Run the command with ``sys.argv`` (what ``python -m alisio.shell.cli.record_bundled`` does)."""
    from alisio.shell.cli.main import run_command_line

    app = typer.Typer(add_completion=False, pretty_exceptions_show_locals=False)
    app.command()(record_bundled_command)
    sys.exit(run_command_line(app, sys.argv[1:], prefix="record-bundled"))


if __name__ == "__main__":
    main()
