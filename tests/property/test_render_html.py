"""Properties of report.html and comparison.html (alisio.core.lab.outputs.render_html, render_html_compare,
html_transcript, html_page): untrusted text shown as text, links that lead somewhere, pages of bounded size."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from alisio.core.harness.events import Event, ProviderRequested, RunEnded, RunStarted, ToolResulted
from alisio.core.lab.comparisons.compare import compare_reports
from alisio.core.lab.comparisons.variants import VariantComparison, VariantInfo, VariantsComparison
from alisio.core.lab.outputs.html_filter import FILTER_SCRIPT
from alisio.core.lab.outputs.html_page import anchor
from alisio.core.lab.outputs.html_transcript import (
    FIELD_CHARS,
    MIN_RUN_CHARS,
    PAGE_CHARS,
    RUN_CHARS,
    TranscriptView,
    transcript_budgets,
    transcript_html,
    transcript_view,
    transcript_view_of,
)
from alisio.core.lab.outputs.render_html import render_report_html
from alisio.core.lab.outputs.render_html_compare import render_comparison_html, render_variants_html
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.lab.runs.transcript import decode_transcript, encode_transcript
from tests.property.strategies_html import KNOWN, SECRET, arm_records, transcripts
from tests.property.strategies_report import conditions, task_runs

_ACTIVE = re.compile(r"<\s*(script|img|iframe|object|embed|link(?![^>]*rel=\"icon\" href=\"data:,\"))", re.I)


class _Page(HTMLParser):
    """The tags, ids and fragment links of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name == "id" and value is not None:
                self.ids.add(value)
            if name == "href" and value is not None:
                self.links.append(value)
            if name.startswith("on"):
                self.handlers.append(name)


def _parse(page: str) -> _Page:
    parsed = _Page()
    parsed.feed(page)
    return parsed


def _views(
    records: tuple[RunRecord, ...], events: tuple[Event, ...]
) -> dict[tuple[str, int], TranscriptView]:
    """The transcripts as the page gets them: written by the run's driver (redacted), read back, cut."""
    events = decode_transcript(encode_transcript(events, KNOWN))
    budgets = transcript_budgets(records)
    return {
        (r.task_id, r.repetition): transcript_view(events, budgets[r.task_id, r.repetition]) for r in records
    }


@given(arm_records(), transcripts())
@settings(max_examples=60)
def test_report_html_shows_untrusted_text_as_text(
    records: tuple[RunRecord, ...], events: tuple[Event, ...]
) -> None:
    """Whatever a run wrote, the page has no script, no element that loads anything, no event handler, and
    no known secret; its only tags are the template's."""
    page = render_report_html(build_report(records, conditions()), records, _views(records, events), KNOWN)
    ours = f"<script>{FILTER_SCRIPT}</script>"
    assert page.count(ours) == 1  # the filter, the one script the CSP allows (by its hash)
    page = page.replace(ours, "")
    parsed = _parse(page)
    assert "script" not in parsed.tags and not _ACTIVE.search(page)
    assert parsed.handlers == []
    assert SECRET not in page
    assert set(parsed.tags) <= {
        "html", "head", "meta", "link", "title", "style", "body", "header", "h1", "h2", "h3", "p", "section",
        "dl", "dt", "dd", "code", "table", "thead", "tbody", "tr", "th", "td", "svg", "line", "circle", "g",
        "text", "a", "span", "ul", "li", "div", "b", "pre", "details", "summary", "ol", "footer",
        "form", "label", "select", "option",
    }  # fmt: skip


