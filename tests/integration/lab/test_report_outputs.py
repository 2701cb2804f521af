"""What people and CI read, through the installed ``alisio``: report.md's runs that did not pass, report.html
and comparison.html (opened in headless Chromium), ``--junit FILE``, the ``$GITHUB_STEP_SUMMARY`` block,
and ``eval compare --fail-on`` (exit 4).

One scripted ``eval run`` (module scope) gives every status: fix-add passes, leave-it fails, over-budget
exceeds maxTurns, broken-check errors (its verifier cannot start) and shows-html fails after a tool printed
markup; the other tests read its files.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alisio.core.lab.outputs.html_page import anchor
from tests.integration.chromium import INSTALL, Page, browser, chromium_binary
from tests.integration.helpers import FIX, NOOP, alisio, make_suite, task, write_script

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "reports"
K = 3
MARKUP = {
    "turns": [
        {
            "toolCalls": [
                {
                    "name": "bash",
                    "arguments": {"command": "printf '<script>document.title=\"pwned\"</script>'"},
                }
            ],
            "usage": {"inputTokens": 80, "outputTokens": 9},
        },
        {
            "text": "Done <b>bold</b> & <script>alert(1)</script>.",
            "usage": {"inputTokens": 90, "outputTokens": 9},
        },
    ]
}
TASKS = {
    "fix-add": ("pass", FIX),
    "leave-it": ("fail", NOOP),
    "over-budget": ("budget_exceeded", FIX),
    "broken-check": ("error", FIX),
    "shows-html": ("fail", MARKUP),
}


def run_alisio(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command (in this process) with an empty configuration, no key, no terminal, no step summary of
    the CI running the tests, and ``env`` added."""
    (home / "config").mkdir(parents=True, exist_ok=True)
    return alisio(home, *args, env=env, without=("GITHUB_STEP_SUMMARY",))


def _suite(root: Path) -> tuple[Path, Path]:
    """The five tasks and a directory of their scripts."""
    process = {"mode": "auto", "allow": ["write", "process"]}
    broken = [{"kind": "command", "id": "check", "command": ["/nonexistent/checker"], "timeoutMs": 5000}]
    suite = make_suite(
        root,
        task("fix-add"),
        task("leave-it"),
        task("over-budget", budget={"maxTurns": 1, "maxWallMs": 60000}),
        task("broken-check", verifiers=broken),
        task("shows-html", policy=process),
    )
    scripts = root / "scripts"
    scripts.mkdir()
    for name, (_, script) in TASKS.items():
        write_script(scripts / f"{name}.json", script)
    return suite, scripts


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One ``eval run`` of the five tasks, k = 2, with --junit and a step summary file that holds a line."""
    home = tmp_path_factory.mktemp("outputs")
    suite, scripts = _suite(home)
    summary = home / "summary.md"
    summary.write_text("earlier step\n")
    out, junit = home / "out", home / "ci" / "junit.xml"
    result = run_alisio(
        home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--script", str(scripts),
        "--k", str(K), "--allow-write", "--allow-process", "--out", str(out), "--junit", str(junit),
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    return {"home": home, "result": result, "out": out, "junit": junit, "summary": summary}


def test_the_run_has_every_status_and_exits_1_for_its_error_runs(ran: dict[str, Any]) -> None:
    """broken-check's runs end error: exit 1 (the report is written); the other statuses are as planned."""
    result = ran["result"]
    assert result.returncode == 1, result.stderr
    records = [json.loads(line) for line in (ran["out"] / "runs.jsonl").read_text().splitlines()]
    assert {(r["taskId"], r["status"]) for r in records} == {(t, s) for t, (s, _) in TASKS.items()}
    assert f"junit: {ran['junit']}" in result.stderr
    assert "report.html beside it" in result.stderr


