"""The outputs of a lab command: one table, checked before the first run and written after the last.

``OUTPUTS`` is the only list of what a lab command writes after its runs. The pipeline
(``alisio.shell.lab.pipeline``) checks it at its step 5 (``check_outputs``) and writes it at its step 10
(``write_outputs``); ``REPORT_FILES`` (what ``--force`` clears) is derived from it. Each row says:

- ``name``: the file's name in a report directory, or the flag or variable that names the file;
- when it applies: an ``ArmOutput`` always, in each arm's report directory (one arm, or one per variant); a
  ``CommandOutput`` once per command, when its ``applies(request)`` holds;
- how it is checked before the runs: a report directory's files by one check of the directory
  (``--out`` writable and holding no report unless ``--force``); a ``CommandOutput`` by its ``check``;
- how it is written after: ``write``, from the finished runs (``Done``). The text is built in the core
  (``alisio.core.lab.outputs.render``, ``render_html``, ``junit``, ``step_summary``...); a row only writes it.

A report file that cannot be written stops the command (``LabStopped``, exit 1, after the line saying why
the runs stopped, when they did); a CI output (``--junit``, the step summary) is one line in
``Done.problems`` and the other outputs are still written (the command then exits 1 unless its code is
already non-zero).

Adding an output: build its text in the core, then add a row here (its check, when it has one, raises
``CommandError`` naming the flag and the file; its write raises ``OSError`` for a report file, ``OutputProblem``
for a CI output). Nothing else lists outputs: the checks, ``--force`` and the writes follow the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from alisio.core.lab.comparisons.variants import VariantsComparison
from alisio.core.lab.outputs.render import render_markdown
from alisio.core.lab.outputs.render_html import REPORT_HTML
from alisio.core.lab.reports.report import Report
from alisio.core.lab.reports.report_json import encode_report
from alisio.core.lab.runs.records import RunRecord, encode_runs
from alisio.shell.errors import CommandError
from alisio.shell.lab.ci_outputs import (
    STEP_SUMMARY,
    OutputProblem,
    append_step_summary,
    check_output_file,
    write_output_file,
)
from alisio.shell.lab.directory import prepare_out
from alisio.shell.lab.errors import LabStopped
from alisio.shell.lab.preflight import unwritable_dir
from alisio.shell.lab.request import LabMode, LabRequest
from alisio.shell.lab.resume import PLAN_JSON
from alisio.shell.lab.slices import replaces_shard
from alisio.shell.lab.store import REPORT_JSON, REPORT_MD, RUNS_JSONL, write_bytes_atomic, write_report_html
from alisio.shell.lab.suites import LoadedSuite

if TYPE_CHECKING:
    from alisio.shell.lab.model import ArmResult, LabStart
    from alisio.shell.lab.record import Recorded
    from alisio.shell.lab.run_one import RunContext
    from alisio.shell.lab.runner import LoopResult

__all__ = [
    "COMPARISON_HTML",
    "COMPARISON_JSON",
    "COMPARISON_MD",
    "JUNIT",
    "JUNIT_OUTPUT",
    "OUTPUTS",
    "REPORT_FILES",
    "ArmOutput",
    "Checked",
    "CommandOutput",
    "Done",
    "Output",
    "Where",
    "check_file_output",
    "check_outputs",
    "report_files",
    "write_comparison_files",
    "write_outputs",
    "write_report_files",
]


Known = tuple[tuple[str, str], ...]
"""The exact credentials of the environment (name, value), which no output may hold."""


class Where(StrEnum):
    """Where a ``CommandOutput`` goes."""

    ROOT = "root"
    """The command's report directory (once, above the variants' directories)."""
    FILE = "file"
    """A file a flag names (``--junit FILE``)."""
    ENV = "env"
    """A file an environment variable names (``$GITHUB_STEP_SUMMARY``)."""
    CASSETTES = "cassettes"
    """The cassette directory of a recording."""


@dataclass(frozen=True)
class Checked:
    """What a check before the runs is given: the request, the suite and the arms' variant ids."""

    request: LabRequest
    loaded: LoadedSuite
    arms: tuple[str | None, ...]


