"""``alisio eval compare`` through the installed command, on report files written by the core and alisio.shell.lab.store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from alisio.core.lab.reports.report import Rates
from alisio.core.lab.reports.report_build import build_report
from alisio.shell.lab.outputs import write_report_files
from alisio.shell.lab.store import read_report, read_runs
from tests.integration import helpers
from tests.integration.helpers import write
from tests.property.strategies_report import conditions, task_runs

ALISIO = Path(sys.executable).with_name("alisio")
REPO = Path(__file__).resolve().parents[3]


def alisio(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return helpers.alisio(None, *args, cwd=REPO)


def five_outcomes(tmp_path: Path) -> tuple[Path, Path]:
    """A baseline and a candidate whose tasks are improved, regressed, inconclusive, low power, not comparable."""
    rates = Rates(input_rate=1.0, output_rate=4.0)
    base = write(
        tmp_path / "base",
        task_runs("up", 1, 9)
        + task_runs("down", 10)
        + task_runs("same", 6, 4)
        + task_runs("few", 0, 4)
        + task_runs("err", 5, 5),
        k=10,
        rates=rates,
    )
    cand = write(
        tmp_path / "cand",
        task_runs("up", 9, 1, wall_ms=20_000)
        + task_runs("down", 3, 7)
        + task_runs("same", 7, 3)
        + task_runs("few", 4)
        + task_runs("err", 5, 4, errors=1),
        k=10,
        rates=rates,
        harness_version="0.2.0",
    )
    return base, cand


def test_markdown_names_each_verdict_with_its_numbers(tmp_path: Path) -> None:
    """Directories as arguments: exit 0, each task's verdict with its counts and intervals, and the footnote."""
    base, cand = five_outcomes(tmp_path)
    result = alisio("eval", "compare", base, cand)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "| up | **improved** | 1/10: 10.0% [1.8%, 40.4%] | 9/10: 90.0% [59.6%, 98.2%] |" in out
    assert "| down | **regressed** | 10/10: 100.0% [72.2%, 100.0%] | 3/10: 30.0% [10.8%, 60.3%] |" in out
    assert "| same | inconclusive | 6/10: 60.0% [31.3%, 83.2%] | 7/10: 70.0% [39.7%, 89.2%] |" in out
    assert "| few | low power | 0/4: 0.0% [0.0%, 49.0%] | 4/4: 100.0% [51.0%, 100.0%] |" in out
    assert "| err | not comparable | 5/10: 50.0% [23.7%, 76.3%] | 5/9, 1 error:" in out
    assert "Outcomes: 1 improved, 1 regressed, 1 inconclusive, 1 low power, 1 not comparable." in out
    assert "harness version differs: 0.1.0 -> 0.2.0" in out
    assert "not a significance test" in out and "no difference detectable with this many runs" in out
    assert result.stderr == ""


