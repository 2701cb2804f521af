"""Properties of report.html's filter and failure groups: the script the CSP allows is the one on the page,
and every run that did not pass is in exactly one group."""

from __future__ import annotations

import base64
import hashlib
import re

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.lab.outputs.html_filter import FILTER_SCRIPT, failure_groups, run_attributes, script_source
from alisio.core.lab.outputs.render_html import render_report_html
from alisio.core.lab.reports.report import Conditions
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.runs.records import RunRecord, RunStatus
from tests.property.strategies_report import conditions_strategy, run_records


@given(st.lists(run_records(lean=True), max_size=12))
def test_every_run_that_did_not_pass_is_in_one_group(records: list[RunRecord]) -> None:
    """The groups partition the non-passing runs; counts are largest first."""
    groups = failure_groups(records)
    grouped = [id(r) for _, _, runs in groups for r in runs]
    assert sorted(grouped) == sorted(id(r) for r in records if r.status is not RunStatus.PASS)
    sizes = [len(runs) for _, _, runs in groups]
    assert sizes == sorted(sizes, reverse=True)
    assert all(all(r.status is status for r in runs) for status, _, runs in groups)


@given(st.lists(run_records(lean=True), min_size=1, max_size=6), conditions_strategy)
def test_the_page_allows_exactly_its_one_script(records: list[RunRecord], cond: Conditions) -> None:
    """One <script>, whose sha256 is the only script source the page's CSP allows; every run's transcript
    carries the attributes the filter reads."""
    page = render_report_html(build_report(records, cond), records, {})
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert scripts == [FILTER_SCRIPT]
    digest = base64.b64encode(hashlib.sha256(FILTER_SCRIPT.encode()).digest()).decode()
    assert script_source(FILTER_SCRIPT) == f"'sha256-{digest}'"
    (csp,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert csp.endswith(f"; script-src 'sha256-{digest}'") and "unsafe-inline'; img" in csp
    assert all(run_attributes(r) in page for r in records)
