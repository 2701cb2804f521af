"""Issue 19's sequential mode through the CLI: ``eval variants --sequential``, ``eval run --sequential
--baseline REPORT`` and ``eval run --until-width W``, against a local stand-in model whose success
probability is set per variant and task (``tests.integration.seq_model``) or scripted runs whose outcome
depends on the task. Every number asserted follows from the outcomes and ``alisio.core.stats.sequential``:
with 2 tasks (threshold 2·2/0.05 = 80) a task whose candidate always passes and baseline always fails is
decided at 9 pairs, a tie is stopped for futility at the first look (5 pairs), and at width 0.5 a task whose
runs all agree stops after 9 runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from alisio.core.lab.comparisons.variants import VariantsComparison
from alisio.core.stats.sequential import MAX_K
from tests.integration.helpers import (
    NOOP,
    alisio,
    eval_run,
    read_report,
    read_runs,
    refused,
    variants,
    write_script,
)
from tests.integration.seq_model import StandIn, compare_file, seq_suite, stand_in

COMPARISON = msgspec.json.Decoder(VariantsComparison)
READ = {
    "turns": [
        {
            "toolCalls": [{"name": "read_file", "arguments": {"path": "src/calc.py"}}],
            "usage": {"inputTokens": 100, "outputTokens": 10},
        },
        {"text": "Read it.", "usage": {"inputTokens": 120, "outputTokens": 10}},
    ]
}


def _scripts(root: Path, **passes: bool) -> Path:
    """A --script directory: each task passes (answers at once) or fails (reads a file first)."""
    directory = root / "scripts"
    directory.mkdir(parents=True, exist_ok=True)
    for task_id, passed in passes.items():
        write_script(directory / f"{task_id}.json", NOOP if passed else READ)
    return directory


def _scripted(root: Path, **passes: bool) -> tuple[Path, Path]:
    """A suite of the tasks named in ``passes`` and its --script directory (``_scripts``), both under root."""
    return seq_suite(root, *passes), _scripts(root, **passes)


def _run(home: Path, suite: Path, *args: str | Path) -> tuple[int, str, str]:
    result = eval_run(home, suite, "--jobs", "1", *args)
    return result.returncode, result.stdout, result.stderr


def _variants(
    tmp_path: Path, rates: dict[str, dict[str, float]], *args: str | Path
) -> tuple[int, str, str, StandIn]:
    """``eval variants`` of two variants, base and cand, over a suite of base's tasks, against the stand-in
    model at ``rates``: (exit code, stdout, stderr, the model, which counts the runs it saw)."""
    suite = seq_suite(tmp_path, *rates["base"])
    compare = compare_file(tmp_path / "compare.json", "base", "cand")
    server, model = stand_in(rates)
    with server:
        result = variants(tmp_path, suite, compare, "--base-url", server.base_url, "--model", "m", *args)
    return result.returncode, result.stdout, result.stderr, model


# --- eval variants --sequential ------------------------------------------------------------------------------


def test_variants_sequential_decides_a_difference_stops_a_tie_and_saves_the_runs(tmp_path: Path) -> None:
    """A task whose candidate always passes and baseline never does is decided "improved" at 9 pairs; a task
    where both always pass stops for futility at the first look (5 pairs); no further run is started for
    either (the server saw exactly those runs); the reports, comparison.json and comparison.md say so."""
    rates = {"base": {"differs": 0.0, "same": 1.0}, "cand": {"differs": 1.0, "same": 1.0}}
    out = tmp_path / "out"
    code, _, stderr, model = _variants(
        tmp_path, rates, "--sequential", "--max-k", "20", "--jobs", "1", "--out", out
    )
    assert code == 0, stderr
    assert dict(model.runs) == {
        ("base", "differs"): 9,
        ("cand", "differs"): 9,
        ("base", "same"): 5,
        ("cand", "same"): 5,
    }
    assert "2 variants x 2 tasks x at most 20 = 80 runs, sequential, interleaved" in stderr
    for arm in ("base", "cand"):
        block = read_report(out / arm).sequential
        assert block is not None and block.plan.kind == "two-arm" and block.plan.baseline == "base"
        differs, same = block.tasks
        assert (differs.task_id, differs.reason, differs.direction, differs.runs) == (
            "differs",
            "decided",
            "improved",
            9,
        )
        assert differs.statistic >= differs.threshold == 80.0
        assert differs.interval is not None and differs.interval.low > 0
        assert (same.reason, same.runs, same.stopped_at, same.runs_saved) == ("futility", 5, 5, 15)
        assert block.runs_saved == 11 + 15
    comparison = COMPARISON.decode((out / "comparison.json").read_bytes())
    assert comparison.sequential is not None and comparison.sequential.runs_saved == 2 * 26
    assert (
        comparison.comparisons[0]
        .comparison.warnings[-1]
        .startswith("both reports are arms of one sequential run")
    )
    markdown = (out / "comparison.md").read_text()
    assert "## Sequential decisions" in markdown
    assert "| differs | 18 | at 9 | decided: improved |" in markdown
    assert "52 of 80 runs saved over both variants" in markdown
    assert "52 of 80 runs saved over both variants" in stderr
    method = next(line for line in stderr.splitlines() if line.startswith("method: "))
    assert method == (  # the method in brief: comparison.md has it in full
        "method: betting e-processes on the paired differences, family-wise error <= 0.05, valid under "
        "optional stopping (in full in comparison.md)"
    )
    assert "Waudby-Smith & Ramdas 2024" in markdown
    assert "Sequential stopping" in (out / "cand" / "report.html").read_text()
    assert "<h2>Sequential decisions</h2>" in (out / "comparison.html").read_text()


def test_variants_sequential_with_jobs_waits_for_the_runs_in_flight_and_counts_them(tmp_path: Path) -> None:
    """With 4 runs at once, the runs in flight when the task is decided are waited for, kept in runs.jsonl
    and counted: the report's runs are every record, ``afterStop`` the runs past the deciding look, and no
    run started after it (at most 4 were in flight)."""
    rates = {"base": {"differs": 0.0}, "cand": {"differs": 1.0}}
    out = tmp_path / "out"
    code, stdout, stderr, _ = _variants(
        tmp_path, rates, "--sequential", "--max-k", "30", "--jobs", "4", "--out", out, "--json"
    )
    assert code == 0, stderr
    last = json.loads(stdout.splitlines()[-1])
    assert last["type"] == "sequential" and last["sequential"]["tasks"][0]["reason"] == "decided"
    for arm in ("base", "cand"):
        records = read_runs(out / arm)
        (stop,) = read_report(out / arm).sequential.tasks  # type: ignore[union-attr]
        assert stop.reason == "decided" and stop.stopped_at == 8  # 1 task: threshold 40, reached at 8 pairs
        assert stop.runs == len(records) == stop.stopped_at + stop.after_stop
        assert stop.runs <= stop.stopped_at + 4
        assert sorted(r.repetition for r in records) == list(range(stop.runs))


def _gated(tmp_path: Path, rates: dict[str, dict[str, float]]) -> tuple[int, str]:
    gate = ("--sequential", "--fail-on", "worse-than:0.5", "--max-k", "20", "--jobs", "1")
    code, _, stderr, _ = _variants(tmp_path, rates, *gate, "--out", tmp_path / "out")
    return code, stderr


def test_variants_sequential_gate_worse_than_exits_4_when_a_task_is_not_shown_not_worse(
    tmp_path: Path,
) -> None:
    """``--fail-on worse-than:0.5`` under ``--sequential``: a task as good in both arms is decided "not
    worse"; a task the candidate always fails stops for futility, and the gate exits 4 naming it."""
    rates = {"base": {"equal": 1.0, "worse": 1.0}, "cand": {"equal": 1.0, "worse": 0.0}}
    code, stderr = _gated(tmp_path, rates)
    assert code == 4, stderr
    assert (
        "--fail-on worse-than:0.5 (sequential): hit by 1 of 2 tasks (worse futility at 5 pairs): exit 4"
        in stderr
    )
    block = read_report(tmp_path / "out" / "cand").sequential
    assert block is not None and block.plan.side == "not-worse" and block.plan.margin == 0.5
    assert [(s.task_id, s.reason, s.direction) for s in block.tasks] == [
        ("equal", "decided", "not-worse"),
        ("worse", "futility", None),
    ]


