"""Each preset's record says truly where its agent reads its user-level context: a marker instructions file and
a marker skill written at the record's ``places`` (under the run directory, as a run lays it out) reach the
model in the real agent's requests.

The real CLIs (``make agents``) run once each, as their record starts them, against the scripted endpoint in a
network namespace with only loopback (``unshare -n``); about 50 s for the four here. Skipped, saying why,
where an agent is not installed or a network namespace cannot be made. Marked ``slow``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from alisio.core.agents.presets import PRESETS, NoMcp
from tests.integration.agents.test_real_agents import NEEDS_NETNS, _binary

HERE = Path(__file__).resolve().parent

pytestmark = [pytest.mark.xdist_group("real-agents"), pytest.mark.slow, NEEDS_NETNS]

WITH_PLACES = sorted(name for name, preset in PRESETS.items() if preset.places.instructions is not None)


def test_every_preset_without_context_places_is_one_that_has_none() -> None:
    """aider alone reads no user-level instructions file or skills (it is given files, not a home)."""
    assert sorted(set(PRESETS) - set(WITH_PLACES)) == ["aider"]
    aider = PRESETS["aider"].places
    assert (aider.instructions, aider.skills) == (None, None)
    assert aider.mcp == NoMcp(why="aider has no MCP client")


def test_each_agent_reads_its_instructions_and_skills_where_its_record_says(tmp_path: Path) -> None:
    """Codex (``codex-home/AGENTS.md``), Claude Code (``claude/CLAUDE.md``), Gemini CLI
    (``home/.gemini/GEMINI.md``) and OpenCode (``xdg-config/opencode/AGENTS.md``) each send the marker
    instructions and the marker skill's description to the model; each exits 0 having made its calls."""
    names = [name for name in WITH_PLACES if _binary(PRESETS[name].binary) is not None]  # type: ignore[index]
    if not names:
        pytest.skip("no agent with context places is installed (make agents)")
    log = tmp_path / "places.json"
    driver = 'ip link set lo up && exec "$0" "$@"'
    command = ["unshare", "-n", "sh", "-c", driver, sys.executable, str(HERE / "places_driver.py"), str(log)]
    done = subprocess.run([*command, *names], capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr
    results = json.loads(log.read_text())
    for name in names:
        result = results[name]
        assert result["rc"] == 0 and result["calls"] >= 2, (name, result["stderr"])
        assert (result["instructions"], result["skills"]) == (True, True), (name, result)
