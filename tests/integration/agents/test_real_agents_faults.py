"""Each real agent CLI (``make agents``) under injected faults: smoke-coding's fix-add against the scripted
endpoint with the network cut, ``eval variants`` of a clean arm and an arm whose model calls are answered
HTTP 500 at half the calls (``500:0.5,seed=1``), in the agent's own api's error shape.

What the user relies on: every faulted call is one of the schedule's (the record names it, and it never
reached the endpoint: the endpoint saw exactly the calls that were not faulted), the comparison states the
agent's robustness, and a faulted arm's records say how many calls the agent made (its own retries included).
The figures of docs/agents.md (Robustness under faults) come from ``bench/bench_faults.py``. Codex and
OpenCode also record fix-add under faults and replay it from another path under the same spec, with no
divergence (docs/faults.md, Recording and replaying faults). Skipped where the agent is not installed or a
network namespace cannot be made. Marked ``slow``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from alisio.core.harness.faults import fault_at, parse_faults
from alisio.core.lab.runs.records import decode_runs
from tests.integration.agents.test_real_agents import _binary, _in_netns, _netns_works, _setup

pytestmark = [pytest.mark.xdist_group("real-agents"), pytest.mark.slow]

FAULTS = "500:0.5,seed=1"
PRESETS = [("codex", "codex"), ("opencode", "opencode"), ("claude-code", "claude"), ("aider", "aider")]


@pytest.mark.parametrize(("kind", "binary"), PRESETS)
def test_a_real_agent_meets_the_faults_of_its_schedule(tmp_path: Path, kind: str, binary: str) -> None:
    if _binary(binary) is None:
        pytest.skip(f"{binary} is not installed (make agents)")
    if not _netns_works():
        pytest.skip("no network namespace here (unshare -n)")
    common = _setup(tmp_path, kind)
    compare = {"suite": "smoke-coding", "variants": [{"id": "clean"}, {"id": "faulted", "faults": FAULTS}]}
    (tmp_path / "compare.json").write_text(json.dumps(compare))
    out = tmp_path / "out"
    args = (
        "eval",
        "variants",
        "smoke-coding",
        *common,
        "-k",
        "2",
        "--variants",
        str(tmp_path / "compare.json"),
    )
    done = _in_netns(tmp_path, "variants", *args, "--base-url", "{base_url}", "--out", str(out))
    assert "Traceback" not in done["stderr"]
    comparison = json.loads((out / "comparison.json").read_text())
    (row,) = comparison["robustness"]
    assert (row["clean"], row["faulted"], row["faults"]) == ("clean", "faulted", FAULTS)
    assert row["cleanRuns"] == row["faultedRuns"] == 2
    spec = parse_faults(FAULTS).unwrap()
    assert spec is not None
    faulted = decode_runs((out / "faulted" / "runs.jsonl").read_bytes(), "runs.jsonl").unwrap()
    clean = decode_runs((out / "clean" / "runs.jsonl").read_bytes(), "runs.jsonl").unwrap()
    hits = 0
    for record in faulted:
        assert record.faults is not None
        run = f"{record.task_id}/{record.repetition}"
        schedule = [(call, fault_at(spec, run, call)) for call in range(record.faults.calls)]
        assert [(h.call, h.kind) for h in record.faults.hits] == [(c, k) for c, k in schedule if k]
        hits += len(record.faults.hits)
    calls = sum(r.faults.calls for r in faulted if r.faults is not None)
    clean_calls = sum(r.measured.turns for r in clean)
    assert len(done["calls"]) == clean_calls + calls - hits  # a faulted call never reached the endpoint


RECORDED = {
    "codex": "429:0.3,500:0.3,seed=10,retry-after=0",
    "opencode": "429:0.3,500:0.3,seed=31,retry-after=0",
}
"""Codex: calls 0, 1 and 3 of fix-add/0 faulted (500, 429, 500). OpenCode makes its first two calls at once
(its title call and its first turn), which reach the schedule in either order (docs/faults.md, Limits): its
seed leaves both clean and faults calls 2, 3 and 5 (500, 429, 429)."""


@pytest.mark.parametrize(("kind", "binary"), [("codex", "codex"), ("opencode", "opencode")])
def test_a_real_agent_records_and_replays_under_the_same_faults(
    tmp_path: Path, kind: str, binary: str
) -> None:
    """``eval record --faults`` then ``--mode replay --faults`` (the same spec) from another path: the agent
    retries the same faulted calls, the cassette holds the calls that reached the endpoint, and the replay
    passes with no divergence, its record's hits the schedule's."""
    if _binary(binary) is None:
        pytest.skip(f"{binary} is not installed (make agents)")
    if not _netns_works():
        pytest.skip("no network namespace here (unshare -n)")
    common = _setup(tmp_path, kind)
    faults = RECORDED[kind]
    args = ("eval", "record", "smoke-coding", *common, "--base-url", "{base_url}", "--faults", faults)
    recorded = _in_netns(tmp_path, "record", *args)
    assert recorded["rc"] == 0, recorded["stderr"]
    lines = (tmp_path / "suite" / "cassettes" / "a" / "fix-add.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["faults"] == faults
    assert len(lines) - 1 == len(recorded["calls"])  # the calls that reached the endpoint, and only those
    moved = tmp_path / "suite-2"
    shutil.copytree(tmp_path / "suite", moved)  # another path: another workspace path, too
    common[common.index(str(tmp_path / "suite"))] = str(moved)
    out = tmp_path / "replayed"
    args = (
        "eval",
        "run",
        "smoke-coding",
        *common,
        "--mode",
        "replay",
        "--faults",
        faults,
        "--out",
        str(out),
    )
    replayed = _in_netns(tmp_path, "replay", *args)
    assert replayed["rc"] == 0, replayed["stderr"]
    assert replayed["calls"] == []  # the replay reached no endpoint
    (record,) = decode_runs((out / "runs.jsonl").read_bytes(), "runs.jsonl").unwrap()
    assert (record.status.value, record.divergence) == ("pass", None)
    assert record.faults is not None
    spec = parse_faults(faults).unwrap()
    assert spec is not None
    schedule = [(call, fault_at(spec, "fix-add/0", call)) for call in range(record.faults.calls)]
    assert [(h.call, h.kind) for h in record.faults.hits] == [(c, k) for c, k in schedule if k]
    assert len(record.faults.hits) >= 2  # the agent retried its faulted calls, and passed
    assert record.faults.calls - len(record.faults.hits) == len(recorded["calls"])
