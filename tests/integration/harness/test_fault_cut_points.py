"""Where an injected ``cut`` breaks, and a faulted replay breaking there again.

A cut's hit keeps how many stream events the harness received before the break
(``alisio.shell.harness.providers.faults.cut_point``). These tests hold it to what the real transport does
with the same bytes: every recorded provider stream of tests/fixtures/provider-streams (each api), served by
a real local server and cut at its event boundaries, through the built-in provider; and then a recording
under cuts, replayed from its cassette (``FaultedReplayProvider``), meeting each cut's effect again: the
answer's end before the break, a break after some events, a break before the first.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from alisio.core.harness.faults import FaultHit, fault_at, parse_faults
from alisio.core.harness.protocol import ProviderRequest, StreamEvent, UserMessage
from alisio.core.harness.wire import Api
from alisio.core.lab.runs.records import RunFaults
from alisio.core.replay.cassette import Cassette, CassetteHeader, decode_cassette, encode_cassette
from alisio.shell.harness.providers.base import ProviderFailure
from alisio.shell.harness.providers.faulted_replay import FaultedReplayProvider
from alisio.shell.harness.providers.faults import RunWire, run_wire
from alisio.shell.harness.providers.recording import RecordingProvider
from alisio.shell.harness.providers.streaming import StreamingProvider
from tests.integration.sse_server import RecordedRequest, Reply, SseServer, sse_body

STREAMS = Path(__file__).resolve().parents[2] / "fixtures" / "provider-streams"
RECORDINGS = sorted(path for path in STREAMS.rglob("*.json") if not path.name.endswith(".body.json"))
REQUEST = ProviderRequest(model="m", instructions="Be brief.", messages=(UserMessage(content="hi"),))


def _recording(meta_path: Path) -> tuple[Api, bytes, str]:
    meta = json.loads(meta_path.read_text())
    body = (meta_path.parent / meta["file"]).read_bytes()
    content_type = "application/json" if meta["file"].endswith(".json") else "text/event-stream"
    return meta.get("api", "openai-chat"), body, content_type


def _keeps(body: bytes, seed: str) -> list[int]:
    """Where to cut: the ends, the middle, and around event boundaries (a sample of them)."""
    ends = [match.end() for match in re.finditer(rb"\r?\n\r?\n", body)]
    near = sorted({at + step for at in ends for step in (-1, 0, 1) if 0 <= at + step <= len(body)})
    rng = random.Random(seed)
    return sorted({0, 1, len(body) // 2, len(body), *rng.sample(near, min(12, len(near)))})


class _Serving:
    """What the local server answers next (a cut's body is its kept prefix, then as many bytes again)."""

    reply = Reply()

    def __call__(self, _request: RecordedRequest) -> Reply:
        return self.reply


@pytest.fixture(scope="module")
def serving() -> Iterator[tuple[SseServer, _Serving]]:
    answer = _Serving()
    with SseServer(respond=answer) as server:
        yield server, answer


def _outcome(provider: StreamingProvider, wire: RunWire) -> tuple[str, int | None]:
    """What the transport did: ``ended`` (the answer came whole), ``after`` N events, or ``before`` any."""
    with run_wire(wire):
        try:
            provider.stream(REQUEST)
        except ProviderFailure as failure:
            assert failure.kind == "network", failure.message
            found = re.search(r"broke off mid-stream after (\d+) events", failure.message)
            return ("after", int(found.group(1))) if found else ("before", 0)
    return "ended", None


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.stem)
def test_a_cut_point_is_where_the_transport_meets_the_break(
    serving: tuple[SseServer, _Serving], recording: Path
) -> None:
    server, answer = serving
    api, body, content_type = _recording(recording)
    spec = parse_faults("cut:1").unwrap()
    assert spec is not None
    with StreamingProvider(server.base_url, "m", api=api, max_retries=0) as provider:
        for keep in _keeps(body, recording.name):
            answer.reply = Reply(body=body[:keep] + b"\0" * keep, content_type=content_type)
            wire = RunWire(spec, "t/0", max_retries=0)
            outcome = _outcome(provider, wire)
            (hit,) = wire.hits
            assert hit.events is not None, keep
            said = ("ended", None) if hit.ended else ("after", hit.events) if hit.events else ("before", 0)
            assert said == outcome, f"{recording.name} cut after {keep} of {len(body)} bytes"
            if content_type != "text/event-stream":
                assert outcome == ("before", 0)  # a JSON answer is read whole before any event


