"""The outputs table (``alisio.shell.lab.outputs``) is the one extension point for what a lab command writes.

- a row added to the table is checked at the pipeline's step 5 (before any run) and written at its step 10
  (after every run), and ``--force`` clears its file: nothing else has to list it;
- every file a lab command leaves in its report directory is a row of the table (or plan.json and the per-run
  folders): a file written somewhere else, forgotten in the table, fails here.

The pipeline runs in-process on the bundled tool-sequences suite with its scripted turns (no provider).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from alisio.shell.errors import CommandError
from alisio.shell.lab.model import ArmResult, Ui
from alisio.shell.lab.outputs import (
    OUTPUTS,
    REPORT_FILES,
    ArmOutput,
    Checked,
    CommandOutput,
    Done,
    Where,
    report_files,
)
from alisio.shell.lab.pipeline import run_request
from alisio.shell.lab.request import LabRequest, Output, Permissions, ProviderOptions, Selection

ROOT = Path(__file__).resolve().parents[3]
SUITE = ROOT / "suites" / "tool-sequences"
TASKS = ("read-edit-config", "move-file")


def _request(tmp_path: Path, out: Path, **kwargs: object) -> LabRequest:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "GITHUB_STEP_SUMMARY")}
    env.update(ALISIO_CONFIG_HOME=str(tmp_path / "config"), ALISIO_DATA_HOME=str(tmp_path / "data"))
    (tmp_path / "config").mkdir(exist_ok=True)
    defaults: dict[str, object] = {
        "selection": Selection(suite="tool-sequences", tasks=TASKS, k=2, yes=True),
        "provider": ProviderOptions(script=SUITE / "scripts"),
        "permissions": Permissions(write=True, process=True),
        "output": Output(out=out),
        "env": env,
        "jobs": 1,
    }
    defaults.update(kwargs)
    return LabRequest(**defaults)  # type: ignore[arg-type]


class Journal:
    """What happened, in order: the rows' checks and writes, and each run's start."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def ui(self) -> Ui:
        return Ui(
            say=lambda line: None,
            ask=lambda prompt: "n",
            interactive=False,
            on_run_start=lambda spec: self.events.append(f"run {spec.task_id} {spec.repetition}"),
        )


def _rows(journal: Journal, refuse: bool = False) -> tuple[ArmOutput, CommandOutput]:
    """A report file in each arm's directory (how many runs it holds) and a command output (a file a flag
    would name, here always ``tally.txt`` beside the report directory)."""

    def write_arm(arm: ArmResult, known: tuple[tuple[str, str], ...]) -> None:
        journal.events.append("write extra.txt")
        (arm.arm.directory / "extra.txt").write_text(f"{len(arm.records)} runs\n")

    def check(checked: Checked) -> None:
        journal.events.append("check --tally")
        if refuse:
            raise CommandError(f"--tally: refused for {checked.loaded.suite.suite_id}; nothing was run")

    def write(done: Done) -> None:
        journal.events.append("write --tally")
        passed = sum(record.status == "pass" for arm in done.arms for record in arm.records)
        (done.start.root.parent / "tally.txt").write_text(f"{passed} passed\n")

    return (
        ArmOutput("extra.txt", write_arm),
        CommandOutput("--tally", Where.FILE, lambda request: True, check, write),
    )


def test_a_row_added_to_the_table_is_checked_before_the_runs_and_written_after(tmp_path: Path) -> None:
    """A new row's check runs before the first run, its write after the last, with the runs' records."""
    journal = Journal()
    table = (*OUTPUTS, *_rows(journal))
    out = tmp_path / "out"
    outcome = run_request(_request(tmp_path, out), journal.ui(), table)
    runs = [event for event in journal.events if event.startswith("run ")]
    assert len(runs) == 4
    assert journal.events[0] == "check --tally"
    assert journal.events[-2:] == ["write extra.txt", "write --tally"]
    assert (out / "extra.txt").read_text() == "4 runs\n"
    passed = sum(record.status == "pass" for record in outcome.records)
    assert (tmp_path / "tally.txt").read_text() == f"{passed} passed\n"
    assert {"report.json", "report.md", "report.html", "runs.jsonl"} <= {p.name for p in out.iterdir()}


