"""Properties of alisio.core.stats.verdict: precedence (not comparable > low power > intervals), symmetry, fixed vectors.

The vectors and the threshold table are reviewed reference values of the verdict rule, fixed here.
"""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from alisio.core.stats.rates import Interval, wilson_interval
from alisio.core.stats.verdict import (
    ALPHA,
    MIN_JUDGED,
    Adjustment,
    Side,
    TaskVerdict,
    Verdict,
    VerdictRule,
    compare_intervals,
    exact_verdict,
    format_interval,
    rule_description,
    task_gate,
    task_verdict,
)
from tests.property.strategies_stats import comparable_sides, sides

DIRECTIONAL = {Verdict.IMPROVED, Verdict.REGRESSED}
SWAPPED = {
    Verdict.IMPROVED: Verdict.REGRESSED,
    Verdict.REGRESSED: Verdict.IMPROVED,
    Verdict.INCONCLUSIVE: Verdict.INCONCLUSIVE,
    Verdict.LOW_POWER: Verdict.LOW_POWER,
    Verdict.NOT_COMPARABLE: Verdict.NOT_COMPARABLE,
}


def live(passes: int, judged: int, errored: int = 0, mode: str = "live") -> Side:
    return Side(judged=judged, passes=passes, errored=errored, mode=mode)


def verdict_of(baseline: Side, candidate: Side) -> Verdict:
    return task_verdict(baseline, candidate).verdict


# --- the fixed vectors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "cand", "expected"),
    [
        ((0, 5), (5, 5), Verdict.IMPROVED),
        ((1, 5), (5, 5), Verdict.INCONCLUSIVE),
        ((1, 10), (8, 10), Verdict.IMPROVED),
        ((3, 10), (9, 10), Verdict.INCONCLUSIVE),
        ((2, 10), (8, 10), Verdict.INCONCLUSIVE),
        ((0, 4), (4, 4), Verdict.LOW_POWER),
        ((5, 5), (0, 5), Verdict.REGRESSED),
        ((8, 10), (1, 10), Verdict.REGRESSED),
        ((3, 5), (4, 5), Verdict.INCONCLUSIVE),
    ],
)
def test_fixed_vectors(base: tuple[int, int], cand: tuple[int, int], expected: Verdict) -> None:
    """0/5 → 5/5 improved, 1/5 → 5/5 inconclusive, 1/10 → 8/10 improved, 0/4 → 4/4 low power, ..."""
    assert verdict_of(live(*base), live(*cand)) is expected


# §2.1: smallest candidate passes (same n) that reads "improved", per baseline passes; None = unreachable.
THRESHOLDS = {
    5: [5, None, None, None, None, None],
    6: [5, 6, None, None, None, None, None],
    7: [5, 7, 7, None, None, None, None, None],
    8: [6, 7, 8, None, None, None, None, None, None],
    9: [6, 7, 8, 9, None, None, None, None, None, None],
    10: [6, 8, 9, 10, 10, None, None, None, None, None, None],
    11: [6, 8, 9, 10, 11, 11, None, None, None, None, None, None],
    12: [6, 8, 9, 10, 11, 12, 12, None, None, None, None, None, None],
}


@pytest.mark.parametrize("n", list(THRESHOLDS))
def test_improvement_thresholds_table(n: int) -> None:
    """For n = 5..12 runs per side, the smallest "improved" candidate count matches the notes' §2.1 table."""
    for base_passes, expected in enumerate(THRESHOLDS[n]):
        improved = [
            c for c in range(n + 1) if verdict_of(live(base_passes, n), live(c, n)) is Verdict.IMPROVED
        ]
        assert (min(improved) if improved else None) == expected


