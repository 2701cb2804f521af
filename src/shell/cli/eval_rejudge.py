"""``alisio eval rejudge RUN [--suite-dir DIR [--yes]] [--out DIR] [--sandbox bwrap|none] [--jobs N] [--json]``:
a report's runs judged again by the suite as it is now, without calling the model.

RUN is a run id (``latest``, a unique prefix, ``<runId>/<variant>``) or a report directory. Its suite is
found by its id as ``eval run`` finds it (``--suite-dir`` first, then the bundled suites); a ``--suite-dir``
suite is third-party code, confirmed as ``eval run`` confirms it. Each run's kept workspace diff is applied to
a fresh copy of the (possibly changed) fixture and the (possibly changed) verifiers judge it
(``alisio.shell.lab.rejudge``); ``--sandbox`` defaults to ``bwrap`` when the report's runs had it or
``[lab] sandbox`` says so, else ``none``.

The new report (in ``--out``, else a new run directory of ``<dataDir>/eval``) names the report it judged
again and the suite, verifier and fixture hashes before and after, recomputes every statistic, and lists the
verdicts that changed; ``eval compare`` of the two says it compares a rejudge. stderr gets a line per run;
stdout the summary (with ``--json``, the rejudge block as JSON).

Exit codes: 0 judged again (whatever changed); 1 a run ended error (its diff no longer applies, it was not
kept: the report is written), or a usage problem (no such run, no suite, an ``--out`` that holds a report:
one line, nothing written), or a report that cannot be written (one line; written whole or not at all: it is
written beside ``--out`` first, then moved in).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli import common
from alisio.shell.cli.options import Json, SandboxFlag, check_min

if TYPE_CHECKING:
    from datetime import datetime

    from alisio.core.lab.reports.report import Report
    from alisio.core.lab.runs.records import RunRecord
    from alisio.shell.lab.rejudge import Judged, Rejudging
    from alisio.shell.lab.suite_choice import SuiteChoice
    from alisio.shell.lab.suites import LoadedSuite

RunRef = Annotated[
    str,
    typer.Argument(
        help="The report to judge again: a run id (latest, a unique prefix, <runId>/<variant>) or a report "
        "directory.",
        metavar="RUN",
        show_default=False,
    ),
]
RejudgeSuiteDir = Annotated[
    Path | None,
    typer.Option(
        "--suite-dir",
        metavar="DIR",
        help="The suite (or a directory of suites) to judge with, outside the bundled ones; found by the "
        "report's suite id.",
        show_default=False,
    ),
]
RejudgeYes = Annotated[bool, typer.Option("--yes", help="Accept a --suite-dir suite without asking.")]
RejudgeOut = Annotated[
    Path | None,
    typer.Option(
        "--out",
        metavar="DIR",
        help="Write the new report here (a new or empty directory). Default: a new run in <dataDir>/eval.",
        show_default=False,
    ),
]
RejudgeJobs = Annotated[int, typer.Option("--jobs", "-j", metavar="N", help="Runs judged at once.")]


def rejudge(
    run: RunRef,
    suite_dir: RejudgeSuiteDir = None,
    yes: RejudgeYes = False,
    out: RejudgeOut = None,
    sandbox: SandboxFlag = None,
    jobs: RejudgeJobs = 1,
    json_output: Json = False,
) -> ExitCode:
    """Judge a report's runs again with the suite as it is now, without the model: what changed."""
    from datetime import UTC, datetime

    import msgspec

    from alisio.core.lab.judges.outcome import exit_code_for
    from alisio.shell.cli.safe_text import shown
    from alisio.shell.config_home import data_dir
    from alisio.shell.errors import CommandError, expect
    from alisio.shell.lab.rejudge import rejudge_runs
    from alisio.shell.lab.store import read_report, read_runs
    from alisio.shell.lab.stored import report_dir

    check_min("--jobs", jobs, 1)
    env = common.environment()
    data_root = data_dir(env)
    source = report_dir(run, data_root, "rejudge")
    old = expect(read_report(source))
    records = expect(read_runs(source))
    if not records:
        raise CommandError(f"{source}: the report holds no run to judge again")
    if out is not None and ((out / "runs.jsonl").exists() or (out / "report.json").exists()):
        raise CommandError(f"--out {out}: holds a report already; choose a new or empty directory")
    kind = _sandbox_kind(sandbox, old, env)
    choice = _suite(old, suite_dir, yes, kind)
    ctx = _context(source, choice, kind, jobs, env)
    judged = rejudge_runs(ctx, records, on_done=lambda one: common.say(shown(_line(one, records))))
    now = datetime.now(UTC)
    report, directory = _write(old, source, records, judged, choice, out, data_root, now)
    block = report.rejudge
    assert block is not None
    if json_output:
        common.out(msgspec.json.encode(block).decode() + "\n")
    else:
        common.out(shown(_summary(report, directory)))
    return exit_code_for([one.record for one in judged])


