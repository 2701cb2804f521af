"""The lab's typed errors: what stops a command, as opposed to a run that ends ``error`` (which is data).

- ``LabError``: a usage or infrastructure problem found before the first run (an unknown suite or task, an
  ungranted effect, an unreadable file, an output directory that holds a report...). Its ``lines`` are printed
  on stderr, each prefixed with the command (``alisio eval run: ...``), and the command exits 1. Nothing ran.
- ``LabStopped``: a problem found after runs started that makes every further run pointless (the provider
  refused the key, the endpoint cannot be reached, the disk is full). The report of the finished runs has been
  written, marked interrupted; its ``lines`` are printed and the command exits 1.

Ctrl-C, SIGTERM and SIGHUP are ``KeyboardInterrupt`` (``Terminated`` for the two signals): the lab writes the
report of the finished runs and re-raises; the CLI's top turns them into 130, 143 and 129.
"""

from __future__ import annotations

__all__ = ["LabError", "LabStopped", "Terminated"]


class LabError(Exception):
    """A usage or infrastructure problem found before the first run: ``lines`` are printed, exit 1."""

    def __init__(self, *lines: str) -> None:
        super().__init__(lines[0] if lines else "")
        self.lines = lines


class LabStopped(LabError):
    """The command stopped after some runs: the report of the finished runs is written; exit 1."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread: handled everywhere as Ctrl-C is."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum
