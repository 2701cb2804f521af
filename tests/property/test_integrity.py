"""Properties of the protected files (alisio.core.lab.suites.protected), the tamper check
(alisio.core.lab.judges.integrity), the self-check a report carries and the rejudge's changed verdicts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.lab.judges.integrity import tampering
from alisio.core.lab.judges.outcome import status_of
from alisio.core.lab.judges.rejudge import verdict_changes
from alisio.core.lab.judges.selfcheck import SelfCheck, TaskCheck, merged_selfcheck, self_check_block
from alisio.core.lab.judges.verify import TreeEntry, TreeSnapshot
from alisio.core.lab.reports.trust import self_check_line
from alisio.core.lab.runs.records import Measured, RunRecord, RunStatus, VerifierResult, VerifierStatus
from alisio.core.lab.suites.protected import protected_paths

FILES = ("check.py", "src/calc.py", "tests/test_a.py", "tests/data/x.txt", "README")


DERIVED = [
    (("python3", "check.py"), None, ("check.py",), ()),
    (("python3", "-B", "check.py", "src/calc.py"), None, ("check.py",), ()),  # its arguments are data
    (("./check.py",), None, ("check.py",), ()),
    # pytest: its paths, and the conftest.py and pytest.ini it would read where it starts (absent: watched)
    (
        ("python3", "-m", "pytest", "-q", "tests/"),
        None,
        ("tests/data/x.txt", "tests/test_a.py"),
        ("conftest.py", "pytest.ini", "tests"),
    ),
    (
        ("pytest", "--rootdir=tests"),
        None,
        ("tests/data/x.txt", "tests/test_a.py"),
        ("conftest.py", "pytest.ini", "tests"),
    ),
    (("bash", "-c", "cd . && pytest -q"), "tests", (), ("tests/conftest.py", "tests/pytest.ini")),
    (("grep", "-q", "TODO", "check.py"), None, (), ()),  # grep reads the agent's work, it is not code
    (("bash", "-c", "cd src && python3 ../check.py"), None, (), ()),  # .. is never followed
    (("bash", "-c", "python3 check.py | tee out.txt"), None, ("check.py",), ()),
    (("env", "X=1", "python3", "check.py"), None, ("check.py",), ()),
    (("python3", "test_a.py"), "tests", ("tests/test_a.py",), ()),
    (("python3", "-c", "import check"), None, (), ()),
]


def test_the_default_protects_the_code_the_verifiers_run() -> None:
    """Without ``protected``: the program, the script an interpreter runs, a test runner's paths (and the same in
    a ``bash -c`` script), relative to the verifier's ``cwd``; an interpreter's further arguments are data; a
    pytest command also watches the conftest.py and pytest.ini where it starts."""
    for command, cwd, files, directories in DERIVED:
        assert protected_paths(None, ((command, cwd),), FILES) == (files, directories), command


def test_what_the_task_lets_the_agent_change_is_never_protected_by_default() -> None:
    """A path a tree-diff-within allows (or a file verifier inspects) is left out of the default (and a new file
    may then appear in the directory above it); an explicit list is taken as it is; ``[]`` protects nothing."""
    command = (("python3", "-m", "pytest", "tests"), None)
    watched = ("conftest.py", "pytest.ini")
    assert protected_paths(None, (command,), FILES, ("tests/data/",)) == (("tests/test_a.py",), watched)
    assert protected_paths(None, (command,), FILES, ("tests/data/", "conftest.py")) == (
        ("tests/test_a.py",),
        ("pytest.ini",),
    )
    assert protected_paths(None, ((("python3", "check.py"), None),), FILES, ("check.py",)) == ((), ())
    assert protected_paths(("check.py",), (), FILES, ("check.py",)) == (("check.py",), ())
    assert protected_paths((), (command,), FILES) == ((), ())


def _snapshot(entries: dict[str, str]) -> TreeSnapshot:
    return TreeSnapshot(
        entries=tuple(TreeEntry(path=p, kind="file", digest=d) for p, d in sorted(entries.items()))
    )


CONTENT = st.dictionaries(st.sampled_from((*FILES, "tests/conftest.py", "new.txt")), st.sampled_from("abc"))


@given(CONTENT, CONTENT)
def test_tampering_is_every_protected_change_and_nothing_else(
    before: dict[str, str], after: dict[str, str]
) -> None:
    """A protected file changed or deleted, a file added under a protected directory: each is named once;
    changes to other files are not tampering."""
    protected = [p for p in ("check.py", "tests/test_a.py") if p in before]
    found = {(t.path, t.what) for t in tampering(protected, ["tests"], _snapshot(before), _snapshot(after))}
    expected: set[tuple[str, str]] = {(p, "deleted") for p in protected if p not in after}
    expected |= {(p, "changed") for p in protected if p in after and after[p] != before[p]}
    expected |= {(p, "added") for p in after if p not in before and p.startswith("tests/")}
    assert found == expected


@given(st.sampled_from(["completed", "budget_exceeded"]), st.sampled_from(list(VerifierStatus)))
def test_a_tampered_run_fails_whatever_its_verifiers_say(outcome: str, verifier: VerifierStatus) -> None:
    """A run that tampered fails (verifier_tampered), even when the originals pass or it hit a budget; a run
    whose agent broke is still an error."""
    results = [VerifierResult(id="check", kind="command", status=verifier)]
    assert status_of(outcome, None, results, expected=1, tampered=True) == (
        RunStatus.FAIL,
        "verifier_tampered",
    )  # type: ignore[arg-type]
    assert status_of("error", "provider_auth", results, expected=1, tampered=True)[0] is RunStatus.ERROR


NOOP = st.sampled_from(["fails", "PASSES", "error"])
ORACLE = st.sampled_from(["passes", "FAILS", "error", "none"])


def _check(tasks: dict[str, tuple[str, str]]) -> SelfCheck:
    checks = tuple(
        TaskCheck(task_id=t, noop=n, oracle=o, repeat="none", runs=0, slowest_ms=None)  # type: ignore[arg-type]
        for t, (n, o) in sorted(tasks.items())
    )
    return SelfCheck(
        suite_id="s", suite_version="1.0.0", repeat=1, tasks=checks, flagged=0, warned=0, clean=True
    )


TASKS = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.tuples(NOOP, ORACLE), max_size=4)


@given(TASKS, TASKS, st.sets(st.sampled_from(["a", "b", "c", "d", "e"])))
def test_the_report_says_the_latest_self_check_of_its_own_tasks(
    first: dict[str, tuple[str, str]], second: dict[str, tuple[str, str]], report_tasks: set[str]
) -> None:
    """Two self-checks merge (the later one wins per task); a report counts only its own tasks: checked, those
    passing with no change (named), the solutions and how many pass."""
    stored = merged_selfcheck(merged_selfcheck(None, _check(first), "h", "t1"), _check(second), "h", "t2")
    latest = {**first, **second}
    block = self_check_block(stored, sorted(report_tasks))
    mine = {t: latest[t] for t in report_tasks if t in latest}
    assert (block.tasks, block.checked) == (len(report_tasks), len(mine))
    assert block.noop_passing == tuple(sorted(t for t, (n, _) in mine.items() if n == "PASSES"))
    assert block.solutions == sum(1 for _, o in mine.values() if o != "none")
    assert block.solution_passes == sum(1 for _, o in mine.values() if o == "passes")
    line = self_check_line(block)
    assert line.startswith("Self-check: not self-checked") == (not mine)


def _record(task: str, rep: int, status: RunStatus) -> RunRecord:
    measured = Measured(wall_ms=1, turns=1, tool_calls=0, compactions=0, usage_complete=True)
    return RunRecord(task_id=task, repetition=rep, seed=rep, status=status, measured=measured)


STATUSES = st.lists(st.sampled_from(list(RunStatus)), min_size=1, max_size=6)


@given(STATUSES, st.data())
def test_the_changed_verdicts_are_exactly_the_runs_whose_status_differs(
    before: list[RunStatus], data: st.DataObject
) -> None:
    """verdict_changes: one entry per run whose status differs, with both statuses; none for the others."""
    after = data.draw(st.lists(st.sampled_from(list(RunStatus)), min_size=len(before), max_size=len(before)))
    old = [_record("t", n, s) for n, s in enumerate(before)]
    new = [_record("t", n, s) for n, s in enumerate(after)]
    changes = verdict_changes(old, new)
    assert [(c.repetition, c.before, c.after) for c in changes] == [
        (n, str(b), str(a)) for n, (b, a) in enumerate(zip(before, after, strict=True)) if a is not b
    ]
