"""An agent that reads no MCP servers, given some: each run is an ``error`` (``agent_start``) whose one line
names the servers and the reason its record gives (aider's ``NoMcp``) or a command agent's, through the real
``alisio`` command; the agent is never started, so no run goes without the servers it was meant to have."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from alisio.core.agents.presets import PRESETS, NoMcp
from alisio.shell.agents.mock_endpoint import MockEndpoint
from tests.integration.agents.test_external_agents import _agent, _config, _eval, _records, _suite, _task

pytestmark = pytest.mark.xdist_group("external-agents")

SERVERS = f'[mcp.servers.docs]\ncommand = ["{sys.executable}", "-c", "pass"]\n'


@pytest.fixture
def endpoint() -> Iterator[MockEndpoint]:
    with MockEndpoint() as running:
        yield running


def test_aider_and_a_command_agent_given_mcp_servers_are_refused_in_one_line(
    tmp_path: Path, endpoint: MockEndpoint
) -> None:
    aider = PRESETS["aider"].places.mcp
    assert isinstance(aider, NoMcp)
    # the aider "binary" answers its version probe, and would write a file if it were started on a task
    started = tmp_path / "started"
    fake = tmp_path / "aider"
    fake.write_text(
        f'#!/bin/sh\ncase "$*" in *--message=*) touch {started};; *) echo "aider 0.86.2";; esac\n'
    )
    fake.chmod(0o755)
    body = f'[agents.ai]\nkind = "aider"\nbinary = "{fake}"\n\n' + _agent("cmd") + "\n" + SERVERS
    _config(tmp_path, body)
    suite = _suite(tmp_path, [_task("by-aider", "ai"), _task("by-command", "cmd")])
    out = tmp_path / "out"
    done = _eval(tmp_path, "run", suite, "--k", "1", "--base-url", endpoint.base_url, "--out", out)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    records = _records(out)
    head = "cannot be given to this agent"
    assert (records["by-aider"].status.value, records["by-aider"].reason) == ("error", "agent_start")
    assert records["by-aider"].errors == (f"agent ai: MCP servers (docs) {head}: {aider.why}",)
    assert (records["by-command"].status.value, records["by-command"].reason) == ("error", "agent_start")
    assert records["by-command"].errors == (
        f"agent cmd: MCP servers (docs) {head}: a command agent has no MCP configuration alisio knows how "
        "to write",
    )
    assert not started.exists() and endpoint.model_calls == []
    report = json.loads((out / "report.json").read_text())
    assert (report["summary"]["errored"], report["summary"]["judged"]) == (2, 0)
