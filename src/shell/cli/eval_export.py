"""``alisio eval export DIR|RUN_ID --out FILE [--force]``: one shareable, scrubbed JSON bundle of a stored run.

DIR is a report directory (an ``--out`` directory too); RUN_ID a directory name under ``<dataDir>/eval``;
``<runId>/<variant>`` exports one variant of an ``eval variants`` run (its root holds no report of its own).

Reads the report directory and writes ``{"schemaVersion": 1, "report", "runs", "markdown", "transcripts"}`` with
absolute paths replaced by placeholders and a non-plain provider id replaced by ``custom-endpoint``.
Nothing goes to stdout; stderr says what was written and reminds that the scrubbing is pattern-based.

Exit codes: 0 written; 1 nothing written: an invalid run id, a missing run, an existing FILE without
``--force``, a missing parent directory, unreadable report files, or a field that looks like a secret (each
such field is named, never its value).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from alisio.core.exit_codes import ExitCode

RunId = Annotated[
    str,
    typer.Argument(
        help="A report directory, or a run id: the directory name under <dataDir>/eval (<runId>/<variant> for "
        "one variant).",
        metavar="DIR|RUN_ID",
        show_default=False,
    ),
]
Out = Annotated[
    Path,
    typer.Option(
        "--out",
        help="The bundle file to write (its directory must exist).",
        metavar="FILE",
        show_default=False,
    ),
]
Force = Annotated[bool, typer.Option("--force", help="Overwrite FILE if it exists.")]

REMINDER = (
    "The scrubbing is pattern-based, not a guarantee: read the bundle before you share it "
    "(task prompts, verifier details and tool output can hold sensitive text no pattern recognizes)."
)


def export(run_id: RunId, out: Out, force: Force = False) -> ExitCode:
    """Write one shareable JSON bundle of a stored run, without absolute paths or secrets."""
    import os

    from alisio.shell.errors import CommandError
    from alisio.shell.lab.export import ExportRefused, export_run

    result = export_run(run_id, out, force, os.environ)
    if isinstance(result, ExportRefused):
        raise CommandError(*result.lines)
    for warning in result.warnings:
        print(f"alisio eval export: warning: {warning}", file=sys.stderr)
    runs = "1 run" if result.runs == 1 else f"{result.runs} runs"
    print(f"alisio eval export: wrote {result.path} ({runs})", file=sys.stderr)
    print(REMINDER, file=sys.stderr)
    return ExitCode.OK
