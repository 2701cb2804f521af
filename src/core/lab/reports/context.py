"""A context as reports name it: the files and text it added, a label and a digest; whether a run used it.

A context (``alisio.core.lab.suites.context_spec``: declared in compare.json per variant, or with ``eval run
--context FILE``) adds files to each run's workspace or an external agent's HOME, MCP servers and system
text. Every report carries its ``ContextCondition`` (``Conditions.context``), and ``alisio.core.lab.reports.naming``
names it in every output.

Rules this module keeps:

- ``context_condition`` is what every report names: the label, and a digest over every file added (its
  area, destination and sha256), the system text and the MCP servers, so two contexts that differ in one
  byte compare as different conditions; the label is a name only, outside the digest.
- ``context_used`` decides whether a run used its context: some tool call's arguments name one of its
  files (a workspace file by its destination path, a home file by its path below the agent's own directory,
  ``.claude/skills/pdf/SKILL.md`` as ``skills/pdf/SKILL.md``), or a call went to one of its MCP servers
  (``mcp__<server>__<tool>``). An agent that loads a file into its prompt on its own, without a tool call,
  did not "use" it by this rule.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Final, Literal

import msgspec

from alisio.core.base import Frozen
from alisio.core.harness.events import Event, ToolCalled
from alisio.core.harness.tooldefs import arguments_text

__all__ = [
    "AREAS",
    "Area",
    "ContextCondition",
    "ContextFile",
    "McpServer",
    "context_condition",
    "context_names",
    "context_used",
    "home_name",
]

Area = Literal["workspace", "home"]
AREAS: Final[tuple[Area, ...]] = ("workspace", "home")
_ENCODER: Final = msgspec.json.Encoder(order="deterministic")


class McpServer(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One stdio MCP server a context gives the agent: its name, its command and its added environment."""

    name: str
    """Its tools reach the built-in agent as ``mcp__<name>__<tool>``."""
    command: tuple[str, ...]
    """The program and its arguments, as written (started in the workspace)."""
    env: tuple[tuple[str, str], ...] = ()
    """Variables added to the server's environment, sorted by name."""


class ContextFile(Frozen, frozen=True, kw_only=True):
    """One file a context adds, as reports name it."""

    area: Area
    path: str
    """Its destination, relative to the workspace or the agent's HOME (normalised, a file)."""
    sha256: str


class ContextCondition(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """The context of a report's runs: its label and the digest of everything it adds."""

    label: str
    digest: str
    """sha256 over the files (area, path, sha256), the system text and the MCP servers."""
    files: tuple[ContextFile, ...] = ()
    system_sha256: str | None = None
    """The sha256 of the ``system`` text (``None``: none)."""
    system_chars: int = 0
    mcp: tuple[str, ...] = ()
    """The MCP servers' names."""


class _DigestInput(Frozen, frozen=True, kw_only=True):
    files: tuple[ContextFile, ...]
    system: str | None
    mcp: tuple[McpServer, ...]


def context_condition(
    label: str, files: Iterable[ContextFile], system: str | None, mcp: Iterable[McpServer]
) -> ContextCondition:
    """The condition reports carry: ``files`` sorted by area and path, the digest over all of it."""
    ordered = tuple(sorted(files, key=lambda f: (AREAS.index(f.area), f.path)))
    servers = tuple(mcp)
    data = _ENCODER.encode(_DigestInput(files=ordered, system=system, mcp=servers))
    return ContextCondition(
        label=label,
        digest=hashlib.sha256(data).hexdigest(),
        files=ordered,
        system_sha256=hashlib.sha256(system.encode()).hexdigest() if system is not None else None,
        system_chars=len(system) if system is not None else 0,
        mcp=tuple(server.name for server in servers),
    )


def home_name(path: str) -> str:
    """How a home file is named in a call: below the agent's own directory (``.claude/skills/x/SKILL.md``
    -> ``skills/x/SKILL.md``, which is where ``CLAUDE_CONFIG_DIR`` or ``CODEX_HOME`` puts it); a path whose
    first part is not a dot-directory as it is."""
    head, _, rest = path.partition("/")
    return rest if head.startswith(".") and rest else path


def context_names(condition: ContextCondition) -> tuple[str, ...]:
    """The texts whose presence in a call's arguments means the call named one of the context's files."""
    names = [f.path if f.area == "workspace" else home_name(f.path) for f in condition.files]
    return tuple(dict.fromkeys(names))


def context_used(condition: ContextCondition, events: Iterable[Event]) -> bool:
    """Whether some tool call of the run named one of the context's files or went to one of its MCP
    servers (module docstring)."""
    names = context_names(condition)
    servers = tuple(f"mcp__{name}__" for name in condition.mcp)
    for event in events:
        if not isinstance(event, ToolCalled):
            continue
        if servers and event.name.startswith(servers):
            return True
        if names:
            text = arguments_text(event.arguments)
            if any(name in text for name in names):
                return True
    return False
