"""A command's run context by content, so that a worker on another machine can run its runs.

The driver (the process that runs the command) holds a ``RunContext`` made of paths and live objects: the
suite directory, an open HTTP client, the scripts it read. None of that can travel. A ``PortableRun`` is the
same context as data, and a worker turns it back into a ``RunContext`` (``worker_context``):

- the suite: ``suite_archive`` packs suite.json and every path its tasks name (``suite_entries``: fixtures,
  solutions, the sources of verifier mounts) into a tar; the worker unpacks it and loads it again, and
  refuses it unless it hashes to the driver's ``suite_hash``;
- each arm's variant, measured configuration, run id, prices and injected provider faults (``PortableArm``);
- the grants, ``--read-only``, ``--keep``, whether the command records, and the harness version (a worker
  with another alisio refuses to run: its records would not be comparable);
- the sandbox's limits with ``--sandbox bwrap`` (a worker where bubblewrap cannot run ends each run
  ``error``: it never runs one unsandboxed);
- the provider (``ProviderPlan.portable``): the live provider's id, model, base URL and
  ``provider.maxConcurrency``; the bytes of every script of ``--script`` (and whether they are served over
  in-memory HTTP, as they are when some arm injects faults, with ``provider.timeoutMs``); the cassettes of a replay (and the faults they
  were recorded with).

The API key (and the password of a base URL that has one) is not in a ``PortableRun``: the executor sends it
apart, as ``RunSecrets`` with each task (see ``alisio.shell.lab.ray_executor``), so that it never sits in an
object store that may spill to disk.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import msgspec

from alisio.core.harness.config import MeasuredConfig
from alisio.core.harness.events import Effect
from alisio.core.harness.faults import FaultSpec
from alisio.core.harness.prices import Rates
from alisio.core.harness.sandbox import SandboxLimits
from alisio.core.harness.wire import DEFAULT_API, Api
from alisio.core.lab.outputs.formats import SCRIPTED_PROVIDER
from alisio.core.lab.suites.suite import Suite
from alisio.core.lab.suites.suite_paths import join, normalize
from alisio.core.replay.cassette import Cassette

__all__ = [
    "PortableArm",
    "PortableLive",
    "PortableProvider",
    "PortableReplay",
    "PortableRun",
    "PortableScripted",
    "RunSecrets",
    "decode_run",
    "encode_run",
    "scripted",
    "suite_archive",
    "suite_entries",
    "unpack_suite",
]


class PortableLive(msgspec.Struct, frozen=True, kw_only=True, tag="live"):
    """The configured live provider (its key, and a base URL's password, travel apart)."""

    id: str
    model: str
    base_url: str
    """As configured (``--base-url`` or config.toml). What goes to the workers has its user information
    redacted; the URL itself then travels in ``RunSecrets``."""
    max_response_bytes: int
    """``provider.maxResponseBytes``."""
    max_concurrency: int | None = None
    """``provider.maxConcurrency``: requests in flight to the endpoint at once, over the whole cluster
    (``None``: as many as ``--jobs``)."""
    api: Api = DEFAULT_API
    """``provider.api``: the wire format."""
    rate_limit_give_up_ms: int = 120_000
    """``provider.rateLimitGiveUpMs``."""


class PortableScripted(msgspec.Struct, frozen=True, kw_only=True, tag="scripted"):
    """``--script``: the bytes of every script, read once on the driver."""

    model: str
    scripts: dict[str, bytes]
    """Task id -> script bytes; the key ``""`` is the one file every task plays."""
    sources: dict[str, str]
    """The same keys -> the file each script was read from (named in a script's errors)."""
    over_http: bool = False
    """Each run's script is served over in-memory HTTP (some arm injects faults: ``scripted_plan``)."""
    timeout_ms: int | None = None
    """``provider.timeoutMs`` of the provider that reads a script served over HTTP (how long a stall lasts)."""


class PortableReplay(msgspec.Struct, frozen=True, kw_only=True, tag="replay"):
    """Replay: every selected task's cassette."""

    id: str
    model: str
    cassettes: dict[str, Cassette]
    faults: FaultSpec | None = None
    """The spec the cassettes were recorded with (``replay_plan``'s ``faults``; ``None``: clean)."""


PortableProvider = PortableLive | PortableScripted | PortableReplay


class RunSecrets(msgspec.Struct, frozen=True, kw_only=True):
    """What must never sit in an object store that may spill to disk: sent with each task, in its arguments."""

    api_key: str | None = None
    base_url: str | None = None
    """The live provider's base URL when it holds a user name or password (``None`` otherwise)."""


class PortableArm(msgspec.Struct, frozen=True, kw_only=True):
    """One arm of the command (``alisio.shell.lab.run_one.Arm`` without its report directory)."""

    variant: str | None
    measured: MeasuredConfig
    run_id: str
    rates: Rates | None = None
    """The arm's prices (a task's ``maxCostUsd`` is checked at them on the worker)."""
    faults: FaultSpec | None = None
    """The arm's injected provider faults (``--faults``, a variant's ``faults``); ``None``: none."""


class PortableRun(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a worker needs, but the suite's files and the API key, to run any run of the command."""

    harness_version: str
    suite_hash: str
    """The suite's content hash: the unpacked archive must hash the same."""
    provider: PortableProvider
    arms: tuple[PortableArm, ...]
    granted: tuple[Effect, ...]
    read_only: bool
    keep: bool
    record: bool
    """The command records cassettes: each run's provider calls come back with its record."""
    sandbox: SandboxLimits | None = None
    """``--sandbox bwrap``'s limits: each worker runs its commands in bubblewrap (``None``: no sandbox)."""


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(PortableRun)


def encode_run(run: PortableRun) -> bytes:
    """``run`` as msgpack bytes (what goes into Ray's object store)."""
    return _encoder.encode(run)


def decode_run(data: bytes) -> PortableRun:
    """The ``PortableRun`` that ``encode_run`` made (raises ``msgspec.DecodeError`` on other bytes)."""
    return _decoder.decode(data)


def scripted(
    model: str | None,
    scripts: Mapping[str, tuple[bytes, str]],
    *,
    over_http: bool = False,
    timeout_ms: int | None = None,
) -> PortableScripted:
    """The portable form of ``scripted_plan``'s scripts (task id, or ``""`` for one file -> bytes, source)."""
    return PortableScripted(
        model=model or SCRIPTED_PROVIDER,
        scripts={key: data for key, (data, _) in scripts.items()},
        sources={key: source for key, (_, source) in scripts.items()},
        over_http=over_http,
        timeout_ms=timeout_ms,
    )


def _member_filter(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """No owner names or ids in the archive: a worker's files belong to the worker's user."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def suite_entries(suite: Suite) -> tuple[str, ...]:
    """Every suite path the tasks name, normalised and sorted: each fixture, ``solution`` and
    ``sandbox.verifierMounts`` source. A worker's ``load_suite`` checks that each one exists (so a suite
    without them does not load there), and its sandboxed verifiers read the mounts."""
    paths = {task.fixture for task in suite.tasks}
    paths.update(task.solution for task in suite.tasks if task.solution is not None)
    for task in suite.tasks:
        mounts = task.sandbox.verifier_mounts if task.sandbox is not None else ()
        paths.update(mount.source for mount in mounts if mount.source is not None)
    return tuple(sorted({normalize(path) for path in paths}))


def suite_archive(directory: Path, suite_json: Path, entries: Sequence[str]) -> bytes:
    """A gzipped tar of suite.json and each entry (``suite_entries``: suite-relative directories or files),
    links kept as links, with what the links lead to inside the suite: an entry reached through a link (itself
    or a parent directory) and the targets of the links under an entry are added too.

    Raises:
        OSError: a file cannot be read.
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(suite_json, arcname=suite_json.name, filter=_member_filter)
        _add_entries(tar, directory, entries)
    return buffer.getvalue()


def _add_entries(tar: tarfile.TarFile, directory: Path, entries: Sequence[str]) -> None:
    """Add each entry; an entry that does not exist is left out (the worker then fails as the driver would:
    ``fixture_copy``, naming it)."""
    root = directory.resolve()
    pending = deque(normalize(entry) for entry in entries)
    trees: set[str] = set()
    links: set[str] = set()
    while pending:
        entry = pending.popleft()
        parts = entry.split("/")
        if any("/".join(parts[:end]) in trees for end in range(1, len(parts) + 1)):
            continue  # inside a tree already added (a set lookup per prefix: suites have thousands of tasks)
        through = _first_link(directory, entry)
        if through is not None:
            if through not in links:
                links.add(through)
                tar.add(directory / through, arcname=through, recursive=False, filter=_member_filter)
            target = _inside(root, directory / through)
            if target is not None:
                pending.append(join(target, entry.removeprefix(through).lstrip("/")))
            continue
        path = directory / entry
        if path.exists():
            trees.add(entry)
            tar.add(path, arcname=entry, recursive=True, filter=_member_filter)
            pending.extend(_link_targets(root, path))


def _first_link(directory: Path, entry: str) -> str | None:
    """The shortest prefix of ``entry`` (itself included) that is a symlink, or ``None``."""
    parts = entry.split("/") if entry else []
    for end in range(1, len(parts) + 1):
        prefix = "/".join(parts[:end])
        if (directory / prefix).is_symlink():
            return prefix
    return None


def _inside(root: Path, link: Path) -> str | None:
    """Where ``link`` leads, relative to the suite directory ``root``, or ``None``: outside it, at it, or in a
    loop of links."""
    try:
        target = link.resolve()
    except (OSError, RuntimeError):  # a loop of links: Python 3.11 and 3.12 raise RuntimeError, 3.13 OSError
        return None
    if target == root or not target.is_relative_to(root):
        return None
    return target.relative_to(root).as_posix()


def _link_targets(root: Path, tree: Path) -> list[str]:
    """The suite-relative targets of the links under ``tree`` that lead elsewhere in the suite."""
    if not tree.is_dir():
        return []
    found: list[str] = []
    real = tree.resolve()
    for parent, dirs, files in os.walk(tree):
        for name in [*dirs, *files]:
            path = Path(parent) / name
            target = _inside(root, path) if path.is_symlink() else None
            if target is not None and not (root / target).is_relative_to(real):
                found.append(target)
    return found


def unpack_suite(archive: bytes, into: Path) -> None:
    """Unpack a ``suite_archive`` into the directory ``into`` (which exists).

    Raises:
        tarfile.TarError, OSError: the archive is damaged or cannot be written; a member that would land
            outside ``into`` is refused (the ``tar`` extraction filter).
    """
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        extract: Callable[..., None] = tar.extractall
        if hasattr(tarfile, "tar_filter"):  # Python 3.11.4+: refuse absolute paths and '..' members
            extract(into, filter="tar")
        else:  # pragma: no cover - older 3.11: the archive is our own driver's
            extract(into)
