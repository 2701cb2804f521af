"""Stored runs: a report directory named by its path or its run id, and the list of runs in the data directory.

``eval show``, ``eval export`` and ``eval run --resume`` accept either a report directory (any path: an
``--out`` directory too) or a run id, the name of a directory under ``<dataDir>/eval`` (``<runId>/<variant>``
for one variant of an ``eval variants`` run). ``stored_runs`` lists what ``eval runs`` shows, newest first.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from returns.result import Success

from alisio.core.lab.report import Report
from alisio.shell.lab.errors import LabError
from alisio.shell.lab.store import REPORT_JSON, RUNS_JSONL, read_report

__all__ = [
    "StoredRun",
    "name_problem",
    "recent_run_ids",
    "report_dir",
    "run_id_problem",
    "stored_runs",
    "variants_of",
]

RECENT_SHOWN: Final = 5
_RUN_ID: Final = re.compile(r"[A-Za-z0-9._-]+")


def run_id_problem(run_id: str) -> str | None:
    """Why ``run_id`` cannot name a run directory, or ``None`` when it can.

    A run id is one directory name, or ``<runId>/<variant>`` for one variant of an ``eval variants`` run;
    each segment is checked on its own (letters, digits, ``.``, ``_``, ``-``; never ``.`` or ``..``).
    """
    segments = run_id.split("/")
    if len(segments) > 2 or any(s in (".", "..") or not _RUN_ID.fullmatch(s) for s in segments):
        shown = run_id if run_id.isprintable() else repr(run_id)
        return (
            f"invalid run id {shown!r}: a run id is the name of a directory under <dataDir>/eval "
            "(letters, digits, '.', '_', '-'), or <runId>/<variant> for one variant of a variants run"
        )
    return None


NAME_MAX = 255
"""The most bytes one path component may hold on Linux and macOS file systems."""


def name_problem(ref: str) -> str | None:
    """Why ``ref`` cannot name a file (a component over 255 bytes, or a NUL), or ``None``: said in one line
    instead of ``OSError: [Errno 36] File name too long``."""
    if "\0" in ref:
        return f"{ref!r}: a path cannot hold a NUL character"
    for part in ref.split("/"):
        size = len(os.fsencode(part))
        if size > NAME_MAX:
            return f"{ref[:40]}...: a path component is {size} bytes, more than the {NAME_MAX} a file name may hold"
    return None


def recent_run_ids(root: Path, limit: int = RECENT_SHOWN) -> tuple[str, ...]:
    """The ids of the runs under ``root`` that hold a report.json, newest first (by modification time)."""
    try:
        entries = [
            (entry.stat().st_mtime, entry.name) for entry in root.iterdir() if (entry / REPORT_JSON).is_file()
        ]
    except OSError:
        return ()
    return tuple(name for _, name in sorted(entries, reverse=True)[:limit])


def variants_of(directory: Path) -> tuple[str, ...]:
    """The variant directories of an ``eval variants`` root (each holds a report.json), sorted."""
    try:
        return tuple(sorted(e.name for e in directory.iterdir() if (e / REPORT_JSON).is_file()))
    except OSError:
        return ()


def _holds_report(directory: Path) -> bool:
    return (directory / RUNS_JSONL).exists() or (directory / REPORT_JSON).exists()


def report_dir(ref: str, data_root: Path, verb: str) -> Path:
    """The report directory ``ref`` names: a directory that holds a report, or a run id under ``<dataRoot>/eval``.

    Args:
        verb: what the command does with it, for the variants message (``export one of ...``).

    Raises:
        LabError: an invalid run id (and no report directory of that name), no such run (listing the most
            recent ones), a variants root (naming ``<runId>/<variant>`` for each variant), or a run directory
            that holds no report.
    """
    given = Path(ref)
    problem = name_problem(ref)
    if problem is not None:
        raise LabError(problem)
    if given.is_dir() and (_holds_report(given) or variants_of(given)):
        directory = given
    else:
        problem = run_id_problem(ref)
        if problem is not None:
            raise LabError(problem)
        root = data_root / "eval"
        directory = root / ref
        if not directory.is_dir():
            recent = recent_run_ids(root)
            where = f"no run {ref} in {root}"
            if recent:
                raise LabError(f"{where}; most recent: {', '.join(recent)}")
            raise LabError(
                f"{where}; it holds no runs" if root.is_dir() else f"{where}; the directory does not exist"
            )
    if not _holds_report(directory):
        variants = variants_of(directory)
        if variants:
            shown = ", ".join(f"{ref.rstrip('/')}/{name}" for name in variants)
            raise LabError(f"{ref} is a variants run with one report per variant: {verb} one of {shown}")
        raise LabError(f"{directory} holds no report (report.json, runs.jsonl)")
    return directory


@dataclass(frozen=True)
class StoredRun:
    """One report directory of ``<dataDir>/eval``: its id and report (``None`` when it cannot be read)."""

    run_id: str
    directory: Path
    report: Report | None
    modified: float


def stored_runs(data_root: Path) -> list[StoredRun]:
    """Every report under ``<dataRoot>/eval`` (a variants run as one entry per variant), newest first."""
    root = data_root / "eval"
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return []
    found: list[StoredRun] = []
    for entry in entries:
        if not entry.is_dir():
            continue
        candidates = (
            [(entry.name, entry)] if (entry / REPORT_JSON).is_file() or (entry / RUNS_JSONL).is_file() else []
        )
        candidates += [(f"{entry.name}/{name}", entry / name) for name in variants_of(entry)]
        for run_id, directory in candidates:
            read = read_report(directory)
            report = read.unwrap() if isinstance(read, Success) else None
            try:
                modified = directory.stat().st_mtime
            except OSError:
                continue
            found.append(StoredRun(run_id=run_id, directory=directory, report=report, modified=modified))
    return sorted(found, key=lambda run: run.modified, reverse=True)
