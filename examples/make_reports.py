"""Write the two example report directories that ``make demo`` compares (examples/reports/{baseline,candidate}).

The story (synthetic data, not a measurement of any model): a suite "synthetic-example" run live with k = 10 by
alisio's built-in agent on harness 0.1.0 (baseline) and on harness 0.2.0 (candidate), same provider, model,
compaction and rates. Harness 0.2.0 reads the provider's cached-input
count, so only the candidate reports cached input. Per task:

- rename-symbol: 1/10 (nine runs hit maxWallMs) -> 9/10: improved;
- edit-respects-hash: 10/10 -> 3/10: regressed;
- fix-add, off-by-one-among-passing, parse-config, extract-function: small moves: inconclusive;
- flaky-network: two candidate runs ended error (provider_network): not comparable.

The runs are synthetic (a seeded generator), built as RunRecords and written by the core and alisio.shell.lab.outputs,
exactly as ``alisio eval run`` writes them. Re-run with ``.venv/bin/python examples/make_reports.py``; the
output is byte-identical for the same code.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from alisio.core.lab.runs.records import Incident, Measured, RunRecord, RunStatus, VerifierResult, VerifierStatus
from alisio.core.lab.reports.report import (
    DEFAULT_AGENT,
    AgentCondition,
    AnswerSource,
    CompactionSettings,
    Conditions,
    Rates,
)
from alisio.core.lab.reports.report_build import build_report
from alisio.shell.lab.outputs import write_report_files

K = 10
HERE = Path(__file__).resolve().parent / "reports"

# task id -> (pass, fail, budget_exceeded, error) for baseline and candidate
PLAN: dict[str, tuple[tuple[int, int, int, int], tuple[int, int, int, int]]] = {
    "edit-respects-hash": ((10, 0, 0, 0), (3, 7, 0, 0)),
    "extract-function": ((8, 2, 0, 0), (9, 1, 0, 0)),
    "fix-add": ((10, 0, 0, 0), (10, 0, 0, 0)),
    "flaky-network": ((7, 3, 0, 0), (6, 2, 0, 2)),
    "off-by-one-among-passing": ((6, 3, 1, 0), (7, 3, 0, 0)),
    "parse-config": ((4, 6, 0, 0), (6, 4, 0, 0)),
    "rename-symbol": ((1, 0, 9, 0), (9, 1, 0, 0)),
}


def _conditions(side: str) -> Conditions:
    candidate = side == "candidate"
    return Conditions(
        suite_id="synthetic-example",
        suite_version="1.0.0",
        suite_hash="sha256:5f0c2a9e41d7b3c8",
        harness_version="0.2.0" if candidate else "0.1.0",
        config_hash="sha256:9a41e07c" if candidate else "sha256:3be2d1f4",
        provider="synthetic",
        model="synthetic-model",
        mode=AnswerSource.LIVE,
        k=K,
        seed=20261014,
        compaction=CompactionSettings(threshold=0.8, max_context_chars=400_000),
        rates=Rates(input_rate=0.28, output_rate=1.10),
        run_id="2026-10-14T09-00-00-000Z" if not candidate else "2026-10-15T09-00-00-000Z",
        created_at="2026-10-14T09:00:00Z" if not candidate else "2026-10-15T09:00:00Z",
        agent=AgentCondition(name=DEFAULT_AGENT, kind="builtin", version="0.2.0" if candidate else "0.1.0"),
    )


def _records(side: str, rng: np.random.Generator) -> list[RunRecord]:
    candidate = side == "candidate"
    records: list[RunRecord] = []
    for task_id, plan in PLAN.items():
        passes, fails, over, errors = plan[1] if candidate else plan[0]
        statuses = (
            [RunStatus.PASS] * passes
            + [RunStatus.FAIL] * fails
            + [RunStatus.BUDGET_EXCEEDED] * over
            + [RunStatus.ERROR] * errors
        )
        order = rng.permutation(len(statuses))
        for repetition, index in enumerate(order.tolist()):
            status = statuses[index]
            records.append(_record(task_id, repetition, status, candidate, rng))
    return records


def _record(
    task_id: str, repetition: int, status: RunStatus, candidate: bool, rng: np.random.Generator
) -> RunRecord:
    error = status is RunStatus.ERROR
    over = status is RunStatus.BUDGET_EXCEEDED
    turns = 0 if error else int(rng.integers(4, 14))
    input_tokens = 0 if error else int(turns * rng.integers(7_000, 12_000))
    cached = int(input_tokens * rng.uniform(0.55, 0.75)) if candidate and not error else None
    verdict = VerifierStatus.PASS if status is RunStatus.PASS else VerifierStatus.FAIL
    return RunRecord(
        task_id=task_id,
        repetition=repetition,
        seed=20261014 + repetition,
        status=status,
        reason="maxWallMs" if over else ("provider_network" if error else None),
        verifiers=() if error else (VerifierResult(id="check", kind="command", status=verdict),),
        measured=Measured(
            wall_ms=120_000 if over else int(rng.integers(900, 2_500) * max(turns, 1) * 10),
            turns=turns,
            tool_calls=0 if error else turns + int(rng.integers(0, 6)),
            compactions=0,
            usage_complete=True,
            input_tokens=input_tokens,
            output_tokens=0 if error else int(turns * rng.integers(300, 900)),
            cached_input_tokens=cached,
        ),
        incidents=(Incident(kind="budget_stop", message="maxWallMs 120000 reached"),) if over else (),
        errors=("provider: connection reset by peer (after 3 retries)",) if error else (),
        config_hash=_conditions("candidate" if candidate else "baseline").config_hash,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Write the example baseline/ and candidate/ report directories."
    )
    parser.add_argument("--out", type=Path, default=HERE, help=f"where to write them (default {HERE})")
    out = parser.parse_args().out
    for side, seed in (("baseline", 1), ("candidate", 2)):
        records = _records(side, np.random.default_rng(seed))
        report = build_report(records, _conditions(side), planned_runs=K * len(PLAN))
        write_report_files(out / side, report, records)
        print(f"wrote {out / side}: {len(records)} runs, {report.summary.tasks} tasks")


if __name__ == "__main__":
    main()
