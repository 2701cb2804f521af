"""Stored runs: a report directory named by its path or its run id, and the list of runs ``eval runs`` shows.

``eval show``, ``eval export``, ``eval compare`` and ``eval run --resume`` accept either a report directory
(any path: an ``--out`` directory too) or a run id:

- the name of a directory under ``<dataDir>/eval`` (``<runId>/<variant>`` for one variant of an ``eval
  variants`` run), or the run id of a registered ``--out`` directory (``alisio.shell.lab.registry``);
- ``latest``: the most recently written of them;
- any prefix of one of them that names only that one (``2026-10-13T12`` for ``2026-10-13T12-00-00-000Z``).

A reference that is an existing path is that path, and one that holds no report says "no report here"; a
reference that looks like a path (``/``, ``.``, ``~``) and does not exist says "no such directory". Only what
is left is read as a run id. ``stored_runs`` lists what ``eval runs`` shows, newest first.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from returns.result import Success

from alisio.core.lab.plans.manifest import RunManifest, decode_manifest
from alisio.core.lab.reports.report import Report
from alisio.shell.errors import CommandError
from alisio.shell.lab.registry import registered_directories
from alisio.shell.lab.store import PLAN_JSON, REPORT_JSON, RUNS_JSONL, read_report

__all__ = [
    "LATEST",
    "Progress",
    "StoredRun",
    "being_written",
    "name_problem",
    "recent_run_ids",
    "report_dir",
    "run_directory",
    "run_id_problem",
    "stored_runs",
    "variants_of",
]

RECENT_SHOWN: Final = 5
LATEST: Final = "latest"
_RUN_ID: Final = re.compile(r"[A-Za-z0-9._-]+")
_NAME_MAX: Final = 255


def run_id_problem(run_id: str) -> str | None:
    """Why ``run_id`` cannot name a run directory, or ``None`` when it can.

    A run id is one directory name, or ``<runId>/<variant>`` for one variant of an ``eval variants`` run;
    each segment is checked on its own (letters, digits, ``.``, ``_``, ``-``; never ``.`` or ``..``; at most
    255 bytes, the longest file name).
    """
    segments = run_id.split("/")
    if len(segments) > 2 or any(
        s in (".", "..") or not _RUN_ID.fullmatch(s) or len(s) > _NAME_MAX for s in segments
    ):
        shown = run_id if run_id.isprintable() else repr(run_id)
        return (
            f"invalid run id {shown[:80]!r}: a run id is the name of a directory under <dataDir>/eval "
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


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long for the file system is no path
        return False


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


def _looks_like_path(ref: str) -> bool:
    return ref.startswith(("/", ".", "~")) or ref.endswith("/") or ref.count("/") > 1


def _named_runs(data_root: Path) -> dict[str, Path]:
    """Every run id a reference can name, with its directory: the directories of ``<dataDir>/eval`` (a variants
    root as itself), then the registered ``--out`` directories by the run id in their report."""
    named: dict[str, Path] = {}
    with contextlib.suppress(OSError):
        named.update(
            (entry.name, entry) for entry in sorted((data_root / "eval").iterdir()) if entry.is_dir()
        )
    for directory in registered_directories(data_root):
        run_id = _run_id_of(directory)
        if run_id is not None:
            named.setdefault(run_id, directory)
    return named


def _run_id_of(directory: Path) -> str | None:
    """The run id in the report of ``directory``; a variants root's is its first variant's without the
    variant (a variant's report holds ``<runId>/<variant>``, and the listing adds the variant back)."""
    for candidate in (directory, *(directory / name for name in variants_of(directory))):
        match read_report(candidate):
            case Success(Report(conditions=conditions)):
                return conditions.run_id if candidate == directory else conditions.run_id.split("/")[0]
    manifest = _manifest(directory)  # a run still without a report: its plan.json names it
    return None if manifest is None else manifest.run_id


def _with_variant(run_dir: Path, variant: str, ref: str, root: Path) -> Path:
    """``run_dir/variant``, or the run itself without one; a variant it does not have names those it has."""
    if not variant:
        return run_dir
    if not (run_dir / variant).is_dir():
        variants = variants_of(run_dir)
        has = f"; its variants: {', '.join(variants)}" if variants else "; it is not a variants run"
        raise CommandError(f"no run {ref} in {root}{has}")
    return run_dir / variant


def _by_id(ref: str, data_root: Path) -> Path:
    """The directory of run id ``ref``: exact, ``latest`` or a unique prefix (a variant segment kept)."""
    head, _, variant = ref.partition("/")
    named = _named_runs(data_root)
    root = data_root / "eval"
    if head == LATEST and LATEST not in named:
        runs = stored_runs(data_root)
        if not runs:
            raise CommandError(
                f"{LATEST}: no stored runs in {root} (eval run writes one there unless --out is given)"
            )
        return _with_variant(runs[0].directory, variant, ref, root)
    matches = [head] if head in named else sorted(name for name in named if name.startswith(head))
    if len(matches) == 1:
        return _with_variant(named[matches[0]], variant, ref, root)
    if len(matches) > 1:
        shown = ", ".join(matches[:RECENT_SHOWN]) + (", ..." if len(matches) > RECENT_SHOWN else "")
        raise CommandError(f"run id {ref} is ambiguous: {len(matches)} runs start with it ({shown})")
    recent = recent_run_ids(root)
    where = f"no run {ref} in {root}"
    if "/" in ref:
        where = f"{ref}: no such directory, and {where}"
    if recent:
        raise CommandError(f"{where}; most recent: {', '.join(recent)}")
    raise CommandError(
        f"{where}; it holds no runs" if root.is_dir() else f"{where}; the directory does not exist"
    )


def run_directory(ref: str, data_root: Path) -> Path:
    """The directory ``ref`` names (a path, or a run id), whether or not it holds a report yet.

    Raises:
        CommandError: a path that cannot be one, no such directory, a file, an invalid run id, no such run.
    """
    problem = name_problem(ref)
    if problem is not None:
        raise CommandError(problem)
    given = Path(ref).expanduser()
    if _exists(given):
        if given.name in (REPORT_JSON, RUNS_JSONL) and given.is_file():
            given = given.parent  # a report's own file names its directory
        if not given.is_dir():
            raise CommandError(f"{ref}: is a file, not a report directory")
        return given
    if _looks_like_path(ref):
        raise CommandError(f"{ref}: no such directory")
    problem = run_id_problem(ref)
    if problem is not None:
        raise CommandError(f"{ref[:80]}: no such directory, and not a run id either ({problem})")
    return _by_id(ref, data_root)


def report_dir(ref: str, data_root: Path, verb: str) -> Path:
    """The report directory ``ref`` names: a directory that holds a report, or a run id (module docstring).

    Args:
        verb: what the command does with it, for the variants message (``export one of ...``).

    Raises:
        CommandError: no such directory, a directory with no report here, an invalid run id, no such run (listing
            the most recent ones), an ambiguous prefix (listing the matches), or a variants root (naming
            ``<runId>/<variant>`` for each variant).
    """
    directory = run_directory(ref, data_root)
    if not _holds_report(directory):
        variants = variants_of(directory)
        if variants:
            shown = ", ".join(f"{ref.rstrip('/')}/{name}" for name in variants)
            raise CommandError(f"{ref} is a variants run with one report per variant: {verb} one of {shown}")
        if not directory.is_dir():
            raise CommandError(f"{ref}: no such run directory {directory}")
        raise CommandError(f"{directory}: no report here (no report.json or runs.jsonl)")
    return directory


@dataclass(frozen=True)
class Progress:
    """How far a run got that has no report yet or is being written: its records against its plan."""

    done: int
    """The records of its runs.jsonl (a torn last line not counted)."""
    planned: int | None
    """The runs its plan.json plans for this report (tasks x k; at most that for a sequential run);
    ``None`` without a readable plan.json."""
    running: bool
    """Whether a command holds the directory (``alisio.shell.lab.directory.lock_directory``) now."""
    manifest: RunManifest | None = None
    """The plan.json, for what a run without a report names (suite, model, mode)."""


@dataclass(frozen=True)
class StoredRun:
    """One report directory of ``<dataDir>/eval`` or the registry: its id and report (``None`` when it cannot
    be read), and how far it got when a command is writing it or it has no report."""

    run_id: str
    directory: Path
    report: Report | None
    modified: float
    progress: Progress | None = None


def being_written(directory: Path) -> bool:
    """Whether a command holds ``directory``'s lock (an exclusive ``flock`` for the command's life)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # releases the shared lock at once
    return False


def _manifest(root: Path) -> RunManifest | None:
    """The plan.json of ``root`` (``None``: none, or unreadable)."""
    try:
        data = (root / PLAN_JSON).read_bytes()
    except OSError:
        return None
    decoded = decode_manifest(data, str(root / PLAN_JSON))
    return decoded.unwrap() if isinstance(decoded, Success) else None


def _progress(
    directory: Path, report: Report | None, manifest: RunManifest | None, running: bool
) -> Progress | None:
    """How far the run in ``directory`` got, when a command is writing it or it holds no report; ``None``
    for a finished report nobody is writing."""
    if report is not None and not running:
        return None
    try:
        done = (directory / RUNS_JSONL).read_bytes().count(b"\n")
    except OSError:
        done = 0
    planned = None if manifest is None else len(manifest.tasks) * manifest.k
    return Progress(done=done, planned=planned, running=running, manifest=manifest)


def _runs_in(run_id: str, entry: Path) -> list[StoredRun]:
    """The report of ``entry`` and those of its variants (those a running variants job plans too)."""
    manifest = _manifest(entry)
    planned = manifest.variants if manifest is not None else ()
    plain = manifest is not None and not planned
    candidates = (
        [(run_id, entry)]
        if plain or (entry / REPORT_JSON).is_file() or (entry / RUNS_JSONL).is_file()
        else []
    )
    names = dict.fromkeys([*(v.id for v in planned), *variants_of(entry)])
    candidates += [(f"{run_id}/{name}", entry / name) for name in names]
    running = being_written(entry)
    found = []
    for name, directory in candidates:
        read = read_report(directory)
        report = read.unwrap() if isinstance(read, Success) else None
        try:
            modified = (directory if directory.exists() else entry).stat().st_mtime
        except OSError:
            continue
        progress = _progress(directory, report, manifest, running)
        found.append(
            StoredRun(run_id=name, directory=directory, report=report, modified=modified, progress=progress)
        )
    return found


def stored_runs(data_root: Path) -> list[StoredRun]:
    """Every report under ``<dataRoot>/eval`` and every registered one (a variants run as one entry per
    variant), newest first."""
    found: list[StoredRun] = []
    for run_id, entry in _named_runs(data_root).items():
        found += _runs_in(run_id, entry)
    return sorted(found, key=lambda run: run.modified, reverse=True)
