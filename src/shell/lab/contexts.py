"""A context's files read before the first run, and laid into each run: ``load_context``, ``overlay``.

``alisio.core.lab.suites.context_spec`` checks a context's paths lexically; here they meet the disk, once, before
anything runs:

- every source is below the directory of the file that names it (compare.json's, or the ``--context``
  file's), also through symlinks: a link that leads out is refused, as a suite's are;
- a source is a regular file, or a directory when its destination ends with ``/`` (or it simply is one):
  every regular file below it is taken, with its executable bit (a skill's scripts stay runnable); a FIFO,
  a device or a socket is refused;
- the bytes are read here and kept: every run gets exactly what the digest names, even if the files change
  while the command runs (at most ``MAX_CONTEXT_BYTES`` in all);
- each problem is one ``CommandError`` line naming the file, the variant and the field; nothing has run.

``alisio.shell.agents.overlay`` writes a context's files into a directory (a fresh fixture copy before its
snapshot, or an external agent's private HOME); the suite's fixture on disk is never written.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import msgspec

from alisio.core.agents.config import ExternalAgent
from alisio.core.agents.context_home import instructions_text
from alisio.core.errors import ConfigError
from alisio.core.harness.events import Effect
from alisio.core.lab.comparisons.variants import VariantsPlan
from alisio.core.lab.reports.context import Area, ContextCondition, ContextFile, McpServer, context_condition
from alisio.core.lab.suites.context_spec import ContextSpec, parse_context
from alisio.core.lab.suites.suite import Task
from alisio.core.lab.suites.suite_paths import normalize
from alisio.shell.agents.overlay import ContextOverlayFile, overlay, within
from alisio.shell.errors import CommandError, expect
from alisio.shell.lab.store import read_regular

__all__ = [
    "MAX_CONTEXT_BYTES",
    "ContextOverlayFile",
    "LoadedContext",
    "arm_contexts",
    "check_context_agents",
    "check_protected",
    "load_context",
    "mcp_servers_for",
    "overlay",
    "read_context",
]

MAX_CONTEXT_BYTES: Final = 64 << 20
"""All of a context's files together (64 MiB): a context is instructions and small tools, not a data set."""
MAX_CONTEXT_FILES: Final = 10_000
_CONTEXT_FILE_MAX: Final = 16 << 20
"""The largest ``--context`` JSON file."""
_HASH: Final = "sha256"


@dataclass(frozen=True)
class LoadedContext:
    """A context with its files read: what each run gets, and the condition its report names."""

    spec: ContextSpec
    condition: ContextCondition
    workspace: tuple[ContextOverlayFile, ...] = ()
    home: tuple[ContextOverlayFile, ...] = ()

    @property
    def system(self) -> str | None:
        return self.spec.system

    @property
    def mcp(self) -> tuple[McpServer, ...]:
        return self.spec.mcp


def _fail(source: str, key: str, message: str) -> CommandError:
    return CommandError(f"{ConfigError(source=source, key=key, message=message)}; nothing was run")


def _regular(path: Path, base: Path, where: tuple[str, str], shown: str) -> tuple[bytes, bool]:
    """The bytes and executable bit of a regular file below ``base``; raises ``CommandError``."""
    resolved = path.resolve()
    if not within(resolved, base):
        raise _fail(*where, f"{shown} is a symlink that leads out of {base}")
    try:
        info = resolved.stat()
    except OSError as error:
        raise _fail(*where, f"{shown}: {error.strerror or error}") from None
    if not stat.S_ISREG(info.st_mode):
        raise _fail(*where, f"{shown} is not a regular file (a FIFO, device or socket cannot be copied)")
    try:
        data = read_regular(resolved, _CONTEXT_FILE_MAX * 4, "a context file")
    except OSError as error:
        raise _fail(*where, f"{shown}: cannot read: {error.strerror or error}") from None
    return data, bool(info.st_mode & stat.S_IXUSR)


