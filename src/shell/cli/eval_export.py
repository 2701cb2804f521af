"""``alisio eval export DIR|RUN_ID --out FILE|DIR [--format bundle|atif|otlp-json] [--force]``: a stored run,
scrubbed, to share: one JSON bundle, or its runs as ATIF trajectories or OTLP/JSON traces (a directory).

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
from typing import Annotated, cast

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
        help="The bundle file to write; with --format atif or otlp-json, the directory (its parent must exist).",
        metavar="FILE|DIR",
        show_default=False,
    ),
]
Format = Annotated[
    str,
    typer.Option(
        "--format",
        help="bundle: one JSON file (report, runs, Markdown, transcripts); atif: one ATIF-v1.7 trajectory per "
        "run, DIR/<task>/<rep>.json (Harbor, Terminal-Bench); otlp-json: DIR/traces.jsonl, OpenTelemetry traces "
        "(GenAI semantic conventions 1.44.0), one request per run.",
        metavar="bundle|atif|otlp-json",
    ),
]
Force = Annotated[bool, typer.Option("--force", help="Overwrite FILE (replace DIR) if it exists.")]
FORMATS = ("bundle", "atif", "otlp-json")

REMINDER = (
    "The scrubbing is pattern-based, not a guarantee: read the {what} before you share {them} "
    "(task prompts, verifier details and tool output can hold sensitive text no pattern recognizes)."
)


def export(run_id: RunId, out: Out, fmt: Format = "bundle", force: Force = False) -> ExitCode:
    """Write a stored run to share, without absolute paths or secrets: a JSON bundle, ATIF trajectories or
    OpenTelemetry traces."""
    import os

    from alisio.shell.errors import CommandError
    from alisio.shell.lab.export import ExportFormat, ExportRefused, export_run

    if fmt not in FORMATS:
        raise CommandError(f"--format {fmt}: not a format; use one of {', '.join(FORMATS)}")
    result = export_run(run_id, out, force, os.environ, cast(ExportFormat, fmt))
    if isinstance(result, ExportRefused):
        raise CommandError(*result.lines)
    for warning in result.warnings:
        print(f"alisio eval export: warning: {warning}", file=sys.stderr)
    runs = "1 run" if result.runs == 1 else f"{result.runs} runs"
    what = {"bundle": "", "atif": "ATIF trajectories, ", "otlp-json": "OTLP traces, "}[fmt]
    print(f"alisio eval export: wrote {result.path} ({what}{runs})", file=sys.stderr)
    print(
        REMINDER.format(
            what="bundle" if fmt == "bundle" else "files", them="it" if fmt == "bundle" else "them"
        ),
        file=sys.stderr,
    )
    return ExitCode.OK
