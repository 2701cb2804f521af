"""Properties of alisio.core.shape: it finds a problem exactly when msgspec would refuse the value."""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from alisio.core.lab.suites.suite import Budget, Suite, Task, TaskPolicy, Verifier, encode_suite
from alisio.core.shape import duplicate_keys, parse_msgspec_path, shape_problems
from tests.property.strategies_suite import dumps_repeating, heavy, json_values, objects_in, suites


def converts(value: Any, typ: Any) -> bool:
    try:
        msgspec.convert(value, typ)
    except msgspec.ValidationError:
        return False
    return True


@given(json_values, st.sampled_from([Budget, TaskPolicy, Verifier, Task, Suite, tuple[Verifier, ...]]))
def test_no_problem_exactly_when_msgspec_converts_random_json(value: Any, typ: Any) -> None:
    """shape_problems(v, T) == [] iff msgspec.convert(v, T) succeeds, for any JSON value."""
    assert (shape_problems(value, typ) == []) == converts(value, typ)


def nodes(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every path into a JSON value (the root excluded)."""
    children = (
        value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    )
    return [p for key, child in children for p in [(*path, key), *nodes(child, (*path, key))]]


@heavy
@given(suites(), st.data())
def test_no_problem_exactly_when_msgspec_converts_a_mutated_suite(suite: Suite, data: st.DataObject) -> None:
    """The same equivalence on valid suites with one node replaced by any JSON value."""
    raw = json.loads(encode_suite(suite))
    path = data.draw(st.sampled_from(nodes(raw)))
    mutated = copy.deepcopy(raw)
    parent = mutated
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = data.draw(json_values)
    assert (shape_problems(mutated, Suite) == []) == converts(mutated, Suite)


@given(st.lists(st.one_of(st.integers(0, 99), st.sampled_from(["a", "maxTurns", "x_y-z"])), max_size=5))
def test_msgspec_paths_parse_back(path: list[int | str]) -> None:
    """parse_msgspec_path reads the '- at `$...`' suffix msgspec writes back into segments."""
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    message = f"Expected `int`, got `str` - at `${text}`" if path else "Expected `int`, got `str`"
    assert parse_msgspec_path(message) == ("Expected `int`, got `str`", tuple(path))


@given(json_values)
def test_json_from_a_dict_has_no_duplicate_keys(value: Any) -> None:
    """Text written from decoded JSON (where no key can repeat) has no duplicate key."""
    assert duplicate_keys(json.dumps(value)) == []


@given(json_values.filter(lambda v: bool(objects_in(v))), json_values, st.data())
def test_a_repeated_key_is_found_at_its_path(value: Any, repeat: Any, data: st.DataObject) -> None:
    """A key written twice in any object is reported once, at the path of that key, however deep."""
    target = data.draw(st.sampled_from(objects_in(value)))
    node = value
    for key in target:
        node = node[key]
    text = dumps_repeating(value, target, repeat)
    assert duplicate_keys(text) == [
        ((*target, next(iter(node))), "duplicate key (only one value may be given)")
    ]
    assert duplicate_keys(text.encode()) == duplicate_keys(text)


def test_duplicate_keys_never_raises_on_junk_or_deep_nesting() -> None:
    """Not JSON is left to the decoder ([]); nesting past the recursion limit is one problem, no exception."""
    assert duplicate_keys(b"\xff{") == [] and duplicate_keys("{") == []
    deep = '{"a": ' * 100_000 + "1" + "}" * 100_000
    assert duplicate_keys(deep) == [((), "nested too deeply to check for duplicate keys")]


@given(
    st.sampled_from(
        ("command", "file-equals", "file-contains", "file-absent", "tree-diff-within", "tool-sequence")
    ),
    st.data(),
)
def test_a_one_letter_typo_of_a_name_is_suggested(name: str, data: st.DataObject) -> None:
    """A name with one letter dropped (``comand``) suggests the name; an unrelated word suggests nothing."""
    from alisio.core.shape import did_you_mean

    known = ("command", "file-equals", "file-contains", "file-absent", "tree-diff-within", "tool-sequence")
    at = data.draw(st.integers(0, len(name) - 1))
    assert did_you_mean(name[:at] + name[at + 1 :], known) == f"did you mean {name}? "
    assert did_you_mean("zzz", known) == "" and did_you_mean(3, known) == ""
