"""docs/agents.md is true: its agent, configuration and commands, run through the installed command.

- The named blocks (``my-agent.py``, ``config.toml``, ``compare.json``) are written as shown; in
  ``config.toml`` the scripted endpoint's URL replaces ``http://127.0.0.1:8000/v1`` and the written agent's
  path replaces ``/path/to/my-agent.py``.
- Every ``$ alisio ...`` line runs as written, in that directory, against the scripted endpoint (which
  fixes fix-add through the agent's ``bash`` tool), and exits 0; the run's report names the agent as the doc
  says.
- The presets block parses, each preset on the api the doc's table names.
- ``compare.json`` is a valid variants file giving each variant its agent and model.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

from alisio.core.agents.config import split_agents
from alisio.core.harness.config import MeasuredConfig
from alisio.core.lab.comparisons.variants import parse_variants
from tests.integration.agent_endpoint import AgentEndpoint

ALISIO = Path(sys.executable).with_name("alisio")
DOC = Path(__file__).resolve().parents[3] / "docs" / "agents.md"
_FENCE = re.compile(r"^```(\S*)[ \t]*(\S*)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def _blocks() -> list[tuple[str, str, str]]:
    return [(m.group(1), m.group(2), m.group(3)) for m in _FENCE.finditer(DOC.read_text(encoding="utf-8"))]


def _named(path: str) -> str:
    return next(body for _, name, body in _blocks() if name == path)


def _alisio(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(ALISIO_CONFIG_HOME=str(cwd / ".config"), ALISIO_DATA_HOME=str(cwd / ".data"))
    return subprocess.run(
        [str(ALISIO), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False, env=env,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_the_first_external_agent_runs_records_and_replays(tmp_path: Path) -> None:
    """The doc's agent fixes fix-add through the proxy; the record then replays with no divergence."""
    agent = tmp_path / "my-agent.py"
    agent.write_text(_named("my-agent.py"))
    commands = [
        shlex.split(line.removeprefix("$ "))
        for lang, _, body in _blocks()
        if lang == "console"
        for line in body.splitlines()
        if line.startswith("$ alisio ")
    ]
    assert len(commands) == 3
    with AgentEndpoint() as endpoint:
        config = _named("config.toml").replace("http://127.0.0.1:8000/v1", endpoint.base_url)
        (tmp_path / ".config").mkdir()
        (tmp_path / ".config" / "config.toml").write_text(config.replace("/path/to/my-agent.py", str(agent)))
        for command in commands:
            done = _alisio(tmp_path, *command[1:])
            assert done.returncode == 0, (command, done.stderr)
        calls = len(endpoint.model_calls)
    assert calls == 2 * 2 + 2  # two runs and the recording, two model calls each; the replay made none
    assert (tmp_path / "cassettes" / "mine" / "fix-add.jsonl").is_file()
    reports = sorted((tmp_path / ".data" / "eval").glob("*/report.json"))
    first = json.loads(reports[0].read_text())
    agent = first["conditions"]["agent"]
    assert re.fullmatch(
        r"[0-9a-f]{64}", agent.pop("settingsHash")
    )  # the digest of its [agents.mine] settings
    assert agent == {"name": "mine", "kind": "command", "version": "my-agent 0.1"}
    assert (first["summary"]["passes"], first["summary"]["runs"]) == (2, 2)


def test_the_presets_parse_on_the_apis_the_doc_names() -> None:
    """The presets block is a valid configuration; each preset speaks the api the doc's table names."""
    body = next(body for lang, name, body in _blocks() if lang == "toml" and not name)
    _, external = split_agents(tomllib.loads(body), "config.toml").unwrap()
    assert [(agent.name, agent.kind, agent.api) for agent in external] == [
        ("ai", "aider", "openai-chat"),
        ("cx", "codex", "openai-responses"),
        ("oc", "opencode", "openai-chat"),
    ]
    table = DOC.read_text(encoding="utf-8")
    assert "| `codex` | Codex CLI 0.171.0, npm `@openai/codex` | OpenAI Responses | runs;" in table


def test_the_variants_file_gives_each_variant_its_agent_and_model() -> None:
    """compare.json is a valid variants file: each variant keeps its agent and model."""
    plan = parse_variants(_named("compare.json").encode(), "compare.json", MeasuredConfig()).unwrap()
    assert [(v.id, v.agent, v.model) for v in plan.variants] == [
        ("opencode", "oc", None),
        ("mine", "mine", "qwen2.5-coder-32b"),
    ]
