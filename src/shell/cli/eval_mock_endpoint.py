"""``alisio eval mock-endpoint [--script FILE] [--port N]``: a model endpoint to try an agent on, with no model.

It serves every wire format the lab speaks (their records' ``title``) on 127.0.0.1 (``alisio.shell.agents.mock_endpoint``;
what it answers: ``alisio.core.agents.mock``): the turns of ``--script FILE`` (``eval run --script``'s format),
or by default the answers that fix the bundled smoke-coding fix-add through the agent's own shell tool. stdout
gets its base URL (``http://127.0.0.1:PORT/v1``) as one line, at once, for a script to read; stderr how to use
it, then one line per request it got (the API, the model, the turn, what it answered). It serves until Ctrl-C
(or SIGTERM), then says how many requests it answered.

Exit codes: 130 after Ctrl-C (143 after SIGTERM, 129 after SIGHUP), as every command; 1 a script that cannot be
read or is invalid (one line naming the file and the field), or a port that cannot be bound.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli.options import check_min

MockScript = Annotated[
    Path | None,
    typer.Option(
        "--script",
        metavar="FILE",
        help="Answer with these scripted turns (eval run --script's format; a tool call named {shell} is the "
        "agent's own shell tool), the turn a request gets being how many assistant turns its conversation "
        "holds. Default: the answers that fix the bundled smoke-coding fix-add.",
        show_default=False,
    ),
]
MockPort = Annotated[
    int, typer.Option("--port", metavar="N", help="The port on 127.0.0.1 (0: a free one, printed).")
]


def mock_endpoint(script: MockScript = None, port: MockPort = 0) -> ExitCode:
    """Serve a mock model endpoint (every wire API) that answers from a script: try an agent with no model."""
    import threading

    from alisio.shell.agents.mock_endpoint import MockEndpoint, ScriptError, read_script
    from alisio.shell.cli.common import say
    from alisio.shell.errors import CommandError, Terminated

    check_min("--port", port, 0, 65535)
    try:
        turns = read_script(script) if script is not None else None
    except ScriptError as error:
        raise CommandError(str(error)) from None
    try:
        endpoint = MockEndpoint(script=turns, source=str(script), port=port, on_request=say, strict=False)
    except OSError as error:
        raise CommandError(f"--port {port}: cannot listen on 127.0.0.1: {error.strerror or error}") from None
    try:
        sys.stdout.write(endpoint.base_url + "\n")
        sys.stdout.flush()
        answers = (
            f"the {len(turns)} turns of {script}"
            if turns is not None
            else "the answers that fix smoke-coding's fix-add"
        )
        say(
            f"serving {_titles()} at {endpoint.base_url}, with {answers}; "
            "point your agent's base URL there (any key), or alisio eval run --base-url; Ctrl-C stops it"
        )
        stop = threading.Event()
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt as interrupt:
        count = len(endpoint.requests)
        say(f"stopped after {count} request{'s' if count != 1 else ''}")
        if isinstance(interrupt, Terminated):
            return ExitCode.for_signal(interrupt.signum)
        return ExitCode.INTERRUPTED
    finally:
        endpoint.close()
    return ExitCode.OK


def _titles() -> str:
    """``OpenAI Chat Completions, ..., and Gemini API``: every wire format, by its record's title."""
    from alisio.core.harness.wire import FORMATS

    titles = [record.title for record in FORMATS.values()]
    return ", ".join(titles[:-1]) + f" and {titles[-1]}" if len(titles) > 1 else titles[0]
