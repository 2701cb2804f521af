"""The three apis end to end, through the installed CLI against a local scripted server.

- a loop whose first turn makes two tool calls after thinking (Anthropic) or encrypted reasoning
  (Responses): the next request carries that thinking or reasoning back verbatim, before the tool calls;
- ``alisio run``, ``eval run`` live, ``eval record`` then ``eval run --mode replay`` (no divergence) for
  ``openai-chat``, ``openai-responses`` and ``anthropic``;
- the configuration: ``provider.api`` is checked with a did-you-mean, and ``provider.id = "anthropic"``
  alone is refused instead of silently speaking Chat Completions;
- issue 15: persistent 429s stop the command (``provider.rateLimitGiveUpMs``); a call's output limit is
  bounded by what is left of ``maxTokens``; a call cut at ``maxWallMs`` keeps an excerpt and an incident.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import msgspec
import pytest

from alisio.core.harness.events import Event, IncidentRaised, ProviderResponded
from alisio.core.lab.reports.report import Report
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.replay.cassette import decode_cassette
from tests.integration.helpers import alisio as run_cli
from tests.integration.helpers import make_suite
from tests.integration.sse_server import Reply, SseServer, sse_body
from tests.property.test_wire import anthropic_stream, responses_stream

ALISIO = Path(os.environ.get("ALISIO_BIN", Path(__file__).resolve().parents[3] / ".venv" / "bin" / "alisio"))
KEY_VAR = "E2E_PROVIDER_KEY"
KEY = "k-e2e-not-a-real-key-0123456789"
RECORD = msgspec.json.Decoder(RunRecord)
EVENTS = msgspec.json.Decoder(Event)


def answer(**given: Any) -> dict[str, Any]:
    base = {
        "thinking": [],
        "signature": "",
        "text": [],
        "calls": [],
        "input": 100,
        "cache_read": 0,
        "cache_write": 0,
        "output": 10,
    }
    return {**base, **given}


FIX_TURNS = (
    answer(
        thinking=["Look at the file ", "and the tree."],
        signature="SIG-one+/=",
        calls=[
            ("call_read", "read_file", ['{"path": ', '"src/calc.py"}']),
            ("call_list", "list_dir", ['{"path": "."}']),
        ],
        input=120,
        cache_write=40,
    ),
    answer(
        thinking=["Now fix it."],
        signature="SIG-two",
        calls=[
            (
                "call_edit",
                "edit_file",
                ['{"path": "src/calc.py", "old_string": "a - b", ', '"new_string": "a + b"}'],
            )
        ],
        input=300,
        cache_read=160,
    ),
    answer(text=["Fixed add ", "in src/calc.py."], input=400, cache_read=300, output=8),
)


def chat_stream(turn: dict[str, Any]) -> bytes:
    payloads: list[Any] = []
    if turn["text"]:
        payloads.extend({"choices": [{"index": 0, "delta": {"content": part}}]} for part in turn["text"])
    for index, (call_id, name, parts) in enumerate(turn["calls"]):
        first = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        payloads.append({"choices": [{"index": 0, "delta": {"tool_calls": [first]}}]})
        payloads.extend(
            {
                "choices": [
                    {"index": 0, "delta": {"tool_calls": [{"index": index, "function": {"arguments": p}}]}}
                ]
            }
            for p in parts
        )
    finish = "tool_calls" if turn["calls"] else "stop"
    payloads.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    usage = {"prompt_tokens": turn["input"], "completion_tokens": turn["output"]}
    payloads.append({"choices": [], "usage": {**usage, "total_tokens": turn["input"] + turn["output"]}})
    return sse_body(payloads)


def gemini_stream(turn: dict[str, Any]) -> bytes:
    """A turn as the Gemini API streams it: a thought part, each call whole (with its id; the signature on the
    first), the text; the finish and usage (prompt includes cached input) on the last chunk."""
    parts: list[dict[str, Any]] = []
    if turn["thinking"]:
        parts.append({"text": "".join(turn["thinking"]), "thought": True})
    for n, (call_id, name, pieces) in enumerate(turn["calls"]):
        call = {"functionCall": {"id": call_id, "name": name, "args": json.loads("".join(pieces))}}
        parts.append(call | ({"thoughtSignature": turn["signature"]} if n == 0 and turn["signature"] else {}))
    parts += [{"text": piece} for piece in turn["text"]]
    chunks: list[dict[str, Any]] = [
        {"candidates": [{"content": {"parts": [part], "role": "model"}, "index": 0}]} for part in parts
    ]
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    prompt = turn["input"] + turn["cache_read"] + turn["cache_write"]
    chunks[-1]["usageMetadata"] = {
        "promptTokenCount": prompt,
        "cachedContentTokenCount": turn["cache_read"],
        "candidatesTokenCount": turn["output"],
        "totalTokenCount": prompt + turn["output"],
    }
    return "".join(f"data: {json.dumps(chunk)}\r\n\r\n" for chunk in chunks).encode()


RENDER = {
    "openai-chat": chat_stream,
    "openai-responses": responses_stream,
    "anthropic": anthropic_stream,
    "gemini": gemini_stream,
}
"""Each api's stream of a turn (``test_provider_hostile`` runs every api in ``wire.APIS``)."""


