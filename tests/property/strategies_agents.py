"""Strategies for the external agents' core (``alisio.core.agents``): chat answers, cassette calls."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
NAMES = st.sampled_from(["bash", "read", "exec_command", "write", "Bash", "edit"])
COUNTS = st.integers(min_value=0, max_value=10**7)


@st.composite
def chat_answers(draw: st.DrawFn) -> dict[str, Any]:
    """A Chat Completions answer: text and tool calls, with usage (or none)."""
    calls = draw(st.lists(st.tuples(NAMES, TEXT), max_size=3))
    usage = draw(st.none() | st.fixed_dictionaries({"prompt_tokens": COUNTS, "completion_tokens": COUNTS}))
    return {"text": draw(TEXT), "calls": calls, "usage": usage}


def sse_of(answer: dict[str, Any]) -> bytes:
    """The answer as a Chat Completions stream: one chunk per piece, usage last, then [DONE]."""
    chunks: list[dict[str, Any]] = []
    if answer["text"]:
        chunks.append({"choices": [{"index": 0, "delta": {"content": answer["text"]}}]})
    for index, (name, arguments) in enumerate(answer["calls"]):
        call = {
            "index": index,
            "id": f"c{index}",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    finish = "tool_calls" if answer["calls"] else "stop"
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if answer["usage"] is not None:
        chunks.append({"choices": [], "usage": answer["usage"]})
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-100, 100) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abcde"), inner, max_size=3),
    max_leaves=10,
)
