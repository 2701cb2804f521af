"""Harness overhead per turn (target: at most 2 ms per turn).

The scripted provider plays 1000 turns, each one ``read_file`` call on a small file in a temp workspace, then
a final text turn; the budget is large enough never to stop it. Everything is the real loop: budget checks,
request building, the fingerprint of each normalised request, assembling, policy, the tool itself, the event
log, and compaction. Two configurations:

- ``default``: the default measured configuration (``limits.maxContextChars`` 200000, threshold 0.8), so the
  conversation is compacted when it grows past 160000 characters, as in a real run (the script answers each
  checkpoint call with a short fixed checkpoint, as a model would);
- ``no compaction``: ``maxContextChars`` so large that the conversation grows to 2000 messages. The request
  fingerprint is extended by each turn's new messages only (``alisio.core.replay.fingerprint.ConversationHash``), so this
  worst case stays flat instead of growing with the conversation.

Reports, for each, the median of 3 runs in wall-clock and CPU milliseconds per turn (CPU time is the steadier
figure on a shared machine). The target applies to both configurations; the exit code checks the default.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from alisio.core.harness.budget import RunBudget
from alisio.core.harness.config import Limits, MeasuredConfig
from alisio.core.harness.events import Compacted
from alisio.core.harness.policy import ALL_EFFECTS, Policy, PolicyMode
from alisio.core.replay.fingerprint import path_rules
from alisio.shell.harness.agent import AgentSetup, run_agent
from alisio.shell.harness.providers.scripted import ScriptedProvider

TURNS = 1000
RUNS = 3
TARGET_MS = 2.0


CHECKPOINT = (
    "Rules: read notes.txt again and again. Files: notes.txt (20 lines, unchanged). Remaining: go on."
)


def _script() -> bytes:
    turn = {
        "toolCalls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}],
        "usage": {"inputTokens": 1000, "outputTokens": 20},
    }
    return msgspec.json.encode({"turns": [turn] * TURNS + [{"text": "done"}], "checkpoint": CHECKPOINT})


def _one_run(workspace: Path, script: bytes, measured: MeasuredConfig) -> tuple[float, float, int]:
    """Wall and CPU milliseconds per turn, and how many compactions ran."""
    setup = AgentSetup(
        prompt="Read notes.txt again and again.",
        workspace=workspace,
        provider=ScriptedProvider.from_json(script, "bench"),
        model="bench",
        measured=measured,
        policy=Policy(mode=PolicyMode.AUTO),
        granted=ALL_EFFECTS,
        budget=RunBudget(max_turns=TURNS + 10, max_wall_ms=3_600_000),
        normalize_rules=path_rules(str(workspace)),
    )
    wall, cpu = time.perf_counter(), time.process_time()
    result = run_agent(setup)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert result.outcome == "completed" and result.turns == TURNS + 1, result.reason
    compactions = sum(1 for event in result.events if isinstance(event, Compacted))
    return wall * 1000 / result.turns, cpu * 1000 / result.turns, compactions


def _measure(name: str, workspace: Path, script: bytes, measured: MeasuredConfig) -> float:
    runs = [_one_run(workspace, script, measured) for _ in range(RUNS)]
    wall = statistics.median(run[0] for run in runs)
    cpu = statistics.median(run[1] for run in runs)
    print(
        f"{name}: median {wall:.3f} ms per turn wall, {cpu:.3f} ms CPU "
        f"({RUNS} runs of {TURNS} turns, one read_file each; {runs[0][2]} compactions per run)"
    )
    return wall


def main() -> int:
    script = _script()
    with tempfile.TemporaryDirectory() as root:
        workspace = Path(root)
        (workspace / "notes.txt").write_text("".join(f"line {n}: some notes\n" for n in range(20)))
        median = _measure("default", workspace, script, MeasuredConfig())
        huge = MeasuredConfig(limits=Limits(max_context_chars=100_000_000))
        _measure("no compaction", workspace, script, huge)
    print(
        f"target: at most {TARGET_MS:.1f} ms per turn (default) -> {'ok' if median <= TARGET_MS else 'MISSED'}"
    )
    return 0 if median <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
