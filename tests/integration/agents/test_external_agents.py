"""External agents through the per-run proxy: every path of a run, with a small deterministic agent CLI
(``fake_agent.py``) against a scripted endpoint (``the mock endpoint (alisio.shell.agents.mock_endpoint)``), through the ``alisio`` command run
in this process (``tests.integration.helpers.alisio``): the agents are real processes and the proxies real
servers either way.

One ``eval run`` over a suite of fix-add copies, each task naming its own agent (a task's ``agent`` field),
covers: a pass, a non-zero exit, a hung agent (maxWallMs; its detached grandchild stopped), huge output, an
agent that never calls the model, maxTurns / maxTokens / maxToolCalls refused by the proxy, a model error, a
prompt on stdin, the environment the agent gets, an agent that cannot start, and a tool-sequence rule over a
tool the agent lacks; and a pass, a budget hit and a model error on each of the Responses and Anthropic
Messages apis. The counts in the report are checked against the endpoint's own request log.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from alisio.core.lab.runs.records import RunRecord
from alisio.shell.agents.mock_endpoint import MockEndpoint
from tests.integration.fake_agent import HANG_WRAPPER
from tests.integration.helpers import alisio, write_config

HERE = Path(__file__).resolve().parents[1]
FAKE = HERE / "fake_agent.py"
FIXTURE = HERE.parents[1] / "suites" / "smoke-coding" / "fixtures" / "fix-add"
PROMPT = "The function add in src/calc.py is wrong: add(2, 3) returns -1. Fix it. Change only src/calc.py."
SECRET = "sk-real-provider-key-0123456789"
VERIFIERS: list[dict[str, Any]] = [
    {"kind": "command", "id": "check", "command": ["python3", "check.py"], "timeoutMs": 30000},
    {"kind": "tree-diff-within", "id": "scope", "allowed": ["src/calc.py", "src/__pycache__/"]},
]
BUDGET = {"maxTurns": 10, "maxTokens": 100000, "maxWallMs": 30000, "maxToolCalls": 10}

pytestmark = pytest.mark.xdist_group("external-agents")


def _agent(name: str, *args: str, wrapper: tuple[str, ...] = (), **extra: str) -> str:
    command = json.dumps([*wrapper, "python3", str(FAKE), *args, "--prompt-file", "{prompt_file}"])
    lines = [f"[agents.{name}]", 'kind = "command"', f"command = {command}"]
    lines.append(f"version = {json.dumps(['python3', str(FAKE), '--version'])}")
    lines += [f"{key} = {value}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"


def _config(home: Path, body: str) -> None:
    write_config(home, '[provider]\nmodel = "m"\n\n' + body)


def _task(
    task_id: str, agent: str, verifiers: list[dict[str, Any]] | None = None, **budget: int
) -> dict[str, Any]:
    return {
        "id": task_id,
        "prompt": PROMPT,
        "fixture": "fixtures/fix-add",
        "agent": agent,
        "budget": {**BUDGET, **budget},
        "policy": {"mode": "auto", "allow": ["write", "process"]},
        "verifiers": verifiers or VERIFIERS,
    }


def _suite(root: Path, tasks: list[dict[str, Any]]) -> Path:
    suite = root / "agents-suite"
    shutil.copytree(FIXTURE, suite / "fixtures" / "fix-add")
    document = {
        "schemaVersion": 1,
        "suiteId": "agents-suite",
        "suiteVersion": "1.0.0",
        "description": "fix-add, run by external agents",
        "tasks": tasks,
    }
    (suite / "suite.json").write_text(json.dumps(document))
    return suite


def _eval(
    home: Path, command: str, suite: Path, *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``alisio eval COMMAND agents-suite --suite-dir SUITE --yes --allow-write --allow-process *args``."""
    grants = ("--allow-write", "--allow-process")
    return alisio(
        home, "eval", command, "agents-suite", "--suite-dir", suite, "--yes", *grants, *args, env=env
    )


@pytest.fixture
def endpoint() -> Iterator[MockEndpoint]:
    """The scripted model endpoint, serving for the test."""
    with MockEndpoint() as running:
        yield running


