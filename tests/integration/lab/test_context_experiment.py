"""docs/context-experiments.md's worked example, reproduced: ``eval variants`` over
``examples/context-experiment`` (a convention written down only in an AGENTS.md the suite does not ship, a
scripted model that reads it when it is there) prints every line of the page's text blocks, and the page's
two refusals are what the command says."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.integration.helpers import ROOT, alisio, write_config

DOC = ROOT / "docs" / "context-experiments.md"
EXAMPLE = ROOT / "examples" / "context-experiment"
MARK = "<!-- reproduced:"


def _reproduced_lines() -> list[str]:
    """Every line of the ```text blocks after the page's reproduced mark."""
    text = DOC.read_text(encoding="utf-8")
    after = text[text.index(MARK) :]
    after = after[: after.index("\n### ")]
    blocks = re.findall(r"```text\n(.*?)```", after, flags=re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def test_the_worked_example_prints_every_figure_the_page_shows(tmp_path: Path) -> None:
    example = tmp_path / "example"
    shutil.copytree(EXAMPLE, example)
    fixture = example / "suite" / "fixtures" / "app"
    before = {p: p.read_bytes() for p in fixture.rglob("*") if p.is_file()}
    result = alisio(
        tmp_path, "eval", "variants", "house-style", "--suite-dir", "suite", "--yes", "--script", "scripts",
        "--allow-write", "--variants", "compare.json", "--input-rate", "3", "--output-rate", "15",
        "--out", "out", cwd=example,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    printed = set(result.stdout.splitlines()) | set(result.stderr.splitlines())
    lines = _reproduced_lines()
    assert len(lines) >= 20
    missing = [line for line in lines if line not in printed]
    assert not missing, missing
    assert {p: p.read_bytes() for p in fixture.rglob("*") if p.is_file()} == before  # the suite untouched
    markdown = (example / "out" / "comparison.md").read_text()
    assert "The context agents-md helped on 1 task, hurt on 0, no verdict on 1 (FWER 5%)." in markdown
    page = (example / "out" / "comparison.html").read_text()
    assert re.search(r'<tr class="differs"><th>Context</th>', page)
    comparison = json.loads((example / "out" / "comparison.json").read_text())
    (entry,) = comparison["comparisons"]
    assert entry["comparison"]["candidate"]["context"]["label"] == "agents-md"
    assert "context differs: none -> agents-md" in entry["comparison"]["warnings"][0]
    used = {t["taskId"]: t["candidate"]["contextUsed"] for t in entry["comparison"]["tasks"]}
    assert used == {"bump-version": 0, "farewell": 5}


def _doc_error(start: str) -> str:
    return next(line for line in DOC.read_text(encoding="utf-8").splitlines() if line.startswith(start))


def test_the_pages_refusals_are_what_the_command_says(tmp_path: Path) -> None:
    example = tmp_path / "example"
    shutil.copytree(EXAMPLE, example)
    bad = {
        "suite": "house-style",
        "variants": [
            {"id": "without"},
            {"id": "with-skill", "context": {"workspace": {"AGENTS.md": "../AGENTS.md"}}},
        ],
    }
    (example / "compare.json").write_text(json.dumps(bad))
    result = alisio(
        tmp_path, "eval", "variants", "house-style", "--suite-dir", "suite", "--yes", "--script", "scripts",
        "--allow-write", "--variants", "compare.json", cwd=example,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == _doc_error("alisio eval variants: compare.json:")
    assert not (tmp_path / "data").exists()
    write_config(
        tmp_path,
        '[provider]\nmodel = "m"\nbaseUrl = "http://127.0.0.1:9"\n\n[agents.codex]\nkind = "codex"\n',
    )
    (example / "ctx.json").write_text('{"system": "Read AGENTS.md first."}')
    result = alisio(
        tmp_path, "eval", "run", "house-style", "--suite-dir", "suite", "--yes", "--agent", "codex",
        "--allow-write", "--context", "ctx.json", cwd=example,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.splitlines() == [_doc_error("alisio eval run: ctx.json:")]


def test_sequential_counts_the_sequential_decisions(tmp_path: Path) -> None:
    """``--sequential`` runs the example unchanged; the summary line then counts the sequential decisions
    (valid under its stopping), and the peeking fixed-k verdicts say nothing of the context."""
    example = tmp_path / "example"
    shutil.copytree(EXAMPLE, example)
    result = alisio(
        tmp_path, "eval", "variants", "house-style", "--suite-dir", "suite", "--yes", "--script", "scripts",
        "--allow-write", "--variants", "compare.json", "--sequential", "--max-k", "30", "--out", "out", cwd=example,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    line = (
        "The context agents-md helped on 1 task, hurt on 0, no verdict on 1 (sequential decisions, FWER 5%)."
    )
    assert line in result.stdout.splitlines()
    assert DOC.read_text(encoding="utf-8").count(line) == 1
    assert "(FWER 5%)." not in result.stdout
