"""What ``eval compare`` and ``eval show`` read a run from: a report directory, its report.json, a run id
(``alisio.shell.lab.stored``), an ``eval export`` bundle (``alisio.core.lab.sources.bundle``), or a result from
another harness (an Inspect AI log, a Harbor job directory: ``alisio.shell.lab.foreign``), whose report is
built here from its runs.

A file is told apart by its content: a JSON object with ``report`` and ``runs`` is a bundle, anything else
is read as a report.json. Every problem is a ``CommandError``: one line naming the file and what is wrong.
"""

from __future__ import annotations

from pathlib import Path

from returns.result import Failure, Success

from alisio.core.lab.reports.report import Report
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.reports.report_json import decode_report
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.sources.bundle import Bundle, decode_bundle, is_bundle
from alisio.core.lab.sources.foreign import ForeignRuns, Scoring
from alisio.shell.errors import CommandError, expect
from alisio.shell.lab.foreign import read_foreign
from alisio.shell.lab.store import read_report, read_runs
from alisio.shell.lab.stored import name_problem, report_dir

__all__ = ["read_bundle", "report_and_runs", "report_directory_of", "report_of"]

NO_SCORING = Scoring()

MAX_FILE_BYTES = 512 * 1024 * 1024
"""A report or bundle larger than this is refused rather than read into memory."""


def _file_bytes(path: Path) -> bytes:
    try:
        if not path.is_file():
            raise CommandError(f"{path}: not a regular file")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise CommandError(f"{path}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; not read")
        return path.read_bytes()
    except OSError as error:
        raise CommandError(f"{path}: cannot read: {error.strerror or error}") from None


def _is_file(ref: str) -> Path | None:
    path = Path(ref).expanduser()
    try:
        return path if path.exists() and not path.is_dir() else None
    except OSError:
        return None


def read_bundle(ref: str) -> Bundle | None:
    """The bundle ``ref`` names when it is a file holding one; ``None`` for anything else."""
    path = _is_file(ref)
    if path is None:
        return None
    data = _file_bytes(path)
    if not is_bundle(data):
        return None
    match decode_bundle(data, str(path)):
        case Success(Bundle() as bundle):
            return bundle
        case Failure(error):
            raise CommandError(str(error))
    raise AssertionError("unreachable")  # pragma: no cover


def _foreign_report(foreign: ForeignRuns) -> Report:
    return build_report(foreign.records, foreign.conditions)


def report_of(ref: str, data_root: Path, scoring: Scoring = NO_SCORING) -> Report:
    """The report ``ref`` names: a report.json or bundle file, a report directory, a run id, or a result from
    another harness (judged pass or fail by ``scoring``).

    Raises:
        CommandError: what ``report_dir`` refuses, or the file that cannot be read or decoded.
    """
    problem = name_problem(ref)  # a component over 255 bytes: one line, not OSError
    if problem is not None:
        raise CommandError(problem)
    foreign = read_foreign(ref, scoring)
    if foreign is not None:
        return _foreign_report(foreign)
    path = _is_file(ref)
    if path is None and ref.endswith(".json") and not Path(ref).expanduser().is_dir():
        raise CommandError(f"{ref}: no such file or directory")
    if path is not None:
        data = _file_bytes(path)
        decoded = decode_bundle(data, str(path)).map(lambda b: b.report) if is_bundle(data) else None
        result = decoded if decoded is not None else decode_report(data, str(path))
    else:
        result = read_report(report_dir(ref, data_root, "compare"))
    match result:
        case Success(Report() as report):
            return report
        case Failure(error):
            raise CommandError(str(error))
    raise AssertionError("unreachable")  # pragma: no cover


def report_and_runs(
    ref: str, data_root: Path, verb: str, scoring: Scoring = NO_SCORING
) -> tuple[Report, list[RunRecord]]:
    """The report and the runs ``ref`` names: a report directory, a run id, or a result from another harness.

    Raises:
        CommandError: what ``report_dir`` refuses, or the files that cannot be read.
    """
    foreign = read_foreign(ref, scoring)
    if foreign is not None:
        return _foreign_report(foreign), list(foreign.records)
    directory = report_dir(ref, data_root, verb)
    return expect(read_report(directory)), list(expect(read_runs(directory)))


def report_directory_of(ref: str, data_root: Path) -> Path | None:
    """The report directory ``ref`` names (for links to its report.html and transcripts): a report file's
    directory, a report directory, a run id's; ``None`` for an export bundle or a result from another
    harness, which have none."""
    path = _is_file(ref)
    if path is not None:
        return None if is_bundle(_file_bytes(path)) or path.suffix == ".eval" else path.parent
    if Path(ref).expanduser().is_dir() and not (Path(ref).expanduser() / "report.json").exists():
        return None
    return report_dir(ref, data_root, "compare")