def _records(out: Path) -> dict[str, RunRecord]:
    lines = (out / "runs.jsonl").read_bytes().splitlines()
    records = [msgspec.json.decode(line, type=RunRecord) for line in lines]
    return {record.task_id: record for record in records}


def _transcript(out: Path, task_id: str) -> list[dict[str, Any]]:
    path = out / "runs" / task_id / "0.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _agent_exit(out: Path, task_id: str) -> dict[str, Any]:
    return next(event for event in _transcript(out, task_id) if event["type"] == "agent_exit")


AGENTS = (
    _agent("fake", tools='{ bash = "bash" }')
    + _agent("fake-exit", "--exit", "5")
    + _agent("fake-hang", "--mode", "hang", wrapper=("sh", "-c", HANG_WRAPPER, "sh"))
    + _agent("fake-huge", "--mode", "huge")
    + _agent("fake-nomodel", "--mode", "no-model")
    + _agent("fake-loop", "--model", "loop")
    + _agent("fake-fail", "--model", "fail")
    + _agent("fake-env", "--mode", "env", env='["ALLOWED_VAR"]')
    + '[agents.fake-stdin]\nkind = "command"\n'
    + f"command = {json.dumps(['python3', str(FAKE)])}\nstdin = true\n"
    + '[agents.fake-missing]\nkind = "command"\ncommand = ["/nonexistent/agent", "{prompt}"]\n'
    + _agent("fake-r", "--api", "openai-responses", api='"openai-responses"')
    + _agent("fake-r-loop", "--api", "openai-responses", "--model", "loop", api='"openai-responses"')
    + _agent("fake-r-fail", "--api", "openai-responses", "--model", "fail", api='"openai-responses"')
    + _agent("fake-a", "--api", "anthropic", api='"anthropic"')
    + _agent("fake-a-loop", "--api", "anthropic", "--model", "loop", api='"anthropic"')
    + _agent("fake-a-fail", "--api", "anthropic", "--model", "fail", api='"anthropic"')
)
OTHER_APIS = {"r": ("/v1/responses", 2 + 3 + 1), "a": ("/v1/messages", 2 + 2 + 1)}
"""The test agents on the Responses and Anthropic Messages apis (``fake-r*``, ``fake-a*``), by the path they
post to and how many model calls their runs make; the rest speak Chat Completions."""


