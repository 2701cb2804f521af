"""``alisio eval compare <baseline> <candidate> [--verdict disjoint|exact] [--adjust holm|bh] [--json]``:
compare two reports of the same suite.

Exit codes: 0 compared (whatever the verdicts); 1 unreadable input or an invalid flag value (one line naming
the file or the flag and what is wrong); 3 incompatible suites (different suiteId or suiteVersion).
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
VerdictFlag = Annotated[
    str,
    typer.Option(
        "--verdict",
        metavar="RULE",
        help="disjoint: disjoint 95% Wilson intervals (the spec's conservative screen); exact: the "
        "adjusted Boschloo exact p-value below 0.05.",
    ),
]
AdjustFlag = Annotated[
    str,
    typer.Option(
        "--adjust",
        metavar="METHOD",
        help="Adjustment of the per-task p-values across tasks: holm (family-wise 5%) or bh "
        "(Benjamini-Hochberg, false discovery rate 5%).",
    ),
]


def _choice(flag: str, value: str, choices: tuple[str, ...]) -> str:
    """``value`` when it is one of ``choices``; else one line on stderr and exit 1 (never click's usage)."""
    if value in choices:
        return value
    print(f"alisio eval compare: {flag}: expected {' or '.join(choices)}, got {value!r}", file=sys.stderr)
    raise typer.Exit(1)


def compare(
    baseline: Baseline,
    candidate: Candidate,
    verdict: VerdictFlag = "disjoint",
    adjust: AdjustFlag = "holm",
    json: Json = False,
) -> None:
    """Compare two reports (report.json or its directory): a verdict per task, exact tests, deltas and the
    limits."""
    import msgspec
    from returns.result import Failure, Success

    from alisio.core.lab.compare import compare_reports
    from alisio.core.lab.render_compare import render_comparison_markdown
    from alisio.core.lab.verdict import Adjustment, VerdictRule
    from alisio.shell.lab.store import read_report

    rule = VerdictRule(_choice("--verdict", verdict, tuple(VerdictRule)))
    adjustment = Adjustment(_choice("--adjust", adjust, tuple(Adjustment)))
    reports = []
    for path in (baseline, candidate):
        match read_report(path):
            case Success(report):
                reports.append(report)
            case Failure(error):
                print(f"alisio eval compare: {error}", file=sys.stderr)
                raise typer.Exit(1)
    match compare_reports(reports[0], reports[1], rule=rule, adjustment=adjustment):
        case Success(comparison):
            if json:
                sys.stdout.write(msgspec.json.encode(comparison).decode() + "\n")
            else:
                sys.stdout.write(render_comparison_markdown(comparison))
        case Failure(incompatible):
            print(f"alisio eval compare: incompatible reports: {incompatible}", file=sys.stderr)
            raise typer.Exit(3)
