"""``eval run --resume`` of a run of an external agent killed mid-job (issue 20): the resume runs only what is
left, with the same agent, and the report counts every run once and exactly the model calls the endpoint
received for them; a resume with the agent's version or settings changed is refused, naming them."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from alisio.shell.agents.mock_endpoint import MockEndpoint
from tests.integration.agents.test_external_agents import (
    FAKE,
    SECRET,
    _config,
    _records,
    _suite,
    _task,
)
from tests.integration.helpers import ALISIO, alisio

pytestmark = pytest.mark.xdist_group("external-agents")


def _agents(version: str) -> str:
    command = json.dumps(["python3", str(FAKE), "--sleep", "0.7", "--prompt-file", "{prompt_file}"])
    return f'[agents.slow]\nkind = "command"\ncommand = {command}\nversion = ["echo", "{version}"]\n'


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def test_a_killed_agent_run_resumes_with_the_same_agent_and_counts_right(tmp_path: Path) -> None:
    _config(tmp_path, _agents("slow-agent 1"))
    suite = _suite(tmp_path, [_task(f"t{i}", "slow") for i in (1, 2)])
    out = tmp_path / "out"
    env = {
        **{k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"},
        "ALISIO_CONFIG_HOME": str(tmp_path / "config"),
        "ALISIO_DATA_HOME": str(tmp_path / "data"),
        "OPENAI_API_KEY": SECRET,
    }
    with MockEndpoint() as endpoint:
        args = ["eval", "run", "agents-suite", "--suite-dir", str(suite), "--yes", "--k", "1", "--jobs", "1"]
        args += ["--agent", "slow", "--base-url", endpoint.base_url, "--allow-write", "--allow-process"]
        process = subprocess.Popen(
            [str(ALISIO), *args, "--out", str(out)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        give_up = time.monotonic() + 60
        while _lines(out / "runs.jsonl") < 1 and time.monotonic() < give_up:
            time.sleep(0.02)
        os.killpg(process.pid, signal.SIGKILL)  # the second run's agent is still in its --sleep
        process.wait()
        assert _lines(out / "runs.jsonl") == 1
        time.sleep(1.0)  # the orphaned agent wakes up and finds its proxy gone: nothing reaches the endpoint
        assert len(endpoint.model_calls) == 2

        _config(tmp_path, _agents("slow-agent 2"))  # another version of the agent: the resume is refused
        refused = alisio(tmp_path, "eval", "run", "--resume", str(out), env={"OPENAI_API_KEY": SECRET})
        assert refused.returncode == 1
        assert (
            "agent slow's version differs: slow-agent 1 when the run started, slow-agent 2 now"
            in refused.stderr
        )
        assert "agent slow's settings differ" in refused.stderr
        assert "nothing was run" in refused.stderr
        assert _lines(out / "runs.jsonl") == 1 and len(endpoint.model_calls) == 2

        _config(tmp_path, _agents("slow-agent 1"))
        resumed = alisio(tmp_path, "eval", "run", "--resume", str(out), env={"OPENAI_API_KEY": SECRET})
        assert resumed.returncode == 0, resumed.stderr
        log = endpoint.model_calls
    records = _records(out)
    assert sorted(records) == ["t1", "t2"] and _lines(out / "runs.jsonl") == 2
    assert {r.status.value for r in records.values()} == {"pass"}
    report = json.loads((out / "report.json").read_text())
    assert report["summary"]["measured"]["turns"] == len(log) == 4
    assert report["summary"]["measured"]["tokens"]["input"] == 100 * len(log)
    agent = report["conditions"]["agent"]
    assert re.fullmatch(r"[0-9a-f]{64}", agent.pop("settingsHash"))
    assert agent == {"name": "slow", "kind": "command", "version": "slow-agent 1"}
    plan = json.loads((out / "plan.json").read_text())
    assert [(a["name"], a["version"]) for a in plan["agents"]] == [("slow", "slow-agent 1")]
