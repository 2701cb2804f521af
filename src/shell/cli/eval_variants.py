"""``alisio eval variants SUITE --variants compare.json``: run configuration variants and compare them.

- The options are those of ``eval run`` but ``--cassette-dir``, and ``--mode replay`` is refused (variants
  compares configurations; replay pins one), plus ``--variants FILE``, validated before the first run: an unknown key,
  or one that does not enter the configuration hash (provider, plugins, MCP, paths), rejects the file naming
  the variant, the key and why.
- The variants run interleaved (A, B, then B, A...) over the same tasks, repetitions and seeds. The root
  directory (``<dataDir>/eval/<runId>/`` or ``--out DIR``) gets one report directory per variant and
  comparison.json and comparison.md, the first variant (the baseline) against each other one.
- stderr: the headline, one line per run (``[3/20] early-compaction fix-add rep 1: pass (...)``), each
  variant's summary and the paths. stdout: the comparison's Markdown; with ``--json`` one JSON line per
  variant (``{"type": "variant_report", ...}``), then one per comparison (``{"type": "comparison", ...}``).
- ``--junit FILE`` writes JUnit XML with a testsuite per variant; with ``$GITHUB_STEP_SUMMARY`` set, a short
  Markdown summary (each variant, then the verdicts) is appended to that file. comparison.html at the root
  shows the comparisons and the interleaved grid; each variant's directory has its report.html.
- ``--sequential`` (two variants; ``--max-k``, ``--min-k``): one pair of runs at a time per task, each task
  stopped once its anytime-valid test decides, or for futility, or at ``--max-k`` (``alisio.shell.cli.seq_flags``,
  ``alisio.shell.lab.seq_watch``); comparison.json/md/html put the decisions first, the closing lines on stderr
  list them, and ``--json`` adds a ``{"type": "sequential", ...}`` line. ``--fail-on worse-than:M`` makes it
  the sequential non-inferiority gate: exit 4 unless every task is decided not worse by M.
- ``--resume DIR|RUN_ID [--retry-errors]`` continues a job in its root directory from its plan.json (the
  suite, tasks, k or sequential design, seed, provider and each variant's configuration hash, model and
  agent): the runs with a record in a variant's runs.jsonl are kept, the others run, then every report and
  the comparison are rewritten from all the records (``alisio.shell.cli.resume_flags``).
- ``--shard I/N``, ``--plan FILE``, ``--reuse RUN|DIR`` and ``--dry-run`` as ``eval run`` takes them; a shard
  writes each variant's partial report and no comparison (no verdict), which ``eval merge`` computes.
- Exit codes as ``eval run``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli import common
from alisio.shell.cli.common import say
from alisio.shell.cli.options import (
    FAULTS_SPEC_HELP,
    SELECTION,
    ExecutionFlags,
    ModeFlag,
    OutputFlags,
    PermissionFlags,
    ProviderFlags,
    ResumeFlags,
    SelectionFlags,
    SuiteArg,
    Take,
    grouped,
)
from alisio.shell.cli.plan_flags import PlanFlags
from alisio.shell.cli.seq_flags import VARIANTS, SequentialFlags

if TYPE_CHECKING:
    from alisio.core.lab.plans.manifest import RunManifest
    from alisio.core.lab.reports.seq_block import SequentialPlan
    from alisio.shell.cli.resume_flags import Given
    from alisio.shell.lab.model import LabOutcome, LabStart
    from alisio.shell.lab.request import LabRequest

DEFAULT_K = 5
REFUSE_REPLAY = "variants refuses replay: it compares configurations, replay pins one"

PROVIDER = Take(
    omit=("cassette_dir", "context"),  # a context is a variant's, in compare.json
    help={
        "mode": "live only: variants refuses replay.",
        "faults": FAULTS_SPEC_HELP
        + ' For every variant without its own "faults" in the variants file; with a '
        "clean and a faulted variant, the comparison states each faulted one's robustness.",
    },
    metavar={"mode": "live"},
)
"""How ``eval variants`` takes the provider group: live only (replay pins one configuration)."""

VariantsFile = Annotated[
    Path | None,
    typer.Option(
        "--variants",
        help="The compare.json file: the suite and two or more variants (with --resume: the job's own, "
        "unless given where it is now).",
        show_default=False,
        metavar="FILE",
        rich_help_panel=SELECTION,
    ),
]


@grouped
def variants(
    resume: ResumeFlags,
    selection: SelectionFlags,
    provider: Annotated[ProviderFlags, PROVIDER],
    permissions: PermissionFlags,
    output: OutputFlags,
    execution: ExecutionFlags,
    seq: Annotated[SequentialFlags, VARIANTS],
    plan: PlanFlags,
    variants_file: VariantsFile = None,
    suite: SuiteArg = None,
) -> ExitCode:
    """Run configuration variants interleaved over the same tasks, report each, and compare them."""
    import dataclasses

    from alisio.core.lab.outputs.render_variants import variant_progress_line
    from alisio.shell.cli.outputs import lab_outputs
    from alisio.shell.cli.plan_flags import plan_request, refuse_with_resume, with_plan_flags
    from alisio.shell.cli.resume_flags import Given
    from alisio.shell.errors import CommandError

    if provider.mode is ModeFlag.REPLAY:
        raise CommandError(REFUSE_REPLAY)
    given = Given(suite, resume, selection, provider, permissions, output, execution, variants=True)
    if resume.resume is not None:
        refuse_with_resume(plan)
        request = _resume_request(given, seq, variants_file)
        ci = dataclasses.replace(request.output, junit=output.junit, step_summary=True)
        request = dataclasses.replace(request, output=ci)
    elif resume.retry_errors:
        raise CommandError("--retry-errors goes with --resume DIR|RUN_ID")
    elif plan.plan is not None:
        request = plan_request(plan.plan, given, variants_file)
    elif variants_file is None:
        raise CommandError(
            "--variants FILE names the variants to run (or --resume DIR|RUN_ID continues a variants job)"
        )
    else:
        request = _request(suite, selection, provider, permissions, output, execution, seq, variants_file)
    request = with_plan_flags(common.with_executor(request, execution), plan)
    if request.dry_run:
        return common.show_dry_run(request)
    outcome = common.run_lab(
        request, line=variant_progress_line, headline=_headline, quiet=request.output.quiet
    )
    return lab_outputs(outcome, request, _show(outcome, request.output.json), "alisio eval variants")


def _request(
    suite: str | None,
    s: SelectionFlags,
    provider: ProviderFlags,
    permissions: PermissionFlags,
    output: OutputFlags,
    execution: ExecutionFlags,
    seq: SequentialFlags,
    variants_file: Path,
) -> LabRequest:
    from alisio.shell.cli.seq_flags import variants_sequential
    from alisio.shell.lab.request import LabRequest, rates_from

    design = variants_sequential(seq, s.k)
    k = s.k if design is None else design.max_k
    return LabRequest(
        selection=common.selection(suite, s.tasks, k, s.seed, s.suite_dir, s.yes, DEFAULT_K),
        provider=common.provider(provider),
        permissions=common.permissions(permissions),
        output=common.output(output),
        variants_file=variants_file,
        rates=rates_from(output.input_rate, output.output_rate),
        env=common.environment(),
        jobs=common.jobs(execution.jobs),
        sequential=design,
    )


def _resume_request(given: Given, seq: SequentialFlags, variants_file: Path | None) -> LabRequest:
    """The request that continues ``--resume``'s variants job; a flag that differs from what it stored is
    refused (``alisio.shell.cli.resume_flags``), a sequential design too (``seq_flags.variants_design``)."""
    from alisio.shell.cli.resume_flags import continue_request, with_design
    from alisio.shell.cli.seq_flags import variants_design

    found: list[SequentialPlan | None] = []

    def check(stored: RunManifest) -> list[str]:
        conflicts, design = variants_design(stored.sequential, seq)
        found.append(design)
        return conflicts

    return with_design(continue_request(given, check, variants_file=variants_file), found)


def _headline(start: LabStart) -> None:
    from alisio.core.lab.comparisons.variants import describe_overrides

    assert start.variants is not None
    suite = start.choice.loaded.suite
    n, tasks = len(start.variants.variants), len(start.tasks)
    noun = "task" if tasks == 1 else "tasks"
    plan = start.provider
    whole = tasks * start.k * n
    size = f"k={start.k} = {whole} runs"
    if start.sequential is not None:
        size = f"at most {start.k} = {whole} runs, sequential"
    say(
        f"{suite.suite_id} {suite.suite_version}: {n} variants x {tasks} {noun} x {size}, interleaved"
        f"{common.shard_note(start)} "
        f"({plan.id}, {plan.model}{plan.key_note}, seed {start.seed}, {common.at_once(start.jobs, whole)}"
        f"{common.sandbox_note(start)})"
    )
    for index, variant in enumerate(start.variants.variants):
        role = " (baseline)" if index == 0 and variant.id != "baseline" else ""
        say(
            f"  {variant.id}{role}: {common.naming_note(start, index)}, config {variant.config_hash[:16]}, "
            f"{describe_overrides(variant.overrides, variant.model)}"
        )
    for warning in start.variants.warnings:
        say(f"warning: {warning}")


def _show(outcome: LabOutcome, json_output: bool) -> ExitCode:
    from alisio.core.lab.comparisons.robustness import robustness_sentence
    from alisio.core.lab.outputs.progress import summary_table
    from alisio.core.lab.outputs.render_seq import comparison_lines
    from alisio.core.lab.outputs.render_variants import render_variants_markdown
    from alisio.shell.cli.eval_run import gated, stop_lines
    from alisio.shell.lab.outputs import COMPARISON_HTML, COMPARISON_JSON, COMPARISON_MD
    from alisio.shell.lab.store import REPORT_MD

    if outcome.comparison is None:  # a shard: no verdict, each variant's partial report
        return _show_shard(outcome)
    if json_output:
        _show_json(outcome)
    else:
        common.out(render_variants_markdown(outcome.comparison))
    for arm in outcome.arms:
        say("")
        say(f"variant {arm.arm.variant}:")
        say(summary_table(arm.report))
        say(f"report: {arm.arm.directory / REPORT_MD}")
    for line in comparison_lines(outcome.comparison.sequential):  # the decisions, over both variants
        say(line)
    for row in outcome.comparison.robustness:
        say(robustness_sentence(row))
    say("")
    say(
        f"comparison: {outcome.start.root / COMPARISON_MD} ({COMPARISON_JSON} and {COMPARISON_HTML} beside it)"
    )
    for line in stop_lines(outcome):
        say(line)
    return gated(outcome.comparison.sequential, outcome.exit_code)


def _show_shard(outcome: LabOutcome) -> ExitCode:
    """A shard of a variants job: each variant's partial table on stdout, where it went, how to merge."""
    from alisio.core.lab.outputs.progress import summary_table
    from alisio.shell.cli.eval_run import stop_lines
    from alisio.shell.lab.store import REPORT_MD

    for arm in outcome.arms:
        common.out(f"variant {arm.arm.variant}:\n{summary_table(arm.report)}\n")
        say(f"report: {arm.arm.directory / REPORT_MD}")
    for line in [*common.shard_lines(outcome), *stop_lines(outcome)]:
        say(line)
    return outcome.exit_code


def _show_json(outcome: LabOutcome) -> None:
    import msgspec

    assert outcome.comparison is not None
    encoder = msgspec.json.Encoder()
    for info, arm in zip(outcome.comparison.variants, outcome.arms, strict=True):
        common.out(
            encoder.encode({"type": "variant_report", "variant": info.id, "report": arm.report}) + b"\n"
        )
    for entry in outcome.comparison.comparisons:
        line = {
            "type": "comparison",
            "baseline": entry.baseline,
            "candidate": entry.candidate,
            "comparison": entry.comparison,
        }
        common.out(encoder.encode(line) + b"\n")
    if outcome.comparison.sequential is not None:
        sequential = {"type": "sequential", "sequential": outcome.comparison.sequential}
        common.out(encoder.encode(sequential) + b"\n")
