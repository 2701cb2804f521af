"""How fast the statistics kernel is at report scale (target: a 10,000-task compare in at most 1 s).

Times, each as the best of 5 repeats: 10,000 task verdicts (two scalar Wilson intervals each), pass@k and
pass^k for every (c, k) with n = 100 runs, and wilson_bounds over one million counts. Only the first figure
has a target; the others are printed for reference.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

from alisio.core.stats.rates import pass_at_k_estimate, pass_hat_k_estimate, wilson_bounds
from alisio.core.stats.verdict import Side, task_verdict

TARGET_S = 1.0
TASKS = 10_000
REPEATS = 5


def best_of(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    rng = np.random.default_rng(20261013)
    judged = rng.integers(5, 31, size=(TASKS, 2))
    passes = rng.integers(0, judged + 1)
    pairs = [
        (
            Side(judged=int(judged[i, 0]), passes=int(passes[i, 0]), errored=0, mode="live"),
            Side(judged=int(judged[i, 1]), passes=int(passes[i, 1]), errored=0, mode="live"),
        )
        for i in range(TASKS)
    ]
    verdicts_s = best_of(lambda: [task_verdict(b, c) for b, c in pairs])

    def all_pass_at_k() -> None:
        for c in range(101):
            for k in range(1, 101):
                pass_at_k_estimate(100, c, k)
                pass_hat_k_estimate(100, c, k)

    pass_k_s = best_of(all_pass_at_k)
    n = rng.integers(1, 1001, size=1_000_000)
    x = rng.integers(0, n + 1)
    bounds_s = best_of(lambda: wilson_bounds(x, n))

    print(f"{TASKS} task verdicts: {verdicts_s * 1000:.0f} ms")
    print(f"pass@k and pass^k for all 101 x 100 (c, k) at n = 100: {pass_k_s * 1000:.0f} ms")
    print(f"wilson_bounds over 1,000,000 counts: {bounds_s * 1000:.0f} ms")
    ok = verdicts_s <= TARGET_S
    print(f"target: {TASKS} verdicts in at most {TARGET_S * 1000:.0f} ms -> {'ok' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