# --- reasons --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "cand", "reason"),
    [
        (live(3, 5), live(4, 5), "intervals overlap: [23.1%, 88.2%] vs [37.6%, 96.4%]"),
        (live(0, 5), live(5, 5), "candidate interval [56.6%, 100.0%] lies above baseline [0.0%, 43.4%]"),
        (live(5, 5), live(0, 5), "candidate interval [0.0%, 43.4%] lies below baseline [56.6%, 100.0%]"),
        (live(3, 5), live(4, 5, errored=2), "2 errored runs on the candidate"),
        (live(3, 5, errored=1), live(4, 5), "1 errored run on the baseline"),
        (
            live(3, 5, errored=2),
            live(4, 5, errored=1),
            "2 errored runs on the baseline and 1 on the candidate",
        ),
        (live(3, 5), live(4, 5, mode="replay"), "modes differ: live vs replay"),
        (live(3, 4), live(4, 5), "4 judged runs on the baseline (fewer than 5)"),
        (live(3, 5), live(1, 1), "1 judged run on the candidate (fewer than 5)"),
        (live(0, 4), live(0, 3), "4 judged runs on the baseline and 3 on the candidate (fewer than 5)"),
    ],
)
def test_reasons_are_short_sentences(base: Side, cand: Side, reason: str) -> None:
    """Each verdict carries the one-sentence reason a report prints, intervals baseline first."""
    assert task_verdict(base, cand).reason == reason


def test_both_not_comparable_reasons_are_given() -> None:
    """A mode mismatch and errored runs are both named."""
    verdict = task_verdict(live(3, 5, errored=1), live(4, 5, mode="replay"))
    assert verdict == TaskVerdict(
        verdict=Verdict.NOT_COMPARABLE, reason="modes differ: live vs replay; 1 errored run on the baseline"
    )


def test_verdict_encodes_as_its_wire_string() -> None:
    """Verdicts are plain strings on the wire (low_power, not_comparable, ...)."""
    encoded = msgspec.json.encode(task_verdict(live(0, 4), live(5, 5)))
    assert msgspec.json.decode(encoded) == {
        "verdict": "low_power",
        "reason": "4 judged runs on the baseline (fewer than 5)",
    }
    assert [v.value for v in Verdict] == [
        "improved",
        "regressed",
        "inconclusive",
        "low_power",
        "not_comparable",
    ]


def test_format_interval() -> None:
    """Bounds print as percentages with one decimal."""
    assert format_interval(Interval(low=0.0, high=1.0)) == "[0.0%, 100.0%]"
    assert format_interval(Interval(low=0.2307242812760129, high=0.8823792257673522)) == "[23.1%, 88.2%]"


# --- properties (statistics notes §6, Verdict 1-7) ------------------------------------------------------


@given(sides(), sides())
def test_antisymmetry(a: Side, b: Side) -> None:
    """Swapping sides swaps improved and regressed and leaves every other verdict unchanged."""
    assert verdict_of(b, a) is SWAPPED[verdict_of(a, b)]


@given(comparable_sides(), comparable_sides())
def test_antisymmetry_of_comparable_sides(a: Side, b: Side) -> None:
    """Same property where only the interval test decides."""
    assert verdict_of(b, a) is SWAPPED[verdict_of(a, b)]


@given(sides())
def test_reflexive(a: Side) -> None:
    """A side compared with itself is never improved or regressed."""
    assert verdict_of(a, a) not in DIRECTIONAL


@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=3, max_size=3))
def test_touching_intervals_are_inconclusive_both_ways(points: list[float]) -> None:
    """Intervals sharing one end point overlap: inconclusive in both directions (never happens with real
    counts, so it is injected here)."""
    low, mid, high = sorted(points)
    below, above = Interval(low=low, high=mid), Interval(low=mid, high=high)
    assert compare_intervals(below, above) is Verdict.INCONCLUSIVE
    assert compare_intervals(above, below) is Verdict.INCONCLUSIVE


