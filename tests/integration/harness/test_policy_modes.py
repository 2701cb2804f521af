"""The policy modes through the installed command: the spec's own "Writing a suite" example runs as written.

Mode ``auto`` runs workspace writes (the runner must grant them with ``--allow-write``) and ``allow`` adds
process, external or analysis; everything else is refused without asking. The spec's example suite is kept
here verbatim, with a Python ``check.py`` in place of ``check.ts`` and ``src/math.py`` in place of
``src/math.ts`` (its command verifier runs ``python3 check.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from alisio.core.lab.runs.records import RunRecord, RunStatus
from tests.integration import helpers
from tests.integration.helpers import SPEC_CHECK as CHECK
from tests.integration.helpers import SPEC_EXAMPLE
from tests.integration.helpers import SPEC_MATH as MATH

ALISIO = Path(sys.executable).with_name("alisio")
RECORD = msgspec.json.Decoder(RunRecord)


def edit_script(new_body: str) -> dict[str, Any]:
    """A model that reads src/math.py, rewrites add's body, runs the check through bash, and stops."""
    return {
        "turns": [
            {"toolCalls": [{"name": "read_file", "arguments": {"path": "src/math.py"}}]},
            {
                "toolCalls": [
                    {
                        "name": "edit_file",
                        "arguments": {"path": "src/math.py", "old_string": "a - b", "new_string": new_body},
                    }
                ]
            },
            {"toolCalls": [{"name": "bash", "arguments": {"command": "python3 check.py"}}]},
            {"text": "Fixed add."},
        ]
    }


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The spec's suite under tmp_path/my-suite, an empty configuration and a data directory."""
    (tmp_path / "config").mkdir()
    fixture = tmp_path / "my-suite" / "fixtures" / "fix-add"
    (fixture / "src").mkdir(parents=True)
    (fixture / "src" / "math.py").write_text(MATH)
    (fixture / "check.py").write_text(CHECK)
    (tmp_path / "my-suite" / "suite.json").write_text(SPEC_EXAMPLE)
    return tmp_path


