"""Properties of alisio.core.lab.outputs.run_record: the usage line sums what was reported, and says over how much."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.harness.events import ProviderResponded, RunEnded
from alisio.core.harness.protocol import Usage
from alisio.core.lab.outputs.run_record import usage_line

reported = st.none() | st.tuples(st.integers(0, 10_000), st.integers(0, 10_000))


@given(st.lists(reported, min_size=1, max_size=6))
def test_the_usage_line_sums_the_calls_that_reported_usage(calls: list[tuple[int, int] | None]) -> None:
    """Tokens are the sums over the calls that reported them, with "k of n calls" when some did not, and
    "tokens not reported" when none did: never a guess, never 0 for missing."""
    events = [
        ProviderResponded(
            seq=i,
            elapsed_ms=100 * i,
            call=i,
            purpose="main",
            finish_reason="stop",
            text_chars=0,
            tool_calls=0,
            duration_ms=1,
            usage=None if c is None else Usage(input_tokens=c[0], output_tokens=c[1]),
        )
        for i, c in enumerate(calls)
    ]
    events.append(RunEnded(seq=99, elapsed_ms=2500, outcome="completed", turns=len(calls)))
    line = usage_line(events)
    known = [c for c in calls if c is not None]
    turns = "1 turn" if len(calls) == 1 else f"{len(calls)} turns"
    if not known:
        assert line == f"usage: tokens not reported; {turns}, 0 tool calls, 2.5 s"
        return
    over = (
        ("1 call" if len(calls) == 1 else f"{len(calls)} calls")
        if len(known) == len(calls)
        else f"{len(known)} of {len(calls)} calls"
    )
    inp, out = sum(c[0] for c in known), sum(c[1] for c in known)
    assert line == f"usage: {inp:,} in, {out:,} out tokens over {over}; {turns}, 0 tool calls, 2.5 s"
