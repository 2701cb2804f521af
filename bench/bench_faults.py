"""Robustness under injected faults (issue 30 §2): the figures of docs/faults.md and docs/agents.md.

1. The built-in harness on the bundled scripted suite (smoke-coding's scripted tasks, ``--script``): one
   ``eval variants`` job with a clean arm, a faulted arm with the default retries and the same faults with
   ``retries.max = 0``. Reported: each faulted arm's robustness (its success rate relative to clean, with
   Fieller's interval paired by task) as comparison.json states it.
2. Each external preset installed (``make agents``) on smoke-coding's fix-add against the scripted endpoint
   (``alisio eval mock-endpoint``'s default answers, served in-process): clean against one fault type
   (``--agent-faults``, default ``500:0.5,seed=1``: half the model calls answered HTTP 500 in the agent's
   own api's error shape). Reported: the robustness, the wall time of the faulted arm, and how many model calls
   the agent made and how many the schedule faulted (its own retries are calls too). ``--agents alisio``
   runs the built-in agent the same way, for comparison. ``--agents alisio`` runs
   the built-in agent the same way, for comparison.

Run by hand: ``.venv/bin/python bench/bench_faults.py [--k N] [--agents codex,opencode] [--skip-builtin]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alisio.core.lab.runs.records import decode_runs  # noqa: E402
from alisio.shell.agents.mock_endpoint import MockEndpoint  # noqa: E402
from alisio.shell.agents.setup import agents_bin  # noqa: E402

ALISIO = Path(sys.executable).with_name("alisio")
SCRIPTED = "edit-respects-hash,fix-add,off-by-one-among-passing,rename-symbol"
GRANTS = ("--allow-write", "--allow-process", "--allow-analysis")
PRESETS = {"codex": "codex", "opencode": "opencode", "claude-code": "claude", "aider": "aider"}
"""Each preset and its executable in ``.agents/bin``."""


def _variants(work: Path, compare: dict[str, object], *args: str) -> tuple[dict[str, Any], float, Path]:
    (work / "compare.json").write_text(json.dumps(compare))
    out = work / "out"
    env = {**os.environ, "ALISIO_CONFIG_HOME": str(work / "config"), "ALISIO_DATA_HOME": str(work / "data")}
    started = time.monotonic()
    done = subprocess.run(
        [
            *(str(ALISIO), "eval", "variants", "smoke-coding", "--suite-dir", str(ROOT / "suites"), "--yes"),
            *("--variants", str(work / "compare.json"), "--out", str(out), "--quiet", *GRANTS, *args),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.monotonic() - started
    if not (out / "comparison.json").exists():
        raise SystemExit(f"eval variants failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads((out / "comparison.json").read_text()), elapsed, out


def _row(row: dict[str, Any]) -> str:
    ratio, low, high = row.get("ratio"), row.get("ratioLow"), row.get("ratioHigh")
    shown = "n/a" if ratio is None else f"{ratio:.0%}"
    bounds = "" if low is None else f" [{low:.0%}, {'unbounded' if high is None else f'{high:.0%}'}]"
    return (
        f"{row['faulted']:<14} {row['faults']:<36} {shown}{bounds}  "
        f"{row['faultedPasses']}/{row['faultedRuns']} against {row['cleanPasses']}/{row['cleanRuns']}"
    )


def builtin(k: int, faults: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "config").mkdir()
        compare = {
            "suite": "smoke-coding",
            "variants": [
                {"id": "clean"},
                {"id": "retries", "faults": faults},
                {"id": "no-retries", "faults": faults, "overrides": {"retries.max": 0}},
            ],
        }
        scripts = str(ROOT / "suites" / "smoke-coding" / "scripts")
        result, elapsed, _ = _variants(work, compare, "--tasks", SCRIPTED, "--script", scripts, "-k", str(k))
    print(f"built-in harness, smoke-coding's 4 scripted tasks, k={k}, {elapsed:.0f} s")
    for row in result["robustness"]:
        print("  " + _row(row))


def external(agent: str, k: int, faults: str, where: Path | None) -> None:
    """``agent``: a preset, or ``alisio`` (the built-in agent on the same endpoint, for comparison)."""
    binary = (where or agents_bin() or ROOT / ".agents" / "bin") / PRESETS.get(agent, agent)
    if agent != "alisio" and not binary.exists():
        print(f"{agent}: not installed ({binary}); skipped")
        return
    with tempfile.TemporaryDirectory() as tmp, MockEndpoint(strict=False) as endpoint:
        work = Path(tmp)
        (work / "config").mkdir()
        config = f'[provider]\nbaseUrl = "{endpoint.base_url}"\nmodel = "m"\n'
        if agent != "alisio":
            config += f'\n[agents.a]\nkind = "{agent}"\nbinary = "{binary}"\n'
        (work / "config" / "config.toml").write_text(config)
        compare = {
            "suite": "smoke-coding",
            "variants": [{"id": "clean"}, {"id": "faulted", "faults": faults}],
        }
        chosen = () if agent == "alisio" else ("--agent", "a")
        result, elapsed, out = _variants(work, compare, "--tasks", "fix-add", *chosen, "-k", str(k))
        records = decode_runs((out / "faulted" / "runs.jsonl").read_bytes(), "runs.jsonl").unwrap()
    calls = sum(r.faults.calls for r in records if r.faults is not None)
    hits = sum(len(r.faults.hits) for r in records if r.faults is not None)
    reasons = sorted({f"{r.status.value}{' ' + r.reason if r.reason else ''}" for r in records})
    walls = sorted(r.measured.wall_ms for r in records)
    print(
        f"{agent}: k={k}, {elapsed:.0f} s; faulted arm: {calls} model calls, {hits} faulted; "
        f"median wall {walls[len(walls) // 2] / 1000:.1f} s; outcomes {', '.join(reasons)}"
    )
    for row in result["robustness"]:
        print("  " + _row(row))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--faults", default="500:0.3,503:0.1,seed=1")
    parser.add_argument("--agent-faults", default="500:0.5,seed=1")
    parser.add_argument("--agents", default=",".join(PRESETS))
    parser.add_argument("--skip-builtin", action="store_true")
    parser.add_argument(
        "--agents-bin", type=Path, help="where the agents are (default: the checkout's .agents/bin)"
    )
    options = parser.parse_args()
    if not options.skip_builtin:
        builtin(options.k, options.faults)
    for agent in filter(None, options.agents.split(",")):
        external(agent, options.k, options.agent_faults, options.agents_bin)


if __name__ == "__main__":
    main()
