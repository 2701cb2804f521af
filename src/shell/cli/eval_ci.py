"""``alisio eval ci``: replay every bundled cassette and say whether the harness still does what was recorded.

- Every suite (the bundled ones, or ``--suite-dir DIR``: a suite or a directory of suites) with cassettes
  (``<suite>/cassettes/*.jsonl``, or ``--cassette-dir DIR``, which needs a single suite) is replayed once per
  cassette; a suite without cassettes is listed as skipped.
- It sets what a replay needs itself: ``--allow-write --allow-process`` and an empty configuration (the
  default measured configuration; the user's config.toml is never read). No provider, credentials or
  network.
- Reports go to a new temporary directory, or ``--out DIR``: ``DIR/<suite>/report.json`` and ``report.md``
  (and runs.jsonl).
- Exit 2 when a replay diverged (stderr names the task, the call and the field); 1 when a replayed task does
  not pass, a cassette or suite cannot be replayed, or nothing could be replayed (an empty set is a
  misconfiguration, not a pass); 0 only when every cassette replays cleanly and passes. ``--json`` prints
  one summary document on stdout.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.shell.cli.options import Json

if TYPE_CHECKING:
    from alisio.core.harness.config import MeasuredConfig
    from alisio.core.lab.records import RunRecord
    from alisio.core.lab.suite import Task
    from alisio.shell.lab.pipeline import ProviderPlan
    from alisio.shell.lab.suites import LoadedSuite


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


@dataclass
class _Outcome:
    """What the command found, suite by suite."""

    suites: list[dict[str, object]] = field(default_factory=list)
    problems: int = 0
    replayed: int = 0
    diverged: int = 0
    not_passing: int = 0


def ci(
    suite_dir: Annotated[
        Path | None,
        typer.Option("--suite-dir", help="A suite, or a directory of suites, instead of the bundled ones."),
    ] = None,
    cassette_dir: Annotated[
        Path | None,
        typer.Option("--cassette-dir", help="Cassettes instead of <suite>/cassettes (a single suite only)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write DIR/<suite>/report.json and report.md.")
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Accept --suite-dir suites without asking.")] = False,
    json_output: Json = False,
) -> None:
    """Replay every bundled cassette: exit 2 on a divergence, 1 when a task does not pass, else 0."""
    import tempfile

    import msgspec

    from alisio.shell.lab.pipeline import LabError, unwritable_dir

    try:
        if out is not None and (problem := unwritable_dir(out, "--out")) is not None:
            raise LabError(problem)
        suites = _suites(suite_dir, cassette_dir, yes)
        root = out if out is not None else Path(tempfile.mkdtemp(prefix="alisio-eval-ci-"))
        outcome = _Outcome()
        for loaded in suites:
            _replay_suite(loaded, cassette_dir, root, outcome)
    except LabError as error:
        for line in error.lines:
            _say(f"alisio eval ci: {line}")
        raise typer.Exit(1) from None
    if out is None and not any(root.iterdir()):
        root.rmdir()  # nothing was replayed: leave no empty temporary directory behind
        reports: Path | None = None
    else:
        reports = root
    code = _verdict(outcome, reports)
    if json_output:
        document = {
            "exitCode": code,
            "reports": str(reports) if reports is not None else None,
            "suites": outcome.suites,
        }
        sys.stdout.write(msgspec.json.encode(document).decode() + "\n")
    raise typer.Exit(code)


def _suites(suite_dir: Path | None, cassette_dir: Path | None, yes: bool) -> list[LoadedSuite]:
    from returns.result import Failure, Success

    from alisio.core.lab.suite import violations
    from alisio.shell.lab.pipeline import (
        NO_BUNDLED,
        LabError,
        SuiteChoice,
        bundled_suites_root,
        confirm_third_party,
        interactive_terminal,
    )
    from alisio.shell.lab.suites import discover_suites

    root = suite_dir if suite_dir is not None else bundled_suites_root()
    if root is None:
        raise LabError(NO_BUNDLED)
    if not root.exists():
        raise LabError(f"--suite-dir {root}: no such directory")
    loaded: list[LoadedSuite] = []
    problems: list[str] = []
    for entry in discover_suites(root):
        match entry.result:
            case Success(suite):
                loaded.append(suite)
            case Failure(error):
                problems += [f"{error.source}: {line}" for line in violations(error)]
    if problems:
        raise LabError(*problems)
    if not loaded:
        raise LabError(f"{root}: no suite found: nothing to replay")
    if cassette_dir is not None and len(loaded) != 1:
        names = ", ".join(s.suite.suite_id for s in loaded)
        raise LabError(f"--cassette-dir needs a single suite (pass --suite-dir SUITE); found {names}")
    if suite_dir is not None:
        for suite in loaded:
            choice = SuiteChoice(loaded=suite, third_party=True)
            confirm_third_party(choice, yes=yes, interactive=interactive_terminal(), say=_say, ask=_ask)
    return loaded


def _ask() -> str:
    sys.stderr.write("Replay it? [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline()


def _replay_suite(loaded: LoadedSuite, cassette_dir: Path | None, root: Path, outcome: _Outcome) -> None:
    """Replay the suite's cassettes into ``root/<suite>`` and add what happened to ``outcome``."""
    from alisio.core.harness.config import MeasuredConfig, config_hash
    from alisio.shell.lab.pipeline import LabError, preflight
    from alisio.shell.replay.cassettes import cassette_dir_for
    from alisio.shell.replay.record import BUNDLED_GRANTS, config_hash_warnings, load_cassettes, replay_plan

    suite = loaded.suite
    directory = cassette_dir_for(loaded.directory, cassette_dir)
    ids = sorted(path.stem for path in directory.glob("*.jsonl")) if directory.is_dir() else []
    if not ids:
        _say(f"{suite.suite_id} {suite.suite_version}: skipped (no cassettes in {directory})")
        outcome.suites.append({"suiteId": suite.suite_id, "status": "skipped"})
        return
    measured = MeasuredConfig()
    known = {task.id for task in suite.tasks}
    try:
        orphans = [name for name in ids if name not in known]
        if orphans:
            raise LabError(
                *(
                    f"{directory / (name + '.jsonl')}: no task {name} in suite {suite.suite_id}"
                    for name in orphans
                )
            )
        tasks = preflight(
            loaded, ids, BUNDLED_GRANTS, read_only=False, allow_suite_full=False, measured=measured
        )
        cassettes = load_cassettes(loaded, tasks, directory)
    except LabError as error:
        for line in error.lines:
            _say(f"alisio eval ci: {suite.suite_id}: {line}")
        outcome.problems += 1
        outcome.suites.append({"suiteId": suite.suite_id, "status": "error", "errors": list(error.lines)})
        return
    for warning in config_hash_warnings(cassettes, config_hash(measured)):
        _say(f"alisio eval ci: {suite.suite_id}: {warning}")
    records = _run(loaded, tasks, replay_plan(cassettes), measured, root / suite.suite_id)
    _account(suite.suite_id, suite.suite_version, records, root / suite.suite_id, outcome)


