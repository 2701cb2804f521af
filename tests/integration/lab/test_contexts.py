"""Contexts through the installed CLI (``eval run --context``, compare.json ``context``): what reaches the
built-in agent, what the reports name, what is refused before the first run.

The calc suite's fix-add, scripted: the context's AGENTS.md lands in each fresh copy (the agent reads it),
the fixture on disk is never touched, tree-diff-within and the kept diff do not count it; the system text
reaches the system prompt (a ``when`` turn sees it); the report names the context and counts the runs that
used it; every bad context is one line naming the file, the variant and the field, nothing run.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import (
    FIX,
    alisio,
    eval_run,
    make_suite,
    read_report,
    read_runs,
    refused,
    task,
    variants,
    write_config,
)

AGENTS_TEXT = "Conventions: add returns a + b.\n"


def _read_agents_then(script: dict[str, Any]) -> dict[str, Any]:
    """``script`` after a turn reading AGENTS.md."""
    first = {
        "toolCalls": [{"name": "read_file", "arguments": {"path": "AGENTS.md"}}],
        "usage": {"inputTokens": 10, "outputTokens": 1},
    }
    return {"turns": [first, *script["turns"]]}


def _context(root: Path, body: dict[str, Any], name: str = "ctx.json") -> Path:
    (root / "contexts").mkdir(exist_ok=True)
    (root / "contexts" / "AGENTS.md").write_text(AGENTS_TEXT)
    path = root / name
    path.write_text(json.dumps(body))
    return path


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


def test_a_workspace_context_reaches_the_agent_and_is_not_a_change(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    before = _tree(suite)
    context = _context(tmp_path, {"workspace": {"AGENTS.md": "contexts/AGENTS.md", "docs/": "contexts/"}})
    script = tmp_path / "script.json"
    script.write_text(json.dumps(_read_agents_then(FIX)))
    out, summary = tmp_path / "out", tmp_path / "summary.md"
    result = alisio(
        tmp_path, "eval", "run", "calc-suite", "--suite-dir", suite, "--yes", "--script", script, "--k", "2",
        "--allow-write", "--context", context, "--out", out, "--keep", "--junit", tmp_path / "junit.xml",
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "context ctx " in result.stderr  # the headline names it
    records = read_runs(out)
    assert [r.status for r in records] == ["pass", "pass"]  # tree-diff-within allows only src/calc.py
    assert all(r.context_used for r in records)
    transcript = (out / "runs" / "fix-add" / "0.jsonl").read_text()
    assert "add returns a + b" in transcript  # the agent read the copy's AGENTS.md
    kept = json.loads((out / "runs" / "fix-add" / "0.workspace.json").read_text())
    assert [c["path"] for c in kept["changes"]] == ["src/calc.py"]
    report = read_report(out)
    condition = report.conditions.context
    assert condition is not None and condition.label == "ctx"
    sha = hashlib.sha256(AGENTS_TEXT.encode()).hexdigest()
    assert [(f.area, f.path, f.sha256) for f in condition.files] == [
        ("workspace", "AGENTS.md", sha),
        ("workspace", "docs/AGENTS.md", sha),
    ]
    assert report.tasks[0].context_used == 2
    markdown = (out / "report.md").read_text()
    assert (
        f"| Context | ctx ({condition.digest[:16]}: workspace AGENTS.md, workspace docs/AGENTS.md) |"
        in markdown
    )
    assert "used context" in markdown and "used context" in (out / "report.html").read_text()
    assert _tree(suite) == before  # the suite's fixture on disk is never touched
    junit = (tmp_path / "junit.xml").read_text()
    assert f'<property name="context" value="ctx ({condition.digest[:16]}: workspace AGENTS.md' in junit
    assert f"context ctx {condition.digest[:16]}" in summary.read_text()
    shown = alisio(tmp_path, "eval", "show", out)
    assert f"Context: ctx ({condition.digest[:16]}" in shown.stdout
    assert "context: used (a tool call named one of its files)" in shown.stdout
    listed = alisio(tmp_path, "eval", "runs", "--json")
    assert any(f"context ctx {condition.digest[:16]}" in line for line in listed.stdout.splitlines())
    for kept_dir in (
        Path(line.split(": ", 1)[1])
        for line in result.stdout.splitlines() + result.stderr.splitlines()
        if line.strip().startswith("kept ")
    ):
        assert (kept_dir / "AGENTS.md").read_text() == AGENTS_TEXT
        __import__("shutil").rmtree(kept_dir)


def test_a_run_that_never_names_the_context_did_not_use_it(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    context = _context(tmp_path, {"label": "unread", "workspace": {"AGENTS.md": "contexts/AGENTS.md"}})
    script = tmp_path / "script.json"
    script.write_text(json.dumps(FIX))
    out = tmp_path / "out"
    result = eval_run(
        tmp_path, suite, "--k", "1", "--allow-write", "--context", context, "--out", out, script=script
    )
    assert result.returncode == 0, result.stderr
    assert [r.context_used for r in read_runs(out)] == [False]
    assert read_report(out).tasks[0].context_used == 0
    assert "0/1" in result.stdout.splitlines()[1]  # the used context column


def test_system_text_reaches_the_built_in_agents_system_prompt(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    context = _context(tmp_path, {"system": "House rule: the fix is a plus."})
    fix_when = {
        "turns": [{**turn, "when": "House rule"} if i == 0 else turn for i, turn in enumerate(FIX["turns"])]
    }
    script = tmp_path / "script.json"
    script.write_text(json.dumps(fix_when))
    with_it, without = tmp_path / "with", tmp_path / "without"
    assert (
        eval_run(
            tmp_path,
            suite,
            "--k",
            "1",
            "--allow-write",
            "--context",
            context,
            "--out",
            with_it,
            script=script,
        ).returncode
        == 0
    )
    assert [r.status for r in read_runs(with_it)] == ["pass"]
    # without the text the conditional first turn is passed over: the read never happens, the edit is refused
    assert (
        eval_run(tmp_path, suite, "--k", "1", "--allow-write", "--out", without, script=script).returncode
        == 0
    )
    assert [r.status for r in read_runs(without)] == ["fail"]
    condition = read_report(with_it).conditions.context
    assert condition is not None and condition.system_chars == len("House rule: the fix is a plus.")


def test_variants_name_the_differing_context_and_count_its_use(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    _context(tmp_path, {})
    compare = tmp_path / "compare.json"
    ctx = {"label": "agents", "workspace": {"AGENTS.md": "contexts/AGENTS.md"}}
    compare.write_text(
        json.dumps({"suite": "calc-suite", "variants": [{"id": "plain"}, {"id": "with", "context": ctx}]})
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps(_read_agents_then(FIX)))
    result = variants(
        tmp_path,
        suite,
        compare,
        "--k",
        "5",
        "--allow-write",
        "--script",
        str(script),
        "--out",
        str(tmp_path / "out"),
    )
    assert result.returncode == 0, result.stderr
    comparison = json.loads((tmp_path / "out" / "comparison.json").read_text())
    warnings = comparison["comparisons"][0]["comparison"]["warnings"]
    assert any(w.startswith("context differs: none -> agents (") for w in warnings)
    # the plain arm's read of AGENTS.md fails (no such file), the edit still fixes add: both arms pass
    assert "The context agents helped on 0 tasks, hurt on 0, no verdict on 1 (FWER 5%)." in result.stdout
    assert "used context 5/5" in result.stdout
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert "context" not in plan["variants"][0]
    assert plan["variants"][1]["context"] == read_report(tmp_path / "out" / "with").conditions.context.digest  # type: ignore[union-attr]


BAD_CONTEXTS = [
    (
        {"workspace": {"check.py": "contexts/AGENTS.md"}},
        "context.workspace: check.py is read by the verifiers of task fix-add (a protected file)",
    ),
    (
        {"workspace": {"AGENTS.md": "../AGENTS.md"}},
        'context.workspace["AGENTS.md"]: source "../AGENTS.md": path escapes',
    ),
    (
        {"workspace": {"/etc/x": "contexts/AGENTS.md"}},
        'context.workspace["/etc/x"]: destination: absolute path',
    ),
    (
        {"workspace": {".git/config": "contexts/AGENTS.md"}},
        "destination: .git is the fixture's own repository",
    ),
    ({"workspace": {"AGENTS.md": "contexts/missing.md"}}, "contexts/missing.md does not exist"),
    ({"workspace": {"AGENTS.md": "link.md"}}, "link.md is a symlink that leads out of"),
    ({"workspace": {"dir/": "contexts/AGENTS.md"}}, "a destination ending with / is a directory"),
    ({"workspace": {"AGENTS.md": "contexts/AGENTS.md"}, "colour": 1}, "context.colour: unknown field"),
    ({}, "context: adds nothing"),
    (
        {"home": {".claude/CLAUDE.md": "contexts/AGENTS.md"}},
        "context.home: the built-in agent has no HOME of its own",
    ),
    (
        {"mcp": {"docs": {"command": ["python3", "server.py"]}}},
        "context.mcp: the MCP servers (docs) each run a process: grant the process effect with --allow-process",
    ),
    ({"mcp": {"docs": {"command": []}}}, 'context.mcp["docs"].command: expected a non-empty array'),
    ({"system": ""}, "context.system: expected the text"),
]


@pytest.mark.parametrize(("body", "message"), BAD_CONTEXTS)
def test_a_bad_context_is_refused_before_the_first_run(
    tmp_path: Path, body: dict[str, Any], message: str
) -> None:
    suite = make_suite(tmp_path)
    context = _context(tmp_path, body)
    outside = tmp_path.parent / f"{tmp_path.name}-outside.md"
    outside.write_text("secret\n")
    os.symlink(outside, tmp_path / "link.md")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(FIX))
    result = eval_run(tmp_path, suite, "--allow-write", "--context", context, script=script)
    stderr = refused(tmp_path, result)
    first = stderr.splitlines()[0]
    assert first.startswith(f"alisio eval run: {context}: "), stderr
    assert message in first, stderr


def test_a_variants_context_error_names_the_variant(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    compare = tmp_path / "compare.json"
    bad = {"workspace": {"AGENTS.md": "nope.md"}}
    compare.write_text(
        json.dumps({"suite": "calc-suite", "variants": [{"id": "a"}, {"id": "b", "context": bad}]})
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps(FIX))
    stderr = refused(tmp_path, variants(tmp_path, suite, compare, "--allow-write", "--script", str(script)))
    assert (
        stderr.splitlines()[0]
        == f'alisio eval variants: {compare}: variant b: context.workspace["AGENTS.md"]: nope.md does not exist (paths are relative to {tmp_path}); nothing was run'
    )
    compare.write_text(
        json.dumps({"suite": "calc-suite", "variants": [{"id": "a"}, {"id": "b", "context": {}}]})
    )
    stderr = refused(tmp_path, variants(tmp_path, suite, compare, "--allow-write", "--script", str(script)))
    assert stderr.splitlines()[0] == (
        f"alisio eval variants: {compare}: variant b: context: adds nothing: give workspace, home, mcp or system"
    )


def test_system_is_refused_for_an_external_agent_naming_what_it_reads(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    write_config(
        tmp_path,
        '[provider]\nmodel = "m"\nbaseUrl = "http://127.0.0.1:9"\n\n[agents.cc]\nkind = "claude-code"\n',
    )
    context = _context(tmp_path, {"system": "Be brief."})
    stderr = refused(
        tmp_path, eval_run(tmp_path, suite, "--agent", "cc", "--allow-write", "--context", context)
    )
    assert "context.system: agent cc (claude-code) is external" in stderr
    assert 'CLAUDE.md in the workspace, or ~/.claude/CLAUDE.md (home ".claude/CLAUDE.md")' in stderr


def test_a_plan_carries_its_context_and_refuses_a_changed_one(tmp_path: Path) -> None:
    """``eval plan --context`` records the file and its digest; ``eval run --plan`` runs with it, and refuses
    to run once the file changed (another context is another plan)."""
    suite = make_suite(tmp_path)
    context = _context(tmp_path, {"workspace": {"AGENTS.md": "contexts/AGENTS.md"}})
    script = tmp_path / "script.json"
    script.write_text(json.dumps(_read_agents_then(FIX)))
    plan = tmp_path / "plan.json"
    planned = alisio(
        tmp_path, "eval", "plan", "calc-suite", "--suite-dir", suite, "--yes", "--script", script, "--k", "1",
        "--allow-write", "--context", context, "--out", plan,
    )  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    stored = json.loads(plan.read_text())
    assert stored["contextFile"] == str(context) and len(stored["context"]) == 64
    out = tmp_path / "out"
    ran = alisio(tmp_path, "eval", "run", "--plan", plan, "--script", script, "--out", out)
    assert ran.returncode == 0, ran.stderr
    assert read_report(out).conditions.context is not None
    assert [r.context_used for r in read_runs(out)] == [True]
    (tmp_path / "contexts" / "AGENTS.md").write_text("Another text.\n")
    again = alisio(tmp_path, "eval", "run", "--plan", plan, "--script", script, "--out", tmp_path / "again")
    assert again.returncode == 1
    assert any(": the context differs: " in line for line in again.stderr.splitlines()), again.stderr
    assert not (tmp_path / "again" / "runs.jsonl").exists()


def test_ray_is_refused_with_a_context(tmp_path: Path) -> None:
    """Ray workers are not given the context's files: refused before the first run, never run without."""
    suite = make_suite(tmp_path)
    context = _context(tmp_path, {"workspace": {"AGENTS.md": "contexts/AGENTS.md"}})
    script = tmp_path / "script.json"
    script.write_text(json.dumps(FIX))
    result = eval_run(
        tmp_path, suite, "--allow-write", "--context", context, "--executor", "ray", script=script
    )
    assert refused(tmp_path, result).splitlines() == [
        "alisio eval run: --executor ray: contexts are not passed to Ray workers yet; nothing was run"
    ]


