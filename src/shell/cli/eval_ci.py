"""``alisio eval ci``: replay every bundled cassette and say whether the harness still does what was recorded.

- Every suite (the bundled ones, or ``--suite-dir DIR``: a suite or a directory of suites) with cassettes
  (``<suite>/cassettes/*.jsonl``, or ``--cassette-dir DIR``, which needs a single suite) is replayed once per
  cassette; a suite without cassettes is listed as skipped.
- It sets what a replay needs itself: ``--allow-write --allow-process`` and an empty configuration (the
  default measured configuration; the user's config.toml is never read). No provider, credentials or network.
- Reports go to ``--out DIR``: ``DIR/<suite>/report.json``, ``report.md``, ``report.html`` and runs.jsonl (a
  DIR that already holds them is refused unless ``--force``). Without ``--out`` they go to a temporary
  directory that is removed before the command ends (the verdict line says so): nothing is left behind.
- Exit 2 when a replay diverged (stderr names the task, the call and the field); 1 when a replayed task does
  not pass, a cassette or suite cannot be replayed, or nothing could be replayed (an empty set is a
  misconfiguration, not a pass); 0 only when every cassette replays cleanly and passes; 130 after Ctrl-C.
  ``--json`` prints one summary document on stdout.
- ``--junit FILE`` writes JUnit XML: a testsuite per suite (a testcase per replayed task; a skipped suite is
  one skipped testcase, a suite that could not be replayed one error). With ``$GITHUB_STEP_SUMMARY`` set, a
  row per suite and the verdict line are appended to that file. A file that cannot be written exits 1
  (unless the code is already 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli import common
from alisio.shell.cli.common import say
from alisio.shell.cli.options import (
    OUTPUT,
    PROVIDER,
    SELECTION,
    ExecutionFlags,
    ExecutorChoice,
    ExecutorFlag,
    Force,
    Jobs,
    Json,
    Junit,
    RayAddress,
    SandboxFlag,
    grouped,
    option,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from contextlib import AbstractContextManager

    from alisio.core.harness.sandbox import SandboxKind
    from alisio.shell.lab.request import ExecutorKind
    from alisio.shell.replay.ci import CiOutcome, SuiteReplay

PREFIX = "alisio eval ci"


@dataclass(frozen=True)
class CiFlags:
    """The options of ``eval ci``."""

    suite_dir: Annotated[
        Path | None,
        option(
            "--suite-dir",
            help="A suite, or a directory of suites, instead of the bundled ones.",
            panel=SELECTION,
            metavar="DIR",
        ),
    ] = None
    yes: Annotated[
        bool,
        option("--yes", help="Accept suites from outside the bundled ones without asking.", panel=SELECTION),
    ] = False
    cassette_dir: Annotated[
        Path | None,
        option(
            "--cassette-dir",
            help="Cassettes instead of <suite>/cassettes (a single suite only).",
            panel=PROVIDER,
            metavar="DIR",
        ),
    ] = None
    out: Annotated[
        Path | None,
        option(
            "--out",
            help="Write DIR/<suite>/report.json, report.md and report.html.",
            panel=OUTPUT,
            metavar="DIR",
        ),
    ] = None
    force: Force = False
    json_output: Json = False
    junit: Junit = None
    jobs: Jobs = None
    executor: ExecutorFlag = ExecutorChoice.THREAD
    ray_address: RayAddress = None
    sandbox: SandboxFlag = None


@grouped
def ci(flags: CiFlags) -> ExitCode:
    """Replay every bundled cassette: exit 2 on a divergence, 1 when a task does not pass, else 0."""
    import functools
    import shutil
    import tempfile

    import msgspec

    from alisio.shell.cli.outputs import ci_outputs
    from alisio.shell.lab.directory import clear_out, lock_directory, prepare_out
    from alisio.shell.lab.outputs import JUNIT_OUTPUT, REPORT_FILES, check_file_output
    from alisio.shell.replay.ci import ci_suites, replay_all

    check_file_output(JUNIT_OUTPUT, flags.junit)
    ui = common.ui()
    out = flags.out
    env, jobs = common.environment(), common.jobs(flags.jobs)
    execution = ExecutionFlags(jobs=jobs, executor=flags.executor, ray_address=flags.ray_address)
    kind, address = common.executor(execution, env)
    sandbox = _sandbox(flags, env)
    suites = ci_suites(flags.suite_dir, flags.cassette_dir, flags.yes, ui, sandboxed=sandbox is not None)
    names = [loaded.suite.suite_id for loaded in suites]
    if out is not None:
        prepare_out(out, "--out", flags.force, names, REPORT_FILES)
    # Without --out the reports are a scratch directory, removed once the command has read them: eval ci
    # answers with its exit code and verdict, and a temporary folder per call would pile up in the temp dir.
    root = out if out is not None else Path(tempfile.mkdtemp(prefix="alisio-eval-ci-"))
    try:
        with lock_directory(root), _session(kind, address, jobs):  # one Ray session for every suite
            if out is not None and flags.force:
                clear_out(out, "--out", names, REPORT_FILES)  # under the lock: a writer there keeps its files
            outcome = replay_all(
                suites,
                flags.suite_dir,
                flags.cassette_dir,
                root,
                env,
                ui,
                functools.partial(_show_suite, kept=out is not None),
                jobs,
                executor=kind,
                ray_address=address,
                sandbox=sandbox,
            )
    finally:
        if out is None:
            shutil.rmtree(root, ignore_errors=True)
    reports = out
    code, verdict = _verdict(outcome, reports)
    say(verdict)
    code = ci_outputs(outcome, flags.junit, env, verdict, code, PREFIX)
    if flags.json_output:
        document = {
            "exitCode": int(code),
            "reports": str(reports) if reports is not None else None,
            "suites": [_suite_json(replay) for replay in outcome.suites],
        }
        common.out(msgspec.json.encode(document).decode() + "\n")
    return code


def _session(kind: ExecutorKind, address: str | None, jobs: int | None) -> AbstractContextManager[None]:
    """A Ray session around every suite's replay with ``--executor ray``; nothing otherwise."""
    import contextlib
    import os

    from alisio.shell.lab.request import ExecutorKind

    if kind is not ExecutorKind.RAY:
        return contextlib.nullcontext()
    from alisio.shell.lab.ray_executor import check_address, ray_session

    if address is not None:
        check_address(address)
    return ray_session(address, jobs or os.cpu_count() or 1, say)