def test_every_path_of_an_external_agent_run(tmp_path: Path, endpoint: MockEndpoint) -> None:
    """Each run ends as its agent's path says, the transcript keeps what the agent did, and the report's
    model calls and tokens equal what the endpoint itself received."""
    _config(tmp_path, AGENTS)
    never_fetch = [{"kind": "tool-sequence", "id": "seq", "rules": [{"type": "never", "tool": "fetch_url"}]}]
    tasks = [
        _task("normal", "fake"),
        _task("exit5", "fake-exit"),
        _task("hang", "fake-hang", maxWallMs=1500),
        _task("huge", "fake-huge"),
        _task("nomodel", "fake-nomodel"),
        _task("turns", "fake-loop", maxTurns=3),
        _task("tokens", "fake-loop", maxTokens=200),
        _task("toolcalls", "fake-loop", maxToolCalls=1),
        _task("fail", "fake-fail"),
        _task("stdin", "fake-stdin"),
        _task("env", "fake-env"),
        _task("missing", "fake-missing"),
        _task("seq", "fake", verifiers=[*VERIFIERS, *never_fetch]),
        _task("r-normal", "fake-r"),
        _task("r-turns", "fake-r-loop", maxTurns=3),
        _task("r-fail", "fake-r-fail"),
        _task("a-normal", "fake-a"),
        _task("a-tokens", "fake-a-loop", maxTokens=200),
        _task("a-fail", "fake-a-fail"),
    ]
    suite = _suite(tmp_path, tasks)
    out = tmp_path / "out"
    env = {"OPENAI_API_KEY": SECRET, "ALLOWED_VAR": "yes", "OTHER_VAR": "no"}
    done = _eval(
        tmp_path,
        "run",
        suite,
        "--k",
        "1",
        "--base-url",
        endpoint.base_url,
        "--jobs",
        "4",
        "--out",
        out,
        env=env,
    )
    log = endpoint.model_calls
    assert done.returncode == 1, done.stderr  # some runs ended error (fail, missing, seq): exit 1
    records = _records(out)
    status = {task_id: (r.status.value, r.reason) for task_id, r in records.items()}
    assert status == {
        "normal": ("pass", None),
        "exit5": ("pass", None),
        "hang": ("budget_exceeded", "maxWallMs"),
        "huge": ("pass", None),
        "nomodel": ("fail", None),
        "turns": ("budget_exceeded", "maxTurns"),
        "tokens": ("budget_exceeded", "maxTokens"),
        "toolcalls": ("budget_exceeded", "maxToolCalls"),
        "fail": ("error", "provider_error"),
        "stdin": ("pass", None),
        "env": ("pass", None),
        "missing": ("error", "agent_start"),
        "seq": ("error", "verifier_error"),
        "r-normal": ("pass", None),
        "r-turns": ("budget_exceeded", "maxTurns"),
        "r-fail": ("error", "provider_error"),
        "a-normal": ("pass", None),
        "a-tokens": ("budget_exceeded", "maxTokens"),
        "a-fail": ("error", "provider_error"),
    }
    # the report's counts are the endpoint's own: every model call that reached it, 100 + 10 tokens each
    assert sum(r.measured.turns for r in records.values()) == len(log)
    answered = [r for r in log if json.loads(r.body)["model"] != "fail"]  # the failed call reported no usage
    assert sum(r.measured.input_tokens or 0 for r in records.values()) == 100 * len(answered)
    for task_id in ("normal", "r-normal", "a-normal"):  # each api's usage, in the lab's convention
        measured = records[task_id].measured
        assert (measured.turns, measured.tool_calls) == (2, 1), task_id
        assert (measured.input_tokens, measured.output_tokens, measured.cached_input_tokens) == (200, 20, 80)
    assert [records[t].measured.turns for t in ("turns", "tokens", "toolcalls")] == [3, 2, 2]
    assert [records[t].measured.turns for t in ("r-turns", "a-tokens", "r-fail", "a-fail")] == [3, 2, 1, 1]
    assert (
        sum(1 for r in log if json.loads(r.body)["model"] == "loop") == 7 + 3 + 2
    )  # nothing past a budget got there
    for prefix, (api_path, expected) in OTHER_APIS.items():  # each agent used its own api's path
        calls = sum(records[t].measured.turns for t in records if t.startswith(f"{prefix}-"))
        assert sum(1 for r in log if r.path == api_path) == calls == expected, api_path
    # the real key reached the endpoint (added by the proxy); the agent had only its run's token
    keys = {r.headers.get("x-api-key") or r.headers["authorization"] for r in log}
    assert keys == {f"Bearer {SECRET}", SECRET}
    assert {r.headers.get("x-api-key") for r in log if r.path == "/v1/messages"} == {SECRET}
    assert _agent_exit(out, "exit5")["exitCode"] == 5
    hang = _agent_exit(out, "hang")
    assert hang["killed"] == "maxWallMs"
    assert any("sleep" in name for name in hang["stopped"]), hang  # its detached grandchild was stopped
    huge = _agent_exit(out, "huge")
    assert len(huge["stdout"]) < 25_000 and "characters" in huge["stdout"]
    assert records["nomodel"].measured.turns == 0
    assert "prompt of" in _agent_exit(out, "nomodel")["stdout"]
    for task_id in ("fail", "r-fail", "a-fail"):
        assert "HTTP 500: scripted failure" in " ".join(records[task_id].errors), task_id
    seen = json.loads(_agent_exit(out, "env")["stdout"].splitlines()[0])
    assert seen["ALLOWED_VAR"] == "yes" and "OTHER_VAR" not in seen
    assert SECRET not in json.dumps(seen) and re.fullmatch("alisio-run-[0-9a-f]{32}", seen["OPENAI_API_KEY"])
    assert seen["HOME"].endswith("/home") and seen["HOME"] != os.environ.get("HOME")
    assert seen["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")
    assert "cannot start /nonexistent/agent" in records["missing"].errors[0]
    seq = next(v for v in records["seq"].verifiers if v.id == "seq")
    assert seq.status.value == "error" and "agent fake has no fetch_url tool" in (seq.detail or "")
    for path in (out / "runs").rglob("*.jsonl"):
        assert SECRET not in path.read_text()
    report = json.loads((out / "report.json").read_text())
    mixed = report["conditions"]["agent"]  # tasks name different agents: each named, with its version
    assert mixed["kind"] == "mixed" and "fake, fake-a, fake-a-fail" in mixed["name"]
    assert "fake-exit fake-agent 1.2.3; " in mixed["version"]
    assert "| Agent | per task: fake, fake-a, " in (out / "report.md").read_text()
    shown = alisio(tmp_path, "eval", "show", out, "--task", "exit5")
    assert shown.returncode == 0, shown.stderr
    assert "agent fake-exit: exit code 5" in shown.stdout and "--- turn 2 ---" in shown.stdout


