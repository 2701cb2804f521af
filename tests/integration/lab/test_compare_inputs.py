"""``eval compare`` and ``eval show`` on what users hand them: reports of any two modes, run ids (``latest``, a
unique prefix), report directories, report.json files and ``eval export`` bundles; one line when it is none."""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec
import pytest

from alisio.core.lab.outputs.formats import SCRIPTED_PROVIDER
from alisio.core.lab.reports.report import AnswerSource
from alisio.core.lab.reports.report_build import build_report
from alisio.shell.lab.outputs import write_report_files
from tests.integration.inprocess import alisio, in_process_home
from tests.property.strategies_report import conditions, task_runs

ENDPOINT = "http://127.0.0.1:8080/v1"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    return in_process_home(tmp_path, monkeypatch, capsys)


def write(directory: Path, mode: str, run_id: str = "run-1") -> Path:
    """A report as ``mode`` writes it: live with an endpoint, replay and scripted without one."""
    cond = conditions(
        mode=AnswerSource.REPLAY if mode == "replay" else AnswerSource.LIVE,
        provider={"replay": "replay", "scripted": SCRIPTED_PROVIDER}.get(mode, "openai-compat"),
        endpoint=ENDPOINT if mode == "live" else None,
    )
    records = task_runs("alpha", 4, 1) + task_runs("beta", 2, 3)
    write_report_files(
        directory, build_report(records, msgspec.structs.replace(cond, run_id=run_id)), records
    )
    return directory


@pytest.mark.parametrize(("base", "cand"), [("live", "replay"), ("scripted", "live"), ("live", "scripted")])
def test_a_live_report_compares_with_a_replay_or_scripted_one(home: Path, base: str, cand: str) -> None:
    """One side records an endpoint, the other none: Markdown, --json and --html all answer, exit 0, and the
    side without one says "not recorded" (was: a zip() traceback)."""
    b, c = write(home / "b", base), write(home / "c", cand)
    md = alisio(home, "eval", "compare", b, c, "--html", home / "cmp.html")
    assert md.returncode == 0, md.stderr
    assert "Traceback" not in md.stderr
    expect = (ENDPOINT, "not recorded") if base == "live" else ("not recorded", ENDPOINT)
    assert f"| Endpoint | {expect[0]} | {expect[1]} |" in md.stdout
    assert "not recorded" in (home / "cmp.html").read_text()
    js = alisio(home, "eval", "compare", b / "report.json", c / "report.json", "--json")
    assert js.returncode == 0, js.stderr
    assert json.loads(js.stdout)["candidate"].get("endpoint") == (ENDPOINT if cand == "live" else None)


def _stored(home: Path, run_id: str, mode: str = "live") -> Path:
    directory = write(home / "data" / "eval" / run_id, mode, run_id)
    return directory


def test_compare_takes_run_ids_latest_and_unique_prefixes(home: Path) -> None:
    """Run ids as ``eval runs`` prints them, ``latest`` and a unique prefix name stored runs; an ambiguous
    prefix and an unknown id are one line each, exit 1."""
    old = _stored(home, "2026-01-01T10-00-00-000Z")
    new = _stored(home, "2026-01-02T10-00-00-000Z", "scripted")
    os.utime(old, (1_000_000, 1_000_000))
    by_id = alisio(home, "eval", "compare", "2026-01-01T10-00-00-000Z", "latest", "--json")
    assert by_id.returncode == 0, by_id.stderr
    sides = json.loads(by_id.stdout)
    assert (sides["baseline"]["runId"], sides["candidate"]["runId"]) == (old.name, new.name)
    prefix = alisio(home, "eval", "compare", "2026-01-01", "2026-01-02T1", "--json")
    assert prefix.returncode == 0, prefix.stderr
    assert json.loads(prefix.stdout)["candidate"]["runId"] == new.name
    ambiguous = alisio(home, "eval", "compare", "2026-01", "latest")
    assert ambiguous.returncode == 1
    assert ambiguous.stderr.strip().splitlines() == [
        "alisio eval compare: run id 2026-01 is ambiguous: 2 runs start with it "
        "(2026-01-01T10-00-00-000Z, 2026-01-02T10-00-00-000Z)"
    ]
    unknown = alisio(home, "eval", "compare", "2025", "latest")
    assert unknown.returncode == 1 and "no run 2025 in" in unknown.stderr and "most recent:" in unknown.stderr