@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=4, max_size=4))
def test_compare_intervals_is_disjointness(points: list[float]) -> None:
    """compare_intervals is improved iff candidate.low > baseline.high, regressed iff candidate.high <
    baseline.low, inconclusive otherwise; swapping arguments swaps the direction."""
    a_low, a_high, b_low, b_high = points
    base = Interval(low=min(a_low, a_high), high=max(a_low, a_high))
    cand = Interval(low=min(b_low, b_high), high=max(b_low, b_high))
    verdict = compare_intervals(base, cand)
    assert (verdict is Verdict.IMPROVED) == (cand.low > base.high)
    assert (verdict is Verdict.REGRESSED) == (cand.high < base.low)
    assert compare_intervals(cand, base) is SWAPPED[verdict]


@given(comparable_sides(), comparable_sides())
def test_interval_test_reads_the_wilson_intervals(a: Side, b: Side) -> None:
    """For clean sides with >= 5 judged runs, the verdict is compare_intervals on the two Wilson intervals."""
    base, cand = wilson_interval(a.passes, a.judged), wilson_interval(b.passes, b.judged)
    assert base is not None
    assert cand is not None
    assert verdict_of(a, b) is compare_intervals(base, cand)


@given(
    comparable_sides(min_judged=0, max_judged=MIN_JUDGED - 1), comparable_sides(min_judged=0), st.booleans()
)
def test_low_power_dominates(short: Side, other: Side, short_is_baseline: bool) -> None:
    """Fewer than 5 judged runs on either side gives low power, whatever the counts (even 0/4 vs 4/4)."""
    pair = (short, other) if short_is_baseline else (other, short)
    assert verdict_of(*pair) is Verdict.LOW_POWER


def test_exactly_five_judged_runs_is_enough() -> None:
    """5 judged runs is not low power: 0/5 → 5/5 is improved, 0/4 → 4/4 and 0/5 → 4/4 are low power."""
    assert verdict_of(live(0, MIN_JUDGED), live(5, 5)) is Verdict.IMPROVED
    assert verdict_of(live(0, 4), live(4, 4)) is Verdict.LOW_POWER
    assert verdict_of(live(0, 5), live(4, 4)) is Verdict.LOW_POWER


@given(sides(max_errored=0), sides(max_errored=0), st.integers(1, 5), st.booleans())
def test_errored_runs_make_it_not_comparable(a: Side, b: Side, errored: int, on_baseline: bool) -> None:
    """Any errored run on either side gives not comparable, whatever the counts, even below 5 judged."""
    a = msgspec.structs.replace(a, mode="live")
    b = msgspec.structs.replace(b, mode="live")
    if on_baseline:
        a = msgspec.structs.replace(a, errored=errored)
    else:
        b = msgspec.structs.replace(b, errored=errored)
    assert verdict_of(a, b) is Verdict.NOT_COMPARABLE


def test_errored_runs_do_not_count_toward_five() -> None:
    """4 judged + 3 errored is not 7 runs: it is not comparable, and without the errors it is low power."""
    assert verdict_of(live(0, 4, errored=3), live(4, 5)) is Verdict.NOT_COMPARABLE
    assert verdict_of(live(0, 4), live(4, 5)) is Verdict.LOW_POWER


@given(sides(max_errored=0), sides(max_errored=0))
def test_mode_mismatch_is_not_comparable(a: Side, b: Side) -> None:
    """Different modes give not comparable, whatever the counts."""
    a = msgspec.structs.replace(a, mode="live")
    b = msgspec.structs.replace(b, mode="replay")
    assert verdict_of(a, b) is Verdict.NOT_COMPARABLE
    assert verdict_of(b, a) is Verdict.NOT_COMPARABLE


@given(comparable_sides(), comparable_sides())
def test_monotone(a: Side, b: Side) -> None:
    """An improvement survives one more candidate pass or one fewer baseline pass (same run counts);
    a regression survives the reverse."""
    verdict = verdict_of(a, b)
    better_cand = msgspec.structs.replace(b, passes=min(b.passes + 1, b.judged))
    worse_base = msgspec.structs.replace(a, passes=max(a.passes - 1, 0))
    worse_cand = msgspec.structs.replace(b, passes=max(b.passes - 1, 0))
    better_base = msgspec.structs.replace(a, passes=min(a.passes + 1, a.judged))
    if verdict is Verdict.IMPROVED:
        assert verdict_of(a, better_cand) is Verdict.IMPROVED
        assert verdict_of(worse_base, b) is Verdict.IMPROVED
    if verdict is Verdict.REGRESSED:
        assert verdict_of(a, worse_cand) is Verdict.REGRESSED
        assert verdict_of(better_base, b) is Verdict.REGRESSED


