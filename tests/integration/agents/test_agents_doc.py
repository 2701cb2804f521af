"""docs/agents.md is true: its agent, configuration and commands, run through the installed command.

- The named blocks (``my-agent.py``, ``config.toml``, ``compare.json``) are written as shown; in
  ``config.toml`` the scripted endpoint's URL replaces ``http://127.0.0.1:8000/v1`` and the written agent's
  path replaces ``/path/to/my-agent.py``.
- ``alisio eval mock-endpoint`` runs as the doc starts it (on a free port), and logs what the doc shows;
  every other ``$ alisio ...`` line runs as written, in that directory, against it (its default fixes fix-add
  through the agent's ``bash`` tool), and exits 0; the run's report names the agent as the doc says. With the
  doc's ``mock-script.json`` the agent passes fix-add in its three turns.
- The presets block parses, each preset on the api the doc's table names; the table has a row per preset
  naming its record's pinned version.
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
from alisio.core.agents.presets import PRESETS, McpPlace
from alisio.core.harness.config import MeasuredConfig
from alisio.core.lab.comparisons.variants import parse_variants
from tests.integration.agents.test_mock_endpoint import serving, stop

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


def _console() -> list[list[str]]:
    return [body.splitlines() for lang, _, body in _blocks() if lang == "console"]


def _shown_in_order(shown: list[str], actual: list[str]) -> None:
    """Each shown line is an actual line, in order; ``...`` stands for any lines."""
    position, gap = 0, False
    for line in shown:
        if line == "...":
            gap = True
            continue
        found = next((i for i in range(position, len(actual)) if actual[i] == line), None)
        assert found is not None and (gap or found == position), (line, actual)
        position, gap = found + 1, False


def _config(cwd: Path, url: str, agent: Path) -> None:
    config = _named("config.toml").replace("http://127.0.0.1:8000/v1", url)
    (cwd / ".config").mkdir()
    (cwd / ".config" / "config.toml").write_text(config.replace("/path/to/my-agent.py", str(agent)))


def test_the_first_external_agent_runs_records_and_replays(tmp_path: Path) -> None:
    """``alisio eval mock-endpoint`` as the doc starts it (on a free port) logs what the doc shows; the doc's
    agent fixes fix-add through the proxy; the record then replays with no divergence; Ctrl-C stops it."""
    agent = tmp_path / "my-agent.py"
    agent.write_text(_named("my-agent.py"))
    started, _ = (block for block in _console() if block[0].startswith("$ alisio eval mock-endpoint"))
    commands = [
        shlex.split(line.removeprefix("$ "))
        for block in _console()
        if not block[0].startswith("$ alisio eval mock-endpoint")
        for line in block
        if line.startswith("$ alisio ")
    ]
    assert len(commands) == 3
    args = shlex.split(started[0].removeprefix("$ alisio eval mock-endpoint "))
    assert args == ["--port", "8000"]
    with serving(tmp_path, "--port", "0") as (process, url):
        _config(tmp_path, url, agent)
        for command in commands:
            done = _alisio(tmp_path, *command[1:])
            assert done.returncode == 0, (command, done.stderr)
        code, err = stop(process)
    assert code == 130, err
    shown = [line.replace("http://127.0.0.1:8000/v1", url) for line in started[1:]]
    _shown_in_order(shown, [url, *err.splitlines()])
    assert (tmp_path / "cassettes" / "mine" / "fix-add.jsonl").is_file()
    reports = sorted((tmp_path / ".data" / "eval").glob("*/report.json"))
    first = json.loads(reports[0].read_text())
    agent = first["conditions"]["agent"]
    assert re.fullmatch(
        r"[0-9a-f]{64}", agent.pop("settingsHash")
    )  # the digest of its [agents.mine] settings
    assert agent == {"name": "mine", "kind": "command", "version": "my-agent 0.1"}
    assert (first["summary"]["passes"], first["summary"]["runs"]) == (2, 2)


def test_the_doc_script_fixes_fix_add_in_three_model_calls(tmp_path: Path) -> None:
    """``mock-endpoint --script mock-script.json``: the doc's agent passes fix-add in the script's three turns,
    and the report's tokens are the script's."""
    agent = tmp_path / "my-agent.py"
    agent.write_text(_named("my-agent.py"))
    (tmp_path / "mock-script.json").write_text(_named("mock-script.json"))
    _, started = (block for block in _console() if block[0].startswith("$ alisio eval mock-endpoint"))
    args = shlex.split(started[0].removeprefix("$ alisio eval mock-endpoint "))
    assert args == ["--port", "8000", "--script", "mock-script.json"]
    with serving(tmp_path, "--port", "0", *args[2:], cwd=tmp_path) as (process, url):
        _config(tmp_path, url, agent)
        done = _alisio(tmp_path, "eval", "run", "smoke-coding", "--tasks", "fix-add", "--k", "1", "--agent", "mine",
                       "--allow-write", "--allow-process", "--out", str(tmp_path / "out"))  # fmt: skip
        code, err = stop(process)
    assert done.returncode == 0, done.stderr
    assert code == 130 and err.splitlines()[-1] == "stopped after 3 requests", err
    summary = json.loads((tmp_path / "out" / "report.json").read_text())["summary"]
    assert (summary["passes"], summary["measured"]["turns"]) == (1, 3), summary
    assert (summary["measured"]["tokens"]["input"], summary["measured"]["tokens"]["output"]) == (3000, 60)


def test_the_presets_parse_on_the_apis_the_doc_names() -> None:
    """The presets block is a valid configuration; each preset speaks the api the doc's table names."""
    body = next(body for lang, name, body in _blocks() if lang == "toml" and not name)
    _, external = split_agents(tomllib.loads(body), "config.toml").unwrap()
    assert [(agent.name, agent.kind, agent.api) for agent in external] == [
        ("ai", "aider", "openai-chat"),
        ("cx", "codex", "openai-responses"),
        ("gm", "gemini-cli", "gemini"),
        ("oc", "opencode", "openai-chat"),
    ]
    table = DOC.read_text(encoding="utf-8")
    rows: dict[str, str] = {}  # the presets table's rows: the first cell is the kind alone
    for line in table.splitlines():
        if (cell := re.match(r"\| `([a-z-]+)` \| ", line)) is not None:
            rows.setdefault(cell.group(1), line)
    for name, preset in PRESETS.items():  # a row per preset, naming its record's version and package
        assert f" {preset.package.version}, {preset.package.registry.replace('pypi', 'PyPI')} `" in rows[name]
        assert f"`{preset.package.name}`" in rows[name]


