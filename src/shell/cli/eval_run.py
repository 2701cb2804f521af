"""``alisio eval run SUITE``: run a suite's tasks k times, judge each run, write the report.

- SUITE is a suite id or directory name: in ``--suite-dir`` (third-party code: confirmed on a terminal, or
  accepted with ``--yes``), else among the bundled suites of the source checkout.
- Everything is checked before the first run (unknown tasks, ungranted effects, the configuration, the
  provider, ``--out``): one line each on stderr, exit 1, nothing run.
- stderr: a headline, one line per finished run (a failing run names its failing verifier), messages.
  stdout: the results table; with ``--json`` one RunRecord per line as runs finish, then the report.
- ``--mode replay`` serves each task's cassette instead of a provider (k defaults to 1); a divergence is
  named on stderr and exits 2. ``--script FILE|DIR`` plays scripted turns instead of a model.
- ``--until-width W`` and ``--sequential --baseline REPORT`` (``--max-k``, ``--min-k``) stop each task once its
  anytime-valid statistic decides (``alisio.shell.cli.seq_flags``); the table is followed by each task's stop,
  the runs and tokens saved and the method; ``--resume`` continues such a run with its stored design.
- ``--shard I/N`` runs one slice of the plan (its report partial, no verdict; ``eval merge`` pools the
  shards), ``--plan FILE`` the plan ``eval plan`` wrote, ``--reuse RUN|DIR`` takes the stored runs that measured
  the same thing instead of running them, ``--dry-run`` prints the plan and its estimate and runs nothing
  (``alisio.shell.cli.plan_flags``).
- ``--junit FILE`` also writes the results as JUnit XML (checked before the first run); with
  ``$GITHUB_STEP_SUMMARY`` set, a short Markdown summary is appended to that file.
- Exit codes (``alisio.core.exit_codes``): 0 completed whichever tasks passed; 1 usage or infrastructure
  error, some run ended error, the command stopped early (a refused key, an unreachable endpoint, a full
  disk; the report of the finished runs is written), or the JUnit file or the summary could not be
  written; 2 a replay diverged; 130 Ctrl-C (143 SIGTERM).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli import common
from alisio.shell.cli.common import say
from alisio.shell.cli.options import (
    ExecutionFlags,
    ModeFlag,
    OptionalSuiteArg,
    OutputFlags,
    PermissionFlags,
    ProviderFlags,
    ResumeFlags,
    SelectionFlags,
    grouped,
)
from alisio.shell.cli.plan_flags import PlanFlags
from alisio.shell.cli.seq_flags import SequentialFlags

if TYPE_CHECKING:
    from alisio.core.lab.plans.manifest import RunManifest
    from alisio.core.lab.reports.seq_block import SequentialBlock, SequentialPlan
    from alisio.core.lab.runs.records import RunRecord
    from alisio.shell.cli.resume_flags import Given
    from alisio.shell.lab.model import LabOutcome, LabStart
    from alisio.shell.lab.request import LabRequest

DEFAULT_K = 5


def _request(
    suite: str | None,
    selection: SelectionFlags,
    provider: ProviderFlags,
    permissions: PermissionFlags,
    output: OutputFlags,
    execution: ExecutionFlags,
    seq: SequentialFlags,
) -> LabRequest:
    from alisio.shell.cli.seq_flags import run_sequential
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.request import LabMode, LabRequest, rates_from

    replay = provider.mode is ModeFlag.REPLAY
    if provider.cassette_dir is not None and not replay:
        raise CommandError("--cassette-dir is only used with --mode replay")
    if replay and provider.script is not None:
        raise CommandError("--script plays a scripted provider in live mode; replay plays cassettes")
    s = selection
    env = common.environment()
    design = run_sequential(seq, s.k, replay, env)
    k = s.k if design is None else design.max_k
    return LabRequest(
        selection=common.selection(suite, s.tasks, k, s.seed, s.suite_dir, s.yes, 1 if replay else DEFAULT_K),
        mode=LabMode.REPLAY if replay else LabMode.LIVE,
        provider=common.provider(provider),
        permissions=common.permissions(permissions),
        output=common.output(output),
        cassette_dir=provider.cassette_dir,
        context_file=provider.context,
        rates=rates_from(output.input_rate, output.output_rate),
        env=env,
        jobs=common.jobs(execution.jobs),
        sequential=design,
    )


def _resume_request(given: Given, seq: SequentialFlags) -> LabRequest:
    """The request that continues ``--resume``'s run; a flag that differs from what it stored is refused
    (``alisio.shell.cli.resume_flags``), a sequential design too, but a larger ``--max-k`` continues the
    same e-processes (``seq_flags.resume_design``)."""
    from alisio.shell.cli.resume_flags import continue_request, with_design
    from alisio.shell.cli.seq_flags import resume_design

    env = common.environment()
    found: list[SequentialPlan | None] = []

    def check(stored: RunManifest) -> list[str]:
        conflicts, design = resume_design(stored.sequential, seq, env)
        found.append(design)
        return conflicts

    return with_design(continue_request(given, check), found)


@grouped
def run(
    resume: ResumeFlags,
    selection: SelectionFlags,
    provider: ProviderFlags,
    permissions: PermissionFlags,
    output: OutputFlags,
    execution: ExecutionFlags,
    seq: SequentialFlags,
    plan: PlanFlags,
    suite: OptionalSuiteArg = None,
) -> ExitCode:
    """Run a suite k times, judge every run, and write report.json, report.md, report.html and runs.jsonl."""
    import dataclasses

    import msgspec

    from alisio.core.lab.outputs.progress import progress_line
    from alisio.shell.cli.outputs import lab_outputs
    from alisio.shell.cli.plan_flags import plan_request, refuse_with_resume, with_plan_flags
    from alisio.shell.cli.resume_flags import Given
    from alisio.shell.errors import CommandError

    given = Given(suite, resume, selection, provider, permissions, output, execution)
    if resume.resume is not None:
        refuse_with_resume(plan)
        request = _resume_request(given, seq)
        ci = dataclasses.replace(request.output, junit=output.junit, step_summary=True)
        request = dataclasses.replace(request, output=ci)
    elif resume.retry_errors:
        raise CommandError("--retry-errors goes with --resume DIR|RUN_ID")
    elif plan.plan is not None:
        request = plan_request(plan.plan, given)
    elif suite is None and selection.suite_dir is None:
        raise CommandError(
            "name a SUITE to run, --plan FILE to run a plan, or --resume DIR|RUN_ID to continue a run"
        )
    else:
        request = _request(suite, selection, provider, permissions, output, execution, seq)
    request = with_plan_flags(common.with_executor(request, execution), plan)
    if request.dry_run:
        return common.show_dry_run(request)
    encoder = msgspec.json.Encoder()

    def each(record: RunRecord) -> None:
        if request.output.json:
            common.out(encoder.encode(record) + b"\n")

    outcome = common.run_lab(
        request, line=progress_line, headline=_headline, quiet=request.output.quiet, each=each
    )
    code = show_outcome(outcome, request.output.json, request.output.quiet)
    return lab_outputs(outcome, request, code, "alisio eval run")


def _headline(start: LabStart) -> None:
    suite = start.choice.loaded.suite
    runs = len(start.tasks) * start.k  # the whole plan (a shard says its own share below)
    noun = "task" if len(start.tasks) == 1 else "tasks"
    size = f"k={start.k}" if start.sequential is None else f"at most {start.k}"
    head = f"{suite.suite_id} {suite.suite_version}: {len(start.tasks)} {noun} x {size} = {runs} "
    head += "run" if runs == 1 else "runs"
    if start.sequential is not None:
        head += ", sequential"
    head += common.shard_note(start)
    plan = start.provider
    source = f"replay of {plan.id} cassettes" if start.mode == "replay" else plan.id
    label = f" [{start.label}]" if start.label else ""
    note = common.sandbox_note(start)
    agent = common.naming_note(start)
    say(
        f"{head} ({source}, {plan.model}{plan.key_note}, {agent}, seed {start.seed}, {common.at_once(start.jobs, runs)}{note})"
        f"{label}"
    )


def stop_lines(outcome: LabOutcome) -> list[str]:
    """What stderr says when the command stopped early, or runs ended error or diverged."""
    from alisio.core.lab.outputs.failing import divergence_lines
    from alisio.core.replay.cassette import divergence_message

    lines = []
    capped = next((arm.report.capped for arm in outcome.arms if arm.report.capped), None)
    if capped is not None:
        done, planned = len(outcome.records), outcome.start.planned
        lines.append(
            f"stopped by {capped} after {done} of {planned} runs ({outcome.stopped}): the runs not started are "
            "listed as not run; the report of the finished runs is written"
        )
    elif outcome.stopped is not None:
        done = len(outcome.records)
        what = "interrupted" if outcome.interrupted is not None else "stopped"
        lines.append(f"{what} ({outcome.stopped}): the report of the {done} finished runs is written")
    elif outcome.interrupted is not None:  # a signal held while the reports were written
        lines.append(f"interrupted ({_signal_name(outcome.interrupted)}) while the reports were written: "
                     "they were written in full first")  # fmt: skip
    diverged = [record for record in outcome.records if record.divergence is not None]
    for record in diverged:
        assert record.divergence is not None
        head = f"divergence: task {record.task_id} rep {record.repetition}, "
        lines.append(head + divergence_message(record.divergence))
        lines += [f"  {line}" for line in divergence_lines(record.divergence)]
    errored = sum(record.status == "error" for record in outcome.records) - len(diverged)
    if errored:
        noun = "run" if errored == 1 else "runs"
        lines.append(f"{errored} {noun} ended error (infrastructure; excluded from every rate): exit 1")
    if diverged:
        noun = "run" if len(diverged) == 1 else "runs"
        lines.append(f"{len(diverged)} {noun} diverged from the cassette (replay_divergence): exit 2")
    return lines + _concurrency_hint(outcome)


def _signal_name(interrupt: KeyboardInterrupt) -> str:
    """``Ctrl-C``, ``SIGTERM`` or ``SIGHUP``, as the stopped line names them."""
    import signal

    from alisio.shell.errors import Terminated

    return signal.Signals(interrupt.signum).name if isinstance(interrupt, Terminated) else "Ctrl-C"


def _concurrency_hint(outcome: LabOutcome) -> list[str]:
    """Several runs cut mid-stream at more than one job: the server likely cancels concurrent requests.

    llama-cpp-python's server (``--interrupt_requests True``, its default) ends a stream when another request
    arrives; llama.cpp's ``llama-server`` queues past its ``-np`` slots. The runs then end ``provider_stream``,
    which reads as a flaky server unless the cause is named.
    """
    cut = sum(record.reason == "provider_stream" for record in outcome.records)
    if cut < 2 or outcome.start.jobs < 2:
        return []
    return [
        f"{cut} runs ended provider_stream (the server cut their streams) with {outcome.start.jobs} runs at "
        "once: a server that cancels concurrent requests does this (llama-cpp-python: --interrupt_requests "
        "False; llama.cpp: -np N for N jobs). Re-run with --jobs 1, or set provider.maxConcurrency in "
        "config.toml"
    ]


def show_outcome(outcome: LabOutcome, json_output: bool, quiet: bool = False) -> ExitCode:
    """The report on stdout (the table, or the JSON report), paths and problems on stderr; the exit code."""
    import msgspec

    from alisio.core.lab.outputs.progress import summary_table
    from alisio.core.lab.outputs.render_seq import sequential_lines
    from alisio.shell.lab.store import REPORT_HTML, REPORT_MD

    (arm,) = outcome.arms
    closing = "\n".join([summary_table(arm.report), *sequential_lines(arm.report)])
    if json_output:
        common.out(msgspec.json.encode(arm.report) + b"\n")
        if not quiet:
            say(closing)
    else:
        common.out(closing + "\n")
    profile = arm.report.reliability  # its sentence, when it has an ICC to say something with (not on stdout:
    if not quiet and profile is not None and profile.icc is not None:  # scripts read the table there)
        say(f"Reliability: {profile.advice}")
    say(f"report: {arm.arm.directory / REPORT_MD} ({REPORT_HTML} beside it)")  # --quiet too: where it went
    for line in common.shard_lines(outcome):
        say(line)
    for line in stop_lines(outcome):
        say(line)
    return gated(arm.report.sequential, outcome.exit_code)


def gated(block: SequentialBlock | None, code: ExitCode) -> ExitCode:
    """``code``; 4 when the sequential non-inferiority gate (``--fail-on worse-than:M``) is hit (its line on
    stderr either way)."""
    from alisio.core.lab.plans.seq_run import sequential_gate

    if block is None or block.plan.side != "not-worse":
        return code
    line, hit = sequential_gate(block)
    say(line)
    return ExitCode.GATE if hit and code is ExitCode.OK else code
