"""``alisio eval variants`` end to end: the installed command on suites built in tmp_path, with the scripted
provider (``--script``): report directories per variant, the comparison, the interleaved order, refusals."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from alisio.core.harness.config import MeasuredConfig, apply_overrides, config_hash
from alisio.core.lab.comparisons.variants import VariantsComparison, interleave
from alisio.core.lab.reports.report import Report
from alisio.core.lab.runs.records import RunRecord, RunStatus
from tests.integration.helpers import (
    ALISIO,
    FIX,
    make_suite,
    refused,
    task,
    variants,
    wait_until_sleeping,
    write_script,
)

RECORD = msgspec.json.Decoder(RunRecord)
REPORT = msgspec.json.Decoder(Report)
COMPARISON = msgspec.json.Decoder(VariantsComparison)
EARLY = {"compaction.threshold": 0.6}
PROGRESS = re.compile(r"\[(\d+)/(\d+)\] (\S+) (\S+) rep (\d+): (\S+)")


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(ALISIO_CONFIG_HOME=str(home / "config"), ALISIO_DATA_HOME=str(home / "data"))
    return env


def compare_file(home: Path, *variants: tuple[str, dict[str, Any]], suite: str = "calc-suite") -> Path:
    path = home / "compare.json"
    document = {"suite": suite, "variants": [{"id": i, "overrides": o} for i, o in variants]}
    path.write_text(json.dumps(document))
    return path


def read_runs(directory: Path) -> list[RunRecord]:
    return [RECORD.decode(line) for line in (directory / "runs.jsonl").read_bytes().splitlines()]


def read_report(directory: Path) -> Report:
    return REPORT.decode((directory / "report.json").read_bytes())


def hash_of(overrides: dict[str, Any]) -> str:
    return config_hash(apply_overrides(MeasuredConfig(), overrides, "test").unwrap())


# --- reports and comparison --------------------------------------------------------------------------------


def test_two_variants_write_two_reports_and_a_comparison(home: Path) -> None:
    """baseline and compaction.threshold 0.6, k = 5: two report dirs with their own hashes, runs tagged, a
    comparison (5/5 vs 5/5: inconclusive) in comparison.json and comparison.md, the Markdown on stdout, exit 0."""
    suite = make_suite(home)
    compare = compare_file(home, ("baseline", {}), ("early-compaction", EARLY))
    out = home / "out"
    script = write_script(home / "fix.json", FIX)
    result = variants(home, suite, compare, "--allow-write", "--script", str(script), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert {p.name for p in out.iterdir()} == {
        "baseline",
        "early-compaction",
        "plan.json",  # what --resume continues
        "comparison.json",
        "comparison.md",
        "comparison.html",
    }
    hashes = {"baseline": hash_of({}), "early-compaction": hash_of(EARLY)}
    assert hashes["baseline"] != hashes["early-compaction"]
    for variant_id, expected in hashes.items():
        directory = out / variant_id
        assert {p.name for p in directory.iterdir()} == {
            "report.json",
            "report.md",
            "report.html",
            "runs.jsonl",
            "runs",
        }
        report = read_report(directory)
        assert report.conditions.config_hash == expected
        assert report.conditions.run_id.endswith(f"/{variant_id}")
        records = read_runs(directory)
        assert sorted(r.repetition for r in records) == [0, 1, 2, 3, 4]
        assert all(r.variant == variant_id and r.config_hash == expected for r in records)
        assert all(r.status is RunStatus.PASS for r in records)
        (fix,) = report.tasks
        assert (fix.passes, fix.judged) == (5, 5)
    assert read_report(out / "early-compaction").conditions.compaction.threshold == 0.6
    comparison = COMPARISON.decode((out / "comparison.json").read_bytes())
    assert comparison.baseline == "baseline"
    assert [(v.id, v.config_hash) for v in comparison.variants] == list(hashes.items())
    (entry,) = comparison.comparisons
    assert (entry.baseline, entry.candidate) == ("baseline", "early-compaction")
    assert [(t.task_id, t.outcome) for t in entry.comparison.tasks] == [("fix-add", "inconclusive")]
    assert entry.comparison.candidate.config_hash == hashes["early-compaction"]
    markdown = (out / "comparison.md").read_text()
    assert result.stdout == markdown
    assert "| early-compaction | candidate | " in markdown and "compaction.threshold=0.6" in markdown
    assert "## baseline → early-compaction: Comparison: calc-suite 1.0.0" in markdown
    assert f"comparison: {out / 'comparison.md'}" in result.stderr


def test_runs_are_interleaved_ab_then_ba(home: Path) -> None:
    """Two tasks, k = 2: the progress lines and each variant's runs.jsonl follow alisio.core.lab.comparisons.variants.interleave
    (each slot runs both variants back to back, A, B then B, A), and both get the same (task, repetition, seed)."""
    suite = make_suite(home, task("fix-add"), task("fix-add-2"))
    compare = compare_file(home, ("a", {}), ("b", {"limits.maxContextChars": 150000}))
    script = write_script(home / "fix.json", FIX)
    result = variants(
        home, suite, compare, "--allow-write", "--script", str(script), "--k", "2", "--seed", "7", "-j", "1",
        "--out", str(home / "out"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    seen = [m.groups() for m in map(PROGRESS.match, result.stderr.splitlines()) if m]
    plan = interleave(["a", "b"], ["fix-add", "fix-add-2"], 2, 7).unwrap()
    assert [(int(i), int(n), v, t, int(r)) for i, n, v, t, r, _ in seen] == [
        (index, 8, s.variant, s.task_id, s.repetition) for index, s in enumerate(plan, start=1)
    ]
    assert [v for *_, v, _t, _r, _s in seen] == ["a", "b", "b", "a", "a", "b", "b", "a"]
    for variant_id in ("a", "b"):
        records = read_runs(home / "out" / variant_id)
        expected = [(s.task_id, s.repetition, s.seed) for s in plan if s.variant == variant_id]
        assert [(r.task_id, r.repetition, r.seed) for r in records] == expected
    assert {(r.task_id, r.repetition) for r in read_runs(home / "out" / "a")} == {
        (r.task_id, r.repetition) for r in read_runs(home / "out" / "b")
    }


def test_json_prints_typed_lines(home: Path) -> None:
    """--json with three variants: stdout is three variant_report lines then two comparison lines (baseline
    against each), nothing else; the progress stays on stderr."""
    suite = make_suite(home)
    compare = compare_file(
        home, ("base", {}), ("early", EARLY), ("small", {"limits.maxContextChars": 100000})
    )
    script = write_script(home / "fix.json", FIX)
    result = variants(home, suite, compare, "--allow-write", "--script", str(script), "--k", "1", "--json")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["type"], line.get("variant")) for line in lines] == [
        ("variant_report", "base"),
        ("variant_report", "early"),
        ("variant_report", "small"),
        ("comparison", None),
        ("comparison", None),
    ]
    hashes = [line["report"]["conditions"]["configHash"] for line in lines[:3]]
    assert hashes == [hash_of({}), hash_of(EARLY), hash_of({"limits.maxContextChars": 100000})]
    assert [(line["baseline"], line["candidate"]) for line in lines[3:]] == [
        ("base", "early"),
        ("base", "small"),
    ]
    assert [t["outcome"] for t in lines[3]["comparison"]["tasks"]] == ["low_power"]
    assert "[3/3] small fix-add rep 0: pass" in result.stderr
    (root,) = (home / "data" / "eval").iterdir()
    assert {p.name for p in root.iterdir()} == {
        "base",
        "early",
        "small",
        "plan.json",
        "comparison.json",
        "comparison.md",
        "comparison.html",
    }
    assert lines[0]["report"]["conditions"]["runId"] == f"{root.name}/base"


def test_an_errored_run_exits_1_with_the_reports_written(home: Path) -> None:
    """A verifier that cannot start makes every run error: exit 1, yet both reports (in <dataDir>/eval/<runId>/)
    and the comparison (not comparable) are written."""
    broken = [{"kind": "command", "id": "check", "command": ["alisio-no-such-command"], "timeoutMs": 30000}]
    suite = make_suite(home, task("fix-add", verifiers=broken))
    compare = compare_file(home, ("baseline", {}), ("early", EARLY))
    script = write_script(home / "fix.json", FIX)
    result = variants(home, suite, compare, "--allow-write", "--k", "1", "--script", str(script))
    assert result.returncode == 1
    (root,) = (home / "data" / "eval").iterdir()
    for variant_id in ("baseline", "early"):
        (record,) = read_runs(root / variant_id)
        assert record.status is RunStatus.ERROR
        assert read_report(root / variant_id).conditions.run_id == f"{root.name}/{variant_id}"
    comparison = COMPARISON.decode((root / "comparison.json").read_bytes())
    assert [t.outcome for t in comparison.comparisons[0].comparison.tasks] == ["not_comparable"]
    assert "2 runs ended error" in result.stderr


# --- refused before any run --------------------------------------------------------------------------------


def test_a_provider_override_is_rejected_before_any_run(home: Path) -> None:
    """provider.model is not measured: the file is rejected naming the variant and the key, with --model."""
    suite = make_suite(home)
    compare = compare_file(home, ("baseline", {}), ("gpt", {"provider.model": "gpt-x"}))
    result = variants(
        home, suite, compare, "--allow-write", "--script", str(write_script(home / "f.json", FIX))
    )
    assert refused(home, result).splitlines() == [
        f"alisio eval variants: {compare}: variant gpt: provider.model: does not enter the configuration hash; "
        "to compare models use --model",
        "alisio eval variants: nothing was run: fix the variants file",
    ]


def test_a_misspelt_key_is_rejected_with_a_suggestion(home: Path) -> None:
    """compaction.treshold is unknown: rejected before any run with "did you mean compaction.threshold?"."""
    suite = make_suite(home)
    compare = compare_file(home, ("baseline", {}), ("early", {"compaction.treshold": 0.6}))
    result = variants(
        home, suite, compare, "--allow-write", "--script", str(write_script(home / "f.json", FIX))
    )
    first = refused(home, result).splitlines()[0]
    assert first.startswith(
        f"alisio eval variants: {compare}: variant early: compaction.treshold: unknown key (did you mean "
        "compaction.threshold?)"
    )


def test_replay_is_refused(home: Path) -> None:
    """--mode replay: "variants refuses replay: it compares configurations, replay pins one", exit 1."""
    suite = make_suite(home)
    compare = compare_file(home, ("baseline", {}), ("early", EARLY))
    result = variants(home, suite, compare, "--allow-write", "--mode", "replay")
    assert refused(home, result).strip() == (
        "alisio eval variants: variants refuses replay: it compares configurations, replay pins one"
    )


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"suite": "other", "variants": [{"id": "a"}, {"id": "b"}]}, "suite: names suite 'other'"),
        ({"suite": "calc-suite", "variants": [{"id": "a"}]}, "variants: at least two variants"),
        ({"suite": "calc-suite", "variants": [{"id": "a"}, {"id": "../b"}]}, "variants[1].id: an id is"),
        ({"suite": "calc-suite", "variants": [{"id": "a"}, {"id": "A"}]}, "variants[1].id: 'A' repeats"),
    ],
)
def test_an_invalid_file_is_rejected(home: Path, document: dict[str, Any], message: str) -> None:
    """Another suite, one variant, an unsafe or repeated id: one line naming the field, exit 1, nothing run."""
    suite = make_suite(home)
    compare = home / "compare.json"
    compare.write_text(json.dumps(document))
    result = variants(
        home, suite, compare, "--allow-write", "--script", str(write_script(home / "f.json", FIX))
    )
    assert f"alisio eval variants: {compare}: {message}" in refused(home, result)


def bounded(home: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``alisio *args`` in a process of at most 4 GiB of address space and 60 s: a reader that reads a device
    or waits on a FIFO fails the test instead of filling the machine's memory or hanging it."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    return subprocess.run(
        [str(ALISIO), *map(str, args)], capture_output=True, text=True, env=env_for(home), timeout=60,
        stdin=subprocess.DEVNULL, preexec_fn=limit, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        ("device", "it is a character device, not a regular file"),
        ("fifo", "it is a FIFO (named pipe), not a regular file"),
        ("huge", "it is larger than 16 MiB, the most a variants file may hold"),
    ],
)
def test_a_variants_file_that_is_a_device_a_fifo_or_huge_is_refused_at_once(
    home: Path, kind: str, why: str
) -> None:
    """D8: /dev/zero (which grew a process to 24 GB), a FIFO no one writes (which hung) and a 16 MiB + 1
    file: exit 1 at once, one line naming the file and why, nothing run."""
    suite = make_suite(home)
    path = Path("/dev/zero") if kind == "device" else home / "compare.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "huge":
        with path.open("wb") as file:
            file.truncate((16 << 20) + 1)  # sparse: nothing is written
    script = write_script(home / "f.json", FIX)
    args = ["eval", "variants", "calc-suite", "--suite-dir", suite, "--yes", "--variants", path]
    started = time.monotonic()
    result = bounded(home, *args, "--allow-write", "--script", script)
    assert time.monotonic() - started < 30
    assert refused(home, result).strip() == f"alisio eval variants: variants file {path}: cannot read: {why}"


def test_an_ungranted_effect_is_said_once(home: Path) -> None:
    """Without --allow-write the task is rejected once (not per variant), before any run."""
    suite = make_suite(home)
    compare = compare_file(home, ("baseline", {}), ("early", EARLY))
    result = variants(home, suite, compare, "--script", str(write_script(home / "f.json", FIX)))
    assert refused(home, result).splitlines() == [
        "alisio eval variants: task fix-add: policy.allow asks for the write effect, which was not granted "
        "(pass --allow-write)",
        "alisio eval variants: nothing was run: fix or grant the task above",
    ]


# --- Ctrl-C ------------------------------------------------------------------------------------------------

FIRST_QUICK_THEN_SLOW = "test -e ../go || { touch ../go; exit 0; }; echo $$ > ../sleeper; exec sleep 30"
"""The first run returns at once (and leaves a marker next to its workspace); later runs sleep."""


def test_ctrl_c_reports_and_compares_the_finished_runs(home: Path, tmp_path: Path) -> None:
    """SIGINT during the second run: exit 1, the first run reported in its variant, the comparison written."""
    suite = make_suite(home, task("slow", policy={"mode": "auto", "allow": ["write", "process"]}))
    slow = {"turns": [{"toolCalls": [{"name": "bash", "arguments": {"command": FIRST_QUICK_THEN_SLOW}}]},
                      {"text": "done"}]}  # fmt: skip
    script = write_script(home / "slow.json", slow)
    compare = compare_file(home, ("a", {}), ("b", EARLY))
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = env_for(home) | {"TMPDIR": str(temp)}
    out = home / "out"
    process = subprocess.Popen(
        [str(ALISIO), "eval", "variants", "calc-suite", "--suite-dir", str(suite), "--yes", "--variants",
         str(compare), "--k", "2", "-j", "1", "--allow-write", "--allow-process", "--script", str(script), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not any(p.stat().st_size > 0 for p in out.glob("*/runs.jsonl")):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    wait_until_sleeping(temp / "sleeper", process)  # the second run is inside its sleep
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr  # 128 + SIGINT
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert [len(read_runs(out / v)) for v in ("a", "b")] == [1, 0]
    assert read_report(out / "a").summary.runs == 1 and read_report(out / "b").summary.runs == 0
    a, b = read_report(out / "a"), read_report(out / "b")
    assert (a.interrupted, a.planned_runs, b.interrupted, b.planned_runs) == (True, 2, True, 2)
    assert "Interrupted after 0 of 2 planned runs" in (out / "b" / "report.md").read_text()
    assert "the baseline was interrupted after 1 of 2 planned runs" in (out / "comparison.md").read_text()
    assert (out / "comparison.json").is_file() and (out / "comparison.md").is_file()
    assert [p.name for p in temp.iterdir() if p.name.startswith("alisio-")] == []


def test_the_bundled_compare_file_is_valid() -> None:
    """suites/long-context-stress/compare.json names its suite and changes the configuration hash."""
    from alisio.shell.lab.suite_choice import bundled_suites_root, find_suite
    from alisio.shell.lab.variants import read_variants

    bundled = bundled_suites_root()
    assert bundled is not None
    loaded = find_suite("long-context-stress", None, bundled).loaded
    plan = read_variants(loaded.directory / "compare.json", MeasuredConfig(), loaded)
    assert [v.id for v in plan.variants] == ["baseline", "early-compaction"]
    assert plan.variants[1].measured.limits.max_context_chars == 60000
    assert plan.variants[0].config_hash != plan.variants[1].config_hash and plan.warnings == ()
