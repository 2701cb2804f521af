"""A provider call's tokens read the same in ``eval show`` and report.html, and a figure the provider left out
is ``?``, never ``None`` or 0 (``alisio.core.lab.outputs.formats.format_usage``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.harness.events import ProviderResponded
from alisio.core.harness.protocol import Usage
from alisio.core.lab.outputs.formats import format_usage
from alisio.core.lab.outputs.html_transcript import transcript_view
from alisio.core.lab.outputs.show import render_run
from alisio.core.lab.runs.records import RunRecord
from tests.property.strategies_report import run_records

counts = st.none() | st.integers(0, 10**7)
usages = st.none() | st.builds(Usage, input_tokens=counts, output_tokens=counts)


def _response(usage: Usage | None) -> ProviderResponded:
    return ProviderResponded(
        seq=0,
        elapsed_ms=0,
        call=0,
        purpose="main",
        finish_reason="stop",
        usage=usage,
        text_chars=2,
        tool_calls=0,
        duration_ms=1200,
        text="hi",
    )


def test_the_usage_text() -> None:
    assert format_usage(Usage(input_tokens=1234, output_tokens=56)) == "1,234 in, 56 out"
    assert format_usage(Usage(input_tokens=1234)) == "1,234 in, ? out"
    assert format_usage(Usage(total_tokens=9)) == "usage not reported"
    assert format_usage(None) == "usage not reported"


@given(usages, run_records(lean=True))
def test_show_and_the_page_write_a_response_s_tokens_alike(usage: Usage | None, record: RunRecord) -> None:
    text = format_usage(usage)
    assert "None" not in text
    shown = render_run(record, [_response(usage)])
    assert f"assistant (stop, {text}, 1.2 s):" in shown
    (entry,) = transcript_view([_response(usage)], 10_000).entries
    assert text in entry.title
