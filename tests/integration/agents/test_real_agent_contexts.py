"""Contexts reach the real agent CLIs (``make agents``): Codex, OpenCode and Claude Code against the scripted
endpoint with the network cut (``unshare -n``, loopback only), as ``test_real_agents`` runs them.

One ``eval run --context FILE`` per agent over smoke-coding's fix-add: the context puts an instructions file
in the workspace (``AGENTS.md``; Claude Code reads ``CLAUDE.md``) and another in the agent's own HOME
(Codex's ``~/.codex/AGENTS.md``, OpenCode's ``~/.config/opencode/AGENTS.md``, Claude Code's
``~/.claude/CLAUDE.md``), each holding a marker no other text has. Every agent loads them into its prompt on
its own: the endpoint's log of the requests holds both markers, the report names the context, and the
suite's fixture is unchanged. A skill put in the agent's HOME (Claude Code's ``~/.claude/skills/NAME/``,
Codex's ``~/.codex/skills/NAME/``, OpenCode's ``~/.config/opencode/skill/NAME/``) is listed to the model: its
description is in a request. Measured with Codex 0.171.0, OpenCode 1.18.33, Claude Code 2.1.197. Marked
``slow`` (``make test-slow``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.integration.agents.test_real_agents import _binary, _in_netns, _netns_works, _setup

pytestmark = [pytest.mark.xdist_group("real-agents"), pytest.mark.slow]

WORKSPACE_MARKER = "ALISIO-WORKSPACE-CONTEXT-7f3a"
HOME_MARKER = "ALISIO-HOME-CONTEXT-91c2"
FILES = {
    "codex": ("AGENTS.md", ".codex/AGENTS.md"),
    "opencode": ("AGENTS.md", ".config/opencode/AGENTS.md"),
    "claude-code": ("CLAUDE.md", ".claude/CLAUDE.md"),
}


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


NETNS = pytest.mark.skipif(
    not _netns_works(), reason="needs unshare -n (root, or user namespaces) to cut the network"
)
AGENTS = [("codex", "codex"), ("opencode", "opencode"), ("claude-code", "claude")]


@NETNS
@pytest.mark.parametrize(("kind", "binary"), AGENTS)
def test_a_real_agent_reads_the_workspace_and_home_context(tmp_path: Path, kind: str, binary: str) -> None:
    """The agent's requests carry the text of the context's workspace file and of its home file."""
    if _binary(binary) is None:
        pytest.skip(f"{kind} is not installed (make agents)")
    flags = _setup(tmp_path, kind)
    fixture = tmp_path / "suite" / "fixtures" / "fix-add"
    before = _tree(fixture)
    workspace_file, home_file = FILES[kind]
    contexts = tmp_path / "ctx"
    contexts.mkdir()
    (contexts / "workspace.md").write_text(f"# Conventions\n\nProject marker: {WORKSPACE_MARKER}.\n")
    (contexts / "home.md").write_text(f"# My preferences\n\nUser marker: {HOME_MARKER}.\n")
    context = {
        "label": "markers",
        "workspace": {workspace_file: "workspace.md"},
        "home": {home_file: "home.md"},
    }
    (contexts / "context.json").write_text(json.dumps(context))
    out = tmp_path / "out"
    args = ("eval", "run", "smoke-coding", *flags, "--k", "1", "--base-url", "{base_url}", "--out", str(out))
    done = _in_netns(tmp_path, "live", *args, "--context", str(contexts / "context.json"))
    assert done["rc"] == 0, done["stderr"]
    bodies = "\n".join(call["body"] for call in done["calls"])
    assert WORKSPACE_MARKER in bodies, f"{kind}: the workspace {workspace_file} did not reach the model"
    assert HOME_MARKER in bodies, f"{kind}: the home {home_file} did not reach the model"
    report = json.loads((out / "report.json").read_text())
    assert report["conditions"]["context"]["label"] == "markers"
    assert [f["path"] for f in report["conditions"]["context"]["files"]] == [workspace_file, home_file]
    assert (report["tasks"][0]["passes"], report["tasks"][0]["judged"]) == (
        1,
        1,
    )  # the overlay is not a change
    assert _tree(fixture) == before


SKILL_MARKER = "alisio-skill-marker-5d1e"
SKILLS = {
    "codex": ".codex/skills/marker/",
    "opencode": ".config/opencode/skill/marker/",
    "claude-code": ".claude/skills/marker/",
}
"""Where each agent looks for a user-level skill (a folder with SKILL.md whose front matter names it)."""


@NETNS
@pytest.mark.parametrize(("kind", "binary"), AGENTS)
def test_a_real_agent_lists_a_home_skill(tmp_path: Path, kind: str, binary: str) -> None:
    """A skill put in the agent's HOME by a context is listed to the model: its description is in a request."""
    if _binary(binary) is None:
        pytest.skip(f"{kind} is not installed (make agents)")
    flags = _setup(tmp_path, kind)
    skill = tmp_path / "ctx" / "skill"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: marker\ndescription: Use when asked about {SKILL_MARKER}.\n---\n\nSay {SKILL_MARKER}.\n"
    )
    context = tmp_path / "ctx" / "context.json"
    context.write_text(json.dumps({"label": "skill", "home": {SKILLS[kind]: "skill/"}}))
    out = tmp_path / "out"
    args = ("eval", "run", "smoke-coding", *flags, "--k", "1", "--base-url", "{base_url}", "--out", str(out))
    done = _in_netns(tmp_path, "live", *args, "--context", str(context))
    assert done["rc"] == 0, done["stderr"]
    bodies = "\n".join(call["body"] for call in done["calls"])
    assert SKILL_MARKER in bodies, f"{kind}: the skill in {SKILLS[kind]} is not listed to the model"
