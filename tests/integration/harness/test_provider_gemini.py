"""The gemini api end to end, through the ``alisio`` command against local servers.

- ``alisio run`` (the installed command, in its own process) loops over a thought, two signed function
  calls, an edit and a final answer: each request carries the model in its path, the key in
  ``x-goog-api-key``, and every earlier thought part and signature back on the part it came with;
- ``eval run`` live, ``eval record``, then ``eval run --mode replay`` without divergence, with the usage in
  the lab's convention (output = candidates + thoughts);
- ``--provider gemini`` against the scripted endpoint (``MockEndpoint``), which speaks Gemini by path;
- a 429 with ``RetryInfo`` is retried after the delay it names, and the command says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from alisio.core.lab.reports.report import Report
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.replay.cassette import decode_cassette
from alisio.shell.agents.mock_endpoint import MockEndpoint
from tests.integration.helpers import alisio as run_cli
from tests.integration.helpers import make_suite, write_config
from tests.integration.sse_server import Reply, SseServer

KEY_VAR = "E2E_GEMINI_KEY"
KEY = "k-e2e-gemini-not-a-real-key-0123"
RECORD = msgspec.json.Decoder(RunRecord)

TURNS: tuple[dict[str, Any], ...] = (
    {
        "thought": "Look at the file and the tree.",
        "calls": [("read_file", {"path": "src/calc.py"}, "SIG-one+/="), ("list_dir", {"path": "."}, None)],
        "usage": {"promptTokenCount": 120, "candidatesTokenCount": 20, "thoughtsTokenCount": 7},
    },
    {
        "thought": "Now fix it.",
        "calls": [
            ("edit_file", {"path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"}, "SIG-two")
        ],
        "usage": {"promptTokenCount": 300, "cachedContentTokenCount": 160, "candidatesTokenCount": 30},
    },
    {
        "text": ["Fixed add ", "in src/calc.py."],
        "signature": "SIG-end",
        "usage": {"promptTokenCount": 400, "cachedContentTokenCount": 300, "candidatesTokenCount": 8},
    },
)


def gemini_stream(turn: dict[str, Any]) -> bytes:
    """A turn as Gemini 2.5 streams it: the thought part, then each call in its own chunk (no ids), the text
    in pieces with the signature on an empty last text part; the finish and the usage on the last chunk."""
    parts: list[dict[str, Any]] = []
    if "thought" in turn:
        parts.append({"text": turn["thought"], "thought": True})
    for name, args, signature in turn.get("calls", []):
        parts.append(
            {"functionCall": {"name": name, "args": args}}
            | ({"thoughtSignature": signature} if signature else {})
        )
    parts += [{"text": piece} for piece in turn.get("text", [])]
    if "signature" in turn:
        parts.append({"text": "", "thoughtSignature": turn["signature"]})
    chunks: list[dict[str, Any]] = [
        {"candidates": [{"content": {"parts": [part], "role": "model"}, "index": 0}]} for part in parts
    ]
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    usage = turn["usage"]
    total = usage["promptTokenCount"] + usage["candidatesTokenCount"] + usage.get("thoughtsTokenCount", 0)
    chunks[-1]["usageMetadata"] = usage | {"totalTokenCount": total}
    chunks[-1]["modelVersion"] = "gemini-2.5-flash"
    return "".join(f"data: {json.dumps(chunk)}\r\n\r\n" for chunk in chunks).encode()


def replies() -> list[Reply]:
    return [Reply(body=gemini_stream(turn)).split(seed=n, max_piece=60) for n, turn in enumerate(TURNS)]


def configure(home: Path, base_url: str) -> None:
    write_config(
        home,
        f'[provider]\napi = "gemini"\nbaseUrl = "{base_url}"\nmodel = "gemini-2.5-flash"\napiKeyEnv = "{KEY_VAR}"\n',
    )


def alisio(home: Path, *args: str | Path, process: bool = False) -> Any:
    return run_cli(home, *args, env={"TMPDIR": str(home), KEY_VAR: KEY}, process=process)


def check_requests(server: SseServer) -> None:
    """Path, key header, and each earlier model turn sent back part for part."""
    assert len(server.requests) == 3
    for request in server.requests:
        assert request.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        assert request.headers["x-goog-api-key"] == KEY and "authorization" not in request.headers
    bodies = [request.json() for request in server.requests]
    assert [c["role"] for c in bodies[2]["contents"]] == ["user", "model", "user", "model", "user"]
    first_model, results = bodies[1]["contents"][1], bodies[1]["contents"][2]
    assert first_model["parts"] == [
        {"text": "Look at the file and the tree.", "thought": True},
        {
            "functionCall": {"name": "read_file", "args": {"path": "src/calc.py"}},
            "thoughtSignature": "SIG-one+/=",
        },
        {"functionCall": {"name": "list_dir", "args": {"path": "."}}},
    ]
    assert [p["functionResponse"]["name"] for p in results["parts"]] == ["read_file", "list_dir"]
    assert not any("id" in p["functionResponse"] for p in results["parts"])  # the API gave no ids
    assert bodies[2]["contents"][3]["parts"][1]["thoughtSignature"] == "SIG-two"
    assert "model" not in bodies[0] and bodies[0]["tools"][0]["functionDeclarations"]


def test_alisio_run_loops_over_signed_calls_and_sends_them_back(tmp_path: Path) -> None:
    """The installed command fixes the workspace in three calls; the answer is the final text; every
    request sends the earlier thoughts and signatures back where they came from; the key is never shown."""
    workspace = make_suite(tmp_path) / "fixtures" / "calc"
    with SseServer(*replies()) as server:
        configure(tmp_path, server.url + "/v1beta")
        result = alisio(
            tmp_path, "run", "Fix add in src/calc.py.", "--cwd", workspace, "--allow-write", process=True
        )
        assert result.returncode == 0, result.stderr
        check_requests(server)
    assert result.stdout == "Fixed add in src/calc.py.\n"
    assert "a + b" in (workspace / "src" / "calc.py").read_text()
    assert KEY not in result.stdout + result.stderr


def runs(directory: Path) -> list[RunRecord]:
    return [RECORD.decode(line) for line in (directory / "runs.jsonl").read_bytes().splitlines()]


def test_eval_live_then_record_then_replay_without_divergence(tmp_path: Path) -> None:
    """eval run live passes with the usage in the lab's convention; eval record keeps the signatures in the
    cassette; the replay passes with the same numbers and no divergence."""
    suite = make_suite(tmp_path)
    common = ("calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write")
    with SseServer(*replies(), *replies()) as server:
        configure(tmp_path, server.url + "/v1beta")
        live = alisio(tmp_path, "eval", "run", *common, "-k", "1", "--out", tmp_path / "live")
        assert live.returncode == 0, live.stderr
        recorded = alisio(tmp_path, "eval", "record", *common)
        assert recorded.returncode == 0, recorded.stderr
    (run,) = runs(tmp_path / "live")
    assert run.status is RunStatus.PASS
    measured = run.measured
    assert measured.input_tokens == 120 + 300 + 400  # the prompt counts, cached included
    assert measured.cached_input_tokens == 160 + 300
    assert measured.output_tokens == (20 + 7) + 30 + 8  # candidates + thoughts
    report = msgspec.json.decode((tmp_path / "live" / "report.json").read_bytes(), type=Report)
    assert (report.conditions.model, report.conditions.provider) == ("gemini-2.5-flash", "gemini")
    cassette = decode_cassette((suite / "cassettes" / "fix-add.jsonl").read_bytes(), "c").unwrap()
    blocks = [b for m in cassette.calls[2].request.messages for b in getattr(m, "reasoning_blocks", ())]
    assert [b.kind for b in blocks] == ["thought", "thought_signature", "thought", "thought_signature"]
    replayed = alisio(tmp_path, "eval", "run", *common, "--mode", "replay", "--out", tmp_path / "replay")
    assert replayed.returncode == 0, replayed.stderr
    (again,) = runs(tmp_path / "replay")
    assert again.status is RunStatus.PASS and again.divergence is None
    assert (again.measured.turns, again.measured.tool_calls) == (3, 3)
    assert again.measured.output_tokens == measured.output_tokens


def test_the_gemini_preset_against_the_scripted_endpoint(tmp_path: Path) -> None:
    """--provider gemini with --base-url at the scripted endpoint: its default fix-add answers, in Gemini's
    shape, drive the built-in agent to a fixed workspace; the endpoint saw Gemini requests."""
    workspace = make_suite(tmp_path) / "fixtures" / "calc"
    with MockEndpoint() as endpoint:
        base = endpoint.base_url.removesuffix("/v1") + "/v1beta"
        result = run_cli(
            tmp_path, "run", "Fix add in src/calc.py.", "--cwd", workspace, "--allow-process",
            "--provider", "gemini", "--base-url", base, "--model", "gemini-2.5-flash", process=True,
        )  # fmt: skip
        calls = endpoint.model_calls
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Fixed: add returns a + b.\n"
    assert "a + b" in (workspace / "src" / "calc.py").read_text()
    assert [c.path for c in calls] == ["/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"] * 2
    assert "contents" in json.loads(calls[0].body) and "x-goog-api-key" not in calls[0].headers  # no key set


def test_a_429_with_retry_info_is_waited_out_and_said(tmp_path: Path) -> None:
    """A 429 whose body names ``retryDelay: 0.3s`` (no Retry-After header): the command says it retries, the
    run's transcript says in 0.3 s (the delay the body named, not a backoff draw), then it answers."""
    limited = {
        "error": {
            "code": 429,
            "message": "Resource has been exhausted (e.g. check quota).",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.3s"}],
        }
    }
    final = gemini_stream(TURNS[2])
    with SseServer(Reply.json(limited, status=429), Reply(body=final)) as server:
        configure(tmp_path, server.url + "/v1beta")
        result = alisio(tmp_path, "run", "Say it.", "--cwd", tmp_path)
        asked = len(server.requests)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Fixed add in src/calc.py.\n" and asked == 2
    assert "(provider retry: HTTP 429 from" in result.stderr
    (transcript,) = (tmp_path / "data" / "run").glob("*/transcript.jsonl")
    incidents = [
        json.loads(line) for line in transcript.read_text().splitlines() if '"provider_retry"' in line
    ]
    assert [event["message"].rpartition(": ")[2] for event in incidents] == [
        "Resource has been exhausted (e.g. check quota).; retry 1 of 4 in 0.3 s"
    ]