def test_the_places_table_is_each_records_places() -> None:
    """docs/agents.md's table of where each agent reads its instructions, skills and MCP servers says what each
    record's ``places`` says: a row per preset (its name, spaces as dashes), its instructions file, skills
    directory, MCP file and key, or ``none`` (the record's reason for no MCP servers)."""
    text = DOC.read_text(encoding="utf-8")
    head = "| agent | instructions file | skills directory | MCP servers |"
    lines = text.split(head, 1)[1].splitlines()[2:]
    rows = {}
    for line in lines[: next(i for i, line in enumerate(lines) if not line.startswith("|"))]:
        agent, *cells = (cell.strip() for cell in line.strip("|").split(" | "))
        rows[agent.lower().replace(" ", "-")] = cells
    assert set(rows) == set(PRESETS)

    def first(cell: str) -> str | None:
        code = re.match(r"(?:its )?`([^`]*)`", cell)
        return None if code is None else code.group(1).rstrip("/")

    for name, preset in PRESETS.items():
        instructions, skills, mcp = rows[name]
        places = preset.places
        assert (first(instructions), first(skills)) == (places.instructions, places.skills), name
        if isinstance(places.mcp, McpPlace):
            assert first(mcp) == places.mcp.file, name
            assert re.search(rf"`\[?{re.escape(places.mcp.key)}[].`]", mcp), (name, mcp)
        else:
            assert mcp == f"none: {places.mcp.why} (refused)", name


def test_the_variants_file_gives_each_variant_its_agent_and_model() -> None:
    """compare.json is a valid variants file: each variant keeps its agent and model."""
    plan = parse_variants(_named("compare.json").encode(), "compare.json", MeasuredConfig()).unwrap()
    assert [(v.id, v.agent, v.model) for v in plan.variants] == [
        ("opencode", "oc", None),
        ("mine", "mine", "qwen2.5-coder-32b"),
    ]
