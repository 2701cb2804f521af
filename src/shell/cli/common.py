"""What the lab commands share: stderr lines, the terminal prompt, and turning flags into a ``LabRequest``.

Light at import time (only the standard library and typer's option types): heavy modules are imported inside
the functions, so ``alisio --help`` stays fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from alisio.shell.cli.options import (
    ExecutionFlags,
    ExecutorChoice,
    OutputFlags,
    PermissionFlags,
    ProviderFlags,
    check_min,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from alisio.core.exit_codes import ExitCode
    from alisio.core.harness.faults import FaultSpec
    from alisio.core.lab.runs.records import RunRecord
    from alisio.shell.lab.model import LabOutcome, LabStart, Ui
    from alisio.shell.lab.request import (
        ExecutorKind,
        LabRequest,
        Output,
        Permissions,
        ProviderOptions,
        Selection,
    )


def say(line: str) -> None:
    """Write one line for people on stderr (stdout is data), made safe (``shown``), and flush it at once."""
    from alisio.shell.cli.safe_text import shown

    sys.stderr.write(shown(line) + "\n")
    sys.stderr.flush()


def ask(question: str) -> str:
    """Ask ``question`` on stderr and return the answer line read from stdin."""
    sys.stderr.write(question)
    sys.stderr.flush()
    return sys.stdin.readline()


def interactive_terminal() -> bool:
    """Whether a person can answer on this terminal (stdin and stderr are both terminals)."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def out(data: str | bytes) -> None:
    """Write data on stdout and flush it."""
    if isinstance(data, str):
        sys.stdout.write(data)
    else:
        sys.stdout.buffer.write(data)
    sys.stdout.flush()


def ui(**hooks: object) -> Ui:
    """The pipeline's ``Ui`` on this terminal, with the given ``on_start``/``on_record`` hooks."""
    from alisio.shell.lab.model import Ui

    return Ui(say=say, ask=ask, interactive=interactive_terminal(), **hooks)  # type: ignore[arg-type]


def selection(
    suite: str | None,
    tasks: str | None,
    k: int | None,
    seed: int,
    suite_dir: Path | None,
    yes: bool,
    default_k: int,
) -> Selection:
    """The request's Selection from its flags (``--k`` and ``--seed`` checked here: one-line errors); with no
    SUITE, the one suite ``--suite-dir`` holds; a SUITE that is a path is that ``--suite-dir``'s suite."""
    from alisio.core.lab.suites.schedule import MAX_K
    from alisio.shell.lab.request import Selection
    from alisio.shell.lab.suite_choice import only_suite

    check_min("--k", k, 1, MAX_K)
    suite, suite_dir = suite_and_dir(suite, suite_dir)
    if suite is None:
        suite = only_suite(suite_dir)
    check_min("--k", k, 1)
    check_min("--seed", seed, 0)
    wanted = tuple(tasks.split(",")) if tasks is not None else None
    return Selection(
        suite=suite, tasks=wanted, k=default_k if k is None else k, seed=seed, suite_dir=suite_dir, yes=yes
    )


def suite_and_dir(suite: str | None, suite_dir: Path | None) -> tuple[str | None, Path | None]:
    """SUITE and ``--suite-dir`` as ``find_suite`` takes them: a SUITE that names a path (``suite_path``)
    becomes the ``--suite-dir`` it amounts to and the suite's name there (``suite_at``).

    Raises:
        CommandError: a SUITE path with ``--suite-dir`` too, or a path that holds no suite or several.
    """
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.suite_choice import suite_at, suite_path

    path = suite_path(suite) if suite is not None else None
    if path is None:
        return suite, suite_dir
    if suite_dir is not None:
        if "/" not in str(suite) and not str(suite).endswith(".json"):
            return suite, suite_dir  # a name that also exists here: --suite-dir says where to look
        raise CommandError(f"SUITE {suite} is a path: give it alone, or its name with --suite-dir")
    return suite_at(path)


def provider(flags: ProviderFlags) -> ProviderOptions:
    from alisio.shell.lab.request import ProviderOptions

    return ProviderOptions(
        model=flags.model,
        base_url=flags.base_url,
        preset=flags.preset,
        script=flags.script,
        agent=flags.agent,
        faults=faults_of(getattr(flags, "faults", None)),
    )


def faults_of(text: str | None) -> FaultSpec | None:
    """``--faults SPEC`` checked (``None``: not given, or ``none``).

    Raises:
        CommandError: one line naming the flag and what is wrong with the spec.
    """
    from returns.result import Failure

    from alisio.core.harness.faults import parse_faults
    from alisio.shell.errors import CommandError

    if text is None:
        return None
    parsed = parse_faults(text)
    if isinstance(parsed, Failure):
        raise CommandError(f"--faults {parsed.failure()}")
    spec: FaultSpec | None = parsed.unwrap()
    return spec


def permissions(flags: PermissionFlags) -> Permissions:
    from alisio.shell.lab.request import Permissions

    return Permissions(
        write=flags.allow_write,
        process=flags.allow_process,
        external=flags.allow_external,
        analysis=flags.allow_analysis,
        read_only=flags.read_only,
        allow_suite_full=flags.allow_suite_full,
    )


def output(flags: OutputFlags) -> Output:
    from alisio.shell.lab.request import Output

    return Output(
        out=flags.out,
        force=flags.force,
        keep=flags.keep,
        json=flags.json_output,
        quiet=flags.quiet,
        junit=flags.junit,
        step_summary=True,
        label=label_of(flags.label),
    )


def label_of(text: str | None) -> str | None:
    """``--label TEXT``, checked: one line of at most 200 printable characters (a name, shown in tables)."""
    from alisio.shell.errors import CommandError

    if text is None:
        return None
    if not text.strip() or len(text) > 200 or not text.isprintable():
        raise CommandError("--label: expected one line of 1 to 200 printable characters")
    return text


