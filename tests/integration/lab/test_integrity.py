"""The files a task's verifiers read are protected: an agent that changes them fails with
``verifier_tampered``, and the verifiers judge the fixture's originals (through the CLI, scripted runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.integration.helpers import FIX, alisio, make_suite, read_report, read_runs, task, write_script

FAKE_CHECK = "print('ok')\n"


def _bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


def _script(*commands: str) -> dict[str, Any]:
    turns: list[dict[str, Any]] = [{"toolCalls": [_bash(command)]} for command in commands]
    turns.append({"text": "All checks pass now."})
    return {"turns": turns}


TAMPER = {
    "turns": [
        {"toolCalls": [{"name": "write_file", "arguments": {"path": "check.py", "content": FAKE_CHECK}}]},
        {"text": "All checks pass now."},
    ]
}
PROCESS = {"mode": "auto", "allow": ["write", "process"]}


def _run(home: Path, script: dict[str, Any], *tasks: dict[str, Any], name: str = "out") -> Path:
    suite = make_suite(home, *tasks)
    out = home / name
    result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1", "-j", "1",
                    "--allow-write", "--allow-process", "--script", str(write_script(home / f"{name}.json", script)),
                    "--out", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out


def test_an_agent_that_rewrites_check_py_fails_with_verifier_tampered(home: Path) -> None:
    """The script overwrites check.py to print ok: the run fails (reason verifier_tampered, an incident
    naming check.py), and check ran on the original check.py, so it says add is still wrong."""
    out = _run(home, TAMPER)
    (record,) = read_runs(out)
    assert (record.status, record.reason) == ("fail", "verifier_tampered")
    (incident,) = [i for i in record.incidents if i.kind == "verifier_tampered"]
    assert incident.message.startswith("the agent changed check.py: a file the verifiers read")
    check = next(v for v in record.verifiers if v.id == "check")
    assert check.status == "fail" and "add is wrong" in check.detail  # the original judged the code
    report = read_report(out)
    assert (report.tasks[0].passes, report.tasks[0].fails) == (0, 1)
    assert {c.name: c.count for c in report.summary.measured.incidents}["verifier_tampered"] == 1
    md = (out / "report.md").read_text()
    assert "fail verifier_tampered" in md


def test_a_fix_with_a_tampered_check_still_fails_but_its_verifiers_pass(home: Path) -> None:
    """The agent fixes add and also rewrites check.py: the verdict is fail (verifier_tampered), and the
    verifiers, on the originals, say the code passes: what the agent's code does is still reported."""
    fix_then_tamper = {"turns": [*FIX["turns"][:2], *TAMPER["turns"]]}
    out = _run(home, fix_then_tamper)
    (record,) = read_runs(out)
    assert (record.status, record.reason) == ("fail", "verifier_tampered")
    assert [v.status for v in record.verifiers] == ["pass", "pass"]


def test_a_file_added_under_a_protected_directory_is_tampering_and_is_removed(home: Path) -> None:
    """``"protected": ["tests/"]``: a conftest.py the agent drops into tests/ is tampering, and it is gone
    before the verifier runs (the verifier fails when it is there)."""
    check_conftest = {"kind": "file-absent", "id": "no-conftest", "path": "tests/conftest.py"}
    spec = task("fix-add", protected=["tests/"], verifiers=[check_conftest], policy=PROCESS)
    suite = make_suite(home, spec)
    (suite / "fixtures" / "calc" / "tests").mkdir()
    (suite / "fixtures" / "calc" / "tests" / "test_calc.py").write_text("def test(): pass\n")
    out = home / "out"
    script = write_script(home / "s.json", _script("echo 'collect_ignore = []' > tests/conftest.py"))
    result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1",
                    "--allow-write", "--allow-process", "--script", str(script), "--out", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    (record,) = read_runs(out)
    assert (record.status, record.reason) == ("fail", "verifier_tampered")
    assert "added tests/conftest.py" in record.incidents[-1].message
    assert record.verifiers[0].status == "pass"  # removed before the verifier ran


