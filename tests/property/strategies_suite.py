"""Hypothesis strategies for suite.json: valid suites (honouring every Meta bound by hand), JSON junk.

A whole suite costs hundreds of draws, so tests that generate one use ``heavy`` settings: a quarter of the
profile's examples (50 in ``ci``, 1250 in ``thorough``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
from hypothesis import settings
from hypothesis import strategies as st

from alisio.core.lab.suites.suite import (
    TOOL_NAMES,
    BeforeRule,
    Budget,
    CommandVerifier,
    FileAbsentVerifier,
    FileContainsVerifier,
    FileEqualsVerifier,
    MaxCallsRule,
    NeverRule,
    NoRepeatFailureRule,
    NormalizeRule,
    Rule,
    Suite,
    Task,
    TaskPolicy,
    ToolSequenceVerifier,
    TreeDiffWithinVerifier,
    Verifier,
)

heavy = settings(max_examples=max(25, settings().max_examples // 4))
"""Settings for tests that draw whole suites."""

ids = st.sampled_from(
    ["fix-add", "t", "A.b_c-1", "0", "check", "scope", "x" * 128, "a..b", "9_", "T-2", "rename", "q.q", "z-"]
)
positive = st.integers(min_value=1, max_value=10**9)
text = st.text(max_size=12)
non_empty_text = st.text(min_size=1, max_size=12)
segments = st.sampled_from(["src", "a.py", "check.py", ".git", "..x", "x..", "_", "dir.d", "-"])
relative_paths = st.lists(segments, min_size=1, max_size=3).map("/".join)
"""Paths that pass every lexical rule: relative, no ``..``, no empty or ``.`` segment."""
tools = st.sampled_from(TOOL_NAMES)
sha256s = st.binary(min_size=32, max_size=32).map(bytes.hex)
semvers = st.builds(
    lambda major, minor, patch, pre, build: f"{major}.{minor}.{patch}{pre}{build}",
    st.integers(0, 999),
    st.integers(0, 999),
    st.integers(0, 999),
    st.sampled_from(["", "-rc.1", "-alpha", "-0.3.7", "-x-y.1"]),
    st.sampled_from(["", "+build.5", "+20260101"]),
)

budgets = st.builds(
    Budget,
    max_turns=positive,
    max_wall_ms=positive,
    max_tokens=st.none() | positive,
    max_tool_calls=st.none() | positive,
)
policies = st.builds(
    TaskPolicy,
    mode=st.sampled_from(["ask", "auto", "full"]),
    allow=st.lists(st.sampled_from(["write", "process", "external", "analysis"]), unique=True).map(tuple),
    read_only=st.booleans(),
)


def _before(draw: st.DrawFn) -> BeforeRule:
    first = draw(tools)
    then = draw(tools.filter(lambda tool: tool != first))
    return BeforeRule(first=first, then=then)  # type: ignore[arg-type]


rules: st.SearchStrategy[Rule] = st.one_of(
    st.composite(_before)(),
    st.builds(NeverRule, tool=tools),
    st.builds(MaxCallsRule, tool=tools, max=st.integers(0, 100)),
    st.builds(NoRepeatFailureRule, tool=tools),
)


_ID = st.just("placeholder")

verifiers: st.SearchStrategy[Verifier] = st.one_of(  # ids are set by tasks()
    st.builds(
        CommandVerifier,
        id=_ID,
        command=st.tuples(non_empty_text).flatmap(
            lambda head: st.lists(text, max_size=3).map(lambda t: (*head, *t))
        ),
        timeout_ms=st.integers(1, 600_000),
        expect_exit=st.integers(-255, 255),
        expect_stdout_includes=st.none() | text,
        cwd=st.none() | relative_paths,
    ),
    st.builds(FileEqualsVerifier, id=_ID, path=relative_paths, sha256=sha256s),
    st.builds(FileContainsVerifier, id=_ID, path=relative_paths, text=non_empty_text),
    st.builds(FileAbsentVerifier, id=_ID, path=relative_paths),
    st.builds(
        TreeDiffWithinVerifier,
        id=_ID,
        allowed=st.lists(relative_paths.map(lambda p: p + "/") | relative_paths, max_size=3).map(tuple),
    ),
    st.builds(
        ToolSequenceVerifier,
        id=_ID,
        rules=st.lists(rules, min_size=1, max_size=3).map(tuple),
    ),
)


normalize_rules = st.builds(
    NormalizeRule,
    pattern=st.one_of(
        st.sampled_from([r"\d{4}-\d{2}-\d{2}", r"pid=\d+", r"[0-9a-f]{8}", r"(?:\.\d+)?Z"]),
        non_empty_text.map(re.escape),
    ),
    replace=text,
)


@st.composite
def tasks(draw: st.DrawFn) -> Task:
    """A valid task: unique verifier ids, relative paths, compiling patterns."""
    verifier_ids = draw(st.lists(ids, min_size=1, max_size=3, unique=True))
    return Task(
        id=draw(ids),
        prompt=draw(non_empty_text),
        fixture=draw(relative_paths.map(lambda p: f"fixtures/{p}")),
        budget=draw(budgets),
        policy=draw(policies),
        verifiers=tuple(
            msgspec.structs.replace(draw(verifiers), id=verifier_id) for verifier_id in verifier_ids
        ),
        tags=tuple(draw(st.lists(non_empty_text, max_size=3))),
        agent=draw(st.none() | st.sampled_from(["coder", "A_b-2", "z" * 64])),
        fixture_git=draw(st.booleans()),
        replay_normalize=tuple(draw(st.lists(normalize_rules, max_size=2))),
    )


_tasks = tasks()


@st.composite
def suites(draw: st.DrawFn, min_tasks: int = 1) -> Suite:
    """A valid suite with unique task ids."""
    task_ids = draw(st.lists(ids, min_size=min_tasks, max_size=3, unique=True))
    return Suite(
        schema_version=1,
        suite_id=draw(ids),
        suite_version=draw(semvers),
        description=draw(text),
        tasks=tuple(msgspec.structs.replace(draw(_tasks), id=task_id) for task_id in task_ids),
    )


json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4),
    max_leaves=20,
)
"""Any JSON value."""


def dumps_repeating(value: Any, target: tuple[str | int, ...], repeat: Any) -> str:
    """``value`` as JSON text, where the object at ``target`` gets its first key once more (valued
    ``repeat``) at the end: the only way to write a duplicate key, which no dict can hold."""

    def dump(node: Any, path: tuple[str | int, ...]) -> str:
        if isinstance(node, dict):
            items = [f"{json.dumps(k)}: {dump(v, (*path, k))}" for k, v in node.items()]
            if path == target:
                items.append(f"{json.dumps(next(iter(node)))}: {json.dumps(repeat)}")
            return "{" + ", ".join(items) + "}"
        if isinstance(node, list):
            return "[" + ", ".join(dump(v, (*path, i)) for i, v in enumerate(node)) + "]"
        return json.dumps(node)

    return dump(value, ())


def objects_in(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """The path of every non-empty object in a JSON value, the root included."""
    found = [path] if isinstance(value, dict) and value else []
    children = (
        value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    )
    for key, child in children:
        found += objects_in(child, (*path, key))
    return found
