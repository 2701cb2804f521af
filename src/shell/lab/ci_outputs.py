"""The CI outputs of the lab commands: the ``--junit FILE`` and ``--html FILE`` files and the
``$GITHUB_STEP_SUMMARY`` summary. The core builds their text (``alisio.core.lab.outputs.junit``,
``alisio.core.lab.outputs.step_summary``, ``alisio.core.lab.outputs.render_html_compare``); this module writes it.

- An output file is checked before the first run (``check_output_file``): it must be a regular file or a
  new name (never a directory, a device such as ``/dev/null``, a FIFO or a link, which a rename would
  replace) and its directory must be creatable and writable, or the command stops there (exit 1, nothing
  run).
- A file is written atomically (a reader never sees a partial file) and replaced if it exists; the
  summary is appended (GitHub gathers every step's blocks in one file), to a regular file only (a FIFO
  never hangs the command after its report).
- A failure to write after the runs is one line naming the flag, the file and why (``OutputProblem``); the
  command then exits 1 unless it already exits non-zero (a divergence keeps 2, a gate 4).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from alisio.shell.errors import CommandError
from alisio.shell.lab.preflight import NOTHING_RAN, unwritable_dir
from alisio.shell.lab.store import NOT_REGULAR, not_regular, write_bytes_atomic

__all__ = ["STEP_SUMMARY", "OutputProblem", "append_step_summary", "check_output_file", "write_output_file"]

STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
"""The environment variable GitHub Actions sets to the file a step's Markdown summary is appended to."""


class OutputProblem(Exception):
    """An output could not be written after the runs: one line, the reports are written."""


def check_output_file(path: Path, flag: str, then: str = NOTHING_RAN) -> None:
    """Before the first run (or, for a command that runs nothing, before anything is written): ``path`` can be
    written as ``flag``'s file. ``then`` ends the refusal (``NOTHING_WRITTEN`` for eval compare's ``--html``).

    Raises:
        CommandError: it is a directory, or its directory cannot be created or written (nothing was run).
    """
    if path.is_dir():
        raise CommandError(f"{flag} {path}: is a directory, not a file; {then}")
    if not_regular(path):
        raise CommandError(f"{flag} {path}: {NOT_REGULAR}; {then}")
    problem = unwritable_dir(path.parent, flag, named=path, then=then)
    if problem is not None:
        raise CommandError(problem)


def write_output_file(path: Path, text: str, flag: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically, replacing it.

    Raises:
        OutputProblem: it cannot be written, naming the flag, the file and why.
    """
    try:
        write_bytes_atomic(path, text.encode())
    except OSError as error:
        raise OutputProblem(f"{flag} {path}: cannot write: {error.strerror or error}") from None


def append_step_summary(env: Mapping[str, str], text: str) -> None:
    """Append ``text`` to the file ``$GITHUB_STEP_SUMMARY`` names; nothing when it is unset or empty.

    Raises:
        OutputProblem: the file cannot be appended to, naming it and why.
    """
    target = env.get(STEP_SUMMARY, "")
    if not target:
        return
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
    refused = NOT_REGULAR.replace("writes only to", "appends only to")
    try:
        if (
            Path(target).exists() and not Path(target).is_file()
        ):  # a FIFO, a device (a link to a file is fine)
            raise OSError(errno.EINVAL, refused)
        descriptor = os.open(target, flags, 0o644)  # a FIFO without a reader fails at once (ENXIO)
        with os.fdopen(descriptor, "a", encoding="utf-8") as handle:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                raise OSError(errno.EINVAL, refused)
            handle.write(text)
    except OSError as error:
        raise OutputProblem(f"${STEP_SUMMARY} {target}: cannot append: {error.strerror or error}") from None
