"""``alisio eval record SUITE``: run each selected task once, live, and write its cassette.

- The global flags work as in ``alisio run`` (``--allow-*``, ``--read-only``, ``--model``, ``--base-url``):
  a task that needs an effect that was not granted is refused before the first run, as in ``eval run``.
- The provider is the configured one, or ``--script FILE|DIR`` as in ``eval run``. Each call is recorded with
  the request the harness sent, normalised with the run's own rules (the workspace becomes ``<workspace>``,
  the task's replayNormalize applies), and the events received.
- Cassettes go to ``<cassette-dir>/<task-id>.jsonl`` (default ``<suite>/cassettes``), all or none: a cassette
  that holds a secret or exceeds 256 KB (2 MB per directory) is refused, naming the task and the field, never
  the value; nothing is written; exit 1. A recording stopped early (Ctrl-C, a refused key) writes nothing.
- A task whose recorded run does not pass is still recorded, with a warning: its cassette replays that run.
- stderr: one line per run, then one per cassette written. ``--json``: one JSON object per cassette on stdout
  (``taskId``, ``path``, ``calls``, ``bytes``, ``status``, ``reason``).
- Exit 0 when every cassette was written; 1 on a usage or infrastructure error, a refused cassette, or when
  some recorded run ended error (its cassette is still written); 130 after Ctrl-C.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.core.text import plural
from alisio.shell.cli import common
from alisio.shell.cli.common import say
from alisio.shell.cli.options import (
    OUTPUT,
    ExecutionFlags,
    OutputFlags,
    PermissionFlags,
    ProviderFlags,
    SelectionFlags,
    SuiteArg,
    Take,
    grouped,
)
from alisio.shell.cli.plan_flags import PlanFlags

if TYPE_CHECKING:
    from alisio.shell.lab.model import LabOutcome, LabStart

CassetteDir = Annotated[
    Path | None,
    typer.Option(
        "--cassette-dir",
        help="Where to write (default <suite>/cassettes).",
        metavar="DIR",
        rich_help_panel=OUTPUT,
    ),
]


RECORD_OUTPUT = Take(omit=("out", "force", "junit", "input_rate", "output_rate", "label"))
"""A recording writes cassettes, not a report: no report directory, CI files, rates or label."""


@grouped
def record(
    selection: Annotated[SelectionFlags, Take(omit=("k",))],  # each task runs once
    provider: Annotated[ProviderFlags, Take(omit=("mode", "cassette_dir"))],  # live; it writes the cassettes
    permissions: PermissionFlags,
    output: Annotated[OutputFlags, RECORD_OUTPUT],
    execution: ExecutionFlags,
    plan: Annotated[PlanFlags, Take(omit=("plan", "shard", "balance_from", "reuse"))],  # --dry-run
    cassette_dir: CassetteDir = None,
    suite: SuiteArg = None,
) -> ExitCode:
    """Run each selected task once and write its cassette (<suite>/cassettes/<task-id>.jsonl)."""
    from alisio.core.lab.outputs.progress import progress_line
    from alisio.shell.cli.plan_flags import with_plan_flags
    from alisio.shell.lab.request import LabMode, LabRequest, Output

    s = selection
    request = LabRequest(
        selection=common.selection(suite, s.tasks, None, s.seed, s.suite_dir, s.yes, 1),
        mode=LabMode.RECORD,
        provider=common.provider(provider),
        permissions=common.permissions(permissions),
        output=Output(keep=output.keep, json=output.json_output, quiet=output.quiet),
        cassette_dir=cassette_dir,
        context_file=provider.context,
        env=common.environment(),
        jobs=common.jobs(execution.jobs),
    )
    request = with_plan_flags(common.with_executor(request, execution), plan)
    if request.dry_run:
        return common.show_dry_run(request)
    outcome = common.run_lab(request, line=progress_line, headline=_headline, quiet=output.quiet)
    return _show(outcome, output.json_output)


def _headline(start: LabStart) -> None:
    suite = start.choice.loaded.suite
    noun = "task" if len(start.tasks) == 1 else "tasks"
    plan = start.provider
    say(
        f"recording {suite.suite_id} {suite.suite_version}: {len(start.tasks)} {noun} ({plan.id}, {plan.model}"
        f"{plan.key_note}, {common.naming_note(start)}, {common.at_once(start.jobs, len(start.tasks))}"
        f"{common.sandbox_note(start)})"
    )


def _show(outcome: LabOutcome, json_output: bool) -> ExitCode:
    import msgspec

    encoder = msgspec.json.Encoder()
    for item in outcome.recorded:
        say(f"wrote {item.path} ({plural(item.calls, 'call')}, {item.size / 1024:.1f} KB)")
        if item.status != "pass":
            why = f" ({item.reason})" if item.reason else ""
            say(
                f"warning: task {item.task_id}: the recorded run ended {item.status}{why}; "
                "its cassette replays that run"
            )
        if json_output:
            line = {
                "taskId": item.task_id,
                "path": str(item.path),
                "calls": item.calls,
                "bytes": item.size,
                "status": str(item.status),
                "reason": item.reason,
            }
            common.out(encoder.encode(line) + b"\n")
    capped = next((arm.report.capped for arm in outcome.arms if arm.report.capped), None)
    if capped is not None:  # a recording is whole or nothing: a cap only bounds what it spends
        runs = f"{len(outcome.records)} of {outcome.start.planned} runs"
        say(f"stopped by {capped} after {runs} ({outcome.stopped}): no cassette was written")
    elif outcome.stopped is not None:
        what = "interrupted" if outcome.interrupted is not None else "stopped"
        say(f"{what} ({outcome.stopped}): no cassette was written")
    return outcome.exit_code
