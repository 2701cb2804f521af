"""The agent under test is named everywhere a run is named (issue 26, item 1): two external agents, the same
small CLI (``fake_agent.py``) under two ``[agents.NAME]`` tables that differ in a flag and in what their
version command prints, each run against the scripted endpoint; then the headline, report.md, report.html,
the JUnit properties, the step summary, ``eval runs``, ``eval show``, ``eval compare`` (its warning, its
page's highlighted row) and ``eval variants`` are read as a user reads them."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alisio.shell.agents.mock_endpoint import MockEndpoint
from tests.integration.helpers import alisio, write_config

HERE = Path(__file__).resolve().parents[1]
FAKE = HERE / "fake_agent.py"
FIXTURE = HERE.parents[1] / "suites" / "smoke-coding" / "fixtures" / "fix-add"
TASK: dict[str, Any] = {
    "id": "fix-add",
    "prompt": "The function add in src/calc.py is wrong: add(2, 3) returns -1. Fix it.",
    "fixture": "fixtures/fix-add",
    "budget": {"maxTurns": 10, "maxTokens": 100000, "maxWallMs": 30000, "maxToolCalls": 10},
    "policy": {"mode": "auto", "allow": ["write", "process"]},
    "verifiers": [{"kind": "command", "id": "check", "command": ["python3", "check.py"], "timeoutMs": 30000}],
}
CONFIG = f"""[provider]
model = "m"

[agents.first]
kind = "command"
command = {json.dumps(["python3", str(FAKE), "--prompt-file", "{prompt_file}"])}
version = {json.dumps(["python3", str(FAKE), "--version"])}

