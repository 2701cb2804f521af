"""The ``alisio`` command: composes the sub-apps and owns the exit-code contract, in one place.

``run_command_line`` is the only place that turns what a command raised into a message and an exit code
(``alisio.core.exit_codes.ExitCode``): a command returns its code, or raises a typed error it never prints:

- ``CommandError`` (``alisio.shell.errors``; the lab raises it, ``LabStopped`` is one, and
  ``alisio run`` raises it too): each line on stderr prefixed with the command (``alisio eval run: ...``),
  exit 1;
- a click/typer usage error (which click reports with 2, which would read as a divergence): exit 1; an
  option's invalid value is one line in our words (``bad_value_line``), not the library's;
- Ctrl-C before a command had anything to report: ``interrupted; nothing was run``, exit 130; SIGTERM and
  SIGHUP are raised as ``Terminated`` (a ``KeyboardInterrupt``) so every command stops them as it stops
  Ctrl-C, then exit 143 and 129 (128 + the signal). The interrupt is carried past typer (which would turn it
  into a silent ``Exit(130)``), wherever it comes: suite hashing, a prompt, ``eval runs``.

No traceback reaches the user for any of these; ``pretty_exceptions_show_locals`` stays off (the shell holds
API keys).
"""

from __future__ import annotations

import re
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, ClassVar

import typer
from typer import _click as click

from alisio.shell.cli import coercion
from alisio.shell.cli.eval_app import eval_app
from alisio.shell.cli.style import Command, LazyGroup

coercion.install()

HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}


class _RootGroup(LazyGroup):
    lazy: ClassVar[dict[str, tuple[str, str]]] = {"run": ("alisio.shell.cli.run_cmd", "run_command")}
    docs: ClassVar[dict[str, str]] = {"run": "docs/harness.md#alisio-run-one-headless-coding-agent-run"}

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = super().list_commands(ctx)
        return [*(name for name in names if name != "help"), *(["help"] if "help" in names else [])]


app = typer.Typer(
    name="alisio",
    cls=_RootGroup,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_show_locals=False,
    context_settings=HELP_OPTIONS,
    help="A headless coding-agent harness (alisio run) and its Reliability Lab (alisio eval).",
    epilog="Docs: alisio help readme (alisio help topics: every page)",
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        print(f"alisio {version('alisio')}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", help="Print the version and exit.", is_eager=True, callback=_version),
    ] = False,
    no_color: Annotated[
        bool,
        typer.Option(
            "--no-color", help="No colour in progress lines and help (as NO_COLOR); also after the command."
        ),
    ] = False,
) -> None:
    """A headless coding-agent harness (alisio run) and its Reliability Lab (alisio eval)."""


app.add_typer(eval_app, name="eval")