@given(arm_records(), transcripts())
@settings(max_examples=60)
def test_every_grid_cell_links_to_its_runs_transcript(
    records: tuple[RunRecord, ...], events: tuple[Event, ...]
) -> None:
    """Each run has a cell linking to an element of the page inside that run's collapsed <details>; every
    fragment link of the page leads to an element that exists."""
    page = render_report_html(build_report(records, conditions()), records, _views(records, events), KNOWN)
    parsed = _parse(page)
    fragments = [link[1:] for link in parsed.links if link.startswith("#")]
    assert all(fragment in parsed.ids for fragment in fragments)
    for r in records:
        target = anchor(r.task_id, r.repetition)
        assert f'href="#{target}"' in page
        details = page.rindex("<details", 0, page.index(f'id="{target}"'))
        assert "open" not in page[details : page.index(">", details)]
    assert page.count('<details class="run') == len(records)
    assert page.count('<svg class="forest"') == len({r.task_id for r in records})


def test_anchors_are_distinct_and_url_safe() -> None:
    """Different (task, repetition) pairs get different anchors made of URL-safe characters."""
    pairs = [("a-1", 2), ("a", 12), ("a-12", 0), ("a b", 0), ("a~20~b", 0), ("é", 1), ("x/y", 3)]
    anchors = [anchor(task, rep) for task, rep in pairs]
    assert len(set(anchors)) == len(anchors)
    assert all(re.fullmatch(r"[A-Za-z0-9_.~-]+", a) for a in anchors)


@given(st.lists(st.sampled_from(list(RunStatus)), max_size=3000))
def test_the_transcript_shares_never_exceed_the_page(statuses: list[RunStatus]) -> None:
    """The runs' shares add up to at most PAGE_CHARS; each is 0 or between MIN_RUN_CHARS and RUN_CHARS, and a
    run that did not pass never gets less than a pass."""
    records = [
        msgspec.structs.replace(task_runs("t", 1)[0], repetition=i, status=status)
        for i, status in enumerate(statuses)
    ]
    shares = transcript_budgets(records)
    assert sum(shares.values()) <= PAGE_CHARS
    assert all(share == 0 or MIN_RUN_CHARS <= share <= RUN_CHARS for share in shares.values())
    passing = [shares["t", i] for i, s in enumerate(statuses) if s is RunStatus.PASS]
    other = [shares["t", i] for i, s in enumerate(statuses) if s is not RunStatus.PASS]
    if passing and other:
        assert min(other) >= max(passing)


@given(transcripts(big=True), st.integers(0, 120_000))
@settings(max_examples=25)
def test_a_transcript_keeps_to_its_share_and_states_every_cut(events: tuple[Event, ...], budget: int) -> None:
    """Titles and texts shown add up to at most the run's share; a text longer than FIELD_CHARS is cut with
    the count of characters left out; events left out at the end are counted."""
    view = transcript_view(events, budget)
    if budget == 0:
        assert view.problem is not None and view.entries == ()
        return
    assert sum(len(e.title) + len(e.body) for e in view.entries) <= budget
    assert all(len(e.body) <= FIELD_CHARS for e in view.entries)
    shown = [i for i, e in enumerate(events) if not isinstance(e, ProviderRequested)]
    if view.omitted:  # counted from the first event that did not fit
        assert view.omitted == len(events) - shown[len(view.entries)]
    else:
        assert len(view.entries) == len(shown)
    data = encode_transcript(events, ())  # as stored: redacted (a key-like text is shorter there)
    assert transcript_view_of(data, budget, "runs/t/0.jsonl") == transcript_view(
        decode_transcript(data), budget
    )
    html = transcript_html(view, "alisio eval show r --task t --rep 0")
    assert html.count("more characters not shown here") == sum(e.cut > 0 for e in view.entries)
    assert ("more event" in html) == (view.omitted > 0)


