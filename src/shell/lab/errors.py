"""The lab's own error, and the command-wide ones it raises (``alisio.shell.errors``).

- ``CommandError`` (``LabError`` here, the name lab code has used): a usage or infrastructure problem found
  before the first run. Nothing ran; exit 1.
- ``LabStopped``: a problem found after runs started that makes every further run pointless (the provider
  refused the key, the endpoint cannot be reached, the disk is full). The report of the finished runs has been
  written, marked interrupted; its ``lines`` are printed and the command exits 1.
- ``Terminated`` (SIGTERM, SIGHUP) and Ctrl-C: the lab writes the report of the finished runs and re-raises.

A run that ends ``error`` is data in its record, never one of these.
"""

from __future__ import annotations

from alisio.shell.errors import CommandError, Terminated

__all__ = ["LabError", "LabStopped", "Terminated"]

LabError = CommandError
"""The command-wide ``CommandError`` under the name the lab's modules import (one class, two names while
the parallel branches that import ``LabError`` are merged; new code imports ``alisio.shell.errors``)."""


class LabStopped(CommandError):
    """The command stopped after some runs: the report of the finished runs is written; exit 1."""
