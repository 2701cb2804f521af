"""The bundled suites (suites/): valid, their checks discriminate, their scripts and generators work.

For every task of every bundled suite:
- the suite validates with ``alisio eval validate``;
- every command verifier fails on the untouched fixture and passes once the reference solution
  (``suites/<suite>/solutions/<task>/``, files laid over a temp copy of the fixture) is applied, and the
  solution also satisfies the task's file and tree-diff-within verifiers;
- every script in ``suites/<suite>/scripts/`` loads in the scripted provider, and ``alisio run --script`` on a
  temp copy of the fixture ends with every verifier of the task passing (tool-sequence rules are judged
  here, from the run's event log, as the spec defines them).

The judges below are deliberately small and local: they check the suite content, not the lab's verifiers.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from alisio.shell.cli.main import run_cli
from alisio.shell.harness.providers.scripted import ScriptedProvider

ALISIO = Path(sys.executable).with_name("alisio")
REPO = Path(__file__).resolve().parents[3]
SUITES = REPO / "suites"
BUNDLED = {
    "smoke-coding": ("1.2.0", 7),
    "tool-sequences": ("1.0.0", 6),
    "long-context": ("1.0.0", 3),
    "long-context-stress": ("1.1.0", 10),
}
IGNORED_PARTS = {".git", "node_modules"}


def suite_json(name: str) -> dict[str, Any]:
    return json.loads((SUITES / name / "suite.json").read_text(encoding="utf-8"))


def tasks_of(name: str) -> dict[str, dict[str, Any]]:
    return {task["id"]: task for task in suite_json(name)["tasks"]}


def all_tasks() -> list[tuple[str, str]]:
    return [(name, task_id) for name in BUNDLED if (SUITES / name).is_dir() for task_id in tasks_of(name)]


def copy_fixture(name: str, task: dict[str, Any], into: Path) -> Path:
    work = into / "work"
    shutil.copytree(SUITES / name / task["fixture"], work)
    return work


def snapshot(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``root`` (``.git`` and ``node_modules`` ignored)."""
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in root.rglob("*")
        if path.is_file() and not IGNORED_PARTS & set(path.relative_to(root).parts)
    }


