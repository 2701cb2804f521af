"""``--faults SPEC`` end to end: the installed command on the bundled smoke-coding suite (its scripts served
over in-memory HTTP to the built-in provider), clean against faulted arms, with and without retries."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import msgspec
import pytest

from alisio.core.harness.faults import fault_at, parse_faults
from alisio.core.lab.comparisons.variants import VariantsComparison
from alisio.core.lab.runs.records import RunFaults, RunStatus
from tests.integration.helpers import (
    FIX,
    ROOT,
    alisio,
    eval_run,
    make_suite,
    read_report,
    read_runs,
    write_config,
    write_script,
)

SMOKE = ROOT / "suites" / "smoke-coding"
SCRIPTED = "edit-respects-hash,fix-add,off-by-one-among-passing,rename-symbol"
"""The smoke-coding tasks that have a script."""
GRANTS = ("--allow-write", "--allow-process", "--allow-analysis")
FAULTS = "500:0.3,503:0.1,seed=1"


def _variants(home: Path, compare: dict[str, object], *args: str) -> tuple[int, str, Path]:
    path = home / "compare.json"
    path.write_text(json.dumps(compare))
    out = home / "out"
    result = alisio(
        home,
        "eval",
        "variants",
        "smoke-coding",
        "--suite-dir",
        ROOT / "suites",
        "--yes",
        "--variants",
        path,
        "--tasks",
        SCRIPTED,
        "--script",
        SMOKE / "scripts",
        "-k",
        "2",
        "--out",
        out,
        *GRANTS,
        *args,
    )
    return result.returncode, result.stderr, out


def test_a_harness_without_retries_is_less_robust_than_one_with_retries(home: Path) -> None:
    compare = {
        "suite": "smoke-coding",
        "variants": [
            {"id": "clean"},
            {"id": "retries", "faults": FAULTS},
            {"id": "no-retries", "faults": FAULTS, "overrides": {"retries.max": 0}},
        ],
    }
    code, stderr, out = _variants(home, compare)
    assert "Traceback" not in stderr
    assert code == 1  # runs that a fault ended are errors, and the command says so
    comparison = msgspec.json.decode((out / "comparison.json").read_bytes(), type=VariantsComparison)
    rows = {row.faulted: row for row in comparison.robustness}
    assert set(rows) == {"retries", "no-retries"}
    with_retries, without = rows["retries"], rows["no-retries"]
    assert with_retries.clean == without.clean == "clean"
    assert with_retries.clean_passes == with_retries.clean_runs == 8  # the clean arm passes every run
    assert with_retries.tasks == without.tasks == 4
    assert with_retries.ratio is not None and without.ratio is not None
    assert without.ratio < with_retries.ratio
    assert without.faulted_passes < with_retries.faulted_passes
    assert without.ratio_high is not None and without.ratio_high < 1.0  # the interval excludes "as robust"
    assert without.difference is not None and without.difference.interval.high < 0.0
    assert f"robustness of no-retries ({FAULTS}) against clean:" in stderr
    assert "## Robustness under injected faults" in (out / "comparison.md").read_text()
    page = (out / "comparison.html").read_text()
    assert '<section id="robustness"><h2>Robustness under injected faults</h2>' in page
    assert f"robustness of no-retries ({FAULTS}) against clean:" in page
    # each arm's conditions name its faults, and every run's record its schedule's hits
    assert read_report(out / "clean").conditions.faults is None
    assert read_report(out / "no-retries").conditions.faults == FAULTS
    spec = parse_faults(FAULTS).unwrap()
    assert spec is not None
    for arm in ("retries", "no-retries"):
        for record in read_runs(out / arm):
            assert record.faults is not None
            expected = [
                (call, fault_at(spec, f"{record.task_id}/{record.repetition}", call))
                for call in range(record.faults.calls)
            ]
            assert [(hit.call, hit.kind) for hit in record.faults.hits] == [(c, k) for c, k in expected if k]
    assert all(record.faults is None for record in read_runs(out / "clean"))
    # without retries, a run whose call was faulted ends at that call: an error naming the provider failure
    for record in read_runs(out / "no-retries"):
        assert record.faults is not None
        if record.faults.hits:
            assert record.status is RunStatus.ERROR
            assert record.reason == "provider_server"


def test_the_same_spec_gives_the_same_schedule_and_faults_name_the_run(home: Path, tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    script = write_script(tmp_path / "fix.json", FIX)
    runs = []
    for name in ("a", "b"):
        result = eval_run(
            home,
            suite.parent,
            "--script",
            script,
            "-k",
            "3",
            "--faults",
            "429:0.3,seed=5,retry-after=0",
            "--out",
            tmp_path / name,
            "--allow-write",
        )
        assert result.returncode == 0, result.stderr
        assert "faults 429:0.3,seed=5,retry-after=0" in result.stderr  # the headline names them
        runs.append([(r.repetition, r.faults) for r in read_runs(tmp_path / name)])
    assert runs[0] == runs[1]
    assert any(faults is not None and faults.hits for _, faults in runs[0])
    rep, faults = next((rep, faults) for rep, faults in runs[0] if faults is not None and faults.hits)
    shown = alisio(home, "eval", "show", tmp_path / "a", "--task", "fix-add", "--rep", str(rep))
    assert shown.returncode == 0, shown.stderr
    listed = ", ".join(f"call {hit.call}: {hit.kind}" for hit in faults.hits)
    assert f"faults: {len(faults.hits)} of {faults.calls} model calls faulted ({listed})" in shown.stdout
    clean = eval_run(
        home,
        suite.parent,
        "--script",
        script,
        "-k",
        "3",
        "--out",
        tmp_path / "clean",
        "--allow-write",
    )
    assert clean.returncode == 0, clean.stderr
    compared = alisio(home, "eval", "compare", tmp_path / "clean", tmp_path / "a")
    assert "faults differs: none -> 429:0.3,seed=5,retry-after=0" in compared.stdout + compared.stderr


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("429:2", "--faults 429:2: a rate is a number from 0 to 1"),
        (
            "timeout:0.1",
            "--faults timeout:0.1: unknown fault 'timeout' (faults: 429, 500, 503, stall, cut, slow)",
        ),
        ("500:0.7,503:0.7", "the rates add up to 1.4, more than 1"),
        ("429:0.1,seed=-1", "--faults seed=-1: a seed is a whole number from 0"),
    ],
)
def test_a_bad_spec_is_one_line_and_nothing_runs(home: Path, tmp_path: Path, spec: str, message: str) -> None:
    suite = make_suite(tmp_path)
    script = write_script(tmp_path / "fix.json", {"turns": [{"text": "done"}]})
    result = eval_run(home, suite.parent, "--script", script, "--faults", spec, "--allow-write")
    assert result.returncode == 1
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    assert not (home / "data").exists()


def test_a_variant_with_a_bad_faults_spec_names_the_file_and_variant(home: Path) -> None:
    compare = {"suite": "smoke-coding", "variants": [{"id": "clean"}, {"id": "f", "faults": "cut:1.5"}]}
    code, stderr, out = _variants(home, compare)
    assert code == 1
    assert "compare.json: variants[1].faults: cut:1.5: a rate is a number from 0 to 1" in stderr
    assert not out.exists()


REPLAYED = "fix-add,off-by-one-among-passing"
RECORDED_FAULTS = "429:0.2,500:0.3,seed=6,retry-after=0"


def _smoke(home: Path, command: str, *args: str | Path) -> tuple[int, str]:
    result = alisio(
        home, "eval", command, "smoke-coding", "--suite-dir", ROOT / "suites", "--yes", "--tasks", REPLAYED,
        *GRANTS, *args
    )  # fmt: skip
    return result.returncode, result.stderr


def test_a_replay_meets_the_faults_its_recording_met(home: Path, tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    code, stderr = _smoke(
        home,
        "record",
        "--script",
        SMOKE / "scripts",
        "--faults",
        RECORDED_FAULTS,
        "--cassette-dir",
        cassettes,
    )
    assert code == 0, stderr
    for task in REPLAYED.split(","):
        header = json.loads((cassettes / f"{task}.jsonl").read_text().splitlines()[0])
        assert header["faults"] == RECORDED_FAULTS
    # the same command run live (eval record keeps cassettes, not run records): what the replay must give
    code, stderr = _smoke(
        home,
        "run",
        "--script",
        SMOKE / "scripts",
        "--faults",
        RECORDED_FAULTS,
        "-k",
        "1",
        "--out",
        tmp_path / "a",
    )
    assert code == 0, stderr
    code, stderr = _smoke(
        home, "run", "--mode", "replay", "--cassette-dir", cassettes, "--faults", RECORDED_FAULTS,
        "--out", tmp_path / "b",
    )  # fmt: skip
    assert code == 0, stderr
    assert f"faults {RECORDED_FAULTS}" in stderr  # the headline names them
    live = sorted((r.task_id, r.faults, r.status, r.reason) for r in read_runs(tmp_path / "a"))
    replayed = sorted((r.task_id, r.faults, r.status, r.reason) for r in read_runs(tmp_path / "b"))
    assert replayed == live
    assert all(status is RunStatus.PASS for _, _, status, _ in replayed)  # no divergence
    hits = [faults.hits for _, faults, _, _ in replayed if faults is not None]
    assert len(hits) == 2 and all(hits)  # both runs were faulted: retried calls consumed no cassette entry
    spec = parse_faults(RECORDED_FAULTS).unwrap()
    for record in read_runs(tmp_path / "b"):
        assert record.faults is not None
        expected = [(c, fault_at(spec, f"{record.task_id}/0", c)) for c in range(record.faults.calls)]
        assert [(hit.call, hit.kind) for hit in record.faults.hits] == [(c, k) for c, k in expected if k]
    # a harness that asks something else still diverges, at the recorded call, behind the faults
    lines = (cassettes / "fix-add.jsonl").read_text().splitlines()
    call = json.loads(lines[2])
    call["fingerprint"] = "0" * 64
    lines[2] = json.dumps(call)
    (cassettes / "fix-add.jsonl").write_text("\n".join(lines) + "\n")
    result = alisio(
        home, "eval", "run", "smoke-coding", "--suite-dir", ROOT / "suites", "--yes", "--tasks", "fix-add",
        *GRANTS, "--mode", "replay", "--cassette-dir", cassettes, "--faults", RECORDED_FAULTS,
        "--out", tmp_path / "d",
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    (diverged,) = read_runs(tmp_path / "d")
    assert (diverged.status, diverged.reason) == (RunStatus.ERROR, "replay_divergence")
    assert diverged.divergence is not None and diverged.divergence.call_index == 1
    # another spec, or none, is refused before anything runs, one line per cassette naming both specs
    for given in (["--faults", "429:0.2,500:0.3,seed=7,retry-after=0"], []):
        out = tmp_path / f"c{len(given)}"
        code, stderr = _smoke(
            home, "run", "--mode", "replay", "--cassette-dir", cassettes, *given, "--out", out
        )
        assert code == 1
        shown = given[1] if given else "none"
        assert (
            f"task fix-add: recorded with --faults {RECORDED_FAULTS}, replayed with --faults {shown}"
            in stderr
        )
        assert "Traceback" not in stderr
        assert not out.exists()


CUT_FAULTS = "cut:0.3,seed=2"
"""fix-add's call 3 is cut after its first event (the run ends error), off-by-one's call 2 before it."""


def _transcript(out: Path, task: str) -> list[dict[str, object]]:
    """The run's events as stored, without what depends on time or on where the answer came from: the timed
    fields, and the seconds a message prints (a cut call's "cut mid-stream after 0.1 s" is how long it ran,
    which a loaded machine stretches; a retry's "in 0.0 s" its jittered backoff)."""
    events = [json.loads(line) for line in (out / "runs" / task / "0.jsonl").read_text().splitlines()]
    timed = ("ts", "durationMs", "firstEventMs", "elapsedMs", "wallMs")
    kept = [{k: v for k, v in event.items() if k not in timed} for event in events]
    for event in kept:
        if isinstance(event.get("message"), str):  # the endpoint's URL: scripted.invalid or replay.invalid
            message = str(event["message"]).replace("replay.invalid", "scripted.invalid")
            event["message"] = re.sub(r"\b\d+\.\d s\b", "N s", message)
    return kept


def test_a_replay_cuts_where_its_recording_did(home: Path, tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    code, stderr = _smoke(
        home, "record", "--script", SMOKE / "scripts", "--faults", CUT_FAULTS, "--cassette-dir", cassettes
    )
    assert code == 1, stderr  # fix-add's recorded run ended error: its cassette replays that run
    assert (
        "warning: task fix-add: the recorded run ended error (provider_network); its cassette replays"
        in stderr
    )
    code, stderr = _smoke(
        home, "run", "--script", SMOKE / "scripts", "--faults", CUT_FAULTS, "-k", "1", "--out", tmp_path / "a"
    )
    assert code == 1, stderr
    live = {record.task_id: record for record in read_runs(tmp_path / "a")}
    # the schedule cut calls both before the answer's first event (retried) and after it (the run's end)
    cuts = [hit for record in live.values() if record.faults for hit in record.faults.hits]
    assert {hit.kind for hit in cuts} == {"cut"}
    assert any(hit.events == 0 for hit in cuts) and any(hit.events for hit in cuts)
    assert (live["fix-add"].status, live["fix-add"].reason) == (RunStatus.ERROR, "provider_network")
    assert live["off-by-one-among-passing"].status is RunStatus.PASS
    for task, record in live.items():
        header = msgspec.json.decode((cassettes / f"{task}.jsonl").read_text().splitlines()[0])
        assert header["faults"] == CUT_FAULTS
        assert msgspec.convert(header["faultRecord"], type=RunFaults) == record.faults  # where each cut broke
        assert bool(header.get("partialEvents")) == (task == "fix-add")
    code, stderr = _smoke(
        home, "run", "--mode", "replay", "--cassette-dir", cassettes, "--faults", CUT_FAULTS, "--out", tmp_path / "b"
    )  # fmt: skip
    assert code == 1, stderr  # the recorded error, again: not a divergence (2)
    replayed = {record.task_id: record for record in read_runs(tmp_path / "b")}
    assert {t: (r.faults, r.status, r.reason) for t, r in replayed.items()} == {
        t: (r.faults, r.status, r.reason) for t, r in live.items()
    }
    assert all(record.divergence is None for record in replayed.values())
    for task in live:  # what the agent saw, the cut call's partial answer included
        assert _transcript(tmp_path / "b", task) == _transcript(tmp_path / "a", task)
    shown = alisio(home, "eval", "show", tmp_path / "b", "--task", "fix-add", "--rep", "0")
    assert "faults: 1 of 4 model calls faulted (call 3: cut after 1 event)" in shown.stdout, shown.stdout
    # a repetition the recording did not run would cut answers at points the cassette does not keep
    code, stderr = _smoke(
        home, "run", "--mode", "replay", "--cassette-dir", cassettes, "--faults", CUT_FAULTS, "-k", "2",
        "--out", tmp_path / "k2",
    )  # fmt: skip
    assert (code, stderr.strip()) == (
        1,
        f"alisio eval run: --faults {CUT_FAULTS}: a replay with cut faults runs the recorded repetition only "
        "(-k 1): the cassette keeps where the recording's cuts broke, not where another repetition's would",
    )
    # another spec is refused as for any fault
    code, stderr = _smoke(
        home, "run", "--mode", "replay", "--cassette-dir", cassettes, "--faults", "cut:0.3,seed=3",
        "--out", tmp_path / "c",
    )  # fmt: skip
    assert (
        code == 1 and f"recorded with --faults {CUT_FAULTS}, replayed with --faults cut:0.3,seed=3" in stderr
    )
    # a cassette that does not say where its cuts broke (an older alisio, an edited file) is refused, naming it
    path = cassettes / "off-by-one-among-passing.jsonl"
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    for edit in ("older", "edited"):
        if edit == "older":
            changed = {k: v for k, v in header.items() if k != "faultRecord"}
        else:
            changed = {
                **header,
                "faultRecord": {**header["faultRecord"], "hits": [{"call": 2, "kind": "cut"}]},
            }
        path.write_text("\n".join([json.dumps(changed), *lines[1:]]) + "\n")
        code, stderr = _smoke(
            home, "run", "--mode", "replay", "--cassette-dir", cassettes, "--faults", CUT_FAULTS,
            "--out", tmp_path / edit,
        )  # fmt: skip
        assert code == 1
        assert "Traceback" not in stderr
        assert f"task off-by-one-among-passing: {path}: " in stderr
        assert (
            "recorded with cut faults but without where each cut broke" in stderr
            if edit == "older"
            else "faultRecord.hits[0]: the cut at call 2 does not say where it broke (events)" in stderr
        )
        assert not (tmp_path / edit).exists()


def test_a_run_a_fault_ended_is_recorded_and_replays_to_the_same_error(home: Path, tmp_path: Path) -> None:
    """Retries that run out on injected 500s end the run error: its cassette (no call got through) is still
    written, and its replay meets the same 500s and ends the same way."""
    cassettes, spec = tmp_path / "cassettes", "500:1,seed=0"
    result = alisio(
        home, "eval", "record", "smoke-coding", "--suite-dir", ROOT / "suites", "--yes", "--tasks", "fix-add",
        *GRANTS, "--script", SMOKE / "scripts", "--faults", spec, "--cassette-dir", cassettes,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "wrote " in result.stderr and "(0 calls," in result.stderr
    header = json.loads((cassettes / "fix-add.jsonl").read_text().splitlines()[0])
    assert header["faultRecord"]["calls"] == 5  # the first try and 4 retries
    result = alisio(
        home, "eval", "run", "smoke-coding", "--suite-dir", ROOT / "suites", "--yes", "--tasks", "fix-add",
        *GRANTS, "--mode", "replay", "--cassette-dir", cassettes, "--faults", spec, "--out", tmp_path / "b",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    (record,) = read_runs(tmp_path / "b")
    assert (record.status, record.reason, record.divergence) == (RunStatus.ERROR, "provider_server", None)
    assert record.faults is not None
    assert record.faults == msgspec.convert(header["faultRecord"], type=RunFaults)


def test_plan_json_keeps_the_faults_and_a_resume_refuses_other_ones(home: Path, tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    script = write_script(tmp_path / "fix.json", FIX)
    out = tmp_path / "out"
    spec = "cut:0.2,429:0.1,seed=4,retry-after=0"
    first = eval_run(
        home, suite.parent, "--script", script, "-k", "2", "--faults", spec, "--out", out, "--allow-write"
    )
    assert first.returncode == 0, first.stderr
    plan = json.loads((out / "plan.json").read_text())
    assert plan["faults"] == "429:0.1,cut:0.2,seed=4,retry-after=0"  # canonical
    other = alisio(home, "eval", "run", "--resume", out, "--faults", "429:0.5")
    assert other.returncode == 1
    assert (
        "--faults: the run started with 429:0.1,cut:0.2,seed=4,retry-after=0, given 429:0.5" in other.stderr
    )
    same = alisio(home, "eval", "run", "--resume", out)
    assert same.returncode == 0, same.stderr
    assert read_report(out).conditions.faults == "429:0.1,cut:0.2,seed=4,retry-after=0"


def test_a_stall_lasts_provider_timeout_ms_and_its_replay_as_long(home: Path, tmp_path: Path) -> None:
    """A scripted run's stalls wait provider.timeoutMs, as a live provider's do (not the default 300 s, past
    smoke-coding's 120 s maxWallMs); the cassette keeps it, so a replay under another configuration stalls as
    long, retries the same calls and ends the same way."""
    spec = "stall:0.3,seed=3"  # fix-add/0: calls 0, 3, 4 and 6 stall, each retried
    write_config(home, "[provider]\ntimeoutMs = 300\n")
    cassettes = tmp_path / "cassettes"
    started = time.monotonic()
    result = alisio(
        home, "eval", "record", "smoke-coding", "--suite-dir", ROOT / "suites", "--yes", "--tasks", "fix-add",
        *GRANTS, "--script", SMOKE / "scripts", "--faults", spec, "--cassette-dir", cassettes,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    header = json.loads((cassettes / "fix-add.jsonl").read_text().splitlines()[0])
    assert header["readTimeoutMs"] == 300
    recorded = msgspec.convert(header["faultRecord"], type=RunFaults)
    assert [(hit.call, hit.kind) for hit in recorded.hits] == [(call, "stall") for call in (0, 3, 4, 6)]
    write_config(home, "")  # the replay's configuration says nothing of timeouts
    result = alisio(
        home, "eval", "run", "smoke-coding", "--suite-dir", ROOT / "suites", "--yes", "--tasks", "fix-add",
        *GRANTS, "--mode", "replay", "--cassette-dir", cassettes, "--faults", spec, "--out", tmp_path / "b",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (record,) = read_runs(tmp_path / "b")
    assert (record.status, record.faults) == (RunStatus.PASS, recorded)
    assert time.monotonic() - started < 60  # two commands, eight stalls of 0.3 s
    # alisio run: the same provider, the same timeout
    write_config(home, "[provider]\ntimeoutMs = 300\n")
    workspace = tmp_path / "fix-add"
    shutil.copytree(SMOKE / "fixtures" / "fix-add", workspace)
    started = time.monotonic()
    result = alisio(
        home, "run", "Fix add in src/calc.py", "--cwd", workspace, "--script", SMOKE / "scripts" / "fix-add.json",
        "--faults", "stall:0.3,seed=0", "--policy", "full",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "2 of 6 model calls faulted (call 0: stall, call 2: stall)" in result.stderr
    assert time.monotonic() - started < 30
