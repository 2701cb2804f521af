"""Reading suite directories: the bytes of suite.json, facts about paths and symlinks, fixture digests.

The shell half of ``alisio.core.lab.suites.suite``: every decision (what is valid, what a path resolves to, the content hash)
is the core's; this module only reads the disk and hands over data.

- ``load_suite(path)``: ``path`` is a suite directory or its suite.json. Reads the file, walks the suite
  directory once without following links (``PathFacts``: real directories, real files, and every symlink
  with its resolved target or "outside"), parses, then hashes the fixture files for
  ``suite_content_hash``. A file that cannot be read is a ``SuiteError`` naming it, never an exception.
- Bounded: suite.json must be a regular file of at most ``MAX_SUITE_BYTES`` (a FIFO or ``/dev/zero`` is
  refused, not waited on or read whole); fixture files are hashed in chunks, whatever their size.
- Names that are not UTF-8 are never handed on as text: they go to ``PathFacts.undecodable`` escaped
  (``shown_name``, ``\\xNN``), and every path this module puts in a message is escaped the same way.
- ``discover_suites(root)``: the suite at ``root``, or the suites in its immediate sub-directories; a broken
  suite is an entry holding its error, so one bad suite never hides the others.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from returns.result import Failure, Result, Success

from alisio.core.errors import SuiteError
from alisio.core.lab.suites.protected import fixtures_hash, verifiers_hash
from alisio.core.lab.suites.suite import Suite, Task, parse_suite, suite_content_hash
from alisio.core.lab.suites.suite_paths import PathFacts, SymlinkFact, is_within, join, normalize, resolve

__all__ = [
    "MAX_SUITE_BYTES",
    "SUITE_FILE",
    "LoadedSuite",
    "SuiteEntry",
    "declared_suite_id",
    "discover_suites",
    "gather_path_facts",
    "load_suite",
    "shown_name",
]

SUITE_FILE = "suite.json"
MAX_SUITE_BYTES = 16 << 20
"""The largest suite.json read (16 MiB, thousands of tasks): a larger one is refused, never read whole."""


@dataclass(frozen=True)
class LoadedSuite:
    """A valid suite and where it lives."""

    suite: Suite
    directory: Path
    """The suite directory, as the caller named it (the parent of ``suite_json``)."""
    suite_json: Path
    content_hash: str
    """``alisio.core.lab.suites.suite.suite_content_hash`` over the tasks and every fixture file."""
    verifiers_hash: str = ""
    """The part of it that judges: the tasks' verifiers and protected files (``protected.verifiers_hash``)."""
    fixtures_hash: str = ""
    """The fixture files' part (``protected.fixtures_hash``)."""

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
            SuiteError(source=shown_name(path), message=f"not a suite: no {SUITE_FILE} in this directory")
        )
    suite_json = path / SUITE_FILE if path.is_dir() else path
    source = shown_name(suite_json)
    try:
        data = _read_suite_json(suite_json)
        facts = gather_path_facts(suite_json.parent)
    except OSError as error:
        return Failure(SuiteError(source=source, message=_cannot_read(error, suite_json)))
    except _NotASuiteFile as error:
        return Failure(SuiteError(source=source, message=str(error)))
    return parse_suite(data, source, facts).bind(lambda suite: _hashed(suite, suite_json, facts))


class _NotASuiteFile(Exception):
    """suite.json is not a regular file, or is larger than ``MAX_SUITE_BYTES``."""


def _read_suite_json(path: Path) -> bytes:
    """The bytes of a regular file of at most ``MAX_SUITE_BYTES``.

    A FIFO would block ``open`` forever and ``/dev/zero`` would fill memory: the file is opened without
    blocking, checked with ``fstat`` on that same descriptor, and read no further than the limit.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _NotASuiteFile(f"not a regular file (a {SUITE_FILE} must be one)")
        data = file.read(MAX_SUITE_BYTES + 1)
    if len(data) > MAX_SUITE_BYTES:
        raise _NotASuiteFile(f"larger than {MAX_SUITE_BYTES // (1 << 20)} MiB (the limit of a {SUITE_FILE})")
    return data


def discover_suites(root: Path, named: str | None = None) -> tuple[SuiteEntry, ...]:
    """The suite at ``root`` if it has a suite.json (or is one), else one entry per immediate sub-directory
    that has a suite.json, sorted by name. Empty when there is none; an unreadable ``root`` is one entry
    holding the error.

    ``named``: only the suites whose directory name or declared ``suiteId`` (``declared_suite_id``) is
    ``named`` are loaded and returned: the others are read no further than their suiteId (``eval run SUITE``
    pays for one suite's validation and hashing, not every bundled one's).
    """
    if root.is_file() or os.path.lexists(root / SUITE_FILE):
        found = [(root.parent if root.is_file() else root, root)]
    else:
        try:
            found = [(c, c) for c in sorted(c for c in root.iterdir() if os.path.lexists(c / SUITE_FILE))]
        except OSError as error:
            return (
                SuiteEntry(
                    directory=root,
                    result=Failure(SuiteError(source=shown_name(root), message=_cannot_read(error, root))),
                ),
            )
    return tuple(
        SuiteEntry(directory=directory, result=load_suite(path))
        for directory, path in found
        if named is None or _may_answer(directory, path, named)
    )


def _may_answer(directory: Path, path: Path, name: str) -> bool:
    """Whether the suite at ``path`` (in ``directory``) may answer to ``name``: its directory name, or the
    suiteId its file or its directory's suite.json declares (what ``suite_choice`` matches, loaded or not)."""
    if name == directory.name or name in declared_suite_id(path):
        return True
    return path != directory and name in declared_suite_id(directory)


