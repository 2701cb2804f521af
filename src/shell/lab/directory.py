"""The report directory of a command: claimed before the first run, locked for the command's life.

- Without ``--out``, each command gets a new ``<dataDir>/eval/<runId>/`` (``-2``, ``-3``... appended while
  the name is taken). A data directory that cannot be created or written stops the command before any run,
  naming the directory and the variable it came from (``ALISIO_DATA_HOME``, ``XDG_STATE_HOME`` or the home
  directory).
- ``--out DIR`` that already holds a report (report.json, runs.jsonl, a comparison, the report of a variant
  or suite this command would write) is refused with every file untouched, unless ``--force``, which removes
  the report (``clear_out``) once the command holds the directory's lock, never before: a command still
  writing there keeps its records. ``--force`` removes only what a report wrote (``alisio.shell.lab.owned``)
  and refuses a directory holding anything else.
- The directory is locked (``flock`` on the directory) for the command's life: a second command writing the
  same directory is refused at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from alisio.shell.errors import CommandError
from alisio.shell.lab.owned import REPORT_DIRS, foreign_entries, remove_report
from alisio.shell.lab.preflight import unwritable_dir

if TYPE_CHECKING:
    from alisio.shell.lab.request import LabRequest

__all__ = [
    "claim_run_dir",
    "clear_out",
    "created_at_for",
    "lock_directory",
    "prepare_out",
    "report_directory",
    "run_id_for",
]


def run_id_for(now: datetime) -> str:
    """The run id of a command started at ``now``: ``2026-10-13T12-00-00-000Z`` (UTC, filesystem-safe)."""
    utc = now.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H-%M-%S-") + f"{utc.microsecond // 1000:03d}Z"


def created_at_for(now: datetime) -> str:
    """``now`` as a report's createdAt: ``2026-10-13T12:00:00.000Z`` (UTC, milliseconds)."""
    return now.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _data_dir_source(env: Mapping[str, str]) -> str:
    """Which setting chose the data directory, for a message about it."""
    if env.get("ALISIO_DATA_HOME"):
        return "ALISIO_DATA_HOME"
    if env.get("XDG_STATE_HOME"):
        return "XDG_STATE_HOME"
    return "the home directory (set ALISIO_DATA_HOME to choose another)"


def claim_run_dir(data_root: Path, run_id: str, env: Mapping[str, str]) -> tuple[str, Path]:
    """Create ``data_root/eval/run_id`` (``-2``, ``-3``... appended while it exists): the id and directory.

    Raises:
        CommandError: the data directory cannot be created or written, naming it and the variable it came from.
    """
    root = data_root / "eval"
    problem = unwritable_dir(root, "data directory")
    if problem is not None:
        raise CommandError(f"{problem} (from {_data_dir_source(env)})")
    candidate, number = run_id, 1
    while True:
        try:
            root.mkdir(parents=True, exist_ok=True)
            (root / candidate).mkdir()
            return candidate, root / candidate
        except FileExistsError:
            number += 1
            candidate = f"{run_id}-{number}"
        except OSError as error:
            why = error.strerror or str(error)
            raise CommandError(
                f"data directory {root}: {why} (from {_data_dir_source(env)}); nothing was run"
            ) from None


def _held_report(directory: Path, subdirs: Sequence[str], files: Sequence[str]) -> list[Path]:
    """The report files in ``directory`` and in the sub-directories this command would write."""
    found: list[Path] = []
    for where in (directory, *(directory / name for name in subdirs)):
        if where.is_dir():
            found += [where / name for name in (*files, *REPORT_DIRS) if (where / name).exists()]
    return found


