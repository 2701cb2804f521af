"""Benchmark: report.html of 100 tasks x k = 10 with full transcripts (targets: at most 8 MB and 5 s).

Run: ``.venv/bin/python bench/bench_html.py [--tasks T] [--k K]``. Each run's transcript has 30 turns, each an
assistant text, a tool call and a tool result at the 64 KiB cap of the event log (about 2 MB per run, 2 GB
for the page's 1,000 runs if nothing were cut). Ten distinct transcripts are written and hard-linked under
every run, so the disk holds 20 MB while every run's file is still read, decoded and cut. Times
``alisio.shell.lab.store.write_report_html`` (reading the transcripts, cutting them to the page's budget,
rendering and writing the page), best of 3, and prints the page's size.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from alisio.core.harness.events import (
    Effect,
    Event,
    ProviderResponded,
    RunEnded,
    RunStarted,
    ToolCalled,
    ToolResulted,
)
from alisio.core.lab.reports.report import AnswerSource, CompactionSettings, Conditions
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.runs.records import Measured, RunRecord, RunStatus
from alisio.core.lab.runs.transcript import encode_transcript, transcript_path
from alisio.shell.lab.store import REPORT_HTML, write_report_html

MAX_BYTES = 8_000_000
MAX_SECONDS = 5.0


def transcript(variant: int) -> tuple[Event, ...]:
    """30 turns of text, a bash call and a 64 KiB result (a different filler per ``variant``)."""
    filler = f"line {variant} of a long command output with <tags> & symbols\n" * 1_200
    events: list[Event] = [
        RunStarted(
            seq=0, elapsed_ms=0, prompt="Fix it.", provider="p", model="m", policy_mode="auto",
            config_hash="c", harness_version="0.1.0",
        )
    ]  # fmt: skip
    for turn in range(1, 31):
        n = len(events)
        events += [
            ProviderResponded(
                seq=n, elapsed_ms=n, call=turn, purpose="main", finish_reason="tool_calls", usage=None,
                text_chars=600, tool_calls=1, duration_ms=900, text="I will look at the output. " * 24,
            ),
            ToolCalled(
                seq=n + 1, elapsed_ms=n + 1, call_id=f"c{turn}", name="bash",
                arguments='{"command": "python3 check.py"}', effect=Effect.PROCESS,
            ),
            ToolResulted(
                seq=n + 2, elapsed_ms=n + 2, call_id=f"c{turn}", name="bash", ok=turn % 3 != 0,
                output_excerpt=filler[:65_536], duration_ms=40,
            ),
        ]  # fmt: skip
    events.append(RunEnded(seq=len(events), elapsed_ms=len(events), outcome="completed", turns=30))
    return tuple(events)


def records(tasks: int, k: int) -> list[RunRecord]:
    statuses = (RunStatus.PASS, RunStatus.PASS, RunStatus.FAIL, RunStatus.BUDGET_EXCEEDED, RunStatus.ERROR)
    return [
        RunRecord(
            task_id=f"task-{t:03d}",
            repetition=rep,
            seed=rep,
            status=statuses[(t + rep) % len(statuses)],
            reason=None,
            measured=Measured(wall_ms=60_000, turns=30, tool_calls=30, compactions=0, usage_complete=False),
        )
        for t in range(tasks)
        for rep in range(k)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    runs = records(args.tasks, args.k)
    conditions = Conditions(
        suite_id="bench", suite_version="1.0.0", suite_hash="h", harness_version="0.1.0", config_hash="c",
        provider="p", model="m", mode=AnswerSource.LIVE, k=args.k, seed=0,
        compaction=CompactionSettings(threshold=0.8, max_context_chars=200_000), run_id="bench",
        created_at="2026-01-01T00:00:00Z",
    )  # fmt: skip
    report = build_report(runs, conditions)
    with tempfile.TemporaryDirectory(prefix="alisio-bench-html-") as temp:
        directory = Path(temp)
        sources = []
        for variant in range(10):
            source = directory / f"source-{variant}.jsonl"
            source.write_bytes(encode_transcript(transcript(variant), ()))
            sources.append(source)
        for index, record in enumerate(runs):
            target = directory / transcript_path(record.task_id, record.repetition)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(sources[index % len(sources)], target)
        timings = []
        for _ in range(3):
            start = time.perf_counter()
            write_report_html(directory, report, runs)
            timings.append(time.perf_counter() - start)
        size = (directory / REPORT_HTML).stat().st_size
    best = min(timings)
    print(f"report.html of {args.tasks} tasks x k={args.k} ({len(runs)} runs, 30 turns each, 64 KiB results)")
    print(f"  page: {size / 1e6:.2f} MB (target <= {MAX_BYTES / 1e6:.0f} MB)")
    print(f"  write_report_html: best of 3 {best:.2f} s (target <= {MAX_SECONDS:.0f} s)")


if __name__ == "__main__":
    main()
