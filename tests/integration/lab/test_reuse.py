"""--reuse RUN|DIR and --dry-run through the CLI: stored runs taken instead of run (and said so in the
output and every report), a mismatch named, errored runs run again, one arm of a variants job served from a
plain run; the dry run's plan and estimate, nothing run, written or spent."""

from __future__ import annotations

import json
from pathlib import Path

from alisio.core.lab.runs.records import RunStatus
from tests.integration.helpers import (
    FIX,
    NOOP,
    alisio,
    eval_run,
    make_suite,
    read_report,
    read_runs,
    task,
    write_script,
)

GRANTS = ("--allow-write",)


def _suite(root: Path) -> tuple[Path, Path]:
    suite = make_suite(root, task("fix-add"), task("fix-sub"))
    scripts = root / "scripts"
    scripts.mkdir()
    write_script(scripts / "fix-add.json", FIX)
    write_script(scripts / "fix-sub.json", NOOP)
    return suite, scripts


def test_matching_stored_runs_are_reused_and_every_report_says_so(home: Path) -> None:
    suite, scripts = _suite(home)
    assert eval_run(home, suite, "-k", "3", *GRANTS, "--out", home / "base", script=scripts).returncode == 0
    base_id = read_report(home / "base").conditions.run_id
    done = eval_run(home, suite, "-k", "5", *GRANTS, "--reuse", home / "base", "--out", home / "more", "-j", "1",
                    script=scripts)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"6 of 10 runs reused from {base_id} (same plan fingerprint)" in done.stderr
    assert "[4/4]" in done.stderr and "[5/" not in done.stderr  # only the 4 new runs ran
    records = read_runs(home / "more")
    assert sorted((r.task_id, r.repetition) for r in records) == [
        (t, rep) for t in ("fix-add", "fix-sub") for rep in range(5)
    ]
    report = read_report(home / "more")
    assert report.summary.runs == 10 and report.origin is not None
    assert [(r.run_id, r.runs) for r in report.origin.reused] == [(base_id, 6)]
    line = f"6 of 10 runs reused from {base_id}, not run again."
    assert (
        line in (home / "more" / "report.md").read_text()
        and line in (home / "more" / "report.html").read_text()
    )
    assert json.loads((home / "more" / "plan.json").read_text())["reused"][0]["runId"] == base_id
    shown = alisio(home, "eval", "show", home / "more", "--task", "fix-sub", "--rep", "1")
    assert (
        shown.returncode == 0 and "fix-sub rep 1: fail" in shown.stdout
    )  # a reused run's transcript was copied
    page = alisio(home, "eval", "runs", "--html", home / "page", home / "more")
    assert "6 runs reused" in (home / "page" / "index.html").read_text() and page.returncode == 0


def test_a_mismatch_is_named_and_nothing_runs(home: Path) -> None:
    suite, scripts = _suite(home)
    assert eval_run(home, suite, "-k", "2", *GRANTS, "--out", home / "base", script=scripts).returncode == 0
    other = home / "other"
    other.mkdir()
    write_script(other / "fix-add.json", NOOP)
    write_script(other / "fix-sub.json", NOOP)
    refused = eval_run(
        home, suite, "-k", "2", *GRANTS, "--reuse", home / "base", "--out", home / "new", script=other
    )
    assert refused.returncode == 1
    assert f"alisio eval run: --reuse {home / 'base'}: the --script content differs:" in refused.stderr
    assert (
        "nothing was run: --reuse takes only runs that measured what this command measures" in refused.stderr
    )
    assert not (home / "new" / "runs.jsonl").exists()
    none = eval_run(home, suite, "-k", "2", *GRANTS, "--reuse", home / "nowhere", script=scripts)
    assert none.returncode == 1 and "no such directory" in none.stderr


def test_stored_runs_that_ended_error_run_again(home: Path) -> None:
    suite, scripts = _suite(home)
    assert eval_run(home, suite, "-k", "2", *GRANTS, "--out", home / "base", script=scripts).returncode == 0
    runs = home / "base" / "runs.jsonl"
    records = [json.loads(line) for line in runs.read_text().splitlines()]
    records[0].update(status="error", reason="provider_network")
    runs.write_text("".join(json.dumps(r) + "\n" for r in records))
    done = eval_run(
        home, suite, "-k", "2", *GRANTS, "--reuse", home / "base", "--out", home / "new", script=scripts
    )
    assert done.returncode == 0, done.stderr
    assert "1 of its matching runs ended error: they run again" in done.stderr
    assert "3 of 4 runs reused" in done.stderr
    assert all(r.status is not RunStatus.ERROR for r in read_runs(home / "new"))