[agents.second]
kind = "command"
command = {json.dumps(["python3", str(FAKE), "--mode", "normal", "--prompt-file", "{prompt_file}"])}
version = {json.dumps(["python3", "-c", "print('other-agent 2.0')"])}
"""
FIRST = re.compile(r"first: fake-agent 1\.2\.3 \(command, settings [0-9a-f]{16}\)")
SECOND = re.compile(r"second: other-agent 2\.0 \(command, settings [0-9a-f]{16}\)")

pytestmark = pytest.mark.xdist_group("external-agents")


@pytest.fixture
def endpoint() -> Iterator[MockEndpoint]:
    with MockEndpoint() as running:
        yield running


def _suite(root: Path) -> Path:
    suite = root / "agents-suite"
    shutil.copytree(FIXTURE, suite / "fixtures" / "fix-add")
    document = {"schemaVersion": 1, "suiteId": "agents-suite", "suiteVersion": "1.0.0", "description": "fix-add",
                "tasks": [TASK]}  # fmt: skip
    (suite / "suite.json").write_text(json.dumps(document))
    return suite


def _run(home: Path, suite: Path, endpoint: MockEndpoint, agent: str, *args: str | Path) -> Any:
    summary = home / f"summary-{agent}.md"
    ran = alisio(
        home, "eval", "run", "agents-suite", "--suite-dir", suite, "--yes", "--allow-write", "--allow-process",
        "--base-url", endpoint.base_url, "--agent", agent, "-k", "2", "--out", home / agent,
        "--junit", home / f"{agent}.xml", *args, env={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return ran


def test_every_output_names_the_agent_and_compare_says_it_differs(
    tmp_path: Path, endpoint: MockEndpoint
) -> None:
    """Two agents on one model: each output names its agent (name, version its command printed, kind,
    settings digest); compare warns "agent differs" naming both sides and highlights the row."""
    write_config(tmp_path, CONFIG)
    suite = _suite(tmp_path)
    first = _run(tmp_path, suite, endpoint, "first")
    _run(tmp_path, suite, endpoint, "second")
    headline = next(line for line in first.stderr.splitlines() if line.startswith("agents-suite 1.0.0: "))
    assert ", agent first (fake-agent 1.2.3), seed 0," in headline, headline
    markdown = (tmp_path / "first" / "report.md").read_text()
    row = next(line for line in markdown.splitlines() if line.startswith("| Agent |"))
    assert FIRST.fullmatch(row.removeprefix("| Agent | ").removesuffix(" |")), row
    page = (tmp_path / "second" / "report.html").read_text()
    shown = re.search(r"<dt>Agent</dt><dd>([^<]*)</dd>", page)
    assert shown is not None and SECOND.fullmatch(shown.group(1)), shown
    properties = {
        p.get("name"): p.get("value") for p in ET.parse(tmp_path / "first.xml").getroot().iter("property")
    }
    assert FIRST.fullmatch(properties["agent"] or ""), properties
    assert ", agent first (fake-agent 1.2.3), mode live," in (tmp_path / "summary-first.md").read_text()

    listed = alisio(tmp_path, "eval", "runs").stdout.splitlines()
    assert listed[0].split()[:4] == ["RUN", "ID", "SUITE", "AGENT"]
    assert [re.search(r"(first|second) \([^)]*\)", line).group(0) for line in listed[1:]] == [  # type: ignore[union-attr]
        "second (other-agent 2.0)",
        "first (fake-agent 1.2.3)",
    ]
    rows = json.loads(alisio(tmp_path, "eval", "runs", "--json").stdout)["runs"]
    assert FIRST.fullmatch(rows[1]["naming"]["agent"]) and rows[1]["agent"] == "first (fake-agent 1.2.3)"
    opened = alisio(tmp_path, "eval", "show", tmp_path / "first")
    assert opened.returncode == 0, opened.stderr
    assert FIRST.fullmatch(opened.stdout.splitlines()[0].removeprefix("Agent: ")), opened.stdout

    compared = alisio(
        tmp_path, "eval", "compare", tmp_path / "first", tmp_path / "second", "--format", "summary",
        "--html", tmp_path / "c.html",
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    warning = next(line for line in compared.stdout.splitlines() if line.startswith("warning: agent differs"))
    old, _, new = warning.removeprefix("warning: agent differs: ").partition(" -> ")
    assert FIRST.fullmatch(old) and SECOND.fullmatch(new), warning
    html = (tmp_path / "c.html").read_text()
    assert re.search(r'<tr class="differs"><th>Agent</th><td>first: fake-agent 1\.2\.3 ', html), html
    assert html.index('<p class="answer">') < html.index("<h2>Tasks</h2>") < html.index("<h2>Conditions</h2>")


def test_variants_with_two_agents_name_them_and_their_difference(
    tmp_path: Path, endpoint: MockEndpoint
) -> None:
    """``eval variants`` over two agents: the headline names each variant's agent, comparison.md lists them
    (with "no overrides" of the configuration), and the comparison warns that the agent differs."""
    write_config(tmp_path, CONFIG)
    suite = _suite(tmp_path)
    compare = tmp_path / "compare.json"
    compare.write_text(json.dumps({"suite": "agents-suite", "variants": [
        {"id": "one", "agent": "first"}, {"id": "two", "agent": "second"}]}))  # fmt: skip
    ran = alisio(
        tmp_path, "eval", "variants", "agents-suite", "--suite-dir", suite, "--yes", "--allow-write",
        "--allow-process", "--base-url", endpoint.base_url, "--variants", compare, "-k", "1",
        "--out", tmp_path / "v",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    lines = ran.stderr.splitlines()
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("agents-suite 1.0.0: ")) :]
    assert lines[1].startswith("  one (baseline): agent first (fake-agent 1.2.3), config "), lines[1]
    assert (
        lines[2].startswith("  two: agent second (other-agent 2.0), config ") and "no overrides" in lines[2]
    )
    markdown = (tmp_path / "v" / "comparison.md").read_text()
    assert "| one | baseline | first (fake-agent 1.2.3) |" in markdown
    assert "| two | candidate | second (other-agent 2.0) |" in markdown
    (entry,) = json.loads((tmp_path / "v" / "comparison.json").read_text())["comparisons"]
    warning = next(w for w in entry["comparison"]["warnings"] if w.startswith("agent differs: "))
    assert FIRST.search(warning) and SECOND.search(warning), warning
    html = (tmp_path / "v" / "comparison.html").read_text()
    assert "<td>first (fake-agent 1.2.3)</td>" in html and '<tr class="differs"><th>Agent</th>' in html