def test_compare_and_show_read_an_export_bundle(home: Path) -> None:
    """``eval export`` writes a bundle; compare takes it as either side, show opens its runs (not "Object
    missing required field `conditions`")."""
    _stored(home, "2026-01-01T10-00-00-000Z")
    other = write(home / "other", "live")
    bundle = home / "run.json"
    exported = alisio(home, "eval", "export", "latest", "--out", bundle)
    assert exported.returncode == 0, exported.stderr
    compared = alisio(home, "eval", "compare", bundle, other)
    assert compared.returncode == 0, compared.stderr
    assert "| alpha |" in compared.stdout and "conditions" not in compared.stderr
    shown = alisio(home, "eval", "show", bundle)
    assert shown.returncode == 0, shown.stderr
    # what names the run first: this bundle's report predates the agent in the conditions
    assert shown.stdout.startswith("Agent: unknown (not recorded)\nalpha rep 4: fail, 4 turns, 6 tool calls")
    assert "(no transcript was kept for this run" in shown.stdout
    missing = alisio(home, "eval", "show", bundle, "--task", "nope")
    assert missing.returncode == 1
    assert (
        missing.stderr.strip()
        == f"alisio eval show: {bundle}: no task 'nope' in this report (tasks: alpha, beta)"
    )


@pytest.mark.parametrize("command", [("eval", "show"), ("eval", "export"), ("eval", "run", "--resume")])
def test_a_missing_path_is_no_such_directory_not_an_invalid_run_id(
    home: Path, command: tuple[str, ...]
) -> None:
    """A path that does not exist says "no such directory"; an existing directory without a report says
    "no report here"; neither calls it an invalid run id."""
    extra = ("--out", str(home / "b.json")) if "export" in command else ()
    missing = alisio(home, *command, "./no/such/run", *extra)
    assert missing.returncode == 1
    assert "./no/such/run: no such directory" in missing.stderr and "invalid run id" not in missing.stderr
    (home / "empty").mkdir()
    empty = alisio(home, *command, home / "empty", *extra)
    assert empty.returncode == 1
    assert f"{home / 'empty'}: no report here" in empty.stderr and "invalid run id" not in empty.stderr


def test_compare_of_a_file_that_is_no_report_names_it(home: Path) -> None:
    """A JSON file that is neither a report nor a bundle, and a missing one: one line naming the file."""
    b = write(home / "b", "live")
    (home / "x.json").write_text('{"hello": 1}')
    wrong = alisio(home, "eval", "compare", b, home / "x.json")
    assert wrong.returncode == 1
    assert wrong.stderr.startswith(f"alisio eval compare: {home / 'x.json'}: not an alisio report")
    gone = alisio(home, "eval", "compare", b, home / "gone.json")
    assert gone.returncode == 1
    assert gone.stderr.strip() == f"alisio eval compare: {home / 'gone.json'}: no such file or directory"


def test_show_opens_the_first_non_passing_run_in_task_and_repetition_order(home: Path) -> None:
    """runs.jsonl in the order runs finished (beta 0, alpha 1, alpha 0): ``eval show`` with no --task/--rep
    opens alpha rep 1, the first non-passing run as report.md lists them; one turn reads "1 turn"."""
    from alisio.core.lab.runs.records import RunStatus

    one = [msgspec.structs.replace(r, measured=msgspec.structs.replace(r.measured, turns=1, tool_calls=1))
           for r in task_runs("alpha", 1, 1)]  # fmt: skip
    records = [*task_runs("beta", 0, 1), one[1], one[0]]
    assert [r.status for r in records] == [RunStatus.FAIL, RunStatus.FAIL, RunStatus.PASS]
    cond = conditions()
    write_report_files(home / "r", build_report(records, cond), records)
    shown = alisio(home, "eval", "show", home / "r")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(
        "Agent: unknown (not recorded)\nalpha rep 1: fail, 1 turn, 1 tool call, 31.0 s\n"
    )
    assert alisio(home, "eval", "show", home / "r" / "report.json").stdout == shown.stdout  # its directory
