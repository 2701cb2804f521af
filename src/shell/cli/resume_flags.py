"""``eval run|variants ... --resume DIR|RUN_ID``: the flags of the original command line, checked against
plan.json, and the request that continues the run (``continue_request``).

A user naturally re-types the command that started the run and appends ``--resume``. Each flag that
plan.json recorded is accepted when it says what was stored, and refused when it differs, naming the stored
value and the given one (``-k: the run started with 5, given 9``). A flag left at its default says nothing
and is accepted. ``--force`` is refused: it replaces a report, which a resume continues. ``--model`` and
``--base-url`` are checked by the pipeline against the stored model and endpoint (``differences``), and
``eval variants``' ``--variants FILE`` (the file where it is now) by what each variant measures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from alisio.core.lab.plans.manifest import RunManifest
from alisio.core.lab.reports.report import Rates
from alisio.shell.cli.options import (
    ExecutionFlags,
    ModeFlag,
    OutputFlags,
    PermissionFlags,
    ProviderFlags,
    ResumeFlags,
    SelectionFlags,
)

if TYPE_CHECKING:
    from alisio.core.lab.reports.seq_block import SequentialPlan
    from alisio.shell.lab.request import LabRequest

__all__ = ["Given", "continue_request", "resume_conflicts", "with_design"]


def _path(value: str | None) -> str:
    return value if value is not None else "none"


def _same_path(given: Path, stored: str | None) -> bool:
    return stored is not None and given.resolve() == Path(stored)


def _selection(stored: RunManifest, suite: str | None, selection: SelectionFlags) -> list[str]:
    lines = []
    stored_dir = Path(stored.suite_dir) if stored.suite_dir else None
    if suite is not None and suite not in (stored.suite_id, stored_dir.name if stored_dir else None):
        lines.append(f"SUITE: the run started with {stored.suite_id}, given {suite}")
    if selection.tasks is not None and set(selection.tasks.split(",")) != set(stored.tasks):
        lines.append(f"--tasks: the run started with {','.join(stored.tasks)}, given {selection.tasks}")
    if selection.k is not None and selection.k != stored.k:
        lines.append(f"-k: the run started with {stored.k}, given {selection.k}")
    if selection.seed != 0 and selection.seed != stored.seed:  # 0 is the default: not given
        lines.append(f"--seed: the run started with {stored.seed}, given {selection.seed}")
    if selection.suite_dir is not None and not (
        _same_path(selection.suite_dir, stored.suite_dir)
        or (stored_dir is not None and selection.suite_dir.resolve() == stored_dir.parent)
    ):
        lines.append(
            f"--suite-dir: the run started with {_path(stored.suite_dir)}, given {selection.suite_dir}"
        )
    return lines


def _provider(stored: RunManifest, provider: ProviderFlags) -> list[str]:
    lines = []
    cassette_dir = provider.cassette_dir
    if provider.script is not None and not _same_path(provider.script, stored.script):
        lines.append(f"--script: the run started with {_path(stored.script)}, given {provider.script}")
    if provider.context is not None and not _same_path(provider.context, stored.context_file):
        lines.append(
            f"--context: the run started with {_path(stored.context_file)}, given {provider.context}"
        )
    if provider.mode is not ModeFlag.LIVE and str(provider.mode) != str(stored.mode):
        lines.append(f"--mode: the run started with {stored.mode}, given {provider.mode}")
    if cassette_dir is not None and not _same_path(cassette_dir, stored.cassette_dir):
        lines.append(
            f"--cassette-dir: the run started with {_path(stored.cassette_dir)}, given {cassette_dir}"
        )
    if provider.faults is not None:
        from alisio.core.harness.faults import spec_text
        from alisio.shell.cli.common import faults_of

        given = faults_of(provider.faults)
        if (None if given is None else spec_text(given)) != stored.faults:
            lines.append(f"--faults: the run started with {stored.faults or 'none'}, given {provider.faults}")
    return lines


def _permissions(stored: RunManifest, permissions: PermissionFlags) -> list[str]:
    lines = []
    for effect, given in permissions.granted().items():
        if given and effect not in stored.granted:
            lines.append(f"--allow-{effect}: the run started without it")
    if permissions.read_only and not stored.read_only:
        lines.append("--read-only: the run started without it")
    if permissions.allow_suite_full and not stored.allow_suite_full:
        lines.append("--allow-suite-full: the run started without it")
    return lines


def _rates(rates: Rates | None) -> str:
    return (
        "none" if rates is None else f"--input-rate {rates.input_rate:g} --output-rate {rates.output_rate:g}"
    )


def _output(stored: RunManifest, directory: Path, output: OutputFlags) -> list[str]:
    lines = []
    if output.out is not None and output.out.resolve() != directory.resolve():
        lines.append(f"--out: the run is in {directory}, given {output.out}")
    if output.label is not None and output.label != stored.label:
        lines.append(f"--label: the run started with {_path(stored.label)}, given {output.label}")
    if output.force:
        lines.append("--force: it replaces a report, and --resume continues this one; drop --force")
    if output.input_rate is not None or output.output_rate is not None:
        given = (
            Rates(input_rate=output.input_rate, output_rate=output.output_rate)
            if output.input_rate is not None and output.output_rate is not None
            else None
        )
        if given is None or given != stored.rates:
            shown = f"--input-rate {output.input_rate} --output-rate {output.output_rate}"
            lines.append(f"the rates: the run started with {_rates(stored.rates)}, given {shown}")
    return lines


def resume_conflicts(
    stored: RunManifest,
    directory: Path,
    suite: str | None,
    selection: SelectionFlags,
    provider: ProviderFlags,
    permissions: PermissionFlags,
    output: OutputFlags,
) -> list[str]:
    """One line per flag that differs from what plan.json stored (empty: the command line continues the run)."""
    return [
        *_selection(stored, suite, selection),
        *_provider(stored, provider),
        *_permissions(stored, permissions),
        *_output(stored, directory, output),
    ]


@dataclass(frozen=True)
class Given:
    """The command line given with ``--resume``: its flag groups and SUITE."""

    suite: str | None
    resume: ResumeFlags
    selection: SelectionFlags
    provider: ProviderFlags
    permissions: PermissionFlags
    output: OutputFlags
    execution: ExecutionFlags
    variants: bool = False
    """``eval variants``' command line (else ``eval run``'s)."""


def continue_request(
    given: Given,
    design: Callable[[RunManifest], list[str]],
    *,
    variants_file: Path | None = None,
) -> LabRequest:
    """The request that continues ``--resume``'s run (``eval variants``: a variants job); each flag that
    differs from what it stored is refused, and so is a sequential design ``design`` finds changed.

    Raises:
        CommandError: no such run, the other command's run, or the flags that differ (nothing was run).
    """
    from alisio.core.harness.sandbox import SandboxKind
    from alisio.shell.cli import common
    from alisio.shell.config_home import data_dir
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.resume import check_kind, read_manifest, resume_request, resume_target

    assert given.resume.resume is not None
    env = common.environment()
    directory = resume_target(given.resume.resume, data_dir(env))
    stored = read_manifest(directory)
    check_kind(stored, given.resume.resume, directory, variants=given.variants)
    conflicts = resume_conflicts(
        stored, directory, given.suite, given.selection, given.provider, given.permissions, given.output
    )
    conflicts += design(stored)
    if conflicts:
        also = "--variants FILE (where the file is now), " if stored.variants else ""
        raise CommandError(
            *conflicts,
            "nothing was run: --resume continues the run as it was started (flags equal to what it stored, "
            f"{also}--model, --base-url, --provider, --jobs, --retry-errors, --keep, --quiet and --json may be "
            "given)",
        )
    execution, provider = given.execution, given.provider
    return resume_request(
        directory,
        model=provider.model,
        base_url=provider.base_url,
        preset=provider.preset,
        retry_errors=given.resume.retry_errors,
        output=common.output(given.output),
        jobs=common.jobs(execution.jobs),
        env=env,
        sandbox=SandboxKind(execution.sandbox) if execution.sandbox is not None else None,
        variants_file=variants_file,
    )


def with_design(request: LabRequest, found: list[SequentialPlan | None]) -> LabRequest:
    """``request`` (a resume's) with the sequential design its flags continue with, when that is the stored
    one with a larger ``--max-k`` (``found``: what the design check returned): its runs per task become the new
    ``--max-k``, and plan.json takes it when the run starts (``alisio.shell.lab.resume.plan_file``)."""
    import dataclasses

    design = found[-1] if found else None
    if design is None or design == request.sequential:
        return request
    selection = dataclasses.replace(request.selection, k=design.max_k)
    return dataclasses.replace(request, sequential=design, selection=selection)
