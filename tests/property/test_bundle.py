"""Properties of alisio.core.lab.sources.bundle: a bundle decodes back to what was put in it; anything else is refused."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.lab.reports.report import Report
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.sources.bundle import decode_bundle, is_bundle
from tests.property.strategies_report import record_lists_settings, reports_of_mode, run_records


@record_lists_settings
@given(reports_of_mode(), st.lists(run_records(lean=True), max_size=4), st.text(max_size=20))
def test_a_bundle_decodes_to_its_report_and_runs(
    report: Report, runs: list[RunRecord], markdown: str
) -> None:
    """What ``eval export`` writes (report, runs, markdown) decodes to the same values."""
    data = msgspec.json.encode(
        {
            "schemaVersion": 1,
            "report": msgspec.to_builtins(report),
            "runs": [msgspec.to_builtins(r) for r in runs],
            "markdown": markdown,
        }
    )
    assert is_bundle(data)
    match decode_bundle(data, "b.json"):
        case Success(bundle):
            assert (bundle.report, bundle.runs, bundle.markdown) == (report, tuple(runs), markdown)
            assert bundle.transcript("alpha", 0) is None
        case Failure(error):
            raise AssertionError(error)


@given(
    st.sampled_from(
        [b"{}", b"[]", b"not json", b'{"report": {}}', b'{"schemaVersion": 9, "report": {}, "runs": []}']
    )
)
def test_what_is_no_bundle_is_refused_naming_the_file(data: bytes) -> None:
    """A JSON document without a report and its runs, or of a newer schemaVersion, is a ReportError."""
    result = decode_bundle(data, "b.json")
    assert isinstance(result, Failure)
    assert str(result.failure()).startswith("b.json: ")
