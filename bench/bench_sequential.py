"""The sequential mode's guarantees, measured by simulation with the functions the CLI runs (issue 19).

Every simulated task is scanned by ``alisio.core.lab.sequential_kernel.scan_pairs`` / ``scan_width``, the very
functions behind ``two_arm`` and ``until_width`` (a property test checks that the scan stops where the CLI's
look after every pair stops), with the CLI's defaults: alpha 0.05 family-wise, ``--min-k`` 5, futility 0.05.

Parts (``--part``; all by default):

- ``type1``: equal true rates per task in {0.1, 0.3, 0.5, 0.7, 0.9, 0.95}, 1, 5 and 30 tasks, ``--max-k`` in
  {20, 50, 200}, a look after every pair: the family-wise false-decision rate (any task "improved" or
  "regressed"), with the 95% Wilson interval of the estimate, the share stopped for futility and the mean pairs
  per task.
- ``power``: one task, base rates 0.5 and 0.8, true differences +10, +20, +30 points (0.8 + 0.3 is not a rate),
  ``--max-k`` 50, 200 and twice what ``eval power`` plans for 80% (at most 500): the power (decided
  "improved" by ``--max-k``) and the mean pairs per task, against the runs per side that ``eval power`` plans
  for Boschloo at the same power (``alisio.core.lab.comparisons.power_plan.plan_power``), and the saving.
- ``coverage``: one arm, ``--until-width`` 0.2 and 0.3, ``--max-k`` 500: the share of tasks whose confidence
  sequence at the stop holds the true rate (at least 95% by Ville's inequality), and the mean runs.
- ``methods``: why the mixture of bets: its power and mean pairs against a predictable plug-in bet (aGRAPA,
  Waudby-Smith & Ramdas 2024 §5) on the same simulated pairs, one task, max-k 200, no futility.

Run by hand (about 10 minutes on one core): ``nice .venv/bin/python bench/bench_sequential.py``.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

import numpy as np

from alisio.core.lab.comparisons.power_plan import PowerRequest, plan_power
from alisio.core.lab.sequential_kernel import (
    MAX_K,
    SequentialDesign,
    crosses,
    scan_pairs,
    scan_width,
    threshold,
)
from alisio.core.stats.rates import wilson_interval

if TYPE_CHECKING:
    from numpy.typing import NDArray

RATES = (0.1, 0.3, 0.5, 0.7, 0.9, 0.95)
TASKS = (1, 5, 30)
MAX_KS = (20, 50, 200)
CHUNK = 60_000
"""Simulated tasks per batch (memory: about 80 x CHUNK x max-k bytes for the counts and e-values; the batches
set how the random draws are cut, so changing it changes the figures by simulation noise)."""


def _pct(hits: int, n: int) -> str:
    """'4.1% [3.8, 4.4]': the estimate and its 95% Wilson interval, in percent."""
    interval = wilson_interval(hits, n)
    assert interval is not None
    return f"{100 * hits / n:.2f}% [{100 * interval.low:.2f}, {100 * interval.high:.2f}]"


def _pairs(rng: np.random.Generator, rows: int, looks: int, p_base: float, p_cand: float) -> NDArray[np.int8]:
    base = rng.random((rows, looks)) < p_base
    cand = rng.random((rows, looks)) < p_cand
    return cand.astype(np.int8) - base.astype(np.int8)


def _scan(
    design: SequentialDesign, rng: np.random.Generator, rows: int, rates: tuple[float, float]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """``scan_pairs`` over ``rows`` simulated tasks, in batches."""
    parts = []
    for start in range(0, rows, CHUNK):
        diffs = _pairs(rng, min(CHUNK, rows - start), design.max_k, *rates)
        parts.append(scan_pairs(design, diffs))  # type: ignore[arg-type]
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))  # type: ignore[return-value]


def type_one(reps: int, rng: np.random.Generator) -> None:
    print(
        "| rate | tasks | max-k | family-wise false decisions [95% CI] | futility stops | mean pairs per task |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for max_k in MAX_KS:
        for tasks in TASKS:
            design = SequentialDesign(tasks=tasks, max_k=max_k)
            for rate in RATES:
                stop, reason, _ = _scan(design, rng, reps * tasks, (rate, rate))
                false = (reason == 1).reshape(reps, tasks).any(axis=1)
                print(
                    f"| {rate:g} | {tasks} | {max_k} | {_pct(int(false.sum()), reps)} |"
                    f" {100 * np.mean(reason == 2):.1f}% | {stop.mean():.1f} |",
                    flush=True,
                )


def _fixed_runs(p_base: float, delta: float, power: float) -> int | None:
    """What ``eval power --baseline-rate p --detect delta --power power`` plans per side (Boschloo/normal), the
    power capped at 99.99% (a measured 100% has no finite fixed k)."""
    if power < 0.01:
        return None
    return plan_power(
        PowerRequest(baseline_rate=p_base, detect=delta, power=min(power, 0.9999))
    ).runs_per_side


def power(reps: int, rng: np.random.Generator) -> None:
    print(
        "| base | difference | max-k | power [95% CI] | futility stops | mean pairs | fixed k, same power | saving |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p_base in (0.5, 0.8):
        for delta in (0.1, 0.2, 0.3):
            if p_base + delta > 1.0 + 1e-9:
                continue
            planned = min(MAX_K, 2 * (_fixed_runs(p_base, delta, 0.8) or 0))
            for max_k in sorted({50, 200, planned}):
                design = SequentialDesign(tasks=1, max_k=max_k)
                stop, reason, direction = _scan(design, rng, reps, (p_base, min(1.0, p_base + delta)))
                hits = int(((reason == 1) & (direction == 0)).sum())
                fixed = _fixed_runs(p_base, delta, hits / reps)
                saving = "" if fixed is None else f"{100 * (1 - stop.mean() / fixed):.0f}%"
                print(
                    f"| {p_base:g} | +{delta * 100:g} pp | {max_k} | {_pct(hits, reps)} |"
                    f" {100 * np.mean(reason == 2):.1f}% | {stop.mean():.1f} | {fixed or 'n/a'} | {saving} |",
                    flush=True,
                )


def coverage(reps: int, rng: np.random.Generator) -> None:
    print("| rate | width | covered [95% CI] | stopped for width | mean runs |")
    print("|---:|---:|---:|---:|---:|")
    design = SequentialDesign(tasks=1, max_k=500, futility=0.0)
    for width in (0.2, 0.3):
        for rate in (0.05, 0.1, 0.3, 0.5, 0.7, 0.9):
            outcomes = rng.random((reps, design.max_k)) < rate
            stop, low, high = scan_width(design, width, outcomes)
            at = np.where(stop > 0, stop, design.max_k) - 1
            rows = np.arange(reps)
            lo, hi = low[rows, at], high[rows, at]
            covered = int(((lo <= rate) & (rate <= hi)).sum())
            narrow = np.mean(hi - lo < width)
            print(
                f"| {rate:g} | {width:g} | {_pct(covered, reps)} | {100 * narrow:.1f}% | {(at + 1).mean():.1f} |"
            )


def _plug_in(diffs: NDArray[np.int8], level: float) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """Hedged predictable plug-in bets (aGRAPA): lam = mean/(variance + mean²) of the past differences, capped
    at 0.9, a long and a short bettor each held to ``level``."""
    rows, looks = diffs.shape
    wealth = np.zeros((2, rows))
    total, squares = np.zeros(rows), np.zeros(rows)
    hit, first = np.zeros(rows, dtype=bool), np.full(rows, looks)
    for t in range(looks):
        mean = total / (t + 1)
        var = np.maximum((squares + 0.25) / (t + 1) - mean**2, 1e-3)
        lam = np.clip(mean / (var + mean**2), -0.9, 0.9)
        d = diffs[:, t]
        wealth[0] += np.log1p(np.maximum(lam, 0) * d)
        wealth[1] += np.log1p(-np.maximum(-lam, 0) * d)
        total, squares = total + d, squares + d * d
        new = ~hit & crosses(np.exp(wealth.max(axis=0)), level)
        first[new], hit = t + 1, hit | new
    return hit, first


def methods(reps: int, rng: np.random.Generator) -> None:
    print("| base | difference | mixture: power, mean pairs | plug-in: power, mean pairs |")
    print("|---:|---:|---:|---:|")
    design = SequentialDesign(tasks=1, max_k=200, futility=0.0)
    for p_base, delta in ((0.5, 0.1), (0.5, 0.2), (0.5, 0.3), (0.8, 0.1), (0.8, 0.2)):
        diffs = _pairs(rng, reps, design.max_k, p_base, min(1.0, p_base + delta))
        stop, reason, _ = scan_pairs(design, diffs)  # type: ignore[arg-type]
        hit, first = _plug_in(diffs, threshold(design))
        print(
            f"| {p_base:g} | +{delta * 100:g} pp | {np.mean(reason == 1):.3f}, {stop.mean():.1f} |"
            f" {hit.mean():.3f}, {first.mean():.1f} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20_000, help="replications per cell (default 20000)")
    parser.add_argument("--part", choices=("type1", "power", "coverage", "methods", "all"), default="all")
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    parts = {"type1": type_one, "power": power, "coverage": coverage, "methods": methods}
    for name, run in parts.items():
        if args.part in (name, "all"):
            began = time.perf_counter()
            print(f"\n### {name} ({args.reps} replications per cell)\n")
            run(args.reps, rng)
            print(f"\n({name}: {time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