def test_json_output_parses_and_carries_the_verdicts(tmp_path: Path) -> None:
    """--json on report.json paths prints one JSON comparison on stdout with outcomes and deltas."""
    base, cand = five_outcomes(tmp_path)
    result = alisio("eval", "compare", base / "report.json", cand / "report.json", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    outcomes = {t["taskId"]: t["outcome"] for t in data["tasks"]}
    assert outcomes == {
        "down": "regressed",
        "err": "not_comparable",
        "few": "low_power",
        "same": "inconclusive",
        "up": "improved",
    }
    up = next(t for t in data["tasks"] if t["taskId"] == "up")
    assert round(up["successRate"]["delta"], 6) == 0.8
    assert up["wallMsMedian"]["delta"] < 0
    assert "costPerSuccessUsd" in up and data["summary"]["errored"] == [0, 1]
    assert any("not a significance test" in line for line in data["limits"])


def test_incompatible_suites_exit_3_with_one_line(tmp_path: Path) -> None:
    """Different suiteVersion: exit 3, nothing on stdout, one line on stderr naming both versions."""
    base = write(tmp_path / "a", task_runs("t", 5), suite_version="1.0.0")
    cand = write(tmp_path / "b", task_runs("t", 5), suite_version="1.1.0")
    result = alisio("eval", "compare", base, cand)
    assert result.returncode == 3
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "1.0.0" in lines[0] and "1.1.0" in lines[0]


def test_unreadable_input_exits_1_naming_the_file(tmp_path: Path) -> None:
    """Missing file, not JSON, not a report: exit 1, one stderr line naming the file, never a traceback."""
    good = write(tmp_path / "good", task_runs("t", 5))
    (tmp_path / "junk.json").write_text("{not json")
    (tmp_path / "other.json").write_text('{"hello": "world"}')
    (tmp_path / "empty").mkdir()
    cases = {
        tmp_path / "missing.json": "no such file",
        tmp_path / "junk.json": "not valid JSON",
        tmp_path / "other.json": "not an alisio report",
        tmp_path / "empty": "no report here",
    }
    for path, what in cases.items():
        result = alisio("eval", "compare", good, path)
        assert result.returncode == 1, (path, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert str(path) in lines[0] and what in lines[0]
        assert "Traceback" not in result.stderr and result.stdout == ""


def test_missing_argument_is_a_usage_error_exit_1() -> None:
    """A forgotten candidate is a usage error: exit 1 (2 would read as a replay divergence)."""
    result = alisio("eval", "compare", "only-one")
    assert result.returncode == 1


def test_report_files_round_trip_and_leave_no_temporary_files(tmp_path: Path) -> None:
    """write_report_files writes the three files atomically; they read back equal; no temp files remain."""
    records = task_runs("t", 3, 1, errors=1, cached_input_tokens=500)
    report = build_report(records, conditions())
    write_report_files(tmp_path / "out", report, records)
    write_report_files(tmp_path / "out", report, records)  # overwriting replaces, never appends
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["report.html", "report.json", "report.md", "runs.jsonl"]
    assert read_report(tmp_path / "out").unwrap() == report
    assert read_runs(tmp_path / "out").unwrap() == tuple(records)
    assert "# Eval report: demo 1.0.0 (live)" in (tmp_path / "out" / "report.md").read_text()


def test_the_demo_example_tells_its_story() -> None:
    """`make demo`'s committed examples: exit 0, one improved, one regressed, four inconclusive, one not comparable."""
    result = alisio("eval", "compare", "examples/reports/baseline", "examples/reports/candidate")
    assert result.returncode == 0, result.stderr
    assert "Outcomes: 1 improved, 1 regressed, 4 inconclusive, 1 not comparable." in result.stdout
    assert (
        "| rename-symbol | **improved** | 1/10: 10.0% [1.8%, 40.4%] | 9/10: 90.0% [59.6%, 98.2%] |"
        in result.stdout
    )
    assert "not reported → " in result.stdout  # cached input reported by the candidate only


def test_the_examples_are_reproducible(tmp_path: Path) -> None:
    """examples/make_reports.py regenerates the committed example reports byte for byte."""
    subprocess.run(
        [sys.executable, str(REPO / "examples" / "make_reports.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    for side in ("baseline", "candidate"):
        for name in ("report.json", "report.md", "runs.jsonl"):
            committed = (REPO / "examples" / "reports" / side / name).read_bytes()
            assert (tmp_path / side / name).read_bytes() == committed, f"{side}/{name} is stale"


def test_a_report_from_a_newer_schema_is_refused_not_misread(tmp_path: Path) -> None:
    """A report.json whose schemaVersion is newer than ours: exit 1, one line naming the file and the version."""
    good = write(tmp_path / "good", task_runs("t", 5))
    data = json.loads((good / "report.json").read_text())
    data["schemaVersion"] = 2
    data["somethingNew"] = {"x": 1}
    future = tmp_path / "future.json"
    future.write_text(json.dumps(data))
    result = alisio("eval", "compare", good, future)
    assert result.returncode == 1, result.stdout
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(future) in lines[0]
    assert "schemaVersion 2 is newer than this alisio reads (1)" in lines[0]


def test_runs_jsonl_from_a_newer_schema_is_refused_naming_the_line(tmp_path: Path) -> None:
    """read_runs refuses a run record with a newer schemaVersion and names its line; unknown fields still load."""
    good = write(tmp_path / "good", task_runs("t", 2))
    lines = (good / "runs.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["extraField"] = "ignored"
    second = json.loads(lines[1])
    second["schemaVersion"] = 7
    (good / "runs.jsonl").write_text(json.dumps(first) + "\n")
    assert len(read_runs(good).unwrap()) == 1
    (good / "runs.jsonl").write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    error = read_runs(good).failure()
    assert "line 2: schemaVersion 7 is newer" in str(error)


def test_verdict_exact_decides_from_holm_adjusted_boschloo(tmp_path: Path) -> None:
    """--verdict exact --json: the rule is recorded, up/down get directions from the Holm-adjusted p-values,
    every task carries its Newcombe interval and p-values, and the Markdown names the rule."""
    base, cand = five_outcomes(tmp_path)
    result = alisio("eval", "compare", base, cand, "--verdict", "exact", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (
        data["verdictRule"] == "exact"
        and data["verdicts"] == "Holm-adjusted Boschloo exact test, family-wise 5%"
    )
    tasks = {t["taskId"]: t for t in data["tasks"]}
    assert {name: t["outcome"] for name, t in tasks.items()} == {
        "down": "regressed",
        "err": "not_comparable",
        "few": "low_power",
        "same": "inconclusive",
        "up": "improved",
    }
    up = tasks["up"]["difference"]
    assert (
        round(up["estimate"], 6) == 0.8
        and up["interval"]["low"] > 0
        and up["pValue"] < up["pAdjusted"] < 0.05
    )
    assert "pAdjusted" not in tasks["few"]["difference"] and data["summary"]["tasksTested"] == 3
    assert data["summary"]["paired"]["pMethod"] == "exact" and data["summary"]["paired"]["resamples"] > 1
    markdown = alisio("eval", "compare", base, cand, "--verdict", "exact")
    assert "Verdicts: Holm-adjusted Boschloo exact test, family-wise 5%." in markdown.stdout
    # The row shows the interval that inverts the test (Newcombe's, [+37.0, +91.6], stays in --json).
    assert "| up | +80.0 pp [+36.6, +96.6] |" in markdown.stdout
    assert "Δ [exact 95%, inverts the test]: " in markdown.stdout
    assert round(up["exactInterval"]["low"], 4) == 0.3660 and round(up["interval"]["low"], 4) == 0.3699
    default = alisio("eval", "compare", base, cand)
    assert "Verdicts: disjoint 95% Wilson intervals (the default)." in default.stdout


def test_the_exact_interval_agrees_with_the_test_where_newcombe_does_not(tmp_path: Path) -> None:
    """Issue 19's example, 0/5 against 3/5 (Boschloo p = 0.0618): by default the row shows Newcombe's
    [+3.0, +88.2], which excludes 0, and says the test decides; under --verdict exact it shows the interval
    that inverts Boschloo's test, [-3.0, +100.0], which includes 0, next to "inconclusive". Two tasks at
    10/10 against 6/10 (p = 0.0422 each, Holm 0.1266 over the three): their exact intervals exclude 0 but the adjusted p
    decides, and the row says so."""
    base = write(tmp_path / "base", task_runs("edge", 0, 5) + task_runs("a", 10) + task_runs("b", 10), k=10)
    cand = write(
        tmp_path / "cand", task_runs("edge", 3, 2) + task_runs("a", 6, 4) + task_runs("b", 6, 4), k=10
    )
    default = alisio("eval", "compare", base, cand, "--format", "md")
    assert default.returncode == 0, default.stderr
    assert "| edge | +60.0 pp [+3.0, +88.2] (interval and test disagree: the test decides) | 0.0618 |" in (
        default.stdout
    )
    exact = alisio("eval", "compare", base, cand, "--verdict", "exact", "--format", "md")
    assert exact.returncode == 0, exact.stderr
    assert "| edge | inconclusive |" in exact.stdout
    assert "| edge | +60.0 pp [-3.0, +100.0] | 0.0618 |" in exact.stdout
    mark = "(excludes 0 before the Holm adjustment; the adjusted p decides)"
    assert "| a | -40.0 pp [-100.0, -1.6] " + mark + " | 0.0422 | 0.1266 |" in exact.stdout
    data = json.loads(alisio("eval", "compare", base, cand, "--verdict", "exact", "--json").stdout)
    edge = next(t for t in data["tasks"] if t["taskId"] == "edge")["difference"]
    assert edge["interval"]["low"] > 0 and not edge["intervalAgrees"]
    assert round(edge["exactInterval"]["low"], 4) == -0.0298 and edge["exactInterval"]["high"] == 1.0
    plain = json.loads(alisio("eval", "compare", base, cand, "--json").stdout)
    assert all("exactInterval" not in t.get("difference", {}) for t in plain["tasks"])


def test_an_unknown_verdict_rule_is_one_line_exit_1(tmp_path: Path) -> None:
    """--verdict exat or --adjust bonferroni: exit 1, one stderr line naming the flag and the choices."""
    good = write(tmp_path / "good", task_runs("t", 5))
    for flag, value, choices in (
        ("--verdict", "exat", "disjoint or exact"),
        ("--adjust", "bonf", "holm or bh"),
    ):
        result = alisio("eval", "compare", good, good, flag, value)
        assert result.returncode == 1 and result.stdout == ""
        assert result.stderr.strip() == f"alisio eval compare: {flag}: expected {choices}, got '{value}'"


def test_the_non_inferiority_gate(tmp_path: Path) -> None:
    """--fail-on worse-than:0.1: exit 0 when every task with a verdict is shown at most 10 points worse, exit 4
    naming the task that is not (a 10-point drop at 50 runs), and a bad margin is one line, exit 1."""
    base = write(tmp_path / "b", task_runs("a", 49, 1) + task_runs("b", 50) + task_runs("c", 45, 5), k=50)
    good = write(tmp_path / "g", task_runs("a", 49, 1) + task_runs("b", 50) + task_runs("c", 46, 4), k=50)
    worse = write(tmp_path / "w", task_runs("a", 49, 1) + task_runs("b", 50) + task_runs("c", 35, 15), k=50)
    passed = alisio("eval", "compare", base, good, "--fail-on", "worse-than:0.1", "--format", "summary")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "--fail-on worse-than:0.1: not hit (0 of 3 tasks with a verdict)" in passed.stdout
    hit = alisio("eval", "compare", base, worse, "--fail-on", "worse-than:0.1")
    assert hit.returncode == 4
    assert (
        "--fail-on worse-than:0.1: hit by 1 of 3 tasks with a verdict (c not shown within 10 pp" in hit.stderr
    )
    bad = alisio("eval", "compare", base, good, "--fail-on", "worse-than:2")
    assert bad.returncode == 1 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1
    assert "--fail-on worse-than:2: the margin must be in (0, 1)" in bad.stderr
    few_b = write(tmp_path / "fb", task_runs("a", 2, 1), k=3)  # 3 judged runs: below compare's gate of 5
    few_c = write(tmp_path / "fc", task_runs("a", 3), k=3)
    nothing = alisio("eval", "compare", few_b, few_c, "--fail-on", "worse-than:0.1")
    assert nothing.returncode == 4, nothing.stdout + nothing.stderr  # nothing shown non-inferior: never green
    assert "every task has too few judged runs to be shown within 10 pp" in nothing.stderr


def test_an_output_that_cannot_be_written_says_nothing_was_written_not_run(tmp_path: Path) -> None:
    """compare and stability run nothing: an --html or --quarantine that is a directory (or lies under a
    file) is refused in one line ending 'nothing was written', exit 1, before anything is read or written."""
    base, cand = five_outcomes(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    directory = tmp_path / "pages"
    directory.mkdir()
    cases = [
        (("compare", base, cand, "--html", directory), f"--html {directory}: is a directory, not a file"),
        (
            ("compare", base, cand, "--html", blocker / "cmp.html"),
            f"--html {blocker / 'cmp.html'}: {blocker} is not a directory",
        ),
        (
            ("stability", base, cand, "--quarantine", directory),
            f"--quarantine {directory}: is a directory, not a file",
        ),
    ]
    for args, problem in cases:
        result = alisio("eval", *args)
        assert (result.returncode, result.stdout) == (1, ""), result.stderr
        assert result.stderr == f"alisio eval {args[0]}: {problem}; nothing was written\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a-file", "base", "cand", "pages"]
    assert list(directory.iterdir()) == []