def test_an_agent_that_crashes_before_its_first_model_call_is_an_error(
    tmp_path: Path, endpoint: MockEndpoint
) -> None:
    """A real agent command that cannot run (``python3 no-such-agent.py``: a relative path, exit 2 before any
    model call) is an ``error`` run (``agent_start``) with its exit code and the head of its stderr on the
    progress line, and the command exits 1; an agent that exits 5 after its model calls stays judged (pass)
    and its progress line says ``agent exited 5``."""
    crashing = '[agents.crash]\nkind = "command"\ncommand = ["python3", "no-such-agent.py", "{prompt}"]\n'
    _config(tmp_path, crashing + _agent("fake-exit", "--exit", "5"))
    suite = _suite(tmp_path, [_task("crash", "crash"), _task("exit5", "fake-exit")])
    out = tmp_path / "out"
    done = _eval(tmp_path, "run", suite, "--k", "1", "--base-url", endpoint.base_url, "--out", out)
    assert done.returncode == 1, done.stderr
    records = _records(out)
    assert (records["crash"].status.value, records["crash"].reason) == ("error", "agent_start")
    assert (records["exit5"].status.value, records["exit5"].reason) == ("pass", None)
    said = "agent crash exited 2 before its first model call: "
    error = records["crash"].errors[0]
    assert error.startswith(said) and "python3: can't open file" in error and "no-such-agent.py" in error
    lines = {line.split()[1]: line for line in done.stderr.splitlines() if line.startswith("[")}
    assert lines["crash"].split(": ", 1)[1].startswith("error agent_start (0 turns"), lines["crash"]
    assert said in lines["crash"] and "can't open file" in lines["crash"], lines["crash"]
    assert lines["exit5"].endswith(": agent exited 5"), lines["exit5"]
    assert [(i.kind, i.message) for i in records["exit5"].incidents] == [("agent_exited", "agent exited 5")]
    assert _agent_exit(out, "crash")["exitCode"] == 2
    report = json.loads((out / "report.json").read_text())
    assert report["summary"]["errored"] == 1 and report["summary"]["judged"] == 1


def test_agent_flag_names_the_agent_in_the_conditions(tmp_path: Path, endpoint: MockEndpoint) -> None:
    """``--agent NAME`` runs every task with it; the report's conditions name the agent, kind and version."""
    _config(tmp_path, _agent("fake"))
    suite = _suite(tmp_path, [{**_task("plain", "fake"), "agent": None}])
    out = tmp_path / "out"
    done = _eval(
        tmp_path, "run", suite, "--k", "2", "--base-url", endpoint.base_url, "--agent", "fake", "--out", out
    )
    calls = len(endpoint.model_calls)
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    agent = report["conditions"]["agent"]
    assert re.fullmatch(r"[0-9a-f]{64}", agent.pop("settingsHash"))
    assert agent == {"name": "fake", "kind": "command", "version": "fake-agent 1.2.3"}
    assert report["summary"]["measured"]["turns"] == calls == 4


