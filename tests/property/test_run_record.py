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


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 10_000)), min_size=1, max_size=6))
def test_calls_cut_short_count_their_input_and_the_line_says_so(calls: list[tuple[bool, int]]) -> None:
    """A call cut short (finish reason cut) with the input it reported before the cut: its input is in the sum,
    no output is invented for it, and the line names how many calls were cut."""
    events = [
        ProviderResponded(
            seq=i,
            elapsed_ms=100 * i,
            call=i,
            purpose="main",
            finish_reason="cut" if cut else "stop",
            text_chars=0,
            tool_calls=0,
            duration_ms=1,
            usage=Usage(input_tokens=tokens) if cut else Usage(input_tokens=tokens, output_tokens=7),
        )
        for i, (cut, tokens) in enumerate(calls)
    ]
    events.append(RunEnded(seq=99, elapsed_ms=1500, outcome="error", turns=len(calls)))
    inp = sum(tokens for _, tokens in calls)
    out = 7 * sum(not cut for cut, _ in calls)
    over = "1 call" if len(calls) == 1 else f"{len(calls)} calls"
    cut = sum(c for c, _ in calls)
    said = f"{inp:,} in, {out:,} out tokens over {over}"
    if cut:
        calls_cut = "1 call cut short: its" if cut == 1 else f"{cut} calls cut short: their"
        said += f" ({calls_cut} input as reported before the cut, no output)"
    turns = "1 turn" if len(calls) == 1 else f"{len(calls)} turns"
    assert usage_line(events) == f"usage: {said}; {turns}, 0 tool calls, 1.5 s"
