"""eval run|variants --shard I/N, eval merge and eval plan through the CLI: a matrix of shards merged into the
report of the unsharded run (field by field), a shard lost, a shard run twice, a shard of another plan, a
shard's runs.jsonl that does not match its manifest, and a plan run on another machine."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from alisio.core.lab.runs.records import RunStatus
from tests.integration.helpers import (
    FIX,
    NOOP,
    ROOT,
    alisio,
    eval_run,
    make_suite,
    read_report,
    read_runs,
    task,
    write_script,
)

GRANTS = ("--allow-write",)
TIMINGS = {
    "wallMsMedian",
    "wallMsTotal",
    "wallMsVariance",
    "msPerSuccess",
    "firstEventMsMedian",
    "wallCv",
    "createdAt",
    "runId",
}
"""What differs between any two runs of the same scripted job: when and how fast, and the run ids."""


def _suite(root: Path) -> tuple[Path, Path]:
    """The calc suite with three tasks, and a scripts directory: fix-add and fix-mul pass, fix-sub fails."""
    suite = make_suite(root, task("fix-add"), task("fix-mul"), task("fix-sub"))
    scripts = root / "scripts"
    scripts.mkdir()
    for name, script in (("fix-add", FIX), ("fix-mul", FIX), ("fix-sub", NOOP)):
        write_script(scripts / f"{name}.json", script)
    return suite, scripts


def _shard(home: Path, suite: Path, scripts: Path, shard: str, out: Path, *args: str) -> Any:
    return eval_run(
        home, suite, "-k", "4", *GRANTS, "--shard", shard, "--out", out, "-j", "1", *args, script=scripts
    )


def _timeless(value: Any, drop: set[str] = TIMINGS) -> Any:
    if isinstance(value, dict):
        return {k: _timeless(v, drop) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_timeless(v, drop) for v in value]
    return value


def _without_ids(text: str, drop: str = "", directory: Path | None = None) -> str:
    """``text`` without run ids, times, durations and the lines starting with ``drop``."""
    text = re.sub(r"\d{4}-\d\d-\d\dT[\d:.-]+Z", "<id>", text)
    text = re.sub(r'time="[\d.]+"|timestamp="[\d:T-]+"|\b\d+\.\d s\b', "<t>", text)
    if directory is not None:
        text = text.replace(str(directory), "<dir>")
    return "\n".join(line for line in text.splitlines() if not (drop and line.startswith(drop)))


def _report_json(directory: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((directory / "report.json").read_text())
    return document


@pytest.mark.parametrize("count", [2, 3])
def test_a_matrix_of_shards_merges_into_the_report_of_the_unsharded_run(home: Path, count: int) -> None:
    """Each shard is partial and says so; the merged report.json, runs.jsonl, JUnit and step summary are the
    unsharded run's but for timings, run ids and the shard list."""
    suite, scripts = _suite(home)
    outs = [home / f"shard-{i}" for i in range(1, count + 1)]
    for index, out in enumerate(outs, start=1):
        done = _shard(home, suite, scripts, f"{index}/{count}", out)
        assert done.returncode == 0, done.stderr
        assert f"12 runs, shard {index} of {count}:" in done.stderr.splitlines()[1]
        report = read_report(out)
        assert report.origin is not None and report.origin.shard is not None
        assert (report.origin.shard.index, report.origin.shard.count, report.origin.shard.planned_runs) == (
            index,
            count,
            12,
        )
        assert report.planned_runs == sum(t.runs for t in report.tasks) < 12
        assert f"Shard {index} of {count} of a plan of 12 runs" in (out / "report.md").read_text()
        plan = json.loads((out / "plan.json").read_text())
        assert plan["shard"]["index"] == index and len(plan["shard"]["runs"]) == report.planned_runs
    summary = home / "summary.md"
    merged = alisio(home, "eval", "merge", *outs, "--out", home / "merged", "--junit", home / "merged.xml",
                    env={"GITHUB_STEP_SUMMARY": str(summary)})  # fmt: skip
    assert merged.returncode == 0, merged.stderr
    whole_summary = home / "whole-summary.md"
    whole = alisio(home, "eval", "run", "calc-suite", "--suite-dir", suite, "--yes", "--script", scripts, "-k", "4",
                   *GRANTS, "--out", home / "whole", "-j", "1", "--junit", home / "whole.xml",
                   env={"GITHUB_STEP_SUMMARY": str(whole_summary)})  # fmt: skip
    assert whole.returncode == 0, whole.stderr
    ours, theirs = _report_json(home / "merged"), _report_json(home / "whole")
    assert ours.pop("origin")["shards"][0]["index"] == 1 and theirs.pop("origin") is None
    assert _timeless(ours) == _timeless(theirs)
    records = [json.loads(line) for line in (home / "merged" / "runs.jsonl").read_text().splitlines()]
    expected = [json.loads(line) for line in (home / "whole" / "runs.jsonl").read_text().splitlines()]
    clock = {"wallMs", "firstEventMs", "startedAt"}
    assert _timeless(records, clock) == _timeless(expected, clock)
    assert all(
        (home / "merged" / "runs" / r["taskId"] / f"{r['repetition']}.jsonl").is_file() for r in records
    )
    assert merged.stdout.splitlines()[-1].split()[:6] == whole.stdout.splitlines()[-1].split()[:6]
    junit, whole_junit = (home / "merged.xml").read_text(), (home / "whole.xml").read_text()
    assert junit.count("<testcase") == whole_junit.count("<testcase") == 3
    assert _without_ids(junit, "", home / "merged") == _without_ids(whole_junit, "", home / "whole")
    assert _without_ids(summary.read_text(), "> Merged from") == _without_ids(whole_summary.read_text())
    assert f"merged {count} shards of plan" in merged.stderr
    shown = alisio(home, "eval", "show", home / "merged", "--task", "fix-sub")
    assert shown.returncode == 0 and "fix-sub rep 0: fail" in shown.stdout


