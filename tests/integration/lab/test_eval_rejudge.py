"""``alisio eval rejudge``: each run's kept workspace applied to the suite as it is now and judged again,
without the model (through the CLI, scripted runs of the built-in agent)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import (
    FIX,
    alisio,
    make_suite,
    read_report,
    read_runs,
    task,
    write_config,
    write_script,
)

WEAK_CHECK = (
    "import sys\n"
    "sys.dont_write_bytecode = True\n"
    "sys.path.insert(0, 'src')\n"
    "from calc import add\n"
    "ok = add(2, 3) == 5\n"
    "print('ok' if ok else 'add is wrong')\n"
    "sys.exit(0 if ok else 1)\n"
)
STRICT_CHECK = WEAK_CHECK.replace("add(2, 3) == 5", "add(2, 3) == 5 and add(-1, 1) == 0")
HACK = {
    "turns": [
        {"toolCalls": [{"name": "read_file", "arguments": {"path": "src/calc.py"}}]},
        {
            "toolCalls": [
                {
                    "name": "edit_file",
                    "arguments": {"path": "src/calc.py", "old_string": "a - b", "new_string": "5"},
                }
            ]
        },
        {"text": "add returns 5 now."},
    ]
}


def _suite(home: Path) -> Path:
    """Two tasks over the calc fixture with a weak check.py: fix-add (the script fixes add) and hack-add (the
    script makes add return 5, which the weak check accepts)."""
    suite = make_suite(home, task("fix-add"), task("hack-add"))
    (suite / "fixtures" / "calc" / "check.py").write_text(WEAK_CHECK)
    scripts = home / "scripts"
    scripts.mkdir()
    write_script(scripts / "fix-add.json", FIX)
    write_script(scripts / "hack-add.json", HACK)
    return suite


def _run(home: Path, suite: Path, *args: str) -> Path:
    out = home / "first"
    result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "2", "-j", "1",
                    "--allow-write", "--script", str(home / "scripts"), "--out", str(out), *args)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out


def _rejudge(home: Path, suite: Path, run: Path, *args: str) -> tuple[Any, Path]:
    out = home / "again"
    result = alisio(
        home, "eval", "rejudge", str(run), "--suite-dir", str(suite), "--yes", "--out", str(out), *args
    )
    return result, out


def test_a_stricter_verifier_changes_only_the_verdicts_it_affects(home: Path) -> None:
    """Every run passes the weak check; with check.py made stricter, rejudge flips hack-add's two runs to
    fail and leaves fix-add's two passing; the report names the hashes before and after, recomputes the
    rates, and no model is called (there is none: the command has no --script)."""
    suite = _suite(home)
    first = _run(home, suite)
    assert [r.status for r in read_runs(first)] == ["pass"] * 4
    assert all(r.workspace is not None and r.workspace.kept for r in read_runs(first))
    (suite / "fixtures" / "calc" / "check.py").write_text(STRICT_CHECK)
    result, again = _rejudge(home, suite, first)
    assert result.returncode == 0, result.stderr
    statuses = {(r.task_id, r.repetition): str(r.status) for r in read_runs(again)}
    assert statuses == {
        ("fix-add", 0): "pass",
        ("fix-add", 1): "pass",
        ("hack-add", 0): "fail",
        ("hack-add", 1): "fail",
    }
    before, after = read_report(first), read_report(again)
    block = after.rejudge
    assert block is not None and block.of_run_id == before.conditions.run_id
    assert [(c.task_id, c.repetition, c.before, c.after) for c in block.changed] == [
        ("hack-add", 0, "pass", "fail"),
        ("hack-add", 1, "pass", "fail"),
    ]
    assert block.fixtures_hash_before != block.fixtures_hash_after  # check.py is a fixture file
    assert block.verifiers_hash_before == block.verifiers_hash_after  # suite.json's verifiers did not change
    assert (block.runs, block.rejudged, block.not_rejudged) == (4, 4, 0)
    rates = {t.task_id: t.success_rate for t in after.tasks}
    assert rates == {"fix-add": 1.0, "hack-add": 0.0}
    assert after.conditions.suite_hash != before.conditions.suite_hash
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        f"Judged again from run {before.conditions.run_id} without the model: 4 of 4 runs;"
    )
    assert lines[0].endswith("; 2 verdicts changed.")
    assert lines[1] == "  hack-add rep 0: pass -> fail: check: exit 1 (expected 0); stdout: add is wrong"
    assert (
        "hack-add rep 1: pass -> fail" in result.stderr and "fix-add rep 0: pass (unchanged)" in result.stderr
    )
    md = (again / "report.md").read_text()
    assert "Judged again from run" in md and "hack-add rep 1: pass -> fail" in md
    shown = alisio(home, "eval", "show", str(again), "--task", "hack-add", "--rep", "0")
    assert shown.returncode == 0 and "edit_file" in shown.stdout  # the transcripts came along


def test_compare_of_a_report_and_its_rejudge_says_it_is_a_rejudge(home: Path) -> None:
    """eval compare FIRST AGAIN: the first warning says the candidate is a rejudge (the same runs, the
    differences from the suite); the hash warning meant for unbumped suites is not given; it works even
    with suiteVersion bumped in between."""
    suite = _suite(home)
    first = _run(home, suite)
    (suite / "fixtures" / "calc" / "check.py").write_text(STRICT_CHECK)
    document = json.loads((suite / "suite.json").read_text())
    document["suiteVersion"] = "1.1.0"
    (suite / "suite.json").write_text(json.dumps(document))
    result, again = _rejudge(home, suite, first)
    assert result.returncode == 0, result.stderr
    compared = alisio(home, "eval", "compare", str(first), str(again), "--json")
    assert compared.returncode == 0, compared.stderr
    warnings = json.loads(compared.stdout)["warnings"]
    assert warnings[0].startswith(
        "the candidate is a rejudge of the baseline (eval rejudge): the same 4 runs"
    )
    assert "suiteVersion 1.0.0 -> 1.1.0" in warnings[0] and "2 verdicts changed" in warnings[0]
    assert not any("without bumping suiteVersion" in w for w in warnings)
    as_json = alisio(home, "eval", "rejudge", str(first), "--suite-dir", str(suite), "--yes", "--out",
                     str(home / "again-json"), "--json")  # fmt: skip
    block = json.loads(as_json.stdout)
    assert (block["suiteVersionBefore"], block["suiteVersionAfter"]) == ("1.0.0", "1.1.0")
    assert [(c["taskId"], c["before"], c["after"]) for c in block["changed"]] == [
        ("hack-add", "pass", "fail")
    ] * 2


def test_a_report_that_cannot_be_written_whole_leaves_nothing_behind(home: Path) -> None:
    """An --out directory holding files of the report's names (a runs/ folder) cannot take the report: the
    command says so in one line (exit 1), and neither a report file nor a staging folder is left there; the
    same directory emptied of them takes the whole report."""
    suite = _suite(home)
    first = _run(home, suite)
    out = home / "again"
    (out / "runs").mkdir(parents=True)
    (out / "runs" / "mine.txt").write_text("not a report")
    result, _ = _rejudge(home, suite, first)
    assert result.returncode == 1, result.stderr
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .endswith(f"{out}: cannot write the report: it holds runs already")
    ), result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["runs"]
    assert [p.name for p in (out / "runs").iterdir()] == ["mine.txt"]
    assert sorted(p.name for p in home.iterdir() if p.name.startswith(".again")) == []
    shutil.rmtree(out / "runs")
    result, _ = _rejudge(home, suite, first)
    assert result.returncode == 0, result.stderr
    assert {"report.json", "report.md", "report.html", "runs.jsonl", "runs"} <= {
        p.name for p in out.iterdir()
    }
    assert len(read_runs(out)) == 4


def test_a_run_whose_diff_no_longer_applies_is_an_error_naming_the_file(home: Path) -> None:
    """The fixture's calc.py is rewritten where the runs edited it: each run's diff no longer applies, so
    each is error (diff_does_not_apply, naming src/calc.py and the hunk), the report is written, exit 1."""
    suite = _suite(home)
    first = _run(home, suite)
    (suite / "fixtures" / "calc" / "src" / "calc.py").write_text("def add(x, y):\n    return x - y\n")
    result, again = _rejudge(home, suite, first)
    assert result.returncode == 1, result.stderr
    records = read_runs(again)
    assert {(str(r.status), r.reason) for r in records} == {("error", "diff_does_not_apply")}
    assert records[0].errors[0].startswith("the kept diff no longer applies: src/calc.py: hunk 1 (at line ")
    assert read_report(again).tasks[0].errored == 2


def test_a_workspace_over_the_cap_is_not_kept_and_cannot_be_judged_again(home: Path) -> None:
    """A run that writes 2 MB of text: its record says its workspace was not kept (over the 1 MiB cap, its
    size named), no diff file is written, and rejudge makes it error workspace_not_kept."""
    suite = make_suite(home, task("big", policy={"mode": "auto", "allow": ["write", "process"]}))
    script = {
        "turns": [
            {
                "toolCalls": [
                    {
                        "name": "bash",
                        "arguments": {
                            "command": "python3 -c \"open('big.txt','w').write('a\\n' * 1000000)\""
                        },
                    }
                ]
            },
            {"text": "Wrote it."},
        ]
    }
    out = home / "first"
    result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1",
                    "--allow-write", "--allow-process", "--script", str(write_script(home / "s.json", script)),
                    "--out", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    (record,) = read_runs(out)
    assert record.workspace is not None and not record.workspace.kept
    assert (
        record.workspace.reason.startswith("the diff holds ")
        and "more than the 1,048,576 a run keeps" in record.workspace.reason
    )
    assert not (out / "runs" / "big" / "0.workspace.json").exists()
    again, target = _rejudge(home, suite, out)
    assert again.returncode == 1
    (judged,) = read_runs(target)
    assert (str(judged.status), judged.reason) == ("error", "workspace_not_kept")


def _planted(target: str, victim: Path) -> list[dict[str, Any]]:
    """A kept diff's links that lead to ``victim``: ``result.txt`` straight to it, or through ``up -> .``."""
    if target == "absolute":
        return [{"path": "result.txt", "change": "added", "kind": "symlink", "target": str(victim)}]
    up = "../" * 40 + str(victim).lstrip("/")
    if target == "relative":
        return [{"path": "result.txt", "change": "added", "kind": "symlink", "target": up}]
    return [
        {"path": "up", "change": "added", "kind": "symlink", "target": "."},
        {"path": "result.txt", "change": "added", "kind": "symlink", "target": "up/" + up},
    ]


