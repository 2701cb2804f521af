"""Reading an input file as a bounded regular file: ``read_bounded``.

A file named by the user or by a suite (a ``--script``, a cassette) may be a FIFO that no one writes (a plain
read waits forever), a link to ``/dev/zero`` (a plain read grows the process until memory runs out) or simply
too large. ``read_bounded`` opens it without blocking, refuses anything but a regular file (a link to one is
fine) and reads at most one byte past its limit, so each of these is an ``OSError`` whose strerror says why,
at once.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["read_bounded"]


def read_bounded(path: Path | str, limit: int, what: str) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit``; ``what`` names the kind of file in the
    too-large message (``a script``: "it is larger than 64 MiB, the most a script may hold").

    Raises:
        OSError: it cannot be opened or read, is a directory (``IsADirectoryError``), is not a regular file,
            or is larger than ``limit`` (the strerror says which).
    """
    from alisio.shell.harness.tools.files import file_kind

    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    )
    descriptor = os.open(path, flags)
    with os.fdopen(descriptor, "rb") as handle:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, f"it is {file_kind(mode)}, not a regular file", str(path))
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(
            errno.EFBIG, f"it is larger than {limit >> 20} MiB, the most {what} may hold", str(path)
        )
    return data
