"""``alisio eval stability`` over scripted reports with known flip patterns, and ``compare --exclude-tasks``.

Five reports of one suite version are written as the lab writes them (runs.jsonl, report.json through the
lab's report builder and store), each with k = 4 runs of four tasks:

- ``steady``: passes every run of every report (never flips);
- ``broken``: fails every run, by its check (never flips: it is stably broken);
- ``timeout``: passes in three reports, fails the other two with its check timed out (or by maxWallMs);
- ``compacted``: mixed runs in every report, failing exactly the runs that had a compaction.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec

from alisio.core.lab.reports.report import Conditions
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.runs.records import (
    Incident,
    Measured,
    RunRecord,
    RunStatus,
    VerifierResult,
    VerifierStatus,
)
from alisio.shell.lab.outputs import write_report_files

ALISIO = Path(sys.executable).with_name("alisio")
EXAMPLE = Path(__file__).resolve().parents[3] / "examples/reports/baseline/report.json"
K = 4


def alisio(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ALISIO_CONFIG_HOME": str(cwd / "config"), "ALISIO_DATA_HOME": str(cwd / "data")}
    return subprocess.run(
        [str(ALISIO), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def record(task_id: str, rep: int, passed: bool, **extra: object) -> RunRecord:
    tools = tuple(extra.pop("tools", ("read_file", "run")))  # type: ignore[call-overload]
    wall = int(extra.pop("wall_ms", 1000))  # type: ignore[call-overload]
    measured = Measured(
        wall_ms=wall, turns=3, tool_calls=len(tools), compactions=0, usage_complete=False, tool_sequence=tools
    )
    status = extra.pop("status", RunStatus.PASS if passed else RunStatus.FAIL)
    check = VerifierResult(
        id="check",
        kind="command",
        status=VerifierStatus.PASS if passed else VerifierStatus.FAIL,
        detail=str(extra.pop("detail", "exit 0" if passed else "exit 1")),
    )
    return RunRecord(
        task_id=task_id,
        repetition=rep,
        seed=rep,
        status=status,
        verifiers=(check,),
        measured=measured,
        **extra,  # type: ignore[arg-type]
    )


def runs_of(index: int) -> list[RunRecord]:
    runs = [record("steady", rep, True) for rep in range(K)]
    runs += [record("broken", rep, False) for rep in range(K)]
    for rep in range(K):
        if index < 3:
            runs.append(record("timeout", rep, True))
        elif rep == 0 and index == 4:
            runs.append(record("timeout", rep, False, status=RunStatus.BUDGET_EXCEEDED, reason="maxWallMs"))
        else:
            runs.append(record("timeout", rep, False, detail="timed out after 30000 ms and was killed"))
        compacted = rep < 2
        incidents = (Incident(kind="compaction", message="compacted"),) if compacted else ()
        longer = {"tools": ("read_file", "edit_file", "run"), "wall_ms": 2000} if compacted else {}
        runs.append(record("compacted", rep, not compacted, incidents=incidents, **longer))
    return runs


def write_reports(tmp_path: Path, count: int = 5, version: str = "1.0.0") -> list[str]:
    base = msgspec.json.decode(EXAMPLE.read_bytes(), type=dict)["conditions"]
    base.update({"suiteId": "flappy", "suiteVersion": version, "k": K})
    conditions = msgspec.convert(base, Conditions)
    names = []
    for index in range(count):
        records = runs_of(index)
        directory = tmp_path / f"report-{index}"
        write_report_files(directory, build_report(records, conditions), records)
        names.append(directory.name)
    return names


def test_tasks_sorted_by_flip_rate_with_rates_and_hints(tmp_path: Path) -> None:
    names = write_reports(tmp_path)
    result = alisio(tmp_path, "eval", "stability", *names, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    order = [task["taskId"] for task in data["tasks"]]
    assert order == ["compacted", "timeout", "broken", "steady"]
    assert data["unstable"] == ["compacted", "timeout"]
    compacted, timeout, broken, steady = data["tasks"]
    assert (compacted["flips"], compacted["flipRate"], compacted["passes"], compacted["judged"]) == (
        5,
        1.0,
        10,
        20,
    )
    assert [r["why"] for r in compacted["reports"]] == ["mixed"] * 5
    assert compacted["hints"] == ["check in 10 of 10 failures", "fails only after compaction"]
    # timeout: 12 of 20 pooled, Wilson [0.387, 0.781]; the two failing reports (rate 0) moved out of it.
    assert (timeout["passes"], timeout["judged"]) == (12, 20)
    assert round(timeout["interval"]["low"], 3) == 0.387 and round(timeout["interval"]["high"], 3) == 0.781
    assert [r.get("why", "") for r in timeout["reports"]] == ["moved"] * 5
    assert timeout["flipRate"] == 1.0
    assert timeout["hints"] == ["check timeout in 7 of 8 failures", "maxWallMs in 1 of 8 failures"]
    assert broken["flipRate"] == 0.0 and steady["flipRate"] == 0.0 and "hints" not in broken
    # compacted's 20 runs: 10 of 3 tool calls in 2 s (read_file, edit_file, run), 10 of 2 in 1 s (read_file,
    # run): CV tool calls 0.513/2.5, CV wall 513/1500, similarity (90 pairs alike + 100 at 2·2/5) / 190
    alike = compacted["consistency"]
    assert "tokensCv" not in alike and alike["runs"] == 20
    assert round(alike["toolCallsCv"], 4) == round((5 / 19) ** 0.5 / 2.5, 4)
    assert round(alike["wallCv"], 4) == round(500 * (20 / 19) ** 0.5 / 1500, 4)
    assert round(alike["toolSimilarity"], 4) == round((90 + 100 * 0.8) / 190, 4)
    assert steady["consistency"]["toolSimilarity"] == 1.0 and steady["consistency"]["wallCv"] == 0.0
    text = alisio(tmp_path, "eval", "stability", *names)
    assert (
        "| task | flip rate | pooled | CV tokens | CV tool calls | CV wall time | tool-call similarity |"
        in text.stdout
    )
    assert "| compacted | 5/5 | 10/20 [0.30, 0.70] | n/a | 0.21 | 0.34 | 0.89 | 2/4 (mixed) |" in text.stdout
    assert "- timeout: check timeout in 7 of 8 failures; maxWallMs in 1 of 8 failures" in text.stdout


def test_quarantine_then_compare_excluding_them(tmp_path: Path) -> None:
    names = write_reports(tmp_path)
    result = alisio(tmp_path, "eval", "stability", *names, "--quarantine", "flaky.txt")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "flaky.txt").read_text() == "compacted\ntimeout\n"
    assert "quarantine: 2 unstable task ids in flaky.txt" in result.stderr
    compared = alisio(
        tmp_path, "eval", "compare", names[0], names[4], "--exclude-tasks", "flaky.txt", "--json"
    )
    assert compared.returncode == 0, compared.stderr
    data = json.loads(compared.stdout)
    assert sorted(task["taskId"] for task in data["tasks"]) == ["broken", "steady"]
    assert any(
        w.startswith("2 tasks left out by --exclude-tasks flaky.txt: compacted, timeout")
        for w in data["warnings"]
    )
    markdown = alisio(tmp_path, "eval", "compare", names[0], names[4], "--exclude-tasks", "flaky.txt")
    assert "- 2 tasks left out by --exclude-tasks flaky.txt: compacted, timeout" in markdown.stdout


def test_refusals_are_one_line(tmp_path: Path) -> None:
    names = write_reports(tmp_path, count=2)
    other = tmp_path / "other"
    other.mkdir()
    (other_name,) = write_reports(other, count=1, version="2.0.0")
    cases = [
        ((names[0],), "alisio eval stability: needs at least two reports of the same suite version"),
        (
            (names[0], f"other/{other_name}"),
            f"alisio eval stability: other/{other_name} is flappy 2.0.0, but {names[0]} is flappy 1.0.0: "
            "stability pools reports of one suite version",
        ),
    ]
    for args, message in cases:
        result = alisio(tmp_path, "eval", "stability", *args)
        assert result.returncode == 1 and result.stdout == ""
        assert result.stderr.strip() == message
    missing = alisio(tmp_path, "eval", "compare", names[0], names[1], "--exclude-tasks", "nope.txt")
    assert missing.returncode == 1
    assert (
        missing.stderr.strip()
        == "alisio eval compare: --exclude-tasks nope.txt: cannot read: No such file or directory"
    )
