"""``alisio eval compare <baseline> <candidate> [--json]``: compare two reports of the same suite.

Exit codes: 0 compared (whatever the verdicts); 1 unreadable input (one line naming the file and what is
wrong); 3 incompatible suites (different suiteId or suiteVersion).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from alisio.shell.cli.options import Json

Baseline = Annotated[
    Path, typer.Argument(help="The baseline report.json, or its directory.", show_default=False)
]
Candidate = Annotated[
    Path, typer.Argument(help="The candidate report.json, or its directory.", show_default=False)
]


def compare(baseline: Baseline, candidate: Candidate, json: Json = False) -> None:
    """Compare two reports (report.json or its directory): a verdict per task, deltas and the limits."""
    import msgspec
    from returns.result import Failure, Success

    from alisio.core.lab.compare import compare_reports
    from alisio.core.lab.render import render_comparison_markdown
    from alisio.shell.lab.store import read_report

    reports = []
    for path in (baseline, candidate):
        match read_report(path):
            case Success(report):
                reports.append(report)
            case Failure(error):
                print(f"alisio eval compare: {error}", file=sys.stderr)
                raise typer.Exit(1)
    match compare_reports(reports[0], reports[1]):
        case Success(comparison):
            if json:
                sys.stdout.write(msgspec.json.encode(comparison).decode() + "\n")
            else:
                sys.stdout.write(render_comparison_markdown(comparison))
        case Failure(incompatible):
            print(f"alisio eval compare: incompatible reports: {incompatible}", file=sys.stderr)
            raise typer.Exit(3)
