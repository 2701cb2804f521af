"""Properties of alisio.core.lab.outputs.view_compare and the comparison pages: any two reports, whatever wrote them,
compare or are refused as incompatible, and every page renders."""

from __future__ import annotations

import msgspec
from hypothesis import given
from returns.result import Failure, Success

from alisio.core.lab.comparisons.compare import compare_reports
from alisio.core.lab.outputs.render_compare import render_comparison_markdown
from alisio.core.lab.outputs.render_html_compare import render_comparison_html
from alisio.core.lab.outputs.step_summary import comparison_summary
from alisio.core.lab.outputs.view_compare import NOT_RECORDED, comparison_view
from alisio.core.lab.reports.report import Report
from tests.property.strategies_report import record_lists_settings, reports_of_mode


@record_lists_settings
@given(reports_of_mode(), reports_of_mode())
def test_any_two_modes_compare_and_render(baseline: Report, candidate: Report) -> None:
    """live, replay, scripted, variants, resumed and interrupted reports compare in any pair: the Markdown,
    HTML, JSON and step summary all render, and each condition shows both sides' values."""
    match compare_reports(baseline, candidate):
        case Success(comparison):
            view = comparison_view(comparison)
            names = [c.name for c in view.conditions]
            assert len(names) == len(set(names))
            endpoint = [c for c in view.conditions if c.name == "Endpoint"]
            for side, conditions in (("baseline", baseline.conditions), ("candidate", candidate.conditions)):
                if conditions.endpoint is not None:
                    assert getattr(endpoint[0], side) == conditions.endpoint
                elif endpoint:
                    assert getattr(endpoint[0], side) == NOT_RECORDED
            assert "| Endpoint |" in render_comparison_markdown(comparison) or not endpoint
            assert render_comparison_html(comparison).startswith("<!DOCTYPE html>")
            msgspec.json.decode(msgspec.json.encode(comparison))
            assert comparison_summary(comparison)
        case Failure(error):
            raise AssertionError(f"same suite refused: {error}")
