"""MCP servers given to an external agent: written into the agent's own configuration, in its own format.

Each preset that supports MCP reads its stdio servers from a file of its run directory (its private HOME or
configuration directory, never the user's). Its record says where and in what shape (``Preset.places.mcp``,
an ``McpPlace``: file, key, format, entry, fixed settings and variables) and is the only place that says it:
``mcp_place`` reads it from the record, ``with_mcp_servers`` merges a run's servers into the invocation's files
(into the file the preset already writes, or a new one) and adds the place's variables (Claude Code's
``MCP_CONNECTION_NONBLOCKING=0``, ``MCP_CONNECT_TIMEOUT_MS`` and ``MCP_TIMEOUT``, so it waits for them):

| preset | file (under the run directory) | key | one server |
|---|---|---|---|
| ``claude-code`` | ``claude/.claude.json`` (``CLAUDE_CONFIG_DIR``'s user configuration) | ``mcpServers`` | ``{"type": "stdio", "command": P, "args": [...]}`` |
| ``codex`` | ``codex-home/config.toml`` (``CODEX_HOME``) | ``[mcp_servers.NAME]`` | ``command = P``, ``args = [...]``, ``required = true``, ``startup_timeout_sec = 60`` |
| ``opencode`` | ``opencode.json`` (``OPENCODE_CONFIG``) | ``mcp`` | ``{"type": "local", "command": [P, ...], "enabled": true}`` |
| ``gemini-cli`` | ``home/.gemini/settings.json`` | ``mcpServers`` | ``{"command": P, "args": [...]}`` |

aider has no MCP client (its record's ``NoMcp``), and a command agent has no known configuration: a run that
gives either MCP servers is refused (``mcp_refusal``) rather than run without them. An external agent starts
its servers itself, in its own process tree (inside its sandbox under ``--sandbox bwrap``); their tool calls
reach the lab through the model's responses like the agent's other tools (names such as ``mcp__docs__lookup``
for Claude Code).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Final

import msgspec

from alisio.core.agents.external import preset_of
from alisio.core.agents.presets import Invocation, McpEntry, McpPlace, NoMcp

__all__ = ["mcp_place", "mcp_refusal", "with_mcp_servers"]

_COMMAND_AGENT: Final = "a command agent has no MCP configuration alisio knows how to write"


def mcp_place(kind: str) -> McpPlace | NoMcp:
    """Where an agent of ``kind`` reads its MCP servers: its preset record's, or why it reads none."""
    preset = preset_of(kind)
    if preset is not None:
        return preset.places.mcp
    return NoMcp(why=_COMMAND_AGENT if kind == "command" else f"alisio knows no agent kind {kind!r}")


def mcp_refusal(kind: str, servers: Mapping[str, Sequence[str]]) -> str | None:
    """Why a run of an agent of ``kind`` cannot be given ``servers``, or ``None`` (no servers, or a place)."""
    place = mcp_place(kind)
    if not servers or isinstance(place, McpPlace):
        return None
    names = ", ".join(sorted(servers))
    return f"MCP servers ({names}) cannot be given to this agent: {place.why}"


def _entry(entry: McpEntry, argv: Sequence[str]) -> dict[str, object]:
    match entry:
        case "stdio":
            return {"type": "stdio", "command": argv[0], "args": list(argv[1:])}
        case "split":
            return {"command": argv[0], "args": list(argv[1:])}
        case "local":
            return {"type": "local", "command": list(argv), "enabled": True}


def _toml_value(value: object) -> str:
    """A TOML value of a string, a bool, an int or a list of them. A string is a basic string: JSON's escapes
    are TOML's, and TOML also refuses DEL written as it is."""
    if isinstance(value, list):
        return f"[{', '.join(_toml_value(item) for item in value)}]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _server(place: McpPlace, argv: Sequence[str]) -> dict[str, object]:
    return {**_entry(place.entry, argv), **dict(place.settings)}


def _toml_tables(place: McpPlace, servers: Mapping[str, Sequence[str]]) -> str:
    lines: list[str] = []
    for name in sorted(servers):
        lines.append(f"\n[{place.key}.{_toml_value(name)}]")
        lines += [f"{field} = {_toml_value(value)}" for field, value in _server(place, servers[name]).items()]
    return "\n".join(lines) + "\n"


def _merged(place: McpPlace, text: str | None, servers: Mapping[str, Sequence[str]]) -> str:
    if place.format == "toml":
        head = text or "# written by alisio for one run\n"
        return head + _toml_tables(place, servers)
    document: dict[str, object] = json.loads(text) if text else {}
    table = dict(document.get(place.key) or {})  # type: ignore[call-overload]
    table.update({name: _server(place, servers[name]) for name in sorted(servers)})
    document[place.key] = table
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def with_mcp_servers(
    place: McpPlace,
    inv: Invocation,
    servers: Mapping[str, Sequence[str]],
    run_dir: str,
    binds: Sequence[str] = (),
) -> Invocation:
    """``inv`` with ``servers`` (name -> argv) in the preset's MCP configuration file under ``run_dir``, and
    the place's ``env`` after the invocation's variables.

    Args:
        place: the preset record's ``places.mcp`` (``mcp_place``).
        binds: host paths the servers' commands need inside the agent's sandbox (added to ``host_paths``).
    """
    if not servers:
        return inv
    path = f"{run_dir}/{place.file}"
    files = dict(inv.files)
    files[path] = _merged(place, files.get(path), servers)
    host_paths = tuple(dict.fromkeys((*inv.host_paths, *binds)))
    env = (*inv.env, *place.env)
    return msgspec.structs.replace(inv, env=env, files=tuple(files.items()), host_paths=host_paths)
