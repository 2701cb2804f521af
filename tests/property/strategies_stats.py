"""Hypothesis strategies for the statistics kernel and the verdict rule: counts, pass counts, sides."""

from __future__ import annotations

from hypothesis import strategies as st

from alisio.core.stats.verdict import Side

MAX_N = 2000
"""Largest run count drawn for Wilson properties (the notes checked every property up to n = 2000)."""


def counts(min_n: int = 1, max_n: int = MAX_N) -> st.SearchStrategy[tuple[int, int]]:
    """``(passes, n)`` with ``min_n <= n <= max_n`` and ``0 <= passes <= n``."""
    return st.integers(min_n, max_n).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))


def interior_counts(max_n: int = MAX_N) -> st.SearchStrategy[tuple[int, int]]:
    """``(passes, n)`` with ``0 < passes < n``: a task that neither always failed nor always passed."""
    return st.integers(2, max_n).flatmap(lambda n: st.tuples(st.integers(1, n - 1), st.just(n)))


def pass_counts(max_n: int = 60) -> st.SearchStrategy[tuple[int, int, int]]:
    """``(n, c, k)`` with ``1 <= k <= n`` and ``0 <= c <= n``: an estimable pass@k / pass^k."""
    return st.integers(1, max_n).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))
    )


def outcomes(max_runs: int = 20) -> st.SearchStrategy[list[bool]]:
    """The judged outcomes of one task's runs, possibly none."""
    return st.lists(st.booleans(), max_size=max_runs)


def wall_times() -> st.SearchStrategy[list[float]]:
    """Realistic wall times in seconds, including large offsets that break one-pass variance formulas."""
    return st.lists(
        st.floats(min_value=0.0, max_value=1e9, allow_nan=False, allow_infinity=False), max_size=40
    )


MODES = ("live", "replay")


@st.composite
def sides(
    draw: st.DrawFn,
    min_judged: int = 0,
    max_judged: int = 30,
    max_errored: int = 3,
    modes: tuple[str, ...] = MODES,
) -> Side:
    """One arm's counts for a task: judged runs, passes among them, errored runs apart, and the mode."""
    judged = draw(st.integers(min_judged, max_judged))
    passes = draw(st.integers(0, judged))
    errored = draw(st.one_of(st.just(0), st.integers(0, max_errored)))
    mode = draw(st.sampled_from(modes))
    return Side(judged=judged, passes=passes, errored=errored, mode=mode)


def comparable_sides(min_judged: int = 5, max_judged: int = 30) -> st.SearchStrategy[Side]:
    """A side that passes the comparability and power gates: live mode, no errored runs, >= 5 judged."""
    return sides(min_judged=min_judged, max_judged=max_judged, max_errored=0, modes=("live",))
