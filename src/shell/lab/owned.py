"""Which files of a report directory alisio wrote, so that ``--force`` removes those and nothing else.

A report directory's manifests say what it holds: plan.json names the tasks, runs.jsonl and
retried/runs.jsonl name the runs, report.json the tasks reported. What alisio writes there is exactly:

- the report files (``alisio.shell.lab.outputs.REPORT_FILES``, derived from the outputs table: report.json,
  runs.jsonl, plan.json...), and the temporary
  ``.<name>.<random>.tmp`` a write killed half-way leaves;
- ``runs/<task>/<n>.jsonl`` and ``retried/runs/<task>/<n>[.<m>].jsonl`` transcripts of a task the manifests
  name, with each run's kept workspace beside it (``<n>[.<m>].workspace.json``), and ``retried/runs.jsonl``;
- for ``eval variants`` and ``eval ci``, a sub-directory per variant or suite that is itself such a report.

Anything else (``runs/2024/important.csv``, a project's ``src/``) is not ours: ``--force`` then refuses the
whole directory, naming what it found, and removes nothing (``foreign_entries``).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import msgspec

__all__ = ["REPORT_DIRS", "foreign_entries", "remove_report"]

REPORT_DIRS = ("runs", "retried")
"""Directories of per-run files (transcripts, records of retried runs) inside a report directory."""

_TEMP = re.compile(r"\..+\.tmp")
_TRANSCRIPT = re.compile(r"\d{1,9}(\.\d{1,9})?(\.jsonl|\.workspace\.json)")
_MANIFEST_CAP = 64 * 1024 * 1024
"""Manifests bigger than this are not read for task ids (their transcripts then count as foreign)."""


def _read_small(path: Path) -> bytes:
    try:
        if not path.is_file() or path.stat().st_size > _MANIFEST_CAP:
            return b""
        return path.read_bytes()
    except OSError:
        return b""


def _task_ids(directory: Path) -> set[str]:
    """The task ids the manifests of ``directory`` name (whatever of them can be read)."""
    ids: set[str] = set()
    for path in (directory / "runs.jsonl", directory / "retried" / "runs.jsonl"):
        for line in _read_small(path).splitlines():
            try:
                value = msgspec.json.decode(line)
            except msgspec.DecodeError:
                continue
            if isinstance(value, dict) and isinstance(value.get("taskId"), str):
                ids.add(value["taskId"])
    for path, key in ((directory / "plan.json", "tasks"), (directory / "report.json", "tasks")):
        try:
            value = msgspec.json.decode(_read_small(path) or b"{}")
        except msgspec.DecodeError:
            continue
        items = value.get(key) if isinstance(value, dict) else None
        for item in items if isinstance(items, list) else ():
            task = item.get("taskId") if isinstance(item, dict) else item
            if isinstance(task, str):
                ids.add(task)
    return ids


def _foreign_transcripts(runs: Path, tasks: set[str]) -> list[Path]:
    """What in a ``runs/`` directory is not a transcript of a known task."""
    foreign: list[Path] = []
    for entry in sorted(runs.iterdir()):
        if entry.is_symlink() or not entry.is_dir() or entry.name not in tasks:
            foreign.append(entry)
            continue
        for item in sorted(entry.iterdir()):
            name = item.name
            if (
                item.is_symlink()
                or not item.is_file()
                or not (_TRANSCRIPT.fullmatch(name) or _TEMP.fullmatch(name))
            ):
                foreign.append(item)
    return foreign


def _is_report(directory: Path) -> bool:
    return any((directory / name).is_file() for name in ("report.json", "runs.jsonl", "plan.json"))


def foreign_entries(directory: Path, files: Sequence[str], subdirs: Sequence[str] = ()) -> list[Path]:
    """The entries of the report directory ``directory`` that alisio did not write (empty: all ours).

    ``subdirs`` are the sub-directories this command writes reports into; they, and any other
    sub-directory that is itself a report, are judged by the same rule. ``files`` are the names of the
    report files (``alisio.shell.lab.outputs.REPORT_FILES``, derived from the outputs table).
    """
    foreign: list[Path] = []
    tasks = _task_ids(directory)
    for entry in sorted(directory.iterdir()):
        name = entry.name
        if entry.is_symlink():
            foreign.append(entry)
        elif name in files or _TEMP.fullmatch(name):
            if not entry.is_file():
                foreign.append(entry)
        elif name == "runs" and entry.is_dir():
            foreign += _foreign_transcripts(entry, tasks)
        elif name == "retried" and entry.is_dir():
            for item in sorted(entry.iterdir()):
                if item.name == "runs" and item.is_dir() and not item.is_symlink():
                    foreign += _foreign_transcripts(item, tasks)
                elif item.name != "runs.jsonl" or item.is_symlink() or not item.is_file():
                    foreign.append(item)
        elif entry.is_dir() and (name in subdirs or _is_report(entry)):
            foreign += foreign_entries(entry, files, ())
        else:
            foreign.append(entry)
    return foreign


def remove_report(directory: Path, subdirs: Sequence[str] = ()) -> None:
    """Remove the report ``directory`` holds (every entry ``foreign_entries`` found none of: check it first)."""
    for entry in sorted(directory.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
