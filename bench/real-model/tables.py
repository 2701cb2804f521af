"""The tables of docs/measured-results.md, from the reports experiments.sh wrote (stdlib only).

    python3 bench/real-model/tables.py OUT

One Markdown row per report (each variants arm, each external agent, the replay): runs by outcome, the success
rate with its 95% Wilson interval, the median wall time per run, tokens per success, turns and tool calls per
run (tool calls written as text and run by tools.textCalls = "parse" in brackets), the time to the first event
and the incidents by kind, read from report.json, runs.jsonl and the runs' transcripts.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

WIRE = {"openai-chat": "Chat Completions", "openai-responses": "Responses", "anthropic": "Anthropic Messages"}
AGENT_WIRE = {"opencode": "Chat Completions", "codex": "Responses"}
HEADER = (
    "| experiment | agent | wire API | pass / fail / budget_exceeded / error | success rate [Wilson 95%] "
    "| median wall per run | first event median | tokens per success | turns per run | tool calls per run "
    "(from text) | incidents |"
)


def _seconds(ms: float | None) -> str:
    return "n/a" if ms is None else f"{ms / 1000:,.1f} s"


def _row(name: str, directory: Path, wire: str) -> str:
    report = json.loads((directory / "report.json").read_text())
    runs = [json.loads(line) for line in (directory / "runs.jsonl").read_text().splitlines() if line.strip()]
    s, m = report["summary"], report["summary"]["measured"]
    rate = s.get("successRate")
    interval = rate.get("interval") if rate else None
    if rate and interval:
        shown = f"{rate['mean']:.0%} [{interval['low']:.0%}, {interval['high']:.0%}]"
    elif rate:
        shown = f"{rate['mean']:.0%} (replay: no interval)"
    else:
        shown = "n/a"
    incidents: Counter[str] = Counter(i["kind"] for r in runs for i in r.get("incidents", []))
    from_text = 0
    for r in runs:
        transcript = directory / "runs" / r["taskId"] / f"{r['repetition']}.jsonl"
        if transcript.exists():
            for line in transcript.read_text().splitlines():
                event = json.loads(line)
                from_text += event.get("type") == "tool_call" and event.get("fromText", False)
    n = max(len(runs), 1)
    per_success = m.get("tokensPerSuccess")
    agent = report["conditions"].get("agent", {})
    if agent.get("kind", "builtin") == "builtin":
        agent_name = f"alisio {agent.get('version', '')} (built-in)"
    else:
        version = agent.get("version", "")  # Codex reports "codex-cli 0.171.0": its name is in it already
        agent_name = (
            version if str(version).startswith(str(agent.get("kind"))) else f"{agent.get('kind')} {version}"
        )
    counts = f"{s['passes']} / {s['fails']} / {s['budgetExceeded']} / {s['errored']}"
    tools = f"{m['toolCalls'] / n:.1f} ({from_text / n:.1f})"
    kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(incidents.items())) or "none"
    return (
        f"| {name} | {agent_name} | {wire} | {counts} | {shown} | {_seconds(m.get('wallMsMedian'))} "
        f"| {_seconds(m.get('firstEventMsMedian'))} | {'n/a' if per_success is None else f'{per_success:,.0f}'} "
        f"| {m['turns'] / n:.1f} | {tools} | {kinds} |"
    )


def rows(out: Path) -> list[str]:
    lines = [HEADER, "|" + "---|" * HEADER.count(" | ") + "---|"]
    for api, wire in WIRE.items():
        for arm in ("textcalls-off", "textcalls-parse"):
            directory = out / f"variants-{api}" / arm
            if (directory / "report.json").exists():
                lines.append(_row(f"variants {arm}", directory, wire))
    for agent, wire in AGENT_WIRE.items():
        directory = out / f"agent-{agent}"
        if (directory / "report.json").exists():
            lines.append(_row(f"external {agent}", directory, wire))
    if (out / "replay" / "report.json").exists():
        lines.append(_row("replay of the recording", out / "replay", WIRE["openai-chat"]))
    return lines


if __name__ == "__main__":
    print("\n".join(rows(Path(sys.argv[1]))))