def declared_suite_id(path: Path) -> set[str]:
    """The ``suiteId`` the suite.json at ``path`` (a suite directory or the file) declares, read as raw JSON
    whether or not the suite is valid; empty when there is none or the file cannot be read."""
    import json

    try:
        data = json.loads(_read_suite_json(path / SUITE_FILE if path.is_dir() else path))
    except (OSError, ValueError, _NotASuiteFile, RecursionError):
        return set()
    declared = data.get("suiteId") if isinstance(data, dict) else None
    return {declared} if isinstance(declared, str) else set()


def gather_path_facts(directory: Path) -> PathFacts:
    """Walk ``directory`` once, not following links: its real directories and files, every symlink with its
    resolved target relative to ``directory`` (None when outside it or unresolvable), and every entry whose
    name is not UTF-8 (escaped, ``shown_name``; the walk does not enter such a directory), and every entry
    that is none of these (a FIFO, a socket, a device), with what it is.

    Raises:
        OSError: a directory under it cannot be listed.
    """
    root = directory.resolve()
    directories: set[str] = set()
    files: set[str] = set()
    links: set[SymlinkFact] = set()
    undecodable: set[str] = set()
    special: set[tuple[str, str]] = set()

    def fail(error: OSError) -> None:
        raise error

    for here, dirnames, filenames in os.walk(root, onerror=fail):
        base = normalize(Path(here).relative_to(root).as_posix())
        for name in (*dirnames, *filenames):
            entry = Path(here) / name
            relative = join(base, name)
            if not _is_utf8(name):
                undecodable.add(join(base, shown_name(name)))
            elif entry.is_symlink():
                links.add(SymlinkFact(path=relative, target=_link_target(entry, root)))
            elif name in dirnames:
                directories.add(relative)
            elif entry.is_file():
                files.add(relative)
            elif name in filenames:  # not a file, a directory or a link: a FIFO, a socket, a device
                from alisio.shell.harness.tools.files import file_kind

                special.add((relative, file_kind(entry.lstat().st_mode)))
        dirnames[:] = [name for name in dirnames if _is_utf8(name)]  # one bad name is enough to refuse
    return PathFacts(
        gathered=True,
        directories=frozenset(directories),
        files=frozenset(files),
        symlinks=frozenset(links),
        undecodable=frozenset(undecodable),
        special=frozenset(special),
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
    """The loaded suite with its content hash over the sha256 of every file in its fixtures and in what its
    command verifiers have bound in the sandbox (``sandbox.verifierMounts``: a Harbor task's tests)."""
    links = {link.path: link.target for link in facts.symlinks}
    roots = {resolve(normalize(task.fixture), links) for task in suite.tasks}
    for task in suite.tasks:
        mounts = task.sandbox.verifier_mounts if task.sandbox is not None else ()
        roots |= {resolve(normalize(mount.source), links) for mount in mounts if mount.source is not None}
    digests: dict[str, str] = {}
    try:
        for relative in sorted(facts.files):
            if any(root is not None and is_within(relative, root) for root in roots):
                digests[relative] = _sha256_of(suite_json.parent / relative)
        for link in facts.symlinks:
            if any(root is not None and is_within(link.path, root) for root in roots):
                # The target's bytes: a link may point at a name that is not UTF-8 (and may not exist).
                target = os.fsencode(os.readlink(suite_json.parent / link.path))
                digests[link.path] = hashlib.sha256(b"symlink:" + target).hexdigest()
    except OSError as error:
        return Failure(
            SuiteError(source=shown_name(suite_json), message=_cannot_read(error, suite_json.parent))
        )
    return Success(
        LoadedSuite(
            suite=suite,
            directory=suite_json.parent,
            suite_json=suite_json,
            content_hash=suite_content_hash(suite, digests),
            verifiers_hash=verifiers_hash(suite.tasks),
            fixtures_hash=fixtures_hash(digests),
        )
    )


def _cannot_read(error: OSError, path: Path) -> str:
    name = error.filename if isinstance(error.filename, str) else str(path)
    reason = error.strerror or type(error).__name__
    return f"cannot read {shown_name(name)}: {reason}" if name != str(path) else f"cannot read: {reason}"


def shown_name(path: str | Path) -> str:
    """``path`` as printable text: bytes that are not UTF-8 (``os.fsdecode`` keeps them as lone surrogates,
    which no UTF-8 output accepts) are written ``\\xNN``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _sha256_of(path: Path) -> str:
    """The sha256 of a file, read in chunks: a 2 GB fixture file costs a buffer, not 2 GB of memory."""
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()