def run_command(verifier: dict[str, Any], work: Path) -> tuple[bool, str]:
    cwd = work / verifier.get("cwd", ".")
    done = subprocess.run(
        verifier["command"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=verifier["timeoutMs"] / 1000,
        check=False,
    )
    passed = done.returncode == verifier.get("expectExit", 0)
    if verifier.get("expectStdoutIncludes") is not None:
        passed = passed and verifier["expectStdoutIncludes"] in done.stdout
    return passed, done.stdout[-2000:] + done.stderr[-2000:]


def judge(verifier: dict[str, Any], work: Path, before: dict[str, str], calls: list[dict[str, Any]]) -> bool:
    """The spec's meaning of one verifier, for a finished workspace and its tool calls."""
    kind = verifier["kind"]
    if kind == "command":
        return run_command(verifier, work)[0]
    if kind in ("file-equals", "file-contains", "file-absent"):
        path = work / verifier["path"]
        if kind == "file-absent":
            return not path.exists()
        if not path.is_file():
            return False
        if kind == "file-equals":
            return hashlib.sha256(path.read_bytes()).hexdigest() == verifier["sha256"]
        return verifier["text"] in path.read_text(encoding="utf-8")
    if kind == "tree-diff-within":
        after = snapshot(work)
        changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
        allowed = verifier["allowed"]
        return all(any(p == a or (a.endswith("/") and p.startswith(a)) for a in allowed) for p in changed)
    assert kind == "tool-sequence", kind
    return all(rule_holds(rule, calls) for rule in verifier["rules"])


def rule_holds(rule: dict[str, Any], calls: list[dict[str, Any]]) -> bool:
    names = [call["name"] for call in calls]
    match rule["type"]:
        case "before":
            first = names.index(rule["first"]) if rule["first"] in names else len(names)
            return all(index > first for index, name in enumerate(names) if name == rule["then"])
        case "never":
            return rule["tool"] not in names
        case "max-calls":
            return names.count(rule["tool"]) <= rule["max"]
        case "no-repeat-failure":
            failed: set[str] = set()
            for call in calls:
                if call["name"] != rule["tool"]:
                    continue
                if call["arguments"] in failed:
                    return False
                if not call["ok"]:
                    failed.add(call["arguments"])
            return True
    raise AssertionError(rule)


def scripted_run(name: str, task: dict[str, Any], work: Path, tmp: Path) -> list[dict[str, Any]]:
    """``alisio run --script`` on ``work`` with the task's prompt and budget; the event log."""
    budget = task["budget"]
    command = [
        str(ALISIO),
        "run",
        "--json",
        "--cwd",
        str(work),
        "--script",
        str(SUITES / name / "scripts" / f"{task['id']}.json"),
        "--policy",
        task["policy"]["mode"],
        "--max-turns",
        str(budget["maxTurns"]),
        "--max-wall-ms",
        str(budget["maxWallMs"]),
    ]
    if "maxToolCalls" in budget:
        command += ["--max-tool-calls", str(budget["maxToolCalls"])]
    command += [f"--allow-{effect}" for effect in task["policy"].get("allow", [])]
    config = tmp / "config"
    config.mkdir()
    env = {**os.environ, "ALISIO_CONFIG_HOME": str(config), "ALISIO_DATA_HOME": str(tmp / "data")}
    done = subprocess.run(
        [*command, task["prompt"]], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def tool_calls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each tool call with its name, raw arguments and whether its result was ok."""
    results = {event["callId"]: event["ok"] for event in events if event["type"] == "tool_result"}
    return [
        {"name": event["name"], "arguments": event["arguments"], "ok": results.get(event["callId"], False)}
        for event in events
        if event["type"] == "tool_call"
    ]


def scripted_tasks() -> list[tuple[str, str]]:
    return [
        (name, path.stem)
        for name in BUNDLED
        if (SUITES / name / "scripts").is_dir()
        for path in sorted((SUITES / name / "scripts").glob("*.json"))
    ]


# --- Validation ----------------------------------------------------------------------------------------


def test_every_bundled_suite_validates(capsys: pytest.CaptureFixture[str]) -> None:
    """alisio eval validate accepts each bundled suite, with the version and task count the spec gives."""
    code = run_cli(["eval", "validate", *(str(SUITES / name) for name in BUNDLED)])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    for name, (version, count) in BUNDLED.items():
        assert f"ok {name} {version} ({count} tasks) {SUITES / name}" in out


def test_smoke_coding_has_the_spec_tasks() -> None:
    """smoke-coding holds the measured tasks, three easy and four harder of which three are hardened."""
    tasks = tasks_of("smoke-coding")
    assert {"fix-add", "rename-symbol", "edit-respects-hash", "off-by-one-among-passing"} <= tasks.keys()
    tags = [set(task["tags"]) for task in tasks.values()]
    assert sum("easy" in t for t in tags) == 3
    assert sum("harder" in t for t in tags) == 4
    assert sum("hardened" in t for t in tags) == 3
    for task in tasks.values():
        kinds = [verifier["kind"] for verifier in task["verifiers"]]
        assert kinds[:2] == ["command", "tree-diff-within"]
        assert task["policy"] == {"mode": "auto", "allow": ["write", "process"]}


def test_tool_sequences_cover_every_rule_and_file_verifier() -> None:
    """Across tool-sequences every rule type and every file verifier kind is used, each task has both."""
    rules: set[str] = set()
    kinds: set[str] = set()
    for task in tasks_of("tool-sequences").values():
        task_kinds = {verifier["kind"] for verifier in task["verifiers"]}
        assert "tool-sequence" in task_kinds
        assert task_kinds & {"file-equals", "file-contains", "file-absent"}
        kinds |= task_kinds
        rules |= {r["type"] for v in task["verifiers"] if v["kind"] == "tool-sequence" for r in v["rules"]}
    assert rules == {"before", "never", "max-calls", "no-repeat-failure"}
    assert {"file-equals", "file-contains", "file-absent"} <= kinds


# --- Checks discriminate -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "task_id"),
    [(n, t) for n, t in all_tasks() if (SUITES / n / "solutions" / t).is_dir()],
)
def test_check_fails_on_the_fixture_and_passes_with_the_reference_solution(
    name: str, task_id: str, tmp_path: Path
) -> None:
    """Each command verifier exits non-zero on the untouched fixture and passes on the reference solution."""
    task = tasks_of(name)[task_id]
    work = copy_fixture(name, task, tmp_path)
    before = snapshot(work)
    commands = [v for v in task["verifiers"] if v["kind"] == "command"]
    assert commands
    for verifier in commands:
        passed, output = run_command(verifier, work)
        assert not passed, f"{verifier['id']} passes on the unfixed fixture:\n{output}"
    assert snapshot(work) == before, "a check wrote into the workspace"
    shutil.copytree(SUITES / name / "solutions" / task_id, work, dirs_exist_ok=True)
    for verifier in task["verifiers"]:
        if verifier["kind"] == "command":
            passed, output = run_command(verifier, work)
            assert passed, f"{verifier['id']} fails on the reference solution:\n{output}"
        elif verifier["kind"] != "tool-sequence":
            assert judge(verifier, work, before, []), f"{verifier['id']} fails on the reference solution"


def test_every_task_with_a_check_has_a_reference_solution() -> None:
    """No command verifier goes untested: its task has a solutions/ entry or a script."""
    for name, task_id in all_tasks():
        task = tasks_of(name)[task_id]
        if any(v["kind"] == "command" for v in task["verifiers"]):
            has = (SUITES / name / "solutions" / task_id).is_dir()
            has = has or (SUITES / name / "scripts" / f"{task_id}.json").is_file()
            assert has, f"{name}/{task_id} has no reference solution"


# --- Scripts -------------------------------------------------------------------------------------------


def test_scripts_load_and_end_with_a_final_answer() -> None:
    """Every script is valid for the scripted provider, names a task, and ends with text and no tool call."""
    scripts = scripted_tasks()
    assert {name for name, _ in scripts} == {"smoke-coding", "tool-sequences"}
    assert sum(name == "smoke-coding" for name, _ in scripts) == 4
    assert sum(name == "tool-sequences" for name, _ in scripts) == 6
    for name, task_id in scripts:
        path = SUITES / name / "scripts" / f"{task_id}.json"
        provider = ScriptedProvider.from_file(path)
        assert provider.remaining >= 2
        assert task_id in tasks_of(name)
        last = json.loads(path.read_text(encoding="utf-8"))["turns"][-1]
        assert last.get("text") and not last.get("toolCalls")


@pytest.mark.parametrize(("name", "task_id"), scripted_tasks())
def test_a_scripted_solution_passes_every_verifier(name: str, task_id: str, tmp_path: Path) -> None:
    """alisio run --script on the fixture completes, and every verifier of the task then passes."""
    task = tasks_of(name)[task_id]
    work = copy_fixture(name, task, tmp_path)
    before = snapshot(work)
    events = scripted_run(name, task, work, tmp_path)
    assert events[-1]["type"] == "run_end"
    assert events[-1]["outcome"] == "completed"
    calls = tool_calls(events)
    failing = [v["id"] for v in task["verifiers"] if not judge(v, work, before, calls)]
    assert failing == []


@pytest.mark.parametrize("task_id", sorted(tasks_of("tool-sequences")))
def test_tool_sequence_file_verifiers_fail_on_the_untouched_fixture(task_id: str, tmp_path: Path) -> None:
    """A run that does nothing fails the task: some file verifier rejects the untouched fixture."""
    task = tasks_of("tool-sequences")[task_id]
    work = copy_fixture("tool-sequences", task, tmp_path)
    before = snapshot(work)
    files = [v for v in task["verifiers"] if v["kind"].startswith("file-")]
    assert not all(judge(v, work, before, []) for v in files)


def test_the_invalid_transition_is_refused_then_recovered(tmp_path: Path) -> None:
    """blind-edit-refused: the edit of an unread file is refused, dev keeps 1 replica, staging gets 3."""
    task = tasks_of("tool-sequences")["blind-edit-refused"]
    work = copy_fixture("tool-sequences", task, tmp_path)
    events = scripted_run("tool-sequences", task, work, tmp_path)
    calls = tool_calls(events)
    assert [(c["name"], c["ok"]) for c in calls] == [
        ("edit_file", False),
        ("read_file", True),
        ("edit_file", True),
    ]
    refusal = next(e for e in events if e["type"] == "tool_result")
    assert "has not been read" in refusal["outputExcerpt"]
    text = (work / "deploy" / "replicas.toml").read_text(encoding="utf-8")
    assert "[dev]\nreplicas = 1\n" in text
    assert "[staging]\nreplicas = 3\n" in text
    # The rule a naive judge would use to show it: read_file did not come before every edit_file.
    assert not rule_holds({"type": "before", "first": "read_file", "then": "edit_file"}, calls)


# --- Generators and the stress suite's rules -----------------------------------------------------------


def generate(suite: str, out: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, str(SUITES / suite / "generate.py"), *args, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("suite", ["long-context", "long-context-stress"])
def test_a_generator_reproduces_the_committed_suite_byte_for_byte(suite: str, tmp_path: Path) -> None:
    """generate.py --out DIR writes exactly the committed suite: same files, same bytes."""
    generate(suite, tmp_path / "copy")
    assert snapshot(tmp_path / "copy") == snapshot(SUITES / suite)


def test_more_stress_instances_keep_the_first_five(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--instances 7 adds chain-walk-rules-06 and -07, keeps -01 to -05 and every other task unchanged."""
    out = tmp_path / "stress"
    generate("long-context-stress", out, "--instances", "7")
    committed = suite_json("long-context-stress")["tasks"]
    generated = json.loads((out / "suite.json").read_text(encoding="utf-8"))["tasks"]
    assert generated[: len(committed)] == committed
    assert [task["id"] for task in generated[len(committed) :]] == [
        "chain-walk-rules-06",
        "chain-walk-rules-07",
    ]
    for number in range(1, 6):
        task = f"fixtures/chain-walk-rules-{number:02d}"
        assert snapshot(out / task) == snapshot(SUITES / "long-context-stress" / task)
    assert snapshot(out / "fixtures/chain-walk-rules-06") != snapshot(out / "fixtures/chain-walk-rules-07")
    assert run_cli(["eval", "validate", str(out)]) == 0
    assert "ok long-context-stress 1.1.0 (12 tasks)" in capsys.readouterr().out


def test_stress_instances_are_different_chains_of_sixteen() -> None:
    """Each chain-walk-rules instance walks its own 16 codes; compare.json lowers maxContextChars."""
    walks = {
        (SUITES / "long-context-stress/solutions" / f"chain-walk-rules-{n:02d}/walk-report.txt").read_text()
        for n in range(1, 6)
    }
    assert len(walks) == 5
    assert all(len(walk.splitlines()) == 18 for walk in walks)
    compare = json.loads((SUITES / "long-context-stress/compare.json").read_text(encoding="utf-8"))
    assert compare["suite"] == "long-context-stress"
    assert [v["id"] for v in compare["variants"]] == ["baseline", "early-compaction"]
    assert compare["variants"][1]["overrides"] == {"limits.maxContextChars": 60000}


@pytest.mark.parametrize(
    ("mutation", "failing"),
    [
        ("none", set()),
        ("lowercase codes", {"r1-line-shape"}),
        ("no header", {"r2-header"}),
        ("blank line after the footer", {"r3-footer"}),
        ("no footer", {"r3-footer"}),
        ("two codes swapped", {"chain"}),
        ("pipes instead of tildes", {"r1-line-shape"}),
    ],
)
def test_each_chain_walk_rule_fails_alone(mutation: str, failing: set[str], tmp_path: Path) -> None:
    """A report that drops one rule fails exactly that rule's verifier, so results show which was dropped."""
    task = tasks_of("long-context-stress")["chain-walk-rules-03"]
    work = copy_fixture("long-context-stress", task, tmp_path)
    lines = (
        (SUITES / "long-context-stress/solutions/chain-walk-rules-03/walk-report.txt")
        .read_text()
        .splitlines()
    )
    match mutation:
        case "lowercase codes":
            lines = [lines[0], *(line.lower() for line in lines[1:-1]), lines[-1]]
        case "no header":
            lines = lines[1:]
        case "blank line after the footer":
            lines = [*lines, ""]
        case "no footer":
            lines = lines[:-1]
        case "two codes swapped":
            first, second = lines[4][3:], lines[9][3:]
            lines[4], lines[9] = lines[4][:3] + second, lines[9][:3] + first
        case "pipes instead of tildes":
            lines = [lines[0], *(line.replace("~", "|") for line in lines[1:-1]), lines[-1]]
    (work / "walk-report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    commands = [v for v in task["verifiers"] if v["kind"] == "command"]
    assert {v["id"] for v in commands} == {"chain", "r1-line-shape", "r2-header", "r3-footer"}
    assert {v["id"] for v in commands if not run_command(v, work)[0]} == failing


def test_the_ambiguous_format_rule_rejects_the_misread_form(tmp_path: Path) -> None:
    """chain-walk-format-rule wants 01|amber-meadow-21: and rejects the misread 01|CODE: amber-meadow-21."""
    task = tasks_of("long-context-stress")["chain-walk-format-rule"]
    work = copy_fixture("long-context-stress", task, tmp_path)
    right = (SUITES / "long-context-stress/solutions/chain-walk-format-rule/walk.txt").read_text()
    misread = "".join(f"{line[:3]}CODE: {line[3:-1]}\n" for line in right.splitlines())
    (work / "walk.txt").write_text(misread, encoding="utf-8")
    assert not run_command(task["verifiers"][0], work)[0]
    (work / "walk.txt").write_text(right, encoding="utf-8")
    assert run_command(task["verifiers"][0], work)[0]


def test_stress_fixtures_fit_the_default_context_but_not_the_lowered_one() -> None:
    """Reading a whole stress fixture stays under 0.8 x 200000 chars (no compaction by default), while each
    chain-walk-rules chain exceeds 0.8 x 60000 (the early-compaction variant must compact)."""
    for task in tasks_of("long-context-stress").values():
        fixture = SUITES / "long-context-stress" / task["fixture"]
        chars = sum(len(p.read_text(encoding="utf-8")) for p in fixture.rglob("*") if p.is_file())
        assert chars < 0.8 * 200_000, task["id"]
        if task["id"].startswith("chain-walk-rules-"):
            chain_chars = sum(len(p.read_text(encoding="utf-8")) for p in (fixture / "chain").iterdir())
            assert chain_chars > 0.8 * 60_000, task["id"]


def test_bundled_suites_stay_small() -> None:
    """Every fixture stays well under 1 MB and all bundled suites together under 2.5 MB."""
    total = 0
    for name in BUNDLED:
        for task in tasks_of(name).values():
            size = sum(p.stat().st_size for p in (SUITES / name / task["fixture"]).rglob("*") if p.is_file())
            assert size < 500_000, f"{name}/{task['id']}: {size} bytes"
        total += sum(p.stat().st_size for p in (SUITES / name).rglob("*") if p.is_file())
    assert total < 2_500_000


def test_the_audit_fact_is_cut_from_the_truncated_output(tmp_path: Path) -> None:
    """truncated-audit-output prints far past the 20000-char bash limit and its MISMATCH line is in the cut
    middle, so the agent must narrow the command (grep) to see it."""
    from alisio.shell.harness.tools.bash import truncate_middle

    task = tasks_of("long-context")["truncated-audit-output"]
    work = copy_fixture("long-context", task, tmp_path)
    done = subprocess.run(
        [sys.executable, "tools/audit.py"], cwd=work, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 1
    assert len(done.stdout) > 5 * 20_000
    assert done.stdout.count("status=MISMATCH") == 1
    shown = truncate_middle(done.stdout, 20_000)
    assert "characters cut" in shown
    assert "MISMATCH" not in shown
    assert "1 mismatch(es)" in shown
