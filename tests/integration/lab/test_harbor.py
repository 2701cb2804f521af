"""Harbor tasks end to end through the CLI and real bubblewrap: import, self-check and run under --sandbox bwrap.

The tests write their own tasks in Harbor's documented shape (task.toml, instruction.md, an
environment/Dockerfile that is a plain base image, tests/test.sh writing /logs/verifier/reward.txt or
reward.json, solution/solve.sh). One suite is imported per module (the import self-checks it in the sandbox);
each test then runs the CLI in this process on it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from alisio.core.lab.runs.records import VerifierStatus
from tests.integration.helpers import alisio, command_env, read_runs, write_script

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap is not installed (apt-get install bubblewrap; .ci/run installs it)",
)

SECRET = "harbor-secret-7731"
"""In every test.sh and solve.sh: no tool result of the agent may show it."""
INSTRUCTION = 'Create a file called /app/hello.txt with "Hello, world!" as the content.\n'
CHECK = f'# {SECRET}\n[ "$(cat /app/hello.txt 2>/dev/null)" = "Hello, world!" ]'
TESTS = {
    "hello-world": f"{CHECK} && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
    "hello-json": (f'{CHECK} && r=1 || r=0\nprintf \'{{"reward": %s}}\' "$r" > /logs/verifier/reward.json\n'),
}
SOLVE = f"# {SECRET}\necho 'Hello, world!' > /app/hello.txt\n"


def harbor_task(
    root: Path,
    name: str,
    test: str,
    solve: str = SOLVE,
    dockerfile: str = "FROM ubuntu:24.04\nWORKDIR /app\n",
) -> Path:
    task = root / name
    for sub in ("environment", "tests", "solution"):
        (task / sub).mkdir(parents=True)
    (task / "task.toml").write_text(
        'version = "1.0"\n\n[agent]\ntimeout_sec = 60.0\n\n[verifier]\ntimeout_sec = 30.0\n'
    )
    (task / "instruction.md").write_text(INSTRUCTION)
    (task / "environment/Dockerfile").write_text(dockerfile)
    (task / "tests/test.sh").write_text(test)
    (task / "solution/solve.sh").write_text(solve)
    return task


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two tasks of ``TESTS``, imported (and self-checked in the sandbox by the import)."""
    root = tmp_path_factory.mktemp("harbor")
    for name, test in TESTS.items():
        harbor_task(root / "tasks", name, test)
    imported = alisio(root, "eval", "import", "harbor", "--yes", root / "tasks", "--out", root / "suite")
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert "untouched fails 2 of 2, the reference solution passes 2 of 2" in imported.stderr
    return root / "suite"


def run(home: Path, suite: Path, scripts: dict[str, dict[str, Any]], *extra: str) -> Any:
    (home / "scripts").mkdir(exist_ok=True)
    for task_id, script in scripts.items():
        write_script(home / "scripts" / f"{task_id}.json", script)
    args = ["--tasks", ",".join(scripts), "--script", home / "scripts", "--k", "1", "--out", home / "report"]
    return alisio(home, "eval", "run", "harbor-tasks", "--suite-dir", suite, "--yes", "--allow-write",
                  "--allow-process", *args, *extra)  # fmt: skip


def bash(*commands: str) -> dict[str, Any]:
    calls = [{"name": "bash", "arguments": {"command": command}} for command in commands]
    return {"turns": [{"toolCalls": calls}, {"text": "done"}]}


def tool_outputs(report: Path, task_id: str) -> list[str]:
    events = [json.loads(line) for line in (report / "runs" / task_id / "0.jsonl").read_text().splitlines()]
    return [event["outputExcerpt"] for event in events if event["type"] == "tool_result"]


def test_the_import_keeps_tests_and_solution_outside_the_copy(suite: Path) -> None:
    """The fixture is empty (as the image's /app) but for an empty .gitkeep, which keeps it in git and which
    the copy leaves out; the tests are in harbor/<id>/tests, bound for the verifier only, and the solution is
    solve.sh itself."""
    tasks = {task["id"]: task for task in json.loads((suite / "suite.json").read_text())["tasks"]}
    assert [(p.name, p.read_bytes()) for p in (suite / "fixtures/hello-world").iterdir()] == [
        (".gitkeep", b"")
    ]
    assert tasks["hello-world"]["sandbox"] == {
        "workdir": "/app",
        "verifierMounts": [
            {"target": "/tests", "source": "harbor/hello-world/tests"},
            {"target": "/logs/verifier"},
            {"target": "/opt/alisio/harbor_verify.py", "source": "harbor/_verify.py"},
        ],
    }
    assert tasks["hello-json"]["solution"] == "solutions/hello-json/solve.sh"
    assert (suite / "harbor/hello-world/tests/test.sh").read_text() == TESTS["hello-world"]
    parity = json.loads((suite / "parity.json").read_text())
    assert (parity["tasks"], parity["noopFails"], parity["oraclePasses"]) == (2, 2, 2)