def test_a_variants_arm_takes_the_runs_of_a_plain_run_and_the_other_arm_says_why_it_takes_none(
    home: Path,
) -> None:
    suite, scripts = _suite(home)
    assert eval_run(home, suite, "-k", "2", *GRANTS, "--out", home / "base", script=scripts).returncode == 0
    compare = home / "compare.json"
    compare.write_text(json.dumps({"suite": "calc-suite", "variants": [
        {"id": "base", "overrides": {}}, {"id": "early", "overrides": {"compaction.threshold": 0.6}}]}))  # fmt: skip
    done = alisio(home, "eval", "variants", "calc-suite", "--suite-dir", suite, "--yes", "--variants", compare,
                  "--script", scripts, "-k", "2", *GRANTS, "--reuse", home / "base", "--out", home / "v")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        f"--reuse {home / 'base'}: variant early: nothing reused: the configuration hash differs:"
        in done.stderr
    )
    assert "4 of 8 runs reused" in done.stderr
    base = read_report(home / "v" / "base")
    assert base.origin is not None and base.origin.reused[0].runs == 4
    assert read_report(home / "v" / "early").origin is None
    assert (home / "v" / "comparison.json").is_file()


def test_a_dry_run_prints_the_plan_and_an_estimate_and_spends_nothing(home: Path) -> None:
    suite, scripts = _suite(home)
    fresh = eval_run(home, suite, "-k", "4", *GRANTS, "--out", home / "never", "--dry-run", script=scripts)
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout.splitlines()[0] == (
        "dry run: would run calc-suite 1.0.0: 2 tasks x k=4 = 8 runs (scripted, scripted, seed 0); nothing is run"
    )
    assert fresh.stdout.splitlines()[-1].startswith("no past runs to estimate from (none of suite calc-suite")
    assert not (home / "never").exists() and not list((home / "data").glob("eval/*"))
    assert eval_run(home, suite, "-k", "3", *GRANTS, "--out", home / "base", script=scripts).returncode == 0
    dry = eval_run(home, suite, "-k", "4", *GRANTS, "--shard", "2/2", "--reuse", home / "base", "--dry-run",
                   "--input-rate", "1", "--output-rate", "2", script=scripts)  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert lines[1].startswith("shard 2 of 2: 4 runs of the plan's 8 (each task's repetitions spread); plan ")
    assert lines[2].startswith("reuse: 2 of 4 runs from ") and lines[2].endswith("; 2 runs would run")
    assert lines[3].startswith("estimate from 6 past runs of suite calc-suite with model scripted (live) in ")
    # the 2 runs left: fix-add rep 3 (FIX: 350 in, 27 out) and fix-sub rep 3 (NOOP: 50 in, 4 out), each task's
    # mean of its past runs (scripted: all alike); the cost at 1 and 2 USD per million input and output tokens
    assert lines[4].startswith("  tokens: about 431 (per run: median ")
    assert lines[5].startswith("  cost: about 0.000462 USD (per run: median ")
    assert lines[6].startswith("  wall: about ")
    assert len(list((home / "data").glob("eval/*"))) == 0 and len(read_runs(home / "base")) == 6
    resumed = alisio(home, "eval", "run", "--resume", home / "base", "--dry-run")
    assert resumed.returncode == 1 and "--dry-run does not go with --resume" in resumed.stderr
    recorded = alisio(home, "eval", "record", "calc-suite", "--suite-dir", suite, "--yes", "--script", scripts,
                      *GRANTS, "--dry-run")  # fmt: skip
    assert (
        recorded.returncode == 0
        and "would record calc-suite 1.0.0: 2 tasks x k=1 = 2 runs" in recorded.stdout
    )
    assert not (suite / "cassettes").exists()
    compare = home / "compare.json"
    compare.write_text(json.dumps({"suite": "calc-suite", "variants": [
        {"id": "base", "overrides": {}}, {"id": "early", "overrides": {"compaction.threshold": 0.6}}]}))  # fmt: skip
    variants = alisio(home, "eval", "variants", "calc-suite", "--suite-dir", suite, "--yes", "--variants", compare,
                      "--script", scripts, "-k", "3", *GRANTS, "--dry-run")  # fmt: skip
    assert variants.returncode == 0, variants.stderr
    assert "would run calc-suite 1.0.0: 2 variants x 2 tasks x k=3 = 12 runs" in variants.stdout
    assert "variant base: estimate from 6 past runs" in variants.stdout
    assert "variant early: estimate from 6 past runs" in variants.stdout
    assert len(list((home / "data").glob("eval/*"))) == 0
