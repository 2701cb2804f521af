"""Report directories written with ``--out``, registered in the data directory so that ``eval runs`` lists them
and their run ids resolve like those under ``<dataDir>/eval``.

``<dataDir>/registered.txt`` holds one absolute directory per line, appended when a run with ``--out`` starts
(once per directory). A directory that no longer holds a report is skipped when read, and dropped by
``eval runs --prune``. A registry that cannot be written only costs the listing: the run goes on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from alisio.shell.lab.store import write_bytes_atomic

__all__ = ["REGISTERED", "register_directory", "registered_directories", "write_registered"]

REGISTERED: Final = "registered.txt"
_MAX_BYTES: Final = 4 * 1024 * 1024


def registered_directories(data_root: Path) -> tuple[Path, ...]:
    """The registered directories, in the order they were registered (each once); none when unreadable."""
    path = data_root / REGISTERED
    try:
        if not path.is_file() or path.stat().st_size > _MAX_BYTES:
            return ()
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ()
    return tuple(dict.fromkeys(Path(line) for line in lines if line.startswith("/")))


def write_registered(data_root: Path, directories: Iterable[Path]) -> None:
    """Replace the registry with ``directories`` (atomically)."""
    text = "".join(f"{directory}\n" for directory in dict.fromkeys(directories))
    write_bytes_atomic(data_root / REGISTERED, text.encode())


def register_directory(data_root: Path, directory: Path) -> None:
    """Add ``directory`` (made absolute) to the registry, unless it is already there or a run directory of
    ``<dataDir>/eval`` (listed anyway)."""
    absolute = directory.absolute()
    if absolute.parent == data_root.absolute() / "eval":
        return
    known = registered_directories(data_root)
    if absolute in known or "\n" in str(absolute):
        return
    with contextlib.suppress(OSError):  # for listing only: a read-only data directory must not stop a run
        write_registered(data_root, (*known, absolute))