def test_selfcheck_needs_the_sandbox_and_filters_tasks(suite: Path, tmp_path: Path) -> None:
    bare = alisio(tmp_path, "eval", "selfcheck", suite)
    assert bare.returncode == 1 and bare.stdout == ""
    assert bare.stderr.splitlines() == [
        "alisio eval selfcheck: tasks hello-json, hello-world: needs --sandbox bwrap: its commands use the fixed "
        "paths /app, /tests, /logs/verifier, /opt/alisio/harbor_verify.py, which only the sandbox provides "
        "(outside it they would be this machine's)",
        "alisio eval selfcheck: nothing was checked",
    ]
    both = alisio(tmp_path, "eval", "selfcheck", suite, "--sandbox", "bwrap", "--repeat", "2", "--yes")
    assert both.returncode == 0, both.stdout + both.stderr
    rows = [line.split() for line in both.stdout.splitlines()[1:3]]
    assert [row[:5] for row in rows] == [
        ["hello-json", "fails", "passes", "same", "(2x)"],
        ["hello-world", "fails", "passes", "same", "(2x)"],
    ]
    assert "2 tasks, clean" in both.stdout
    validated = alisio(tmp_path, "eval", "validate", suite, "--selfcheck", "--sandbox", "bwrap", "--yes")
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert validated.stdout.startswith("ok harbor-tasks") and "2 tasks, clean" in validated.stdout
    one = alisio(
        tmp_path,
        "eval",
        "selfcheck",
        suite,
        "--sandbox",
        "bwrap",
        "--tasks",
        "harbor-tasks/hello-json",
        "--json",
        "--yes",
    )
    checked = json.loads(one.stdout)
    assert one.returncode == 0 and [task["taskId"] for task in checked["tasks"]] == ["hello-json"]
    assert (checked["tasks"][0]["noop"], checked["tasks"][0]["oracle"]) == ("fails", "passes")
    unknown = alisio(
        tmp_path, "eval", "selfcheck", suite, "--sandbox", "bwrap", "--tasks", "hello-world,nope"
    )
    in_run = run(tmp_path, suite, {"hello-world": bash("true"), "nope": bash("true")}, "--sandbox", "bwrap")
    assert unknown.returncode == in_run.returncode == 1
    said = unknown.stderr.removeprefix("alisio eval selfcheck: ")
    assert said == in_run.stderr.removeprefix("alisio eval run: ")
    assert said == "unknown task nope in suite harbor-tasks (known: hello-json, hello-world)\n"


def test_runs_pass_when_fixed_and_fail_when_not(suite: Path, tmp_path: Path) -> None:
    """Under --sandbox bwrap: the agent works in /app (bash and the file tools), the verifier reads the
    reward test.sh wrote; without the flag the run is refused in one line naming it."""
    write = {"name": "write_file", "arguments": {"path": "/app/hello.txt", "content": "Hello, world!\n"}}
    fixed = {
        "hello-world": {"turns": [{"toolCalls": [write]}, {"text": "done"}]},
        "hello-json": bash("pwd; echo 'Hello, world!' > hello.txt"),
    }
    refused = run(tmp_path, suite, fixed)
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        "alisio eval run: tasks hello-world, hello-json: needs --sandbox bwrap: its commands use the fixed "
        "paths /app, /tests, /logs/verifier, /opt/alisio/harbor_verify.py, which only the sandbox provides "
        "(outside it they would be this machine's)",
        "alisio eval run: nothing was run: fix or grant the tasks above",
    ]
    passed = run(tmp_path, suite, fixed, "--sandbox", "bwrap")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    records = {record.task_id: record for record in read_runs(tmp_path / "report")}
    assert {task: record.verifiers[0].status for task, record in records.items()} == {
        "hello-world": VerifierStatus.PASS,
        "hello-json": VerifierStatus.PASS,
    }
    assert tool_outputs(tmp_path / "report", "hello-json")[0].splitlines()[1] == "/app"
    shutil.rmtree(tmp_path / "report")
    nothing = run(
        tmp_path, suite, {"hello-world": bash("ls -A /app"), "hello-json": bash("true")}, "--sandbox", "bwrap"
    )
    assert nothing.returncode == 0
    records = {record.task_id: record for record in read_runs(tmp_path / "report")}
    details = {task: record.verifiers[0].detail for task, record in records.items()}
    assert all(record.verifiers[0].status is VerifierStatus.FAIL for record in records.values())
    assert "test.sh exited 0; reward 0 (reward.txt)" in details["hello-world"]
    assert "test.sh exited 0; reward 0 (reward.json)" in details["hello-json"]
    assert tool_outputs(tmp_path / "report", "hello-world") == ["exit code: 0\n(no output)"]  # /app is empty


