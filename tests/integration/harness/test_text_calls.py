"""``tools.textCalls``: tool calls a model wrote as text, through the installed CLI against a local server.

- ``parse`` on each wire format (Chat Completions, Responses, Anthropic Messages): one run whose turns write
  their calls in every shape (a fenced block with ``//`` comments, ``<tools>``, ``<function_call>`` with an
  id, bare JSON with prose around it, ``<tool_call>``) fixes the task; each call is a ``tool_call`` event
  marked ``fromText``; each next request answers it in a user message naming the tool and the id (the text's
  own or ``text-<turn>-<n>``); a tool-sequence rule sees the calls; the incident is raised per turn;
- ``off`` (the default): the same first answer ends the run after one turn, with the incident;
- replay is exact: recorded with ``parse``, replayed with ``parse`` (no divergence, same counts); replayed
  with ``off`` it is a divergence (exit 2); ``eval variants`` compares off and parse (two config hashes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from alisio.core.harness.events import IncidentRaised, ToolCalled
from alisio.core.lab.runs.records import RunStatus
from alisio.core.lab.runs.transcript import decode_transcript
from tests.integration.harness.test_provider_apis import APIS, RENDER, alisio, answer, configure, runs
from tests.integration.helpers import make_suite, task
from tests.integration.sse_server import Reply, SseServer

READ = '{"name": "read_file", "arguments": {"path": "src/calc.py"}}'
LIST = '{"name": "list_dir", "arguments": {"path": "."}}'
EDIT = json.dumps(
    {
        "id": "call_fix",
        "name": "edit_file",
        "arguments": {"path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"},
    }
)
CHECK = '{"name": "bash", "arguments": "{\\"command\\": \\"python3 check.py\\"}"}'
SEARCH = '{"name": "search", "arguments": {"pattern": "def add"}}'
TEXTS = (
    f"I will read the file first.\n```json\n{READ[:-1]} // the file to fix\n}}\n```",
    f"<tools>\n{LIST}\n</tools>",
    f"<function_call>{EDIT}</function_call>",
    f"Now run the check: {CHECK} and see.",
    f"<tool_call>\n{SEARCH}\n</tool_call>",
    "Fixed add in src/calc.py.",
)
WHERE = (
    "in a fenced block",
    "in <tools> tags",
    "in <function_call> tags",
    "as bare JSON",
    "in <tool_call> tags",
)
IDS = ("text-1-1", "text-2-1", "call_fix", "text-4-1", "text-5-1")
NAMES = ("read_file", "list_dir", "edit_file", "bash", "search")
SEQUENCE = {
    "kind": "tool-sequence",
    "id": "read-edit-check",
    "rules": [
        {"type": "before", "first": "read_file", "then": "edit_file"},
        {"type": "before", "first": "edit_file", "then": "bash"},
        {"type": "max-calls", "tool": "edit_file", "max": 1},
    ],
}


def replies(api: str) -> list[Reply]:
    return [
        Reply(body=RENDER[api](answer(text=[text[:7], text[7:]], input=50 + n, output=5))).split(
            seed=n, max_piece=40
        )
        for n, text in enumerate(TEXTS)
    ]


def suite_with_sequence(root: Path) -> Path:
    base = task("fix-add", policy={"mode": "auto", "allow": ["write", "process"]})
    return make_suite(root, {**base, "verifiers": [*base["verifiers"], SEQUENCE]})


def last_user_text(api: str, body: dict[str, Any]) -> str:
    """The text of the last message a request sends (where the harness answers text calls)."""
    if api == "openai-responses":
        item = body["input"][-1]
        assert item["role"] == "user"
        content = item["content"]
    else:
        message = body["messages"][-1]
        assert message["role"] == "user"
        content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def eval_run(home: Path, suite: Path, out: str, *args: str) -> list[Any]:
    result = alisio(
        home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write",
        "--allow-process", "-k", "1", "--out", str(home / out), *args,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return runs(home / out)


@pytest.mark.parametrize("api", APIS)
def test_parse_runs_every_written_shape_and_answers_by_name(api: str, tmp_path: Path) -> None:
    """parse: five turns of calls written as text in five shapes fix the task; events, answers, rules, incidents."""
    suite = suite_with_sequence(tmp_path)
    with SseServer(*replies(api)) as server:
        configure(tmp_path, server, api, '[tools]\ntextCalls = "parse"\n')
        (record,) = eval_run(tmp_path, suite, "out")
        bodies = [request.json() for request in server.requests]
    assert record.status is RunStatus.PASS, record
    assert (record.measured.turns, record.measured.tool_calls) == (6, 5)
    (rules,) = [v for v in record.verifiers if v.id == "read-edit-check"]
    assert "over 5 tool call(s)" in rules.detail and "vacuous" not in rules.detail, rules.detail
    events = decode_transcript((tmp_path / "out" / "runs" / "fix-add" / "0.jsonl").read_bytes())
    calls = [e for e in events if isinstance(e, ToolCalled)]
    assert [c.name for c in calls] == list(NAMES)
    assert [c.call_id for c in calls] == list(IDS)
    assert all(c.from_text for c in calls)
    assert json.loads(calls[2].arguments) == {
        "path": "src/calc.py",
        "old_string": "a - b",
        "new_string": "a + b",
    }
    incidents = [e.message for e in events if isinstance(e, IncidentRaised) and e.kind == "text_tool_call"]
    assert len(incidents) == 5
    for message, name, where in zip(incidents, NAMES, WHERE, strict=True):
        assert message.startswith(f"the final text is a call of {name} written {where}, not a tool call")
    for n, body in enumerate(bodies[1:]):
        answered = last_user_text(api, body)
        assert answered.startswith("Your last message wrote a tool call as text; the harness ran it.")
        assert f'<tool_result name="{NAMES[n]}" id="{IDS[n]}">' in answered
    assert "def add(a, b):" in last_user_text(api, bodies[1])
    assert "ok" in last_user_text(api, bodies[4])  # bash ran check.py after the edit
    assert (suite / "fixtures" / "calc" / "src" / "calc.py").read_text().count(
        "a - b"
    ) == 1  # a copy was fixed


def test_off_ends_the_run_at_the_first_written_call(tmp_path: Path) -> None:
    """off (the default): the first answer ends the run in one turn with no tool call, with the incident."""
    suite = suite_with_sequence(tmp_path)
    with SseServer(*replies("openai-chat")[:1]) as server:
        configure(tmp_path, server, "openai-chat")
        (record,) = eval_run(tmp_path, suite, "out")
    assert record.status is RunStatus.FAIL
    assert (record.measured.turns, record.measured.tool_calls) == (1, 0)
    assert [i.kind for i in record.incidents] == ["text_tool_call"]


def test_a_parse_recording_replays_with_parse_and_diverges_with_off(tmp_path: Path) -> None:
    """eval record with parse; replay with parse: pass, no divergence, same counts; with off: divergence, exit 2."""
    suite = suite_with_sequence(tmp_path)
    common = ("calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write", "--allow-process")
    with SseServer(*replies("openai-chat")) as server:
        configure(tmp_path, server, "openai-chat", '[tools]\ntextCalls = "parse"\n')
        recorded = alisio(tmp_path, "eval", "record", *common)
        assert recorded.returncode == 0, recorded.stderr
        replayed = alisio(tmp_path, "eval", "run", *common, "--mode", "replay", "--out", str(tmp_path / "r"))
        assert replayed.returncode == 0, replayed.stderr
        (run,) = runs(tmp_path / "r")
        assert run.status is RunStatus.PASS and run.divergence is None
        assert (run.measured.turns, run.measured.tool_calls) == (6, 5)
        configure(tmp_path, server, "openai-chat", '[tools]\ntextCalls = "off"\n')
        off = alisio(tmp_path, "eval", "run", *common, "--mode", "replay", "--out", str(tmp_path / "o"))
    assert off.returncode == 2, off.stderr
    (diverged,) = runs(tmp_path / "o")
    assert diverged.divergence is not None


def test_variants_compare_off_and_parse(tmp_path: Path) -> None:
    """eval variants with tools.textCalls off vs parse: two arms, two configuration hashes, parse passes."""
    suite = suite_with_sequence(tmp_path)
    compare = tmp_path / "compare.json"
    compare.write_text(
        json.dumps(
            {
                "suite": "calc-suite",
                "variants": [
                    {"id": "off", "overrides": {"tools.textCalls": "off"}},
                    {"id": "parse", "overrides": {"tools.textCalls": "parse"}},
                ],
            }
        )
    )
    with SseServer(*replies("openai-chat")[:1], *replies("openai-chat")) as server:  # off runs first (A, B)
        configure(tmp_path, server, "openai-chat")
        result = alisio(
            tmp_path, "eval", "variants", "--variants", str(compare), "calc-suite", "--suite-dir", str(suite),
            "--yes", "--allow-write", "--allow-process", "-k", "1", "-j", "1", "--out", str(tmp_path / "v"),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    reports = {
        arm: json.loads((tmp_path / "v" / arm / "report.json").read_text()) for arm in ("off", "parse")
    }
    assert reports["off"]["conditions"]["configHash"] != reports["parse"]["conditions"]["configHash"]
    assert (reports["off"]["summary"]["passes"], reports["parse"]["summary"]["passes"]) == (0, 1)