def test_a_page_of_a_thousand_runs_with_full_transcripts_stays_small() -> None:
    """100 tasks x k = 10, every tool result at the 64 KiB cap: the page holds about PAGE_CHARS of text."""
    records = [r for t in range(100) for r in task_runs(f"task-{t:03d}", 7, 3)]
    big = "y" * 65_536
    events: tuple[Event, ...] = (
        RunStarted(
            seq=0,
            elapsed_ms=0,
            prompt="p",
            provider="s",
            model="m",
            policy_mode="auto",
            config_hash="c",
            harness_version="0",
        ),
        *(
            ToolResulted(
                seq=i, elapsed_ms=i, call_id=f"c{i}", name="bash", ok=True, output_excerpt=big, duration_ms=1
            )
            for i in range(1, 40)
        ),
        RunEnded(seq=40, elapsed_ms=40, outcome="completed", turns=20),
    )
    budgets = transcript_budgets(records)
    views = {key: transcript_view(events, share) for key, share in budgets.items()}
    page = render_report_html(build_report(records, conditions(k=10)), records, views)
    assert len(page.encode()) < PAGE_CHARS + 2_500_000  # the text, plus markup for 1,000 runs and 100 tasks


@given(arm_records(), arm_records())
@settings(max_examples=40)
def test_comparison_and_variants_pages_show_untrusted_text_as_text(
    a: tuple[RunRecord, ...], b: tuple[RunRecord, ...]
) -> None:
    """comparison.html has a two-bar plot per task, every verdict, the limits; no script; the variants page
    links each grid cell into its variant's report.html."""
    base, cand = build_report(a, conditions()), build_report(b, conditions(harness_version="0.2.0"))
    comparison = compare_reports(base, cand).unwrap()
    page = render_comparison_html(comparison)
    parsed = _parse(page)
    assert "script" not in parsed.tags and parsed.handlers == []
    assert page.count('<svg class="forest"') == len(comparison.tasks)
    assert all(limit.replace('"', "&quot;") in page or limit in page for limit in comparison.limits)
    variants = VariantsComparison(
        suite_id="demo",
        baseline="baseline",
        variants=(
            VariantInfo(id="baseline", config_hash="c1", overrides=()),
            VariantInfo(id="early", config_hash="c2", overrides=()),
        ),
        comparisons=(VariantComparison(baseline="baseline", candidate="early", comparison=comparison),),
    )
    a_records = tuple(msgspec.structs.replace(r, variant="baseline") for r in a)
    b_records = tuple(msgspec.structs.replace(r, variant="early") for r in b)
    tasks = sorted({r.task_id for r in a + b})
    page = render_variants_html(variants, [("baseline", a_records), ("early", b_records)], tasks, 5, KNOWN)
    parsed = _parse(page)
    assert "script" not in parsed.tags and SECRET not in page
    for r in a_records + b_records:
        assert f'href="{r.variant}/report.html#{anchor(r.task_id, r.repetition)}"' in page


def test_a_transcript_file_that_is_not_one_says_which_line() -> None:
    """An empty file has no events; a line that is not an event is named by its number; neither raises."""
    assert transcript_view_of(b"\n", 5_000, "runs/a/0.jsonl").problem == (
        "the run recorded no events (it ended before the agent started)"
    )
    good = encode_transcript(
        [
            RunStarted(
                seq=0,
                elapsed_ms=0,
                prompt="p",
                provider="s",
                model="m",
                policy_mode="auto",
                config_hash="c",
                harness_version="0",
            )
        ],
        (),
    )
    problem = transcript_view_of(good + b"{not json\n", 5_000, "runs/a/0.jsonl").problem
    assert problem is not None and problem.startswith("runs/a/0.jsonl line 2 is not an event: ")


def test_a_run_that_ended_in_error_shows_its_message_in_the_transcript() -> None:
    """The run-end entry of a run that ended error holds its message (the provider's, as stored), not nothing."""
    message = "HTTP 401 from http://127.0.0.1:9/v1/chat/completions: Incorrect API key provided: [REDACTED]"
    events = (
        RunEnded(seq=0, elapsed_ms=5, outcome="error", reason="provider_auth", turns=1, message=message),
    )
    *_, end = transcript_view(events, 10_000).entries
    assert (end.kind, end.title, end.body) == (
        "end",
        "run ended: error (provider_auth) after 1 turn · +0.0 s",
        message,
    )
