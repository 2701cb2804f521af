"""The recording proxy against hostile agents and a hostile provider of the tests' own
(``hostile_agent.py``, ``hostile_endpoint.py``), through the ``alisio`` command: a model call spelled another
way, another local client, an agent reading alisio's environment, a call still streaming when the run ends,
calls made at once against maxCostUsd and maxTokens, absurd usage, and streams whose end comes first."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from alisio.core.agents.mock import FIX_COMMAND
from alisio.core.lab.runs.records import RunRecord
from tests.integration.agents.hostile_endpoint import (
    HostileEndpoint,
    absurd_chat,
    end_first,
    endless_anthropic,
    honest_chat,
)
from tests.integration.helpers import ALISIO, alisio, command_env, write_config

HERE = Path(__file__).resolve().parents[1]
HOSTILE = HERE / "hostile_agent.py"
FAKE = HERE / "fake_agent.py"
FIXTURE = HERE.parents[1] / "suites" / "smoke-coding" / "fixtures" / "fix-add"
SECRET = "sk-real-provider-key-adversarial-0123456789"
CHECK = [{"kind": "command", "id": "check", "command": ["python3", "check.py"], "timeoutMs": 30000}]

pytestmark = pytest.mark.xdist_group("external-agents")


def _agent(name: str, argv: list[str], **extra: str) -> str:
    lines = [f"[agents.{name}]", 'kind = "command"', f"command = {json.dumps([*argv, '{prompt}'])}"]
    return "\n".join([*lines, *(f"{key} = {value}" for key, value in extra.items())]) + "\n"


def _suite(root: Path, tasks: list[dict[str, Any]]) -> Path:
    suite = root / "hostile-suite"
    shutil.copytree(FIXTURE, suite / "fixtures" / "fix-add")
    document = {"schemaVersion": 1, "suiteId": "hostile-suite", "suiteVersion": "1.0.0", "tasks": tasks}
    document["description"] = "fix-add, run by hostile agents against a hostile provider"
    (suite / "suite.json").write_text(json.dumps(document))
    return suite


def _task(task_id: str, agent: str, **budget: float) -> dict[str, Any]:
    return {
        "id": task_id,
        "prompt": "Fix add in src/calc.py.",
        "fixture": "fixtures/fix-add",
        "agent": agent,
        "budget": {"maxTurns": 10, "maxWallMs": 60000, **budget},
        "policy": {"mode": "auto", "allow": ["write", "process"]},
        "verifiers": CHECK,
    }


def _run(
    home: Path, suite: Path, base_url: str, out: Path, *args: str, env: dict[str, str] | None = None
) -> Any:
    grants = ("--allow-write", "--allow-process", "--yes")
    return alisio(
        home,
        "eval", "run", "hostile-suite", "--suite-dir", suite, *grants, "--k", "1", "--base-url", base_url,
        "--out", out, *args,
        env={"OPENAI_API_KEY": SECRET, "ANTHROPIC_API_KEY": SECRET, **(env or {})},
    )  # fmt: skip


def _records(out: Path) -> dict[str, RunRecord]:
    lines = (out / "runs.jsonl").read_bytes().splitlines()
    return {r.task_id: r for r in (msgspec.json.decode(line, type=RunRecord) for line in lines)}


def _events(out: Path, task_id: str) -> list[dict[str, Any]]:
    path = out / "runs" / task_id / "0.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _agent_stdout(out: Path, task_id: str) -> str:
    return str(next(e for e in _events(out, task_id) if e["type"] == "agent_exit")["stdout"])


TARGETS = [
    ["POST", "/v1/chat/completions#x"],
    ["POST", "/v1/chat%2Fcompletions"],
    ["POST", "/v1/chat/c%6Fmpletions"],
    ["POST", "/v1//chat/completions"],
    ["POST", "/v1/./chat/completions"],
    ["POST", "/v1/x/../chat/completions"],
    ["POST", "/v1/chat/completions/"],
    ["POST", "/V1/chat/completions"],
    ["POST", "/chat/completions"],
    ["POST", "/v1/chat/completions?x=1#y"],
    ["POST", "/v1/embeddings"],
    ["GET", "/v1/chat/completions"],
    ["POST", "//127.0.0.1/v1/chat/completions"],
    ["GET", "/v1/models"],
    ["POST", "/v1/chat/completions?stream=1"],
    ["POST", "/v1/chat/completions"],
    ["POST", "/v1/chat/completions"],
]


def test_a_model_call_spelled_another_way_never_reaches_the_provider(tmp_path: Path) -> None:
    """Item D1: each spelling of the model path the proxy does not forward byte for byte is refused (404)
    and never reaches the provider; the two real calls are the run's two
    turns, the third is refused at maxTurns 2, and the provider saw exactly those two and the model list."""
    write_config(
        tmp_path,
        '[provider]\nmodel = "m"\n\n'
        + _agent("paths", ["python3", str(HOSTILE), "paths"], env='["TARGETS"]'),
    )
    suite = _suite(tmp_path, [_task("paths", "paths", maxTurns=2)])
    out = tmp_path / "out"
    with HostileEndpoint(honest_chat(0.0)) as endpoint:
        done = _run(tmp_path, suite, endpoint.base_url, out, env={"TARGETS": json.dumps(TARGETS)})
        seen = [(r.method, r.path) for r in endpoint.requests]
    assert done.returncode == 0, done.stderr
    record = _records(out)["paths"]
    assert (record.status.value, record.reason, record.measured.turns) == ("budget_exceeded", "maxTurns", 2)
    assert seen == [
        ("GET", "/v1/models"),
        ("POST", "/v1/chat/completions?stream=1"),
        ("POST", "/v1/chat/completions"),
    ]
    statuses = {
        k: v for line in _agent_stdout(out, "paths").splitlines() for k, v in json.loads(line).items()
    }
    refused = {f"{m} {t}": 404 for m, t in TARGETS[:13]}
    assert {k: statuses[k] for k in refused} == refused
    assert statuses["GET /v1/models"] == 200 and statuses["POST /v1/chat/completions?stream=1"] == 200


def test_another_local_client_without_the_runs_key_gets_a_401(tmp_path: Path) -> None:
    """Item D9: a second process that knows the proxy's address but not the run's key (none, or a guessed
    one) is answered 401 in the api's own error shape, and nothing reaches the provider."""
    agents = _agent("chat", ["python3", str(HOSTILE), "intruder"]) + _agent(
        "anth", ["python3", str(HOSTILE), "--api", "anthropic", "intruder"], api='"anthropic"'
    )
    write_config(tmp_path, '[provider]\nmodel = "m"\n\n' + agents)
    suite = _suite(tmp_path, [_task("chat", "chat"), _task("anth", "anth")])
    out = tmp_path / "out"
    with HostileEndpoint(honest_chat(0.0)) as endpoint:
        done = _run(tmp_path, suite, endpoint.base_url, out)
        seen = endpoint.requests
    assert done.returncode == 0, done.stderr
    assert seen == []
    chat = json.loads(_agent_stdout(out, "chat").splitlines()[-1])
    anth = json.loads(_agent_stdout(out, "anth").splitlines()[-1])
    for name in ("none", "wrong"):
        status, body = chat[name]
        assert status == 401 and json.loads(body)["error"]["code"] == "invalid_api_key", chat
        status, body = anth[name]
        assert status == 401 and json.loads(body)["error"]["type"] == "authentication_error", anth
        assert "does not carry the run's key" in body