def _files_of(dest: str, source: str, base: Path, where: tuple[str, str]) -> list[ContextOverlayFile]:
    """The files one (destination, source) pair adds."""
    path = base / normalize(source)
    if not os.path.lexists(path):
        raise _fail(*where, f"{source} does not exist (paths are relative to {base})")
    resolved = path.resolve()
    if not within(resolved, base):
        raise _fail(*where, f"{source} is a symlink that leads out of {base}")
    if not resolved.is_dir():
        if dest.endswith("/"):
            raise _fail(*where, f"{source} is a file, but the destination ends with / (a directory)")
        data, executable = _regular(path, base, where, source)
        return [ContextOverlayFile(path=normalize(dest), data=data, executable=executable)]
    found: list[ContextOverlayFile] = []
    for here, dirnames, filenames in os.walk(
        resolved
    ):  # followlinks=False: a linked dir is checked as a file
        dirnames.sort()
        for name in sorted(filenames) + [d for d in dirnames if (Path(here) / d).is_symlink()]:
            entry = Path(here) / name
            relative = entry.relative_to(resolved).as_posix()
            shown = f"{source.rstrip('/')}/{relative}"
            if entry.is_symlink() and entry.resolve().is_dir():
                raise _fail(*where, f"{shown} is a symlink to a directory (copy the directory itself)")
            data, executable = _regular(entry, base, where, shown)
            found.append(
                ContextOverlayFile(path=f"{normalize(dest)}/{relative}", data=data, executable=executable)
            )
        dirnames[:] = [d for d in dirnames if not (Path(here) / d).is_symlink()]
    if not found:
        raise _fail(*where, f"{source} holds no file")
    return found


def _area(spec: ContextSpec, area: Area, base: Path, source: str) -> tuple[ContextOverlayFile, ...]:
    pairs = spec.workspace if area == "workspace" else spec.home
    files: dict[str, ContextOverlayFile] = {}
    for dest, origin in pairs:
        key = f"context.{area}[{msgspec.json.encode(dest).decode()}]"
        for file in _files_of(dest, origin, base, (source, key)):
            if file.path in files:
                raise _fail(source, key, f"{file.path} is also added by another entry of {area}")
            files[file.path] = file
    return tuple(files.values())


def load_context(spec: ContextSpec, base: Path, source: str, label: str) -> LoadedContext:
    """Read ``spec``'s files below ``base`` (the directory of the file naming it).

    Args:
        source: what names the context in errors (``compare.json: variant with-skill``).
        label: the label when the context gives none (the variant id, or the context file's name).

    Raises:
        CommandError: a source missing, outside ``base`` (also through a link), not a regular file, or the
            whole past ``MAX_CONTEXT_BYTES`` or ``MAX_CONTEXT_FILES``; one line naming the file, the
            variant and the field.
    """
    root = base.resolve()
    workspace = _area(spec, "workspace", root, source)
    home = _area(spec, "home", root, source)
    total = sum(len(file.data) for file in (*workspace, *home))
    if total > MAX_CONTEXT_BYTES or len(workspace) + len(home) > MAX_CONTEXT_FILES:
        raise _fail(
            source,
            "context",
            f"adds {len(workspace) + len(home)} files, {total} bytes: more than a context may "
            f"({MAX_CONTEXT_FILES} files, {MAX_CONTEXT_BYTES} bytes)",
        )

    files = [
        ContextFile(area=area, path=file.path, sha256=hashlib.new(_HASH, file.data).hexdigest())
        for area, group in _by_area(workspace, home)
        for file in group
    ]
    condition = context_condition(spec.label or label, files, spec.system, spec.mcp)
    return LoadedContext(spec=spec, condition=condition, workspace=workspace, home=home)


def _by_area(
    workspace: tuple[ContextOverlayFile, ...], home: tuple[ContextOverlayFile, ...]
) -> tuple[tuple[Area, tuple[ContextOverlayFile, ...]], ...]:
    return (("workspace", workspace), ("home", home))


def read_context(path: Path) -> LoadedContext:
    """``--context FILE``: the file read, checked and its files read (labelled by the file's name unless it
    gives a label).

    Raises:
        CommandError: the file cannot be read, is not JSON, or its context is invalid (one line each).
    """
    try:
        data = read_regular(path, _CONTEXT_FILE_MAX, "a context file")
    except OSError as error:
        raise CommandError(f"--context {path}: cannot read: {error.strerror or error}") from None
    try:
        raw = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError) as error:
        raise CommandError(f"{path}: not valid JSON: {error}; nothing was run") from None
    spec = expect(parse_context(raw, str(path)), "", "nothing was run: fix the context file")
    stem = path.name.removesuffix(".json") or "context"
    return load_context(spec, path.parent, str(path), _label_of(stem))


def _label_of(stem: str) -> str:
    """A file name as a label: the characters a label may hold, at most 64."""
    kept = "".join(c if c.isalnum() or c in "_.-" else "-" for c in stem).lstrip("_.-")[:64]
    return kept or "context"


def arm_contexts(
    context_file: Path | None, variants: VariantsPlan | None, variants_file: Path | None
) -> dict[str | None, LoadedContext]:
    """Each arm's context, read before the first run: ``--context``'s for a plain run (key ``None``), each
    variant's own for ``eval variants`` (by variant id; a variant without one has none).

    Raises:
        CommandError: ``--context`` with a variants file (declare a context per variant instead), or a
            context that ``load_context`` refuses.
    """
    if variants is None:
        return {} if context_file is None else {None: read_context(context_file)}
    if context_file is not None:
        raise CommandError(
            '--context applies to one arm: with --variants give each variant its own "context" in '
            f"{variants_file}; nothing was run"
        )
    base = variants_file.parent if variants_file is not None else Path()
    return {
        v.id: load_context(v.context, base, f"{variants_file}: variant {v.id}", v.id)
        for v in variants.variants
        if v.context is not None
    }