def test_a_protected_directory_replaced_by_a_link_is_put_back_without_writing_through_the_link(
    home: Path, tmp_path: Path
) -> None:
    """The agent replaces tests/ with a link to a directory outside the workspace: the link is removed and
    tests/ is put back inside the workspace; nothing is written where the link pointed."""
    outside = tmp_path / "outside"
    outside.mkdir()
    spec = task("fix-add", protected=["tests"], policy=PROCESS)
    suite = make_suite(home, spec)
    (suite / "fixtures" / "calc" / "tests").mkdir()
    (suite / "fixtures" / "calc" / "tests" / "test_calc.py").write_text("def test(): pass\n")
    script = write_script(home / "s.json", _script(f"rm -rf tests && ln -s {outside} tests"))
    out = home / "out"
    result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1",
                    "--allow-write", "--allow-process", "--script", str(script), "--out", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    (record,) = read_runs(out)
    assert record.reason == "verifier_tampered"
    assert list(outside.iterdir()) == []


def test_protected_is_validated_and_an_empty_list_protects_nothing(home: Path) -> None:
    """A protected path that does not exist in the fixture, or escapes it, is one violation each; with
    ``"protected": []`` the agent may change check.py (a task whose agent writes its own checks)."""
    bad = make_suite(home / "bad", task("fix-add", protected=["nope.py", "../x", "check.py", "check.py"]))
    result = alisio(home, "eval", "validate", str(bad))
    assert result.returncode == 1
    lines = [line for line in (result.stdout + result.stderr).splitlines() if "protected" in line]
    assert lines == [
        f'{bad}/suite.json: task fix-add: protected[0]: "nope.py" does not exist in the fixture',
        f"{bad}/suite.json: task fix-add: protected[1]: path escapes the task directory (a .. segment)",
        f'{bad}/suite.json: task fix-add: protected[3]: duplicate path "check.py"',
    ]
    only_check = [v for v in task("fix-add")["verifiers"] if v["id"] == "check"]
    out = _run(home, TAMPER, task("fix-add", protected=[], verifiers=only_check))
    (record,) = read_runs(out)
    assert record.status == "pass" and record.reason is None  # its check.py says ok, and it may say so


def test_a_conftest_py_dropped_where_pytest_starts_is_tampering(home: Path) -> None:
    """A verifier that runs pytest: a conftest.py the agent writes where pytest starts (the task directory,
    which is no protected directory) makes every test pass; it is tampering, removed before the verifier
    runs, so the test that still fails says so. (The derived default, no ``protected`` in the task.)"""
    import sys

    pytest_check = {
        "kind": "command",
        "id": "tests",
        "command": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        "timeoutMs": 60000,
    }
    spec = task("fix-add", verifiers=[pytest_check], policy=PROCESS)
    suite = make_suite(home, spec)
    (suite / "fixtures" / "calc" / "tests").mkdir()
    (suite / "fixtures" / "calc" / "tests" / "test_calc.py").write_text(
        "import sys\nsys.path.insert(0, 'src')\nfrom calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    always_pass = (
        "import pytest\\n"
        "@pytest.hookimpl(hookwrapper=True)\\n"
        "def pytest_runtest_makereport(item, call):\\n"
        "    outcome = yield\\n"
        "    outcome.get_result().outcome = 'passed'\\n"
    )
    out = home / "out"
    script = write_script(home / "s.json", _script(f"printf '{always_pass}' > conftest.py"))
    result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1",
                    "--allow-write", "--allow-process", "--script", str(script), "--out", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    (record,) = read_runs(out)
    assert (record.status, record.reason) == ("fail", "verifier_tampered")
    assert "added conftest.py" in record.incidents[-1].message
    assert record.verifiers[0].status == "fail"  # the conftest.py was removed: add is still wrong
