"""A context given to an external agent (a command agent, ``fake_agent.py``, against the scripted endpoint):
its home file lands in the agent's private HOME, its workspace file in the copy, the agent's tool calls that
name them count as using the context, and neither is counted as the agent's change."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from alisio.core.agents.mock import FIX_COMMAND
from alisio.shell.agents.mock_endpoint import MockEndpoint
from tests.integration.agents.test_external_agents import _agent, _config, _eval, _records, _suite, _task

pytestmark = pytest.mark.xdist_group("external-agents")

MARK = "house-rule-4b1"
COMMAND = f"grep -q {MARK} $HOME/.notes/house.md && grep -q {MARK} AGENTS.md && {FIX_COMMAND}"
"""The endpoint's tool call: it fixes add only when both context files are where the context put them."""


@pytest.fixture
def endpoint() -> Iterator[MockEndpoint]:
    with MockEndpoint(command=COMMAND) as running:
        yield running


def test_an_external_agent_gets_the_home_and_workspace_files(tmp_path: Path, endpoint: MockEndpoint) -> None:
    _config(tmp_path, _agent("fake", tools='{ bash = "bash" }'))
    suite = _suite(tmp_path, [_task("fix", "fake")])
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "rule.md").write_text(f"{MARK}\n")
    context = tmp_path / "ctx" / "context.json"
    context.write_text(
        json.dumps({"workspace": {"AGENTS.md": "rule.md"}, "home": {".notes/house.md": "rule.md"}})
    )
    out, bare = tmp_path / "out", tmp_path / "bare"
    done = _eval(
        tmp_path,
        "run",
        suite,
        "--k",
        "1",
        "--base-url",
        endpoint.base_url,
        "--out",
        out,
        "--context",
        context,
    )
    assert done.returncode == 0, done.stderr
    record = _records(out)["fix"]
    assert record.status == "pass", record  # tree-diff-within: the context's files are not changes
    assert record.context_used is True  # the bash call names AGENTS.md and .notes/house.md
    report = json.loads((out / "report.json").read_text())
    assert [(f["area"], f["path"]) for f in report["conditions"]["context"]["files"]] == [
        ("workspace", "AGENTS.md"),
        ("home", ".notes/house.md"),
    ]
    done = _eval(tmp_path, "run", suite, "--k", "1", "--base-url", endpoint.base_url, "--out", bare)
    assert done.returncode == 0, done.stderr
    assert _records(bare)["fix"].status == "fail"  # without the context the grep fails: nothing fixed
    assert _records(bare)["fix"].context_used is None
