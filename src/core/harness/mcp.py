"""MCP servers as data: which servers a run is given, and their tools as the built-in agent offers them.

A run may be given MCP servers (stdio: a command and its arguments), from ``[mcp.servers.NAME]`` in
config.toml or from a context's ``mcp`` field. The shell (``alisio.shell.harness.mcp_client``) starts each
server, lists its tools and carries out the calls; this module holds what is decided about them as values.

Rules this module keeps:
- a server name is 1-32 letters, digits, ``_`` or ``-`` and never contains ``__`` (the separator of the tool
  names), so ``mcp__<server>__<tool>`` names one server's tool without ambiguity;
- a server's tool is offered as ``mcp__<server>__<tool>``, with the server's description and input schema
  (canonical JSON, so the request fingerprint does not depend on the server's key order); a tool whose
  offered name would not be a valid tool name for every wire format (``^[A-Za-z0-9_-]{1,64}$``) is left
  out, and ``McpListing.skipped`` names it;
- every MCP tool has the ``process`` effect: the server is a process the run started, and what the tool does
  is up to it, so a call is mediated like ``bash`` (policy, grants, approval);
- the offered tools come after the harness's own, sorted by offered name, so the order servers are declared
  in never changes a request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.errors import ConfigError
from alisio.core.harness.events import Effect
from alisio.core.harness.protocol import ToolSpec
from alisio.core.harness.tooldefs import ToolArgumentError, ToolDefinition, canonical_json

__all__ = [
    "MCP_EFFECT",
    "MCP_PREFIX",
    "McpListing",
    "McpServer",
    "McpTool",
    "mcp_arguments",
    "mcp_config_data",
    "mcp_definitions",
    "mcp_grant_problem",
    "mcp_servers_from",
    "offered_name",
    "parse_mcp_config",
    "server_name_problem",
    "split_name",
]

MCP_PREFIX: Final = "mcp__"
MCP_EFFECT: Final = Effect.PROCESS
"""The effect of every MCP tool (the server is a process alisio started)."""

_SERVER_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_TOOL_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_DESCRIPTION_CHARS: Final = 4000
"""A server's tool description is cut to this many characters (the model reads it in every request)."""


class McpServer(Frozen, frozen=True, kw_only=True):
    """One stdio MCP server: its name and the argv that starts it."""

    name: str
    command: tuple[str, ...]


class McpTool(Frozen, frozen=True, kw_only=True):
    """A tool one server listed: its own name, description and input schema (canonical JSON text)."""

    server: str
    name: str
    description: str
    schema_json: str


class McpListing(Frozen, frozen=True, kw_only=True):
    """The tools offered to the model, and the listed tools left out (``skipped``: a line each)."""

    definitions: tuple[ToolDefinition, ...]
    targets: tuple[tuple[str, McpTool], ...]
    """offered name -> the server's tool it calls."""
    skipped: tuple[str, ...] = ()

    def target(self, offered: str) -> McpTool | None:
        return next((tool for name, tool in self.targets if name == offered), None)

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(definition.spec() for definition in self.definitions)


def server_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an MCP server, or ``None``."""
    if not _SERVER_NAME.match(name) or "__" in name:
        return (
            f"an MCP server name is 1-32 letters, digits, '_' or '-' without '__' (got {name!r}); "
            f"its tools are offered as {MCP_PREFIX}<server>__<tool>"
        )
    return None


def offered_name(server: str, tool: str) -> str:
    """The name the model calls a server's tool by."""
    return f"{MCP_PREFIX}{server}__{tool}"


def split_name(offered: str) -> tuple[str, str] | None:
    """``(server, tool)`` of an offered MCP tool name, or ``None`` when ``offered`` is not one."""
    if not offered.startswith(MCP_PREFIX):
        return None
    server, separator, tool = offered[len(MCP_PREFIX) :].partition("__")
    return (server, tool) if separator and server and tool else None


def _schema(raw: Mapping[str, Any] | None) -> str:
    """A tool's input schema as canonical JSON (an object schema; a missing one accepts any object)."""
    schema = dict(raw) if raw else {}
    schema.setdefault("type", "object")
    if schema.get("type") == "object":
        schema.setdefault("properties", {})
    return canonical_json(schema)