def test_variants_sequential_gate_worse_than_passes_when_every_task_is_shown_not_worse(
    tmp_path: Path,
) -> None:
    code, stderr = _gated(tmp_path, {"base": {"equal": 1.0}, "cand": {"equal": 1.0}})
    assert code == 0, stderr
    assert "--fail-on worse-than:0.5 (sequential): not hit: all 1 task shown at most 50 pp worse" in stderr


def test_variants_without_sequential_runs_every_planned_run(tmp_path: Path) -> None:
    """The fixed-k path is unchanged: every planned run runs, even when a task's difference is plain, and no
    report carries a sequential block."""
    rates = {"base": {"differs": 0.0}, "cand": {"differs": 1.0}}
    code, _, stderr, model = _variants(tmp_path, rates, "--k", "12", "--out", tmp_path / "out")
    assert code == 0, stderr
    assert dict(model.runs) == {("base", "differs"): 12, ("cand", "differs"): 12}
    assert read_report(tmp_path / "out" / "cand").sequential is None
    assert COMPARISON.decode((tmp_path / "out" / "comparison.json").read_bytes()).sequential is None


# --- eval run --until-width and --sequential --baseline -------------------------------------------------------


def test_run_until_width_stops_each_task_once_its_confidence_sequence_is_narrow(tmp_path: Path) -> None:
    """At width 0.5 a task whose runs all pass (or all fail) stops after 9 runs of the 30 allowed; the
    report shows the confidence sequence as the valid interval and Wilson's for reference, plan.json keeps the
    design, and eval show says how a run's task stopped."""
    suite, scripts = _scripted(tmp_path, good=True, bad=False)
    out = tmp_path / "out"
    code, stdout, stderr = _run(
        tmp_path, suite, "--script", scripts, "--until-width", "0.5", "--max-k", "30", "--out", out
    )
    assert code == 0, stderr
    assert "2 tasks x at most 30 = 60 runs, sequential" in stderr
    assert len(read_runs(out)) == 18
    block = read_report(out).sequential
    assert block is not None and block.plan.width == 0.5
    for stop in block.tasks:
        assert (stop.reason, stop.runs, stop.runs_saved) == ("width", 9, 21)
        assert stop.interval is not None and stop.interval.high - stop.interval.low < 0.5
    good = next(s for s in block.tasks if s.task_id == "good")
    assert good.interval is not None and good.interval.low > 0.5
    assert "42 of 60 runs saved against running every task to --max-k" in stdout
    markdown = (out / "report.md").read_text()
    assert "| good | 9 | at 9 | width below 0.5 |" in markdown and "Wilson (for reference)" in markdown
    assert "100.0% [70.1%, 100.0%]" in markdown  # Wilson's, beside the valid interval
    plan = json.loads((out / "plan.json").read_text())
    assert plan["k"] == 30 and plan["sequential"] == {"kind": "width", "maxK": 30, "width": 0.5}
    shown = alisio(tmp_path, "eval", "show", out, "--task", "good")
    assert shown.returncode == 0, shown.stderr
    _, _, note, run, *_ = shown.stdout.splitlines()  # what names the run (agent, script) comes first
    assert (
        note
        == "sequential (--until-width 0.5, --max-k 30, --min-k 5): task good took 9 runs, width below 0.5"
    )
    assert run.startswith("good rep 0: pass")


