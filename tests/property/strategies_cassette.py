"""Hypothesis strategies for cassettes (alisio.core.replay.cassette): stream events, recorded calls, whole cassettes."""

from __future__ import annotations

from hypothesis import strategies as st

from alisio.core.harness.protocol import (
    FinishEvent,
    ProviderRequest,
    ReasoningDelta,
    StreamErrorEvent,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageEvent,
)
from alisio.core.replay.cassette import Cassette, CassetteHeader, RecordedCall
from alisio.core.replay.fingerprint import fingerprint
from tests.property.strategies_providers import call_ids, names, requests, small_text

token_counts = st.none() | st.integers(0, 10**6)

events: st.SearchStrategy[StreamEvent] = st.one_of(
    st.builds(TextDelta, text=small_text),
    st.builds(ReasoningDelta, text=small_text),
    st.builds(
        ToolCallDelta,
        index=st.integers(0, 3),
        id=st.none() | call_ids,
        name=st.none() | names,
        arguments=small_text,
    ),
    st.builds(FinishEvent, reason=st.sampled_from(["stop", "tool_calls", "length"])),
    st.builds(
        UsageEvent,
        usage=st.builds(
            Usage, input_tokens=token_counts, output_tokens=token_counts, cached_input_tokens=token_counts
        ),
    ),
    st.builds(StreamErrorEvent, message=small_text, code=st.none() | small_text),
)

headers = st.builds(
    CassetteHeader,
    format=st.just("cassette/v1"),
    suite_id=st.sampled_from(["tool-sequences", "smoke-coding"]),
    suite_version=st.sampled_from(["1.0.0", "1.2.0"]),
    task_id=st.sampled_from(["fix-add", "move-file"]),
    config_hash=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    harness_version=st.sampled_from(["0.1.0", "0.2.0"]),
    model=st.sampled_from(["scripted", "gpt-x"]),
    provider=st.sampled_from(["scripted", "openai"]),
)


def recorded_call(index: int, request: ProviderRequest, answer: tuple[StreamEvent, ...]) -> RecordedCall:
    """The call a recording of ``request`` answered by ``answer`` stores."""
    return RecordedCall(
        call=index, purpose=request.purpose, fingerprint=fingerprint(request), request=request, events=answer
    )


@st.composite
def cassettes(draw: st.DrawFn, min_calls: int = 0) -> Cassette:
    """A cassette whose calls are consistent: fingerprints of their requests, numbered from 0."""
    drawn = draw(
        st.lists(st.tuples(requests, st.lists(events, max_size=4).map(tuple)), min_size=min_calls, max_size=4)
    )
    calls = tuple(recorded_call(i, request, answer) for i, (request, answer) in enumerate(drawn))
    return Cassette(header=draw(headers), calls=calls)