def alisio(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command with an empty configuration, no key and no terminal."""
    return helpers.alisio(home, *args)


def run_spec_example(home: Path, script: dict[str, Any], *grants: str) -> subprocess.CompletedProcess[str]:
    """``alisio eval run my-suite --suite-dir ... --k 1 --out home/out`` with the scripted model and ``grants``."""
    path = home / "script.json"
    path.write_text(json.dumps(script))
    suite_dir = str(home / "my-suite")
    out = str(home / "out")
    return alisio(
        home, "eval", "run", "my-suite", "--suite-dir", suite_dir, "--yes", "--k", "1", "--out", out,
        "--script", str(path), *grants,
    )  # fmt: skip


def only_record(home: Path) -> RunRecord:
    lines = (home / "out" / "runs.jsonl").read_bytes().splitlines()
    assert len(lines) == 1
    return RECORD.decode(lines[0])


def test_the_spec_example_passes_with_a_correct_edit(home: Path) -> None:
    """Mode auto edits src/math.py and, with process in allow, runs the check: the run passes, nothing refused."""
    result = run_spec_example(home, edit_script("a + b"), "--allow-write", "--allow-process")
    assert result.returncode == 0, result.stderr
    record = only_record(home)
    assert record.status is RunStatus.PASS
    assert [(v.id, v.status) for v in record.verifiers] == [("check", "pass"), ("scope", "pass")]
    assert record.measured.tool_calls == 3
    assert all(i.kind not in ("effect_refused", "approval_denied") for i in record.incidents)
    report = json.loads((home / "out" / "report.json").read_text())
    assert [(t["taskId"], t["passes"], t["judged"]) for t in report["tasks"]] == [("fix-add", 1, 1)]


def test_the_spec_example_fails_with_a_wrong_edit(home: Path) -> None:
    """The same run with add turned into a product: the check fails and says which cases, the scope holds."""
    result = run_spec_example(home, edit_script("a * b"), "--allow-write", "--allow-process")
    assert result.returncode == 0, result.stderr
    record = only_record(home)
    assert record.status is RunStatus.FAIL
    check, scope = record.verifiers
    assert (check.id, check.status, scope.status) == ("check", "fail", "pass")
    assert "add(2, 3) = 6, expected 5" in check.detail and "add(10, -10) = -100, expected 0" in check.detail


@pytest.mark.parametrize(
    ("grants", "line"),
    [
        (
            ("--allow-process",),
            'task fix-add: policy.mode "auto" needs the write effect (it edits the workspace without asking), '
            "which was not granted (pass --allow-write)",
        ),
        (
            ("--allow-write",),
            "task fix-add: policy.allow asks for the process effect, which was not granted (pass --allow-process)",
        ),
    ],
)
def test_the_spec_example_without_a_grant_is_rejected_before_the_first_run(
    home: Path, grants: tuple[str, ...], line: str
) -> None:
    """Auto needs --allow-write, its allow needs --allow-process: exit 1 naming task, effect and flag; no run."""
    result = run_spec_example(home, edit_script("a + b"), *grants)
    assert result.returncode == 1
    assert f"alisio eval run: {line}" in result.stderr.splitlines()
    assert "Traceback" not in result.stderr
    assert not (home / "out" / "runs.jsonl").exists()


def test_a_task_in_mode_ask_is_denied_its_writes_headless(home: Path) -> None:
    """Mode ask in the lab: the write is not in allow, so it is asked, and headless that is approval_denied."""
    suite = json.loads(SPEC_EXAMPLE)
    suite["tasks"][0]["policy"] = {"mode": "ask", "allow": ["process"]}
    (home / "my-suite" / "suite.json").write_text(json.dumps(suite))
    result = run_spec_example(home, edit_script("a + b"), "--allow-write", "--allow-process")
    assert result.returncode == 0, result.stderr
    record = only_record(home)
    assert record.status is RunStatus.FAIL
    assert [i.kind for i in record.incidents if i.kind in ("approval_denied", "effect_refused")] == [
        "approval_denied"
    ]


# --- alisio run --policy auto ------------------------------------------------------------------------------

WRITE_THEN_BASH = {
    "turns": [
        {"toolCalls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "written\n"}}]},
        {"toolCalls": [{"name": "bash", "arguments": {"command": "touch made-by-bash"}}]},
        {"text": "done"},
    ]
}


def alisio_run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``alisio run`` with the write-then-bash script in home/ws, JSON events on stdout."""
    workspace = home / "ws"
    workspace.mkdir(exist_ok=True)
    script = home / "run-script.json"
    script.write_text(json.dumps(WRITE_THEN_BASH))
    return alisio(
        home, "run", "--cwd", str(workspace), "--script", str(script), "--json", *args, "write a note"
    )


def test_run_policy_auto_without_allow_write_is_refused_before_the_run(home: Path) -> None:
    """``alisio run --policy auto`` follows the lab's rule: without --allow-write, exit 1 and one line; no run."""
    result = alisio_run(home, "--policy", "auto", "--allow-process")
    assert result.returncode == 1
    assert result.stderr == (
        "alisio run: --policy auto carries out the write effect without asking: pass --allow-write to grant it "
        "(or use --policy ask to be asked first, or --read-only)\n"
    )
    assert result.stdout == "" and list((home / "ws").iterdir()) == []


def test_run_policy_auto_writes_and_refuses_what_is_not_allowed(home: Path) -> None:
    """--policy auto --allow-write: the write runs without asking; bash (process, not allowed) is refused with
    effect_refused and no approval event, and the run goes on to its answer."""
    result = alisio_run(home, "--policy", "auto", "--allow-write")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert (home / "ws" / "notes.txt").read_text() == "written\n"
    assert not (home / "ws" / "made-by-bash").exists()
    assert not [e for e in events if e["type"] == "approval"]
    assert [e["kind"] for e in events if e["type"] == "incident" and e["kind"] != "usage_unreported"] == [
        "effect_refused"
    ]
    assert events[-1]["type"] == "run_end" and events[-1]["outcome"] == "completed"


def test_run_policy_auto_read_only_needs_no_write_grant(home: Path) -> None:
    """--policy auto --read-only asks for no write grant: it runs, and the write is refused as read-only."""
    result = alisio_run(home, "--policy", "auto", "--read-only")
    assert result.returncode == 0, result.stderr
    assert list((home / "ws").iterdir()) == []