@dataclass
class Done:
    """What the runs left, for the writers; the writers add to ``recorded``, ``notes`` and ``problems``."""

    request: LabRequest
    start: LabStart
    ctx: RunContext
    loop: LoopResult
    arms: tuple[ArmResult, ...]
    comparison: VariantsComparison | None
    say: Callable[[str], None]
    recorded: tuple[Recorded, ...] = ()
    notes: list[str] = field(default_factory=list)
    """Lines the command prints after its result unless ``--quiet`` (``junit: FILE``)."""
    problems: list[str] = field(default_factory=list)
    """CI outputs that could not be written, one line each."""


@dataclass(frozen=True)
class ArmOutput:
    """A report file in each arm's report directory, always written."""

    name: str
    write: Callable[[ArmResult, Known], None]
    """Write the file into ``arm.arm.directory``, keeping the ``Known`` credentials out; raises ``OSError``."""


@dataclass(frozen=True)
class CommandOutput:
    """An output written once per command, when ``applies``."""

    name: str
    where: Where
    applies: Callable[[LabRequest], bool]
    check: Callable[[Checked], None] | None
    """Before the first run: raise ``CommandError`` when it cannot be written. ``None``: a ``ROOT`` file is
    covered by the report directory's check, an ``ENV`` file is only appended to."""
    write: Callable[[Done], None]
    """After the runs: raises ``OSError`` (a ``ROOT`` file) or ``OutputProblem`` (a CI output)."""


Output = ArmOutput | CommandOutput


# --- the rows' writers ---------------------------------------------------------------------------------------


def _runs_jsonl(arm: ArmResult, known: Known) -> None:
    write_bytes_atomic(arm.arm.directory / RUNS_JSONL, encode_runs(arm.records))


def _report_json(arm: ArmResult, known: Known) -> None:
    write_bytes_atomic(arm.arm.directory / REPORT_JSON, encode_report(arm.report))


def _report_md(arm: ArmResult, known: Known) -> None:
    text = render_markdown(arm.report, arm.records, known, show_as=arm.show_as)
    write_bytes_atomic(arm.arm.directory / REPORT_MD, text.encode())


def _report_html(arm: ArmResult, known: Known) -> None:
    write_report_html(arm.arm.directory, arm.report, arm.records, known, arm.show_as)


def _comparison_json(done: Done) -> None:
    assert done.comparison is not None  # applies to eval variants only
    write_bytes_atomic(done.start.root / COMPARISON_JSON, msgspec.json.encode(done.comparison))


def _comparison_md(done: Done) -> None:
    from alisio.core.lab.outputs.render_variants import render_variants_markdown

    assert done.comparison is not None  # applies to eval variants only
    write_bytes_atomic(done.start.root / COMPARISON_MD, render_variants_markdown(done.comparison).encode())


def _comparison_html(done: Done) -> None:
    assert done.comparison is not None  # applies to eval variants only
    arms = [(arm.arm.variant or "", arm.records) for arm in done.arms]
    _variants_page(done.start.root, done.comparison, arms, done.start.k, done.ctx.credentials)


def _variants_page(
    root: Path,
    comparison: VariantsComparison,
    arms: Sequence[tuple[str, Sequence[RunRecord]]],
    k: int,
    known: Known,
) -> None:
    from alisio.core.lab.outputs.render_html_compare import render_variants_html

    task_ids = sorted({record.task_id for _, records in arms for record in records})
    page = render_variants_html(comparison, arms, task_ids, k, known)
    write_bytes_atomic(root / COMPARISON_HTML, page.encode())


def write_comparison_files(
    root: Path,
    comparison: VariantsComparison,
    arms: Sequence[tuple[str, Sequence[RunRecord]]],
    k: int,
    known: Known = (),
) -> None:
    """comparison.json, comparison.md and comparison.html of a variants job into ``root``, outside a command
    (``eval merge``), as the table's rows write them.

    Raises:
        OSError: a file cannot be written.
    """
    from alisio.core.lab.outputs.render_variants import render_variants_markdown

    write_bytes_atomic(root / COMPARISON_JSON, msgspec.json.encode(comparison))
    write_bytes_atomic(root / COMPARISON_MD, render_variants_markdown(comparison).encode())
    _variants_page(root, comparison, arms, k, known)


