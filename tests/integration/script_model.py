"""A stand-in model that plays a different script for each run: a local OpenAI-compatible server
(``SseServer`` with a ``respond`` function) for tests that need the repetitions of one task to take
different paths (``eval diff``, report.html's "first divergence" line, rejudge).

A run's first request (no assistant message yet) starts the next run: run n plays ``scripts[order[n]]``
(cycling through ``order``), and each later request of the run plays the turn after the assistant messages
it holds. A script is the ``--script`` format (``turns`` with ``text``, ``toolCalls`` and ``usage``). With
``--jobs 1`` the runs start one after another in plan order, so the same command gives the same runs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from tests.integration.sse_server import RecordedRequest, Reply, SseServer

__all__ = ["ScriptModel", "script_server"]


def _turn_reply(turn: dict[str, Any]) -> Reply:
    delta: dict[str, Any] = {"role": "assistant"}
    if turn.get("text"):
        delta["content"] = turn["text"]
    calls = [
        {
            "index": n,
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": call["name"], "arguments": json.dumps(call.get("arguments", {}))},
        }
        for n, call in enumerate(turn.get("toolCalls", []))
    ]
    if calls:
        delta["tool_calls"] = calls
    usage = turn.get("usage", {"inputTokens": 100, "outputTokens": 10})
    counts = {
        "prompt_tokens": usage["inputTokens"],
        "completion_tokens": usage["outputTokens"],
        "total_tokens": usage["inputTokens"] + usage["outputTokens"],
    }
    return Reply.sse(
        {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if calls else "stop"}]},
        {"choices": [], "usage": counts},
    )


class ScriptModel:
    """The responder (module docstring); ``runs`` counts the runs started."""

    def __init__(self, scripts: Sequence[dict[str, Any]], order: Sequence[int]) -> None:
        self.scripts = scripts
        self.order = order
        self.runs = 0
        self.lock = threading.Lock()
        self._current: dict[str, Any] = scripts[order[0]]

    def __call__(self, request: RecordedRequest) -> Reply:
        messages = request.json()["messages"]
        said = sum(1 for m in messages if m.get("role") == "assistant")
        with self.lock:
            if said == 0:
                self._current = self.scripts[self.order[self.runs % len(self.order)]]
                self.runs += 1
            script = self._current
        turns = script["turns"]
        return _turn_reply(turns[min(said, len(turns) - 1)])


def script_server(scripts: Sequence[dict[str, Any]], order: Sequence[int]) -> tuple[SseServer, ScriptModel]:
    """A server playing ``scripts`` in ``order`` (module docstring), and its model."""
    model = ScriptModel(scripts, order)
    return SseServer(respond=model), model
