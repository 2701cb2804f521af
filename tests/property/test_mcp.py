"""The MCP tools as data (``alisio.core.harness.mcp``): names, listings, config.toml's servers."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.harness.events import Effect
from alisio.core.harness.mcp import (
    mcp_arguments,
    mcp_definitions,
    mcp_grant_problem,
    offered_name,
    parse_mcp_config,
    server_name_problem,
    split_name,
)

SERVER = st.from_regex(r"[A-Za-z0-9-]{1,10}(_[A-Za-z0-9-]{1,10})?", fullmatch=True)
TOOL = st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True)


@given(SERVER, TOOL)
def test_an_offered_name_splits_back_into_its_server_and_tool(server: str, tool: str) -> None:
    assert server_name_problem(server) is None
    assert split_name(offered_name(server, tool)) == (server, tool)


@given(st.text(max_size=30))
def test_a_name_without_the_prefix_is_no_mcp_tool(name: str) -> None:
    if not name.startswith("mcp__"):
        assert split_name(name) is None


@given(
    st.lists(st.tuples(SERVER, st.lists(TOOL, max_size=4, unique=True)), max_size=4, unique_by=lambda x: x[0])
)
def test_the_listing_is_sorted_and_independent_of_the_servers_order(
    servers: list[tuple[str, list[str]]],
) -> None:
    listed = [
        (server, [(tool, f"does {tool}", {"type": "object"}) for tool in tools]) for server, tools in servers
    ]
    forward, backward = mcp_definitions(listed), mcp_definitions(list(reversed(listed)))
    assert forward == backward
    names = [definition.name for definition in forward.definitions]
    assert names == sorted(names)
    assert all(definition.effect is Effect.PROCESS for definition in forward.definitions)
    for name, target in forward.targets:
        assert offered_name(target.server, target.name) == name


def test_a_tool_whose_offered_name_is_too_long_is_left_out_and_named() -> None:
    listing = mcp_definitions([("docs", [("x" * 60, None, None), ("ok", None, None)])])
    assert [d.name for d in listing.definitions] == ["mcp__docs__ok"]
    assert listing.definitions[0].description == "The ok tool of the MCP server docs."
    assert json.loads(listing.definitions[0].parameters_json) == {"properties": {}, "type": "object"}
    assert len(listing.skipped) == 1 and "x" * 60 in listing.skipped[0]


def test_arguments_must_be_a_json_object() -> None:
    assert mcp_arguments("mcp__a__b", "").unwrap() == {}
    assert mcp_arguments("mcp__a__b", '{"x": 1}').unwrap() == {"x": 1}
    assert isinstance(mcp_arguments("mcp__a__b", "[1]"), Failure)
    assert isinstance(mcp_arguments("mcp__a__b", "{"), Failure)


def test_config_servers_are_checked_and_sorted() -> None:
    parsed = parse_mcp_config({"servers": {"b": {"command": ["x"]}, "a": {"command": ["y", "z"]}}}, "c.toml")
    assert isinstance(parsed, Success)
    assert [(s.name, s.command) for s in parsed.unwrap()] == [("a", ("y", "z")), ("b", ("x",))]
    bad = parse_mcp_config({"servers": {"a__b": {"command": ["x"]}}}, "c.toml")
    assert str(bad.failure()).startswith("c.toml: mcp.servers.a__b: an MCP server name")
    empty = parse_mcp_config({"servers": {"a": {"command": []}}}, "c.toml")
    assert str(empty.failure()).startswith("c.toml: mcp.servers.a.command: command must be")


def test_servers_need_the_process_grant() -> None:
    assert mcp_grant_problem([], frozenset()) is None
    assert mcp_grant_problem(["docs"], frozenset({Effect.PROCESS})) is None
    assert "(docs)" in (mcp_grant_problem(["docs"], frozenset({Effect.READ})) or "")
