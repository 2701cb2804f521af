"""``alisio eval show DIR|RUN_ID|BUNDLE [--task ID] [--rep N] [--json]``: one run, as a readable transcript.

Above the run, what names it (the agent, the script: ``alisio.core.lab.reports.naming``) as its report does. DIR is a
report directory; RUN_ID a run id (``latest``, or any unique prefix; ``alisio.shell.lab.stored``);
BUNDLE a file written by ``eval export``, so that whoever receives one can read its runs. A directory that
``alisio run`` kept (``<dataDir>/run/<runId>``, named on its last line) shows that run's transcript.

Without ``--rep`` it shows the task's first run that did not pass, else its first run; without ``--task`` the
report's first run that did not pass, else its first. stdout gets the transcript (turns, the assistant's
text, tool calls with their arguments, results, edits as diffs, incidents, then each verifier with its status
and detail); with ``--json`` the run's events, one JSON object per line, as stored. Exit 0 shown; 1 when the
run, the task or the repetition cannot be found (one line naming what there is).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli import common
from alisio.shell.cli.options import JsonLines

if TYPE_CHECKING:
    from pathlib import Path

    from alisio.core.lab.runs.records import RunRecord
    from alisio.core.lab.sources.bundle import Bundle

Ref = Annotated[
    str,
    typer.Argument(
        help="A report directory, a run id under <dataDir>/eval (latest, a unique prefix, <runId>/<variant> "
        "for a variant), or an eval export bundle.",
        metavar="DIR|RUN_ID|BUNDLE",
        show_default=False,
    ),
]
TaskOption = Annotated[
    str | None, typer.Option("--task", help="The task (default: the first failing run's).", metavar="ID")
]
RepOption = Annotated[
    int | None,
    typer.Option(
        "--rep", help="The repetition, as runs.jsonl numbers it (default: the first failing).", metavar="N"
    ),
]


def show(
    ref: Ref, task: TaskOption = None, rep: RepOption = None, json_output: JsonLines = False
) -> ExitCode:
    """Show one stored run as a readable transcript: turns, tool calls and results, then the verifiers."""
    from alisio.shell.lab.sources import read_bundle

    bundle = read_bundle(ref)
    if bundle is not None:
        return _show_bundle(bundle, ref, task, rep, json_output)
    if _run_transcript(ref) is not None:
        return _show_run(ref, json_output)
    return _show_directory(ref, task, rep, json_output)


def _run_transcript(ref: str) -> Path | None:
    """The transcript of an ``alisio run`` record directory (``<dataDir>/run/<runId>``), else ``None``."""
    from pathlib import Path

    from alisio.core.lab.outputs.run_record import TRANSCRIPT_JSONL
    from alisio.shell.lab.store import RUNS_JSONL

    directory = Path(ref).expanduser()
    try:
        found = (directory / TRANSCRIPT_JSONL).is_file() and not (directory / RUNS_JSONL).exists()
    except OSError:
        return None
    return directory / TRANSCRIPT_JSONL if found else None


def _show_run(ref: str, json_output: bool) -> ExitCode:
    """An ``alisio run`` record: its header (outcome, usage) and the transcript."""
    import msgspec

    from alisio.core.lab.outputs.run_record import render_run_transcript
    from alisio.core.lab.runs.transcript import decode_transcript
    from alisio.shell.errors import CommandError

    path = _run_transcript(ref)
    assert path is not None
    try:
        data = path.read_bytes()
        events = decode_transcript(data)
    except OSError as error:
        raise CommandError(f"{path}: cannot read: {error.strerror or error}") from None
    except msgspec.DecodeError as error:
        raise CommandError(f"{path}: not a transcript: {error}") from None
    common.out(data if json_output else render_run_transcript(path.parent.name, events))
    return ExitCode.OK


def _picked(runs: tuple[RunRecord, ...], where: object, task: str | None, rep: int | None) -> RunRecord:
    from returns.result import Failure, Success

    from alisio.core.lab.outputs.show import pick_run
    from alisio.shell.errors import CommandError

    match pick_run(runs, task, rep):
        case Success(record):
            return record  # type: ignore[no-any-return]
        case Failure(problem):
            raise CommandError(f"{where}: {problem}")
    raise AssertionError("unreachable")  # pragma: no cover


def _show_bundle(bundle: Bundle, ref: str, task: str | None, rep: int | None, json_output: bool) -> ExitCode:
    """A run of an ``eval export`` bundle: its record and the transcript the bundle carries."""
    import msgspec

    from alisio.core.lab.outputs.show import naming_lines, render_run
    from alisio.shell.errors import CommandError

    record = _picked(bundle.runs, ref, task, rep)
    events = bundle.transcript(record.task_id, record.repetition)
    if json_output:
        if events is None:
            raise CommandError(
                f"{ref}: the bundle holds no transcript for {record.task_id} rep {record.repetition}"
            )
        encoder = msgspec.json.Encoder()
        common.out(b"".join(encoder.encode(event) + b"\n" for event in events))
        return ExitCode.OK
    common.out(naming_lines(bundle.report.conditions) + render_run(record, events))
    return ExitCode.OK


def _show_directory(ref: str, task: str | None, rep: int | None, json_output: bool) -> ExitCode:
    import msgspec

    from alisio.core.lab.outputs.show import render_run
    from alisio.core.lab.runs.transcript import transcript_path
    from alisio.shell.cli.safe_text import redacted, shown
    from alisio.shell.config_home import data_dir
    from alisio.shell.errors import CommandError, expect
    from alisio.shell.lab.store import read_regular, read_runs
    from alisio.shell.lab.stored import report_dir

    directory = report_dir(ref, data_dir(common.environment()), "show")
    record = _picked(expect(read_runs(directory)), directory, task, rep)
    path = directory / transcript_path(record.task_id, record.repetition)
    try:
        data = read_regular(path)
    except FileNotFoundError:
        data = None
    except OSError as error:
        raise CommandError(f"{path}: cannot read: {error.strerror or error}") from None
    if json_output:
        if data is None:
            raise CommandError(f"{path}: no transcript was kept for this run (written by an older alisio)")
        common.out(redacted(data.decode("utf-8", "replace")))
        return ExitCode.OK
    events = None
    if data is not None:
        from alisio.core.lab.runs.transcript import decode_transcript

        try:
            events = decode_transcript(data)
        except msgspec.DecodeError as error:
            raise CommandError(f"{path}: not a transcript: {error}") from None
    note = _report_note(directory, record.task_id)
    common.out(shown(note + render_run(record, events)))  # verifier details and model text are untrusted
    return ExitCode.OK


def _report_note(directory: Path, task_id: str) -> str:
    """What names the run (the agent: ``alisio.core.lab.reports.naming``) and how its task stopped, when the directory
    holds a sequential report; nothing when the directory holds no readable report."""
    from returns.result import Success

    from alisio.core.lab.outputs.render_seq import task_note
    from alisio.core.lab.outputs.show import naming_lines
    from alisio.shell.lab.store import read_report

    match read_report(directory):
        case Success(report):
            return naming_lines(report.conditions) + task_note(report.sequential, task_id)
    return ""
