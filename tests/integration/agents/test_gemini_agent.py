"""An external agent on the Gemini API, through the real ``alisio`` command and the recording proxy, against
the scripted endpoint (which speaks Gemini by path): the proxy passes the bytes through, adds the real key in
``x-goog-api-key``, counts each call's usage in the lab's convention and holds the budgets; a recorded run
replays without the endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from alisio.shell.agents.mock_endpoint import MockEndpoint
from tests.integration.agents.test_external_agents import (
    SECRET,
    _agent,
    _agent_exit,
    _config,
    _eval,
    _records,
    _suite,
    _task,
)

pytestmark = pytest.mark.xdist_group("external-agents")

AGENTS = (
    _agent("fake-g", "--api", "gemini", "--mode", "env", api='"gemini"')
    + _agent("fake-g-loop", "--api", "gemini", "--model", "loop", api='"gemini"')
    + _agent("fake-g-fail", "--api", "gemini", "--model", "fail", api='"gemini"')
)


@pytest.fixture
def endpoint() -> Iterator[MockEndpoint]:
    with MockEndpoint() as running:
        yield running


def test_a_gemini_agent_runs_through_the_proxy(tmp_path: Path, endpoint: MockEndpoint) -> None:
    """fix-add passes; the tokens are the endpoint's (100 in, 40 of them cached, 10 out per call); a token
    budget stops the looping agent; a provider failure is the run's error; the real key reached the endpoint
    only in x-goog-api-key, the agent held only its run's token and the proxy's URL without a version."""
    _config(tmp_path, AGENTS)
    tasks = [
        _task("normal", "fake-g"),
        _task("tokens", "fake-g-loop", maxTokens=200),
        _task("fail", "fake-g-fail"),
    ]
    suite = _suite(tmp_path, tasks)
    out = tmp_path / "out"
    done = _eval(tmp_path, "run", suite, "--k", "1", "--base-url", endpoint.base_url, "--out", out,
                 env={"OPENAI_API_KEY": SECRET})  # fmt: skip
    assert done.returncode == 1, done.stderr  # the failing run ended error
    records = _records(out)
    assert {t: (r.status.value, r.reason) for t, r in records.items()} == {
        "normal": ("pass", None),
        "tokens": ("budget_exceeded", "maxTokens"),
        "fail": ("error", "provider_error"),
    }
    normal = records["normal"].measured
    assert (normal.turns, normal.tool_calls) == (2, 1)
    assert (normal.input_tokens, normal.output_tokens, normal.cached_input_tokens) == (200, 20, 80)
    assert records["tokens"].measured.turns == 2  # 110 + 110 tokens reach 200: no third call
    assert "HTTP 500: scripted failure" in " ".join(records["fail"].errors)
    log = endpoint.model_calls
    # the agent posted to /v1beta/models/...; the proxy put the lab's base URL (the endpoint's /v1) instead
    assert {r.path for r in log} == {
        "/v1/models/m:streamGenerateContent?alt=sse",
        "/v1/models/loop:streamGenerateContent?alt=sse",
        "/v1/models/fail:streamGenerateContent?alt=sse",
    }
    assert len(log) == 2 + 2 + 1
    assert {r.headers.get("x-goog-api-key") for r in log} == {SECRET}
    assert not any("authorization" in r.headers for r in log)
    seen = json.loads(_agent_exit(out, "normal")["stdout"].splitlines()[0])
    assert seen["GEMINI_API_KEY"].startswith("alisio-run-") and SECRET not in json.dumps(seen)
    assert seen["GOOGLE_GEMINI_BASE_URL"].startswith("http://127.0.0.1:")
    assert not seen["GOOGLE_GEMINI_BASE_URL"].endswith("/v1beta")  # the SDK adds its version itself
    for path in (out / "runs").rglob("*.jsonl"):
        assert SECRET not in path.read_text()


def test_a_recorded_gemini_agent_replays_without_the_endpoint(tmp_path: Path, endpoint: MockEndpoint) -> None:
    """eval record, then eval run --mode replay: it passes from the cassette, and the endpoint is not asked."""
    _config(tmp_path, AGENTS)
    suite = _suite(tmp_path, [{**_task("plain", "fake-g"), "agent": None}])
    recorded = _eval(tmp_path, "record", suite, "--agent", "fake-g", "--base-url", endpoint.base_url,
                     env={"OPENAI_API_KEY": SECRET})  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    asked = len(endpoint.requests)
    cassette = suite / "cassettes" / "fake-g" / "plain.jsonl"
    assert SECRET not in cassette.read_text() and "contents" in cassette.read_text()
    replayed = _eval(tmp_path, "run", suite, "--agent", "fake-g", "--mode", "replay", "--out", tmp_path / "r")
    assert replayed.returncode == 0, replayed.stderr
    (record,) = _records(tmp_path / "r").values()
    assert record.status.value == "pass" and record.divergence is None
    assert (record.measured.turns, record.measured.input_tokens) == (2, 200)
    assert len(endpoint.requests) == asked
