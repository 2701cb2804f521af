"""Injected faults on an external agent's wire: the recording proxy (a real server) in front of the mock
endpoint (a real server), asked as an agent asks, over HTTP; a whole ``eval run`` of an agent CLI; and
``eval record`` then ``--mode replay`` of one under the same faults (``alisio.shell.agents.faults``)."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from alisio.core.agents.cassette import AgentCassette, AgentCassetteHeader
from alisio.core.harness.budget import RunBudget
from alisio.core.harness.faults import fault_at, parse_faults
from alisio.shell.agents.mock_endpoint import MockEndpoint
from alisio.shell.agents.proxy import RunProxy
from alisio.shell.agents.replay import CassetteReplayer, recorded_cassette
from alisio.shell.harness.providers.faults import RunWire
from tests.integration.helpers import ROOT, alisio, read_report, read_runs, write_config

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
HEADER = AgentCassetteHeader(
    format="agent-cassette/v1", suite_id="s", suite_version="1", task_id="fix-add", agent="fake",
    kind="command", api="openai-chat", model="m", provider="p",
)  # fmt: skip


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


def _fake_suite(home: Path, tmp_path: Path, *agent_args: str) -> Path:
    """A suite of fix-add run by the fake agent CLI (``agent_args`` added to its command); its directory."""
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
    command = json.dumps(["python3", str(FAKE), *agent_args, "--prompt-file", "{prompt_file}"])
    version = json.dumps(["python3", str(FAKE), "--version"])
    agent = f'[agents.fake]\nkind = "command"\ncommand = {command}\nversion = {version}\ntools = {{ bash = "bash" }}\n'
    write_config(home, f'[provider]\nmodel = "m"\n\n{agent}')
    return suite


def test_an_external_agent_without_retries_fails_on_a_500_and_its_record_says_which_call(
    home: Path, tmp_path: Path, endpoint: MockEndpoint
) -> None:
    _fake_suite(home, tmp_path)
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


def _received(proxy: RunProxy, timeout: float = 30) -> tuple[int, bytes, bool]:
    """An agent's model call through ``proxy``: the status, the bytes it got, and whether its stream broke."""
    got = bytearray()
    headers = {"authorization": f"Bearer {TOKEN}"}
    with (
        httpx.Client(timeout=timeout) as client,
        client.stream("POST", proxy.url + "/v1/chat/completions", json=CHAT, headers=headers) as answer,
    ):
        try:
            for chunk in answer.iter_raw():
                got += chunk
        except httpx.RemoteProtocolError:
            return answer.status_code, bytes(got), True
        return answer.status_code, bytes(got), False


def _replayed(
    cassette: AgentCassette, spec: str, calls: int
) -> tuple[list[tuple[int, bytes, bool]], CassetteReplayer]:
    """``calls`` model calls through a replaying proxy under ``spec``: what the agent got, and the replayer."""
    replayer = CassetteReplayer(cassette, (), "/workspace")
    with RunProxy(
        "openai-chat", "http://127.0.0.1:9", None, BUDGET, token=TOKEN, replay=replayer, faults=_wire(spec)
    ) as proxy:
        return [_received(proxy) for _ in range(calls)], replayer


