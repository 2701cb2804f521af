"""Cassette files on disk: ``<cassette-dir>/<task-id>.jsonl`` (default ``<suite>/cassettes``).

Rules this module keeps:

- Reading turns every problem (missing file, unreadable, not ``cassette/v1``) into one line naming the file
  (and the line), never a traceback.
- Writing is all or nothing: every cassette of a command is checked first, for secrets (well-known key shapes
  and the exact credentials of the environment and the profile, ``alisio.core.share.secrets``) and for size (256 KB per
  cassette, 2 MB per directory, ``alisio.core.replay.cassette.size_problem``). One refusal writes nothing. A refusal names
  the task and the field, never the value.
- Each file is written atomically (a temporary sibling, then ``os.replace``), so a reader sees the old
  cassette or the new one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import msgspec
from returns.result import Failure, Result

from alisio.core.replay.cassette import (
    Cassette,
    CassetteError,
    decode_cassette,
    encode_cassette,
    size_problem,
)
from alisio.core.share.secrets import describe, known_credentials, scan
from alisio.shell.lab.store import read_regular, write_bytes_atomic

__all__ = [
    "CASSETTES",
    "PendingCassette",
    "cassette_dir_for",
    "cassette_path",
    "credentials_of",
    "read_cassette",
    "refusals",
    "write_cassettes",
]

CASSETTES = "cassettes"
"""The default cassette directory inside a suite."""


def cassette_dir_for(suite_directory: Path, override: Path | None) -> Path:
    """``--cassette-dir`` when given, else ``<suite>/cassettes``."""
    return override if override is not None else suite_directory / CASSETTES


def cassette_path(directory: Path, task_id: str) -> Path:
    """The cassette of ``task_id``: ``<directory>/<task-id>.jsonl``."""
    return directory / f"{task_id}.jsonl"


def read_cassette(path: Path) -> Result[Cassette, CassetteError]:
    """Read and decode one cassette file; a missing or unreadable file is a ``CassetteError`` too, and so is
    one that is not a regular file (a FIFO, a link to ``/dev/zero``) or is larger than a report file may be."""
    try:
        data = read_regular(path, what="a cassette")
    except FileNotFoundError:
        return Failure(CassetteError(source=str(path), line=0, message="no such cassette"))
    except OSError as error:
        return Failure(CassetteError(source=str(path), line=0, message=f"cannot read: {error.strerror}"))
    return decode_cassette(data, str(path))


def credentials_of(env: Mapping[str, str], key: str | None) -> tuple[tuple[str, str], ...]:
    """The exact credentials to look for: those of the environment, plus the profile's API key if any."""
    known = known_credentials(env)
    if key and all(value != key for _, value in known):
        known += (("the configured API key", key),)
    return known


@dataclass(frozen=True)
class PendingCassette:
    """A cassette about to be written."""

    task_id: str
    path: Path
    cassette: Cassette

    @cached_property
    def data(self) -> bytes:
        """The encoded cassette."""
        return encode_cassette(self.cassette)


def _existing_sizes(directory: Path) -> dict[Path, int]:
    if not directory.is_dir():
        return {}
    return {path: path.stat().st_size for path in directory.glob("*.jsonl") if path.is_file()}


def refusals(pending: Sequence[PendingCassette], known: tuple[tuple[str, str], ...]) -> list[str]:
    """Why the cassettes may not be written: one line per problem, naming the task and the field.

    A secret is named by its field path and kind (``calls[0].request.messages[0].content: looks like an
    OpenAI key``), never by its value; a size problem gives the sizes and the limit.
    """
    problems: list[str] = []
    sizes: dict[Path, dict[Path, int]] = {}
    for item in pending:
        directory = item.path.parent
        sizes.setdefault(directory, _existing_sizes(directory))[item.path] = len(item.data)
    for item in pending:
        data = item.data
        total = sum(sizes[item.path.parent].values())
        too_big = size_problem(len(data), total)
        if too_big is not None:
            problems.append(f"task {item.task_id}: {item.path}: {too_big}")
            continue
        document = {"header": item.cassette.header, "calls": list(item.cassette.calls)}
        for hit in scan(msgspec.to_builtins(document), known):
            problems.append(f"task {item.task_id}: {hit.path}: {describe(hit.kind)}")
    return problems


def write_cassettes(pending: Sequence[PendingCassette]) -> None:
    """Write each cassette atomically (check them with ``refusals`` first). Raises ``OSError``."""
    for item in pending:
        write_bytes_atomic(item.path, item.data)
