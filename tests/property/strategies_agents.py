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


def _named_sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def responses_sse_of(answer: dict[str, Any]) -> bytes:
    """The answer as a Responses stream: one ``output_item.done`` per item, usage in ``response.completed``
    (``prompt_tokens`` as ``input_tokens``, ``completion_tokens`` as ``output_tokens``)."""
    items: list[dict[str, Any]] = []
    if answer["text"]:
        content = [{"type": "output_text", "text": answer["text"]}]
        items.append({"type": "message", "role": "assistant", "content": content})
    for index, (name, arguments) in enumerate(answer["calls"]):
        call = {
            "type": "function_call",
            "call_id": f"c{index}",
            "name": name,
            "arguments": json.dumps(arguments),
        }
        items.append(call)
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"status": "in_progress"}}]
    events += [
        {"type": "response.output_item.done", "output_index": i, "item": it} for i, it in enumerate(items)
    ]
    done: dict[str, Any] = {"status": "completed", "output": items}
    if answer["usage"] is not None:
        usage = answer["usage"]
        done["usage"] = {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"]}
    events.append({"type": "response.completed", "response": done})
    return _named_sse(events)


def anthropic_sse_of(answer: dict[str, Any]) -> bytes:
    """The answer as an Anthropic Messages stream: a block per piece; input tokens in ``message_start``,
    output tokens in ``message_delta`` (no usage at all when the answer has none)."""
    usage = answer["usage"]
    start: dict[str, Any] = {"type": "message", "role": "assistant", "content": []}
    if usage is not None:
        start["usage"] = {"input_tokens": usage["prompt_tokens"], "output_tokens": 0}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    blocks: list[tuple[dict[str, Any], dict[str, Any]]] = []
    if answer["text"]:
        blocks.append(({"type": "text", "text": ""}, {"type": "text_delta", "text": answer["text"]}))
    for index, (name, arguments) in enumerate(answer["calls"]):
        block = {"type": "tool_use", "id": f"c{index}", "name": name, "input": {}}
        blocks.append((block, {"type": "input_json_delta", "partial_json": json.dumps(arguments)}))
    for index, (block, delta) in enumerate(blocks):
        events += [
            {"type": "content_block_start", "index": index, "content_block": block},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    end: dict[str, Any] = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}
    if usage is not None:
        end["usage"] = {"output_tokens": usage["completion_tokens"]}
    events += [end, {"type": "message_stop"}]
    return _named_sse(events)