def replies(api: str) -> list[Reply]:
    return [Reply(body=RENDER[api](turn)).split(seed=n, max_piece=60) for n, turn in enumerate(FIX_TURNS)]


def configure(home: Path, server: SseServer, api: str, extra: str = "") -> None:
    (home / "config").mkdir(exist_ok=True)
    (home / "config" / "config.toml").write_text(
        f'[provider]\napi = "{api}"\nbaseUrl = "{server.base_url}"\nmodel = "m-{api}"\n'
        f'apiKeyEnv = "{KEY_VAR}"\n{extra}'
    )


def alisio(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command, in this process, with the key in ``KEY_VAR`` only and ``home`` as its TMPDIR."""
    env = {"TMPDIR": str(home), KEY_VAR: KEY}
    return run_cli(home, *args, env=env, without=("ANTHROPIC_API_KEY",))


def sent_back(api: str, body: dict[str, Any]) -> list[Any]:
    """The reasoning items a request sends back, in order."""
    if api == "anthropic":
        return [
            block
            for message in body["messages"]
            if message["role"] == "assistant"
            for block in message["content"]
            if block["type"] in ("thinking", "redacted_thinking")
        ]
    if api == "openai-responses":
        return [item for item in body["input"] if item.get("type") == "reasoning"]
    return []


def expected_reasoning(api: str, turns: int) -> list[Any]:
    """What the first ``turns`` answers streamed as reasoning to send back (the server's own bytes)."""
    out: list[Any] = []
    for turn in FIX_TURNS[:turns]:
        if not turn["thinking"]:
            continue
        text = "".join(turn["thinking"])
        if api == "anthropic":
            out.append({"type": "thinking", "thinking": text, "signature": turn["signature"]})
        elif api == "openai-responses":
            summary = [{"type": "summary_text", "text": text}]
            out.append(
                {
                    "id": "rs_1",
                    "type": "reasoning",
                    "summary": summary,
                    "encrypted_content": turn["signature"],
                }
            )
    return out


def check_requests(api: str, server: SseServer) -> None:
    """Each request carries every earlier turn's reasoning verbatim, right before the calls it led to."""
    bodies = [request.json() for request in server.requests]
    assert len(bodies) == 3
    for n, body in enumerate(bodies):
        assert sent_back(api, body) == expected_reasoning(api, n)
    second = bodies[1]
    if api == "anthropic":
        assistant = second["messages"][1]
        assert [b["type"] for b in assistant["content"]] == ["thinking", "tool_use", "tool_use"]
        assert [b["id"] for b in assistant["content"][1:]] == ["call_read", "call_list"]
        results = [b["tool_use_id"] for b in second["messages"][2]["content"]]
        assert results == ["call_read", "call_list"]
        assert json.dumps(second).count("cache_control") <= 4
        assert server.requests[0].headers["x-api-key"] == KEY
        assert server.requests[0].headers["anthropic-version"] == "2023-06-01"
    elif api == "openai-responses":
        kinds = [item.get("type", item.get("role")) for item in second["input"]]
        assert kinds == [
            "user",
            "reasoning",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
        ]
        assert second["store"] is False and "previous_response_id" not in second
        assert second["include"] == ["reasoning.encrypted_content"]
    else:
        assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool", "tool"]
    if api != "anthropic":
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


APIS = ["openai-chat", "openai-responses", "anthropic"]


@pytest.mark.parametrize("api", APIS)
def test_alisio_run_loops_over_two_tool_calls_and_sends_reasoning_back(api: str, tmp_path: Path) -> None:
    """alisio run: thinking or reasoning, two tool calls, an edit, a final answer; the workspace is fixed,
    every request sends the earlier reasoning back verbatim, and the key never reaches the output."""
    workspace = make_suite(tmp_path) / "fixtures" / "calc"
    with SseServer(*replies(api)) as server:
        configure(tmp_path, server, api)
        result = alisio(tmp_path, "run", "Fix add in src/calc.py.", "--cwd", str(workspace), "--allow-write")
        assert result.returncode == 0, result.stderr
        assert result.stdout == "Fixed add in src/calc.py.\n"
        assert "a + b" in (workspace / "src" / "calc.py").read_text()
        check_requests(api, server)
    assert KEY not in result.stdout + result.stderr


def runs(directory: Path) -> list[RunRecord]:
    return [RECORD.decode(line) for line in (directory / "runs.jsonl").read_bytes().splitlines()]


@pytest.mark.parametrize("api", APIS)
def test_eval_live_then_record_then_replay_without_divergence(api: str, tmp_path: Path) -> None:
    """eval run live passes; eval record writes the reasoning into the cassette; replay passes with the same
    numbers and no divergence (the reasoning sent back is part of what replay checks)."""
    suite = make_suite(tmp_path)
    common = ("calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write")
    with SseServer(*replies(api), *replies(api)) as server:
        configure(tmp_path, server, api)
        live = alisio(tmp_path, "eval", "run", *common, "-k", "1", "--out", str(tmp_path / "live"))
        assert live.returncode == 0, live.stderr
        recorded = alisio(tmp_path, "eval", "record", *common)
        assert recorded.returncode == 0, recorded.stderr
    (live_run,) = runs(tmp_path / "live")
    assert live_run.status is RunStatus.PASS
    cache_counted = api == "anthropic"
    assert live_run.measured.input_tokens == sum(
        t["input"] + (t["cache_read"] + t["cache_write"] if cache_counted else 0) for t in FIX_TURNS
    )
    report = msgspec.json.decode((tmp_path / "live" / "report.json").read_bytes(), type=Report)
    assert report.conditions.model == f"m-{api}"
    assert report.conditions.provider == ("openai_compat" if api == "openai-chat" else api)
    cassette = decode_cassette((suite / "cassettes" / "fix-add.jsonl").read_bytes(), "c").unwrap()
    assert len(cassette.calls) == 3
    blocks = [
        m.reasoning_blocks for m in cassette.calls[2].request.messages if hasattr(m, "reasoning_blocks")
    ]
    assert [json.loads(b.wire) for bs in blocks for b in bs] == expected_reasoning(api, 2)
    replayed = alisio(tmp_path, "eval", "run", *common, "--mode", "replay", "--out", str(tmp_path / "replay"))
    assert replayed.returncode == 0, replayed.stderr
    (run,) = runs(tmp_path / "replay")
    assert run.status is RunStatus.PASS and run.divergence is None
    assert (run.measured.turns, run.measured.tool_calls) == (3, 3)
    assert run.measured.input_tokens == live_run.measured.input_tokens


def test_an_unknown_api_gets_a_did_you_mean(tmp_path: Path) -> None:
    """provider.api = "antropic": one line naming the file and key, the choices and the near one; exit 1."""
    with SseServer() as server:
        configure(tmp_path, server, "antropic")
        result = alisio(tmp_path, "run", "hi")
    assert result.returncode == 1
    line = result.stderr.strip()
    assert "config.toml: provider.api: 'antropic' is not a provider api" in line
    assert "did you mean 'anthropic'?" in line and "\n" not in line


def test_provider_id_anthropic_alone_is_refused(tmp_path: Path) -> None:
    """provider.id = "anthropic" without provider.api would speak Chat Completions: refused, saying how."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text(
        '[provider]\nid = "anthropic"\nbaseUrl = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    result = alisio(tmp_path, "run", "hi")
    assert result.returncode == 1
    assert "provider.id: 'anthropic' is a label and selects no wire format" in result.stderr
    assert 'set provider.api = "anthropic"' in result.stderr


def test_anthropic_reads_its_own_key_variable(tmp_path: Path) -> None:
    """With no apiKeyEnv, the anthropic api sends ANTHROPIC_API_KEY in x-api-key (and no OPENAI_API_KEY)."""
    (tmp_path / "config").mkdir()
    with SseServer(Reply(body=anthropic_stream(answer(text=["hi"])))) as server:
        (tmp_path / "config" / "config.toml").write_text(
            f'[provider]\napi = "anthropic"\nbaseUrl = "{server.base_url}"\nmodel = "m"\n'
        )
        env = {**os.environ, "ALISIO_CONFIG_HOME": str(tmp_path / "config"), "ANTHROPIC_API_KEY": "ak-1234567",
               "OPENAI_API_KEY": "ok-7654321"}  # fmt: skip
        result = subprocess.run([str(ALISIO), "run", "hi", "--cwd", str(tmp_path)], capture_output=True, text=True,
                                timeout=60, check=False, env=env, stdin=subprocess.DEVNULL)  # fmt: skip
        assert result.returncode == 0, result.stderr
        headers = server.requests[0].headers
    assert headers["x-api-key"] == "ak-1234567" and "authorization" not in headers


# --- issue 15 ------------------------------------------------------------------------------------------


def test_persistent_429s_stop_the_command_and_the_report_says_why(tmp_path: Path) -> None:
    """Every request refused with 429 for provider.rateLimitGiveUpMs: the first run gives up, no further run
    starts, exit 1, and the report of what finished says why."""
    suite = make_suite(tmp_path)
    refused = Reply.json({"error": {"message": "Rate limit reached"}}, status=429)
    with SseServer(*[refused] * 20) as server:
        configure(tmp_path, server, "openai-chat", "rateLimitGiveUpMs = 1\n")
        result = alisio(
            tmp_path, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write",
            "-k", "4", "-j", "1", "--out", str(tmp_path / "out"),
        )  # fmt: skip
        asked = len(server.requests)
    assert result.returncode == 1, result.stderr
    assert asked == 2  # the first refusal, one retry, then it gave up
    assert "refused every request with HTTP 429" in result.stderr
    (record,) = runs(tmp_path / "out")
    assert (record.status, record.reason) == (RunStatus.ERROR, "provider_rate_limited")
    report = msgspec.json.decode((tmp_path / "out" / "report.json").read_bytes(), type=Report)
    assert (report.interrupted, report.planned_runs, report.summary.runs) == (True, 4, 1)
    assert report.stopped is not None and "provider.rateLimitGiveUpMs" in report.stopped


def test_the_output_limit_is_what_is_left_of_max_tokens(tmp_path: Path) -> None:
    """maxTokens 500: the first call asks for 500 (not limits.maxOutputTokens 8192), the second for what the
    first left (500 - 130 = 370)."""
    workspace = make_suite(tmp_path) / "fixtures" / "calc"
    with SseServer(*replies("openai-chat")[:2]) as server:
        configure(tmp_path, server, "openai-chat")
        result = alisio(
            tmp_path, "run", "Fix add.", "--cwd", str(workspace), "--allow-write", "--max-tokens", "500"
        )
        limits = [request.json()["max_tokens"] for request in server.requests]
    assert limits[:2] == [500, 370], result.stderr


def test_a_call_cut_at_max_wall_ms_keeps_what_was_streamed(tmp_path: Path) -> None:
    """A stream still running at maxWallMs: its provider_response keeps the text streamed so far (finish
    reason deadline), and a usage_unreported incident says 'cut at the deadline after N s, M characters'."""
    body = chat_stream(answer(text=["Part one. ", "Part two. ", "Part three."]))
    pieces = tuple(piece + b"\n\n" for piece in body.split(b"\n\n") if piece)
    with SseServer(Reply(body=body, pieces=pieces, pause_s=0.6)) as server:
        configure(tmp_path, server, "openai-chat")
        result = alisio(tmp_path, "run", "hi", "--cwd", str(tmp_path), "--max-wall-ms", "1500", "--json")
    assert result.returncode == 0, result.stderr
    events = [EVENTS.decode(line) for line in result.stdout.splitlines()]
    (response,) = [e for e in events if isinstance(e, ProviderResponded)]
    assert response.finish_reason == "deadline" and response.usage is None
    assert response.text in ("Part one. ", "Part one. Part two. ")
    assert response.text_chars == len(response.text)
    incidents = [e for e in events if isinstance(e, IncidentRaised) and e.kind == "usage_unreported"]
    assert len(incidents) == 1
    assert re.match(
        rf"cut at the deadline after [12]\.\d s, {len(response.text)} characters", incidents[0].message
    )


def test_tokens_are_shown_over_the_runs_that_reported_them(tmp_path: Path) -> None:
    """Two runs of a task, the second cut at maxWallMs (no usage): the report's tokens are the first run's,
    with '1/2 runs', instead of 'not reported' for the whole task."""
    from tests.integration.helpers import task

    suite = make_suite(tmp_path, task("fix-add", budget={"maxTurns": 5, "maxWallMs": 1500}))
    full = Reply(body=chat_stream(answer(text=["Nothing to do."], input=70, output=5)))
    slow = chat_stream(answer(text=["Part one. ", "Part two. ", "Part three."]))
    pieces = tuple(piece + b"\n\n" for piece in slow.split(b"\n\n") if piece)
    with SseServer(full, Reply(body=slow, pieces=pieces, pause_s=0.6)) as server:
        configure(tmp_path, server, "openai-chat")
        result = alisio(
            tmp_path, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write",
            "-k", "2", "-j", "1", "--out", str(tmp_path / "out"),
        )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    report = msgspec.json.decode((tmp_path / "out" / "report.json").read_bytes(), type=Report)
    (only,) = report.tasks
    assert only.judged == 2
    assert only.measured.tokens is not None and only.measured.tokens.total == 75
    assert only.measured.tokens_runs == 1 and only.measured.tokens_per_success is None
    assert "75 (70 in, 5 out; 1/2 runs)" in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.parametrize("cache", [True, False])
def test_the_measured_key_cache_turns_the_anthropic_breakpoints_on_and_off(
    cache: bool, tmp_path: Path
) -> None:
    """cache = true (the default) marks the system prompt, the last tool and the last user message; false
    marks nothing."""
    with SseServer(Reply(body=anthropic_stream(answer(text=["hi"])))) as server:
        configure(tmp_path, server, "anthropic")
        config = tmp_path / "config" / "config.toml"
        config.write_text(f"cache = {str(cache).lower()}\n" + config.read_text())
        result = alisio(tmp_path, "run", "hi", "--cwd", str(tmp_path))
        assert result.returncode == 0, result.stderr
        body = server.requests[0].json()
    marked = json.dumps(body).count('"cache_control"')
    assert marked == (3 if cache else 0)
    assert ("cache_control" in body["system"][0]) is cache


def _cut_streams(api: str) -> tuple[bytes, bytes]:
    """A stream of ``api`` whose usage came first (Anthropic's message_start; a first Chat Completions chunk
    that carries usage), then text: the part before the cut, and the rest (the finish, the final usage)."""
    if api == "anthropic":
        body = anthropic_stream(
            answer(text=["Part one. ", "Part two."], input=1000, cache_read=200, output=40)
        )
        at = body.index(b"event: message_delta")
        return body[:at], body[at:]
    first = {
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Part one. "}}],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 0, "total_tokens": 1200},
    }
    head = sse_body([first, {"choices": [{"index": 0, "delta": {"content": "Part two."}}]}], done=False)
    return head, chat_stream(answer(text=[], input=1200, output=40))


@pytest.mark.parametrize("api", ["anthropic", "openai-chat"])
@pytest.mark.parametrize("cut", ["dropped", "ended"])
def test_a_cut_stream_keeps_the_input_tokens_it_reported_and_says_so(
    tmp_path: Path, api: str, cut: str
) -> None:
    """A stream that reported its usage first (input 1,200) and then broke off (the connection dropped, or the
    stream ended without a finish): the run ends error, but its tokens are not 'not reported': the
    provider_response keeps the 1,200 input tokens (no output count: one sent before the end is not the
    call's), an incident says so, and so do the usage line, eval show and the lab's record."""
    head, rest = _cut_streams(api)
    reply = Reply(body=head + rest, drop_after=len(head)) if cut == "dropped" else Reply(body=head)
    with SseServer(reply, reply) as server:
        configure(tmp_path, server, api)
        result = alisio(tmp_path, "run", "hi", "--cwd", str(tmp_path), "--json")
        suite = make_suite(tmp_path, suite_id="cut-suite")
        lab = alisio(tmp_path, "eval", "run", "cut-suite", "--suite-dir", str(suite), "--yes", "--allow-write",
                     "-k", "1", "--out", str(tmp_path / "out"))  # fmt: skip
    reason = "provider_network" if cut == "dropped" else "provider_stream"
    assert result.returncode == 1 and f"alisio run: error ({reason}): " in result.stderr, result.stderr
    events = [EVENTS.decode(line) for line in result.stdout.splitlines()]
    (response,) = [e for e in events if isinstance(e, ProviderResponded)]
    assert (response.finish_reason, response.text) == ("cut", "Part one. Part two.")
    assert response.usage is not None and response.usage.input_tokens == 1200
    assert (response.usage.output_tokens, response.usage.total_tokens) == (None, None)
    (incident,) = [e for e in events if isinstance(e, IncidentRaised) and e.kind == "usage_unreported"]
    assert re.fullmatch(
        r"cut mid-stream after \d+\.\d s, 19 characters: the 1,200 input tokens it reported before the cut "
        r"are kept, its output tokens were not reported",
        incident.message,
    )
    said = "1,200 in, 0 out tokens over 1 call (1 call cut short: its input as reported before the cut, no output)"
    assert re.fullmatch(
        rf"usage: {re.escape(said)}; 1 turn, 0 tool calls, \d+\.\d s", result.stderr.splitlines()[-1]
    )
    (kept,) = (tmp_path / "data" / "run").iterdir()
    shown = alisio(tmp_path, "eval", "show", str(kept))
    assert shown.stdout.startswith(f"alisio run {kept.name}: error ({reason}); {said}; 1 turn"), shown.stdout
    assert lab.returncode == 1, lab.stderr
    (record,) = [RECORD.decode(line) for line in (tmp_path / "out" / "runs.jsonl").read_bytes().splitlines()]
    assert (record.status, record.reason) == (RunStatus.ERROR, reason)
    measured = record.measured
    assert (measured.input_tokens, measured.output_tokens, measured.usage_complete) == (1200, None, False)
