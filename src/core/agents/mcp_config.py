"""MCP servers given to an external agent: written into the agent's own configuration, in its own format.

Each preset that supports MCP reads its stdio servers from a file of its run directory (its private HOME or
configuration directory, never the user's); ``MCP_WRITERS`` says where and in what shape, and
``with_mcp_servers`` merges a run's servers into the invocation's files (into the file the preset already
writes, or a new one):

| preset | file (under the run directory) | key | one server |
|---|---|---|---|
| ``claude-code`` | ``claude/.claude.json`` (``CLAUDE_CONFIG_DIR``'s user configuration) | ``mcpServers`` | ``{"type": "stdio", "command": P, "args": [...]}`` |
| ``codex`` | ``codex-home/config.toml`` (``CODEX_HOME``) | ``[mcp_servers.NAME]`` | ``command = P``, ``args = [...]``, ``required = true`` |
| ``opencode`` | ``opencode.json`` (``OPENCODE_CONFIG``) | ``mcp`` | ``{"type": "local", "command": [P, ...], "enabled": true}`` |
| ``gemini-cli`` | ``home/.gemini/settings.json`` | ``mcpServers`` | ``{"command": P, "args": [...]}`` |

aider has no MCP client, and a command agent has no known configuration: a run that gives either MCP servers
is refused (``mcp_refusal``) rather than run without them. An external agent starts its servers itself, in
its own process tree (inside its sandbox under ``--sandbox bwrap``); their tool calls reach the lab through
the model's responses like the agent's other tools (names such as ``mcp__docs__lookup`` for Claude Code).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Final, Literal

import msgspec

from alisio.core.agents.presets import Invocation
from alisio.core.base import Frozen

__all__ = ["MCP_WRITERS", "McpWriter", "mcp_refusal", "with_mcp_servers"]

Entry = Literal["stdio", "split", "local"]
"""How one server is written: ``stdio`` Claude Code's (a type, the program, its arguments), ``split`` the
program and its arguments apart (Codex, Gemini CLI), ``local`` OpenCode's (one argv list, enabled)."""


class McpWriter(Frozen, frozen=True, kw_only=True):
    """Where and how one preset reads its MCP servers."""

    file: str
    """Relative to the run directory."""
    key: str
    """The object (JSON) or table (TOML) holding the servers by name."""
    format: Literal["json", "toml"]
    entry: Entry


MCP_WRITERS: Final[Mapping[str, McpWriter]] = {
    "claude-code": McpWriter(file="claude/.claude.json", key="mcpServers", format="json", entry="stdio"),
    "codex": McpWriter(file="codex-home/config.toml", key="mcp_servers", format="toml", entry="split"),
    "opencode": McpWriter(file="opencode.json", key="mcp", format="json", entry="local"),
    "gemini-cli": McpWriter(
        file="home/.gemini/settings.json", key="mcpServers", format="json", entry="split"
    ),
}
"""Each preset that supports MCP, by kind (a preset record may name its writer by this key)."""

_WITHOUT: Final[Mapping[str, str]] = {
    "aider": "aider has no MCP client",
    "command": "a command agent has no MCP configuration alisio knows how to write",
}


def mcp_refusal(kind: str, servers: Mapping[str, Sequence[str]]) -> str | None:
    """Why a run of an agent of ``kind`` cannot be given ``servers``, or ``None`` (no servers, or a writer)."""
    if not servers or kind in MCP_WRITERS:
        return None
    why = _WITHOUT.get(kind, f"alisio does not know where agent kind {kind!r} reads MCP servers")
    names = ", ".join(sorted(servers))
    return f"MCP servers ({names}) cannot be given to this agent: {why}"


def _entry(entry: Entry, argv: Sequence[str]) -> dict[str, object]:
    match entry:
        case "stdio":
            return {"type": "stdio", "command": argv[0], "args": list(argv[1:])}
        case "split":
            return {"command": argv[0], "args": list(argv[1:])}
        case "local":
            return {"type": "local", "command": list(argv), "enabled": True}


def _toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, and TOML also refuses DEL written as it is."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


_CODEX_WAIT: Final = ("required = true", "startup_timeout_sec = 60")
"""Codex sends its first request without waiting for its MCP servers: measured, a server that took 4 s to
start was missing from the first request's tools; ``required`` makes it wait (and fail if the server does not
start), up to ``startup_timeout_sec``."""


def _toml_tables(key: str, servers: Mapping[str, Sequence[str]]) -> str:
    lines: list[str] = []
    for name in sorted(servers):
        argv = servers[name]
        args = ", ".join(_toml_string(arg) for arg in argv[1:])
        lines += [f"\n[{key}.{_toml_string(name)}]", f"command = {_toml_string(argv[0])}", f"args = [{args}]"]
        lines += _CODEX_WAIT
    return "\n".join(lines) + "\n"


def _merged(writer: McpWriter, text: str | None, servers: Mapping[str, Sequence[str]]) -> str:
    if writer.format == "toml":
        head = text or "# written by alisio for one run\n"
        return head + _toml_tables(writer.key, servers)
    document: dict[str, object] = json.loads(text) if text else {}
    table = dict(document.get(writer.key) or {})  # type: ignore[call-overload]
    table.update({name: _entry(writer.entry, servers[name]) for name in sorted(servers)})
    document[writer.key] = table
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def with_mcp_servers(
    writer: McpWriter,
    inv: Invocation,
    servers: Mapping[str, Sequence[str]],
    run_dir: str,
    binds: Sequence[str] = (),
) -> Invocation:
    """``inv`` with ``servers`` (name -> argv) in the preset's MCP configuration file under ``run_dir``.

    Args:
        binds: host paths the servers' commands need inside the agent's sandbox (added to ``host_paths``).
    """
    if not servers:
        return inv
    path = f"{run_dir}/{writer.file}"
    files = dict(inv.files)
    files[path] = _merged(writer, files.get(path), servers)
    host_paths = tuple(dict.fromkeys((*inv.host_paths, *binds)))
    return msgspec.structs.replace(inv, files=tuple(files.items()), host_paths=host_paths)