def test_report_md_lists_the_runs_that_did_not_pass(ran: dict[str, Any]) -> None:
    """The runs that did not pass, those with the same message once (``3 runs: fail: check: ...``, naming each
    run): the failing verifier with the first lines of its detail, and the eval show command of the first,
    which names the --out directory (the run id names only runs stored in the data directory) and works as
    printed; the passing runs are not listed."""
    text = (ran["out"] / "report.md").read_text()
    section = text.partition("## Runs that did not pass\n")[2]
    assert f"{4 * K} runs did not pass" in section
    leave_it = f"### leave-it, {K} runs: fail: check: exit 1 (expected 0); stdout: add is wrong\n\nRuns: leave-it rep 0, 1, 2."
    assert f"{leave_it}\n\n- verifier check (command): fail\n" in section
    assert f"Open the first: `alisio eval show {ran['out']} --task leave-it --rep 0`" in section
    assert f"### over-budget, {K} runs: budget_exceeded maxTurns" in section
    assert f"### broken-check, {K} runs: error " in section and "Runs: broken-check rep 0, 1, 2." in section
    assert (
        section.count("check: exit 1 (expected 0); stdout: add is wrong") == 3 * 2
    )  # the heading, the detail
    assert "fix-add rep" not in section
    command = re.search(r"`alisio (eval show [^`]*--task leave-it --rep 0)`", section)
    assert command is not None
    shown = run_alisio(ran["home"], *shlex.split(command.group(1)))
    assert shown.returncode == 0, shown.stderr
    assert "leave-it rep 0" in shown.stdout


def test_junit_has_a_testcase_per_task(ran: dict[str, Any]) -> None:
    """One testsuite with the conditions; a testcase per task: failure below 100%, error with errored runs."""
    root = ET.parse(ran["junit"]).getroot()
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "calc-suite"
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert set(cases) == set(TASKS)
    assert [child.tag for child in cases["fix-add"]] == ["system-out"]
    for name in ("leave-it", "over-budget", "shows-html"):
        assert cases[name].find("failure") is not None
    error = cases["broken-check"].find("error")
    assert error is not None and f"{K} of {K} runs ended error" in (error.get("message") or "")
    failure = cases["leave-it"].find("failure")
    assert failure is not None and "check (command): fail" in (failure.text or "")
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "3", "1")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["provider"] == "scripted" and properties["k"] == str(K)


def test_the_step_summary_is_appended(ran: dict[str, Any]) -> None:
    """The file keeps what it held; the block has the heading, the task table and the suite line."""
    text = ran["summary"].read_text()
    assert text.startswith("earlier step\n### alisio eval run: calc-suite 1.0.0 (scripted)\n")
    assert "> The provider is scripted" in text
    assert "| leave-it | 3 | 0 | 3 | 0 | 0 | 0.0% [0.0%, 56.1%] |" in text
    assert "Suite success rate: " in text


def test_a_junit_path_that_is_a_directory_stops_before_any_run(tmp_path: Path) -> None:
    """--junit DIR: one line naming it, exit 1, nothing run."""
    suite, scripts = _suite(tmp_path)
    result = run_alisio(
        tmp_path, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--script", str(scripts),
        "--allow-write", "--allow-process", "--junit", str(tmp_path),
    )  # fmt: skip
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        == f"alisio eval run: --junit {tmp_path}: is a directory, not a file; nothing was run"
    )
    assert not (tmp_path / "data").exists()


# --- eval compare: --html, --fail-on, the step summary -------------------------------------------------------


