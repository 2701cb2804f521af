"""Properties of the non-inferiority test behind ``eval compare --fail-on worse-than:M``: its size at most 5%
over the null region (computed exactly over every table), its p-value a supremum at any null rate pair (an
independent loop over the tables), its monotonicity, and the margin's parsing."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.lab.comparisons.gate import parse_margin
from alisio.core.stats.noninferiority import noninferiority_p


def _binomial(x: int, n: int, p: float) -> float:
    return math.comb(n, x) * p**x * (1 - p) ** (n - x)


def _z(a: int, nb: int, c: int, nc: int, margin: float) -> float:
    pb, pc = (a + 0.5) / (nb + 1), (c + 0.5) / (nc + 1)
    return (pc - pb + margin) / math.sqrt(pb * (1 - pb) / nb + pc * (1 - pc) / nc)


@pytest.mark.parametrize(("nb", "nc"), [(8, 8), (5, 12)])
def test_the_size_is_at_most_five_percent_over_the_null_region(nb: int, nc: int) -> None:
    """With the rejection region {p < 0.05} of every table, the chance of rejecting when the candidate is
    really 10 points worse (or more) stays at most 5% at every rate pair tried, boundary and inside."""
    reject = [
        (a, c)
        for a in range(nb + 1)
        for c in range(nc + 1)
        if (r := noninferiority_p(a, nb, c, nc, 0.1)) is not None and r[0] < 0.05
    ]
    assert reject, "some table must show non-inferiority at these sizes"
    worst = 0.0
    for i in range(61):
        pb = 0.1 + 0.9 * i / 60
        for pc in (pb - 0.1, (pb - 0.1) * 0.7):
            size = sum(_binomial(a, nb, pb) * _binomial(c, nc, pc) for a, c in reject)
            worst = max(worst, size)
    assert worst <= 0.05 + 1e-6


@settings(max_examples=30, deadline=None)
@given(
    st.integers(1, 10).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.integers(1, 10).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.floats(0.1, 1.0),
    st.floats(0.0, 1.0),
)
def test_the_p_value_is_a_supremum_over_the_null(
    base: tuple[int, int], cand: tuple[int, int], pb: float, shrink: float
) -> None:
    """At any null pair (pb, pc <= pb − 0.1), the probability of a z at least the observed one is at most the
    p-value (up to 1e-4, the boundary grid's resolution)."""
    result = noninferiority_p(base[0], base[1], cand[0], cand[1], 0.1)
    assert result is not None and result[1] == "exact"
    pc = (pb - 0.1) * shrink
    observed = _z(base[0], base[1], cand[0], cand[1], 0.1)
    tail = sum(
        _binomial(a, base[1], pb) * _binomial(c, cand[1], pc)
        for a in range(base[1] + 1)
        for c in range(cand[1] + 1)
        if _z(a, base[1], c, cand[1], 0.1) >= observed - 1e-12
    )
    assert tail <= result[0] + 1e-4


def test_more_candidate_passes_never_raise_the_p_value() -> None:
    """A better candidate is never less clearly non-inferior; the same high rate at 50 runs is shown within
    10 points, a 10-point drop at 50 runs is not."""
    ps = [noninferiority_p(45, 50, c, 50, 0.1) for c in range(35, 51)]
    values = [p[0] for p in ps if p is not None]
    assert all(a >= b - 1e-12 for a, b in itertools.pairwise(values))
    same, drop = noninferiority_p(49, 50, 49, 50, 0.1), noninferiority_p(45, 50, 35, 50, 0.1)
    assert same is not None and same[0] < 0.05
    assert drop is not None and drop[0] > 0.5
    big = noninferiority_p(4000, 5000, 4000, 5000, 0.1)
    assert big is not None and big[1] == "normal" and big[0] < 1e-10


def test_the_margin_is_parsed_or_refused_in_one_line() -> None:
    """worse-than:0.1 is 0.1; 0, 1, 'x' and 1.5 are refused with a message naming the flag."""
    assert parse_margin("worse-than:0.1") == Success(0.1)
    for bad in ("worse-than:0", "worse-than:1", "worse-than:x", "worse-than:1.5", "worse-than:"):
        result = parse_margin(bad)
        assert isinstance(result, Failure) and "--fail-on" in result.failure()
