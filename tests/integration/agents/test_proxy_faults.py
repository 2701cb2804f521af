"""Injected faults on an external agent's wire: the recording proxy (a real server) in front of the mock
endpoint (a real server), asked as an agent asks, over HTTP; and a whole ``eval run`` of an agent CLI."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from alisio.core.harness.budget import RunBudget
from alisio.core.harness.faults import parse_faults
from alisio.shell.agents.mock_endpoint import MockEndpoint
from alisio.shell.agents.proxy import RunProxy
from alisio.shell.harness.providers.faults import RunWire
from tests.integration.helpers import ROOT, alisio, read_runs, write_config

TOKEN = "alisio-run-token"
BUDGET = RunBudget(max_turns=20, max_wall_ms=60000)
CHAT = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "fix it"}], "tools": []}
MESSAGES = {
    "model": "m",
    "stream": True,
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "fix it"}],
}
FAKE = ROOT / "tests" / "integration" / "fake_agent.py"


@pytest.fixture
def endpoint() -> Iterator[MockEndpoint]:
    with MockEndpoint() as running:
        yield running


def _wire(spec: str) -> RunWire:
    faults = parse_faults(spec).unwrap()
    assert faults is not None
    return RunWire(faults, "fix-add/0")


def _post(proxy: RunProxy, path: str, body: dict[str, object], api_key: bool = False) -> httpx.Response:
    headers = {"x-api-key": TOKEN} if api_key else {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(timeout=30) as client:
        return client.post(proxy.url + path, json=body, headers=headers)


@pytest.mark.parametrize(
    ("api", "path", "body", "error"),
    [
        (
            "openai-chat",
            "/v1/chat/completions",
            CHAT,
            {"type": "rate_limit_exceeded", "code": "rate_limit_exceeded"},
        ),
        ("anthropic", "/v1/messages", MESSAGES, {"type": "rate_limit_error"}),
    ],
)
def test_a_429_reaches_the_agent_in_its_apis_shape_with_a_retry_after(
    endpoint: MockEndpoint, api: str, path: str, body: dict[str, object], error: dict[str, str]
) -> None:
    wire = _wire("429:1,retry-after=7")
    with RunProxy(api, endpoint.base_url, "sk-real", BUDGET, token=TOKEN, faults=wire) as proxy:  # type: ignore[arg-type]
        answer = _post(proxy, path, body, api_key=api == "anthropic")
    assert answer.status_code == 429
    assert answer.headers["retry-after"] == "7"
    sent = answer.json()
    found = sent["error"]
    assert {key: found[key] for key in error} == error
    assert "injected fault" in found["message"]
    if api == "anthropic":
        assert sent["type"] == "error"
    assert endpoint.model_calls == []  # a refused call never reaches the provider
    recorded = wire.recorded()
    assert recorded is not None and [(h.call, h.kind) for h in recorded.hits] == [(0, "429")]
    assert [call.status for call in proxy.calls] == [429]  # kept as the call the agent saw


def test_a_cut_breaks_the_relayed_stream_after_half_of_it(endpoint: MockEndpoint) -> None:
    with RunProxy("openai-chat", endpoint.base_url, None, BUDGET, token=TOKEN) as clean_proxy:
        whole = _post(clean_proxy, "/v1/chat/completions", CHAT).content
    wire = _wire("cut:1")
    with RunProxy("openai-chat", endpoint.base_url, None, BUDGET, token=TOKEN, faults=wire) as proxy:
        with pytest.raises(httpx.RemoteProtocolError):
            _post(proxy, "/v1/chat/completions", CHAT)
        assert len(endpoint.model_calls) == 2  # the cut call reached the provider
    kept = proxy.calls[0]
    assert 0 < len(kept.response) <= len(whole) // 2


def test_without_faults_the_proxy_relays_untouched(endpoint: MockEndpoint) -> None:
    wire = _wire("500:0")  # a spec whose schedule never faults
    with RunProxy("openai-chat", endpoint.base_url, None, BUDGET, token=TOKEN, faults=wire) as proxy:
        answer = _post(proxy, "/v1/chat/completions", CHAT)
    assert answer.status_code == 200
    recorded = wire.recorded()
    assert recorded is not None and recorded.calls == 1 and recorded.hits == ()


def test_an_external_agent_without_retries_fails_on_a_500_and_its_record_says_which_call(
    home: Path, tmp_path: Path, endpoint: MockEndpoint
) -> None:
    suite = tmp_path / "agents-suite"
    shutil.copytree(ROOT / "suites" / "smoke-coding" / "fixtures" / "fix-add", suite / "fixtures" / "fix-add")
    task = {
        "id": "fix-add",
        "prompt": "Fix add in src/calc.py.",
        "fixture": "fixtures/fix-add",
        "agent": "fake",
        "budget": {"maxTurns": 10, "maxWallMs": 30000},
        "policy": {"mode": "auto", "allow": ["write", "process"]},
        "verifiers": [
            {"kind": "command", "id": "check", "command": ["python3", "check.py"], "timeoutMs": 30000}
        ],
    }
    document = {"schemaVersion": 1, "suiteId": "agents-suite", "suiteVersion": "1.0.0", "description": "x"}
    (suite / "suite.json").write_text(json.dumps({**document, "tasks": [task]}))
    command = json.dumps(["python3", str(FAKE), "--prompt-file", "{prompt_file}"])
    version = json.dumps(["python3", str(FAKE), "--version"])
    agent = f'[agents.fake]\nkind = "command"\ncommand = {command}\nversion = {version}\ntools = {{ bash = "bash" }}\n'
    write_config(home, f'[provider]\nmodel = "m"\n\n{agent}')
    out = tmp_path / "out"
    result = alisio(
        home,
        "eval",
        "run",
        "agents-suite",
        "--suite-dir",
        tmp_path,
        "--yes",
        "--allow-write",
        "--allow-process",
        "--base-url",
        endpoint.base_url,
        "-k",
        "2",
        "--faults",
        "500:1,seed=3",
        "--out",
        out,
    )
    assert "Traceback" not in result.stderr
    records = read_runs(out)
    assert len(records) == 2
    for record in records:
        assert record.status.value in ("fail", "error")  # the agent gave up at the first model call
        assert record.faults is not None
        assert [(h.call, h.kind) for h in record.faults.hits] == [(0, "500")]
    assert endpoint.model_calls == []
    transcript = (out / "runs" / "fix-add" / "0.jsonl").read_text()
    assert "HTTP 500" in transcript and "injected fault" in transcript