def check_context_agents(
    contexts: Mapping[str | None, LoadedContext],
    arm_agents: Mapping[str | None, str | None],
    tasks: Sequence[Task],
    external: Sequence[ExternalAgent],
    source: Mapping[str | None, str],
    granted: frozenset[Effect] = frozenset(),
) -> None:
    """Refuse, before the first run, a context an arm's agent cannot take.

    ``system`` reaches the built-in agent only (an external agent reads files: the refusal names them);
    ``home`` reaches an external agent's private HOME only (the built-in agent has none: use ``workspace``);
    ``mcp`` goes through the agents' MCP seam (``mcp_servers_for``): the built-in agent needs ``process`` among
    the ``granted`` effects, an external agent a preset that writes MCP servers into its configuration.

    Args:
        arm_agents: each arm's agent override (``--agent`` or the variant's; ``None``: each task's own).
        source: what names each arm's context in messages.

    Raises:
        CommandError: one line naming the file, the variant, the field and the agent.
    """
    kinds = {agent.name: agent.kind for agent in external}
    for arm, context in contexts.items():
        names = {arm_agents.get(arm) or task.agent for task in tasks}
        for name in sorted(names, key=lambda n: n or ""):
            kind = kinds.get(name) if name is not None else None
            agent = name or "the built-in agent"
            if kind is not None and context.system is not None:
                raise _fail(
                    source[arm],
                    "context.system",
                    f"agent {agent} ({kind}) is external: alisio does not write its system prompt; it reads "
                    f"{instructions_text(kind)}",
                )
            if kind is None and context.home:
                raise _fail(
                    source[arm],
                    "context.home",
                    f"{agent} has no HOME of its own (home is for external agents): put the files in "
                    '"workspace", or its text in "system"',
                )
            if context.mcp:
                _check_mcp(context, kind, granted, source[arm])


def mcp_servers_for(context: LoadedContext | None) -> dict[str, tuple[str, ...]]:
    """A context's MCP servers as the agents' MCP seam takes them: server name -> argv; a server with ``env``
    starts through ``env NAME=VALUE ...`` (the seam carries an argv only)."""
    if context is None:
        return {}
    return {
        server.name: ("env", *(f"{k}={v}" for k, v in server.env), *server.command)
        if server.env
        else server.command
        for server in context.mcp
    }


def _check_mcp(context: LoadedContext, kind: str | None, granted: frozenset[Effect], source: str) -> None:
    """A context's MCP servers: the built-in agent starts each (a process: ``--allow-process``,
    ``mcp_grant_problem``); an external agent gets them in its own configuration, where its preset has one
    (``mcp_config.mcp_refusal``).

    Raises:
        CommandError: one line naming the file, the variant, the field, the servers and why.
    """
    from alisio.core.agents.mcp_config import mcp_refusal
    from alisio.core.harness.mcp import mcp_grant_problem

    names = [server.name for server in context.mcp]
    problem = (
        mcp_grant_problem(names, granted) if kind is None else mcp_refusal(kind, mcp_servers_for(context))
    )
    if problem is not None:
        raise _fail(source, "context.mcp", problem)


def check_protected(
    contexts: Mapping[str | None, LoadedContext],
    tasks: Sequence[Task],
    fixture_dir: Callable[[Task], Path],
    source: Mapping[str | None, str],
) -> None:
    """Refuse, before the first run, a context whose workspace files would land on what a task's verifiers
    read (its protected files and directories, ``alisio.core.lab.judges.integrity.protected_of``): a context
    adds to what the agent sees, never changes what judges it.

    Raises:
        CommandError: one line naming the file, the variant, the field, the path and the task.
    """
    from alisio.core.lab.judges.integrity import protected_of

    for arm, context in contexts.items():
        if not context.workspace:
            continue
        added = [file.path for file in context.workspace]
        for task in tasks:
            root = fixture_dir(task)
            present = [
                p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()
            ]
            files, directories = protected_of(task, [*present, *added])
            for path in added:
                if path in files or any(path.startswith(f"{d.rstrip('/')}/") for d in directories):
                    raise _fail(
                        source[arm],
                        "context.workspace",
                        f"{path} is read by the verifiers of task {task.id} (a protected file): a context adds "
                        "to what the agent sees, never changes what judges it",
                    )
