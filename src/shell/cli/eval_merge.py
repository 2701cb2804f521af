"""``alisio eval merge SHARD_DIR... --out DIR [--allow-partial] [--fail-on ...]``: one report from the shards of
a plan (``eval run --shard I/N``, ``eval variants --shard I/N``).

- Each SHARD_DIR is a shard's report directory (a variants job's root) or its run id. The shards must be one
  plan (the same suite, version and content, configuration, agent, model, endpoint, mode, seed, k and verdict
  rule) cut into all of its shards, each holding a record of every run it owns: else one line per problem,
  naming the shard and the field, exit 1, nothing written (``alisio.core.lab.plans.merge``).
- A shard given twice (run again): the newest output is used, and stderr says which one was left out.
- ``--allow-partial``: merge what is there; the report says which runs were never run (counted apart, as an
  interrupted run's), and the command exits 1; ``eval run --resume DIR`` (``eval variants --resume``) runs them.
- ``--out DIR`` gets report.json, report.md, report.html, runs.jsonl and the transcripts (a variants job: each
  variant's, and comparison.json, comparison.md and comparison.html), every statistic computed again from the
  pooled runs. stdout: the results table (a variants job: the comparison's Markdown); stderr: what was merged
  and where it went. ``--junit FILE`` and the ``$GITHUB_STEP_SUMMARY`` block as ``eval run`` writes them.
- ``--fail-on regressed|inconclusive|worse-than:M`` (a variants job): the gate of ``eval compare`` over each
  candidate against the baseline, exit 4 when hit.
- Exit codes: 0 merged; 1 refused, partial, a run ended error, or a CI output not written; 2 a replay run
  diverged; 4 the gate was hit.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli import common
from alisio.shell.cli.common import say
from alisio.shell.cli.options import Force, Junit

if TYPE_CHECKING:
    from alisio.core.lab.comparisons.gate import FailOn
    from alisio.shell.lab.merge import MergedJob

Shards = Annotated[
    list[str],
    typer.Argument(
        help="The shards' report directories (a variants job's root) or run ids: every shard of the plan, once "
        "or more (the newest output of a shard is used).",
        metavar="SHARD_DIR...",
        show_default=False,
    ),
]
Out = Annotated[
    Path,
    typer.Option("--out", help="Write the merged report here (a new or empty directory).", metavar="DIR"),
]
AllowPartial = Annotated[
    bool,
    typer.Option(
        "--allow-partial",
        help="Merge what is there when a shard or some of its runs are missing: the report counts the runs "
        "never run apart (as an interrupted run's), and the command exits 1.",
    ),
]
FailOnFlag = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        metavar="VERDICT",
        help="A variants job: exit 4 when a task's verdict is this or worse (regressed, or inconclusive), or "
        "worse-than:M unless every task is shown at most M worse, as eval compare gates.",
        show_default=False,
    ),
]
Label = Annotated[
    str | None,
    typer.Option("--label", help="A name for the merged run (default: the shards' label).", metavar="TEXT"),
]


def _gate_on(text: str | None) -> FailOn | float | None:
    from returns.result import Failure

    from alisio.core.lab.comparisons.gate import PREFIX, FailOn, parse_margin
    from alisio.shell.errors import CommandError

    if text is None:
        return None
    if text.startswith(PREFIX):
        margin = parse_margin(text)
        if isinstance(margin, Failure):
            raise CommandError(str(margin.failure()))
        return float(margin.unwrap())
    if text not in tuple(FailOn):
        raise CommandError(f"--fail-on: expected regressed, inconclusive or {PREFIX}M, got {text!r}")
    return FailOn(text)


def merge(
    shards: Shards,
    out: Out,
    force: Force = False,
    allow_partial: AllowPartial = False,
    fail_on: FailOnFlag = None,
    junit: Junit = None,
    label: Label = None,
) -> ExitCode:
    """Merge the shards of one plan into one report, every statistic computed again from the pooled runs."""
    from alisio.shell.lab.ci_outputs import check_output_file
    from alisio.shell.lab.merge import merge_outputs
    from alisio.shell.lab.preflight import NOTHING_WRITTEN

    gate_on = _gate_on(fail_on)
    if junit is not None:
        check_output_file(junit, "--junit", NOTHING_WRITTEN)
    env = common.environment()
    job = merge_outputs(
        shards, out, force=force, allow_partial=allow_partial, label=common.label_of(label), env=env, say=say
    )
    if gate_on is not None and job.comparison is None:
        from alisio.shell.errors import CommandError

        raise CommandError(
            f"--fail-on gates a comparison, and a merged eval run has none: compare it with another report "
            f"(alisio eval compare BASELINE {out} --fail-on {fail_on}); the merged report is written in {out}"
        )
    code = _show(job)
    return _ci_outputs(job, junit, env, _gate(job, gate_on, code))


def _show(job: MergedJob) -> ExitCode:
    """The table (or the comparison) on stdout; what was merged, where it went and what is missing on stderr."""
    from alisio.core.lab.judges.outcome import exit_code_for
    from alisio.core.lab.outputs.progress import summary_table
    from alisio.core.lab.outputs.render_variants import render_variants_markdown
    from alisio.shell.lab.outputs import COMPARISON_MD
    from alisio.shell.lab.store import REPORT_MD

    merged = job.merged
    first = job.arms[0].report.origin
    listed = first.shards if first is not None else ()
    say(
        f"merged {len(listed)} shards of plan {(merged.manifest.digest or '')[:16]}: "
        f"{len(merged.records)} of {len(merged.plan)} planned runs"
    )
    for shard in listed:
        if shard.left_out:
            say(
                f"shard {shard.index}: given more than once; used the newest, {shard.directory}, not {', '.join(shard.left_out)}"
            )
    if job.comparison is not None:
        common.out(render_variants_markdown(job.comparison))
        for arm in job.arms:
            say(f"report: {arm.directory / REPORT_MD}")
        say(f"comparison: {job.root / COMPARISON_MD}")
    else:
        (arm,) = job.arms
        common.out(summary_table(arm.report) + "\n")
        say(f"report: {arm.directory / REPORT_MD} (report.html beside it)")
    if merged.missing:
        say(
            f"partial: {merged.never_run} planned runs were never run (missing {'; '.join(merged.missing)}): they "
            f"are counted apart, never as failures; exit 1 (eval {'variants' if job.comparison else 'run'} "
            f"--resume {job.root} runs them)"
        )
        return ExitCode.FAILURE
    return exit_code_for(merged.records)


def _gate(job: MergedJob, gate_on: FailOn | float | None, code: ExitCode) -> ExitCode:
    """Each candidate against the baseline through ``--fail-on``; 4 when any is hit (its lines on stderr)."""
    from alisio.core.lab.comparisons.gate import describe_gate, gate, noninferiority_gate

    if gate_on is None or job.comparison is None:
        return code
    hit = False
    for entry in job.comparison.comparisons:
        result = (
            noninferiority_gate(entry.comparison, gate_on)
            if isinstance(gate_on, float)
            else gate(entry.comparison, gate_on)
        )
        hit = hit or result.hit
        for line in describe_gate(result):
            say(f"alisio eval merge: {entry.candidate}: {line}")
    return ExitCode.GATE if hit and code is ExitCode.OK else code


def _ci_outputs(job: MergedJob, junit: Path | None, env: dict[str, str], code: ExitCode) -> ExitCode:
    """``--junit`` (a testsuite per arm) and the step summary, as the unsharded command writes them."""
    from alisio.core.lab.outputs.junit import ReportSuite, junit_xml
    from alisio.core.lab.outputs.step_summary import run_summary, variants_summary
    from alisio.shell.cli.outputs import attempt, settle
    from alisio.shell.lab.cassettes import credentials_of
    from alisio.shell.lab.ci_outputs import append_step_summary, write_output_file
    from alisio.shell.lab.outputs import JUNIT

    known = credentials_of(env, None)
    problems: list[str] = []
    if junit is not None:
        suites = [
            ReportSuite(
                name=a.report.conditions.suite_id + (f"/{a.variant}" if a.variant else ""),
                report=a.report,
                records=a.records,
                variant=a.variant,
                show_as=str(a.directory.absolute()),
            )
            for a in job.arms
        ]
        attempt(problems, lambda: write_output_file(junit, junit_xml(suites, known), JUNIT))
        if not problems:
            say(f"junit: {junit}")
    if job.comparison is not None:
        summary = variants_summary(job.comparison, [(a.variant or "", a.report) for a in job.arms])
    else:
        summary = "".join(run_summary(a.report) for a in job.arms)
    attempt(problems, lambda: append_step_summary(env, summary))
    return settle(code, problems, "alisio eval merge")
