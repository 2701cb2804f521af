"""Hypothesis strategies for tool calls: argument objects drawn from a tool's own JSON schema."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import strategies as st

from alisio.core.harness.tooldefs import TOOLS, ToolDefinition


def _value(prop: dict[str, Any]) -> st.SearchStrategy[Any]:
    match prop["type"]:
        case "string":
            return st.text(max_size=40)
        case "integer":
            return st.integers(prop.get("minimum", -(2**31)), prop.get("maximum", 2**31))
    raise AssertionError(f"no strategy for schema type {prop['type']!r}")


@st.composite
def valid_arguments(draw: st.DrawFn, tool: ToolDefinition) -> dict[str, Any]:
    """An arguments object the tool's schema accepts: every required property, any subset of the others."""
    schema = msgspec.json.decode(tool.parameters_json)
    required = set(schema.get("required", ()))
    arguments: dict[str, Any] = {}
    for name, prop in sorted(schema["properties"].items()):
        if name in required or draw(st.booleans()):
            arguments[name] = draw(_value(prop))
    return arguments


tools = st.sampled_from(TOOLS)
"""Any one of the harness's tools."""

tool_calls = tools.flatmap(lambda tool: st.tuples(st.just(tool), valid_arguments(tool)))
"""A tool and a schema-valid arguments object for it."""


json_keys = st.text(alphabet='abAB_z0é "\\', max_size=4)
json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(json_keys, inner, max_size=4),
    max_leaves=12,
)
"""JSON values without floats (whose text forms differ between encoders), keys that sort in tricky orders."""
