"""Real agent CLIs given an MCP server (config.toml's ``[mcp.servers.docs]``, the ``mcp`` package's
``tests/fixtures/mcp/docs_server.py``) against the scripted endpoint with the network cut: alisio writes the
server into the agent's own configuration where its preset record says (``places.mcp``, written by
``alisio.core.agents.mcp_config``), the agent starts it and offers its tools to the model from its first
request, though the server takes ``DELAY`` seconds to start (more than Claude Code's 2 s print-mode wait and
its 5 s blocking default: without its MCP place's variables its requests go without them): every preset with
an MCP place, from its record (no edit here for a new one). Marked ``slow`` (``make test-slow``); skipped where
the agent is not installed or a network namespace cannot be made."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from alisio.core.agents.presets import PRESETS, McpPlace
from tests.integration.agents.test_real_agents import _binary, _flags, _in_netns, _netns_works

SERVER = Path(__file__).resolve().parents[2] / "fixtures" / "mcp" / "docs_server.py"
SUITE = Path(__file__).resolve().parents[3] / "suites" / "smoke-coding"

pytestmark = [pytest.mark.xdist_group("real-agents"), pytest.mark.slow]

DELAY = 6
"""Seconds the server waits before it answers (its ``--start-delay``), besides its own start (2 s here)."""

WITH_MCP = sorted((name, p.binary) for name, p in PRESETS.items() if isinstance(p.places.mcp, McpPlace))
"""Every preset whose record gives an MCP place, and its executable: each is tested here, from its record."""


def _setup(tmp_path: Path, kind: str) -> list[str]:
    import shutil

    (tmp_path / "config").mkdir()
    config = (
        f'[provider]\nmodel = "m"\n\n[agents.a]\nkind = "{kind}"\n\n'
        f'[mcp.servers.docs]\ncommand = ["{sys.executable}", "{SERVER}", "--start-delay", "{DELAY}"]\n'
    )
    (tmp_path / "config" / "config.toml").write_text(config)
    suite = tmp_path / "suite"
    shutil.copytree(SUITE, suite, ignore=shutil.ignore_patterns("cassettes"))
    return _flags(suite, "none")


def _tool_names(body: str) -> list[str]:
    """The tools a request offers: Anthropic's and Responses' ``name``, Chat Completions' ``function.name``,
    the Gemini API's ``functionDeclarations[].name``."""
    names = []
    for tool in json.loads(body).get("tools", []):
        names += [tool.get("name") or tool.get("function", {}).get("name")]
        names += [declared.get("name") for declared in tool.get("functionDeclarations", [])]
    return names


@pytest.mark.skipif(
    not _netns_works(), reason="needs unshare -n (root, or user namespaces) to cut the network"
)
@pytest.mark.parametrize(("kind", "binary"), WITH_MCP)
def test_the_agent_waits_for_a_slow_mcp_server_offers_its_tools_in_every_request_and_fixes_fix_add(
    tmp_path: Path, kind: str, binary: str
) -> None:
    if _binary(binary) is None:
        pytest.skip(f"{binary} is not installed (make agents)")
    common = _setup(tmp_path, kind)
    out = tmp_path / "out"
    live = _in_netns(tmp_path, "run", "eval", "run", "smoke-coding", *common, "--k", "1", "--base-url",
                     "{base_url}", "--out", str(out))  # fmt: skip
    assert live["rc"] == 0, live["stderr"]
    # every request offering tools (OpenCode's title request offers none) offers the server's: Claude Code
    # mcp__docs__lookup, OpenCode docs_lookup, Codex a namespace mcp__docs (its tools inside), Gemini CLI
    # mcp_docs_lookup
    offered = [names for call in live["calls"] if (names := [n for n in _tool_names(call["body"]) if n])]
    assert offered, live["stderr"]
    without = [i for i, names in enumerate(offered) if not any("docs" in name for name in names)]
    assert not without, f"requests {without} of {len(offered)} offer no docs tool: {offered[without[0]]}"
    report = json.loads((out / "report.json").read_text())
    assert report["tasks"][0]["passes"] == 1, live["stderr"]
