"""The flags of a plan and its shards: ``--plan FILE``, ``--shard I/N``, ``--balance-from REPORT``, ``--reuse
RUN|DIR`` and ``--dry-run`` (``eval run`` and ``eval variants``; ``eval record`` takes ``--dry-run``).

Each command takes the group (``PlanFlags``; ``eval record`` omits all but ``--dry-run``) and puts it on its
request here, refusing,
one line each and before anything runs, what cannot be: ``--shard`` with a sequential design or
``--fail-on`` (a shard sees a slice of each task's runs, and draws no verdict), ``--balance-from`` without
``--shard``, any of them with ``--resume`` (a resume continues its own run, slice and reuse included), and
with ``--plan FILE`` a flag that says something else than the plan (``-k: the plan says 10, given 5``).
Import only typer and the standard library at module level: ``alisio --help`` must stay fast.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from alisio.shell.cli.options import option

if TYPE_CHECKING:
    from alisio.core.lab.plans.manifest import RunManifest
    from alisio.core.lab.plans.shards import TaskWeight
    from alisio.shell.cli.resume_flags import Given
    from alisio.shell.lab.request import LabRequest

__all__ = ["PLAN", "PlanFlags", "plan_request", "refuse_with_resume", "with_plan_flags"]

PLAN = "Plan"

DryRun = Annotated[
    bool,
    option(
        "--dry-run",
        help="Print the plan (tasks x k x variants, the shard, what would be reused) and an estimate of its "
        "tokens, cost and wall time from the stored runs of this suite and model; run nothing, spend nothing.",
        panel=PLAN,
    ),
]


@dataclass(frozen=True)
class PlanFlags:
    """Plan: run a plan or a slice of it (a shard), reuse stored runs, or only preview."""

    plan: Annotated[
        Path | None,
        option(
            "--plan",
            help="Run the plan eval plan wrote (its suite, tasks, k, seed, provider and configuration), "
            "refused if this machine would measure something else; with --shard, a slice of it.",
            panel=PLAN,
            metavar="FILE",
            show_default=False,
        ),
    ] = None
    shard: Annotated[
        str | None,
        option(
            "--shard",
            help="Run only shard I of N of the plan (1-based): each (task, repetition) belongs to one shard; "
            "merge the shards with eval merge.",
            panel=PLAN,
            metavar="I/N",
            show_default=False,
        ),
    ] = None
    balance_from: Annotated[
        str | None,
        option(
            "--balance-from",
            help="With --shard: balance the shards by each task's median wall time in this report (a run id, "
            "a report directory or its report.json); every shard must be given the same one.",
            panel=PLAN,
            metavar="REPORT",
            show_default=False,
        ),
    ] = None
    reuse: Annotated[
        str | None,
        option(
            "--reuse",
            help="Take the runs of this stored run (a run id or a report directory) that measured what this "
            "command measures (same suite content, configuration, agent, model, endpoint, mode) instead "
            "of running them.",
            panel=PLAN,
            metavar="RUN|DIR",
            show_default=False,
        ),
    ] = None
    dry_run: DryRun = False


def refuse_with_resume(flags: PlanFlags) -> None:
    """``--resume`` continues its own run: a plan, a shard, a reuse or a dry run is refused with it.

    Raises:
        CommandError: the first such flag given.
    """
    from alisio.shell.errors import CommandError

    for given, flag, why in (
        (flags.plan, "--plan", "a resume runs its own plan.json"),
        (flags.shard, "--shard", "a resumed shard runs its own slice"),
        (flags.balance_from, "--balance-from", "a resumed shard runs its own slice"),
        (flags.reuse, "--reuse", "a resume keeps the runs it has"),
        (flags.dry_run or None, "--dry-run", "a resume runs what is left of its own plan"),
    ):
        if given is not None:
            raise CommandError(f"{flag} does not go with --resume: {why}")


def _weights(ref: str, env: dict[str, str]) -> tuple[TaskWeight, ...]:
    """Each task's median wall time in the report ``ref`` names (tasks without a judged run left out).

    Raises:
        CommandError: the report cannot be read, or it has no task with a judged run.
    """
    from alisio.core.lab.plans.shards import TaskWeight
    from alisio.shell.config_home import data_dir
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.sources import report_of

    report = report_of(ref, data_dir(env))
    weights = tuple(
        TaskWeight(task_id=t.task_id, ms=max(1, round(t.measured.wall_ms_median)))
        for t in report.tasks
        if t.measured.wall_ms_median is not None
    )
    if not weights:
        raise CommandError(f"--balance-from {ref}: the report has no task with a judged run to time")
    return weights


def with_plan_flags(request: LabRequest, flags: PlanFlags) -> LabRequest:
    """``request`` with the shard, the reuse and the dry run of ``flags``.

    Raises:
        CommandError: what the module docstring refuses (nothing was run).
    """
    from alisio.core.lab.plans.shards import ShardChoice, parse_shard
    from alisio.shell.errors import CommandError, expect

    if flags.balance_from is not None and flags.shard is None:
        raise CommandError("--balance-from goes with --shard I/N (it balances the shards' wall times)")
    shard = request.shard  # a resumed shard's own, or none
    if flags.shard is not None:
        index, count = expect(parse_shard(flags.shard), error=CommandError)
        if request.sequential is not None:
            gate = request.sequential.side == "not-worse"
            raise CommandError(
                "--fail-on does not go with --shard: a shard holds a slice of each task's runs, so it draws "
                "no verdict; gate the merged report (eval merge SHARD_DIR... --fail-on ...)"
                if gate
                else "--shard does not go with a sequential design: each task's stop is decided from all its "
                "runs as they finish, which no shard sees; run it on one machine (or with --executor ray)"
            )
        weights = _weights(flags.balance_from, dict(request.env)) if flags.balance_from is not None else ()
        shard = ShardChoice(index=index, count=count, weights=weights, balance_from=flags.balance_from)
    if flags.reuse is not None and request.sequential is not None:
        raise CommandError("--reuse does not go with a sequential design (its runs must be run in order)")
    out = request.output.out
    if (
        flags.reuse is not None
        and out is not None
        and Path(flags.reuse).expanduser().resolve() == out.resolve()
    ):
        raise CommandError(
            f"--reuse {flags.reuse} is the --out directory this command writes: reuse another run"
        )
    return dataclasses.replace(request, shard=shard, reuse=flags.reuse, dry_run=flags.dry_run)


def _plan_conflicts(stored: RunManifest, given: Given) -> list[str]:
    """One line per flag given with ``--plan`` that says something else than the plan."""
    s, p, o = given.selection, given.permissions, given.output
    lines = []
    if given.suite is not None and given.suite != stored.suite_id:
        lines.append(f"SUITE: the plan runs {stored.suite_id}, given {given.suite}")
    if s.tasks is not None and s.tasks.split(",") != list(stored.tasks):
        lines.append(f"--tasks: the plan runs {','.join(stored.tasks)}, given {s.tasks}")
    if s.k is not None and s.k != stored.k:
        lines.append(f"-k: the plan says {stored.k}, given {s.k}")
    if s.seed != 0 and s.seed != stored.seed:
        lines.append(f"--seed: the plan says {stored.seed}, given {s.seed}")
    for effect, on in p.granted().items():
        if on and effect not in stored.granted:
            lines.append(f"--allow-{effect}: the plan does not grant it")
    if str(given.provider.mode) != str(stored.mode) and str(given.provider.mode) != "live":
        lines.append(f"--mode: the plan says {stored.mode}, given {given.provider.mode}")
    if given.provider.agent is not None and given.provider.agent != stored.agent:
        lines.append(f"--agent: the plan says {stored.agent or 'none'}, given {given.provider.agent}")
    if o.input_rate is not None or o.output_rate is not None:
        lines.append("--input-rate/--output-rate: the plan carries its own rates")
    return lines


def plan_request(path: Path, given: Given, variants_file: Path | None = None) -> LabRequest:
    """The request that runs the plan ``path`` holds (``--plan FILE``); ``--suite-dir``, ``--script``,
    ``--cassette-dir`` and ``--variants`` may say where those are on this machine.

    Raises:
        CommandError: the file cannot be read, is a variants plan given to eval run (or the reverse), or a
            flag says something else than the plan.
    """
    from alisio.core.lab.plans.manifest import decode_manifest
    from alisio.shell.cli import common
    from alisio.shell.errors import CommandError, expect
    from alisio.shell.lab.resume import manifest_request
    from alisio.shell.lab.store import read_regular

    try:
        data = read_regular(path)
    except OSError as error:
        raise CommandError(f"--plan {path}: cannot read: {error.strerror or error}") from None
    stored = expect(decode_manifest(data, str(path)), error=CommandError)
    if bool(stored.variants) != given.variants:
        command = "eval variants" if stored.variants else "eval run"
        raise CommandError(
            f"--plan {path}: a plan of {'an ' if command == 'eval run' else ''}{command}: run it with alisio {command} --plan {path}"
        )
    conflicts = _plan_conflicts(stored, given)
    if conflicts:
        raise CommandError(*conflicts, f"nothing was run: --plan {path} says what to run")
    provider = given.provider
    request = manifest_request(
        stored,
        model=provider.model,
        base_url=provider.base_url,
        preset=provider.preset,
        output=common.output(given.output),
        jobs=common.jobs(given.execution.jobs),
        env=common.environment(),
        variants_file=variants_file,
        suite_dir=given.selection.suite_dir,
        script=provider.script,
        cassette_dir=provider.cassette_dir,
        context_file=provider.context,
    )
    _exists(stored, request)
    return dataclasses.replace(request, planned=stored, planned_from=path)


def _exists(stored: RunManifest, request: LabRequest) -> None:
    """The plan's suite directory and script exist here, else a one-line hint to give where they are.

    Raises:
        CommandError: a path of the plan is missing on this machine.
    """
    from alisio.shell.errors import CommandError

    for path, flag in (
        (request.selection.suite_dir, "--suite-dir DIR"),
        (request.provider.script, "--script FILE|DIR"),
        (request.context_file, "--context FILE"),
        (request.variants_file, "--variants FILE"),
    ):
        if path is not None and not path.exists():
            raise CommandError(
                f"--plan: {path} does not exist on this machine: give {flag} where it is here (its content "
                "is checked against the plan)"
            )
