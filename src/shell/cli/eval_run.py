"""``alisio eval run <suite>``: run a suite's tasks k times in live mode, judge each run, write the report.

- ``<suite>`` is a suite id or directory name: in ``--suite-dir`` (a suite or a directory of suites; it is
  third-party code, so it is confirmed on a terminal, or accepted with ``--yes``), else among the bundled
  suites of the source checkout.
- Before the first run: unknown ``--tasks`` ids, a task whose policy asks for an effect the ``--allow-*``
  flags do not grant (or mode full without ``--allow-suite-full``), an unknown agent, a bad configuration or
  provider: one line each on stderr, exit 1, nothing run.
- Each run's record is appended to runs.jsonl as it finishes; report.json, report.md and runs.jsonl end up in
  ``<dataDir>/eval/<runId>/`` or ``--out DIR``. stderr gets one line per run and the per-task summary; with
  ``--json`` stdout gets one RunRecord per line as runs finish, then the report.
- ``--script FILE`` plays a scripted provider instead of a model (testing): FILE is one script replayed from
  its first turn for every run, or a directory holding ``<task-id>.json`` for each selected task.
- Exit 0 when it completed, whichever tasks passed; 1 on a usage or infrastructure error, when some run ended
  error (the report is still written) or after Ctrl-C (the report of the finished runs is written).
- ``--mode replay`` serves each task's cassette (``<cassette-dir>/<task-id>.jsonl``, default
  ``<suite>/cassettes``) instead of a provider: no provider, credentials or network; k defaults to 1. A
  selected task without a cassette is an error before the first run naming the file. A warning says when the
  configuration hash differs from the recorded one. A run that asks the provider for something the cassette
  did not record ends error (``replay_divergence``); stderr names the task, the call and the field with
  excerpts, the report is still written, and the exit code is 2 (it beats 1).
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.shell.cli.common import LabRequest, live_plan, load_lab_config, say, start_lab
from alisio.shell.cli.options import (
    AllowAnalysis,
    AllowExternal,
    AllowProcess,
    AllowSuiteFull,
    AllowWrite,
    BaseUrl,
    InputRate,
    Json,
    Keep,
    Model,
    OutputRate,
    ReadOnly,
    Script,
    Seed,
    SuiteArg,
    SuiteDir,
    Tasks,
    Yes,
)

if TYPE_CHECKING:
    from alisio.core.harness.config import MeasuredConfig
    from alisio.core.lab.suite import Task
    from alisio.shell.lab.pipeline import LabRun, ProviderPlan
    from alisio.shell.lab.suites import LoadedSuite

DEFAULT_K = 5


class ModeChoice(StrEnum):
    """``--mode``: live (the configured provider) or replay (cassettes)."""

    LIVE = "live"
    REPLAY = "replay"


def _replay_plan(
    loaded: LoadedSuite, tasks: tuple[Task, ...], cassette_dir: Path | None, measured: MeasuredConfig
) -> ProviderPlan:
    """Each task's cassette, read before the first run; warns when the configuration hash differs."""
    from alisio.core.harness.config import config_hash
    from alisio.shell.replay.cassettes import cassette_dir_for
    from alisio.shell.replay.record import config_hash_warnings, load_cassettes, replay_plan

    cassettes = load_cassettes(loaded, tasks, cassette_dir_for(loaded.directory, cassette_dir))
    for warning in config_hash_warnings(cassettes, config_hash(measured)):
        say(f"alisio eval run: {warning}")
    return replay_plan(cassettes)


def _check_flags(mode: ModeChoice, cassette_dir: Path | None, script: Path | None) -> None:
    from alisio.shell.lab.pipeline import LabError

    if cassette_dir is not None and mode is not ModeChoice.REPLAY:
        raise LabError("--cassette-dir is only used with --mode replay")
    if mode is ModeChoice.REPLAY and script is not None:
        raise LabError("--script plays a scripted provider in live mode; replay plays cassettes")


