"""A stand-in model for the sequential tests: a local OpenAI-compatible server (``SseServer`` with a
``respond`` function) whose success probability is set per variant and task.

Each task's prompt names the task (``Task <id>: ...``) and each variant's instructions name the variant
(``Variant <id>.``): the server reads both from the request. A run's first request draws its outcome: a
pass answers at once (the task's ``tool-sequence`` verifier, "never read_file", passes), a fail reads a file
first (it fails). The draw of the n-th run of a (variant, task) is ``Random(f"{variant}/{task}/{n}")`` below
its probability, so a run with ``--jobs 1`` is the same every time; probabilities 0 and 1 give the same
outcome whatever the order.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.integration.helpers import make_suite, task
from tests.integration.sse_server import RecordedRequest, Reply, SseServer

NEVER_READ = {"kind": "tool-sequence", "id": "no-read", "rules": [{"type": "never", "tool": "read_file"}]}
_TASK = re.compile(r"Task ([A-Za-z0-9_-]+):")
_VARIANT = re.compile(r"Variant ([A-Za-z0-9_-]+)\.")


def seq_task(task_id: str) -> dict[str, Any]:
    """A task that passes when the model answers without reading a file (no write effect needed)."""
    return task(
        task_id,
        prompt=f"Task {task_id}: answer at once.",
        verifiers=[NEVER_READ],
        policy={"mode": "ask", "allow": []},
    )


def seq_suite(root: Path, *task_ids: str) -> Path:
    return make_suite(root, *(seq_task(task_id) for task_id in task_ids))


def compare_file(path: Path, *variants: str) -> Path:
    """compare.json: each variant's instructions name it (so the stand-in model tells them apart)."""
    document = {
        "suite": "calc-suite",
        "variants": [
            {"id": v, "overrides": {"instructions": f"Variant {v}. You are a coding agent."}}
            for v in variants
        ],
    }
    path.write_text(json.dumps(document))
    return path


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _reply_text(text: str) -> Reply:
    return Reply.sse(
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}},
    )


def _reply_read() -> Reply:
    call = {"index": 0, "id": "call_1", "type": "function"}
    call["function"] = {"name": "read_file", "arguments": json.dumps({"path": "src/calc.py"})}
    return Reply.sse(
        {
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}, "finish_reason": None}
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}},
    )


class StandIn:
    """The responder: ``rates[variant][task]`` (variant ``""`` for a run without variants)."""

    def __init__(self, rates: Mapping[str, Mapping[str, float]]) -> None:
        self.rates = rates
        self.runs: Counter[tuple[str, str]] = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        messages = request.json()["messages"]
        if any(m.get("role") == "tool" for m in messages):
            return _reply_text("Read it; done.")
        text = " ".join(_text(m.get("content")) for m in messages)
        task_match, variant_match = _TASK.search(text), _VARIANT.search(text)
        task_id = task_match.group(1) if task_match else ""
        variant = variant_match.group(1) if variant_match else ""
        with self.lock:
            n = self.runs[(variant, task_id)]
            self.runs[(variant, task_id)] += 1
        passed = random.Random(f"{variant}/{task_id}/{n}").random() < self.rates[variant][task_id]
        return _reply_text("Done.") if passed else _reply_read()


def stand_in(rates: Mapping[str, Mapping[str, float]]) -> tuple[SseServer, StandIn]:
    model = StandIn(rates)
    return SseServer(respond=model), model