def prepare_out(out: Path, flag: str, force: bool, subdirs: Sequence[str], files: Sequence[str]) -> None:
    """Check an output directory before the first run; it is only changed later, by ``clear_out``.

    Args:
        out: the directory (``--out``).
        flag: how messages name it (``--out``).
        force: the report it holds is to be replaced instead of refused.
        subdirs: the sub-directories the command writes reports into (each variant, each suite of
            ``eval ci``); only their report files and the directory's own count, nothing else in it.
        files: the report files (``alisio.shell.lab.outputs.REPORT_FILES``, derived from the outputs table).

    Raises:
        CommandError: ``out`` cannot be created or written, holds a report and ``force`` is off, or holds a
            report beside content alisio did not write (nothing is touched).
    """
    problem = unwritable_dir(out, flag)
    if problem is not None:
        raise CommandError(problem)
    held = _held_report(out, subdirs, files)
    if not held:
        return
    if not force:
        names = ", ".join(str(path.relative_to(out)) for path in held[:4])
        more = f" and {len(held) - 4} more" if len(held) > 4 else ""
        raise CommandError(
            f"{flag} {out} already holds a report ({names}{more}): pass --force to replace it, "
            "or choose another directory; nothing was run"
        )
    _refuse_foreign(out, flag, subdirs, files)


def _refuse_foreign(out: Path, flag: str, subdirs: Sequence[str], files: Sequence[str]) -> None:
    """``--force`` replaces only a directory every entry of which a report wrote."""
    try:
        foreign = foreign_entries(out, files, subdirs)
    except OSError as error:
        raise CommandError(
            f"{flag} {out}: cannot list it: {error.strerror or error}; nothing was run"
        ) from None
    if foreign:
        names = ", ".join(str(path.relative_to(out)) for path in foreign[:4])
        more = f" and {len(foreign) - 4} more" if len(foreign) > 4 else ""
        raise CommandError(
            f"{flag} {out} holds files no alisio report wrote ({names}{more}): --force replaces only a "
            "report directory; choose another directory; nothing was run"
        )


def clear_out(out: Path, flag: str, subdirs: Sequence[str], files: Sequence[str]) -> None:
    """Remove the report ``out`` holds, once the command holds its lock (``--force``), checked again.

    Raises:
        CommandError: ``out`` now holds content alisio did not write (nothing is removed).
    """
    if not _held_report(out, subdirs, files):
        return
    _refuse_foreign(out, flag, subdirs, files)
    remove_report(out, subdirs)


_LOCK_TRIES = 5
_LOCK_WAIT_S = 0.05
"""A lock held for an instant (``eval runs`` asking whether a command writes there) is waited for."""


@contextlib.contextmanager
def lock_directory(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` (created) until the block ends; no file is left behind.

    The lock is ``flock`` on the directory itself, so it ends with the process however it ends (even
    SIGKILL) and leaves nothing to clean up.

    Raises:
        CommandError: another process holds it.
    """
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for attempt in range(_LOCK_TRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt == _LOCK_TRIES - 1:
                    raise CommandError(
                        f"{directory} is being written by another alisio command: wait for it to finish, "
                        "or choose another directory; nothing was run"
                    ) from None
                time.sleep(_LOCK_WAIT_S)  # eval runs looks with a shared lock, for an instant
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def report_directory(
    request: LabRequest, now: datetime, subdirs: Sequence[str], files: Sequence[str]
) -> Iterator[tuple[str, Path]]:
    """The run id and the report directory of a command, claimed and locked for the block (temporary for a
    recording; a resume's own directory and id; ``--out``, registered so ``eval runs`` lists it).

    ``--force`` removes the report ``--out`` holds only once the lock is held: a command still writing
    there refuses this one, and keeps every record it wrote.
    """
    from alisio.shell.config_home import data_dir
    from alisio.shell.lab.registry import register_directory
    from alisio.shell.lab.request import LabMode
    from alisio.shell.lab.resume import read_manifest
    from alisio.shell.stale import owned_prefix

    run_id = run_id_for(now)
    if request.mode is LabMode.RECORD:
        directory = Path(tempfile.mkdtemp(prefix=owned_prefix("record")))
        try:
            yield run_id, directory
        finally:
            shutil.rmtree(directory, ignore_errors=True)  # a recording is not a measurement
        return
    if request.resume is not None:
        directory = request.resume
        run_id = read_manifest(directory).run_id  # a resumed run keeps its id
    elif request.output.out is not None:
        directory = request.output.out
        if request.output.register:
            register_directory(data_dir(request.env), directory)  # eval runs lists it, its id names it
    else:
        run_id, directory = claim_run_dir(data_dir(request.env), run_id, request.env)
    with lock_directory(directory):
        if request.resume is None and request.output.out is not None and request.output.force:
            clear_out(directory, "--out", subdirs, files)
        yield run_id, directory
