"""The reliability profile's intervals and the plan of ``eval power --from``, measured by simulation with the
functions the lab runs (``alisio.core.stats.reliability``, ``alisio.core.stats.power``, ``paired_difference``).

Parts (``--part``; all by default):

- ``icc``: suites whose task rates are Beta with a known ICC ρ (a + b + 1 = 1/ρ) and mean rate, k runs per
  task: the share of suites whose 95% ICC interval holds ρ, and the mean estimate.
- ``cost``: token costs per run lognormal around a per-task mean (itself lognormal), task rates Beta(mean·3,
  (1 − mean)·3), k = 5: the share of suites whose Fieller interval of tokens per success holds the true ratio,
  and the share with no upper bound.
- ``plan``: ``eval power --from``'s suite plan against the independent-runs plan: 20 tasks whose rates are 0.9
  times a Beta variable (mean 0.45; ICC of the rates 0.08, 0.25, 0.49), a change of +10 points on every task; each plan's
  runs per task (the measured one given the rates' true E[p(1 − p)]), and the power a simulated comparison at
  that k reaches with the stratified permutation p of ``eval compare`` (p < 0.05, candidate better).

Run by hand (a few minutes): ``nice .venv/bin/python bench/bench_reliability.py [--reps N]``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from alisio.core.stats.paired import paired_difference
from alisio.core.stats.power import runs_per_task
from alisio.core.stats.rates import wilson_interval
from alisio.core.stats.reliability import icc_binary, ratio_estimate


def _pct(hits: int, n: int) -> str:
    interval = wilson_interval(hits, n)
    assert interval is not None
    return f"{100 * hits / n:.1f}% [{100 * interval.low:.1f}, {100 * interval.high:.1f}]"


def _rates(rng: np.random.Generator, tasks: int, rho: float, mean: float) -> np.ndarray:
    spread = 1 / rho - 1
    return rng.beta(mean * spread, (1 - mean) * spread, tasks)


def icc(reps: int, rng: np.random.Generator) -> None:
    print(
        "| tasks | k | true ICC | mean rate | interval holds the ICC [95% CI] | mean estimate | no interval |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    grid = [
        (10, 5, 0.3, 0.5),
        (30, 5, 0.3, 0.5),
        (100, 5, 0.3, 0.5),
        (30, 3, 0.1, 0.5),
        (30, 10, 0.1, 0.5),
        (30, 5, 0.6, 0.5),
        (10, 10, 0.6, 0.5),
        (30, 5, 0.3, 0.3),
        (30, 5, 0.3, 0.15),
        (100, 5, 0.3, 0.15),
    ]
    for tasks, k, rho, mean in grid:
        hits = counted = missing = 0
        total = 0.0
        for _ in range(reps):
            counts = rng.binomial(k, _rates(rng, tasks, rho, mean))
            estimate = icc_binary([(int(x), k) for x in counts])
            if estimate is None or estimate.interval is None:
                missing += 1
                continue
            counted += 1
            total += estimate.icc
            hits += estimate.interval.low <= rho <= estimate.interval.high
        print(
            f"| {tasks} | {k} | {rho:g} | {mean:g} | {_pct(hits, counted)} | {total / counted:.3f} |"
            f" {100 * missing / reps:.1f}% |",
            flush=True,
        )


def cost(reps: int, rng: np.random.Generator) -> None:
    print("| tasks | k | mean rate | interval holds the true tokens per success [95% CI] | no upper bound |")
    print("|---:|---:|---:|---:|---:|")
    per_run = math.exp(8 + 0.5**2 / 2) * math.exp(0.3**2 / 2)
    for tasks, mean in ((5, 0.5), (10, 0.5), (30, 0.5), (10, 0.2), (30, 0.1)):
        truth = per_run / mean
        hits = counted = unbounded = 0
        for _ in range(reps):
            base, rates = rng.lognormal(8, 0.5, tasks), rng.beta(mean * 3, (1 - mean) * 3, tasks)
            tokens = (base[:, None] * rng.lognormal(0, 0.3, (tasks, 5))).sum(axis=1)
            got = ratio_estimate(list(tokens), [int(x) for x in rng.binomial(5, rates)])
            if got is None or got.low is None:
                continue
            counted += 1
            unbounded += got.high is None
            hits += got.low <= truth and (got.high is None or truth <= got.high)
        print(
            f"| {tasks} | 5 | {mean:g} | {_pct(hits, counted)} | {100 * unbounded / counted:.1f}% |",
            flush=True,
        )


SCALE = 0.9
"""Task rates are 0.9 times a Beta variable, so that every task can move up by 10 points (the plan assumes every
task's rate moves by the change; a task at 100% cannot)."""


def _power(
    rng: np.random.Generator, reps: int, tasks: int, k: int, beta: tuple[float, float], delta: float
) -> tuple[int, int]:
    hits = 0
    for _ in range(reps):
        rates = SCALE * rng.beta(*beta, tasks)
        base, cand = rng.binomial(k, rates), rng.binomial(k, rates + delta)
        result = paired_difference([(int(b), k, int(c), k) for b, c in zip(base, cand, strict=True)])
        assert result is not None
        hits += result.p_value < 0.05 and result.mean > 0
    return hits, reps


def plan(reps: int, rng: np.random.Generator) -> None:
    print(
        "| ICC of the rates | mean rate | within-task variance (measured / independent) | k, measured plan |"
        " power at it [95% CI] | k, independent-runs plan | power at it [95% CI] |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    tasks, delta = 20, 0.1
    for rho in (0.1, 0.3, 0.6):
        spread = 1 / rho - 1
        a = b = 0.5 * spread
        mean = SCALE * 0.5
        variance = SCALE**2 * a * b / ((a + b) ** 2 * (a + b + 1))
        within = mean - variance - mean**2  # E[p(1 − p)] = E[p] − Var(p) − E[p]²
        icc_true = variance / (mean * (1 - mean))
        measured = runs_per_task(mean, delta, tasks, within_rate_variance=within)[0]
        independent = runs_per_task(mean, delta, tasks)[0]
        assert measured is not None and independent is not None
        k_measured, k_independent = math.ceil(measured), math.ceil(independent)
        hit_m, n_m = _power(rng, reps, tasks, k_measured, (a, b), delta)
        hit_i, n_i = _power(rng, reps, tasks, k_independent, (a, b), delta)
        print(
            f"| {icc_true:.2f} | {mean:g} | {within:.4f} / {mean * (1 - mean):.4f} | {k_measured} |"
            f" {_pct(hit_m, n_m)} | {k_independent} | {_pct(hit_i, n_i)} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=4000, help="replications per row (default 4000)")
    parser.add_argument("--part", choices=("icc", "cost", "plan", "all"), default="all")
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args()
    parts = {"icc": icc, "cost": cost, "plan": plan}
    for index, (name, run) in enumerate(parts.items()):
        if args.part in (name, "all"):
            rng = np.random.default_rng([args.seed, index])
            began = time.perf_counter()
            reps = args.reps if name != "plan" else max(1, args.reps // 4)  # a comparison costs more
            print(f"\n### {name} ({reps} replications per row)\n")
            run(reps, rng)
            print(f"\n({name}: {time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
