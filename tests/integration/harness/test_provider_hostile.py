"""The built-in provider against a hostile server of the tests' own, through the CLI: absurd usage (issue 26
item 14, D7) and streams whose end event comes before the answer (item 17, D10), on each api."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from alisio.core.harness.wire import APIS
from tests.integration.harness.test_provider_apis import RENDER, alisio, answer, configure
from tests.integration.helpers import make_suite, read_runs
from tests.integration.sse_server import Reply, SseServer

ABSURD = 10**30


@pytest.mark.parametrize("api", APIS)
def test_absurd_usage_is_unreported_and_the_report_and_its_resume_survive(api: str, tmp_path: Path) -> None:
    """A provider reporting 10**30 input tokens: each turn's usage is unreported with an incident naming the
    count (never an OverflowError), the report is written, and --resume reads the directory back."""
    body = RENDER[api](answer(text=["Nothing to fix."], input=ABSURD))
    with SseServer(respond=lambda _: Reply(body=body)) as server:
        configure(tmp_path, server, api)
        suite = make_suite(tmp_path)
        out = tmp_path / "out"
        grants = ("--yes", "--allow-write")
        done = alisio(
            tmp_path,
            "eval",
            "run",
            "calc-suite",
            "--suite-dir",
            str(suite),
            *grants,
            "-k",
            "2",
            "--out",
            str(out),
        )
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        records = read_runs(out)
        assert [(r.status.value, r.measured.input_tokens, r.measured.usage_complete) for r in records] == [
            ("fail", None, False)
        ] * 2
        for record in records:
            (incident,) = [i for i in record.incidents if i.kind == "usage_unreported"]
            assert f"is {ABSURD}" in incident.message
            assert (
                "a count must be an integer from 0 to 1000000000): treated as unreported" in incident.message
            )
        report = json.loads((out / "report.json").read_text())
        assert report["summary"]["runs"] == 2
        resumed = alisio(tmp_path, "eval", "run", "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr


def test_a_record_with_an_absurd_count_is_refused_on_resume_naming_it(tmp_path: Path) -> None:
    """A runs.jsonl holding a total no run can have (written by an alisio before the parser refused such
    usage) is refused by --resume with one line naming the file, the line and the field: no traceback."""
    body = RENDER["openai-chat"](answer(text=["Nothing to fix."]))
    with SseServer(respond=lambda _: Reply(body=body)) as server:
        configure(tmp_path, server, "openai-chat")
        suite = make_suite(tmp_path)
        out = tmp_path / "out"
        done = alisio(
            tmp_path,
            "eval",
            "run",
            "calc-suite",
            "--suite-dir",
            str(suite),
            "--yes",
            "--allow-write",
            "--out",
            str(out),
        )
        assert done.returncode == 0, done.stderr
        runs = out / "runs.jsonl"
        first, *rest = runs.read_text().splitlines()
        line = json.loads(first)
        line["measured"]["inputTokens"] = ABSURD
        runs.write_text("\n".join([json.dumps(line), *rest]) + "\n")
        resumed = alisio(tmp_path, "eval", "run", "--resume", str(out))
    assert resumed.returncode == 1, resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert (
        str(runs) in resumed.stderr
        and "line 1" in resumed.stderr
        and "$.measured.inputTokens" in resumed.stderr
    )


def _sse(*events: tuple[str, object]) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


TEXT = {"type": "text", "text": ""}
END_FIRST = {
    "anthropic": (
        _sse(
            ("message_stop", {"type": "message_stop"}),
            ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 5}, "content": []}}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": TEXT}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
        ),
        "stream events out of order: message_stop before message_start",
    ),
    "anthropic-open-block": (
        _sse(
            ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 5}, "content": []}}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": TEXT}),
            ("message_stop", {"type": "message_stop"}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
        ),
        "stream events out of order: message_stop while content block 0 is still open",
    ),
    "anthropic-no-message-delta": (
        _sse(
            ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 5}, "content": []}}),
            ("message_stop", {"type": "message_stop"}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": TEXT}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
        ),
        "stream events out of order: message_stop before message_delta",
    ),
    "openai-responses": (
        _sse(
            ("response.completed", {"type": "response.completed", "response": {"status": "completed", "output": []}}),
            ("response.output_text.delta", {"type": "response.output_text.delta", "output_index": 0, "delta": "hi"}),
        ),
        "stream events out of order: response.completed is the stream's first event",
    ),
    "openai-responses-undelivered": (
        _sse(
            ("response.created", {"type": "response.created", "response": {}}),
            ("response.completed", {"type": "response.completed", "response": {"status": "completed", "output": [{"type": "message"}]}}),
            ("response.output_text.delta", {"type": "response.output_text.delta", "output_index": 0, "delta": "hi"}),
        ),
        "stream events out of order: response.completed lists 1 output items, the stream delivered 0",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(END_FIRST))
def test_a_stream_whose_end_comes_before_its_answer_is_a_protocol_error(case: str, tmp_path: Path) -> None:
    """The end event (Anthropic's message_stop, Responses' response.completed) comes before the answer's
    blocks or deltas: the call fails as a protocol error naming the order, as malformed JSON does, instead of
    being an empty answer."""
    body, expected = END_FIRST[case]
    api = "anthropic" if case.startswith("anthropic") else "openai-responses"
    with SseServer(respond=lambda _: Reply(body=body)) as server:
        configure(tmp_path, server, api)
        done = alisio(tmp_path, "run", "hi", "--cwd", str(tmp_path), "--json")
    assert done.returncode != 0, done.stdout
    assert expected in done.stdout + done.stderr, done.stdout + done.stderr