@pytest.mark.parametrize(
    ("prompt", "why"),
    [
        ("fix\u0000add", "holds a NUL character, which a command line cannot carry"),
        ("x" * 200_000, "is 200000 bytes, more than one command-line argument may hold (131071)"),
    ],
)
def test_a_prompt_no_command_line_can_carry_is_an_error_naming_why(
    tmp_path: Path, endpoint: MockEndpoint, prompt: str, why: str
) -> None:
    """A prompt with a NUL character, or longer than Linux lets one argument be, given as ``{prompt}``: an
    error run (``agent_start``) naming the argument and the way out, not an internal error; from
    ``{prompt_file}`` the same prompt reaches the agent whole."""
    command = json.dumps(["python3", str(FAKE), "--mode", "no-model", "{prompt}"])
    _config(
        tmp_path,
        f'[agents.arg]\nkind = "command"\ncommand = {command}\n' + _agent("file", "--mode", "no-model"),
    )
    suite = _suite(tmp_path, [{**_task(task, task), "prompt": prompt} for task in ("arg", "file")])
    out = tmp_path / "out"
    done = _eval(tmp_path, "run", suite, "--k", "1", "--base-url", endpoint.base_url, "--out", out)
    assert done.returncode == 1, done.stderr
    records = _records(out)
    assert (records["arg"].status.value, records["arg"].reason) == ("error", "agent_start")
    assert records["arg"].errors == (
        f"agent arg: cannot start python3: its argument 4 {why}: give the agent the prompt with {{prompt_file}} "
        "or stdin = true",
    )
    assert records["file"].status.value == "fail"  # it ran, and never called the model
    assert (
        _agent_exit(out, "file")["stdout"] == f"prompt of {len(prompt)} characters; not calling the model\n"
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            '[agents.x]\nkind = "robot"\n',
            "agents.x.kind: unknown kind 'robot' (one of builtin, codex, opencode",
        ),
        (
            '[agents.x]\nkind = "command"\ncommand = ["my-agent", "--go"]\n',
            "agents.x.command: has neither {prompt} nor {prompt_file}, and stdin is false",
        ),
        (
            '[agents.x]\nkind = "command"\napi = "cohere"\ncommand = ["a", "{prompt}"]\n',
            'agents.x.api: unknown api "cohere" (expected openai-chat, openai-responses, anthropic or gemini)',
        ),
        (
            '[agents.x]\nkind = "command"\napi = "antropic"\ncommand = ["a", "{prompt}"]\n',
            'agents.x.api: unknown api "antropic" (did you mean anthropic?',
        ),
        (
            '[agents.x]\nkind = "command"\ncommand = "my-agent {prompt}"\n',
            'agents.x.command: expected an argument array such as ["python3", "agent.py", "{prompt}"], got a string',
        ),
        (
            '[agents.x]\nkind = "command"\ncommand = ["my-agent", ""]\n',
            "agents.x.command[1]: must not be empty",
        ),
        (
            '[agents.x]\nkind = "command"\ncommand = ["{model}", "{prompt}"]\n',
            "agents.x.command[0]: the executable (its first item) cannot hold {prompt}, {prompt_file} or {model}",
        ),
        (
            '[agents.x]\nkind = "command"\ncommand = ["a", "{prompt}"]\nenv = ["HOME", "MY-VAR"]\n',
            'agents.x.env[1]: "MY-VAR" is not a variable name',
        ),
        (
            '[agents.x]\nkind = "opencode"\nbinary = "/nonexistent/opencode"\n',
            "agents.x.binary: opencode is not installed (/nonexistent/opencode not found); install it with make agents",
        ),
    ],
)
def test_bad_agents_are_refused_before_the_first_run(tmp_path: Path, body: str, expected: str) -> None:
    """Exit 1, one line naming the file, the agent and the field, nothing run."""
    _config(tmp_path, body)
    suite = _suite(tmp_path, [{**_task("plain", "x")}])
    done = _eval(tmp_path, "run", suite, "--k", "1", "--base-url", "http://127.0.0.1:9/v1")
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert str(tmp_path / "config" / "config.toml") in lines[0] and expected in lines[0], lines[0]
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").rglob("runs.jsonl"))