@pytest.mark.parametrize("spec", ["cut:1", "slow:1,drip-ms=1", "429:0.5,seed=7"])
def test_a_recorded_call_replays_under_the_same_faults_as_the_agent_got_it(
    endpoint: MockEndpoint, spec: str
) -> None:
    """What the agent got when recording, call by call, it gets again from the cassette under the same spec;
    the cassette holds the provider's whole answers (a cut one too), and none an injected fault answered."""
    calls = 3  # 429:0.5,seed=7 faults calls 0 and 1 of fix-add/0: the third reaches the provider
    with RunProxy("openai-chat", endpoint.base_url, None, BUDGET, token=TOKEN, faults=_wire(spec)) as proxy:
        recorded = [_received(proxy) for _ in range(calls)]
    reached = len(endpoint.model_calls)
    cassette = recorded_cassette(HEADER, proxy.calls, (), ())
    assert len(cassette.calls) == reached == calls - sum(call.injected for call in proxy.calls)
    replayed, replayer = _replayed(cassette, spec, calls)
    assert replayed == recorded
    assert replayer.divergence is None and len(replayer.played) == reached
    assert len(endpoint.model_calls) == reached  # the replay asked the cassette only
    if spec.startswith("cut"):
        assert all(broke for _, _, broke in recorded)
        whole = cassette.calls[0].response.encode()
        assert recorded[0][1] == whole[: len(whole) // 2]  # the replay cut the recorded answer again
    if spec.startswith("429"):
        assert [status for status, _, _ in recorded] == [429, 429, 200]


def test_a_stalled_call_is_kept_when_the_run_ends_and_is_not_in_the_cassette(endpoint: MockEndpoint) -> None:
    """The agent gives up on a stall; the proxy's run ends at once (the stall ends with it), the call kept as
    the one a fault answered, never reaching the provider nor the cassette."""
    with RunProxy(
        "openai-chat", endpoint.base_url, None, BUDGET, token=TOKEN, faults=_wire("stall:1")
    ) as proxy:
        with pytest.raises(httpx.ReadTimeout):
            _received(proxy, timeout=0.5)
        started = time.monotonic()
    assert time.monotonic() - started < 5  # not the proxy's own read timeout (600 s), nor its 10 s wait
    (call,) = proxy.calls
    assert (call.status, call.injected) == (502, True)
    assert endpoint.model_calls == []
    assert recorded_cassette(HEADER, proxy.calls, (), ()).calls == ()


SPEC = "429:0.3,500:0.3,seed=10,retry-after=0"
"""Calls 0, 1 and 3 of fix-add/0 faulted (500, 429, 500): the fake agent's two model calls each retried."""


def _eval(home: Path, tmp_path: Path, command: str, *args: str | Path) -> tuple[int, str]:
    grants = ("--allow-write", "--allow-process")
    done = alisio(home, "eval", command, "agents-suite", "--suite-dir", tmp_path, "--yes", *grants, *args)
    assert "Traceback" not in done.stderr
    return done.returncode, done.stderr


def test_an_external_agent_records_and_replays_under_the_same_faults(
    home: Path, tmp_path: Path, endpoint: MockEndpoint
) -> None:
    _fake_suite(home, tmp_path, "--retries", "5")
    cassettes = tmp_path / "cassettes"
    code, stderr = _eval(
        home,
        tmp_path,
        "record",
        "--base-url",
        endpoint.base_url,
        "--faults",
        SPEC,
        "--cassette-dir",
        cassettes,
    )
    assert code == 0, stderr
    assert len(endpoint.model_calls) == 2  # the faulted attempts never reached the endpoint
    lines = (cassettes / "fake" / "fix-add.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["faults"] == SPEC
    assert [json.loads(line)["status"] for line in lines[1:]] == [200, 200]  # only what reached the provider
    replay = ("-k", "1", "--mode", "replay", "--cassette-dir", cassettes)
    # the same command run live (eval record keeps cassettes, not run records): what the replay must give
    code, stderr = _eval(
        home,
        tmp_path,
        "run",
        "-k",
        "1",
        "--base-url",
        endpoint.base_url,
        "--faults",
        SPEC,
        "--out",
        tmp_path / "live",
    )
    assert code == 0, stderr
    asked = len(endpoint.model_calls)
    code, stderr = _eval(home, tmp_path, "run", *replay, "--faults", SPEC, "--out", tmp_path / "replay")
    assert code == 0, stderr
    assert len(endpoint.model_calls) == asked  # the replay asked the cassette, never the endpoint
    (live,) = read_runs(tmp_path / "live")
    (replayed,) = read_runs(tmp_path / "replay")
    assert replayed.faults is not None
    assert (replayed.faults.calls, [(h.call, h.kind) for h in replayed.faults.hits]) == (
        5,
        [(0, "500"), (1, "429"), (3, "500")],
    )
    spec = parse_faults(SPEC).unwrap()
    assert spec is not None
    assert [h.kind for h in replayed.faults.hits] == [
        k for c in range(5) if (k := fault_at(spec, "fix-add/0", c))
    ]
    same = ("faults", "status", "reason", "divergence")
    assert {name: getattr(replayed, name) for name in same} == {name: getattr(live, name) for name in same}
    assert (replayed.status.value, replayed.divergence) == ("pass", None)
    assert replayed.measured.turns == live.measured.turns
    assert read_report(tmp_path / "replay").conditions.faults == SPEC
    # an agent that asks something else still diverges, at the recorded call, its faults kept in its record
    call = json.loads(lines[2])
    call["fingerprint"] = "0" * 64
    (cassettes / "fake" / "fix-add.jsonl").write_text("\n".join([*lines[:2], json.dumps(call)]) + "\n")
    code, stderr = _eval(home, tmp_path, "run", *replay, "--faults", SPEC, "--out", tmp_path / "diverged")
    assert code == 2, stderr
    (diverged,) = read_runs(tmp_path / "diverged")
    assert diverged.divergence is not None and diverged.divergence.call_index == 1
    assert diverged.faults == replayed.faults  # the faults it met before it diverged
    assert len(endpoint.model_calls) == asked
    # the replay's --faults must be the recording's: none is refused before anything runs, naming both
    out = tmp_path / "none"
    code, stderr = _eval(home, tmp_path, "run", *replay, "--out", out)
    assert code == 1
    assert f"task fix-add: recorded with --faults {SPEC}, replayed with --faults none" in stderr
    assert not out.exists()


CUT_SPEC = "429:0.2,cut:0.3,seed=7,retry-after=0"
"""Calls 0 to 5 of fix-add/0: 429, cut, through, cut, 429, through: each of the fake agent's two model calls
is cut once (and refused once) before it gets through."""


def test_an_external_agent_records_and_replays_under_cut_faults(
    home: Path, tmp_path: Path, endpoint: MockEndpoint
) -> None:
    """A cut call reaches the provider: the cassette keeps its whole answer, which the replay's proxy cuts again
    at the same byte, so the agent gets the same broken streams, retries them the same way, and the replay's
    record (its calls, its hits, where each cut broke) and outcome are the recording's."""
    _fake_suite(home, tmp_path, "--retries", "3")
    cassettes = tmp_path / "cassettes"
    live_args = ("--base-url", endpoint.base_url, "--faults", CUT_SPEC)
    code, stderr = _eval(home, tmp_path, "record", *live_args, "--cassette-dir", cassettes)
    assert code == 0, stderr
    lines = (cassettes / "fake" / "fix-add.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["faults"] == CUT_SPEC
    recorded = [json.loads(line) for line in lines[1:]]
    # the two cut calls and the two that got through reached the provider: each kept whole, in order
    assert len(recorded) == len(endpoint.model_calls) == 4
    assert all(call["response"].rstrip().endswith("data: [DONE]") for call in recorded)
    code, stderr = _eval(home, tmp_path, "run", "-k", "1", *live_args, "--out", tmp_path / "live")
    assert code == 0, stderr
    asked = len(endpoint.model_calls)
    replay = ("-k", "1", "--mode", "replay", "--cassette-dir", cassettes, "--faults", CUT_SPEC)
    code, stderr = _eval(home, tmp_path, "run", *replay, "--out", tmp_path / "replay")
    assert code == 0, stderr
    assert len(endpoint.model_calls) == asked  # the replay asked the cassette, never the endpoint
    (live,) = read_runs(tmp_path / "live")
    (replayed,) = read_runs(tmp_path / "replay")
    assert live.faults is not None
    kinds = [(h.call, h.kind) for h in live.faults.hits]
    assert (live.faults.calls, kinds) == (6, [(0, "429"), (1, "cut"), (3, "cut"), (4, "429")])
    assert all(h.events is not None for h in live.faults.hits if h.kind == "cut")
    same = ("faults", "status", "reason", "divergence")
    assert {name: getattr(replayed, name) for name in same} == {name: getattr(live, name) for name in same}
    assert (replayed.status.value, replayed.divergence) == ("pass", None)
    assert replayed.measured.turns == live.measured.turns
