"""Hypothesis strategies for alisio.core.lab.judges.verify: tool-call logs, tool-sequence rules, tree snapshots.

A generated call carries the *meaning* of its arguments (``key``: which of a few argument dicts, or which
invalid JSON text) next to the raw text the model sent (random key order and spacing), so tests can use
``key`` as the oracle for "identical call".
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import strategies as st

from alisio.core.harness.events import Event, RunEnded, RunStarted, ToolCalled, ToolResulted
from alisio.core.lab.judges.verify import TreeEntry, TreeSnapshot, tree_snapshot
from alisio.core.lab.suites.suite import BeforeRule, MaxCallsRule, NeverRule, NoRepeatFailureRule, Rule

TOOLS = ("read_file", "edit_file", "bash")
"""A few tool names, so that generated logs repeat them often."""
_ARGUMENT_VALUES: tuple[dict[str, object], ...] = (
    {"path": "a.py"},
    {"path": "b.py"},
    {"path": "a.py", "old_string": "x", "new_string": "y"},
    {"command": "ls"},
)
_INVALID_TEXTS = ("{not json", "", '{"path": ')


@dataclass(frozen=True)
class GenCall:
    """One generated tool call."""

    name: str
    key: str
    """Identity of the arguments: equal keys mean the same call, whatever the spelling."""
    raw: str
    result: bool | None
    """ok of its tool_result; None when the log has no result for it."""


@st.composite
def _arguments(draw: st.DrawFn) -> tuple[str, str]:
    if draw(st.integers(0, 4)) == 0:
        text = draw(st.sampled_from(_INVALID_TEXTS))
        return f"raw:{text}", text
    index = draw(st.integers(0, len(_ARGUMENT_VALUES) - 1))
    value = _ARGUMENT_VALUES[index]
    items = draw(st.permutations(list(value.items())))
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,", " : ")]))
    return f"json:{index}", json.dumps(dict(items), separators=separators)


@st.composite
def gen_calls(draw: st.DrawFn) -> tuple[GenCall, ...]:
    """Up to 12 calls of ``TOOLS`` with arguments drawn from a small pool (so repeats are common)."""
    size = draw(st.integers(0, 12))
    calls = []
    for _ in range(size):
        key, raw = draw(_arguments())
        calls.append(
            GenCall(
                name=draw(st.sampled_from(TOOLS)),
                key=key,
                raw=raw,
                result=draw(st.sampled_from([True, False, False, None])),
            )
        )
    return tuple(calls)


def event_log(calls: tuple[GenCall, ...], *, start: bool = True, end: bool = True) -> tuple[Event, ...]:
    """The event log of a run making ``calls`` (each result right after its call), numbered by seq."""
    events: list[Event] = []

    def seq() -> int:
        return len(events)

    if start:
        events.append(
            RunStarted(
                seq=seq(),
                elapsed_ms=0,
                prompt="p",
                provider="scripted",
                model="m",
                policy_mode="auto",
                config_hash="h",
                harness_version="0",
            )
        )
    for index, call in enumerate(calls):
        # call ids repeat across turns on purpose: some providers reuse them
        call_id = f"call_{index % 3}"
        events.append(
            ToolCalled(
                seq=seq(), elapsed_ms=index, call_id=call_id, name=call.name, arguments=call.raw, effect=None
            )
        )
        if call.result is not None:
            events.append(
                ToolResulted(
                    seq=seq(),
                    elapsed_ms=index,
                    call_id=call_id,
                    name=call.name,
                    ok=call.result,
                    output_excerpt="",
                    duration_ms=0,
                )
            )
    if end:
        events.append(RunEnded(seq=seq(), elapsed_ms=len(calls), outcome="completed", turns=1))
    return tuple(events)


tools = st.sampled_from(TOOLS)
rules: st.SearchStrategy[Rule] = st.one_of(
    st.builds(BeforeRule, first=tools, then=tools).filter(lambda r: r.first != r.then),
    st.builds(NeverRule, tool=tools),
    st.builds(MaxCallsRule, tool=tools, max=st.integers(0, 6)),
    st.builds(NoRepeatFailureRule, tool=tools),
)

tree_paths = st.lists(
    st.sampled_from(["a", "b", "src", "d", "dx", ".git", "node_modules", "__pycache__"]),
    min_size=1,
    max_size=3,
).map("/".join)
"""Relative paths over a few names, including the ignored directories and a ``d``/``dx`` prefix trap."""
entries = st.builds(
    TreeEntry,
    path=tree_paths,
    kind=st.sampled_from(["file", "symlink", "special"]),
    digest=st.sampled_from(["", "0" * 64, "1" * 64, "../outside"]),
)


@st.composite
def snapshots(draw: st.DrawFn) -> TreeSnapshot:
    """A tree snapshot (unique paths; ignored directories already left out by ``tree_snapshot``)."""
    drawn = draw(st.lists(entries, max_size=8, unique_by=lambda e: e.path))
    return tree_snapshot(drawn)


IGNORED_NAMES = (".git", "node_modules", "__pycache__")
kept_segments = st.sampled_from(
    [
        "a",
        "src",
        ".github",
        ".gitignore",
        "git",
        "node_module",
        "node_modules2",
        "__pycache",
        "x__pycache__",
        ".",
    ]
) | st.text(alphabet="ab._-", min_size=1, max_size=6).filter(lambda name: name not in IGNORED_NAMES)
"""Path segments that are not ignored directories, lookalikes included."""
kept_paths = st.lists(kept_segments, min_size=1, max_size=5)
"""A relative path as its list of non-ignored segments."""