def test_variants_give_each_variant_its_own_agent_and_model(tmp_path: Path, endpoint: MockEndpoint) -> None:
    """A variants file runs the same tasks with two agents (one asking for another model): each arm's
    report names its agent, and the model its agent asked the endpoint for."""
    _config(tmp_path, _agent("fake") + _agent("other", "--model", "{model}", "--exit", "2"))
    suite = _suite(tmp_path, [{**_task("plain", "fake"), "agent": None}])
    variants = {
        "suite": "agents-suite",
        "variants": [{"id": "a", "agent": "fake"}, {"id": "b", "agent": "other", "model": "m2"}],
    }
    (tmp_path / "compare.json").write_text(json.dumps(variants))
    out = tmp_path / "out"
    compare = tmp_path / "compare.json"
    done = _eval(
        tmp_path,
        "variants",
        suite,
        "--k",
        "1",
        "--variants",
        compare,
        "--base-url",
        endpoint.base_url,
        "--out",
        out,
    )
    models = sorted(json.loads(r.body)["model"] for r in endpoint.model_calls)
    assert done.returncode == 0, done.stderr
    a = json.loads((out / "a" / "report.json").read_text())["conditions"]
    b = json.loads((out / "b" / "report.json").read_text())["conditions"]
    assert (a["agent"]["name"], a["model"]) == ("fake", "m")
    assert (b["agent"]["name"], b["model"]) == ("other", "m2")
    assert models == ["m", "m", "m2", "m2"]  # "other" asks for {model}: the variant's
    assert (out / "comparison.json").is_file()


def test_a_replay_that_asks_something_else_names_the_call_and_field(
    tmp_path: Path, endpoint: MockEndpoint
) -> None:
    """Record, change the task's prompt, replay: exit 2, naming the task, the call and the JSON field."""
    _config(tmp_path, _agent("fake"))
    suite = _suite(tmp_path, [{**_task("plain", "fake"), "agent": None}])
    done = _eval(tmp_path, "record", suite, "--agent", "fake", "--base-url", endpoint.base_url)
    assert done.returncode == 0, done.stderr
    recorded = len(endpoint.requests)
    cassette = suite / "cassettes" / "fake" / "plain.jsonl"
    assert SECRET not in cassette.read_text() and "<workspace>" not in cassette.read_text().split("\n")[0]
    same = _eval(tmp_path, "run", suite, "--agent", "fake", "--mode", "replay", "--out", tmp_path / "r1")
    assert same.returncode == 0, same.stderr
    document = json.loads((suite / "suite.json").read_text())
    document["tasks"][0]["prompt"] = PROMPT + " Be brief."
    (suite / "suite.json").write_text(json.dumps(document))
    diverged = _eval(tmp_path, "run", suite, "--agent", "fake", "--mode", "replay", "--out", tmp_path / "r2")
    assert diverged.returncode == 2, diverged.stderr
    assert "divergence: task plain rep 0, call 0: messages[1].content" in diverged.stderr, diverged.stderr
    assert len(endpoint.requests) == recorded  # the replays asked the cassette, never the endpoint


def test_a_proxy_port_that_cannot_be_bound_is_an_error_run(tmp_path: Path) -> None:
    """The run's proxy cannot listen (its port is taken): an error run with reason proxy_bind, no exception."""
    import socket

    from alisio.core.agents.config import parse_external
    from alisio.core.harness.config import MeasuredConfig
    from alisio.core.lab.suites.schedule import RunSpec
    from alisio.shell.agents.runner import ExternalRunner, Upstream
    from alisio.shell.agents.seam import AgentJob
    from alisio.shell.lab.suites import load_suite

    suite = _suite(tmp_path, [_task("plain", "fake")])
    loaded = load_suite(suite).unwrap()
    agent = parse_external(
        "fake", {"kind": "command", "command": ["python3", str(FAKE), "{prompt}"]}, "c"
    ).unwrap()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        runner = ExternalRunner(
            agent=agent,
            binary="python3",
            model="m",
            environ=dict(os.environ),
            harness_version="0",
            upstream=Upstream(provider_id="p", base_url="http://127.0.0.1:9/v1", key=None),
            proxy_port=busy.getsockname()[1],
        )
        task = loaded.suite.tasks[0]
        job = AgentJob(
            task=task,
            spec=RunSpec(task_id="plain", repetition=0, seed=0),
            workspace=tmp_path,
            rules=(),
            measured=MeasuredConfig(),
            config_hash="h",
            agent="fake",
        )
        run = runner.run(job)
    assert (run.outcome, run.reason) == ("error", "proxy_bind")
    assert "cannot listen on 127.0.0.1" in (run.message or "")
