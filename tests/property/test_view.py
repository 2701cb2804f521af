"""Properties of alisio.core.lab.outputs.view and report.md's list of the runs that did not pass."""

from __future__ import annotations

import re
import shlex

import msgspec
from hypothesis import example, given
from hypothesis import strategies as st

from alisio.core.lab.outputs.failing import (
    DETAIL_LINES,
    LINE_CHARS,
    failing_runs,
    group_failures,
    shell_word,
    show_command,
)
from alisio.core.lab.outputs.render import render_markdown
from alisio.core.lab.outputs.view import FAILING_SHOWN, run_grid, variant_grid
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.runs.records import RunRecord, RunStatus, VerifierResult, VerifierStatus
from tests.property.strategies_html import KNOWN, SECRET, arm_records
from tests.property.strategies_report import conditions, task_runs


@given(arm_records())
def test_failing_runs_are_exactly_the_runs_that_did_not_pass(records: tuple[RunRecord, ...]) -> None:
    """Every fail, budget_exceeded and error run once, in task and repetition order, with its command."""
    runs, total = failing_runs(records, "run-1", KNOWN)
    expected = sorted((r.task_id, r.repetition) for r in records if r.status is not RunStatus.PASS)
    assert [(run.task_id, run.repetition) for run in runs] == expected
    assert total == len(expected)
    for run in runs:
        assert run.show == f"alisio eval show run-1 --task {run.task_id} --rep {run.repetition}"


@given(arm_records())
def test_failing_verifiers_show_the_first_lines_of_their_details_redacted(
    records: tuple[RunRecord, ...],
) -> None:
    """Only verifiers that did not pass are listed; at most DETAIL_LINES lines of LINE_CHARS; no secret."""
    runs, _ = failing_runs(records, "run-1", KNOWN)
    by_key = {(r.task_id, r.repetition): r for r in records}
    for run in runs:
        record = by_key[run.task_id, run.repetition]
        assert [v.id for v in run.verifiers] == [
            v.id for v in record.verifiers if v.status is not VerifierStatus.PASS
        ]
        for v in run.verifiers:
            assert len(v.detail) <= DETAIL_LINES
            assert all(len(line) <= LINE_CHARS and line.strip() for line in v.detail)
            assert all(SECRET not in line for line in v.detail)
        assert all(SECRET not in e for e in run.errors)


def test_a_seven_line_detail_shows_five_and_counts_the_rest() -> None:
    """A verifier detail of seven lines shows the first five and says two more."""
    detail = "\n".join(f"line {i}" for i in range(1, 8))
    record = task_runs("a", 0, 1)[0]
    record = RunRecord(
        task_id="a",
        repetition=0,
        seed=0,
        status=RunStatus.FAIL,
        verifiers=(VerifierResult(id="check", kind="command", status=VerifierStatus.FAIL, detail=detail),),
        measured=record.measured,
    )
    (run,), total = failing_runs([record], "r")
    assert total == 1
    assert run.verifiers[0].detail == tuple(f"line {i}" for i in range(1, 6))
    assert run.verifiers[0].more_lines == 2


@given(arm_records(), st.integers(1, 6))
def test_the_grid_has_a_cell_per_planned_run(records: tuple[RunRecord, ...], k: int) -> None:
    """Every record's status is in its (task, repetition) cell; other cells have none; rows are as wide as
    k or the highest repetition."""
    tasks = sorted({r.task_id for r in records})
    grid = run_grid(tasks, records, k)
    width = max([k, *(r.repetition + 1 for r in records)])
    assert [row.task_id for row in grid] == tasks
    status = {(r.task_id, r.repetition): r.status for r in records}
    for row in grid:
        assert [c.repetition for c in row.cells] == list(range(width))
        for cell in row.cells:
            assert cell.status == status.get((row.task_id, cell.repetition))


@given(arm_records(), arm_records())
def test_the_variant_grid_interleaves_each_repetition(
    a: tuple[RunRecord, ...], b: tuple[RunRecord, ...]
) -> None:
    """Per task, repetition r holds baseline's then candidate's run r, each with its own status."""
    tasks = sorted({r.task_id for r in a + b})
    grid = variant_grid(tasks, [("baseline", a), ("candidate", b)], 5)
    status = {("baseline", r.task_id, r.repetition): r.status for r in a}
    status |= {("candidate", r.task_id, r.repetition): r.status for r in b}
    for row in grid:
        assert [(c.variant, c.repetition) for c in row.cells[:2]] == [("baseline", 0), ("candidate", 0)]
        for cell in row.cells:
            assert cell.variant is not None
            assert cell.status == status.get((cell.variant, row.task_id, cell.repetition))


@given(st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=40))
@example("it's; rm -rf / $(x) `y`")
def test_a_shell_word_is_one_word(text: str) -> None:
    """shell_word(s) reads back as exactly [s] in a POSIX shell."""
    assert shlex.split(shell_word(text)) == [text]


