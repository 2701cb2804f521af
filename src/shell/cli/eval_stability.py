"""``alisio eval stability REPORT... [--quarantine FILE] [--json]``: which tasks flap across stored reports.

Each REPORT is a report directory, a run id (under ``<dataDir>/eval``), an Inspect AI log or a Harbor job
directory; all must be of one suite id and version. Prints each task's pass rate per report and pooled with Wilson intervals, its flip rate, the tasks
from most to least unstable, and for each unstable task a first hint of the cause
(``alisio.core.lab.comparisons.stability``). ``--quarantine FILE`` writes the unstable task ids, one per line, for
``alisio eval compare --exclude-tasks FILE``.

Exit codes: 0 done (whatever the flips); 1 an unreadable report, reports of different suites, fewer than
two reports, or a FILE that cannot be written (one line).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli import common
from alisio.shell.cli.foreign_flags import PassThreshold, Scorer
from alisio.shell.cli.options import Json

Reports = Annotated[
    list[str],
    typer.Argument(
        help="Report directories, run ids, Inspect AI logs or Harbor job directories (two or more, one suite "
        "version).",
        metavar="REPORT",
    ),
]
Quarantine = Annotated[
    Path | None,
    typer.Option(
        "--quarantine",
        metavar="FILE",
        help="Write the unstable task ids to FILE, one per line (for eval compare --exclude-tasks).",
        show_default=False,
    ),
]


def stability(
    reports: Reports,
    quarantine: Quarantine = None,
    json: Json = False,
    pass_threshold: PassThreshold = None,
    scorer: Scorer = None,
) -> ExitCode:
    """Which tasks flap across stored reports of one suite version, and a first hint of why."""
    import msgspec

    from alisio.core.lab.comparisons.stability import ReportRuns, render_stability
    from alisio.core.lab.comparisons.stability import stability as judge
    from alisio.shell.cli.foreign_flags import refuse_unused, scoring
    from alisio.shell.config_home import data_dir
    from alisio.shell.errors import expect
    from alisio.shell.lab.ci_outputs import check_output_file, write_output_file
    from alisio.shell.lab.preflight import NOTHING_WRITTEN
    from alisio.shell.lab.sources import report_and_runs

    if quarantine is not None:
        check_output_file(quarantine, "--quarantine", NOTHING_WRITTEN)
    root = data_dir(common.environment())
    judged = scoring(pass_threshold, scorer)
    inputs: list[ReportRuns] = []
    read = []
    for ref in reports:
        report, runs = report_and_runs(ref, root, "stability", judged)
        read.append(report)
        conditions = report.conditions
        inputs.append(
            ReportRuns(
                label=ref,
                suite_id=conditions.suite_id,
                suite_version=conditions.suite_version,
                runs=tuple(runs),
            )
        )
    refuse_unused(judged, read)
    found = expect(judge(inputs))
    if quarantine is not None:
        write_output_file(quarantine, "".join(f"{task_id}\n" for task_id in found.unstable), "--quarantine")
        common.say(f"quarantine: {len(found.unstable)} unstable task ids in {quarantine}")
    if json:
        sys.stdout.write(msgspec.json.encode(found).decode() + "\n")
    else:
        sys.stdout.write(render_stability(found))
    return ExitCode.OK