def test_a_row_whose_check_fails_stops_the_command_before_any_run(tmp_path: Path) -> None:
    """The row's CommandError is the command's: no run starts, no output is written."""
    journal = Journal()
    out = tmp_path / "out"
    with pytest.raises(CommandError) as raised:
        run_request(_request(tmp_path, out), journal.ui(), (*OUTPUTS, *_rows(journal, refuse=True)))
    assert raised.value.lines == ("--tally: refused for tool-sequences; nothing was run",)
    assert journal.events == ["check --tally"]
    assert not (out / "report.json").exists()


def test_force_clears_the_file_of_a_new_row_and_refuses_it_without(tmp_path: Path) -> None:
    """``--out`` holding the new row's file holds a report: refused, then cleared by ``--force`` (which refuses
    a directory holding a file no report wrote)."""
    journal = Journal()
    table = (*OUTPUTS, *_rows(journal))
    assert "extra.txt" in report_files(table) and "extra.txt" not in REPORT_FILES
    out = tmp_path / "out"
    out.mkdir()
    (out / "extra.txt").write_text("stale\n")
    (out / "notes.txt").write_text("mine\n")
    with pytest.raises(CommandError) as raised:
        run_request(_request(tmp_path, out), journal.ui(), table)
    assert raised.value.lines[0].startswith(f"--out {out} already holds a report (extra.txt): pass --force")
    assert (out / "extra.txt").read_text() == "stale\n"
    forced = _request(tmp_path, out, output=Output(out=out, force=True))
    with pytest.raises(CommandError) as raised:  # a file no report wrote: --force refuses the directory whole
        run_request(forced, journal.ui(), table)
    assert "holds files no alisio report wrote (notes.txt)" in raised.value.lines[0]
    assert (out / "extra.txt").read_text() == "stale\n" and (out / "notes.txt").read_text() == "mine\n"
    (out / "notes.txt").unlink()
    run_request(forced, journal.ui(), table)
    assert (out / "extra.txt").read_text() == "4 runs\n"


def _files(directory: Path) -> set[str]:
    return {path.name for path in directory.iterdir() if path.is_file()}


def test_every_file_a_command_leaves_in_its_report_directory_is_a_row_of_the_table(tmp_path: Path) -> None:
    """eval variants (two arms, the comparison, --junit, the step summary): each file in the report
    directories is one of ``REPORT_FILES``, and every row that applies was written."""
    compare = tmp_path / "compare.json"
    document = {
        "suite": "tool-sequences",
        "variants": [
            {"id": "a", "overrides": {}},
            {"id": "b", "overrides": {"limits.maxContextChars": 150000}},
        ],
    }
    compare.write_text(json.dumps(document))
    out, junit, summary = tmp_path / "out", tmp_path / "ci" / "junit.xml", tmp_path / "summary.md"
    request = _request(
        tmp_path, out, output=Output(out=out, junit=junit, step_summary=True), variants_file=compare
    )
    request.env["GITHUB_STEP_SUMMARY"] = str(summary)
    outcome = run_request(request, Journal().ui())
    assert outcome.problems == () and outcome.notes == (f"junit: {junit}",)
    in_root = {o.name for o in OUTPUTS if isinstance(o, CommandOutput) and o.where is Where.ROOT}
    in_arm = {o.name for o in OUTPUTS if isinstance(o, ArmOutput)}
    assert _files(out) - {"plan.json"} == in_root
    assert {path.name for path in out.iterdir() if path.is_dir()} == {"a", "b"}
    for arm in ("a", "b"):
        assert _files(out / arm) == in_arm
        assert {path.name for path in (out / arm).iterdir() if path.is_dir()} <= {"runs"}
    assert set(REPORT_FILES) == in_root | in_arm | {"plan.json"}
    assert junit.read_text().count("<testsuite ") == 2
    text = summary.read_text()
    assert text.startswith("### alisio eval variants: tool-sequences\n")
    assert (
        "\n| a | alisio " in text and "\n| b | alisio " in text and "#### a → b" in text
    )  # agent, then config