def test_an_error_answer_cut_breaks_before_any_event(serving: tuple[SseServer, _Serving]) -> None:
    server, answer = serving
    answer.reply = Reply.json({"error": {"message": "overloaded"}}, status=529)
    spec = parse_faults("cut:1").unwrap()
    assert spec is not None
    wire = RunWire(spec, "t/0", max_retries=0)
    with StreamingProvider(server.base_url, "m", max_retries=0) as provider:
        assert _outcome(provider, wire) == ("before", 0)
    assert wire.hits == [FaultHit(call=0, kind="cut", events=0)]


CHUNK = {"id": "c", "object": "chat.completion.chunk", "model": "m"}


def _chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
    return CHUNK | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


SHORT_THEN_LONG = sse_body(
    [_chunk({"role": "assistant", "content": "Hi"}), _chunk({"content": "x" * 3000}), _chunk({}, "stop")]
)
"""Cut in half: the first event whole, then the break (the call fails after 1 event)."""
LONG_FIRST = sse_body([_chunk({"role": "assistant", "content": "y" * 3000}), _chunk({}, "stop")])
"""Cut in half: the break inside the first event (retried)."""
ENDED_EARLY = (
    sse_body([_chunk({"role": "assistant", "content": "Hi"}), _chunk({}, "stop")]) + b": keep\n" * 200
)
"""Cut in half: the whole answer, ``[DONE]`` included, before the break (the harness never meets it)."""


def _seed(run: str) -> str:
    """A spec whose schedule cuts call 0 of ``run`` and lets call 1 through."""
    for seed in range(1000):
        spec = parse_faults(f"cut:0.5,seed={seed}").unwrap()
        assert spec is not None
        if fault_at(spec, run, 0) == "cut" and fault_at(spec, run, 1) is None:
            return f"cut:0.5,seed={seed}"
    raise AssertionError("no seed")  # pragma: no cover


def _through(provider: object, wire: RunWire) -> tuple[tuple[StreamEvent, ...] | str, int, RunFaults | None]:
    """The call's events or its failure (kind, message from ``after``, partial events), how often its first
    event arrived, and the run's faults."""
    firsts: list[None] = []
    with run_wire(wire):
        try:
            result: tuple[StreamEvent, ...] | str = provider.stream(  # type: ignore[attr-defined]
                REQUEST, on_first_event=lambda: firsts.append(None)
            )
        except ProviderFailure as failure:
            detail = (
                failure.message[failure.message.index("broke off") :]
                if "broke off" in failure.message
                else ""
            )
            result = f"{failure.kind}: {detail} {failure.partial!r}"
    return result, len(firsts), wire.recorded()


@pytest.mark.parametrize(
    ("body", "effect"),
    [(ENDED_EARLY, "ended"), (SHORT_THEN_LONG, "after"), (LONG_FIRST, "before")],
    ids=["answer-ended-first", "after-the-first-event", "before-the-first-event"],
)
def test_a_faulted_replay_breaks_where_the_recording_did(
    serving: tuple[SseServer, _Serving], body: bytes, effect: str
) -> None:
    server, answer = serving
    answer.reply = Reply(body=body)
    spec = parse_faults(_seed("t/0")).unwrap()
    assert spec is not None
    with StreamingProvider(server.base_url, "m", max_retries=1, sleep=lambda _s: None) as live:
        recording = RecordingProvider(live, ())
        recorded = _through(recording, RunWire(spec, "t/0", max_retries=1))
    faults = recorded[2]
    assert faults is not None
    (hit,) = faults.hits
    assert (hit.call, hit.kind) == (0, "cut")
    assert effect == ("ended" if hit.ended else "after" if hit.events else "before")
    # the cassette as eval record writes it (a failed call is not among its calls), read back from its bytes
    header = CassetteHeader(
        format="cassette/v1", suite_id="s", suite_version="1", task_id="t", config_hash="h",
        harness_version="0", model="m", provider="p", faults="x", fault_record=faults,
        partial_events=recording.broken if effect == "after" else (),
    )  # fmt: skip
    data = encode_cassette(Cassette(header=header, calls=recording.calls))
    cassette = decode_cassette(data, "t.jsonl").unwrap()
    replay = FaultedReplayProvider(cassette)
    replayed = _through(replay, RunWire(spec, "t/0", max_retries=1))
    assert replayed == recorded  # the events or the failure, the first event, the faults and hits
    assert replay.calls_made == len(cassette.calls) and replay.divergence is None
    if effect == "after":
        assert recording.calls == () and recording.broken  # the call failed, its partial answer kept
    else:
        assert len(recording.calls) == 1
