"""Benchmark: build a Report from 100,000 run records (target: at most 1 s on a 2-core machine).

Run: ``.venv/bin/python bench/bench_report.py [--records N] [--tasks T]``. Prints the best of 5 timings.
Building the records themselves is not timed; decoding runs.jsonl is timed separately for information.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from alisio.core.lab.reports.report import AnswerSource, CompactionSettings, Conditions, Rates
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.runs.records import Incident, Measured, RunRecord, RunStatus, decode_runs, encode_runs

STATUSES = (RunStatus.PASS, RunStatus.FAIL, RunStatus.BUDGET_EXCEEDED, RunStatus.ERROR)


def make_records(count: int, tasks: int, seed: int = 7) -> list[RunRecord]:
    """``count`` synthetic records spread over ``tasks`` tasks, with a realistic mix of fields."""
    rng = np.random.default_rng(seed)
    status = rng.choice(4, size=count, p=[0.6, 0.25, 0.1, 0.05])
    wall = rng.integers(1_000, 120_000, size=count)
    tokens = rng.integers(1_000, 200_000, size=count)
    records = []
    for i in range(count):
        s = STATUSES[int(status[i])]
        records.append(
            RunRecord(
                task_id=f"task-{i % tasks:04d}",
                repetition=i // tasks,
                seed=i,
                status=s,
                reason="maxWallMs"
                if s is RunStatus.BUDGET_EXCEEDED
                else ("provider_network" if s is RunStatus.ERROR else None),
                measured=Measured(
                    wall_ms=int(wall[i]),
                    turns=1 + i % 30,
                    tool_calls=i % 40,
                    compactions=i % 3 == 0,
                    usage_complete=True,
                    input_tokens=int(tokens[i]),
                    output_tokens=int(tokens[i]) // 10,
                    cached_input_tokens=int(tokens[i]) // 2 if i % 2 else None,
                ),
                incidents=(Incident(kind="compaction", message="threshold reached"),) if i % 3 == 0 else (),
                config_hash="abc",
            )
        )
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--tasks", type=int, default=100)
    args = parser.parse_args()
    records = make_records(args.records, args.tasks)
    conditions = Conditions(
        suite_id="bench",
        suite_version="1.0.0",
        suite_hash="h",
        harness_version="0.1.0",
        config_hash="c",
        provider="p",
        model="m",
        mode=AnswerSource.LIVE,
        k=args.records // args.tasks,
        seed=0,
        compaction=CompactionSettings(threshold=0.8, max_context_chars=200_000),
        rates=Rates(input_rate=0.3, output_rate=1.2),
        run_id="bench",
        created_at="2026-01-01T00:00:00Z",
    )
    timings = []
    for _ in range(5):
        start = time.perf_counter()
        report = build_report(records, conditions)
        timings.append(time.perf_counter() - start)
    data = encode_runs(records)
    start = time.perf_counter()
    decode_runs(data, "runs.jsonl")
    decode_s = time.perf_counter() - start
    print(
        f"build_report: {args.records:,} run records, {report.summary.tasks} tasks: "
        f"best {min(timings):.3f} s, median {sorted(timings)[2]:.3f} s (target <= 1 s)"
    )
    print(f"decode runs.jsonl ({len(data) / 1e6:.1f} MB): {decode_s:.3f} s")


if __name__ == "__main__":
    main()