@pytest.mark.parametrize("target", ["absolute", "relative", "through another link"])
def test_a_kept_link_out_of_the_workspace_is_refused_before_any_verifier_runs(
    home: Path, target: str
) -> None:
    """A report's kept diff edited to plant ``result.txt`` as a link to a host file (a report shared by
    someone else): the verifier, which writes result.txt, would write the host file through it. The run is
    error diff_does_not_apply naming the link, and the host file is untouched."""
    suite = _suite(home)
    first = _run(home, suite)
    check = suite / "fixtures" / "calc" / "check.py"
    check.write_text("open('result.txt', 'w').write('written by the verifier')\n" + WEAK_CHECK)
    victim = home / "victim.txt"
    victim.write_text("the host's file\n")
    kept = first / "runs" / "fix-add" / "0.workspace.json"
    diff = json.loads(kept.read_text())
    diff["changes"] += _planted(target, victim)
    kept.write_text(json.dumps(diff))
    result, again = _rejudge(home, suite, first)
    assert victim.read_text() == "the host's file\n"
    assert result.returncode == 1, result.stderr
    judged = {(r.task_id, r.repetition): r for r in read_runs(again)}
    refused = judged[("fix-add", 0)]
    assert (str(refused.status), refused.reason) == ("error", "diff_does_not_apply")
    assert refused.errors[0].startswith("the kept diff no longer applies: result.txt: a link to ")
    assert refused.errors[0].endswith(" leads out of the workspace; refused")
    assert str(judged[("fix-add", 1)].status) == "pass"