def _capless() -> list[str]:
    """Run as root without any capability (as an ordinary user is): a prefix, or [] when not root."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root needs setpriv to drop capabilities")
    return [setpriv, "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--"]


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_an_unsandboxed_agent_cannot_read_the_key_from_alisio(tmp_path: Path) -> None:
    """Item D2: the installed alisio, started with the key in its environment, hides its environment and
    memory from the agent (a process of the same user): the agent reads neither /proc/<alisio>/environ nor
    /proc/<alisio>/mem, and finds the key in no process it can read (it does read its own child's). As root
    (with every capability, where root reads any process) the agent does find it, and alisio warned so."""
    write_config(
        tmp_path, '[provider]\nmodel = "m"\n\n' + _agent("steal", ["python3", str(HOSTILE), "steal"])
    )
    suite = _suite(tmp_path, [_task("steal", "steal")])
    grants = ("--allow-write", "--allow-process", "--yes")
    with HostileEndpoint(honest_chat(0.0)) as endpoint:

        def run(prefix: list[str], out: Path) -> subprocess.CompletedProcess[str]:
            argv = [*prefix, str(ALISIO), "eval", "run", "hostile-suite", "--suite-dir", str(suite), *grants]
            argv += ["--k", "1", "--base-url", endpoint.base_url, "--out", str(out)]
            env = command_env(tmp_path, {"OPENAI_API_KEY": SECRET})
            return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)

        done = run(_capless(), tmp_path / "out")
        assert done.returncode == 0, done.stderr
        stolen = json.loads(_agent_stdout(tmp_path / "out", "steal").splitlines()[-1])
        assert stolen["environ"] == "Permission denied" and stolen["mem"] == "Permission denied", stolen
        # the control child's key is found, the real one nowhere (the transcript would show it as <redacted: ...>);
        # other processes of the machine (another test's agent and its run key) may be found too
        assert "control" in stolen["found"], stolen
        assert not any("OPENAI_API_KEY" in found or SECRET in found for found in stolen["found"]), stolen
        if os.geteuid() == 0:  # the caveat the docs and the warning state
            root = run([], tmp_path / "root")
            assert root.returncode == 0, root.stderr
            found = json.loads(_agent_stdout(tmp_path / "root", "steal").splitlines()[-1])
            assert found["environ"] == "read" and "<redacted: credential OPENAI_API_KEY>" in found["found"]
            warned = (
                "warning: external agents steal run without a sandbox: alisio runs as root, so does the agent"
            )
            assert (
                warned in root.stderr
                and "which hold OPENAI_API_KEY" in root.stderr
                and SECRET not in root.stderr
            )


def test_a_call_still_streaming_when_the_run_ends_is_cut_and_counted(tmp_path: Path) -> None:
    """Item D6: the agent exits while its call is still streaming (a provider that never stops): the proxy
    cuts the call at the run's end, its provider connection closes at once (none is left open after three
    runs), and the record counts it with the input tokens it reported before the cut."""
    argv = ["python3", str(HOSTILE), "--api", "anthropic", "abandon"]
    write_config(tmp_path, '[provider]\nmodel = "m"\n\n' + _agent("gone", argv, api='"anthropic"'))
    suite = _suite(tmp_path, [_task("gone", "gone")])
    out = tmp_path / "out"
    with HostileEndpoint(endless_anthropic) as endpoint:
        started = time.monotonic()
        done = _run(tmp_path, suite, endpoint.base_url, out, "--k", "3")
        took = time.monotonic() - started
        deadline = time.monotonic() + 5
        while endpoint.writing and time.monotonic() < deadline:
            time.sleep(0.05)
        still = endpoint.writing
        closed = list(endpoint.log.closed_at)
    assert done.returncode == 0, done.stderr
    assert still == 0 and len(closed) == 3  # every endless answer's connection was closed by the proxy
    assert took < 45, took
    lines = (out / "runs.jsonl").read_bytes().splitlines()
    for record in (msgspec.json.decode(line, type=RunRecord) for line in lines):
        assert (record.status.value, record.measured.turns) == ("fail", 1)
        assert (record.measured.input_tokens, record.measured.usage_complete) == (1234, False)
        (incident,) = [i for i in record.incidents if i.kind == "usage_unreported"]
        assert (
            "still streaming when the run ended: cancelled, after it reported 1,234 input tokens"
            in incident.message
        )
        responded = [e for e in _events(out, "gone") if e["type"] == "provider_response"]
        assert responded and responded[0]["finishReason"] == "cut"


PRICES = '[prices."m"]\ninput = 1000.0\noutput = 1000.0\n\n'


def test_calls_made_at_once_cannot_overshoot_the_cost_and_token_budgets(tmp_path: Path) -> None:
    """Item D11: eight calls at once (524 tokens each, 0.52 USD at these prices, against a provider that
    answers after 0.3 s): calls in flight hold a reservation, so the run stops within one call of
    maxCostUsd 2.5 and of maxTokens 2000, where all eight (4,192 tokens, 4.19 USD) went through before."""
    argv = ["python3", str(HOSTILE), "burst", "8"]
    write_config(tmp_path, '[provider]\nmodel = "m"\n\n' + PRICES + _agent("burst", argv))
    suite = _suite(
        tmp_path, [_task("cost", "burst", maxCostUsd=2.5), _task("tokens", "burst", maxTokens=2000)]
    )
    out = tmp_path / "out"
    with HostileEndpoint(honest_chat(0.3)) as endpoint:
        done = _run(tmp_path, suite, endpoint.base_url, out, "--jobs", "1")
        calls = [r for r in endpoint.requests if r.method == "POST"]
    assert done.returncode == 0, done.stderr
    records = _records(out)
    per_call = max(len(r.body) // 4 + 100 for r in calls)
    cost, tokens = records["cost"].measured, records["tokens"].measured
    assert (records["cost"].status.value, records["cost"].reason) == ("budget_exceeded", "maxCostUsd")
    assert (records["tokens"].status.value, records["tokens"].reason) == ("budget_exceeded", "maxTokens")
    spent = ((cost.input_tokens or 0) + (cost.output_tokens or 0)) * 1000 / 1e6
    assert 2.5 <= spent < 2.5 + per_call * 1000 / 1e6, spent
    used = (tokens.input_tokens or 0) + (tokens.output_tokens or 0)
    assert 2000 <= used < 2000 + per_call, used
    assert cost.turns + tokens.turns == len(calls) < 16


def test_absurd_usage_is_unreported_and_the_report_is_written(tmp_path: Path) -> None:
    """Item D7 through the proxy: a provider reporting prompt_tokens 10**30 gives a call without usage and a
    usage_unreported incident naming the count; the report is written and --resume reads it back."""
    agent = _agent("fake", ["python3", str(FAKE)])
    write_config(tmp_path, '[provider]\nmodel = "m"\n\n' + agent)
    suite = _suite(tmp_path, [_task("absurd", "fake")])
    out = tmp_path / "out"
    with HostileEndpoint(absurd_chat) as endpoint:
        done = _run(tmp_path, suite, endpoint.base_url, out)
        assert done.returncode == 0, done.stderr
        record = _records(out)["absurd"]
        assert (record.measured.turns, record.measured.input_tokens, record.measured.usage_complete) == (
            1,
            None,
            False,
        )
        (incident,) = record.incidents
        assert incident.kind == "usage_unreported"
        assert (
            "prompt_tokens is 1000000000000000000000000000000; a count must be an integer from 0 to 1000000000"
            in incident.message
        )
        assert (out / "report.json").is_file()
        resumed = alisio(tmp_path, "eval", "run", "--resume", out, env={"OPENAI_API_KEY": SECRET})
    assert resumed.returncode == 0, resumed.stderr


@pytest.mark.parametrize("api", ["anthropic", "openai-responses"])
def test_a_stream_whose_end_comes_first_is_a_protocol_error(tmp_path: Path, api: str) -> None:
    """Item D10 through the proxy: the first answer's end event comes before its tool call (Anthropic
    message_stop first; Responses response.completed first). The agent acts on the tool call, but the proxy
    records that call as unreadable, naming the order, as it does malformed JSON: no tool call is counted
    from it."""
    agent = _agent("fake", ["python3", str(FAKE), "--api", api], api=f'"{api}"')
    write_config(tmp_path, '[provider]\nmodel = "m"\n\n' + agent)
    suite = _suite(tmp_path, [_task("first", "fake")])
    out = tmp_path / "out"
    with HostileEndpoint(end_first(api, FIX_COMMAND)) as endpoint:
        done = _run(tmp_path, suite, endpoint.base_url, out)
    assert done.returncode == 0, done.stderr
    record = _records(out)["first"]
    assert (record.measured.turns, record.measured.tool_calls) == (2, 0)
    first = next(e for e in _events(out, "first") if e["type"] == "provider_response")
    order = (
        "message_stop before message_start"
        if api == "anthropic"
        else "response.completed is the stream's first event"
    )
    assert first["finishReason"] == "unreadable" and f"stream events out of order: {order}" in first["text"]
