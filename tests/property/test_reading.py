"""Properties of alisio.core.harness.reading: read_file's lines, windows, cuts and headers."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.harness.reading import count_lines, partial_view, read_view, split_lines, window
from tests.property.strategies_files import file_text, line_lists

offsets = st.none() | st.integers(1, 15)
limits = st.none() | st.integers(1, 15)
max_chars = st.integers(1, 40)


@given(file_text)
@example("a\r\nb")
@example("\n\n")
def test_lines_join_back_to_the_text_and_count_as_wc_does(text: str) -> None:
    """split_lines keeps every character (CR included); one line per LF plus a last line without one."""
    lines = split_lines(text)
    assert "".join(lines) == text
    assert count_lines(text) == len(lines)
    assert all(line.endswith("\n") for line in lines[:-1])
    assert all("\n" not in line[:-1] for line in lines)


@given(line_lists, st.data(), max_chars)
def test_a_window_is_whole_lines_within_the_limit_or_one_cut_line(
    lines: list[str], data: st.DataObject, limit: int
) -> None:
    """The body is the first lines of the slice that fit; a first line too long is cut to the limit and says so."""
    start = data.draw(st.integers(0, len(lines) - 1))
    stop = data.draw(st.integers(start + 1, len(lines)))
    shown = window(lines, start, stop, limit)
    whole = "".join(lines[start:stop])
    if len(whole) <= limit:
        assert (shown.body, shown.end, shown.note) == (whole, stop, "")
    elif len(lines[start]) > limit:
        assert shown.body == lines[start][:limit] + "\n"
        assert shown.end == start + 1
        assert shown.note == f"[line {start + 1} cut at {limit} characters]\n"
    else:
        assert shown.body == "".join(lines[start : shown.end])
        assert len(shown.body) <= limit < len(shown.body) + len(lines[shown.end])
        assert (
            shown.note
            == f"[cut at {limit} characters: call read_file with offset={shown.end + 1} to read on]\n"
        )


@given(file_text, offsets, limits, max_chars)
def test_read_view_shows_the_asked_lines_under_a_header_with_the_hash(
    text: str, offset: int | None, limit: int | None, chars: int
) -> None:
    """The header names path, hash and range; the body is the asked lines (cut to whole lines); past the end fails."""
    result = read_view("d/f.txt", "abc123", text, offset, limit, chars)
    total = count_lines(text)
    start = (offset or 1) - 1
    if text and start >= total:
        assert isinstance(result, Failure)
        assert (
            str(result.failure()) == f"offset {start + 1} is past the end of d/f.txt, which has {total} lines"
        )
        return
    view = result.unwrap()
    if not text:
        assert view == "path: d/f.txt\nsha256: abc123\nlines: none (empty file)\n---\n"
        return
    stop = total if limit is None else min(total, start + limit)
    shown = window(split_lines(text), start, stop, chars)
    assert (
        view
        == f"path: d/f.txt\nsha256: abc123\nlines: {start + 1}-{shown.end} of {total}\n{shown.note}---\n{shown.body}"
    )


@given(line_lists, st.integers(0, 1000), st.none() | st.integers(1, 2000), max_chars)
def test_a_partial_view_shows_the_same_window_as_a_whole_read(
    lines: list[str], start: int, total: int | None, chars: int
) -> None:
    """A window read on its own shows the same lines and cut as the whole file would, numbered from offset,
    without a sha256; the line count is shown only when known."""
    view = partial_view("big.log", 10**9, 1000, start, lines, total, chars)
    assert isinstance(view, Success)
    text = view.unwrap()
    header, body = text.split("\n---\n", 1)
    assert "sha256: not computed (the file has 1000000000 bytes, more than the 1000" in header
    shown = window(lines, 0, len(lines), chars, first=start + 1)
    assert body == shown.body
    assert f"lines: {start + 1}-{shown.end} " in header
    assert (f" of {total}\n" in header + "\n") == (total is not None)


@given(st.integers(0, 100))
def test_a_partial_view_past_the_end_names_the_line_count(total: int) -> None:
    """No lines read from an offset: refused, naming the file's line count."""
    result = partial_view("big.log", 10**9, 1000, total, [], total, 10)
    assert str(result.failure()) == f"offset {total + 1} is past the end of big.log, which has {total} lines"
