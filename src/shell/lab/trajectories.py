"""Where ``eval diff`` (and the report pages' "first divergence" line) read runs and their transcripts from.

A side of a diff is one of:

- a report directory or run id (``alisio.shell.lab.stored``): its runs.jsonl, and each run's transcript in
  ``runs/<task>/<rep>.jsonl``;
- an ``eval export`` bundle (its records and the transcripts it carries);
- a transcript file (``runs/<task>/<rep>.jsonl``, or what ``eval show --json`` printed), or the directory
  ``alisio run`` kept (``<dataDir>/run/<runId>``): one run, with no verdict.

Every problem is a ``CommandError``: one line naming the file and what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from alisio.core.harness.events import Event
from alisio.core.lab.outputs.run_record import TRANSCRIPT_JSONL
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.runs.transcript import decode_transcript, transcript_path
from alisio.core.lab.trajectories.contrast import TaskDivergence
from alisio.core.lab.trajectories.trajectory import Trajectory, trajectory_of
from alisio.shell.errors import CommandError, expect
from alisio.shell.lab.sources import read_bundle
from alisio.shell.lab.store import RUNS_JSONL, read_regular, read_runs
from alisio.shell.lab.stored import report_dir

__all__ = ["Runs", "comparison_divergences", "load_runs", "read_trajectory", "transcript_of"]


@dataclass(frozen=True)
class Runs:
    """One side of a diff: its records (none for a lone transcript) and how to read a run's events."""

    source: str
    """The reference as the user gave it (shown in the output)."""
    records: tuple[RunRecord, ...]
    events: Callable[[RunRecord | None], tuple[Event, ...] | None]
    """A run's events (``None``: no transcript was kept); with ``None``, the lone transcript's."""
    lone: bool = False
    """A transcript file or an ``alisio run`` directory: one run, no record, no verdict."""


def _decoded(path: Path, data: bytes) -> tuple[Event, ...]:
    try:
        return decode_transcript(data)
    except msgspec.DecodeError as error:
        raise CommandError(f"{path}: not a transcript: {error}") from None


def transcript_of(path: Path) -> tuple[Event, ...] | None:
    """The events of the transcript at ``path``; ``None`` when it does not exist.

    Raises:
        CommandError: it cannot be read or is not a transcript.
    """
    try:
        data = read_regular(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise CommandError(f"{path}: cannot read: {error.strerror or error}") from None
    return _decoded(path, data)


def _lone(ref: str) -> Path | None:
    """The transcript file ``ref`` names (a file, or an ``alisio run`` directory), else ``None``."""
    path = Path(ref).expanduser()
    try:
        if path.is_dir():
            found = (path / TRANSCRIPT_JSONL).is_file() and not (path / RUNS_JSONL).exists()
            return path / TRANSCRIPT_JSONL if found else None
        return path if path.is_file() and path.suffix == ".jsonl" and path.name != RUNS_JSONL else None
    except OSError:
        return None


def load_runs(ref: str, data_root: Path) -> Runs:
    """The runs ``ref`` names (module docstring).

    Raises:
        CommandError: no such run or file, or one that cannot be read.
    """
    lone = _lone(ref)
    if lone is not None:
        found = transcript_of(lone)
        if found is None:
            raise CommandError(f"{lone}: no such file")
        return Runs(source=ref, records=(), events=lambda record: found, lone=True)
    bundle = read_bundle(ref)
    if bundle is not None:
        return Runs(
            source=ref,
            records=bundle.runs,
            events=lambda record: bundle.transcript(record.task_id, record.repetition) if record else None,
        )
    directory = report_dir(ref, data_root, "diff")
    records = expect(read_runs(directory))

    def events(record: RunRecord | None) -> tuple[Event, ...] | None:
        if record is None:
            return None
        return transcript_of(directory / transcript_path(record.task_id, record.repetition))

    return Runs(source=ref, records=records, events=events)


def read_trajectory(runs: Runs, record: RunRecord | None) -> Trajectory | None:
    """The trajectory of one run of ``runs`` (the lone transcript's with ``None``); ``None`` without one."""
    events = runs.events(record)
    return trajectory_of(events) if events is not None else None


def comparison_divergences(baseline: Path, candidate: Path) -> tuple[TaskDivergence, ...]:
    """For comparison.html: per task, where a passing run of one report and a failing run of the other part
    (``side_divergence``). A side whose runs or transcripts cannot be read gives none (the page still is
    written: this line is an aid, not a number)."""
    from returns.result import Success

    from alisio.core.lab.trajectories.contrast import side_divergence

    sides = [read_runs(directory) for directory in (baseline, candidate)]
    if not all(isinstance(side, Success) for side in sides):
        return ()
    a, b = (side.unwrap() for side in sides)

    def trajectory(side: str, record: RunRecord) -> Trajectory | None:
        directory = baseline if side == "a" else candidate
        try:
            events = transcript_of(directory / transcript_path(record.task_id, record.repetition))
        except CommandError:
            return None
        return trajectory_of(events) if events is not None else None

    common = sorted({r.task_id for r in a} & {r.task_id for r in b})
    found = (side_divergence(task_id, a, b, trajectory) for task_id in common)
    return tuple(d for d in found if d is not None)
