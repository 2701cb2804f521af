"""``alisio eval plan SUITE [run flags] --out plan.json``: write a command's whole plan without running it.

- The flags are ``eval run``'s that say what to run (the selection, the provider, the grants, the rates,
  the sandbox, ``--label``) and ``--variants FILE`` for an ``eval variants`` job. Everything ``eval run``
  checks before its first run is checked (``alisio.shell.lab.prepare.preview_request``); nothing runs and
  nothing is spent.
- plan.json is the plan.json of a report directory (``alisio.core.lab.plans.manifest``: the suite, its content
  hash, tasks, k, seed, mode, provider, model, endpoint, configuration hash, grants, agents, sandbox) with
  the plan's digest and every run in order: its task, repetition, variant, seed and fingerprint.
- ``eval run --plan plan.json --shard I/N`` (``eval variants --plan``) runs a slice of it where a scheduler
  puts it (a CI matrix job, a Kubernetes Job index, a Slurm array task), refused if that machine would
  measure something else; ``eval merge`` pools the slices.
- A suite from outside the bundled ones is confirmed here, as ``eval run`` confirms it (a warning, then a
  question on a terminal, else ``--yes``): ``eval run --plan`` runs the plan without asking again.
- ``--out FILE`` must be a new name or a regular file (``--force`` replaces it). Exit 0; 1 for anything
  ``eval run`` would refuse.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli import common
from alisio.shell.cli.common import say
from alisio.shell.cli.options import (
    OUTPUT,
    SELECTION,
    ExecutionFlags,
    Force,
    InputRate,
    ModeFlag,
    OutputRate,
    PermissionFlags,
    ProviderFlags,
    SelectionFlags,
    SuiteArg,
    grouped,
)

if TYPE_CHECKING:
    from alisio.shell.lab.request import LabRequest

PlanOut = Annotated[
    Path,
    typer.Option(
        "--out", help="Write the plan to this file (plan.json).", metavar="FILE", rich_help_panel=OUTPUT
    ),
]
VariantsFile = Annotated[
    Path | None,
    typer.Option(
        "--variants",
        help="An eval variants job's compare.json: the plan of its variants, interleaved.",
        metavar="FILE",
        show_default=False,
        rich_help_panel=SELECTION,
    ),
]
Label = Annotated[
    str | None,
    typer.Option("--label", help="A name for the runs of the plan.", metavar="TEXT", rich_help_panel=OUTPUT),
]


@grouped
def plan(
    selection: SelectionFlags,
    provider: ProviderFlags,
    permissions: PermissionFlags,
    execution: ExecutionFlags,
    out: PlanOut,
    force: Force = False,
    variants_file: VariantsFile = None,
    input_rate: InputRate = None,
    output_rate: OutputRate = None,
    label: Label = None,
    suite: SuiteArg = None,
) -> ExitCode:
    """Write the whole ordered plan of a run (each run's task, repetition, variant, seed and fingerprint) to
    plan.json, without running anything: eval run --plan FILE --shard I/N runs a slice of it."""
    import msgspec

    from alisio.core.lab.plans.manifest import encode_manifest
    from alisio.core.lab.plans.plan_key import planned_runs
    from alisio.core.text import plural
    from alisio.shell.lab.ci_outputs import write_output_file
    from alisio.shell.lab.prepare import preview_request
    from alisio.shell.lab.suite_choice import confirm_third_party

    _refuse_flags(provider, variants_file, out, force)
    request = _request(
        suite, selection, provider, permissions, execution, variants_file, (input_rate, output_rate), label
    )
    request = common.with_executor(request, execution)
    ui = common.ui()
    preview = preview_request(request, ui)
    # eval run --plan runs the plan without asking again: a suite from outside the bundled ones is confirmed here
    confirm_third_party(
        preview.start.choice,
        yes=selection.yes,
        interactive=ui.interactive,
        say=ui.say,
        ask=functools.partial(ui.ask, "Plan it (eval run --plan runs it without asking)? [y/N] "),
        sandboxed=preview.manifest.sandbox == "bwrap",
    )
    written = msgspec.structs.replace(preview.manifest, runs=planned_runs(preview.manifest, preview.plan))
    write_output_file(out, encode_manifest(written).decode(), "--out")
    start = preview.start
    command = "eval variants" if variants_file is not None else "eval run"
    arms = f"{len(start.arms)} variants x " if start.variants is not None else ""
    say(
        f"wrote {out}: {start.choice.loaded.suite.suite_id} {start.choice.loaded.suite.suite_version}, {arms}"
        f"{plural(len(start.tasks), 'task')} x k={start.k} = {plural(len(preview.plan), 'run')} "
        f"(plan {(written.digest or '')[:16]}); nothing was run"
    )
    say(f"run it: alisio {command} --plan {out} (a slice of it: --shard I/N; then alisio eval merge)")
    return ExitCode.OK


def _refuse_flags(provider: ProviderFlags, variants_file: Path | None, out: Path, force: bool) -> None:
    """What eval plan refuses before it reads the suite: replay with variants, --cassette-dir without replay,
    an --out that exists (without --force) or cannot be written.

    Raises:
        CommandError: one line naming the flag; nothing was written.
    """
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.ci_outputs import check_output_file
    from alisio.shell.lab.preflight import NOTHING_WRITTEN

    replay = provider.mode is ModeFlag.REPLAY
    if replay and variants_file is not None:
        raise CommandError("variants refuses replay: it compares configurations, replay pins one")
    if provider.cassette_dir is not None and not replay:
        raise CommandError("--cassette-dir is only used with --mode replay")
    if (out.exists() or out.is_symlink()) and not force:
        raise CommandError(f"--out {out} already exists: pass --force to replace it; nothing was written")
    check_output_file(out, "--out", NOTHING_WRITTEN)


def _request(
    suite: str | None,
    s: SelectionFlags,
    provider: ProviderFlags,
    permissions: PermissionFlags,
    execution: ExecutionFlags,
    variants_file: Path | None,
    rates: tuple[float | None, float | None],
    label: str | None,
) -> LabRequest:
    from alisio.shell.lab.request import LabMode, LabRequest, Output, rates_from

    replay = provider.mode is ModeFlag.REPLAY
    return LabRequest(
        selection=common.selection(suite, s.tasks, s.k, s.seed, s.suite_dir, s.yes, 1 if replay else 5),
        mode=LabMode.REPLAY if replay else LabMode.LIVE,
        provider=common.provider(provider),
        permissions=common.permissions(permissions),
        output=Output(label=common.label_of(label)),
        variants_file=variants_file,
        context_file=provider.context,
        cassette_dir=provider.cassette_dir,
        rates=rates_from(*rates),
        env=common.environment(),
        jobs=common.jobs(execution.jobs),
    )
