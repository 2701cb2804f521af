"""What stops any alisio command (``alisio run`` and every ``alisio eval`` command), and ``expect``.

- ``CommandError``: a usage or infrastructure problem (an unknown suite or task, an ungranted effect, an
  unreadable file, an output directory that holds a report, a missing ``--cwd``...). Its ``lines`` are printed
  on stderr, each prefixed with the command (``alisio eval run: ...``), and the command exits 1. The lab raises
  it before the first run (``alisio.shell.lab.errors.LabStopped`` after runs started is one).
- ``Terminated``: SIGTERM or SIGHUP raised in the main thread while a command runs, a ``KeyboardInterrupt``
  so every command stops on it as on Ctrl-C (the lab writes the report of its finished runs, ``alisio run``
  closes its event log); the CLI's top turns them into 143 and 129 (Ctrl-C: 130).
- ``expect(result, context)``: the shell's edge for a core ``Result``: the value of a ``Success``; a
  ``Failure`` raised as one ``CommandError`` line (``context: failure``), or as the error class given (a
  tool's ``ToolError``). It replaces the ``isinstance(r, Failure)`` / ``.unwrap()`` ladders.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from returns.result import Failure, Result, Success

__all__ = ["CommandError", "Terminated", "expect"]

T = TypeVar("T")
E = TypeVar("E")


class CommandError(Exception):
    """A usage or infrastructure problem that stops the command: ``lines`` are printed, exit 1."""

    def __init__(self, *lines: str) -> None:
        super().__init__(lines[0] if lines else "")
        self.lines = lines


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread: handled everywhere as Ctrl-C is."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum


def expect(
    result: Result[T, E],
    context: str = "",
    *then: str,
    error: Callable[..., Exception] = CommandError,
) -> T:
    """The value of a ``Success``; a ``Failure`` becomes one exception.

    Args:
        result: what a core function returned.
        context: what the failure is about (``--agent``, a path); the line is ``context: failure``, or the
            failure alone without it.
        then: further lines (``CommandError`` only), e.g. ``nothing was run: fix the variants file``.
        error: the exception to raise, called with the lines (``CommandError`` by default).

    Raises:
        CommandError: (or ``error``) the result is a ``Failure``.
    """
    match result:
        case Success(value):
            found: T = value
            return found
        case Failure(problem):
            line = f"{context}: {problem}" if context else str(problem)
            raise error(line, *then)
    raise AssertionError("a Result is a Success or a Failure")  # pragma: no cover
