"""``alisio eval show DIR|RUN_ID [--task ID] [--rep N] [--json]``: one run, as a readable transcript.

Without ``--rep`` it shows the task's first run that did not pass, else its first run; without ``--task`` the
report's first run that did not pass, else its first. stdout gets the transcript (turns, the assistant's
text, tool calls with their arguments, results, edits as diffs, incidents, then each verifier with its status
and detail); with ``--json`` the run's events, one JSON object per line, as stored. Exit 0 shown; 1 when the
run, the task or the repetition cannot be found (one line naming what there is).
"""

from __future__ import annotations

from typing import Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli import common
from alisio.shell.cli.options import Json

Ref = Annotated[
    str,
    typer.Argument(
        help="A report directory, or a run id under <dataDir>/eval (<runId>/<variant> for a variant).",
        metavar="DIR|RUN_ID",
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


def show(ref: Ref, task: TaskOption = None, rep: RepOption = None, json_output: Json = False) -> ExitCode:
    """Show one stored run as a readable transcript: turns, tool calls and results, then the verifiers."""
    import msgspec

    from alisio.core.lab.show import pick_run, render_run
    from alisio.core.lab.transcript import transcript_path
    from alisio.shell.cli.safe_text import redacted, shown
    from alisio.shell.config_home import data_dir
    from alisio.shell.errors import expect
    from alisio.shell.lab.errors import LabError
    from alisio.shell.lab.store import read_regular, read_runs
    from alisio.shell.lab.stored import report_dir

    directory = report_dir(ref, data_dir(common.environment()), "show")
    record = expect(pick_run(expect(read_runs(directory)), task, rep), str(directory))
    path = directory / transcript_path(record.task_id, record.repetition)
    try:
        data = read_regular(path)
    except FileNotFoundError:
        data = None
    except OSError as error:
        raise LabError(f"{path}: cannot read: {error.strerror or error}") from None
    if json_output:
        if data is None:
            raise LabError(f"{path}: no transcript was kept for this run (written by an older alisio)")
        common.out(redacted(data.decode("utf-8", "replace")))
        return ExitCode.OK
    events = None
    if data is not None:
        from alisio.core.lab.transcript import decode_transcript

        try:
            events = decode_transcript(data)
        except msgspec.DecodeError as error:
            raise LabError(f"{path}: not a transcript: {error}") from None
    common.out(shown(render_run(record, events)))  # verifier details and model text are untrusted
    return ExitCode.OK
