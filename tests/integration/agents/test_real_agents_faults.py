"""Each real agent CLI (``make agents``) under injected faults: smoke-coding's fix-add against the scripted
endpoint with the network cut, ``eval variants`` of a clean arm and an arm whose model calls are answered
HTTP 500 at half the calls (``500:0.5,seed=1``), in the agent's own api's error shape.

What the user relies on: every faulted call is one of the schedule's (the record names it, and it never
reached the endpoint: the endpoint saw exactly the calls that were not faulted), the comparison states the
agent's robustness, and a faulted arm's records say how many calls the agent made (its own retries included).
The figures of docs/agents.md (Robustness under faults) come from ``bench/bench_faults.py``. Skipped where
the agent is not installed or a network namespace cannot be made. Marked ``slow``.
"""

from __future__ import annotations

import json
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