def test_run_sequential_against_a_stored_baseline_decides_from_its_counts(tmp_path: Path) -> None:
    """A fixed-k baseline where the task always failed (0/10) is not re-run: the candidate, which always
    passes, is decided "improved" at 6 runs (threshold 2·2·1/0.05 = 80, half of alpha on the baseline's
    exact bound)."""
    suite = seq_suite(tmp_path, "t")
    base = tmp_path / "base"
    code, _, stderr = _run(
        tmp_path, suite, "--script", _scripts(tmp_path / "b", t=False), "--k", "10", "--out", base
    )
    assert code == 0, stderr
    out = tmp_path / "cand"
    code, stdout, stderr = _run(
        tmp_path,
        suite,
        "--script",
        _scripts(tmp_path / "c", t=True),
        "--sequential",
        "--baseline",
        base,
        "--max-k",
        "40",
        "--out",
        out,
    )
    assert code == 0, stderr
    block = read_report(out).sequential
    assert block is not None and block.plan.kind == "baseline"
    assert [(c.task_id, c.passes, c.judged) for c in block.plan.baseline_counts] == [("t", 0, 10)]
    (stop,) = block.tasks
    assert (stop.reason, stop.direction, stop.runs, stop.threshold) == ("decided", "improved", 6, 80.0)
    assert len(read_runs(out)) == 6
    assert "method: the baseline's counts against a betting confidence sequence" in stdout  # in brief
    assert "sequential against a stored baseline" in (out / "report.md").read_text()  # in full