def _sandbox_kind(flag: str | None, old: Report, env: dict[str, str]) -> str:
    """``--sandbox``, else ``bwrap`` when the report's runs had it or ``[lab] sandbox`` asks for it: a
    config that sandboxes every command sandboxes a rejudge of an unsandboxed report too."""
    from alisio.core.harness.sandbox import SandboxKind
    from alisio.shell.config_home import load_config
    from alisio.shell.errors import expect

    if flag is not None:
        return str(flag)
    configured = expect(load_config(env)).config.lab.sandbox
    chosen = SandboxKind.BWRAP in (old.conditions.sandbox, configured)
    return str(SandboxKind.BWRAP if chosen else SandboxKind.NONE)


def _suite(old: Report, suite_dir: Path | None, yes: bool, sandbox: str) -> SuiteChoice:
    """The report's suite, by its id (confirmed when it comes from ``--suite-dir``)."""
    import functools

    from alisio.shell.cli.common import ask, say
    from alisio.shell.lab.suite_choice import (
        bundled_suites_root,
        confirm_third_party,
        find_suite,
        interactive_terminal,
    )

    choice = find_suite(old.conditions.suite_id, suite_dir, bundled_suites_root())
    if choice.third_party:
        confirm_third_party(
            choice,
            yes=yes,
            interactive=interactive_terminal(),
            say=say,
            ask=functools.partial(ask, "Run its verifiers? [y/N] "),
            sandboxed=sandbox == "bwrap",
        )
    return choice


def _context(source: Path, choice: SuiteChoice, sandbox: str, jobs: int, env: dict[str, str]) -> Rejudging:
    from alisio.core.agents.external import lab_tools
    from alisio.core.harness.sandbox import SandboxKind
    from alisio.core.harness.toolenv import scrubbed_env
    from alisio.shell.cli.common import say
    from alisio.shell.config_home import load_config
    from alisio.shell.errors import CommandError, expect
    from alisio.shell.lab.pipeline import sandbox_for
    from alisio.shell.lab.preflight import grouped
    from alisio.shell.lab.rejudge import Rejudging
    from alisio.shell.lab.task_sandbox import sandbox_refusal

    config = expect(load_config(env))
    _, box = sandbox_for(SandboxKind(sandbox), config.config.lab, env, say)
    tasks = choice.loaded.suite.tasks
    refused = [
        (t.id, why) for t in tasks if (why := sandbox_refusal(t, sandboxed=box is not None)) is not None
    ]
    if refused:
        raise CommandError(*grouped(refused), "nothing was judged")
    return Rejudging(
        source=source,
        loaded=choice.loaded,
        env=scrubbed_env(env),
        agent_tools={agent.name: lab_tools(agent) for agent in config.external},
        sandbox=box,
        jobs=jobs,
    )


def _line(judged: Judged, records: tuple[RunRecord, ...]) -> str:
    """``  fix-add rep 0: pass -> fail (check: exit 1)`` as each run is judged again."""
    from alisio.core.lab.outputs.progress import why_not_passed

    record = judged.record
    before = next(
        r
        for r in records
        if (r.variant, r.task_id, r.repetition) == (record.variant, record.task_id, record.repetition)
    )
    where = f"{record.variant}/" if record.variant else ""
    status = str(record.status) + (f" {record.reason}" if record.reason else "")
    what = f"{before.status} -> {status}" if before.status is not record.status else f"{status} (unchanged)"
    if judged.kept:
        what += ": kept as it was (the agent's run ended error)"
    why = why_not_passed(record)
    return f"{where}{record.task_id} rep {record.repetition}: {what}" + (
        f": {why}" if why and not judged.kept else ""
    )


