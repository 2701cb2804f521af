"""Properties of alisio.core.harness.tooldefs: the tool contract (names, effects, schemas) and argument decoding."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.harness.events import Effect
from alisio.core.harness.tooldefs import (
    ARGUMENT_TYPES,
    TOOL_NAMES,
    TOOLS,
    ToolArgumentError,
    ToolDefinition,
    UnknownToolError,
    canonical_json,
    decode_arguments,
    effect_of,
    tool_definition,
    tool_specs,
)
from tests.property.strategies_tooldefs import json_values, tool_calls, tools

CONTRACT = {
    "read_file": (Effect.READ, {"path"}, {"offset", "limit"}),
    "list_dir": (Effect.READ, {"path"}, set()),
    "search": (Effect.READ, {"pattern"}, {"path"}),
    "write_file": (Effect.WRITE, {"path", "content"}, set()),
    "edit_file": (Effect.WRITE, {"path", "old_string", "new_string"}, {"sha256"}),
    "bash": (Effect.PROCESS, {"command"}, {"timeout_ms"}),
    "fetch_url": (Effect.EXTERNAL, {"url"}, set()),
    "analyze": (Effect.ANALYSIS, set(), {"path"}),
}
"""DESIGN.md's tool table: name -> (effect, required arguments, optional arguments). A user-facing contract."""


def _schema(tool: ToolDefinition) -> dict[str, Any]:
    schema: dict[str, Any] = msgspec.json.decode(tool.parameters_json)
    return schema


def test_tools_match_the_design_contract() -> None:
    """Every tool of DESIGN.md exists once, with its effect and exactly its required and optional arguments."""
    assert tuple(CONTRACT) == TOOL_NAMES
    for tool in TOOLS:
        effect, required, optional = CONTRACT[tool.name]
        schema = _schema(tool)
        assert tool.effect is effect
        assert effect_of(tool.name) is effect
        assert set(schema.get("required", ())) == required
        assert set(schema["properties"]) == required | optional


@pytest.mark.parametrize("tool", TOOLS, ids=TOOL_NAMES)
def test_schema_and_arguments_struct_agree(tool: ToolDefinition) -> None:
    """The JSON schema the model sees describes the Struct that decodes the arguments: same fields, same
    required set, same types, no extra properties."""
    schema = _schema(tool)
    info = msgspec.inspect.type_info(ARGUMENT_TYPES[tool.name])
    assert isinstance(info, msgspec.inspect.StructType)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert {f.encode_name for f in info.fields} == set(schema["properties"])
    assert {f.encode_name for f in info.fields if f.required} == set(schema.get("required", ()))
    for field in info.fields:
        kind = field.type
        if isinstance(kind, msgspec.inspect.UnionType):
            kind = next(t for t in kind.types if not isinstance(t, msgspec.inspect.NoneType))
        expected = {msgspec.inspect.StrType: "string", msgspec.inspect.IntType: "integer"}[type(kind)]
        prop = schema["properties"][field.encode_name]
        assert prop["type"] == expected
        assert prop["description"]
        if isinstance(kind, msgspec.inspect.IntType):
            assert prop.get("minimum") == kind.ge
            assert prop.get("maximum") == kind.le


@pytest.mark.parametrize("tool", TOOLS, ids=TOOL_NAMES)
def test_schema_is_canonical_json(tool: ToolDefinition) -> None:
    """The schema text is canonical: re-encoding it with sorted keys gives the same text."""
    reencoded = msgspec.json.Encoder(order="deterministic").encode(_schema(tool)).decode()
    assert tool.parameters_json == reencoded
    assert tool.spec().parameters_json == tool.parameters_json


def test_edit_file_description_states_its_preconditions() -> None:
    """The model is told that edit_file needs a prior read (or the sha256) and exactly one match."""
    description = tool_definition("edit_file").description  # type: ignore[union-attr]
    for phrase in ("read_file", "sha256", "exactly once", "more than once", "absent"):
        assert phrase in description


@given(tool_calls)
def test_schema_valid_arguments_decode(call: tuple[ToolDefinition, dict[str, Any]]) -> None:
    """Any arguments object the schema accepts decodes, field for field."""
    tool, arguments = call
    result = decode_arguments(tool.name, msgspec.json.encode(arguments).decode())
    assert isinstance(result, Success)
    decoded = result.unwrap()
    assert isinstance(decoded, ARGUMENT_TYPES[tool.name])
    for name, value in arguments.items():
        assert getattr(decoded, name) == value


@given(tool_calls, st.text(min_size=1, max_size=12))
def test_unknown_argument_is_refused_by_name(call: tuple[ToolDefinition, dict[str, Any]], extra: str) -> None:
    """An argument the schema does not list is an error naming it, not silently dropped."""
    tool, arguments = call
    if extra in _schema(tool)["properties"]:
        return
    result = decode_arguments(tool.name, msgspec.json.encode({**arguments, extra: 1}).decode())
    assert isinstance(result, Failure)
    assert "unknown field" in result.failure().message
    assert result.failure().message.startswith(f"invalid arguments for {tool.name}: ")