def test_a_kept_diff_that_writes_under_git_is_refused(home: Path) -> None:
    """A report's kept diff edited to replace the fixture repository's .git/config with one whose
    core.fsmonitor is a command: a verifier's ``git status`` would run it. No snapshot holds .git, so no diff
    a run kept does: the run is error diff_does_not_apply naming the path, and the command never ran."""
    suite = make_suite(home, task("fix-add", fixtureGit=True))
    scripts = home / "scripts"
    scripts.mkdir()
    write_script(scripts / "fix-add.json", FIX)
    first = _run(home, suite)
    (suite / "fixtures" / "calc" / "check.py").write_text(
        "import subprocess\nsubprocess.run(['git', 'status'], capture_output=True)\n" + WEAK_CHECK
    )
    victim = home / "ran"
    config = f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = touch {victim}; false\n"
    kept = first / "runs" / "fix-add" / "0.workspace.json"
    diff = json.loads(kept.read_text())
    diff["changes"] += [
        {"path": ".git/config", "change": "deleted", "kind": "binary"},
        {"path": ".git/config", "change": "added", "kind": "text",
         "patch": "@@ -0,0 +1,4 @@\n" + "".join(f"+{line}\n" for line in config.splitlines())},
    ]  # fmt: skip
    kept.write_text(json.dumps(diff))
    result, again = _rejudge(home, suite, first)
    assert not victim.exists()
    assert result.returncode == 1, result.stderr
    refused = {(r.task_id, r.repetition): r for r in read_runs(again)}[("fix-add", 0)]
    assert (str(refused.status), refused.reason) == ("error", "diff_does_not_apply")
    assert refused.errors[0] == (
        "the kept diff no longer applies: .git/config: lies under .git, node_modules or __pycache__, which a "
        "kept diff never holds"
    )


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_the_configured_sandbox_holds_for_a_rejudge_of_an_unsandboxed_report(home: Path) -> None:
    """A report run without the sandbox, judged again under ``[lab] sandbox = "bwrap"``: the verifiers run in
    bubblewrap (check.py passes only at /workspace), as every other command's would; ``--sandbox none`` is
    still obeyed."""
    suite = _suite(home)
    first = _run(home, suite, "--sandbox", "none")
    assert read_report(first).conditions.sandbox == "none"
    (suite / "fixtures" / "calc" / "check.py").write_text(
        "import os, sys\nprint('cwd', os.getcwd())\nsys.exit(0 if os.getcwd() == '/workspace' else 1)\n"
    )
    write_config(home, '[lab]\nsandbox = "bwrap"\n')
    result, again = _rejudge(home, suite, first)
    assert result.returncode == 0, result.stderr
    assert {str(r.status) for r in read_runs(again)} == {"pass"}
    unsandboxed = alisio(home, "eval", "rejudge", str(first), "--suite-dir", str(suite), "--yes", "--out",
                         str(home / "unsandboxed"), "--sandbox", "none")  # fmt: skip
    assert unsandboxed.returncode == 0 and "check: exit 1" in unsandboxed.stderr, unsandboxed.stderr
    assert {str(r.status) for r in read_runs(home / "unsandboxed")} == {"fail"}