def _new_report(
    old: Report,
    records: tuple[RunRecord, ...],
    judged: tuple[Judged, ...],
    loaded: LoadedSuite,
    run_id: str,
    created_at: str,
    data_root: Path,
) -> Report:
    """The rejudge's report: the statistics of the new records, the old conditions with the suite as it is
    now, the suite's self-check, and the rejudge block."""
    import msgspec

    from alisio.core.lab.judges.rejudge import rejudge_block, rejudged_conditions
    from alisio.core.lab.reports.report_build import build_report
    from alisio.shell.lab.selfcheck_store import with_suite_checks

    new_records = tuple(one.record for one in judged)
    conditions = rejudged_conditions(
        old.conditions,
        suite_version=loaded.suite.suite_version,
        suite_hash=loaded.content_hash,
        verifiers_hash=loaded.verifiers_hash,
        fixtures_hash=loaded.fixtures_hash,
        run_id=run_id,
        created_at=created_at,
    )
    report = build_report(
        new_records,
        conditions,
        planned_runs=old.planned_runs,
        interrupted=old.interrupted,
        stopped=old.stopped,
        capped=old.capped,
        retried=old.retried,
    )
    report = with_suite_checks(msgspec.structs.replace(report, sequential=old.sequential), data_root, loaded)
    rejudged = sum(1 for one in judged if one.rejudged)
    kept = sum(1 for one in judged if one.kept)
    block = rejudge_block(old, records, new_records, report.conditions, rejudged=rejudged, kept=kept)
    return msgspec.structs.replace(report, rejudge=block)


def _write(
    old: Report,
    source: Path,
    records: tuple[RunRecord, ...],
    judged: tuple[Judged, ...],
    choice: SuiteChoice,
    out: Path | None,
    data_root: Path,
    now: datetime,
) -> tuple[Report, Path]:
    """Build the new report and write it with the runs' evidence; the report and where it went."""
    from alisio.core.lab.outputs.render import render_markdown
    from alisio.core.lab.reports.report_json import encode_report
    from alisio.core.lab.runs.records import encode_runs
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.cassettes import credentials_of
    from alisio.shell.lab.directory import claim_run_dir, created_at_for, run_id_for
    from alisio.shell.lab.registry import register_directory
    from alisio.shell.lab.rejudge import copy_evidence, staged
    from alisio.shell.lab.store import (
        REPORT_JSON,
        REPORT_MD,
        RUNS_JSONL,
        write_bytes_atomic,
        write_report_html,
    )

    env = common.environment()
    if out is None:
        run_id, directory = claim_run_dir(data_root, run_id_for(now), env)
    else:
        run_id, directory = run_id_for(now), out
    report = _new_report(old, records, judged, choice.loaded, run_id, created_at_for(now), data_root)
    new_records = tuple(one.record for one in judged)
    known = credentials_of(env, None)
    show_as = None if out is None else str(directory.absolute())
    try:
        with staged(directory) as staging:  # all of the report, or none of it
            copy_evidence(source, staging, new_records)
            write_bytes_atomic(staging / RUNS_JSONL, encode_runs(new_records))
            write_bytes_atomic(staging / REPORT_JSON, encode_report(report))
            markdown = render_markdown(report, new_records, known, show_as=show_as)
            write_bytes_atomic(staging / REPORT_MD, markdown.encode())
            write_report_html(staging, report, new_records, known, show_as)
    except OSError as error:
        if out is None:
            with contextlib.suppress(OSError):
                directory.rmdir()  # the run directory claimed for it, empty
        raise CommandError(f"{directory}: cannot write the report: {error.strerror or error}") from None
    if out is not None:
        register_directory(data_root, directory)
    return report, directory


def _summary(report: Report, directory: Path) -> str:
    """The rejudge's line, each changed verdict, the suite's success rate now, and where the report is."""
    from alisio.core.lab.outputs.view import suite_rate_line
    from alisio.core.lab.reports.trust import change_line, rejudge_line

    block = report.rejudge
    assert block is not None
    lines = [rejudge_line(block), *(f"  {change_line(change)}" for change in block.changed)]
    return "\n".join([*lines, suite_rate_line(report), f"report: {directory / 'report.md'}"]) + "\n"
