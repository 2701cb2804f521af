"""The sequential mode's guarantees, measured by simulation with the functions the CLI runs (issue 19).

Every simulated task is scanned by ``alisio.core.stats.sequential_kernel.scan_pairs`` / ``scan_width``, the very
functions behind ``two_arm`` and ``until_width`` (a property test checks that the scan stops where the CLI's
look after every pair stops), with the CLI's defaults: alpha 0.05 family-wise, ``--min-k`` 5, futility 0.05.

Parts (``--part``; all by default):

- ``type1``: equal true rates per task in {0.1, 0.3, 0.5, 0.7, 0.9, 0.95}, 1, 5 and 30 tasks, ``--max-k`` in
  {20, 50, 200}, a look after every pair: the family-wise false-decision rate (any task "improved" or
  "regressed"), with the 95% Wilson interval of the estimate, the share stopped for futility and the mean pairs
  per task.
- ``power``: one task, base rates 0.5 and 0.8, true differences +10, +20, +30 points (0.8 + 0.3 is not a rate),
  ``--max-k`` 50, 200 and twice what ``eval power`` plans for 80% (at most 500): the power (decided
  "improved" by ``--max-k``) and the mean pairs per task, against the fixed k per side whose *exact* power
  (Boschloo's two-sided 5% test deciding "improved", every table counted: ``boschloo_power``) is the same,
  and the saving; beside it the k the normal formula gives for that power (what earlier versions compared
  against, which understates the fixed k and so overstated the saving).
- ``tasks``: the price of Bonferroni across tasks: one task's power and mean pairs at 0.5 -> 0.7, ``--max-k``
  200, when the command tests 1, 10 or 30 tasks (each task's e-value held to 2·m/α).
- ``baseline``: ``eval run --sequential --baseline`` against running both arms: one task at 0.5 -> 0.7,
  ``--max-k`` 200, the stored baseline of 50, 200 or 1,000 runs: the power and mean runs, exact (a sum
  over the baseline's counts and every candidate path, with the kernel's nulls, e-values, futility and
  ``--min-k``; no simulation).
- ``jobs``: what starting a fresh job after an inconclusive stop costs, against ``--resume`` with a larger
  ``--max-k``: with no real change (rate 0.5, one task), the chance of a false decision over 1, 3 and 5 fresh
  jobs of ``--max-k`` 50 (1 − (1 − e)^j, e measured), and for one e-process continued to 50, 150 and 250 pairs
  (exact, over every path: the chance of ever crossing, a bound that futility stops only lower).
- ``drift``: two arms at the same rate, drifting from 0.1 to 0.9 over 100 repetitions, 40% of the candidate's
  runs errored: false decisions with the pairing by repetition the CLI uses (``paired_outcomes``), and with
  each arm's errors dropped before pairing by position (the rule before issue 30).
- ``coverage``: one arm, ``--until-width`` 0.2 and 0.3, ``--max-k`` 500: the share of tasks whose confidence
  sequence at the stop holds the true rate (at least 95% by Ville's inequality), and the mean runs.
- ``methods``: why the mixture of bets: its power and mean pairs against a predictable plug-in bet (aGRAPA,
  Waudby-Smith & Ramdas 2024 §5) on the same simulated pairs, one task, max-k 200, no futility.

Run by hand (about 20 minutes on one core): ``nice .venv/bin/python bench/bench_sequential.py``; one part with
``--part NAME``.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import TYPE_CHECKING

import numpy as np

from alisio.core.lab.plans.seq_run import outcomes, paired_outcomes
from alisio.core.lab.runs.records import Measured, RunRecord, RunStatus
from alisio.core.stats.betting import pair_log_wealth
from alisio.core.stats.power import boschloo_power, runs_per_side
from alisio.core.stats.rates import wilson_interval
from alisio.core.stats.sequential_kernel import (
    MAX_K,
    SequentialDesign,
    baseline_futility_probability,
    baseline_nulls,
    crosses,
    one_arm_logs,
    scan_pairs,
    scan_width,
    threshold,
)

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


def _exact_fixed_k(p_base: float, p_cand: float, power: float) -> int | None:
    """The fewest runs per side whose exact power (Boschloo's two-sided 5% test deciding "improved") reaches
    ``power``: a bisection assuming the power rises with k, then every smaller k down to 85% of it checked (an
    exact test's power can dip by a little as k grows). None below 1% or at 99.99% and above (a measured 100%
    has no finite fixed k)."""
    if not 0.01 <= power < 0.9999:
        return None

    def reaches(k: int) -> bool:
        return boschloo_power(p_base, p_cand, k, k, direction="better") >= power

    low, high = 1, 64
    while not reaches(high):
        low, high = high + 1, 2 * high
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if reaches(middle) else (middle + 1, high)
    return min((k for k in range(int(0.85 * high), high) if reaches(k)), default=high)


def _normal_k(p_base: float, delta: float, power: float) -> int | None:
    """The normal formula's runs per side for that power (``runs_per_side``), rounded up."""
    if not 0.01 <= power < 0.9999:
        return None
    return math.ceil(runs_per_side(p_base, delta, power=power))


def power(reps: int, rng: np.random.Generator) -> None:
    print(
        "| base | difference | max-k | power [95% CI] | futility stops | mean pairs | fixed k, same exact power |"
        " saving | normal formula's k (saving) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p_base in (0.5, 0.8):
        for delta in (0.1, 0.2, 0.3):
            if p_base + delta > 1.0 + 1e-9:
                continue
            planned = min(MAX_K, 2 * math.ceil(runs_per_side(p_base, delta)))
            for max_k in sorted({50, 200, planned}):
                design = SequentialDesign(tasks=1, max_k=max_k)
                p_cand = min(1.0, p_base + delta)
                stop, reason, direction = _scan(design, rng, reps, (p_base, p_cand))
                hits = int(((reason == 1) & (direction == 0)).sum())
                fixed = _exact_fixed_k(p_base, p_cand, hits / reps)
                normal = _normal_k(p_base, delta, hits / reps)
                saving = "" if fixed is None else f"{100 * (1 - stop.mean() / fixed):.0f}%"
                old = "n/a" if normal is None else f"{normal} ({100 * (1 - stop.mean() / normal):.0f}%)"
                print(
                    f"| {p_base:g} | +{delta * 100:g} pp | {max_k} | {_pct(hits, reps)} |"
                    f" {100 * np.mean(reason == 2):.1f}% | {stop.mean():.1f} | {fixed or 'n/a'} | {saving} |"
                    f" {old} |",
                    flush=True,
                )


def tasks(reps: int, rng: np.random.Generator) -> None:
    print("| tasks tested | threshold per task | power per task [95% CI] | futility stops | mean pairs |")
    print("|---:|---:|---:|---:|---:|")
    for count in (1, 10, 30):
        design = SequentialDesign(tasks=count, max_k=200)
        stop, reason, direction = _scan(design, rng, reps, (0.5, 0.7))
        hits = int(((reason == 1) & (direction == 0)).sum())
        print(
            f"| {count} | {threshold(design):g} | {_pct(hits, reps)} | {100 * np.mean(reason == 2):.1f}% |"
            f" {stop.mean():.1f} |",
            flush=True,
        )


def _baseline_exact(design: SequentialDesign, runs: int, p_base: float, p_cand: float) -> tuple[float, float]:
    """(P(decided improved), mean candidate runs) of ``eval run --sequential --baseline`` over a stored
    baseline of ``runs`` runs at ``p_base``, exactly: summed over the baseline's count x ~ Bin(runs, p_base)
    (counts of probability below 1e-12 left out) and every candidate path, a state being (passes, crossed by
    the long side, by the short side, or not); decisions and futility from ``min_k`` on, max-k at ``max_k``."""
    level = math.log(threshold(design, "baseline"))
    k = design.max_k
    s = np.arange(k + 1.0)
    log_pmf = [
        math.lgamma(runs + 1)
        - math.lgamma(x + 1)
        - math.lgamma(runs - x + 1)
        + x * math.log(p_base)
        + (runs - x) * math.log1p(-p_base)
        for x in range(runs + 1)
    ]
    improved = mean_runs = 0.0
    for x in range(runs + 1):
        weight = math.exp(log_pmf[x])
        if weight < 1e-12:
            continue
        nulls = baseline_nulls(design, x, runs)
        free, long_hit, short_hit = np.zeros(k + 1), np.zeros(k + 1), np.zeros(k + 1)
        free[0] = 1.0
        up = stops = 0.0
        for t in range(1, k + 1):
            free, long_hit, short_hit = (
                np.concatenate(([a[0] * (1 - p_cand)], a[1:] * (1 - p_cand) + a[:-1] * p_cand))
                for a in (free, long_hit, short_hit)
            )
            logs = [one_arm_logs(s, t - s, m, side) for m, side in zip(nulls, (True, False), strict=False)]
            new_long = (logs[0] >= level) & (s <= t)
            new_short = (
                ((logs[1] >= level) & (s <= t) & ~new_long) if len(logs) > 1 else np.zeros(k + 1, bool)
            )
            long_hit, short_hit = long_hit + free * new_long, short_hit + free * new_short
            free = free * ~(new_long | new_short)
            if t < design.min_k:
                continue
            up += float(long_hit.sum())
            stops += t * float(long_hit.sum() + short_hit.sum())
            long_hit[:], short_hit[:] = 0.0, 0.0
            if t == k:
                stops += t * float(free.sum())
                break
            for passes in np.flatnonzero(free > 1e-15):
                chance = baseline_futility_probability(design, x, runs, t, int(passes))
                if chance == 0.0 or chance < design.futility:
                    stops += t * free[passes]
                    free[passes] = 0.0
        improved += weight * up
        mean_runs += weight * stops
    return improved, mean_runs


def baseline(reps: int, rng: np.random.Generator) -> None:
    design = SequentialDesign(tasks=1, max_k=200)
    stop, reason, direction = _scan(design, rng, reps, (0.5, 0.7))
    hits = int(((reason == 1) & (direction == 0)).sum())
    print("| design | power (decided improved) | mean candidate runs |")
    print("|---|---:|---:|")
    print(f"| both arms run (`eval variants --sequential`) | {_pct(hits, reps)} | {stop.mean():.1f} pairs |")
    for runs in (50, 200, 1000):
        power_, mean = _baseline_exact(design, runs, 0.5, 0.7)
        print(f"| stored baseline of {runs:,} runs | {100 * power_:.1f}% (exact) | {mean:.1f} |", flush=True)


def _ever_crosses(rate: float, max_k: int, design: SequentialDesign) -> float:
    """Exactly, over every path of equal rates: the chance that the running maximum of either e-value reaches
    the threshold by ``max_k`` pairs (no futility, which only ever stops a test earlier)."""
    level = math.log(threshold(design))
    up = down = rate * (1 - rate)
    flat = 1 - 2 * up
    a, b = np.meshgrid(np.arange(max_k + 1.0), np.arange(max_k + 1.0), indexing="ij")
    past = (pair_log_wealth(a, np.zeros_like(a), b, 0.0, True) >= level) | (
        pair_log_wealth(a, np.zeros_like(a), b, 0.0, False) >= level
    )
    mass = np.zeros((max_k + 1, max_k + 1))
    mass[0, 0] = 1.0
    absorbed = 0.0
    for _ in range(max_k):
        step = flat * mass
        step[1:, :] += up * mass[:-1, :]
        step[:, 1:] += down * mass[:, :-1]
        absorbed += float(step[past].sum())
        step[past] = 0.0
        mass = step
    return absorbed


def jobs(reps: int, rng: np.random.Generator) -> None:
    design = SequentialDesign(tasks=1, max_k=50)
    _, reason, _ = _scan(design, rng, reps, (0.5, 0.5))
    e = float(np.mean(reason == 1))
    print(f"one job of --max-k 50 at rate 0.5: false decisions {_pct(int((reason == 1).sum()), reps)}")
    print()
    print(
        "| jobs of 50 pairs | fresh jobs, each after an inconclusive stop | one e-process resumed to the same pairs |"
    )
    print("|---:|---:|---:|")
    for count in (1, 3, 5):
        resumed = _ever_crosses(0.5, 50 * count, SequentialDesign(tasks=1, max_k=50 * count))
        print(f"| {count} | {100 * (1 - (1 - e) ** count):.1f}% | at most {100 * resumed:.1f}% |", flush=True)


_MEASURED = Measured(wall_ms=1, turns=1, tool_calls=0, compactions=0, usage_complete=False)


def _arm(passed: NDArray[np.bool_], errored: NDArray[np.bool_], variant: str) -> list[RunRecord]:
    return [
        RunRecord(
            task_id="t",
            repetition=rep,
            seed=rep,
            status=RunStatus.ERROR if e else (RunStatus.PASS if p else RunStatus.FAIL),
            measured=_MEASURED,
            variant=variant,
        )
        for rep, (p, e) in enumerate(zip(passed, errored, strict=True))
    ]


def drift(reps: int, rng: np.random.Generator) -> None:
    looks, errors = 100, 0.4
    rates = np.linspace(0.1, 0.9, looks)
    design = SequentialDesign(tasks=1, max_k=looks)
    paired = np.zeros((reps, looks), dtype=np.int64)
    shifted = np.zeros((reps, looks), dtype=np.int64)
    clean = np.zeros(looks, dtype=bool)
    for row in range(reps):
        base = _arm(rng.random(looks) < rates, clean, "base")
        cand = _arm(rng.random(looks) < rates, rng.random(looks) < errors, "cand")
        for out, (b, c) in (
            (paired, paired_outcomes(base, cand)),
            (shifted, (outcomes(base), outcomes(cand))),
        ):
            n = min(len(b), len(c))
            out[row, :n] = np.asarray(c[:n], dtype=np.int64) - np.asarray(b[:n], dtype=np.int64)
    print("| pairing | false decisions [95% CI] |")
    print("|---|---:|")
    for name, diffs in (
        ("by repetition (the CLI)", paired),
        ("errors dropped per arm, then by position", shifted),
    ):
        _, reason, _ = scan_pairs(design, diffs)
        print(f"| {name} | {_pct(int((reason == 1).sum()), reps)} |", flush=True)


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
    names = ("type1", "power", "tasks", "baseline", "jobs", "drift", "coverage", "methods")
    parser.add_argument("--part", choices=(*names, "all"), default="all")
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args()
    parts = {
        "type1": type_one,
        "power": power,
        "tasks": tasks,
        "baseline": baseline,
        "jobs": jobs,
        "drift": drift,
        "coverage": coverage,
        "methods": methods,
    }
    for index, (name, run) in enumerate(parts.items()):
        if args.part in (name, "all"):
            rng = np.random.default_rng(
                [args.seed, index]
            )  # each part its own stream: one part alone gives its figures
            began = time.perf_counter()
            print(f"\n### {name} ({args.reps} replications per cell)\n")
            run(args.reps, rng)
            print(f"\n({name}: {time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