@pytest.mark.parametrize(
    "fields",
    [
        {"judged": 5, "passes": 6, "errored": 0},
        {"judged": -1, "passes": 0, "errored": 0},
        {"judged": 5, "passes": 1, "errored": -1},
        {"judged": 5, "passes": True, "errored": 0},
        {"judged": 5.0, "passes": 1, "errored": 0},
    ],
)
def test_side_rejects_impossible_counts(fields: dict[str, object]) -> None:
    """passes > judged, negative, bool or float counts cannot make a Side."""
    with pytest.raises(ValueError):
        Side(mode="live", **fields)  # type: ignore[arg-type]


# --- the false-positive figures of the module docstring -------------------------------------------------


def _false_improved(n_base: int, n_cand: int, rate: float) -> float:
    """P(verdict improved) when both sides truly pass at ``rate``: an exact sum over every outcome."""
    from math import comb

    total = 0.0
    for xb in range(n_base + 1):
        pb = comb(n_base, xb) * rate**xb * (1 - rate) ** (n_base - xb)
        for xc in range(n_cand + 1):
            if verdict_of(live(xb, n_base), live(xc, n_cand)) is Verdict.IMPROVED:
                total += pb * comb(n_cand, xc) * rate**xc * (1 - rate) ** (n_cand - xc)
    return total


@pytest.mark.parametrize(
    ("n_base", "n_cand", "rate", "figure"),
    [(21, 21, 0.5, 0.0040), (5, 5, 0.5, 0.0010), (58, 5, 0.07, 0.0116), (200, 5, 0.0115, 0.0340)],
)
def test_the_documented_false_positive_rates(n_base: int, n_cand: int, rate: float, figure: float) -> None:
    """The docstring's figures: 0.40% at 21 vs 21 (the equal-runs worst), 1.16% at 58 vs 5, 3.4% at 200 vs 5."""
    assert round(_false_improved(n_base, n_cand, rate), 4) == figure


# --- the exact rule -------------------------------------------------------------------------------------


@given(st.floats(-1.0, 1.0), st.floats(0.0, 1.0), st.sampled_from(list(Adjustment)))
def test_exact_verdict_follows_the_adjusted_p_and_the_sign(
    diff: float, p: float, adjustment: Adjustment
) -> None:
    """Directional iff p < 0.05 and the difference is not 0; swapping the sign swaps improved and regressed."""
    verdict = exact_verdict(diff, p, adjustment).verdict
    assert (verdict in DIRECTIONAL) is (p < ALPHA and diff != 0)
    assert exact_verdict(-diff, p, adjustment).verdict is SWAPPED[verdict]
    assert ("Holm" if adjustment is Adjustment.HOLM else "BH") in exact_verdict(diff, p, adjustment).reason


def test_rule_names() -> None:
    """The rule names comparison.md and compare --json record."""
    assert rule_description(VerdictRule.DISJOINT) == "disjoint 95% Wilson intervals (the default)"
    assert rule_description(VerdictRule.EXACT) == "Holm-adjusted Boschloo exact test, family-wise 5%"
    assert "false discovery rate 5%" in rule_description(VerdictRule.EXACT, Adjustment.BH)


@given(sides(), sides())
def test_the_gate_is_the_first_two_checks_of_the_verdict(baseline: Side, candidate: Side) -> None:
    """task_gate gives exactly the not comparable / low power verdicts of task_verdict, else None."""
    gated = task_gate(baseline, candidate)
    full = task_verdict(baseline, candidate)
    if gated is None:
        assert full.verdict not in (Verdict.NOT_COMPARABLE, Verdict.LOW_POWER)
    else:
        assert gated == full