def test_a_resume_reads_the_context_again_and_refuses_a_changed_one(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    context = _context(tmp_path, {"workspace": {"AGENTS.md": "contexts/AGENTS.md"}})
    script = tmp_path / "script.json"
    script.write_text(json.dumps(_read_agents_then(FIX)))
    out = tmp_path / "out"
    first = eval_run(
        tmp_path, suite, "--k", "1", "--allow-write", "--context", context, "--out", out, script=script
    )
    assert first.returncode == 0, first.stderr
    before = (out / "runs.jsonl").read_bytes()
    same = alisio(tmp_path, "eval", "run", "--resume", out, "--script", script)
    assert same.returncode == 0, same.stderr
    (tmp_path / "contexts" / "AGENTS.md").write_text("Another text.\n")
    changed = alisio(tmp_path, "eval", "run", "--resume", out, "--script", script)
    assert changed.returncode == 1
    assert "the context differs: " in changed.stderr, changed.stderr
    assert (out / "runs.jsonl").read_bytes() == before


def test_a_recording_with_a_context_replays_with_it_and_diverges_without(tmp_path: Path) -> None:
    """``eval record --context``: the cassette holds what the agent saw of the context; a replay with the same
    context is clean, one without it diverges (exit 2) where the agent read the file."""
    suite = make_suite(tmp_path)
    context = _context(tmp_path, {"workspace": {"AGENTS.md": "contexts/AGENTS.md"}})
    script = tmp_path / "script.json"
    script.write_text(json.dumps(_read_agents_then(FIX)))
    cassettes = tmp_path / "cassettes"
    common = ("calc-suite", "--suite-dir", suite, "--yes", "--allow-write", "--cassette-dir", cassettes)
    recorded = alisio(tmp_path, "eval", "record", *common, "--script", script, "--context", context)
    assert recorded.returncode == 0, recorded.stderr
    replayed = alisio(
        tmp_path, "eval", "run", *common, "--mode", "replay", "--context", context, "--out", tmp_path / "a"
    )
    assert replayed.returncode == 0, replayed.stderr
    assert [r.status for r in read_runs(tmp_path / "a")] == ["pass"]
    bare = alisio(tmp_path, "eval", "run", *common, "--mode", "replay", "--out", tmp_path / "b")
    assert bare.returncode == 2
    assert "divergence: task fix-add rep 0, call 1: messages[2].tool.result" in bare.stderr, bare.stderr


def test_a_servers_env_reaches_it_through_env() -> None:
    """The seam carries an argv: a server's ``env`` is given by starting it through ``env NAME=VALUE``."""
    from pathlib import Path

    from alisio.core.lab.reports.context import McpServer as _McpServer
    from alisio.core.lab.suites.context_spec import ContextSpec
    from alisio.shell.lab.contexts import load_context, mcp_servers_for

    servers = (
        _McpServer(name="plain", command=("python3", "s.py")),
        _McpServer(name="set", command=("python3", "s.py"), env=(("A", "1"), ("B", "x y"))),
    )
    loaded = load_context(ContextSpec(mcp=servers), Path("."), "ctx.json", "ctx")
    assert mcp_servers_for(loaded) == {
        "plain": ("python3", "s.py"),
        "set": ("env", "A=1", "B=x y", "python3", "s.py"),
    }
    assert mcp_servers_for(None) == {}


def test_the_mock_endpoint_refuses_turns_that_branch(tmp_path: Path) -> None:
    """``when``/``unless`` are for ``eval run --script``: the mock endpoint picks turns by position, and says so."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "a"}, {"when": "AGENTS.md", "text": "b"}]}))
    result = alisio(tmp_path, "eval", "mock-endpoint", "--script", script)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"alisio eval mock-endpoint: {script}: turns[1]: when/unless: the mock endpoint picks turns by position "
        "(eval run --script plays them)"
    ]


DOCS_SERVER = Path(__file__).resolve().parents[2] / "fixtures" / "mcp" / "docs_server.py"


def test_a_contexts_mcp_server_reaches_the_built_in_agent(tmp_path: Path) -> None:
    """The context's server (a real stdio MCP server, its env given) is started for each run; the agent's call
    of one of its tools is recorded, answered with the env's effect, and counts as using the context."""
    import shutil
    import sys

    suite = make_suite(tmp_path, task("fix-add", policy={"mode": "auto", "allow": ["write", "process"]}))
    (tmp_path / "mcp").mkdir()
    shutil.copy(DOCS_SERVER, tmp_path / "mcp" / "docs_server.py")
    server = [sys.executable, str(tmp_path / "mcp" / "docs_server.py")]
    context = _context(
        tmp_path, {"label": "docs", "mcp": {"docs": {"command": server, "env": {"MCP_DOCS_VARIANT": "2"}}}}
    )
    lookup = {
        "toolCalls": [{"name": "mcp__docs__lookup", "arguments": {"topic": "naming"}}],
        "usage": {"inputTokens": 10, "outputTokens": 1},
    }
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [lookup, *FIX["turns"]]}))
    out = tmp_path / "out"
    flags = ("--k", "1", "--allow-write", "--allow-process", "--context", context, "--out", out)
    result = eval_run(tmp_path, suite, *flags, script=script)
    assert result.returncode == 0, result.stderr
    (record,) = read_runs(out)
    assert record.status == "pass" and record.context_used is True
    transcript = (out / "runs" / "fix-add" / "0.jsonl").read_text()
    assert "functions are camelCase" in transcript  # the server ran with the context's env
    condition = read_report(out).conditions.context
    assert condition is not None and condition.mcp == ("docs",)