def test_the_show_command_quotes_what_a_shell_would_split() -> None:
    """A plain run id stays as it is; one with a space is quoted."""
    assert show_command("2026-11-29T20-20-02-066Z", "fix-add", 2) == (
        "alisio eval show 2026-11-29T20-20-02-066Z --task fix-add --rep 2"
    )
    assert show_command("my run", "a", 0) == "alisio eval show 'my run' --task a --rep 0"


def _listed(section: str) -> list[tuple[str, int]]:
    """The runs report.md's section names: in a one-run heading, or on a group's ``Runs:`` line."""
    listed = [(m[1], int(m[2])) for m in re.finditer(r"^### (\S+) rep (\d+): ", section, re.MULTILINE)]
    for line in re.findall(r"^Runs: (.*)\.$", section, re.MULTILINE):
        for part in line.split("; "):
            task, _, reps = part.rpartition(" rep ")
            listed += [(task, int(rep)) for rep in reps.split(", ")]
    return listed


@given(arm_records())
def test_report_md_lists_the_runs_that_did_not_pass(records: tuple[RunRecord, ...]) -> None:
    """With records, report.md has the section iff some run did not pass, naming each such run once (alone,
    or in the group of runs with its message) with the command that opens it or its group's first;
    untrusted details sit in fences longer than any backtick run inside them; no secret appears."""
    text = render_markdown(build_report(records, conditions()), records, KNOWN)
    failing = [r for r in records if r.status is not RunStatus.PASS]
    assert ("## Runs that did not pass" in text) == bool(failing)
    section = text.partition("## Runs that did not pass")[2]
    assert sorted(_listed(section)) == sorted((r.task_id, r.repetition) for r in failing)
    groups = group_failures(failing_runs(records, "run-1", KNOWN)[0])
    for group in groups:
        run = group.first
        assert f"`alisio eval show run-1 --task {run.task_id} --rep {run.repetition}`" in section
    assert section.count("alisio eval show") == len(groups)
    assert SECRET not in text
    for block in re.finditer(r"^(`{3,})text\n(.*?)\n\1$", section, flags=re.MULTILINE | re.DOTALL):
        fence, body = block.group(1), block.group(2)
        assert fence not in body
        assert all(line.startswith(("check: ", "scope: ", "seq: ", "error: ")) for line in body.splitlines())


def test_runs_with_the_same_message_are_listed_once() -> None:
    """A task's runs failing one way are one entry, "a, 3 runs: fail: check: exit 1", naming each run; a run
    failing another way, or another task's, has its own."""
    same = VerifierResult(id="check", kind="command", status=VerifierStatus.FAIL, detail="exit 1\nboom")
    other = VerifierResult(id="check", kind="command", status=VerifierStatus.FAIL, detail="exit 2")
    records = [
        msgspec.structs.replace(r, verifiers=(other if (r.task_id, r.repetition) == ("b", 1) else same,))
        for r in (*task_runs("a", 0, 3), *task_runs("b", 0, 3))
    ]
    text = render_markdown(build_report(records, conditions()), records)
    assert "6 runs did not pass" in text
    assert "### a, 3 runs: fail: check: exit 1\n\nRuns: a rep 0, 1, 2.\n" in text
    assert "### b, 2 runs: fail: check: exit 1\n\nRuns: b rep 0, 2.\n" in text
    assert "### b rep 1: fail\n" in text
    assert text.count("check: boom") == 2
    assert "Open the first: `alisio eval show run-1 --task a --rep 0`" in text


def test_report_md_without_records_lists_no_run() -> None:
    """report.md rendered from a report alone (no records) says nothing about single runs."""
    records = task_runs("a", 1, 2)
    assert "Runs that did not pass" not in render_markdown(build_report(records, conditions()))
    listed = render_markdown(build_report(records, conditions()), records)
    assert "2 runs did not pass" in listed and "### a, 2 runs: fail\n\nRuns: a rep 1, 2." in listed


def test_report_md_cuts_the_list_and_counts_the_rest() -> None:
    """Past FAILING_SHOWN groups of runs, report.md counts the others instead of listing them."""
    records = [
        msgspec.structs.replace(
            r,
            verifiers=(
                VerifierResult(id="check", kind="command", status=VerifierStatus.FAIL, detail=str(i)),
            ),
        )
        for i, r in enumerate(task_runs("a", 0, FAILING_SHOWN + 7))
    ]
    text = render_markdown(build_report(records, conditions(k=FAILING_SHOWN + 7)), records)
    assert text.count("\n### a rep ") == FAILING_SHOWN
    assert f"{FAILING_SHOWN + 7} runs did not pass" in text
    assert "7 more runs did not pass: see runs.jsonl." in text