def environment() -> dict[str, str]:
    """The process environment, as the request carries it."""
    return dict(os.environ)


def jobs(value: int | None) -> int | None:
    """``--jobs`` checked (at least 1: a one-line usage error otherwise)."""
    check_min("--jobs", value, 1)
    return value


def run_lab(
    request: LabRequest,
    *,
    line: Callable[[int, int, RunRecord], str],
    headline: Callable[[LabStart], None],
    quiet: bool,
    each: Callable[[RunRecord], None] = lambda record: None,
) -> LabOutcome:
    """Run ``request`` through the pipeline with this terminal's progress (``alisio.shell.cli.live``).

    The live status starts once every check passed and the headline is printed (never during a prompt),
    and ends before the command prints its results. ``each`` sees every finished record (``--json``).
    """
    from contextlib import ExitStack

    from alisio.shell.cli.live import Progress
    from alisio.shell.lab.pipeline import run_request

    progress = Progress(line, quiet=quiet)
    with ExitStack() as stack:

        def on_start(start: LabStart) -> None:
            if not quiet:
                headline(start)
            progress.planned(start.planned, {arm.variant: arm.rates for arm in start.arms})
            stack.enter_context(progress.shown())

        def on_record(record: RunRecord, done: int, total: int) -> None:
            progress.run_finished(record, done, total)
            each(record)

        return run_request(
            request,
            ui(
                on_start=on_start,
                on_record=on_record,
                on_run_start=progress.run_started,
                on_run_end=progress.run_ended,
                on_event=progress.on_event,
            ),
        )


def shard_note(start: LabStart) -> str:
    """``, shard 2 of 4: 3 runs`` for a headline when the command runs a shard of the plan; else nothing."""
    if start.shard is None or start.owned is None:
        return ""
    runs = len(start.owned)
    return f", shard {start.shard.index} of {start.shard.count}: {runs} run{'s' if runs != 1 else ''}"


def shard_lines(outcome: LabOutcome) -> list[str]:
    """What a shard's command says after its report: it is partial, and how the shards are merged."""
    start = outcome.start
    if start.shard is None:
        return []
    index, count = start.shard.index, start.shard.count
    return [
        f"shard {index} of {count}: its figures are partial by construction and it draws no verdict; when the "
        f"{count} shards are done, merge them: alisio eval merge SHARD_DIR... --out DIR"
    ]


def show_dry_run(request: LabRequest) -> ExitCode:
    """``--dry-run``: the plan and its estimate on stdout (nothing run); exit 0."""
    from alisio.core.exit_codes import ExitCode
    from alisio.shell.lab.dry_run import dry_run

    for line in dry_run(request, ui()):
        out(line + "\n")
    return ExitCode.OK


def naming_note(start: LabStart, arm: int = 0) -> str:
    """``agent codex (codex-cli 0.171.0)``, ``agent alisio 0.4.0, script 1a2b...``: what names the run, as
    its report's conditions will (``alisio.core.lab.reports.naming``)."""
    from alisio.core.lab.reports.naming import naming_brief
    from alisio.shell.lab.conditions import arm_conditions

    return f"agent {naming_brief(arm_conditions(start, start.arms[arm], ''))}"


def at_once(jobs: int, runs: int) -> str:
    """``2 at once`` for a headline: the runs that can be in flight together, never more than there are runs
    (one task recorded with 4 jobs runs 1 at once)."""
    return f"{max(1, min(jobs, runs))} at once"


def sandbox_note(start: LabStart) -> str:
    """``, sandbox bwrap`` for a headline when commands run in a sandbox; nothing without one (the
    report's conditions say ``none``)."""
    return "" if start.sandbox == "none" else f", sandbox {start.sandbox}"


def with_executor(request: LabRequest, flags: ExecutionFlags) -> LabRequest:
    """``request`` with ``--executor``, the Ray address (see ``executor``), the sandbox and the caps of ``flags``.

    Raises:
        CommandError: ``--max-total-tokens`` below 1, or ``--max-cost-usd`` not a positive number.
    """
    import dataclasses
    import math

    from alisio.core.harness.sandbox import SandboxKind
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.request import Caps

    kind, address = executor(flags, request.env)
    sandbox = SandboxKind(flags.sandbox) if flags.sandbox is not None else request.sandbox
    check_min("--max-total-tokens", flags.max_total_tokens, 1)
    cost = flags.max_cost_usd
    if cost is not None and not (math.isfinite(cost) and cost > 0):
        raise CommandError(f"--max-cost-usd is USD, more than 0, got {cost:g}")
    caps = Caps(max_total_tokens=flags.max_total_tokens, max_cost_usd=cost)
    return dataclasses.replace(request, executor=kind, ray_address=address, sandbox=sandbox, caps=caps)


def executor(flags: ExecutionFlags, env: Mapping[str, str]) -> tuple[ExecutorKind, str | None]:
    """``--executor`` and the Ray address (``--ray-address``, else ``RAY_ADDRESS`` in ``env``).

    Raises:
        CommandError: ``--executor ray`` without Ray installed (saying how to install it), or ``--ray-address``
            without ``--executor ray``.
    """
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.request import ExecutorKind

    if flags.executor is not ExecutorChoice.RAY:
        if flags.ray_address is not None:
            raise CommandError("--ray-address is only used with --executor ray")
        return ExecutorKind.THREAD, None
    from alisio.shell.lab.ray_executor import require_ray

    address = flags.ray_address if flags.ray_address is not None else env.get("RAY_ADDRESS") or None
    require_ray(local=address is None)
    return ExecutorKind.RAY, address
