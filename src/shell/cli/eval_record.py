"""``alisio eval record <suite>``: run each selected task once, live, and write its cassette.

- The global flags work as in ``alisio run`` (``--allow-*``, ``--read-only``, ``--model``, ``--base-url``):
  ``--read-only`` denies every effect but read, so a task that needs another effect is refused before the
  first run, as in ``eval run``.
- The provider is the configured one (``--model``/``--base-url`` override it), or ``--script FILE|DIR`` as in
  ``eval run``. Each call is recorded with the request the harness sent, normalised with the run's own rules
  (the workspace becomes ``<workspace>``, the task's replayNormalize applies), and the events received.
- Cassettes go to ``<cassette-dir>/<task-id>.jsonl`` (default ``<suite>/cassettes``), all or none: a
  cassette that holds a secret (a well-known key shape, or the exact value of a credential of the environment
  or the profile) or exceeds 256 KB (2 MB per directory) is refused, naming the task and the field, never the
  value; nothing is written; exit 1.
- A task whose recorded run does not pass is still recorded, with a warning: its cassette replays that run.
- stderr: one line per run, then one per cassette written. ``--json``: one JSON object per cassette on stdout
  (``taskId``, ``path``, ``calls``, ``bytes``, ``status``, ``reason``).
- Exit 0 when every cassette was written; 1 on a usage or infrastructure error, a refused cassette, or when
  some recorded run ended error (its cassette is still written).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.shell.cli.common import ask, live_plan, load_lab_config, say
from alisio.shell.cli.options import (
    AllowAnalysis,
    AllowExternal,
    AllowProcess,
    AllowSuiteFull,
    AllowWrite,
    BaseUrl,
    Json,
    Keep,
    Model,
    ReadOnly,
    Seed,
    SuiteArg,
    SuiteDir,
    Tasks,
    Yes,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from alisio.core.harness.config import MeasuredConfig
    from alisio.core.harness.events import Effect
    from alisio.core.lab.suite import Task
    from alisio.shell.lab.pipeline import ProviderPlan
    from alisio.shell.lab.suites import LoadedSuite


def record(
    suite: SuiteArg,
    tasks: Tasks = None,
    seed: Seed = 0,
    keep: Keep = False,
    cassette_dir: Annotated[
        Path | None, typer.Option("--cassette-dir", help="Where to write (default <suite>/cassettes).")
    ] = None,
    suite_dir: SuiteDir = None,
    yes: Yes = False,
    allow_suite_full: AllowSuiteFull = False,
    json_output: Json = False,
    allow_write: AllowWrite = False,
    allow_process: AllowProcess = False,
    allow_external: AllowExternal = False,
    allow_analysis: AllowAnalysis = False,
    read_only: ReadOnly = False,
    model: Model = None,
    base_url: BaseUrl = None,
    script: Annotated[
        Path | None,
        typer.Option(
            "--script",
            help="Record scripted assistant turns instead of a model: one JSON file for every task, "
            "or a directory of <task-id>.json.",
        ),
    ] = None,
) -> None:
    """Run each selected task once and write its cassette (<suite>/cassettes/<task-id>.jsonl)."""
    import os

    from alisio.shell.lab.pipeline import LabError, granted_effects

    granted = {"write": allow_write, "process": allow_process, "external": allow_external}
    granted["analysis"] = allow_analysis
    try:
        code = _execute(
            suite=suite,
            wanted=tasks.split(",") if tasks is not None else None,
            seed=seed,
            keep=keep,
            cassette_dir=cassette_dir,
            suite_dir=suite_dir,
            yes=yes,
            allow_suite_full=allow_suite_full,
            json_output=json_output,
            granted=granted_effects(granted),
            read_only=read_only,
            model=model,
            base_url=base_url,
            script=script,
            env=os.environ,
        )
    except LabError as error:
        for line in error.lines:
            say(f"alisio eval record: {line}")
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        say("alisio eval record: interrupted; no cassette was written")
        raise typer.Exit(1) from None
    raise typer.Exit(code)


def _execute(
    *,
    suite: str,
    wanted: list[str] | None,
    seed: int,
    keep: bool,
    cassette_dir: Path | None,
    suite_dir: Path | None,
    yes: bool,
    allow_suite_full: bool,
    json_output: bool,
    granted: frozenset[Effect],
    read_only: bool,
    model: str | None,
    base_url: str | None,
    script: Path | None,
    env: Mapping[str, str],
) -> int:
    from alisio.core.harness.events import Effect
    from alisio.shell.lab.pipeline import (
        LabError,
        bundled_suites_root,
        confirm_third_party,
        find_suite,
        interactive_terminal,
        preflight,
        unwritable_dir,
    )
    from alisio.shell.lab.scripted_plan import scripted_plan
    from alisio.shell.replay.cassettes import cassette_dir_for

    loaded_config = load_lab_config(env)
    measured = loaded_config.config.measured
    choice = find_suite(suite, suite_dir, bundled_suites_root())
    selected = preflight(
        choice.loaded,
        wanted,
        granted,
        read_only=read_only,
        allow_suite_full=allow_suite_full,
        measured=measured,
    )
    target = cassette_dir_for(choice.loaded.directory, cassette_dir)
    if (problem := unwritable_dir(target, "--cassette-dir" if cassette_dir else "cassettes")) is not None:
        raise LabError(problem)
    plan = (
        scripted_plan(script, selected, model)
        if script is not None
        else live_plan(loaded_config, model, base_url, env)
    )
    try:
        confirm_third_party(choice, yes=yes, interactive=interactive_terminal(), say=say, ask=ask)
        if read_only:
            granted = frozenset({Effect.READ})
        return _record(
            choice.loaded,
            selected,
            plan,
            measured,
            granted,
            read_only,
            seed,
            keep,
            cassette_dir,
            json_output,
            env,
        )
    finally:
        plan.close()


def _record(
    loaded: LoadedSuite,
    selected: tuple[Task, ...],
    plan: ProviderPlan,
    measured: MeasuredConfig,
    granted: frozenset[Effect],
    read_only: bool,
    seed: int,
    keep: bool,
    cassette_dir: Path | None,
    json_output: bool,
    env: Mapping[str, str],
) -> int:
    import tempfile
    from datetime import UTC, datetime

    import msgspec

    from alisio.core.lab.outcome import exit_code_for
    from alisio.core.lab.progress import progress_line
    from alisio.core.lab.records import RunRecord
    from alisio.core.lab.report import Mode
    from alisio.shell.harness.tools.dispatch import tool_env
    from alisio.shell.lab.pipeline import LabRun, created_at_for, run_id_for
    from alisio.shell.replay.cassettes import cassette_dir_for, credentials_of
    from alisio.shell.replay.record import record_cassettes, recording_plan

    recording, hook = recording_plan(plan)
    now = datetime.now(UTC)
    directory = cassette_dir_for(loaded.directory, cassette_dir)
    suite = loaded.suite
    noun = "task" if len(selected) == 1 else "tasks"
    say(f"recording {suite.suite_id} {suite.suite_version}: {len(selected)} {noun} ({plan.id}, {plan.model})")
    lab = LabRun(
        loaded=loaded,
        tasks=selected,
        k=1,
        seed=seed,
        mode=Mode.LIVE,
        provider=recording,
        measured=measured,
        granted=granted,
        read_only=read_only,
        keep=keep,
        directory=Path(tempfile.mkdtemp(prefix="alisio-record-")),
        run_id=run_id_for(now),
        created_at=created_at_for(now),
        tool_env=tool_env(env, plan.key),
    )
    records: list[RunRecord] = []

    def on_record(record: RunRecord, index: int, total: int) -> None:
        records.append(record)
        say(progress_line(index, total, record))

    written = record_cassettes(
        lab, hook, directory, credentials_of(env, plan.key), say=say, on_record=on_record
    )
    encoder = msgspec.json.Encoder()
    for item in written:
        say(f"wrote {item.path} ({item.calls} calls, {item.size / 1024:.1f} KB)")
        if item.status != "pass":
            why = f" ({item.reason})" if item.reason else ""
            say(
                f"warning: task {item.task_id}: the recorded run ended {item.status}{why}; its cassette replays that run"
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
            sys.stdout.buffer.write(encoder.encode(line) + b"\n")
    sys.stdout.buffer.flush()
    return exit_code_for(records)
