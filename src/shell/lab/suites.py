"""Reading suite directories: the bytes of suite.json, facts about paths and symlinks, fixture digests.

The shell half of ``alisio.core.lab.suite``: every decision (what is valid, what a path resolves to, the content hash)
is the core's; this module only reads the disk and hands over data.

- ``load_suite(path)``: ``path`` is a suite directory or its suite.json. Reads the file, walks the suite
  directory once without following links (``PathFacts``: real directories, real files, and every symlink
  with its resolved target or "outside"), parses, then hashes the fixture files for
  ``suite_content_hash``. A file that cannot be read is a ``SuiteError`` naming it, never an exception.
- ``discover_suites(root)``: the suite at ``root``, or the suites in its immediate sub-directories; a broken
  suite is an entry holding its error, so one bad suite never hides the others.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from returns.result import Failure, Result, Success

from alisio.core.errors import SuiteError
from alisio.core.lab.suite import Suite, Task, parse_suite, suite_content_hash
from alisio.core.lab.suite_paths import PathFacts, SymlinkFact, is_within, join, normalize, resolve

__all__ = ["SUITE_FILE", "LoadedSuite", "SuiteEntry", "discover_suites", "gather_path_facts", "load_suite"]

SUITE_FILE = "suite.json"


@dataclass(frozen=True)
class LoadedSuite:
    """A valid suite and where it lives."""

    suite: Suite
    directory: Path
    """The suite directory, as the caller named it (the parent of ``suite_json``)."""
    suite_json: Path
    content_hash: str
    """``alisio.core.lab.suite.suite_content_hash`` over the tasks and every fixture file."""

    def fixture_dir(self, task: Task) -> Path:
        """The task's fixture directory (copy it; never run in it)."""
        return self.directory / normalize(task.fixture)


@dataclass(frozen=True)
class SuiteEntry:
    """One suite found by ``discover_suites``: its directory and the result of loading it."""

    directory: Path
    result: Result[LoadedSuite, SuiteError]


def load_suite(path: Path) -> Result[LoadedSuite, SuiteError]:
    """Read, validate and hash the suite at ``path`` (a suite directory or its suite.json).

    Returns:
        ``Success(LoadedSuite)``, or ``Failure(SuiteError)``: no suite.json in the directory, a file that
        cannot be read, bytes that are not UTF-8 JSON, or the suite's violations (see ``parse_suite``).
    """
    if path.is_dir() and not os.path.lexists(path / SUITE_FILE):
        return Failure(
            SuiteError(source=str(path), message=f"not a suite: no {SUITE_FILE} in this directory")
        )
    suite_json = path / SUITE_FILE if path.is_dir() else path
    try:
        data = suite_json.read_bytes()
        facts = gather_path_facts(suite_json.parent)
    except OSError as error:
        return Failure(SuiteError(source=str(suite_json), message=_cannot_read(error, suite_json)))
    return parse_suite(data, str(suite_json), facts).bind(lambda suite: _hashed(suite, suite_json, facts))


def discover_suites(root: Path) -> tuple[SuiteEntry, ...]:
    """The suite at ``root`` if it has a suite.json (or is one), else one entry per immediate sub-directory
    that has a suite.json, sorted by name. Empty when there is none; an unreadable ``root`` is one entry
    holding the error."""
    if root.is_file() or os.path.lexists(root / SUITE_FILE):
        return (SuiteEntry(directory=root.parent if root.is_file() else root, result=load_suite(root)),)
    try:
        children = sorted(child for child in root.iterdir() if os.path.lexists(child / SUITE_FILE))
    except OSError as error:
        return (
            SuiteEntry(
                directory=root,
                result=Failure(SuiteError(source=str(root), message=_cannot_read(error, root))),
            ),
        )
    return tuple(SuiteEntry(directory=child, result=load_suite(child)) for child in children)


def gather_path_facts(directory: Path) -> PathFacts:
    """Walk ``directory`` once, not following links: its real directories and files, and every symlink
    with its resolved target relative to ``directory`` (None when outside it or unresolvable).

    Raises:
        OSError: a directory under it cannot be listed.
    """
    root = directory.resolve()
    directories: set[str] = set()
    files: set[str] = set()
    links: set[SymlinkFact] = set()

    def fail(error: OSError) -> None:
        raise error

    for here, dirnames, filenames in os.walk(root, onerror=fail):
        base = normalize(Path(here).relative_to(root).as_posix())
        for name in (*dirnames, *filenames):
            entry = Path(here) / name
            relative = join(base, name)
            if entry.is_symlink():
                links.add(SymlinkFact(path=relative, target=_link_target(entry, root)))
            elif name in dirnames:
                directories.add(relative)
            elif entry.is_file():
                files.add(relative)
    return PathFacts(
        gathered=True, directories=frozenset(directories), files=frozenset(files), symlinks=frozenset(links)
    )


def _link_target(link: Path, root: Path) -> str | None:
    try:
        target = link.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python 3.11)
        return None
    try:
        return normalize(target.relative_to(root).as_posix())
    except ValueError:
        return None


def _hashed(suite: Suite, suite_json: Path, facts: PathFacts) -> Result[LoadedSuite, SuiteError]:
    """The loaded suite with its content hash over the sha256 of every file in its fixtures."""
    links = {link.path: link.target for link in facts.symlinks}
    roots = {resolve(normalize(task.fixture), links) for task in suite.tasks}
    digests: dict[str, str] = {}
    try:
        for relative in sorted(facts.files):
            if any(root is not None and is_within(relative, root) for root in roots):
                digests[relative] = hashlib.sha256((suite_json.parent / relative).read_bytes()).hexdigest()
        for link in facts.symlinks:
            if any(root is not None and is_within(link.path, root) for root in roots):
                target = os.readlink(suite_json.parent / link.path)
                digests[link.path] = hashlib.sha256(f"symlink:{target}".encode()).hexdigest()
    except OSError as error:
        return Failure(SuiteError(source=str(suite_json), message=_cannot_read(error, suite_json.parent)))
    return Success(
        LoadedSuite(
            suite=suite,
            directory=suite_json.parent,
            suite_json=suite_json,
            content_hash=suite_content_hash(suite, digests),
        )
    )


def _cannot_read(error: OSError, path: Path) -> str:
    name = error.filename if isinstance(error.filename, str) else str(path)
    reason = error.strerror or type(error).__name__
    return f"cannot read {name}: {reason}" if name != str(path) else f"cannot read: {reason}"
