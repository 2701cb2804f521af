"""alisio.shell.lab.workspace and alisio.shell.lab.verifiers on real temporary fixtures, real git and real `python3 check.py` runs."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

import msgspec
import pytest

from alisio.core.harness.events import Event, RunEnded, RunStarted, ToolCalled, ToolResulted
from alisio.core.lab.runs.records import VerifierResult, VerifierStatus
from alisio.core.lab.suites.suite import (
    BeforeRule,
    Budget,
    CommandVerifier,
    FileAbsentVerifier,
    FileContainsVerifier,
    FileEqualsVerifier,
    NoRepeatFailureRule,
    Task,
    TaskPolicy,
    ToolSequenceVerifier,
    TreeDiffWithinVerifier,
    Verifier,
)
from alisio.shell.lab.verifiers import run_verifiers
from alisio.shell.lab.workspace import Workspace, WorkspaceError, prepare_workspace, snapshot_tree

PASS, FAIL, ERROR = VerifierStatus.PASS, VerifierStatus.FAIL, VerifierStatus.ERROR

CHECK_PY = """\
import sys
sys.path.insert(0, "src")
from calc import add
if add(2, 3) == 5:
    print("all 1 checks passed")
    sys.exit(0)
print(f"add(2, 3) = {add(2, 3)}, expected 5")
sys.exit(1)
"""


@pytest.fixture
def fixture_dir(tmp_path: Path) -> Path:
    """A tiny Python project with a wrong add and its check."""
    root = tmp_path / "fixtures" / "fix-add"
    (root / "src").mkdir(parents=True)
    (root / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "check.py").write_text(CHECK_PY)
    (root / "notes.txt").write_text("keep me\n")
    return root


def _task(*verifiers: Verifier, fixture_git: bool = False) -> Task:
    return Task(
        id="fix-add",
        prompt="Fix add.",
        fixture="fixtures/fix-add",
        budget=Budget(max_turns=5, max_wall_ms=60_000),
        policy=TaskPolicy(mode="auto", allow=("write", "process")),
        verifiers=verifiers,
        fixture_git=fixture_git,
    )


def _run(
    workspace: Workspace, *verifiers: Verifier, events: tuple[Event, ...] = ()
) -> tuple[VerifierResult, ...]:
    return run_verifiers(_task(*verifiers), workspace, events, grace_s=0.2)


def _fix(workspace: Workspace) -> None:
    (workspace.path / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")


def _check(**kwargs: object) -> CommandVerifier:
    return CommandVerifier(id="check", command=("python3", "check.py"), timeout_ms=30_000, **kwargs)  # type: ignore[arg-type]


# --- workspaces ------------------------------------------------------------------------------------------


def test_a_workspace_is_a_fresh_copy_removed_on_exit(fixture_dir: Path) -> None:
    """The copy holds the fixture's files and modes; changing it never touches the fixture; exit removes it."""
    (fixture_dir / "check.py").chmod(0o755)
    with prepare_workspace(fixture_dir, fixture_git=False, keep=False, prefix="alisio-test-") as workspace:
        assert workspace.path.name.startswith("alisio-test-")
        assert workspace.path != fixture_dir
        assert (workspace.path / "src" / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
        assert os.stat(workspace.path / "check.py").st_mode & 0o777 == 0o755
        assert [entry.path for entry in workspace.before.entries] == ["check.py", "notes.txt", "src/calc.py"]
        assert not workspace.kept
        _fix(workspace)
        path = workspace.path
    assert not path.exists()
    assert (fixture_dir / "src" / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"


def test_an_empty_gitkeep_keeps_its_directory_but_is_not_copied(fixture_dir: Path) -> None:
    """An empty .gitkeep (git's placeholder for an empty directory) is left out of the copy, its directory kept;
    a .gitkeep with content, or a link named so, is an ordinary file and is copied."""
    (fixture_dir / "empty").mkdir()
    (fixture_dir / "empty" / ".gitkeep").write_bytes(b"")
    (fixture_dir / ".gitkeep").write_bytes(b"")
    (fixture_dir / "kept").mkdir()
    (fixture_dir / "kept" / ".gitkeep").write_text("not a placeholder\n")
    (fixture_dir / "linked").mkdir()
    (fixture_dir / "linked" / ".gitkeep").symlink_to("../notes.txt")
    with prepare_workspace(fixture_dir, fixture_git=False, keep=False, prefix="alisio-test-") as workspace:
        assert (workspace.path / "empty").is_dir() and list((workspace.path / "empty").iterdir()) == []
        assert not (workspace.path / ".gitkeep").exists()
        assert (workspace.path / "kept" / ".gitkeep").read_text() == "not a placeholder\n"
        assert (workspace.path / "linked" / ".gitkeep").is_symlink()
        assert [entry.path for entry in workspace.before.entries] == [
            "check.py", "kept/.gitkeep", "linked/.gitkeep", "notes.txt", "src/calc.py"
        ]  # fmt: skip
    assert (fixture_dir / "empty" / ".gitkeep").exists() and (fixture_dir / ".gitkeep").exists()


def test_keep_leaves_the_directory_in_place(fixture_dir: Path) -> None:
    """With keep=True the workspace survives the with-block and says so."""
    with prepare_workspace(fixture_dir, fixture_git=False, keep=True, prefix="alisio-test-") as workspace:
        _fix(workspace)
    try:
        assert workspace.kept
        assert (workspace.path / "src" / "calc.py").read_text().endswith("a + b\n")
    finally:
        subprocess.run(["rm", "-rf", str(workspace.path)], check=True)


def test_a_workspace_is_removed_even_when_the_run_made_a_directory_read_only(fixture_dir: Path) -> None:
    """Cleanup restores write permission on directories the run locked, then removes the copy."""
    with prepare_workspace(fixture_dir, fixture_git=False, keep=False, prefix="alisio-test-") as workspace:
        (workspace.path / "src").chmod(0o500)
        path = workspace.path
    assert not path.exists()


def test_fixture_git_makes_a_clean_repository_with_one_deterministic_commit(fixture_dir: Path) -> None:
    """fixtureGit: one commit "fixture", a clean status, the same commit id twice, .git not in the snapshot."""

    def git(root: Path, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout

    heads = []
    for _ in range(2):
        with prepare_workspace(fixture_dir, fixture_git=True, keep=False, prefix="alisio-test-") as workspace:
            assert git(workspace.path, "log", "--format=%s|%an|%ad", "--date=iso-strict").splitlines() == [
                "fixture|alisio|2000-01-01T00:00:00+00:00"
            ]
            assert git(workspace.path, "status", "--porcelain") == ""
            assert all(not entry.path.startswith(".git") for entry in workspace.before.entries)
            heads.append(git(workspace.path, "rev-parse", "HEAD").strip())
    assert heads[0] == heads[1]


def test_fixture_git_without_git_is_a_clear_workspace_error(
    fixture_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No git on PATH: WorkspaceError naming the fixture and git, and no directory left behind."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    before = set(Path(os.environ.get("TMPDIR", "/tmp")).glob("alisio-nogit-*"))
    with (
        pytest.raises(WorkspaceError, match=r"fixtureGit, but git was not found on PATH") as caught,
        prepare_workspace(fixture_dir, fixture_git=True, keep=False, prefix="alisio-nogit-"),
    ):
        pass
    assert str(fixture_dir) in str(caught.value)
    assert caught.value.reason == "fixture_git"
    assert set(Path(os.environ.get("TMPDIR", "/tmp")).glob("alisio-nogit-*")) == before


def test_a_missing_or_unreadable_fixture_is_a_workspace_error(fixture_dir: Path, tmp_path: Path) -> None:
    """A fixture that is not there, or has a file that cannot be read, raises WorkspaceError (fixture_copy)."""
    missing = tmp_path / "nope"
    with (
        pytest.raises(WorkspaceError, match=f"cannot copy fixture {missing}: it is not a directory"),
        prepare_workspace(missing, fixture_git=False, keep=False, prefix="alisio-test-"),
    ):
        pass
    os.mkfifo(fixture_dir / "pipe")  # shutil refuses to copy a named pipe (it would block)
    with (
        pytest.raises(WorkspaceError, match=r"pipe.*named pipe") as caught,
        prepare_workspace(fixture_dir, fixture_git=False, keep=False, prefix="alisio-test-"),
    ):
        pass
    assert caught.value.reason == "fixture_copy"
    assert str(caught.value).startswith(f"cannot copy fixture {fixture_dir}: ")


def test_a_symlink_pointing_outside_is_copied_as_a_link_not_followed(
    fixture_dir: Path, tmp_path: Path
) -> None:
    """A fixture link to an outside file stays a link with the same target; the outside content is not copied."""
    outside = tmp_path / "outside.txt"
    outside.write_text("outside secret\n")
    (fixture_dir / "link.txt").symlink_to(outside)
    (fixture_dir / "rel").symlink_to("../../outside.txt")
    with prepare_workspace(fixture_dir, fixture_git=False, keep=False, prefix="alisio-test-") as workspace:
        copied = workspace.path / "link.txt"
        assert copied.is_symlink()
        assert os.readlink(copied) == str(outside)
        assert os.readlink(workspace.path / "rel") == "../../outside.txt"
        links = {e.path: e.digest for e in workspace.before.entries if e.kind == "symlink"}
        assert links == {"link.txt": str(outside), "rel": "../../outside.txt"}


def test_snapshot_skips_ignored_directories_and_never_opens_a_fifo(tmp_path: Path) -> None:
    """.git, node_modules and __pycache__ are skipped; a fifo is a 'special' entry (reading it would block)."""
    for ignored in (".git", "node_modules", "src/__pycache__"):
        (tmp_path / ignored).mkdir(parents=True)
        (tmp_path / ignored / "x").write_text("x")
    (tmp_path / "a.txt").write_bytes(b"hello")
    os.mkfifo(tmp_path / "pipe")
    snapshot = snapshot_tree(tmp_path)
    assert [(e.path, e.kind, e.digest) for e in snapshot.entries] == [
        ("a.txt", "file", hashlib.sha256(b"hello").hexdigest()),
        ("pipe", "special", ""),
    ]


def test_snapshot_writes_names_that_are_not_utf8_escaped(tmp_path: Path) -> None:
    """A run may create a file (and a link target) named with bytes that are not UTF-8: the snapshot holds
    them as \\xNN text, so the run record can be written (it raised UnicodeEncodeError in runs.jsonl before)."""
    try:
        (tmp_path / os.fsdecode(b"bad\xff.txt")).write_bytes(b"x")
        os.symlink(os.fsdecode(b"to\xfe"), tmp_path / "link")
    except OSError as error:
        pytest.skip(f"this file system refuses names that are not UTF-8: {error}")
    snapshot = snapshot_tree(tmp_path)
    assert [(e.path, e.kind, e.digest) for e in snapshot.entries] == [
        ("bad\\xff.txt", "file", hashlib.sha256(b"x").hexdigest()),
        ("link", "symlink", "to\\xfe"),
    ]
    msgspec.json.encode(snapshot)  # every string is text a record can hold


# --- command verifiers -----------------------------------------------------------------------------------


def test_a_command_verifier_fails_then_passes_once_the_code_is_fixed(fixture_dir: Path) -> None:
    """python3 check.py: exit 1 is a fail with the exit code and stdout tail; after the fix, a pass."""
    with prepare_workspace(fixture_dir, fixture_git=False, keep=False, prefix="alisio-test-") as workspace:
        (before,) = _run(workspace, _check())
        assert before.status is FAIL
        assert before.detail == "exit 1 (expected 0); stdout: add(2, 3) = -1, expected 5"
        _fix(workspace)
        (after,) = _run(workspace, _check(expect_stdout_includes="checks passed"))
        assert (after.status, after.detail) == (PASS, "exit 0, stdout includes 'checks passed'")


def test_expect_exit_and_expect_stdout_includes_are_both_required(fixture_dir: Path) -> None:
    """expectExit 1 passes on the unfixed code; a missing stdout text fails even with the right exit code."""
    with prepare_workspace(fixture_dir, fixture_git=False, keep=False, prefix="alisio-test-") as workspace:
        results = _run(
            workspace,
            _check(expect_exit=1),
            CommandVerifier(
                id="says",
                command=("python3", "check.py"),
                timeout_ms=30_000,
                expect_exit=1,
                expect_stdout_includes="PASSED",
            ),
        )
        assert [r.status for r in results] == [PASS, FAIL]
        assert results[1].detail.startswith("exit 1, but stdout does not include 'PASSED'")


def test_a_hanging_command_is_killed_at_its_timeout_with_its_grandchild(fixture_dir: Path) -> None:
    """A check that hangs (and started a grandchild) is a fail at its timeout, and the grandchild is gone."""
    (fixture_dir / "hang.py").write_text(
        "import subprocess, time\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        "open('grandchild.pid', 'w').write(str(child.pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n"
    )
    hang = CommandVerifier(id="hang", command=("python3", "hang.py"), timeout_ms=700)
    with prepare_workspace(fixture_dir, fixture_git=False, keep=False, prefix="alisio-test-") as workspace:
        started = time.monotonic()
        (result,) = _run(workspace, hang)
        elapsed = time.monotonic() - started
        pid = int((workspace.path / "grandchild.pid").read_text())
    assert result.status is FAIL
    assert result.detail == "timed out after 700 ms and was killed; stdout: started"
    assert elapsed < 5
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state == "Z":
            return False
        time.sleep(0.05)
    return True


def test_a_command_that_does_not_start_is_an_error(fixture_dir: Path) -> None:
    """A missing executable is an error (the verifier could not run), not a fail."""
    with prepare_workspace(fixture_dir, fixture_git=False, keep=False, prefix="alisio-test-") as workspace:
        (result,) = _run(
            workspace, CommandVerifier(id="x", command=("alisio-no-such-tool",), timeout_ms=1000)
        )
    assert result.status is ERROR
    assert (
        result.detail
        == "did not start: executable 'alisio-no-such-tool' not found (not on PATH, or no such file)"
    )


def test_a_command_verifier_sees_no_secrets_and_runs_in_its_cwd(
    fixture_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command's environment drops secret-looking variables; cwd is resolved below the workspace."""
    monkeypatch.setenv("ALISIO_TEST_API_KEY", "sk-should-not-leak")
    probe = "import os, sys; print(os.getcwd()); sys.exit(7 if 'ALISIO_TEST_API_KEY' in os.environ else 0)"
    with prepare_workspace(fixture_dir, fixture_git=False, keep=False, prefix="alisio-test-") as workspace:
        verifier = CommandVerifier(
            id="env",
            command=("python3", "-c", probe),
            timeout_ms=10_000,
            cwd="src",
            expect_stdout_includes=str(workspace.path / "src"),
        )
        (result,) = _run(workspace, verifier)
    assert result.status is PASS, result.detail


# --- file, tree-diff and tool-sequence verifiers ---------------------------------------------------------


def test_file_verifiers_judge_the_workspace_and_refuse_paths_leading_outside(
    fixture_dir: Path, tmp_path: Path
) -> None:
    """file-equals/contains/absent pass or fail on the copy; a path through a link to outside is an error."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    fixed_sha = hashlib.sha256(b"def add(a, b):\n    return a + b\n").hexdigest()
    verifiers = (
        FileEqualsVerifier(id="eq", path="src/calc.py", sha256=fixed_sha),
        FileContainsVerifier(id="has", path="src/calc.py", text="a + b"),
        FileAbsentVerifier(id="gone", path="notes.txt"),
        FileEqualsVerifier(id="escape", path="out/calc.py", sha256=fixed_sha),
        FileAbsentVerifier(id="escape-absent", path="out/nothing.txt"),
        FileContainsVerifier(id="missing", path="src/none.py", text="x"),
        FileEqualsVerifier(id="dir", path="src", sha256=fixed_sha),
    )
    with prepare_workspace(fixture_dir, fixture_git=False, keep=False, prefix="alisio-test-") as workspace:
        (workspace.path / "out").symlink_to(outside)
        unfixed = _run(workspace, *verifiers)
        _fix(workspace)
        (workspace.path / "notes.txt").unlink()
        fixed = _run(workspace, *verifiers)
    assert [r.status for r in unfixed] == [FAIL, FAIL, FAIL, ERROR, ERROR, FAIL, FAIL]
    assert [r.status for r in fixed] == [PASS, PASS, PASS, ERROR, ERROR, FAIL, FAIL]
    assert fixed[3].detail == "out/calc.py: resolves outside the workspace"
    assert unfixed[2].detail == "notes.txt exists (8 bytes)"
    assert fixed[6].detail == "src is a directory, not a file"


def test_tree_diff_blames_the_agent_not_the_verifiers(fixture_dir: Path) -> None:
    """Changes outside allowed fail; files a command verifier writes (and __pycache__) do not count."""
    writer = CommandVerifier(
        id="writes", command=("python3", "-c", "open('report.txt', 'w').write('x')"), timeout_ms=10_000
    )
    scope = TreeDiffWithinVerifier(id="scope", allowed=("src/",))
    with prepare_workspace(fixture_dir, fixture_git=False, keep=False, prefix="alisio-test-") as workspace:
        _fix(workspace)
        (workspace.path / "src" / "new.py").write_text("")
        first = _run(workspace, _check(), writer, scope)
        assert (workspace.path / "report.txt").exists()
        (workspace.path / "report.txt").unlink()
        (workspace.path / "notes.txt").write_text("changed\n")
        second = _run(workspace, scope)
    assert [r.status for r in first] == [PASS, PASS, PASS]
    assert first[2].detail == "2 changed path(s), all allowed"
    assert (second[0].status, second[0].detail) == (FAIL, "1 change(s) outside allowed: changed notes.txt")


def _log(*calls: tuple[str, str, bool]) -> tuple[Event, ...]:
    events: list[Event] = [
        RunStarted(
            seq=0,
            elapsed_ms=0,
            prompt="p",
            provider="scripted",
            model="m",
            policy_mode="auto",
            config_hash="h",
            harness_version="0",
        )
    ]
    for index, (name, arguments, ok) in enumerate(calls):
        call_id = f"c{index}"
        events.append(
            ToolCalled(
                seq=len(events), elapsed_ms=0, call_id=call_id, name=name, arguments=arguments, effect=None
            )
        )
        events.append(
            ToolResulted(
                seq=len(events),
                elapsed_ms=0,
                call_id=call_id,
                name=name,
                ok=ok,
                output_excerpt="",
                duration_ms=0,
            )
        )
    events.append(RunEnded(seq=len(events), elapsed_ms=1, outcome="completed", turns=1))
    return tuple(events)


def test_verifiers_run_in_suite_order_with_tool_sequences_read_off_the_log(fixture_dir: Path) -> None:
    """Results come back in suite order; tool-sequence verifiers judge the events given."""
    events = _log(
        ("edit_file", '{"path": "src/calc.py"}', False),
        ("read_file", '{"path": "src/calc.py"}', True),
        ("edit_file", '{"path":"src/calc.py"}', True),
    )
    rules = ToolSequenceVerifier(
        id="seq",
        rules=(NoRepeatFailureRule(tool="read_file"), BeforeRule(first="read_file", then="edit_file")),
    )
    repeat = ToolSequenceVerifier(id="repeat", rules=(NoRepeatFailureRule(tool="edit_file"),))
    with prepare_workspace(fixture_dir, fixture_git=False, keep=False, prefix="alisio-test-") as workspace:
        results = _run(workspace, rules, _check(expect_exit=1), repeat, events=events)
        no_log = _run(workspace, rules)
    assert [r.id for r in results] == ["seq", "check", "repeat"]
    assert results[0].detail.startswith("before(read_file, edit_file): edit_file call at seq 1 with ")
    assert results[2].detail.startswith("no-repeat-failure(edit_file): edit_file call at seq 5 with ")
    assert [r.status for r in results] == [FAIL, PASS, FAIL]
    assert no_log[0].status is ERROR


def test_a_verifier_kind_run_verifiers_does_not_know_is_refused_not_skipped(fixture_dir: Path) -> None:
    """A kind added to the suite model but not to run_verifiers stops the judging (assert_never), so the run
    becomes an error record instead of passing on its other verifiers (mypy names the missing case too)."""

    class NewKind(msgspec.Struct, frozen=True):
        id: str = "new"

    with (
        prepare_workspace(fixture_dir, fixture_git=False, keep=False, prefix="alisio-test-") as workspace,
        pytest.raises(AssertionError),
    ):
        run_verifiers(_task(_check(), NewKind()), workspace, (), grace_s=0.2)  # type: ignore[arg-type]