@given(tool_calls, st.data())
def test_missing_required_argument_is_named(
    call: tuple[ToolDefinition, dict[str, Any]], data: st.DataObject
) -> None:
    """Leaving out a required argument is an error that names the missing field."""
    tool, arguments = call
    required = sorted(_schema(tool).get("required", ()))
    if not required:
        return
    missing = data.draw(st.sampled_from(required))
    del arguments[missing]
    result = decode_arguments(tool.name, msgspec.json.encode(arguments).decode())
    assert isinstance(result, Failure)
    assert f"missing required field `{missing}`" in result.failure().message


@given(tool_calls, st.data())
def test_wrong_type_is_named_with_its_path(
    call: tuple[ToolDefinition, dict[str, Any]], data: st.DataObject
) -> None:
    """A value of the wrong type is an error naming the argument's path ($.name)."""
    tool, arguments = call
    if not arguments:
        return
    name = data.draw(st.sampled_from(sorted(arguments)))
    arguments[name] = [arguments[name]]
    result = decode_arguments(tool.name, msgspec.json.encode(arguments).decode())
    assert isinstance(result, Failure)
    assert f"$.{name}" in result.failure().message


@given(tools, st.text(max_size=30))
def test_decoding_never_raises(tool: ToolDefinition, text: str) -> None:
    """Whatever text the model sends as arguments, decoding returns a Result (invalid JSON is an error value)."""
    result = decode_arguments(tool.name, text)
    assert isinstance(result, Success | Failure)
    if isinstance(result, Failure):
        assert isinstance(result.failure(), ToolArgumentError)
        assert result.failure().tool == tool.name


@pytest.mark.parametrize("text", ["", "   ", "{}"])
def test_empty_arguments_mean_no_arguments(text: str) -> None:
    """A tool with only optional arguments accepts an empty arguments string (some models send one)."""
    assert isinstance(decode_arguments("analyze", text), Success)
    failure = decode_arguments("read_file", text)
    assert isinstance(failure, Failure)
    assert "missing required field `path`" in failure.failure().message


def test_invalid_json_and_unknown_tool_are_explained() -> None:
    """Truncated JSON says it is not valid JSON; an unknown tool lists the known ones."""
    truncated = decode_arguments("bash", '{"command": "ls')
    assert isinstance(truncated, Failure)
    assert "not valid JSON" in truncated.failure().message
    unknown = decode_arguments("rm_rf", "{}")
    assert isinstance(unknown, Failure)
    assert "'rm_rf'" in unknown.failure().message
    assert all(name in unknown.failure().message for name in TOOL_NAMES)
    assert effect_of("rm_rf") is None
    assert tool_definition("rm_rf") is None


def test_bash_timeout_bounds_are_enforced() -> None:
    """timeout_ms must be between 1 and 600000, as the schema says."""
    assert isinstance(decode_arguments("bash", '{"command": "true", "timeout_ms": 600000}'), Success)
    for bad in ("0", "600001", "-5", "1.5"):
        result = decode_arguments("bash", f'{{"command": "true", "timeout_ms": {bad}}}')
        assert isinstance(result, Failure)
        assert "$.timeout_ms" in result.failure().message


def test_all_specs_in_canonical_order() -> None:
    """tool_specs() offers every tool, in TOOLS order."""
    specs = tool_specs().unwrap()
    assert tuple(spec.name for spec in specs) == TOOL_NAMES


@given(st.lists(st.sampled_from(TOOL_NAMES)))
def test_subset_specs_are_canonical_and_deduplicated(names: list[str]) -> None:
    """A subset comes back in TOOLS order, each tool once, whatever order and repetitions were asked for."""
    specs = tool_specs(names).unwrap()
    assert tuple(spec.name for spec in specs) == tuple(name for name in TOOL_NAMES if name in names)
    assert tool_specs(reversed(names)).unwrap() == specs


@given(st.lists(st.sampled_from(TOOL_NAMES)), st.text(min_size=1, max_size=10))
def test_unknown_name_in_subset_fails_naming_it(names: list[str], unknown: str) -> None:
    """A subset naming a tool the harness lacks is a Failure that names it (never silently dropped)."""
    if unknown in TOOL_NAMES:
        return
    result = tool_specs([*names, unknown])
    assert isinstance(result, Failure)
    error = result.failure()
    assert isinstance(error, UnknownToolError)
    assert error.name == unknown
    assert repr(unknown) in str(error)


def _pairs_sorted(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    assert keys == sorted(keys)
    return dict(pairs)


@given(json_values)
def test_canonical_json_sorts_keys_at_every_depth_without_whitespace(value: Any) -> None:
    """canonical_json is the value with sorted keys (every object) and no whitespace between tokens."""
    text = canonical_json(value)
    assert json.loads(text, object_pairs_hook=_pairs_sorted) == value
    assert text == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@given(json_values)
def test_canonical_json_is_idempotent_and_ignores_key_order(value: Any) -> None:
    """Re-encoding canonical text gives the same text, and so does encoding the keys in reverse order."""
    text = canonical_json(value)
    assert canonical_json(json.loads(text)) == text
    if isinstance(value, dict):
        assert canonical_json(dict(reversed(value.items()))) == text