def git(cwd: Path, *args: str | Path) -> str:
    identity = ["-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"]
    done = subprocess.run(["git", *identity, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=60, check=True, env=command_env(None, {"GIT_CONFIG_GLOBAL": os.devnull}))  # fmt: skip
    return done.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_imported_suite_survives_git_add_and_a_clone(suite: Path, tmp_path: Path) -> None:
    """Committed and cloned, the suite validates, self-checks clean and gives the agent an empty /app; the
    same suite committed without the .gitkeep loses its fixture and no longer validates."""
    repo = tmp_path / "repo"
    shutil.copytree(suite, repo / "harbor-suite")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the imported suite")
    assert "harbor-suite/fixtures/hello-world/.gitkeep" in git(repo, "ls-files").splitlines()
    git(tmp_path, "clone", "-q", repo, "clone")
    cloned = tmp_path / "clone" / "harbor-suite"
    validated = alisio(tmp_path, "eval", "validate", cloned)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    checked = alisio(
        tmp_path, "eval", "selfcheck", "--suite-dir", cloned, "--yes", "--sandbox", "bwrap", "--repeat", "1"
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[-1].endswith(": 2 tasks, clean, 0 with warnings")
    looked = run(tmp_path, cloned, {"hello-world": bash("ls -A /app")}, "--sandbox", "bwrap")
    assert looked.returncode == 0, looked.stdout + looked.stderr
    assert tool_outputs(tmp_path / "report", "hello-world") == ["exit code: 0\n(no output)"]
    for placeholder in (repo / "harbor-suite" / "fixtures").glob("*/.gitkeep"):
        git(repo, "rm", "-q", placeholder.relative_to(repo))
    git(repo, "commit", "-qm", "without the placeholders")
    git(tmp_path, "clone", "-q", repo, "bare-clone")
    broken = alisio(tmp_path, "eval", "validate", tmp_path / "bare-clone" / "harbor-suite")
    assert broken.returncode == 1 and "fixtures/hello-world" in broken.stderr + broken.stdout
    assert "does not exist" in broken.stderr + broken.stdout


def test_the_working_directory_is_the_one_the_tests_use(tmp_path: Path) -> None:
    """A task whose WORKDIR, or whose tests alone, say /workspace gets its copy there and self-checks both
    ways; tests that use another directory than the WORKDIR, or two, or a WORKDIR the sandbox cannot put the
    copy at, are refused in one line each."""
    tasks = tmp_path / "tasks"
    check = '[ "$(cat /workspace/out.txt 2>/dev/null)" = "done" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n'
    solve = "echo done > /workspace/out.txt\n"
    harbor_task(tasks, "workdir", check, solve, dockerfile="FROM python:3.12-slim\nWORKDIR /workspace\n")
    harbor_task(tasks, "detected", f"cd /workspace\n{check}", solve, dockerfile="FROM ubuntu:24.04\n")
    harbor_task(tasks, "mismatch", check, solve)  # WORKDIR /app, tests in /workspace
    harbor_task(tasks, "two", check + TESTS["hello-world"], solve, dockerfile="FROM ubuntu:24.04\n")
    in_usr = check.replace("/workspace", "/usr/src/app")
    harbor_task(tasks, "usr", in_usr, solve, dockerfile="FROM ubuntu:24.04\nWORKDIR /usr/src/app\n")
    imported = alisio(tmp_path, "eval", "import", "harbor", "--yes", tasks, "--out", tmp_path / "suite")
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert imported.stderr.splitlines()[:3] == [
        "alisio eval import: refused mismatch: tests/test.sh: uses /workspace, but environment/Dockerfile's "
        "WORKDIR is /app: the copy can be at one path only, so these tests cannot be honoured",
        "alisio eval import: refused two: tests use /app and /workspace (tests/test.sh), with no WORKDIR to "
        "choose: the copy can be at one path only, so these tests cannot be honoured",
        "alisio eval import: refused usr: environment/Dockerfile's WORKDIR /usr/src/app cannot be honoured: the "
        "sandbox cannot put the copy there (it lies in /usr, which the sandbox builds itself)",
    ]
    assert "untouched fails 2 of 2, the reference solution passes 2 of 2" in imported.stderr
    tasks_of = {task["id"]: task for task in json.loads((tmp_path / "suite/suite.json").read_text())["tasks"]}
    assert {task_id: task["sandbox"]["workdir"] for task_id, task in tasks_of.items()} == {
        "detected": "/workspace",
        "workdir": "/workspace",
    }
    refused = run(tmp_path, tmp_path / "suite", {"workdir": bash("pwd")})
    assert refused.returncode == 1
    assert "needs --sandbox bwrap: its commands use the fixed paths /workspace, /tests" in refused.stderr
    done = {"workdir": bash("pwd; echo done > out.txt"), "detected": bash("pwd")}
    ran = run(tmp_path, tmp_path / "suite", done, "--sandbox", "bwrap")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert tool_outputs(tmp_path / "report", "workdir") == ["exit code: 0\n/workspace\n"]
    assert tool_outputs(tmp_path / "report", "detected") == ["exit code: 0\n/workspace\n"]
    passed = {record.task_id: record.verifiers[0].status for record in read_runs(tmp_path / "report")}
    assert passed == {"workdir": VerifierStatus.PASS, "detected": VerifierStatus.FAIL}


def test_the_agent_cannot_read_the_tests_or_the_solution(suite: Path, tmp_path: Path) -> None:
    """Neither at the verifier's paths nor at the suite's real ones, by bash or by the file tools."""
    real = suite.resolve()
    attempts = bash(
        "cat /tests/test.sh",
        f"cat {real}/harbor/hello-world/tests/test.sh",
        f"cat {real}/solutions/hello-world/solve.sh",
        "ls /solution /logs/verifier /opt/alisio",
        "ls -A /",
    )
    read = [
        {"name": "read_file", "arguments": {"path": f"{real}/harbor/hello-world/tests/test.sh"}},
        {"name": "read_file", "arguments": {"path": "/tests/test.sh"}},
        {"name": "list_dir", "arguments": {"path": "../../"}},
    ]
    attempts["turns"].insert(1, {"toolCalls": read})
    result = run(tmp_path, suite, {"hello-world": attempts}, "--sandbox", "bwrap")
    assert result.returncode == 0, result.stdout + result.stderr
    outputs = tool_outputs(tmp_path / "report", "hello-world")
    assert len(outputs) == 8 and not any(SECRET in output for output in outputs)
    assert "cat: /tests/test.sh: No such file or directory" in outputs[0]
    assert f"cat: {real}/harbor/hello-world/tests/test.sh: No such file or directory" in outputs[1]
    assert f"cat: {real}/solutions/hello-world/solve.sh: No such file or directory" in outputs[2]
    assert "ls: cannot access '/solution': No such file or directory" in outputs[3]
    assert "ls: cannot access '/logs/verifier': No such file or directory" in outputs[3]
    top = set(outputs[4].splitlines()[1:])
    assert "app" in top and not top & {"tests", "solution", "logs", "opt", "work", "root"}, top
    assert all("outside the workspace" in output for output in outputs[5:7]), outputs[5:8]
    (record,) = read_runs(tmp_path / "report")
    assert record.verifiers[0].status is VerifierStatus.FAIL  # it did not write hello.txt


def test_a_test_sh_that_writes_no_reward_fails_with_the_reason(tmp_path: Path) -> None:
    harbor_task(tmp_path / "tasks", "no-reward", "echo broken >&2\nexit 3\n")
    imported = alisio(
        tmp_path, "eval", "import", "harbor", "--yes", tmp_path / "tasks", "--out", tmp_path / "suite"
    )
    assert imported.returncode == 1  # written, and flagged: the solution does not pass
    assert "untouched fails 1 of 1, the reference solution passes 0 of 1" in imported.stderr
    assert "flagged: no-reward:" in imported.stdout
    result = run(tmp_path, tmp_path / "suite", {"no-reward": bash("true")}, "--sandbox", "bwrap")
    assert result.returncode == 0, result.stderr
    (record,) = read_runs(tmp_path / "report")
    assert record.verifiers[0].status is VerifierStatus.FAIL
    detail = record.verifiers[0].detail
    assert detail.startswith("exit 1 (expected 0)")
    assert (
        "test.sh exited 3 and wrote no reward (neither /logs/verifier/reward.txt nor reward.json)" in detail
    )
    assert "broken" in detail


def test_a_suite_the_sandbox_shows_the_agent_is_refused(suite: Path) -> None:
    """Under /usr (bound read-only in every sandbox) the tests would be readable: refused before any run,
    and so is an external agent, whose sandbox has the copy at /workspace, not /app."""
    import dataclasses

    from alisio.core.harness.config import MeasuredConfig
    from alisio.core.harness.events import Effect
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.preflight import Agents, preflight
    from alisio.shell.lab.suites import load_suite

    loaded = load_suite(suite).unwrap()
    granted = frozenset({Effect.READ, Effect.WRITE, Effect.PROCESS})

    def refusal(where: Any, agents: Agents | None = None) -> list[str]:
        with pytest.raises(CommandError) as raised:
            preflight(where, ["hello-world"], granted, read_only=False, allow_suite_full=False,
                      measured=MeasuredConfig(), agents=agents, sandboxed=True)  # fmt: skip
        return list(raised.value.lines)

    assert preflight(loaded, ["hello-world"], granted, read_only=False, allow_suite_full=False,
                     measured=MeasuredConfig(), sandboxed=True)[0].id == "hello-world"  # fmt: skip
    hidden = dataclasses.replace(loaded, directory=Path("/usr/share/harbor-suite"))
    assert refusal(hidden)[0] == (
        "task hello-world: the suite directory /usr/share/harbor-suite is under /usr, which the sandbox shows "
        "the agent: its tests would be readable; move the suite elsewhere"
    )
    external = Agents(override="codex", external=frozenset({"codex"}))
    assert refusal(loaded, external)[0] == (
        "task hello-world: external agent 'codex': its sandbox has the copy at /workspace, not the task's "
        "workdir /app; run it with the built-in agent"
    )


def test_a_task_imported_before_the_sandbox_section_is_refused(suite: Path, tmp_path: Path) -> None:
    """Tagged needs-sandbox-bwrap with no sandbox section: its tests were in the copy; import it again."""
    old = tmp_path / "old"
    shutil.copytree(suite, old)
    data = json.loads((old / "suite.json").read_text())
    for task in data["tasks"]:
        del task["sandbox"]
    (old / "suite.json").write_text(json.dumps(data))
    for command in (["eval", "selfcheck", old, "--sandbox", "bwrap"], ["eval", "selfcheck", old]):
        result = alisio(tmp_path, *command)
        assert result.returncode == 1 and result.stdout == ""
        assert result.stderr.splitlines()[0] == (
            "alisio eval selfcheck: tasks hello-json, hello-world: tagged needs-sandbox-bwrap but has no sandbox "
            "section: it was imported by an earlier alisio (its tests are inside the copy, readable by the "
            "agent); import it again (alisio eval import harbor)"
        )
    ran = run(tmp_path, old, {"hello-world": bash("true")}, "--sandbox", "bwrap")
    assert ran.returncode == 1 and "task hello-world: tagged needs-sandbox-bwrap but" in ran.stderr


def test_the_content_hash_follows_the_tests_the_verifier_mounts(suite: Path, tmp_path: Path) -> None:
    """The tests a verifier runs from /tests are part of what a run depends on: changing test.sh changes
    the suite's content hash (two reports of the same hash ran the same tests); the solution does not."""
    from alisio.shell.lab.suites import load_suite

    copy = tmp_path / "suite"
    shutil.copytree(suite, copy, symlinks=True)
    first = load_suite(copy).unwrap().content_hash
    (copy / "solutions/hello-json/solve.sh").write_text("#!/bin/sh\necho other\n")
    assert load_suite(copy).unwrap().content_hash == first
    test_sh = copy / "harbor/hello-world/tests/test.sh"
    test_sh.write_text(test_sh.read_text() + "# stricter\n")
    assert load_suite(copy).unwrap().content_hash != first
