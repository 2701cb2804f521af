"""The lab's own error; the command-wide ones it raises are ``alisio.shell.errors``'.

- ``CommandError`` (``alisio.shell.errors``): a usage or infrastructure problem found before the first run.
  Nothing ran; exit 1.
- ``LabStopped``: a problem found after runs started that makes every further run pointless (the provider
  refused the key, the endpoint cannot be reached, the disk is full). The report of the finished runs has been
  written, marked interrupted; its ``lines`` are printed and the command exits 1.
- ``Terminated`` (``alisio.shell.errors``; SIGTERM, SIGHUP) and Ctrl-C: the lab writes the report of the
  finished runs and re-raises.

A run that ends ``error`` is data in its record, never one of these.
"""

from __future__ import annotations

from alisio.shell.errors import CommandError

__all__ = ["LabStopped"]


class LabStopped(CommandError):
    """The command stopped after some runs: the report of the finished runs is written; exit 1."""
