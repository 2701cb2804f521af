"""Injected faults in the built-in provider's HTTP layer: the OpenAI-compatible provider against the mock
endpoint (a real local server), inside a run's ``run_wire``: what each fault does to a call, and the retries
that meet it (the transport's own, ``retries.max`` of the run)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from alisio.core.harness.faults import parse_faults
from alisio.core.harness.protocol import ProviderRequest, UserMessage, assemble
from alisio.core.harness.wire import Api
from alisio.shell.agents.mock_endpoint import MockEndpoint
from alisio.shell.harness.providers.base import ProviderFailure
from alisio.shell.harness.providers.faults import RunWire, run_wire
from alisio.shell.harness.providers.openai_compat import OpenAICompatProvider
from alisio.shell.harness.providers.streaming import StreamingProvider

REQUEST = ProviderRequest(model="m", instructions="Be brief.", messages=(UserMessage(content="hi"),))


@pytest.fixture
def endpoint() -> Iterator[MockEndpoint]:
    with MockEndpoint() as running:
        yield running


def _wire(spec: str, retries: int | None = None) -> RunWire:
    faults = parse_faults(spec).unwrap()
    assert faults is not None
    return RunWire(faults, "t/0", retries)


def test_a_429_is_retried_after_its_retry_after(endpoint: MockEndpoint) -> None:
    waits: list[float] = []
    notices: list[str] = []
    wire = _wire("429:0.5,seed=9,retry-after=3")  # run t/0's schedule: calls 0 and 1 faulted, call 2 not
    with OpenAICompatProvider(endpoint.base_url, "m", sleep=waits.append) as provider, run_wire(wire):
        events = provider.stream(REQUEST, notices.append)
    recorded = wire.recorded()
    assert recorded is not None
    assert [(hit.call, hit.kind) for hit in recorded.hits] == [(0, "429"), (1, "429")]
    assert recorded.calls == 3
    assert waits == [3.0, 3.0]  # exactly the retry-after the faults sent
    assert all("HTTP 429" in notice and "injected fault" in notice for notice in notices)
    assert assemble(events).unwrap().text == "Fix add"  # the answer that came through
    assert len(endpoint.model_calls) == 1  # only the call that went through reached the endpoint


def test_without_retries_the_first_fault_ends_the_call(endpoint: MockEndpoint) -> None:
    wire = _wire("503:1", retries=0)
    with (
        OpenAICompatProvider(endpoint.base_url, "m", sleep=lambda _s: None) as provider,
        run_wire(wire),
        pytest.raises(ProviderFailure) as failure,
    ):
        provider.stream(REQUEST)
    assert failure.value.kind == "server" and failure.value.status == 503
    recorded = wire.recorded()
    assert recorded is not None and recorded.calls == 1


def test_with_retries_the_same_faults_are_retried_until_the_transport_gives_up(
    endpoint: MockEndpoint,
) -> None:
    wire = _wire("500:1", retries=2)
    with (
        OpenAICompatProvider(endpoint.base_url, "m", sleep=lambda _s: None) as provider,
        run_wire(wire),
        pytest.raises(ProviderFailure) as failure,
    ):
        provider.stream(REQUEST)
    assert failure.value.kind == "server"
    recorded = wire.recorded()
    assert recorded is not None and recorded.calls == 3  # the first try and 2 retries
    assert endpoint.model_calls == []


def test_a_stall_waits_out_the_read_timeout_then_retries(endpoint: MockEndpoint) -> None:
    wire = _wire("stall:1", retries=1)
    started = time.monotonic()
    with (
        OpenAICompatProvider(endpoint.base_url, "m", read_timeout=0.3, sleep=lambda _s: None) as provider,
        run_wire(wire),
        pytest.raises(ProviderFailure) as failure,
    ):
        provider.stream(REQUEST)
    elapsed = time.monotonic() - started
    assert failure.value.kind == "timeout"
    assert 0.6 <= elapsed < 5  # two attempts, each waiting out the 0.3 s read timeout


def test_a_cut_mid_stream_is_not_retried(endpoint: MockEndpoint) -> None:
    wire = _wire("cut:1")
    with (
        OpenAICompatProvider(endpoint.base_url, "m", sleep=lambda _s: None) as provider,
        run_wire(wire),
        pytest.raises(ProviderFailure) as failure,
    ):
        provider.stream(REQUEST)
    assert failure.value.kind == "network"
    assert "mid-stream" in failure.value.message
    recorded = wire.recorded()
    assert recorded is not None and recorded.calls == 1  # a stream that broke after events is not retried


def test_a_slow_drip_gives_the_same_answer_later(endpoint: MockEndpoint) -> None:
    with OpenAICompatProvider(endpoint.base_url, "m") as provider:
        clean = provider.stream(REQUEST)
    wire = _wire("slow:1,drip-ms=30")
    started = time.monotonic()
    with OpenAICompatProvider(endpoint.base_url, "m") as provider, run_wire(wire):
        slow = provider.stream(REQUEST)
    assert time.monotonic() - started >= 0.3  # ten pieces, 30 ms apart
    assert assemble(slow).unwrap() == assemble(clean).unwrap()


def test_outside_a_run_nothing_is_faulted(endpoint: MockEndpoint) -> None:
    with OpenAICompatProvider(endpoint.base_url, "m") as provider:
        assert assemble(provider.stream(REQUEST)).unwrap().text == "Fix add"


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_every_api_retries_its_own_429_after_the_wait_it_asks(endpoint: MockEndpoint, api: Api) -> None:
    """The fault reaches each api's provider in that api's shape: it reads it as a rate limit and waits what
    the fault asked (``retry-after``; Gemini's also in its ``RetryInfo``), then gets the real answer."""
    waits: list[float] = []
    wire = _wire("429:0.5,seed=9,retry-after=3")  # run t/0's schedule: calls 0 and 1 faulted, call 2 not
    with StreamingProvider(endpoint.base_url, "m", api=api, sleep=waits.append) as provider, run_wire(wire):
        events = provider.stream(REQUEST)
    assert waits == [3.0, 3.0]
    assert assemble(events).unwrap().finish_reason
    assert len(endpoint.model_calls) == 1