def test_resume_recomputes_each_task_from_runs_jsonl_and_refuses_another_design(tmp_path: Path) -> None:
    """A sequential run killed part-way resumes: a task that had stopped stays stopped (no run of it
    starts), the other runs until its own stop, and the report equals the one of an uninterrupted run;
    a resume with another design is refused naming both."""
    suite, scripts = _scripted(tmp_path, good=True, bad=False)
    out = tmp_path / "out"
    code, _, stderr = _run(
        tmp_path, suite, "--script", scripts, "--until-width", "0.5", "--max-k", "30", "--out", out
    )
    assert code == 0, stderr
    whole = read_report(out).sequential
    lines = (out / "runs.jsonl").read_text().splitlines(keepends=True)
    kept = [line for line in lines if not ('"taskId":"bad"' in line and json.loads(line)["repetition"] >= 4)]
    (out / "runs.jsonl").write_text("".join(kept))  # as if killed with bad at 4 runs, good stopped at 9
    refused_code, _, refusal = _run(tmp_path, suite, "--resume", out, "--until-width", "0.4")
    assert refused_code == 1
    assert (
        "the sequential design differs: --until-width 0.5, --max-k 30, --min-k 5 when the run started, "
        "--until-width 0.4, --max-k 50, --min-k 5 now" in refusal
    )
    assert len(read_runs(out)) == 13  # nothing ran
    code, _, stderr = _run(tmp_path, suite, "--resume", out)
    assert code == 0, stderr
    records = read_runs(out)
    assert len(records) == 18 and "good rep" not in stderr  # only bad's runs 4..8 ran
    resumed = read_report(out).sequential
    assert resumed is not None and whole is not None
    assert [(s.task_id, s.reason, s.runs, s.statistic) for s in resumed.tasks] == [
        (s.task_id, s.reason, s.runs, s.statistic) for s in whole.tasks
    ]


