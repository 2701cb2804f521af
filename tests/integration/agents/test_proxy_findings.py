"""What the proxy reads from an external agent's model calls on each wire format (issue 31's findings).

An agent (``fake_agent.py``, offering ``bash``) whose model answers with its call written as text (a fenced
block, ``<tools>`` tags, bare JSON) on Chat Completions, Responses and Anthropic Messages, through ``eval run``:
- each run gets a ``text_tool_call`` incident, found through the tools the request offered;
- the answer's served model is kept on every api (Chat's ``model``, Anthropic's ``message_start.message.model``,
  Responses' ``response.model``): the record's servedModels, report.md's "Served by";
- the time to each answer's first event is kept (the server sends keep-alive comments while it waits, as
  llama.cpp's does, and those are not the answer), so the report's first event median is a number, not n/a.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.agents.test_external_agents import _agent, _config, _eval, _records, _suite, _task
from tests.integration.harness.test_provider_apis import answer
from tests.integration.sse_server import Reply, SseServer, sse_body
from tests.property.test_wire import anthropic_stream, responses_stream

pytestmark = pytest.mark.xdist_group("external-agents")

CALL = '{"name": "bash", "arguments": {"command": "python3 check.py"}}'
PAUSE_S = 0.3


def _chat(text: str, model: str) -> bytes:
    return sse_body(
        [
            {"model": model, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
            {"model": model, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"model": model, "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 2}},
        ]
    )


def _responses(text: str, model: str) -> bytes:
    body = responses_stream(answer(text=[text]))
    return body.replace(b'"response": {}', f'"response": {{"model": "{model}"}}'.encode(), 1)


def _anthropic(text: str, model: str) -> bytes:
    body = anthropic_stream(answer(text=[text]))
    return body.replace(b'"message": {', f'"message": {{"model": "{model}", '.encode(), 1)


def test_text_calls_served_model_and_first_event_of_external_runs(tmp_path: Path) -> None:
    """Three apis, three written shapes: an incident each, the served model each, a first event time each."""
    agents = (
        _agent("fake", tools='{ bash = "bash" }')
        + _agent("fake-r", "--api", "openai-responses", api='"openai-responses"')
        + _agent("fake-a", "--api", "anthropic", api='"anthropic"')
    )
    _config(tmp_path, agents)
    suite = _suite(tmp_path, [_task("chat", "fake"), _task("resp", "fake-r"), _task("anth", "fake-a")])
    bodies = [  # the runs go in task order at one job: anth, chat, resp
        _anthropic(f"I will call {CALL}", "served-anth"),
        _chat(f"Run the check:\n```json\n{CALL}\n```", "served-chat"),
        _responses(f"<tools>{CALL}</tools>", "served-resp"),
    ]
    ping = b": ping\n\n"  # a keep-alive before the answer, then another: the answer comes third
    replies = [Reply(body=body, pieces=(ping, ping, body), pause_s=PAUSE_S) for body in bodies]
    out = tmp_path / "out"
    with SseServer(*replies) as server:
        done = _eval(
            tmp_path, "run", suite, "--k", "1", "--jobs", "1", "--base-url", server.base_url, "--out", out
        )
    assert done.returncode == 0, done.stderr
    assert [line.split()[1] for line in done.stderr.splitlines() if line.startswith("[")] == [
        "anth",
        "chat",
        "resp",
    ]
    records = _records(out)
    where = {"chat": "in a fenced block", "resp": "in <tools> tags", "anth": "as bare JSON"}
    for task_id, served in (("chat", "served-chat"), ("resp", "served-resp"), ("anth", "served-anth")):
        record = records[task_id]
        (incident,) = [i for i in record.incidents if i.kind == "text_tool_call"]
        assert incident.message.startswith(f"the final text is a call of bash written {where[task_id]}")
        assert record.measured.served_models == (served,)
        (first,) = record.measured.first_event_ms
        assert first >= 3 * PAUSE_S * 1000  # the answer's first event, not the first keep-alive
    report = (out / "report.md").read_text()
    assert "served-chat" in report and "served-resp" in report and "served-anth" in report
    assert "first event median: n/a" not in report


def test_a_run_without_a_model_call_reports_no_usage_not_zero(tmp_path: Path) -> None:
    """An agent that never calls the model: its tokens read "not reported" (none was), never 0."""
    _config(tmp_path, _agent("fake-nomodel", "--mode", "no-model"))
    suite = _suite(tmp_path, [_task("nomodel", "fake-nomodel")])
    out = tmp_path / "out"
    with SseServer() as server:
        done = _eval(tmp_path, "run", suite, "--k", "1", "--base-url", server.base_url, "--out", out)
    assert done.returncode == 0, done.stderr
    measured = _records(out)["nomodel"].measured
    assert (measured.turns, measured.input_tokens, measured.output_tokens) == (0, None, None)
    assert not measured.usage_complete
    row = next(
        line
        for line in (out / "report.md").read_text().splitlines()
        if line.startswith("| nomodel |") and "s |" in line
    )
    assert "| not reported | not reported |" in row and "| 0 |" not in row.split("s |", 1)[1]