def test_a_lost_shard_is_refused_or_merged_as_partial_and_the_resume_runs_what_it_lacked(home: Path) -> None:
    suite, scripts = _suite(home)
    for index in (1, 3):
        assert _shard(home, suite, scripts, f"{index}/3", home / f"s{index}").returncode == 0
    refused = alisio(home, "eval", "merge", home / "s1", home / "s3", "--out", home / "merged")
    assert refused.returncode == 1 and not (home / "merged").exists()
    assert refused.stderr.splitlines()[0] == "alisio eval merge: missing: shard 2 of 3"
    partial = alisio(
        home, "eval", "merge", home / "s1", home / "s3", "--out", home / "merged", "--allow-partial"
    )
    assert partial.returncode == 1, partial.stderr
    report = read_report(home / "merged")
    assert report.interrupted and report.planned_runs == 12 and report.summary.runs == 8
    assert report.stopped == "merged with --allow-partial: missing shard 2 of 3"
    assert (
        "planned runs were never run" in partial.stderr
        and "counted apart, never as failures" in partial.stderr
    )
    resumed = alisio(home, "eval", "run", "--resume", home / "merged")
    assert resumed.returncode == 0, resumed.stderr
    assert "[4/4]" in resumed.stderr and "[5/" not in resumed.stderr
    whole = read_report(home / "merged")
    assert (whole.summary.runs, whole.interrupted) == (12, False)
    assert sorted((r.task_id, r.repetition) for r in read_runs(home / "merged")) == sorted(
        (t, rep) for t in ("fix-add", "fix-mul", "fix-sub") for rep in range(4)
    )


def test_a_shard_run_twice_replaces_its_own_output_and_the_merge_takes_the_newest(home: Path) -> None:
    suite, scripts = _suite(home)
    for index in (1, 2):
        assert _shard(home, suite, scripts, f"{index}/2", home / f"s{index}").returncode == 0
    first_id = read_report(home / "s2").conditions.run_id
    again = _shard(home, suite, scripts, "2/2", home / "s2")
    assert again.returncode == 0, again.stderr
    assert f"replacing the earlier output of shard 2 of 2 in {home / 's2'} (run {first_id})" in again.stderr
    assert read_report(home / "s2").conditions.run_id != first_id
    elsewhere = eval_run(home, suite, "-k", "4", *GRANTS, "--shard", "2/2", "-j", "1", script=scripts)
    assert elsewhere.returncode == 0, elsewhere.stderr
    newest = sorted((home / "data" / "eval").iterdir())[-1]
    merged = alisio(home, "eval", "merge", home / "s1", home / "s2", newest.name, "--out", home / "merged")
    assert merged.returncode == 0, merged.stderr
    assert f"shard 2: given more than once; used the newest, {newest}, not {home / 's2'}" in merged.stderr
    origin = read_report(home / "merged").origin
    assert origin is not None and origin.shards[1].directory == str(newest)
    assert origin.shards[1].left_out == (str(home / "s2"),)
    assert "was given more than once" in (home / "merged" / "report.md").read_text()