def _sandbox(flags: CiFlags, env: Mapping[str, str]) -> SandboxKind | None:
    """``--sandbox``, checked before the first replay (``eval ci`` reads no config.toml)."""
    from alisio.core.harness.config import LabSettings
    from alisio.core.harness.sandbox import SandboxKind
    from alisio.shell.lab.pipeline import sandbox_for

    if flags.sandbox is None:
        return None
    kind = SandboxKind(flags.sandbox)
    sandbox_for(kind, LabSettings(), env, say)
    if kind is SandboxKind.BWRAP:
        say(f"{PREFIX}: commands run in the bwrap sandbox")
    return kind


def _show_suite(replay: SuiteReplay, kept: bool) -> None:
    from alisio.core.lab.outputs.failing import divergence_lines
    from alisio.core.lab.runs.records import RunStatus
    from alisio.core.replay.cassette import divergence_message

    suite = replay.loaded.suite
    if replay.problems:
        for line in replay.problems:
            say(f"{PREFIX}: {suite.suite_id}: {line}")
        return
    if replay.outcome is None:
        say(f"{suite.suite_id} {suite.suite_version}: skipped (no cassettes in {replay.cassettes})")
        return
    records = replay.records
    passed = sum(record.status is RunStatus.PASS for record in records)
    diverged = [record for record in records if record.divergence is not None]
    failing = [r for r in records if r.status is not RunStatus.PASS and r.divergence is None]
    noun = "cassette" if len(records) == 1 else "cassettes"
    directory = replay.outcome.start.root
    say(
        f"{suite.suite_id} {suite.suite_version}: {len(records)} {noun} replayed: {passed} pass, "
        f"{len(diverged)} diverged, {len(failing)} not passing"
        + (f"; report: {directory / 'report.md'}" if kept else "")
    )
    for record in diverged:
        assert record.divergence is not None
        say(f"  divergence: task {record.task_id}, {divergence_message(record.divergence)}")
        for line in divergence_lines(record.divergence):
            say(f"    {line}")
    for record in failing:
        why = f" ({record.reason})" if record.reason else ""
        detail = f": {record.errors[0]}" if record.errors else ""
        say(f"  not passing: task {record.task_id}: {record.status}{why}{detail}")


def _suite_json(replay: SuiteReplay) -> dict[str, object]:
    from alisio.core.lab.runs.records import RunStatus

    suite_id = replay.loaded.suite.suite_id
    if replay.problems:
        return {"suiteId": suite_id, "status": "error", "errors": list(replay.problems)}
    if replay.outcome is None:
        return {"suiteId": suite_id, "status": "skipped"}
    records = replay.records
    return {
        "suiteId": suite_id,
        "status": "replayed",
        "report": str(replay.outcome.start.root),
        "runs": len(records),
        "pass": sum(r.status is RunStatus.PASS for r in records),
        "diverged": [
            {"taskId": r.task_id, "callIndex": r.divergence.call_index, "field": r.divergence.field}
            for r in records
            if r.divergence is not None
        ],
        "notPassing": [r.task_id for r in records if r.status is not RunStatus.PASS and r.divergence is None],
    }


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _verdict(outcome: CiOutcome, root: Path | None) -> tuple[ExitCode, str]:
    """The exit code and the line that says why."""
    from alisio.core.exit_codes import ExitCode

    where = f" (reports in {root})" if root is not None else " (no report kept: --out DIR keeps them)"
    interrupted = next((s.outcome for s in outcome.suites if s.outcome and s.outcome.interrupted), None)
    if interrupted is not None:
        return interrupted.exit_code, f"{PREFIX}: interrupted{where}"
    if outcome.diverged:
        noun = (
            "replay diverged from its cassette"
            if outcome.diverged == 1
            else "replays diverged from their cassettes"
        )
        return ExitCode.DIVERGED, f"{PREFIX}: {outcome.diverged} {noun}: exit 2{where}"
    if outcome.problems or outcome.not_passing:
        problems = _plural(outcome.problems + outcome.not_passing, "problem")
        return ExitCode.FAILURE, f"{PREFIX}: {problems}: exit 1{where}"
    if not outcome.replayed:
        return (
            ExitCode.FAILURE,
            f"{PREFIX}: nothing was replayed (no suite has cassettes): a misconfiguration, exit 1",
        )
    every = "the 1 cassette" if outcome.replayed == 1 else f"all {outcome.replayed} cassettes"
    return ExitCode.OK, f"{PREFIX}: {every} replayed cleanly and passed{where}"
