"""MCP servers written into external agents' own configuration (``alisio.core.agents.mcp_config``)."""

from __future__ import annotations

import json
import tomllib

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.agents.mcp_config import mcp_place, mcp_refusal, with_mcp_servers
from alisio.core.agents.presets import Invocation, McpPlace


def _place(kind: str) -> McpPlace:
    place = mcp_place(kind)
    assert isinstance(place, McpPlace), kind
    return place


NAME = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,15}", fullmatch=True)
ARG = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), min_size=1, max_size=20)
SERVERS = st.dictionaries(NAME, st.lists(ARG, min_size=1, max_size=4).map(tuple), min_size=1, max_size=3)
BASE = Invocation(argv=("agent",), env=())


@given(SERVERS)
def test_codex_reads_back_every_server_from_its_toml(servers: dict[str, tuple[str, ...]]) -> None:
    start = Invocation(argv=("codex",), env=(), files=(("/r/codex-home/config.toml", "# alisio\n"),))
    inv = with_mcp_servers(_place("codex"), start, servers, "/r")
    ((path, text),) = inv.files
    assert path == "/r/codex-home/config.toml" and text.startswith("# alisio\n")
    table = tomllib.loads(text)["mcp_servers"]
    assert {name: (entry["command"], *entry["args"]) for name, entry in table.items()} == servers
    # Codex waits for each server before its first request (and fails if one does not start)
    assert all((e["required"], e["startup_timeout_sec"]) == (True, 60) for e in table.values())


@given(SERVERS)
def test_gemini_cli_keeps_its_settings_and_gets_split_servers(servers: dict[str, tuple[str, ...]]) -> None:
    settings = json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    start = Invocation(argv=("gemini",), env=(), files=(("/r/home/.gemini/settings.json", settings),))
    ((path, text),) = with_mcp_servers(_place("gemini-cli"), start, servers, "/r").files
    document = json.loads(text)
    assert path == "/r/home/.gemini/settings.json"
    assert document["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    assert document["mcpServers"] == {n: {"command": a[0], "args": list(a[1:])} for n, a in servers.items()}


@given(SERVERS)
def test_opencode_keeps_its_provider_and_gets_local_servers(servers: dict[str, tuple[str, ...]]) -> None:
    config = json.dumps({"provider": {"local": {}}, "model": "local/m"})
    start = Invocation(argv=("opencode",), env=(), files=(("/r/opencode.json", config),))
    ((_, text),) = with_mcp_servers(_place("opencode"), start, servers, "/r").files
    document = json.loads(text)
    assert document["provider"] == {"local": {}} and document["model"] == "local/m"
    assert document["mcp"] == {
        n: {"type": "local", "command": list(a), "enabled": True} for n, a in servers.items()
    }


@given(SERVERS)
def test_claude_code_gets_a_user_configuration_with_stdio_servers_and_waits_for_them(
    servers: dict[str, tuple[str, ...]],
) -> None:
    start = Invocation(argv=("claude",), env=(("HOME", "/r/home"), ("MCP_TIMEOUT", "1")))
    inv = with_mcp_servers(_place("claude-code"), start, servers, "/r", binds=["/opt/venv"])
    ((path, text),) = inv.files
    assert path == "/r/claude/.claude.json" and inv.host_paths == ("/opt/venv",)
    expected = {n: {"type": "stdio", "command": a[0], "args": list(a[1:])} for n, a in servers.items()}
    assert json.loads(text) == {"mcpServers": expected}
    # print mode waits for its servers before its first request, up to 60 s (the last value of a name wins)
    assert dict(inv.env) == {
        "HOME": "/r/home",
        "MCP_CONNECTION_NONBLOCKING": "0",
        "MCP_CONNECT_TIMEOUT_MS": "60000",
        "MCP_TIMEOUT": "60000",
    }


def test_no_servers_change_nothing_and_agents_without_mcp_are_refused() -> None:
    assert with_mcp_servers(_place("codex"), BASE, {}, "/r") == BASE
    assert with_mcp_servers(_place("claude-code"), BASE, {}, "/r") == BASE  # no variables without servers
    assert mcp_refusal("aider", {}) is None
    assert mcp_refusal("codex", {"docs": ("x",)}) is None
    assert mcp_refusal("aider", {"docs": ("x",)}) == (
        "MCP servers (docs) cannot be given to this agent: aider has no MCP client"
    )
    assert mcp_refusal("command", {"b": ("x",), "a": ("y",)}) == (
        "MCP servers (a, b) cannot be given to this agent: "
        "a command agent has no MCP configuration alisio knows how to write"
    )