def test_a_shard_of_another_plan_is_refused_naming_the_shard_and_the_field(home: Path) -> None:
    suite, scripts = _suite(home)
    assert _shard(home, suite, scripts, "1/2", home / "s1").returncode == 0
    other = eval_run(home, suite, "-k", "3", *GRANTS, "--shard", "2/2", "--out", home / "s2", script=scripts)
    assert other.returncode == 0
    refused = alisio(home, "eval", "merge", home / "s1", home / "s2", "--out", home / "merged")
    assert refused.returncode == 1 and not (home / "merged").exists()
    assert (
        refused.stderr
        == f"alisio eval merge: shard 2 ({home / 's2'}): k differs: 4 in shard 1 ({home / 's1'}), 3 here\n"
    )
    into_other = _shard(home, suite, scripts, "2/2", home / "s2")
    assert into_other.returncode == 1
    assert "holds shard 2 of 2 of another plan" in into_other.stderr and "pass --force" in into_other.stderr
    count = eval_run(home, suite, "-k", "4", *GRANTS, "--shard", "2/3", "--out", home / "t2", script=scripts)
    assert count.returncode == 0
    counted = alisio(home, "eval", "merge", home / "s1", home / "t2", "--out", home / "merged")
    assert "the number of shards differs: 2 in shard 1" in counted.stderr


def test_a_shards_runs_must_match_its_manifest(home: Path) -> None:
    suite, scripts = _suite(home)
    for index in (1, 2):
        assert _shard(home, suite, scripts, f"{index}/2", home / f"s{index}").returncode == 0
    lines = (home / "s1" / "runs.jsonl").read_text().splitlines(keepends=True)
    stolen = (home / "s2" / "runs.jsonl").read_text().splitlines(keepends=True)[0]
    (home / "s1" / "runs.jsonl").write_text("".join([*lines, stolen]))
    refused = alisio(home, "eval", "merge", home / "s1", home / "s2", "--out", home / "merged")
    record = json.loads(stolen)
    assert refused.returncode == 1
    assert (
        f"shard 1 ({home / 's1'}): runs.jsonl holds task {record['taskId']} rep {record['repetition']}, which its "
        "plan.json does not own"
    ) in refused.stderr
    (home / "s1" / "runs.jsonl").write_text("".join(lines[1:]))
    missing = alisio(home, "eval", "merge", home / "s1", home / "s2", "--out", home / "merged")
    assert missing.returncode == 1
    assert f"missing: 1 of the {len(lines)} runs of shard 1 ({home / 's1'})" in missing.stderr


def test_shards_refuse_what_a_slice_cannot_honour(home: Path) -> None:
    suite, scripts = _suite(home)
    cases = [
        (("--shard", "5/4"), "--shard 5/4: the shard's number is from 1 to 4"),
        (("--shard", "1/13"), "the plan has 12 (task, repetition) slots"),
        (("--shard", "two"), "expected I/N"),
        (("--balance-from", "x"), "--balance-from goes with --shard I/N"),
    ]
    for args, message in cases:
        done = eval_run(home, suite, "-k", "4", *GRANTS, *args, script=scripts)
        assert done.returncode == 1 and message in done.stderr, (args, done.stderr)
    seq = eval_run(home, suite, *GRANTS, "--shard", "1/2", "--until-width", "0.5", script=scripts)
    assert seq.returncode == 1 and "--shard does not go with a sequential design" in seq.stderr
    resumed = alisio(home, "eval", "run", "--resume", "latest", "--shard", "1/2")
    assert resumed.returncode == 1