def run(
    suite: SuiteArg,
    tasks: Tasks = None,
    k: Annotated[
        int | None, typer.Option("--k", min=1, help="Repetitions per task (default 5).", show_default=False)
    ] = None,
    seed: Seed = 0,
    mode: Annotated[ModeChoice, typer.Option("--mode", help="live (a provider) or replay (cassettes).")] = (
        ModeChoice.LIVE
    ),
    cassette_dir: Annotated[Path | None, typer.Option("--cassette-dir", help="Cassettes (replay).")] = None,
    keep: Keep = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the three report files directly here.")
    ] = None,
    suite_dir: SuiteDir = None,
    yes: Yes = False,
    allow_suite_full: AllowSuiteFull = False,
    input_rate: InputRate = None,
    output_rate: OutputRate = None,
    json_output: Json = False,
    allow_write: AllowWrite = False,
    allow_process: AllowProcess = False,
    allow_external: AllowExternal = False,
    allow_analysis: AllowAnalysis = False,
    read_only: ReadOnly = False,
    model: Model = None,
    base_url: BaseUrl = None,
    script: Script = None,
) -> None:
    """Run a suite k times, judge every run, and write report.json, report.md and runs.jsonl."""
    import os

    from alisio.shell.lab.pipeline import LabError, granted_effects, rates_from

    granted_flags = {"write": allow_write, "process": allow_process, "external": allow_external}
    granted_flags["analysis"] = allow_analysis
    try:
        _check_flags(mode, cassette_dir, script)
        request = LabRequest(
            suite=suite,
            wanted=tasks.split(",") if tasks is not None else None,
            k=k if k is not None else (1 if mode is ModeChoice.REPLAY else DEFAULT_K),
            seed=seed,
            keep=keep,
            out=out,
            suite_dir=suite_dir,
            yes=yes,
            allow_suite_full=allow_suite_full,
            rates=rates_from(input_rate, output_rate),
            json_output=json_output,
            granted=granted_effects(granted_flags),
            read_only=read_only,
            model=model,
            base_url=base_url,
            script=script,
            env=os.environ,
        )
        code = _execute(request, replay=(cassette_dir,) if mode is ModeChoice.REPLAY else None)
    except LabError as error:
        for line in error.lines:
            say(f"alisio eval run: {line}")
        raise typer.Exit(1) from None
    except KeyboardInterrupt:  # before the first run (a run's own Ctrl-C is handled by the lab)
        say("alisio eval run: interrupted; nothing was run")
        raise typer.Exit(1) from None
    raise typer.Exit(code)


def _execute(request: LabRequest, replay: tuple[Path | None] | None) -> int:
    from alisio.core.lab.report import Mode
    from alisio.shell.lab.pipeline import LabError, bundled_suites_root, find_suite, preflight, unwritable_dir
    from alisio.shell.lab.scripted_plan import scripted_plan

    loaded_config = load_lab_config(request.env)
    measured: MeasuredConfig = loaded_config.config.measured
    choice = find_suite(request.suite, request.suite_dir, bundled_suites_root())
    selected = preflight(
        choice.loaded,
        request.wanted,
        request.granted,
        read_only=request.read_only,
        allow_suite_full=request.allow_suite_full,
        measured=measured,
    )
    if request.out is not None and (problem := unwritable_dir(request.out, "--out")) is not None:
        raise LabError(problem)
    if replay is not None:
        plan = _replay_plan(choice.loaded, selected, replay[0], measured)
    elif request.script is not None:
        plan = scripted_plan(request.script, selected, request.model)
    else:
        plan = live_plan(loaded_config, request.model, request.base_url, request.env)
    try:
        mode = Mode.REPLAY if replay is not None else Mode.LIVE
        lab = start_lab(request, choice, selected, plan, measured, mode)
        return _run_and_show(lab, request.json_output)
    finally:
        plan.close()


def _run_and_show(lab: LabRun, json_output: bool) -> int:
    import msgspec

    from alisio.core.lab.outcome import exit_code_for
    from alisio.core.lab.progress import progress_line, summary_table
    from alisio.core.lab.records import RunRecord
    from alisio.core.replay.cassette import divergence_message
    from alisio.shell.lab.pipeline import run_lab
    from alisio.shell.lab.store import REPORT_MD

    encoder = msgspec.json.Encoder()
    suite = lab.loaded.suite
    runs = len(lab.tasks) * lab.k
    noun = "task" if len(lab.tasks) == 1 else "tasks"
    head = f"{suite.suite_id} {suite.suite_version}: {len(lab.tasks)} {noun} x k={lab.k} = {runs} "
    head += "run" if runs == 1 else "runs"
    source = f"replay of {lab.provider.id} cassettes" if lab.mode == "replay" else lab.provider.id
    say(f"{head} ({source}, {lab.provider.model}, seed {lab.seed})")

    def on_record(record: RunRecord, index: int, total: int) -> None:
        say(progress_line(index, total, record))
        if json_output:
            sys.stdout.buffer.write(encoder.encode(record) + b"\n")
            sys.stdout.buffer.flush()

    result = run_lab(lab, say=say, on_record=on_record)
    if json_output:
        sys.stdout.buffer.write(encoder.encode(result.report) + b"\n")
        sys.stdout.buffer.flush()
    say("")
    say(summary_table(result.report))
    say(f"report: {result.directory / REPORT_MD}")
    diverged = [record for record in result.records if record.divergence is not None]
    for record in diverged:
        assert record.divergence is not None
        line = f"divergence: task {record.task_id} #{record.repetition + 1}, "
        say(line + divergence_message(record.divergence))
    errored = sum(record.status == "error" for record in result.records) - len(diverged)
    if errored:
        noun = "run" if errored == 1 else "runs"
        say(f"{errored} {noun} ended error (infrastructure; excluded from every rate): exit 1")
    if diverged:
        noun = "run" if len(diverged) == 1 else "runs"
        say(f"{len(diverged)} {noun} diverged from the cassette (replay_divergence): exit 2")
        return 2
    return 1 if result.interrupted else exit_code_for(result.records)
