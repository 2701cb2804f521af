"""The two-arm sequential test under a drift common to both arms with errored runs on one arm (issue 30 §3.1):
a seeded simulation through the very functions the CLI runs (``paired_outcomes`` on run records, then
``scan_pairs``, which a property test pins to ``two_arm``'s look after every pair). Modest in size and seeded,
so it is fast and the same on every run; ``bench/bench_sequential.py --part drift`` measures it at 20,000
replications."""

from __future__ import annotations

import numpy as np

from alisio.core.lab.plans.seq_run import outcomes, paired_outcomes
from alisio.core.lab.runs.records import Measured, RunRecord, RunStatus
from alisio.core.stats.rates import wilson_interval
from alisio.core.stats.sequential_kernel import SequentialDesign, scan_pairs

ROWS = 1500
MAX_K = 100
ERRORS = 0.4
_MEASURED = Measured(wall_ms=1, turns=1, tool_calls=0, compactions=0, usage_complete=False)


def _records(passed: np.ndarray, errored: np.ndarray, variant: str) -> list[RunRecord]:
    status = [
        RunStatus.ERROR if e else (RunStatus.PASS if p else RunStatus.FAIL)
        for p, e in zip(passed, errored, strict=True)
    ]
    return [
        RunRecord(task_id="t", repetition=rep, seed=rep, status=s, measured=_MEASURED, variant=variant)
        for rep, s in enumerate(status)
    ]


def _false_decisions(paired: bool) -> tuple[int, int]:
    """Tasks with no real difference (both arms at the same rate, which drifts from 0.1 to 0.9 over the
    repetitions), 40% of the candidate's runs errored: how many the test decides, of ``ROWS``. ``paired``: the
    code's pairing by repetition; else errored runs dropped per arm and the rest paired by position (the rule
    before issue 30), written here as the counterfactual."""
    rng = np.random.default_rng(3001)
    rates = np.linspace(0.1, 0.9, MAX_K)
    diffs = np.zeros((ROWS, MAX_K), dtype=np.int64)
    no_error = np.zeros(MAX_K, dtype=bool)
    for row in range(ROWS):
        base = _records(rng.random(MAX_K) < rates, no_error, "base")
        cand = _records(rng.random(MAX_K) < rates, rng.random(MAX_K) < ERRORS, "cand")
        if paired:
            b, c = paired_outcomes(base, cand)
        else:
            b, c = outcomes(base), outcomes(cand)
        n = min(len(b), len(c))
        diffs[row, :n] = np.asarray(c[:n], dtype=np.int64) - np.asarray(b[:n], dtype=np.int64)
    # Past a row's last pair the padding is D = 0, which multiplies every bet by 1: no decision can start there.
    _, reason, _ = scan_pairs(SequentialDesign(tasks=1, max_k=MAX_K), diffs)
    return int((reason == 1).sum()), ROWS


def test_pairing_by_repetition_keeps_the_error_rate_under_drift_with_errors() -> None:
    """Paired by repetition, the false-decision rate stays below alpha = 5% (the whole 95% interval of the
    simulated rate lies below it); pairing what is left after dropping each arm's errors, the same draws give
    far more than 5% false decisions (the candidate's later, better repetitions meet the baseline's earlier
    ones)."""
    hits, rows = _false_decisions(paired=True)
    interval = wilson_interval(hits, rows)
    assert interval is not None and interval.high < 0.05, (hits, rows)
    shifted, _ = _false_decisions(paired=False)
    low = wilson_interval(shifted, rows)
    assert low is not None and low.low > 0.05, (shifted, rows)