def test_fail_on_regressed_exits_4_and_names_the_task(tmp_path: Path) -> None:
    """examples: edit-respects-hash regressed; --fail-on regressed exits 4 and says so; the Markdown is still
    on stdout; the summary file gets the table and the gate."""
    summary = tmp_path / "summary.md"
    result = run_alisio(
        tmp_path, "eval", "compare", str(EXAMPLES / "baseline"), str(EXAMPLES / "candidate"), "--fail-on",
        "regressed", env={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert result.returncode == 4, result.stderr
    assert result.stdout.startswith("# Comparison: synthetic-example 1.0.0")
    assert (
        "alisio eval compare: --fail-on regressed: hit by 1 of 6 tasks with a verdict (edit-respects-hash "
        "regressed): exit 4" in result.stderr
    )
    assert (
        "alisio eval compare: --fail-on regressed: 1 task has no verdict and was not gated (not comparable 1)"
        in (result.stderr)
    )
    text = summary.read_text()
    assert "| edit-respects-hash | **regressed** |" in text and "- Gate --fail-on regressed: hit by 1" in text


@pytest.mark.parametrize(("fail_on", "code"), [("regressed", 0), ("inconclusive", 4)])
def test_fail_on_is_hit_at_or_worse_than_its_verdict(tmp_path: Path, fail_on: str, code: int) -> None:
    """A report against itself: every task inconclusive or not comparable; regressed passes, inconclusive
    does not."""
    base = str(EXAMPLES / "baseline")
    result = run_alisio(tmp_path, "eval", "compare", base, base, "--fail-on", fail_on, "--json")
    assert result.returncode == code, result.stderr
    assert json.loads(result.stdout)["tasks"]
    assert (": exit 4" in result.stderr) == (code == 4)


def test_fail_on_refuses_another_value_and_incompatible_reports_still_exit_3(tmp_path: Path) -> None:
    """--fail-on improved: one line, exit 1; reports of different suites: 3 whatever the gate."""
    base = str(EXAMPLES / "baseline")
    bad = run_alisio(tmp_path, "eval", "compare", base, base, "--fail-on", "improved")
    assert bad.returncode == 1
    assert (
        bad.stderr.strip()
        == "alisio eval compare: --fail-on: expected regressed or inconclusive or worse-than:M, got 'improved'"
    )
    other = tmp_path / "other" / "report.json"
    other.parent.mkdir()
    other.write_text(
        (EXAMPLES / "baseline" / "report.json").read_text().replace('"synthetic-example"', '"other"')
    )
    assert run_alisio(tmp_path, "eval", "compare", base, str(other), "--fail-on", "regressed").returncode == 3


def test_an_unwritable_step_summary_is_one_line_and_exit_1(tmp_path: Path) -> None:
    """$GITHUB_STEP_SUMMARY in a missing directory: the comparison is printed, one line says why, exit 1."""
    target = tmp_path / "missing" / "summary.md"
    base = str(EXAMPLES / "baseline")
    result = run_alisio(tmp_path, "eval", "compare", base, base, env={"GITHUB_STEP_SUMMARY": str(target)})
    assert result.returncode == 1
    assert result.stdout.startswith("# Comparison")
    assert result.stderr.strip() == (
        f"alisio eval compare: $GITHUB_STEP_SUMMARY {target}: cannot append: No such file or directory"
    )


def test_compare_html_writes_the_page(tmp_path: Path) -> None:
    """--html FILE (its directory created): the page with a two-bar plot and a verdict per task, the limits."""
    page = tmp_path / "pages" / "comparison.html"
    result = run_alisio(
        tmp_path,
        "eval",
        "compare",
        str(EXAMPLES / "baseline"),
        str(EXAMPLES / "candidate"),
        "--html",
        str(page),
    )
    assert result.returncode == 0, result.stderr
    text = page.read_text()
    assert text.count('<svg class="forest"') == 7 and text.count('class="point baseline"') == 7
    assert '<span class="badge regressed">regressed</span>' in text
    assert "This is a conservative screen, not a significance test" in text


# --- eval variants and eval ci ---------------------------------------------------------------------------------


def test_variants_write_a_page_per_variant_a_comparison_page_and_a_testsuite_per_variant(
    tmp_path: Path,
) -> None:
    """Two variants, k = 2: each variant's report.html, comparison.html at the root whose grid links into
    them, JUnit with a testsuite per variant, and the summary with each comparison's verdicts."""
    suite = make_suite(tmp_path, task("fix-add"), task("leave-it"))
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    write_script(scripts / "fix-add.json", FIX)
    write_script(scripts / "leave-it.json", NOOP)
    compare = tmp_path / "compare.json"
    compare.write_text(
        json.dumps(
            {
                "suite": "calc-suite",
                "variants": [{"id": "base"}, {"id": "early", "overrides": {"compaction.threshold": 0.6}}],
            }
        )
    )
    out, junit, summary = tmp_path / "out", tmp_path / "junit.xml", tmp_path / "summary.md"
    result = run_alisio(
        tmp_path, "eval", "variants", "calc-suite", "--suite-dir", str(suite), "--yes", "--variants", str(compare),
        "--script", str(scripts), "--k", "2", "--allow-write", "--out", str(out), "--junit", str(junit),
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    page = (out / "comparison.html").read_text()
    for variant in ("base", "early"):
        assert (out / variant / "report.html").is_file()
        for rep in range(2):
            assert f'href="{variant}/report.html#{anchor("leave-it", rep)}"' in page
    assert page.count('<a class="cell') == 8 and "base → early" in page
    names = [s.get("name") for s in ET.parse(junit).getroot().findall("testsuite")]
    assert names == ["calc-suite/base", "calc-suite/early"]
    text = summary.read_text()
    assert text.startswith("### alisio eval variants: calc-suite\n") and "\n#### base → early\n" in text
    assert "| leave-it | low power | 0/2: 0.0% [0.0%, 65.8%] | 0/2: 0.0% [0.0%, 65.8%] |" in text


def test_eval_ci_writes_junit_and_the_summary(tmp_path: Path) -> None:
    """The bundled cassettes: a replayed suite's testsuite has a testcase per cassette, a suite without
    cassettes one skipped testcase; the summary has a row per suite and the verdict."""
    junit, summary = tmp_path / "ci.xml", tmp_path / "summary.md"
    result = run_alisio(
        tmp_path, "eval", "ci", "--junit", str(junit), env={"GITHUB_STEP_SUMMARY": str(summary)}
    )
    assert result.returncode == 0, result.stderr
    root = ET.parse(junit).getroot()
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert len(suites["tool-sequences"].findall("testcase")) == 6
    assert suites["long-context"].find("testcase/skipped") is not None
    assert root.get("failures") == "0" and root.get("errors") == "0"
    text = summary.read_text()
    assert "| tool-sequences | replayed | 6 | 6 | 0 | 0 |  |" in text
    assert re.search(r"alisio eval ci: all \d+ cassettes replayed cleanly and passed", text)


# --- in a real browser --------------------------------------------------------------------------------------

CHROMIUM = chromium_binary()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason=f"no Chromium: {INSTALL}")


@pytest.fixture(scope="module")
def tab() -> Iterator[Page]:
    assert CHROMIUM is not None
    with browser(CHROMIUM) as started:
        yield started.new_page()


def _screenshot(page: Page, path: Path, name: str, height: int) -> None:
    """Save a screenshot; with ALISIO_SCREENSHOTS=DIR also copy it there (how docs/ gets its images)."""
    page.screenshot(path, 1280, height)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    target = os.environ.get("ALISIO_SCREENSHOTS")
    if target:
        (Path(target) / name).write_bytes(path.read_bytes())


def _opened(page: Page, path: Path) -> None:
    page.console.clear()
    page.exceptions.clear()
    page.requests.clear()
    page.open(path.as_uri())
    assert page.errors() == []
    assert page.requests == [path.as_uri()]  # nothing else is loaded: no font, script, image or stylesheet


@needs_chromium
def test_report_html_renders_in_chromium(ran: dict[str, Any], tab: Page, tmp_path: Path) -> None:
    """The plot has a drawn point and interval per task, the grid a coloured cell per run; a cell opens its
    collapsed transcript; a tool's <script> output shows as text and never runs; no console error."""
    report = ran["out"] / "report.html"
    _opened(tab, report)
    assert tab.evaluate("document.scripts.length") == 1  # the filter's, allowed by its hash alone
    widths = tab.evaluate(
        "[...document.querySelectorAll('svg.forest')].map(s => [s.getBoundingClientRect().width, "
        "s.querySelectorAll('circle.point').length, s.querySelectorAll('line.ci').length])"
    )
    assert widths == [[240, 0, 0]] + [[240, 1, 1]] * 4  # broken-check (first) has no judged run: n/a
    cells = tab.evaluate(
        "[...document.querySelectorAll('#grid a.cell')].map(a => [a.title.split(':')[0], a.textContent, "
        "getComputedStyle(a).backgroundColor, a.getBoundingClientRect().width])"
    )
    colours = {
        "P": "rgb(26, 127, 55)",
        "F": "rgb(207, 34, 46)",
        "B": "rgb(191, 135, 0)",
        "E": "rgb(130, 80, 223)",
    }
    assert len(cells) == len(TASKS) * K
    assert all(colour == colours[letter] and width == 22 for _, letter, colour, width in cells)
    target = anchor("shows-html", 1)
    opened = f"document.getElementById('{target}').closest('details').open"
    assert tab.evaluate(opened) is False
    tab.evaluate(f"document.querySelector('#grid a[href=\"#{target}\"]').click()")
    assert tab.evaluate(opened) is True
    text = tab.evaluate(f"document.getElementById('{target}').textContent")
    assert '<script>document.title="pwned"</script>' in text and "<script>alert(1)</script>" in text
    assert tab.evaluate("document.title") == "Eval report: calc-suite 1.0.0 (scripted)"
    assert tab.errors() == []
    tab.evaluate("window.scrollTo(0, 0)")
    _screenshot(tab, tmp_path / "report.png", "report-html.png", 960)


@needs_chromium
def test_report_html_filters_runs_and_groups_the_failures(ran: dict[str, Any], tab: Page) -> None:
    """The failures grouped by reason with a count and links; the filter by task, status and failing
    verifier hides the other transcripts and failing-list entries and counts what it shows."""
    _opened(tab, ran["out"] / "report.html")
    assert tab.evaluate("document.getElementById('filters').hidden") is False
    groups = tab.evaluate(
        "[...document.querySelectorAll('#groups tbody tr')].map(r => [r.cells[0].textContent, "
        "r.cells[1].textContent, r.cells[2].textContent, r.cells[3].querySelectorAll('a').length])"
    )
    assert groups[0] == ["fail", "verifier check (command) did not pass", "6", 6]
    assert sorted(g[0] for g in groups[1:]) == ["budget_exceeded", "error"] and all(
        g[2] == "3" for g in groups[1:]
    )

    def choose(task: str = "", status: str = "", verifier: str = "") -> tuple[str, list[str], int]:
        for name, value in (("task", task), ("status", status), ("verifier", verifier)):
            tab.evaluate(
                f"document.querySelector('#filters select[name={name}]').value = {json.dumps(value)}"
            )
        tab.evaluate("document.getElementById('filters').dispatchEvent(new Event('change'))")
        count = tab.evaluate("document.getElementById('filter-count').textContent")
        shown = tab.evaluate(
            "[...document.querySelectorAll('details.run')].filter(d => !d.hidden).map(d => d.dataset.task)"
        )
        listed = tab.evaluate("[...document.querySelectorAll('#failing li')].filter(li => !li.hidden).length")
        return count, sorted(set(shown)), listed

    # a task's runs that failed the same way are one entry of the failing list: one per task here
    assert choose() == ("15 of 15 runs shown", sorted(TASKS), 4)
    assert choose(status="fail") == ("6 of 15 runs shown", ["leave-it", "shows-html"], 2)
    assert choose(task="shows-html", status="fail") == ("3 of 15 runs shown", ["shows-html"], 1)
    everyone_but_fix_add = [
        "broken-check",
        "leave-it",
        "over-budget",
        "shows-html",
    ]  # a budget stop is judged too
    assert choose(verifier="check") == ("12 of 15 runs shown", everyone_but_fix_add, 4)
    assert choose(task="fix-add", status="error") == ("0 of 15 runs shown", [], 0)
    assert tab.evaluate("document.title") == "Eval report: calc-suite 1.0.0 (scripted)"
    assert tab.errors() == []


@needs_chromium
def test_comparison_html_renders_in_chromium(tab: Page, tmp_path: Path) -> None:
    """Both sides' intervals per task on one axis, a verdict badge per task, the limits; no console error."""
    page = tmp_path / "comparison.html"
    run_alisio(
        tmp_path,
        "eval",
        "compare",
        str(EXAMPLES / "baseline"),
        str(EXAMPLES / "candidate"),
        "--html",
        str(page),
    )
    _opened(tab, page)
    rows = tab.evaluate(
        "[...document.querySelectorAll('#forest tbody tr')].map(r => [r.cells[0].textContent, "
        "r.querySelectorAll('circle.point').length, r.querySelector('.badge').textContent])"
    )
    assert len(rows) == 7 and all(points == 2 for _, points, _ in rows)
    assert ["edit-respects-hash", 2, "regressed"] in rows and ["rename-symbol", 2, "improved"] in rows
    assert tab.evaluate("document.querySelectorAll('ul.limits li').length") >= 4
    reports = tab.evaluate("[...document.querySelectorAll('#reports a')].map(a => a.href)")
    assert reports == [
        (EXAMPLES / side / "report.html").resolve().as_uri() for side in ("baseline", "candidate")
    ]
    links = tab.evaluate(
        "[...document.querySelectorAll('#forest tbody tr')].map(r => [r.cells[0].textContent, "
        "[...r.cells[r.cells.length - 1].querySelectorAll('a')].map(a => [a.textContent, a.href])])"
    )
    by_task = dict(links)
    assert [text for text, _ in by_task["edit-respects-hash"]] == [
        "baseline rep 0 (pass)",
        "candidate rep 2 (fail)",
    ]
    candidate_href = by_task["edit-respects-hash"][1][1]
    assert (
        candidate_href
        == (EXAMPLES / "candidate" / "report.html").resolve().as_uri() + "#run-edit-respects-hash-2"
    )
    tab.open(candidate_href)
    assert (
        tab.evaluate("document.getElementById('run-edit-respects-hash-2').closest('details').dataset.status")
        == "fail"
    )
    assert tab.errors() == []
    _opened(tab, page)
    _screenshot(tab, tmp_path / "comparison.png", "comparison-html.png", 1250)
