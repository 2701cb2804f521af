"""Self-checks kept in the data directory, by the suite's content hash, and what every report says of them.

``eval selfcheck`` (and ``eval validate --selfcheck``) writes ``<dataDir>/selfcheck/<contentHash>.json``
after each check (``store_selfcheck``: the tasks it checked replace their earlier entries; the others stay).
A report (``eval run``, ``record``, ``variants``, ``ci``, ``rejudge``) reads the file of its suite's content
hash (``with_suite_checks``) and carries the self-check of its own tasks, and its suite's verifier and fixture
hashes. The content hash covers every task, verifier and fixture file, so a changed suite is "not
self-checked" until it is checked again. A file that cannot be read or decoded counts as no self-check (the
report says "not self-checked"); one that cannot be written is said on stderr by the command, never fatal.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import msgspec

from alisio.core.lab.judges.selfcheck import SelfCheck, StoredSelfCheck, merged_selfcheck, self_check_block
from alisio.core.lab.reports.report import Report
from alisio.shell.lab.store import read_regular, write_bytes_atomic
from alisio.shell.lab.suites import LoadedSuite

__all__ = ["SELFCHECK_DIR", "read_selfcheck", "store_selfcheck", "with_stored_check", "with_suite_checks"]

SELFCHECK_DIR = "selfcheck"
"""Under the data directory: one ``<contentHash>.json`` per suite content self-checked."""

_DECODER = msgspec.json.Decoder(StoredSelfCheck)


def _path(data_root: Path, content_hash: str) -> Path:
    return data_root / SELFCHECK_DIR / f"{content_hash}.json"


def read_selfcheck(data_root: Path, content_hash: str) -> StoredSelfCheck | None:
    """The self-checks kept for ``content_hash``; ``None`` when there are none (or they cannot be read)."""
    try:
        stored = _DECODER.decode(read_regular(_path(data_root, content_hash)))
    except (OSError, msgspec.DecodeError):
        return None
    return stored if stored.content_hash == content_hash else None


def store_selfcheck(data_root: Path, loaded: LoadedSuite, check: SelfCheck, now: datetime) -> Path:
    """Keep ``check`` of ``loaded`` with the earlier ones of the same content; the file written.

    Raises:
        OSError: the data directory cannot be written.
    """
    checked_at = now.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    previous = read_selfcheck(data_root, loaded.content_hash)
    merged = merged_selfcheck(previous, check, loaded.content_hash, checked_at)
    path = _path(data_root, loaded.content_hash)
    write_bytes_atomic(path, msgspec.json.encode(merged))
    return path


def with_stored_check(report: Report, data_root: Path) -> Report:
    """``report`` with the self-check stored for its suite's content hash (``eval merge``: the conditions
    already carry the verifier and fixture hashes of the shards that ran)."""
    stored = read_selfcheck(data_root, report.conditions.suite_hash)
    return msgspec.structs.replace(
        report, self_check=self_check_block(stored, [t.task_id for t in report.tasks])
    )


def with_suite_checks(report: Report, data_root: Path, loaded: LoadedSuite) -> Report:
    """``report`` with its suite's verifier and fixture hashes and the self-check of its tasks."""
    conditions = msgspec.structs.replace(
        report.conditions,
        verifiers_hash=loaded.verifiers_hash or None,
        fixtures_hash=loaded.fixtures_hash or None,
    )
    block = self_check_block(
        read_selfcheck(data_root, loaded.content_hash), [t.task_id for t in report.tasks]
    )
    notes = {task.id: task.advisory for task in loaded.suite.tasks if task.advisory}
    tasks = tuple(
        msgspec.structs.replace(task, advisory=notes[task.task_id]) if task.task_id in notes else task
        for task in report.tasks
    )
    return msgspec.structs.replace(report, conditions=conditions, self_check=block, tasks=tasks)