def test_resume_with_a_larger_max_k_continues_the_same_sequences(tmp_path: Path) -> None:
    """``--resume`` with a larger ``--max-k`` (alone) continues the same design: tasks stopped at the old
    max-k run on to their own stop, plan.json takes the new max-k, and the report is the one a run started
    with it gives; a smaller --max-k, or another design, is still refused."""
    suite, scripts = _scripted(tmp_path, good=True, bad=False)
    out = tmp_path / "out"
    code, _, stderr = _run(
        tmp_path, suite, "--script", scripts, "--until-width", "0.5", "--max-k", "6", "--out", out
    )
    assert code == 0, stderr
    first = read_report(out).sequential
    assert first is not None and [(s.reason, s.runs) for s in first.tasks] == [("max-k", 6)] * 2
    lower = _run(tmp_path, suite, "--resume", out, "--max-k", "5")
    assert lower[0] == 1 and "(a resume may only raise --max-k)" in lower[2]
    code, _, stderr = _run(tmp_path, suite, "--resume", out, "--max-k", "30")
    assert code == 0, stderr
    assert len(read_runs(out)) == 18  # reps 6, 7, 8 of each task: both stop for width at 9 runs
    plan = json.loads((out / "plan.json").read_text())
    assert plan["k"] == 30 and plan["sequential"]["maxK"] == 30
    resumed = read_report(out).sequential
    direct = tmp_path / "direct"
    code, _, stderr = _run(
        tmp_path, suite, "--script", scripts, "--until-width", "0.5", "--max-k", "30", "--out", direct
    )
    assert code == 0, stderr
    whole = read_report(direct).sequential
    assert resumed is not None and whole is not None
    assert resumed.plan == whole.plan
    assert [(s.task_id, s.reason, s.runs, s.statistic, s.runs_saved) for s in resumed.tasks] == [
        (s.task_id, s.reason, s.runs, s.statistic, s.runs_saved) for s in whole.tasks
    ]
    again = _run(tmp_path, suite, "--resume", out)  # plan.json now holds --max-k 30: nothing left to run
    assert again[0] == 0 and len(read_runs(out)) == 18


def test_variants_resume_with_a_larger_max_k_decides_what_the_old_max_k_cut_short(tmp_path: Path) -> None:
    """A task that needs 9 pairs to be decided stops for futility at 5 under --max-k 6 (no 6th pair could
    decide it); ``eval variants --resume`` with --max-k 20 looks at it again under 20, runs it on from pair 6
    and decides it at 9, as a job started at 20 does; the tie, futile under either max-k, stays stopped (no
    run of it starts)."""
    rates = {"base": {"differs": 0.0, "same": 1.0}, "cand": {"differs": 1.0, "same": 1.0}}
    suite = seq_suite(tmp_path, *rates["base"])
    compare = compare_file(tmp_path / "compare.json", "base", "cand")
    out = tmp_path / "out"
    server, model = stand_in(rates)
    with server:
        first = variants(
            tmp_path, suite, compare, "--base-url", server.base_url, "--model", "m",
            "--sequential", "--max-k", "6", "--jobs", "1", "--out", out,
        )  # fmt: skip
        assert first.returncode == 0, first.stderr
        block = read_report(out / "cand").sequential
        assert block is not None and [(s.task_id, s.reason, s.runs) for s in block.tasks] == [
            ("differs", "futility", 5),
            ("same", "futility", 5),
        ]
        resumed = alisio(
            tmp_path, "eval", "variants", "--resume", out, "--max-k", "20", "--jobs", "1",
            "--base-url", server.base_url, "--model", "m",
        )  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr
    assert dict(model.runs) == {
        ("base", "differs"): 9,
        ("cand", "differs"): 9,
        ("base", "same"): 5,
        ("cand", "same"): 5,
    }
    block = read_report(out / "cand").sequential
    assert block is not None and block.plan.max_k == 20
    differs, same = block.tasks
    assert (differs.reason, differs.direction, differs.runs, differs.runs_saved) == (
        "decided",
        "improved",
        9,
        11,
    )
    assert (same.reason, same.runs) == ("futility", 5)


