"""Properties of the manual's pages as ``alisio help`` cuts them (``alisio.core.manual``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.manual import docs_reference, headings, section, slug

WORDS = st.lists(
    st.sampled_from(["Reports", "alisio", "eval", "run:", "The", "`--resume`", "and"]), min_size=1, max_size=4
)


@given(st.lists(st.tuples(st.integers(1, 4), WORDS.map(" ".join)), min_size=1, max_size=8), st.data())
def test_a_section_runs_from_its_heading_to_the_next_of_its_level_or_higher(
    outline: list[tuple[int, str]], data: st.DataObject
) -> None:
    """The first heading with the anchor starts the section; it ends before the next heading whose level is
    the same or higher; the section is a part of the page."""
    lines: list[str] = []
    for level, title in outline:
        lines += ["#" * level + " " + title, "", f"text under {title}", ""]
    page = "\n".join(lines) + "\n"
    index = data.draw(st.integers(0, len(outline) - 1))
    level, title = outline[index]
    first = next(i for i, (_, t) in enumerate(outline) if slug(t) == slug(title))
    cut = section(page, slug(title))
    assert cut is not None and cut.startswith("#" * outline[first][0] + " " + outline[first][1] + "\n")
    assert cut in page
    following = outline[first + 1 :]
    stop = next((i for i, (lv, _) in enumerate(following) if lv <= outline[first][0]), None)
    inside = following if stop is None else following[:stop]
    assert cut.count("\n#") == len(inside)


def test_a_heading_inside_a_fence_is_not_one_and_references_map_to_topics() -> None:
    """A ``# comment`` in a code block is no heading; docs paths become topics."""
    page = "# Top\n\n```sh\n# not a heading\n```\n\n## Next: `alisio eval run`\n"
    assert [(level, anchor) for _, level, anchor in headings(page)] == [
        (1, "top"),
        (2, "next-alisio-eval-run"),
    ]
    assert section(page, "not-a-heading") is None
    assert docs_reference("docs/lab.md#reports") == "lab#reports"
    assert docs_reference("docs/lab.md") == "lab" and docs_reference("README.md") == "readme"
