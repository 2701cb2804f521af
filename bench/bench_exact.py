"""How fast the per-task exact tests and the paired suite comparison are at the sizes users have.

Times, each as the best of 3 repeats: one Boschloo p-value at 50, 100 and 200 runs per side; a 30-task
comparison's tests at 200 runs per side (Boschloo, Newcombe and the minimum detectable change per task, plus
Holm); the exact sign-flip p-value over 20 tasks (2^20 patterns) and the seeded 100,000-draw one over 200
tasks; and the interval that inverts the test (``difference_interval``, computed under ``--verdict exact``)
at 10, 50, 200 and 999 runs per side (the largest table within the cell budget) and at 10^6 (the score
interval above it), a 30-task comparison's intervals at 200 runs per side, and how often each interval
disagrees with Boschloo's p (excludes 0 while p >= 0.05, or the other way round) over every table with 5,
10 or 20 runs per side (598 tables; the inverted interval never does, by construction). Target: the 30-task
comparison at 200 runs per side in at most 3 s. scipy.stats.boschloo_exact
(optimizer-based) took about 0.3 s per task at 200 runs per side on this machine, 10x slower; alisio does not
depend on scipy.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable

from alisio.core.stats.exact import boschloo_p, holm_adjust, newcombe_interval
from alisio.core.stats.inverted import boschloo_interval, difference_interval
from alisio.core.stats.paired import paired_difference
from alisio.core.stats.power import min_detectable_difference

TARGET_S = 3.0
REPEATS = 3


def best_of(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def comparison(tasks: int, n: int) -> None:
    ps = []
    for i in range(tasks):
        b, c = (37 * i) % (n + 1), (53 * i + 11) % (n + 1)
        ps.append(boschloo_p(b, n, c, n) or 1.0)
        newcombe_interval(b, n, c, n)
        min_detectable_difference(b / n, n, n)
    holm_adjust(ps)


def disagreements() -> str:
    """How many tables, at 5, 10 and 20 runs per side, have an interval that disagrees with the test."""
    tables = [(b, n, c, n) for n in (5, 10, 20) for b in range(n + 1) for c in range(n + 1)]
    newcombe = inverted = 0
    for table in tables:
        p = boschloo_p(*table) or 1.0
        for interval, counter in (
            (newcombe_interval(*table), "newcombe"),
            (boschloo_interval(*table), "inverted"),
        ):
            assert interval is not None
            if (interval.low > 0 or interval.high < 0) != (p < 0.05):
                newcombe += counter == "newcombe"
                inverted += counter == "inverted"
    return (
        f"tables at 5, 10, 20 runs per side ({len(tables)}): Newcombe disagrees with Boschloo p in {newcombe} "
        f"({newcombe / len(tables):.1%}), the inverted interval in {inverted}"
    )


def main() -> int:
    for n in (50, 100, 200):
        seconds = best_of(functools.partial(boschloo_p, n // 2, n, n // 2 + n // 8, n))
        print(f"Boschloo p at {n} runs per side: {seconds * 1000:.0f} ms")
    compare_s = best_of(lambda: comparison(30, 200))
    print(f"30 tasks at 200 runs per side (Boschloo, Newcombe, detectable, Holm): {compare_s:.2f} s")
    twenty = [(i % 6, 5, (i * 5 + 3) % 6, 5) for i in range(20)]
    many = [(i % 11, 10, (i * 7 + 3) % 11, 10) for i in range(200)]
    print(
        f"sign-flip p, 20 tasks (2^20 patterns, exact): {best_of(lambda: paired_difference(twenty)) * 1000:.0f} ms"
    )
    print(
        f"sign-flip p, 200 tasks (100,000 seeded draws): {best_of(lambda: paired_difference(many)) * 1000:.0f} ms"
    )
    for n in (10, 50, 200, 999, 10**6):
        seconds = best_of(functools.partial(difference_interval, n // 2, n, n // 2 + n // 8, n))
        print(f"interval inverting the test at {n} runs per side: {seconds * 1000:.0f} ms")
    intervals_s = best_of(
        lambda: [difference_interval((37 * i) % 201, 200, (53 * i + 11) % 201, 200) for i in range(30)]
    )
    print(f"30 tasks at 200 runs per side, the intervals of --verdict exact: {intervals_s:.2f} s")
    print(disagreements())
    ok = compare_s <= TARGET_S
    print(f"target: 30 tasks at 200 runs per side <= {TARGET_S:.0f} s: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