def _run(
    loaded: LoadedSuite, tasks: tuple[Task, ...], plan: ProviderPlan, measured: MeasuredConfig, out: Path
) -> tuple[RunRecord, ...]:
    """Replay ``tasks`` once each and write the report files into ``out``."""
    import os
    from datetime import UTC, datetime

    from alisio.core.lab.report import Mode
    from alisio.shell.harness.tools.dispatch import tool_env
    from alisio.shell.lab.pipeline import LabError, LabRun, created_at_for, run_id_for, run_lab
    from alisio.shell.replay.record import BUNDLED_GRANTS

    now = datetime.now(UTC)
    lab = LabRun(
        loaded=loaded,
        tasks=tasks,
        k=1,
        seed=0,
        mode=Mode.REPLAY,
        provider=plan,
        measured=measured,
        granted=BUNDLED_GRANTS,
        read_only=False,
        keep=False,
        directory=out,
        run_id=run_id_for(now),
        created_at=created_at_for(now),
        tool_env=tool_env(os.environ, None),
    )
    result = run_lab(lab, say=_say)
    if result.interrupted:
        raise LabError("interrupted")
    return result.records


def _account(
    suite_id: str, version: str, records: tuple[RunRecord, ...], directory: Path, outcome: _Outcome
) -> None:
    from alisio.core.lab.records import RunStatus
    from alisio.core.replay.cassette import divergence_message

    passed = sum(record.status is RunStatus.PASS for record in records)
    diverged = [record for record in records if record.divergence is not None]
    failing = [
        record for record in records if record.status is not RunStatus.PASS and record.divergence is None
    ]
    noun = "cassette" if len(records) == 1 else "cassettes"
    _say(
        f"{suite_id} {version}: {len(records)} {noun} replayed: {passed} pass, {len(diverged)} diverged, "
        f"{len(failing)} not passing; report: {directory / 'report.md'}"
    )
    for record in diverged:
        assert record.divergence is not None
        _say(f"  divergence: task {record.task_id}, {divergence_message(record.divergence)}")
    for record in failing:
        why = f" ({record.reason})" if record.reason else ""
        detail = f": {record.errors[0]}" if record.errors else ""
        _say(f"  not passing: task {record.task_id}: {record.status}{why}{detail}")
    outcome.replayed += len(records)
    outcome.diverged += len(diverged)
    outcome.not_passing += len(failing)
    outcome.suites.append(
        {
            "suiteId": suite_id,
            "status": "replayed",
            "report": str(directory),
            "runs": len(records),
            "pass": passed,
            "diverged": [
                {"taskId": r.task_id, "callIndex": r.divergence.call_index, "field": r.divergence.field}
                for r in diverged
                if r.divergence is not None
            ],
            "notPassing": [r.task_id for r in failing],
        }
    )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _verdict(outcome: _Outcome, root: Path | None) -> int:
    where = f" (reports in {root})" if root is not None else " (no report was written)"
    if outcome.diverged:
        noun = (
            "replay diverged from its cassette"
            if outcome.diverged == 1
            else "replays diverged from their cassettes"
        )
        _say(f"alisio eval ci: {outcome.diverged} {noun}: exit 2{where}")
        return 2
    if outcome.problems or outcome.not_passing:
        _say(f"alisio eval ci: {_plural(outcome.problems + outcome.not_passing, 'problem')}: exit 1{where}")
        return 1
    if not outcome.replayed:
        _say("alisio eval ci: nothing was replayed (no suite has cassettes): a misconfiguration, exit 1")
        return 1
    every = "the 1 cassette" if outcome.replayed == 1 else f"all {outcome.replayed} cassettes"
    _say(f"alisio eval ci: {every} replayed cleanly and passed{where}")
    return 0