def test_compare_and_stability_read_sequential_reports(tmp_path: Path) -> None:
    """eval compare of a sequential report says its verdicts peek and gives its own decisions; eval
    stability takes reports whose runs per task differ."""
    suite, scripts = _scripted(tmp_path, good=True)
    for name in ("one", "two"):
        code, _, stderr = _run(
            tmp_path, suite, "--script", scripts, "--until-width", "0.5", "--out", tmp_path / name
        )
        assert code == 0, stderr
    fixed = tmp_path / "fixed"
    assert _run(tmp_path, suite, "--script", scripts, "--k", "5", "--out", fixed)[0] == 0
    compared = alisio(tmp_path, "eval", "compare", fixed, tmp_path / "one", "--format", "md")
    assert compared.returncode == 0, compared.stderr
    assert "the candidate stopped sequentially (--until-width 0.5, --max-k 50, --min-k 5)" in compared.stdout
    assert "its own decisions: good width after 8" in compared.stdout
    stability = alisio(tmp_path, "eval", "stability", tmp_path / "one", tmp_path / "two", fixed)
    assert stability.returncode == 0, stability.stderr
    assert "Traceback" not in stability.stderr


# --- refusals ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--sequential",), "eval run --sequential tests against a stored report: add --baseline REPORT"),
        (("--until-width", "1.5"), "--until-width must be in (0, 1] (0.2 is ±10 points), got 1.5"),
        (
            ("--until-width", "0.3", "--k", "5"),
            "--k sets a fixed number of runs; --until-width stops each task",
        ),
        (("--baseline", "x"), "--baseline goes with --sequential"),
        (
            ("--max-k", "10"),
            "--max-k and --min-k go with --sequential --baseline REPORT or --until-width W",
        ),
        (("--sequential", "--baseline", "x", "--until-width", "0.3"), "are two designs: pick one"),
        (
            ("--until-width", "0.3", "--mode", "replay"),
            "--until-width stops live runs early; replay is deterministic",
        ),
        (("--until-width", "0.3", "--min-k", "10", "--max-k", "5"), "--min-k 10 is above --max-k 5"),
        (
            ("--until-width", "0.3", "--max-k", "5000"),
            f"--max-k 5000: runs per task must be between 1 and {MAX_K}",
        ),
        (("--sequential", "--baseline", "nowhere"), "--baseline nowhere: "),
        (("--fail-on", "worse-than:0.1"), "--fail-on goes with --sequential"),
        (
            ("--until-width", "0.3", "--fail-on", "worse-than:0.1"),
            "--fail-on goes with --sequential, not with",
        ),
    ],
)
def test_eval_run_refuses_a_design_that_does_not_hold_in_one_line(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    suite, scripts = _scripted(tmp_path / "s", t=True)
    result = eval_run(tmp_path, suite, *args, script=None if "replay" in args else scripts)
    assert message in refused(tmp_path, result)
    assert len(result.stderr.strip().splitlines()) == 1


def test_eval_run_refuses_a_baseline_of_another_suite_version_or_without_the_task(tmp_path: Path) -> None:
    suite, scripts = _scripted(tmp_path / "s", t=True, u=True)
    base = tmp_path / "base"
    assert _run(tmp_path / "h", suite, "--script", scripts, "--k", "5", "--tasks", "t", "--out", base)[0] == 0
    result = eval_run(tmp_path, suite, "--sequential", "--baseline", base, script=scripts)
    assert "no judged run of task u in that report (select the tasks it has with --tasks" in refused(
        tmp_path, result
    )
    document = json.loads((suite / "suite.json").read_text())
    document["suiteVersion"] = "2.0.0"
    (suite / "suite.json").write_text(json.dumps(document))
    result = eval_run(tmp_path, suite, "--sequential", "--baseline", base, "--tasks", "t", script=scripts)
    assert "a report of suite calc-suite 1.0.0, not of calc-suite 2.0.0" in refused(tmp_path, result)


@pytest.mark.parametrize(
    ("args", "message", "variants_count"),
    [
        (("--max-k", "10"), "--max-k goes with --sequential", 2),
        (
            ("--sequential", "--fail-on", "regressed"),
            "under --sequential only worse-than:M is a sequential gate",
            2,
        ),
        (("--sequential", "--fail-on", "worse-than:2"), "the margin must be in (0, 1)", 2),
        (
            ("--sequential",),
            "--sequential compares two variants (the baseline and one candidate); the variants file has 3",
            3,
        ),
        (("--sequential", "--k", "5"), "--k sets a fixed number of runs; --sequential stops each task", 2),
    ],
)
def test_eval_variants_refuses_a_design_that_does_not_hold_in_one_line(
    tmp_path: Path, args: tuple[str, ...], message: str, variants_count: int
) -> None:
    suite, scripts = _scripted(tmp_path / "s", t=True)
    compare = compare_file(tmp_path / "s" / "compare.json", *["a", "b", "c"][:variants_count])
    result = variants(tmp_path, suite, compare, "--script", scripts, *args)
    assert message in refused(tmp_path, result)
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_sequential_report_is_refused_as_a_baseline(tmp_path: Path) -> None:
    suite, scripts = _scripted(tmp_path / "s", t=True)
    first = tmp_path / "first"
    assert _run(tmp_path / "h", suite, "--script", scripts, "--until-width", "0.5", "--out", first)[0] == 0
    result = eval_run(tmp_path, suite, "--sequential", "--baseline", first, script=scripts)
    assert "a sequential report (its runs stopped early); give a fixed-k report" in refused(tmp_path, result)


def test_errored_runs_are_not_outcomes_and_a_task_of_errors_only_runs_to_max_k(tmp_path: Path) -> None:
    """A run that ends error (its script runs out of turns) is not an outcome: a task whose runs all error
    never stops early, runs to --max-k and is reported so, with no interval (nothing was judged); the other
    task stops at its width as usual; exit 1 (runs ended error)."""
    suite, scripts = _scripted(tmp_path, good=True, broken=True)
    cut = {"turns": [{"toolCalls": [{"name": "read_file", "arguments": {"path": "src/calc.py"}}]}]}
    write_script(scripts / "broken.json", cut)
    out = tmp_path / "out"
    code, stdout, stderr = _run(
        tmp_path, suite, "--script", scripts, "--until-width", "0.5", "--max-k", "12", "--out", out
    )
    assert code == 1, stderr
    block = read_report(out).sequential
    assert block is not None
    broken, good = block.tasks
    assert (broken.reason, broken.runs, broken.judged, broken.interval) == ("max-k", 12, 0, None)
    assert (good.reason, good.runs) == ("width", 9)
    assert "12 runs ended error (infrastructure; excluded from every rate): exit 1" in stderr
    assert "| broken | 12 | - | max-k (12) |" in (out / "report.md").read_text()
    assert "broken" in stdout


def test_run_sequential_baseline_gate_worse_than_passes_a_match_and_exits_4_on_a_drop(tmp_path: Path) -> None:
    """``eval run --sequential --baseline REPORT --fail-on worse-than:0.3``: against a baseline at 10/10, a
    candidate that always passes is decided "not worse" (exit 0); one that never passes stops for futility at
    the first look and the gate exits 4 naming it."""
    suite = seq_suite(tmp_path, "t")
    base = tmp_path / "base"
    good, bad = _scripts(tmp_path / "g", t=True), _scripts(tmp_path / "b", t=False)
    assert _run(tmp_path, suite, "--script", good, "--k", "10", "--out", base)[0] == 0
    gate = ("--sequential", "--baseline", base, "--fail-on", "worse-than:0.3")
    code, _, stderr = _run(tmp_path, suite, "--script", good, *gate, "--out", tmp_path / "match")
    assert code == 0, stderr
    assert "--fail-on worse-than:0.3 (sequential): not hit: all 1 task shown at most 30 pp worse" in stderr
    block = read_report(tmp_path / "match").sequential
    assert block is not None and (block.plan.side, block.plan.margin) == ("not-worse", 0.3)
    assert [(s.reason, s.direction) for s in block.tasks] == [("decided", "not-worse")]
    code, _, stderr = _run(tmp_path, suite, "--script", bad, *gate, "--out", tmp_path / "drop")
    assert code == 4, stderr
    assert (
        "--fail-on worse-than:0.3 (sequential): hit by 1 of 1 task (t futility at 5 runs): exit 4" in stderr
    )
