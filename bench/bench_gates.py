"""What a green `eval compare` gate means: the chance each gate stays green, one task, k runs per side.

For k in (10, 20, 50) and a baseline rate of 0.8, exact over every table (binomial sums), with the functions
`eval compare` uses:

- `--fail-on regressed` (default rule: disjoint Wilson intervals; and `--verdict exact`: Boschloo p < 0.05):
  the chance it is hit when the candidate is really 20 points worse (its power to catch that regression);
- `--fail-on worse-than:0.1`: the chance it is green (non-inferiority shown) when the candidate is really as
  good, and when it is really 10 or 20 points worse (at most 5% by construction).

Rejection regions are found per baseline count by bisection over the candidate count (each test's p-value is
monotone in the candidate's passes). Run by hand: ``.venv/bin/python bench/bench_gates.py``.
"""

from __future__ import annotations

import math

from alisio.core.stats.exact import boschloo_p
from alisio.core.stats.noninferiority import noninferiority_p
from alisio.core.stats.rates import wilson_interval

RATE = 0.8


def _first(low: int, high: int, ok: object) -> int:
    """Smallest c in [low, high] with ok(c) (monotone: False then True), or high + 1."""
    assert callable(ok)
    while low <= high:
        mid = (low + high) // 2
        if ok(mid):
            high = mid - 1
        else:
            low = mid + 1
    return low


def _binomial(n: int, p: float) -> list[float]:
    return [math.comb(n, x) * p**x * (1 - p) ** (n - x) for x in range(n + 1)]


def _chance(limits: list[int], n: int, pb: float, pc: float, below: bool) -> float:
    """P(candidate count < limit[a]) (below) or >= limit[a], a the baseline count."""
    b, c = _binomial(n, pb), _binomial(n, pc)
    return sum(b[a] * sum(c[: limits[a]] if below else c[limits[a] :]) for a in range(n + 1))


def _wilson_high(x: int, n: int) -> float:
    interval = wilson_interval(x, n)
    assert interval is not None
    return interval.high


def _wilson_low(x: int, n: int) -> float:
    interval = wilson_interval(x, n)
    assert interval is not None
    return interval.low


def _row(n: int) -> list[float]:
    """The five chances at n runs per side."""
    # regressed: candidate counts c below a limit per baseline count a
    disjoint = [_first(0, n, lambda c, a=a: not _wilson_high(c, n) < _wilson_low(a, n)) for a in range(n + 1)]
    exact = [
        _first(0, a, lambda c, a=a: not ((p := boschloo_p(a, n, c, n)) is not None and p < 0.05 and c < a))
        for a in range(n + 1)
    ]

    def shown(c: int, a: int) -> bool:
        r = noninferiority_p(a, n, c, n, 0.1)
        return r is not None and r[0] < 0.05

    green = [_first(0, n, lambda c, a=a: shown(c, a)) for a in range(n + 1)]
    return [
        _chance(disjoint, n, RATE, RATE - 0.2, True),
        _chance(exact, n, RATE, RATE - 0.2, True),
        _chance(green, n, RATE, RATE, False),
        _chance(green, n, RATE, RATE - 0.1, False),
        _chance(green, n, RATE, RATE - 0.2, False),
    ]


def main() -> None:
    print(
        "| k per side | regressed, default rule: caught a 20-pt drop | regressed, --verdict exact: caught | "
        "worse-than:0.1 green, no change | green, 10 pts worse | green, 20 pts worse |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for n in (10, 20, 50):
        cells = _row(n)
        print(f"| {n} | " + " | ".join(f"{v:.1%}" for v in cells) + " |")


if __name__ == "__main__":
    main()