def mcp_definitions(
    listed: Iterable[tuple[str, Iterable[tuple[str, str | None, Mapping[str, Any] | None]]]],
) -> McpListing:
    """The tools to offer from what each server listed: ``(server, ((tool, description, schema), ...))``.

    Returns:
        The definitions in offered-name order, each server tool they call, and the tools left out.
    """
    found: dict[str, tuple[ToolDefinition, McpTool]] = {}
    skipped: list[str] = []
    for server, tools in listed:
        for tool, description, schema in tools:
            offered = offered_name(server, tool)
            if not _TOOL_NAME.match(offered):
                skipped.append(
                    f"MCP server {server!r}: tool {tool!r} left out: {offered!r} is not a valid tool name "
                    "(1-64 letters, digits, '_' or '-')"
                )
                continue
            text = (description or "").strip() or f"The {tool} tool of the MCP server {server}."
            mcp_tool = McpTool(server=server, name=tool, description=text, schema_json=_schema(schema))
            definition = ToolDefinition(
                name=offered,
                effect=MCP_EFFECT,
                description=text[:_DESCRIPTION_CHARS],
                parameters_json=mcp_tool.schema_json,
            )
            found[offered] = (definition, mcp_tool)
    ordered = sorted(found)
    return McpListing(
        definitions=tuple(found[name][0] for name in ordered),
        targets=tuple((name, found[name][1]) for name in ordered),
        skipped=tuple(skipped),
    )


def mcp_servers_from(servers: Mapping[str, Iterable[str]]) -> tuple[McpServer, ...]:
    """The seam's mapping (server name -> argv) as servers, sorted by name (the order never matters)."""
    return tuple(McpServer(name=name, command=tuple(servers[name])) for name in sorted(servers))


class _ServerBody(Frozen, frozen=True, kw_only=True, forbid_unknown_fields=True):
    command: tuple[str, ...]


def parse_mcp_config(data: object, source: str) -> Result[tuple[McpServer, ...], ConfigError]:
    """config.toml's ``[mcp.servers.NAME]`` tables (``command = ["python3", "server.py"]``), sorted by name."""
    if not isinstance(data, Mapping) or set(data) - {"servers"}:
        message = 'expected [mcp.servers.NAME] tables, each with command = ["program", "arg", ...]'
        return Failure(ConfigError(source=source, key="mcp", message=message))
    servers = data.get("servers", {})
    if not isinstance(servers, Mapping):
        message = 'expected tables [mcp.servers.NAME], each with command = ["program", "arg", ...]'
        return Failure(ConfigError(source=source, key="mcp.servers", message=message))
    out: list[McpServer] = []
    for name, body in sorted(servers.items()):
        key = f"mcp.servers.{name}"
        problem = server_name_problem(str(name))
        if problem is not None:
            return Failure(ConfigError(source=source, key=key, message=problem))
        try:
            parsed = msgspec.convert(body, _ServerBody)
        except msgspec.ValidationError as error:
            return Failure(ConfigError(source=source, key=key, message=f"{error}"))
        if not parsed.command or not all(part and "\0" not in part for part in parsed.command):
            message = "command must be a non-empty list of non-empty strings: the program, then its arguments"
            return Failure(ConfigError(source=source, key=f"{key}.command", message=message))
        out.append(McpServer(name=str(name), command=parsed.command))
    return Success(tuple(out))


def mcp_config_data(servers: Iterable[McpServer]) -> dict[str, object]:
    """``[mcp.servers.NAME]`` tables as config.toml holds them (``parse_mcp_config`` reads them back)."""
    return {"servers": {server.name: {"command": list(server.command)} for server in servers}}


def mcp_arguments(name: str, arguments: str) -> Result[dict[str, Any], ToolArgumentError]:
    """An MCP tool call's arguments: a JSON object (empty text is no arguments); the server checks the rest
    against its schema and answers a wrong argument with an error result the model reads."""
    text = arguments if arguments.strip() else "{}"
    try:
        decoded = msgspec.json.decode(text)
    except msgspec.DecodeError as error:
        message = f"invalid arguments for {name}: not valid JSON ({error})"
        return Failure(ToolArgumentError(tool=name, message=message))
    if not isinstance(decoded, dict):
        message = f"invalid arguments for {name}: expected a JSON object, got {type(decoded).__name__}"
        return Failure(ToolArgumentError(tool=name, message=message))
    return Success(decoded)


def mcp_grant_problem(names: Iterable[str], granted: frozenset[Effect]) -> str | None:
    """Why a run given the servers ``names`` cannot start them under the grants ``granted``, or ``None``."""
    listed = ", ".join(sorted(names))
    if not listed or MCP_EFFECT in granted:
        return None
    return (
        f"the MCP servers ({listed}) each run a process: grant the process effect with --allow-process "
        "(without it they are not started)"
    )