def _junit(done: Done) -> None:
    from alisio.core.lab.outputs.junit import JUnitSuite, ReportSuite, junit_xml

    path = done.request.output.junit
    assert path is not None  # applies only with --junit
    suites: list[JUnitSuite] = []
    for arm in done.arms:
        variant, suite_id = arm.arm.variant, arm.report.conditions.suite_id
        name = suite_id if variant is None else f"{suite_id}/{variant}"
        suites.append(
            ReportSuite(
                name=name, report=arm.report, records=arm.records, variant=variant, show_as=arm.show_as
            )
        )
    write_output_file(path, junit_xml(suites, done.ctx.credentials), JUNIT)
    done.notes.append(f"junit: {path}")


def _step_summary(done: Done) -> None:
    from alisio.core.lab.outputs.step_summary import run_summary, variants_summary

    if done.comparison is not None:
        reports = [(arm.arm.variant or "", arm.report) for arm in done.arms]
        summary = variants_summary(done.comparison, reports)
    else:
        summary = "".join(run_summary(arm.report) for arm in done.arms)
    append_step_summary(done.request.env, summary)


def _cassettes(done: Done) -> None:
    from alisio.core.harness.config import config_hash
    from alisio.core.harness.faults import spec_text, stall_timeout_ms
    from alisio.core.replay.cassette import CassetteHeader
    from alisio.shell.lab.cassettes import cassette_dir_for, credentials_of
    from alisio.shell.lab.record import RecordHook, write_recorded

    if done.loop.stopped is not None:
        return  # a recording that stopped early writes nothing (the command says so)
    request, start, ctx = done.request, done.start, done.ctx
    directory = cassette_dir_for(start.choice.loaded.directory, request.cassette_dir)
    if ctx.agents:  # external agents: the proxy's exchanges, one agent cassette per task
        from alisio.shell.lab.agent_plan import write_recorded_agents

        known = credentials_of(request.env, ctx.provider.key)
        done.recorded = write_recorded_agents(ctx.agents, directory, done.loop.records, known, done.say)
        return
    hook = ctx.provider.hook
    assert isinstance(hook, RecordHook)  # run_request wrapped the plan
    suite = start.choice.loaded.suite
    header = CassetteHeader(
        format="cassette/v1",
        suite_id=suite.suite_id,
        suite_version=suite.suite_version,
        task_id="",
        config_hash=config_hash(start.arms[0].measured),
        harness_version=ctx.harness_version,
        model=ctx.provider.model,
        provider=ctx.provider.id,
        faults=None if request.provider.faults is None else spec_text(request.provider.faults),
        read_timeout_ms=stall_timeout_ms(request.provider.faults, ctx.provider.read_timeout_ms),
    )
    known = credentials_of(request.env, ctx.provider.key)
    done.recorded = write_recorded(start.choice.loaded, start.tasks, hook, header, directory, known, done.say)


# --- the rows' checks ----------------------------------------------------------------------------------------


def _check_junit(checked: Checked) -> None:
    path = checked.request.output.junit
    assert path is not None  # applies only with --junit
    check_output_file(path, JUNIT)


def _check_cassettes(checked: Checked) -> None:
    from alisio.shell.lab.cassettes import cassette_dir_for

    request = checked.request
    target = cassette_dir_for(checked.loaded.directory, request.cassette_dir)
    flag = "--cassette-dir" if request.cassette_dir is not None else "cassettes"
    if (problem := unwritable_dir(target, flag)) is not None:
        raise CommandError(problem)


# --- the table ---------------------------------------------------------------------------------------------

COMPARISON_JSON = "comparison.json"
COMPARISON_MD = "comparison.md"
COMPARISON_HTML = "comparison.html"
JUNIT = "--junit"


def _variants(request: LabRequest) -> bool:
    return request.variants_file is not None and request.shard is None  # a shard draws no verdict


def _has_junit(request: LabRequest) -> bool:
    return request.output.junit is not None


def _has_step_summary(request: LabRequest) -> bool:
    return request.output.step_summary and bool(request.env.get(STEP_SUMMARY))


def _records(request: LabRequest) -> bool:
    return request.mode is LabMode.RECORD


JUNIT_OUTPUT = CommandOutput(JUNIT, Where.FILE, _has_junit, _check_junit, _junit)

