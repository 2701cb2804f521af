"""``alisio eval power --baseline-rate P --detect DELTA [--alpha A] [--power W] [--tasks T [--task-sd S]]
[--from REPORT] [--json]``: how many runs a comparison needs.

Prints the runs per side for one task (two-proportion test, pooled variance under the null) and, with
``--tasks``, the runs per task for the paired suite comparison over T tasks. Pure arithmetic, no network; with
``--from REPORT`` it reads that report's measured profile (``alisio.core.lab.comparisons.power_profile``).

Exit codes: 0 planned; 1 a missing, non-numeric or out-of-range flag (one line naming the flag).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli.foreign_flags import PassThreshold, Scorer
from alisio.shell.cli.options import Json

if TYPE_CHECKING:
    from alisio.core.lab.comparisons.power_profile import MeasuredProfile
    from alisio.core.lab.sources.foreign import Scoring

# Numbers are read as text and validated by the core, so a bad value is one line naming the flag.
BaselineRate = Annotated[
    str | None,
    typer.Option("--baseline-rate", metavar="P", help="The baseline's success rate, in [0, 1] (required)."),
]
Detect = Annotated[
    str | None,
    typer.Option(
        "--detect",
        metavar="DELTA",
        help="The change of success rate to detect, e.g. 0.1 or -0.1 (required; P + DELTA in [0, 1]).",
    ),
]
Alpha = Annotated[str | None, typer.Option("--alpha", metavar="A", help="Two-sided level (default 0.05).")]
Power = Annotated[str | None, typer.Option("--power", metavar="W", help="Power wanted (default 0.8).")]
Tasks = Annotated[
    str | None,
    typer.Option("--tasks", metavar="T", help="Also plan the paired suite comparison over T tasks (>= 2)."),
]
TaskSd = Annotated[
    str | None,
    typer.Option(
        "--task-sd",
        metavar="S",
        help="With --tasks: standard deviation of the change across tasks (default 0: the same change on "
        "every task, the most optimistic case).",
    ),
]


From = Annotated[
    str | None,
    typer.Option(
        "--from",
        metavar="REPORT",
        help="Plan from a measured report (run id, directory, report.json or bundle): its suite rate, tasks and "
        "within-task variance replace the assumption that every task sits at --baseline-rate with independent "
        "runs; --baseline-rate and --tasks default to the report's.",
    ),
]


def power(
    baseline_rate: BaselineRate = None,
    detect: Detect = None,
    alpha: Alpha = None,
    power: Power = None,
    tasks: Tasks = None,
    task_sd: TaskSd = None,
    source: From = None,
    json: Json = False,
    pass_threshold: PassThreshold = None,
    scorer: Scorer = None,
) -> ExitCode:
    """How many runs per side (and per task) a comparison needs to detect a change with a given power."""
    import msgspec

    from alisio.core.lab.comparisons.power_plan import parse_power_request, plan_power, render_power
    from alisio.shell.cli.foreign_flags import refuse_unused, scoring
    from alisio.shell.errors import expect

    measured = None
    judged = scoring(pass_threshold, scorer)
    if source is None:
        refuse_unused(judged, ())  # without --from nothing is judged
    else:
        measured = _measured(source, judged)
        baseline_rate = baseline_rate if baseline_rate is not None else repr(measured.suite_rate)
        tasks = tasks if tasks is not None else str(measured.tasks)
    request = expect(parse_power_request(baseline_rate, detect, alpha, power, tasks, task_sd))
    if measured is not None:
        request = msgspec.structs.replace(request, measured=measured)
    plan = plan_power(request)
    if json:
        sys.stdout.write(msgspec.json.encode(plan).decode() + "\n")
    else:
        sys.stdout.write(render_power(plan))
    return ExitCode.OK


def _measured(source: str, judged: Scoring) -> MeasuredProfile:
    """The measured profile of the report ``source`` names (a result from another harness judged as
    ``judged`` says).

    Raises:
        CommandError: the report cannot be read, or has no profile to plan from (one line naming --from).
    """
    from alisio.core.lab.comparisons.power_profile import measured_profile
    from alisio.shell.cli import common
    from alisio.shell.cli.foreign_flags import refuse_unused
    from alisio.shell.config_home import data_dir
    from alisio.shell.errors import CommandError, expect
    from alisio.shell.lab.sources import report_of

    try:
        report = report_of(source, data_dir(common.environment()), judged)
    except CommandError as error:
        raise CommandError(f"--from {source}: {error.lines[0]}") from None
    refuse_unused(judged, (report,))
    return expect(measured_profile(report))