def test_fail_on_is_refused_on_a_shard(home: Path) -> None:
    suite, scripts = _suite(home)
    base = eval_run(home, suite, "-k", "5", *GRANTS, "--out", home / "base", script=scripts)
    assert base.returncode == 0, base.stderr
    gated = eval_run(home, suite, *GRANTS, "--sequential", "--baseline", home / "base", "--fail-on", "worse-than:0.2",
                     "--shard", "1/2", script=scripts)  # fmt: skip
    assert gated.returncode == 1
    assert (
        "--fail-on does not go with --shard: a shard holds a slice of each task's runs, so it draws no verdict"
        in gated.stderr
    )


def test_balanced_shards_cover_the_plan_and_are_cut_alike_only_from_the_same_report(home: Path) -> None:
    suite, scripts = _suite(home)
    assert eval_run(home, suite, "-k", "2", *GRANTS, "--out", home / "timing", script=scripts).returncode == 0
    for index in (1, 2):
        done = _shard(
            home, suite, scripts, f"{index}/2", home / f"b{index}", "--balance-from", str(home / "timing")
        )
        assert done.returncode == 0, done.stderr
    owned = [json.loads((home / f"b{i}" / "plan.json").read_text())["shard"] for i in (1, 2)]
    assert owned[0]["slicing"] == "balanced" and owned[0]["weights"]
    runs = [(r["taskId"], r["repetition"]) for block in owned for r in block["runs"]]
    assert sorted(runs) == sorted((t, rep) for t in ("fix-add", "fix-mul", "fix-sub") for rep in range(4))
    assert alisio(home, "eval", "merge", home / "b1", home / "b2", "--out", home / "merged").returncode == 0
    assert _shard(home, suite, scripts, "2/2", home / "e2").returncode == 0
    mixed = alisio(home, "eval", "merge", home / "b1", home / "e2", "--out", home / "mixed")
    assert mixed.returncode == 1 and "the slicing differs: balanced by" in mixed.stderr


def test_a_variants_job_shards_without_verdicts_and_merges_into_the_unsharded_comparison(home: Path) -> None:
    suite, scripts = _suite(home)
    compare = home / "compare.json"
    compare.write_text(json.dumps({"suite": "calc-suite", "variants": [
        {"id": "base", "overrides": {}}, {"id": "early", "overrides": {"compaction.threshold": 0.6}}]}))  # fmt: skip

    def variants(*args: str | Path) -> Any:
        return alisio(home, "eval", "variants", "calc-suite", "--suite-dir", suite, "--yes", "--variants", compare,
                      "--script", scripts, "-k", "3", *GRANTS, "-j", "1", *args)  # fmt: skip

    for index in (1, 2):
        done = variants("--shard", f"{index}/2", "--out", home / f"v{index}")
        assert done.returncode == 0, done.stderr
        assert not (home / f"v{index}" / "comparison.json").exists() and "variant base:" in done.stdout
        assert (home / f"v{index}" / "base" / "report.json").is_file()
    merged = alisio(
        home, "eval", "merge", home / "v1", home / "v2", "--out", home / "vm", "--fail-on", "regressed"
    )
    assert merged.returncode == 0, merged.stderr
    assert "early: --fail-on regressed: not hit" in merged.stderr
    assert variants("--out", home / "whole").returncode == 0
    ours = json.loads((home / "vm" / "comparison.json").read_text())
    theirs = json.loads((home / "whole" / "comparison.json").read_text())
    assert _timeless(ours) == _timeless(theirs)
    for arm in ("base", "early"):
        mine, whole = _report_json(home / "vm" / arm), _report_json(home / "whole" / arm)
        mine.pop("origin"), whole.pop("origin")
        assert _timeless(mine) == _timeless(whole)
    plain = [home / "s1", home / "s2"]
    for index, out in enumerate(plain, start=1):
        assert _shard(home, suite, scripts, f"{index}/2", out).returncode == 0
    refused = alisio(home, "eval", "merge", *plain, "--out", home / "pm", "--fail-on", "regressed")
    assert (
        refused.returncode == 1
        and "--fail-on gates a comparison, and a merged eval run has none" in refused.stderr
    )