OUTPUTS: tuple[Output, ...] = (
    ArmOutput(RUNS_JSONL, _runs_jsonl),
    ArmOutput(REPORT_JSON, _report_json),
    ArmOutput(REPORT_MD, _report_md),
    ArmOutput(REPORT_HTML, _report_html),
    CommandOutput(COMPARISON_JSON, Where.ROOT, _variants, None, _comparison_json),
    CommandOutput(COMPARISON_MD, Where.ROOT, _variants, None, _comparison_md),
    CommandOutput(COMPARISON_HTML, Where.ROOT, _variants, None, _comparison_html),
    CommandOutput("cassettes", Where.CASSETTES, _records, _check_cassettes, _cassettes),
    JUNIT_OUTPUT,
    CommandOutput(f"${STEP_SUMMARY}", Where.ENV, _has_step_summary, None, _step_summary),
)
"""Every output of a lab command, in the order they are written."""


def report_files(outputs: Sequence[Output] = OUTPUTS) -> tuple[str, ...]:
    """The files a lab command writes in a report directory: the table's, and plan.json (written before the
    first run, for ``--resume``)."""
    arm = sorted((o.name for o in outputs if isinstance(o, ArmOutput)), key=lambda name: name == RUNS_JSONL)
    root = [o.name for o in outputs if isinstance(o, CommandOutput) and o.where is Where.ROOT]
    return (*arm, PLAN_JSON, *root)  # the order --out's refusal names them in: the reports first


REPORT_FILES = report_files()
"""What ``--force`` removes from a report directory (with the per-run folders), and nothing else."""


def check_file_output(output: CommandOutput, path: Path | None) -> None:
    """The check of a ``FILE`` row for a command that writes that file itself (``eval ci``'s ``--junit``
    holds every suite's testsuite): nothing without the flag.

    Raises:
        CommandError: it is a directory, or its directory cannot be created or written (nothing was run).
    """
    if path is not None:
        check_output_file(path, output.name)


def check_outputs(checked: Checked, outputs: Sequence[Output] = OUTPUTS) -> None:
    """Step 5: the report directory (``--out``), then each applying row's own check.

    Raises:
        CommandError: an output cannot be written, or ``--out`` holds a report without ``--force`` (nothing ran).
    """
    request = checked.request
    out = request.output.out
    if request.resume is None and request.mode is not LabMode.RECORD and out is not None:
        subdirs = [arm for arm in checked.arms if arm is not None]
        force = request.output.force or replaces_shard(
            out, request.shard
        )  # a shard run again: its own output
        prepare_out(out, "--out", force, subdirs, report_files(outputs))
    for output in outputs:
        if isinstance(output, CommandOutput) and output.check is not None and output.applies(request):
            output.check(checked)


def _write_arm(done: Done, arm: ArmResult, outputs: Sequence[Output]) -> None:
    try:
        for output in outputs:
            if isinstance(output, ArmOutput):
                output.write(arm, done.ctx.credentials)
    except OSError as error:
        why = f"{arm.arm.directory}: cannot write the report: {error.strerror or error}"
        # what stopped the runs first (a full disk often fails runs.jsonl before the report), then this
        stopped = done.loop.stopped
        raise LabStopped(*((stopped,) if stopped else ()), why) from None


def write_outputs(done: Done, outputs: Sequence[Output] = OUTPUTS) -> None:
    """Step 10: every arm's report files, then each applying command output, in the table's order.

    Raises:
        LabStopped: a report file cannot be written, naming the directory and why.
        CommandError: the cassettes of a recording hold a secret or cannot be written (none is written).
    """
    for arm in done.arms:
        _write_arm(done, arm, outputs)
    for output in outputs:
        if not isinstance(output, CommandOutput) or not output.applies(done.request):
            continue
        try:
            output.write(done)
        except OutputProblem as problem:
            done.problems.append(str(problem))
        except OSError as error:
            raise LabStopped(
                f"{done.start.root}: cannot write {output.name}: {error.strerror or error}"
            ) from None


def write_report_files(
    directory: Path,
    report: Report,
    records: Sequence[RunRecord],
    known: Known = (),
    show_as: str | None = None,
) -> None:
    """Write one report's files (the table's ``ArmOutput`` rows) into ``directory`` (created if missing),
    each atomically, outside a command.

    Raises:
        OSError: a file cannot be written.
    """
    from alisio.core.harness.config import MeasuredConfig
    from alisio.shell.lab.model import ArmResult
    from alisio.shell.lab.run_one import Arm

    arm = Arm(variant=None, measured=MeasuredConfig(), directory=directory, run_id=report.conditions.run_id)
    result = ArmResult(arm=arm, records=tuple(records), report=report, show_as=show_as)
    for output in OUTPUTS:
        if isinstance(output, ArmOutput):
            output.write(result, known)
