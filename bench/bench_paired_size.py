"""Size of the suite test under "no change": the stratified permutation test against the sign-flip test.

Every task has the same true rate on both sides (p = 0.05 by default), 10 tasks, nominal two-sided 5%. Each
replication draws the runs, then computes both p-values with the functions ``eval compare`` uses
(``stratified_permutation_p`` through ``paired_difference``, and ``sign_flip_p`` on the same differences). The
table gives the share of replications with p < 0.05 and its 95% Wilson interval, per (baseline runs,
candidate runs). The sign-flip test assumes each task's difference symmetric about 0, which fails with unequal
runs per side; the stratified test is exact under the sharp null for any runs per side, so its size is at most
5% up to simulation error. The last column is how often the 95% t interval ``eval compare`` prints beside the
p-value excludes 0 in the same null suites (it should be 5%; it is an approximation, and the test decides).

Run by hand (not part of the test suite): ``.venv/bin/python bench/bench_paired_size.py [replications]``.
"""

from __future__ import annotations

import sys
from fractions import Fraction

import numpy as np

from alisio.core.stats.paired import paired_difference, sign_flip_p
from alisio.core.stats.rates import wilson_interval

GRID = ((5, 50), (50, 5), (5, 20), (20, 20))
RATE = 0.05
TASKS = 10
ALPHA = 0.05


def _cell(rng: np.random.Generator, bn: int, cn: int, replications: int) -> tuple[int, int, int]:
    stratified = sign_flip = excludes = 0
    for _ in range(replications):
        base = rng.binomial(bn, RATE, size=TASKS)
        cand = rng.binomial(cn, RATE, size=TASKS)
        tasks = [(int(b), bn, int(c), cn) for b, c in zip(base, cand, strict=True)]
        result = paired_difference(tasks)
        assert result is not None
        stratified += result.p_value < ALPHA
        excludes += result.interval.low > 0.0 or result.interval.high < 0.0
        diffs = [Fraction(c, cn) - Fraction(b, bn) for b, _, c, _ in tasks]
        sign_flip += sign_flip_p(diffs)[0] < ALPHA
    return stratified, sign_flip, excludes


def _rate(hits: int, replications: int) -> str:
    interval = wilson_interval(hits, replications)
    assert interval is not None
    return f"{hits / replications:.2%} [{interval.low:.2%}, {interval.high:.2%}]"


def main(replications: int) -> None:
    rng = np.random.default_rng(20261201)
    print(f"every task at p = {RATE}, {TASKS} tasks, nominal 5%, {replications:,} replications per row")
    print(
        "| runs per side (baseline / candidate) | stratified permutation size [95%] | sign-flip size [95%] "
        "| t interval excludes 0 [95%] |"
    )
    print("|---|---:|---:|---:|")
    for bn, cn in GRID:
        stratified, sign_flip, excludes = _cell(rng, bn, cn, replications)
        print(
            f"| {bn} / {cn} | {_rate(stratified, replications)} | {_rate(sign_flip, replications)} "
            f"| {_rate(excludes, replications)} |",
            flush=True,
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