def test_a_plan_runs_on_another_machine_in_slices_and_refuses_what_it_does_not_plan(
    home: Path, tmp_path: Path
) -> None:
    """eval plan writes every run with its seed and fingerprint; eval run --plan --shard on a copy of the suite
    elsewhere (--suite-dir says where) runs a slice; a flag or a suite that says something else is refused."""
    suite, scripts = _suite(home)
    plan = home / "plan.json"
    made = alisio(home, "eval", "plan", "calc-suite", "--suite-dir", suite, "--yes", "-k", "4", "--script", scripts,
                  *GRANTS, "--out", plan)  # fmt: skip
    assert made.returncode == 0, made.stderr
    document = json.loads(plan.read_text())
    assert len(document["runs"]) == 12 and {"taskId", "repetition", "seed", "fingerprint"} <= set(
        document["runs"][0]
    )
    assert len({r["fingerprint"] for r in document["runs"]}) == 12 and not list(
        (home / "data").glob("eval/*")
    )
    machine = tmp_path / "machine"
    copied, copied_scripts = machine / "calc-suite", machine / "scripts"
    shutil.copytree(suite, copied)
    shutil.copytree(scripts, copied_scripts)
    outs = []
    for index in (1, 2):
        out = machine / f"shard-{index}"
        done = alisio(home, "eval", "run", "--plan", plan, "--shard", f"{index}/2", "--suite-dir", copied,
                      "--script", copied_scripts, "--out", out, "-j", "1")  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads((out / "plan.json").read_text())["digest"] == document["digest"]
        outs.append(out)
    assert alisio(home, "eval", "merge", *outs, "--out", machine / "merged").returncode == 0
    assert read_report(machine / "merged").summary.runs == 12
    conflict = alisio(home, "eval", "run", "--plan", plan, "-k", "3", "--shard", "1/2")
    assert conflict.returncode == 1 and "-k: the plan says 4, given 3" in conflict.stderr
    (copied / "fixtures" / "calc" / "check.py").write_text("import sys\nsys.exit(0)\n")
    changed = alisio(home, "eval", "run", "--plan", plan, "--shard", "1/2", "--suite-dir", copied, "--script",
                     copied_scripts, "--out", machine / "again")  # fmt: skip
    assert (
        changed.returncode == 1
        and "--plan" in changed.stderr
        and "the suite's content hash differs" in changed.stderr
    )
    assert "nothing was run" in changed.stderr and not (machine / "again" / "runs.jsonl").exists()


def test_a_stopped_shard_resumes_its_own_slice(home: Path) -> None:
    suite, scripts = _suite(home)
    assert _shard(home, suite, scripts, "2/3", home / "s2").returncode == 0
    lines = (home / "s2" / "runs.jsonl").read_text().splitlines(keepends=True)
    (home / "s2" / "runs.jsonl").write_text("".join(lines[:1]))
    (home / "s2" / "report.json").unlink()
    resumed = alisio(home, "eval", "run", "--resume", home / "s2")
    assert resumed.returncode == 0, resumed.stderr
    records = read_runs(home / "s2")
    assert len(records) == len(lines) and {r.status for r in records} <= {RunStatus.PASS, RunStatus.FAIL}
    report = read_report(home / "s2")
    assert report.origin is not None and report.origin.shard is not None and report.origin.shard.index == 2


def test_replay_shards_merge_into_the_unsharded_replay(home: Path) -> None:
    """--mode replay of the bundled tool-sequences suite in 3 shards: the merged report is the whole replay's."""
    outs = [home / f"r{i}" for i in (1, 2, 3)]
    for index, out in enumerate(outs, start=1):
        done = alisio(home, "eval", "run", "tool-sequences", "--mode", "replay", "--allow-write", "--allow-process",
                      "--shard", f"{index}/3", "--out", out, cwd=ROOT)  # fmt: skip
        assert done.returncode == 0, done.stderr
    merged = alisio(home, "eval", "merge", *outs, "--out", home / "merged")
    assert merged.returncode == 0, merged.stderr
    whole = alisio(home, "eval", "run", "tool-sequences", "--mode", "replay", "--allow-write", "--allow-process",
                   "--out", home / "whole", cwd=ROOT)  # fmt: skip
    assert whole.returncode == 0, whole.stderr
    ours, theirs = _report_json(home / "merged"), _report_json(home / "whole")
    assert ours.pop("origin") is not None and theirs.pop("origin") is None
    assert _timeless(ours) == _timeless(theirs) and ours["conditions"]["mode"] == "replay"