@app.command("help", cls=Command)
def _help(
    ctx: typer.Context,
    words: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="COMMAND...|TOPIC",
            help="The command to explain, e.g. eval run; or a page of the manual, e.g. lab or lab#reports "
            "(alisio help topics lists them).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Show the help of alisio or of a command (alisio help eval run, as alisio eval run --help), or a page of
    the manual, shipped with alisio (alisio help agents; alisio help topics lists them)."""
    from typer.core import TyperGroup

    from alisio.shell.errors import CommandError

    parent = ctx.find_root()
    command: click.Command = parent.command
    if words and isinstance(command, TyperGroup) and command.get_command(parent, words[0]) is None:
        _manual(words)
        return
    path = ["alisio"]
    for word in words or []:
        found = command.get_command(parent, word) if isinstance(command, TyperGroup) else None
        if found is None:
            raise CommandError(f"no command {' '.join([*path, word])!r}: see alisio --help")
        path.append(word)
        parent = click.Context(found, info_name=word, parent=parent)
        command = found
    typer.echo(command.get_help(parent))  # as --help: the page, then a newline


def _manual(words: Sequence[str]) -> None:
    """``alisio help TOPIC``: the page (or section) on stdout; ``alisio help topics``: the topics."""
    from alisio.shell.cli.manual import topic_text, topics
    from alisio.shell.errors import CommandError

    if len(words) > 1:
        raise CommandError(f"one topic at a time: {' '.join(words)!r}")
    if words[0] == "topics":
        typer.echo("\n".join(f"alisio help {topic}" for topic in topics()))
        return
    typer.echo(topic_text(words[0]), nl=False)


def _prefix(argv: Sequence[str]) -> str:
    """``alisio eval run``: the command path named in ``argv`` (options skipped), for messages."""
    words = ["alisio"]
    for arg in argv:
        if arg.startswith("-") or len(words) == 3 or (len(words) == 2 and words[1] != "eval"):
            break
        words.append(arg)
    return " ".join(words)


@contextmanager
def _signals_as_interrupts() -> Iterator[None]:
    """SIGTERM and SIGHUP raise ``Terminated`` in the main thread while the block runs (Ctrl-C's path)."""
    from alisio.shell.errors import Terminated

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise Terminated(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _interrupted(error: BaseException, prefix: str) -> int:
    from alisio.core.exit_codes import ExitCode
    from alisio.shell.errors import Terminated

    print(f"{prefix}: interrupted; nothing was run", file=sys.stderr)
    if isinstance(error, Terminated):
        return int(ExitCode.for_signal(error.signum))
    return int(ExitCode.INTERRUPTED)


def _without_no_color(argv: Sequence[str]) -> list[str]:
    """``argv`` without ``--no-color`` (anywhere before ``--``), turning colour off when it was there: the
    flag belongs to every command, so ``alisio eval run SUITE --no-color`` works as the root option does."""
    end = list(argv).index("--") if "--" in argv else len(argv)
    if "--no-color" not in argv[:end]:
        return list(argv)
    from alisio.shell.cli.style import disable_colour

    disable_colour()
    return [arg for i, arg in enumerate(argv) if i >= end or arg != "--no-color"]


class _Escaped(BaseException):
    """A ``KeyboardInterrupt`` (Ctrl-C, SIGTERM, SIGHUP) that left a command, carried past typer, which would
    otherwise turn it into a silent exit 130 and lose SIGTERM's 143 (during suite hashing, ``eval runs``...)."""

    def __init__(self, interrupt: KeyboardInterrupt) -> None:
        super().__init__(str(interrupt))
        self.interrupt = interrupt


def _interrupts_passed_through(command: click.Command) -> click.Command:
    """``command`` whose invocation carries an interrupt out as ``_Escaped`` (typer catches only
    ``KeyboardInterrupt``)."""
    invoke = command.invoke

    def passing(ctx: click.Context) -> object:
        try:
            return invoke(ctx)
        except KeyboardInterrupt as interrupt:
            raise _Escaped(interrupt) from None

    command.invoke = passing  # type: ignore[method-assign]
    return command


_NOT_ONE_OF = re.compile(r"is not one of (.+?)\.?$")
_KINDS = (
    ("valid integer", "a whole number"),
    ("valid number", "a number"),
    ("valid boolean", "true or false"),
)


def _given(opts: Sequence[str], argv: Sequence[str]) -> str | None:
    """The value ``argv`` gave the option named ``opts`` (its last occurrence)."""
    found = None
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if name in opts:
            found = value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
    return found


def bad_value_line(error: click.exceptions.BadParameter, argv: Sequence[str]) -> str | None:
    """An option's invalid value in our words, one line: ``--policy: expected ask, auto or full, got 'yolo'``
    (instead of the library's "Value error, ..." or "Input should be a valid integer..."); ``None`` when the
    error is not about an option's value (click's own message then stands)."""
    opts: list[str] = list(getattr(error.param, "opts", None) or ())
    hint = error.param_hint if isinstance(error.param_hint, str) else None
    if error.param is None and hint:  # our own checks (check_min) name the flag and say what is wrong
        return f"{hint.strip(chr(39))}: {error.message}"
    if getattr(error.param, "param_type_name", None) != "option" or not opts:
        return None
    flag = max(opts, key=len)
    message = error.format_message() if error.message is None else str(error.message)
    choices = _NOT_ONE_OF.search(message)
    if choices:
        names = [name.strip().strip("'") for name in choices.group(1).split(",")]
        expected = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]
    else:
        expected = next((kind for key, kind in _KINDS if key in message), None)
        if expected is None:
            return f"{flag}: {message.removeprefix('Value error, ')}"
    value = _given(opts, argv)
    return (
        f"{flag}: expected {expected}, got {value!r}" if value is not None else f"{flag}: expected {expected}"
    )


def run_command_line(application: typer.Typer, argv: Sequence[str], prefix: str | None = None) -> int:
    """Run ``application`` on ``argv`` and return the documented exit code; never a traceback for a user error."""
    from alisio.shell.errors import CommandError

    argv = _without_no_color(argv)
    name = prefix or _prefix(argv)
    command = _interrupts_passed_through(typer.main.get_command(application))
    try:
        with _signals_as_interrupts():
            result = command.main(args=list(argv), prog_name="alisio", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as error:
        error.show()
        return 0
    except click.exceptions.BadParameter as error:
        line = bad_value_line(error, argv)
        if line is None:
            error.show()
        else:
            print(f"{name}: {line}", file=sys.stderr)
        return 1
    except click.exceptions.ClickException as error:
        error.show()
        return 1
    except CommandError as error:
        from alisio.shell.cli.safe_text import shown

        for line in error.lines:
            print(shown(f"{name}: {line}"), file=sys.stderr)
        return 1
    except _Escaped as escaped:
        return _interrupted(escaped.interrupt, name)
    except KeyboardInterrupt as error:
        return _interrupted(error, name)
    except typer.Abort as error:  # click turns Ctrl-C inside a command into Abort
        cause = error.__cause__ if isinstance(error.__cause__, KeyboardInterrupt) else KeyboardInterrupt()
        return _interrupted(cause, name)
    return int(result) if isinstance(result, int) else 0


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Run the ``alisio`` CLI on ``argv`` (default ``sys.argv[1:]``) and return its exit code."""
    return run_command_line(app, sys.argv[1:] if argv is None else argv)


def main() -> None:
    """Console-script entry point: first out of reach of the processes it starts (``key_guard``)."""
    from alisio.shell.key_guard import guard_process

    guard_process()
    sys.exit(run_cli())
