"""Report files on disk: written atomically and read back (``alisio.shell.lab.outputs`` says which are
written, and when).

Every write goes to a temporary file in the target directory, is flushed to disk, then renamed over the
target with ``os.replace``: a reader sees the old file or the new one, never a partial file. Reading turns
every problem (missing file, unreadable, not JSON, not a report) into a ``ReportError`` naming the file.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

from returns.result import Failure, Result

from alisio.core.errors import ReportError
from alisio.core.lab.outputs.html_transcript import (
    TranscriptView,
    transcript_budgets,
    transcript_view,
    transcript_view_of,
    unavailable,
)
from alisio.core.lab.outputs.render_html import REPORT_HTML, render_report_html
from alisio.core.lab.reports.report import Report
from alisio.core.lab.reports.report_json import decode_report
from alisio.core.lab.runs.records import RunRecord, decode_runs
from alisio.core.lab.runs.transcript import transcript_path
from alisio.core.lab.trajectories.contrast import TaskDivergence

__all__ = [
    "NOT_REGULAR",
    "PLAN_JSON",
    "REPORT_HTML",
    "REPORT_JSON",
    "REPORT_MD",
    "RUNS_JSONL",
    "not_regular",
    "read_regular",
    "read_report",
    "read_runs",
    "report_json_path",
    "write_bytes_atomic",
    "write_report_html",
]

REPORT_JSON = "report.json"
REPORT_MD = "report.md"
RUNS_JSONL = "runs.jsonl"
PLAN_JSON = "plan.json"
"""The run as it was asked (``alisio.core.lab.plans.manifest``), written before the first run."""


NOT_REGULAR = (
    "is not a regular file (a device, FIFO, socket, directory or symbolic link): alisio writes only to a "
    "regular file or a new name"
)


def not_regular(path: Path) -> bool:
    """Whether ``path`` exists as anything but a regular file (``/dev/null``, a FIFO, a link...): replacing it
    by rename would turn a device into a file (as root, ``--junit /dev/null``)."""
    try:
        return not stat.S_ISREG(os.lstat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):  # a new name (under a file: the directory check says so)
        return False


REPORT_MAX_BYTES = 1 << 30
"""The most a report file (report.json, runs.jsonl, plan.json, a transcript) may hold when read back: a link
to ``/dev/zero`` or a runaway file is refused instead of read until memory runs out."""


def read_regular(path: Path, limit: int = REPORT_MAX_BYTES, what: str = "a report file") -> bytes:
    """The bytes of the regular file ``path`` (a link to one is fine), at most ``limit``; opened without
    blocking, so a FIFO never hangs the reader (``alisio.shell.harness.bounded_read.read_bounded``).

    Raises:
        OSError: it cannot be opened or read, is a directory (``IsADirectoryError``), is not a regular file
            or is larger than ``limit`` (the strerror says which).
    """
    from alisio.shell.harness.bounded_read import read_bounded

    return read_bounded(path, limit, what)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary sibling file and ``os.replace`` (never a partial file).

    Raises:
        OSError: also when ``path`` exists but is not a regular file (``NOT_REGULAR``): it is never replaced.
    """
    if not_regular(path):
        raise OSError(errno.EEXIST, NOT_REGULAR, str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def _transcript(directory: Path, record: RunRecord, budget: int) -> TranscriptView:
    """One run's transcript as the page shows it (read and cut, then let go: one at a time)."""
    if budget <= 0:
        return transcript_view((), budget)
    relative = transcript_path(record.task_id, record.repetition)
    try:
        data = read_regular(directory / relative)
    except FileNotFoundError:
        return unavailable(f"{relative} does not exist")
    except OSError as error:
        return unavailable(f"cannot read {relative}: {error.strerror or error}")
    return transcript_view_of(data, budget, relative)


def write_report_html(
    directory: Path,
    report: Report,
    records: Sequence[RunRecord],
    known: tuple[tuple[str, str], ...] = (),
    show_as: str | None = None,
) -> None:
    """Write report.html into ``directory``, embedding the transcripts of ``runs/`` beside it (cut to fit)."""
    budgets = transcript_budgets(records)
    views = {
        (r.task_id, r.repetition): _transcript(directory, r, budgets.get((r.task_id, r.repetition), 0))
        for r in records
    }
    page = render_report_html(
        report, records, views, known, show_as=show_as, divergences=_divergences(directory, records)
    )
    write_bytes_atomic(directory / REPORT_HTML, page.encode())


def _divergences(directory: Path, records: Sequence[RunRecord]) -> tuple[TaskDivergence, ...]:
    """Where a passing and a failing run part, for each task with both (their transcripts read, one task at
    a time; a transcript that cannot be read leaves its run out)."""
    import msgspec

    from alisio.core.lab.runs.transcript import decode_transcript
    from alisio.core.lab.trajectories.contrast import failing, passing, task_divergences
    from alisio.core.lab.trajectories.trajectory import trajectory_of

    found: list[TaskDivergence] = []
    for task_id in sorted({r.task_id for r in records}):
        mine = [r for r in records if r.task_id == task_id]
        if not (any(map(passing, mine)) and any(map(failing, mine))):
            continue
        paths = {}
        for record in mine:
            try:
                data = read_regular(directory / transcript_path(task_id, record.repetition))
                paths[(task_id, record.repetition)] = trajectory_of(decode_transcript(data))
            except (OSError, msgspec.DecodeError):
                continue
        found += task_divergences(mine, paths)
    return tuple(found)


def report_json_path(path: Path) -> Path:
    """``path`` itself for a file, ``path/report.json`` for a directory."""
    try:
        return path / REPORT_JSON if path.is_dir() else path
    except OSError:  # a name too long (ENAMETOOLONG): reading it says so, in one line
        return path


def _read(path: Path) -> Result[bytes, ReportError]:
    try:
        return Result.from_value(read_regular(path))
    except FileNotFoundError:
        return Failure(ReportError(source=str(path), message="no such file"))
    except IsADirectoryError:
        return Failure(ReportError(source=str(path), message="is a directory, not a report file"))
    except OSError as error:
        return Failure(ReportError(source=str(path), message=f"cannot read: {error.strerror or error}"))


def read_report(path: Path) -> Result[Report, ReportError]:
    """Read a report.json, or the report.json of a directory."""
    target = report_json_path(path)
    return _read(target).bind(lambda data: decode_report(data, str(target)))


def read_runs(path: Path) -> Result[tuple[RunRecord, ...], ReportError]:
    """Read a runs.jsonl, or the runs.jsonl of a report directory."""
    target = path if report_json_path(path) == path else path / RUNS_JSONL
    return _read(target).bind(lambda data: decode_runs(data, str(target)))
