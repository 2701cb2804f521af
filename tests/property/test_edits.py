"""Properties of alisio.core.harness.edits: edit_file's refusals and the one replacement it makes."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.harness.edits import Edit, EditRefusal, apply_edit, check_edit_request, check_fresh
from tests.property.strategies_files import digests, file_text, needles, replacements


@given(file_text, needles, replacements)
@example("x = 1\nx = 1\n", "x = 1", "x = 2")
@example("abc", "d", "e")
def test_an_edit_is_made_exactly_when_old_string_occurs_once(text: str, old: str, new: str) -> None:
    """Once: the one occurrence is replaced and nothing else changes; zero or several times: refused with the count."""
    count = text.count(old)
    match apply_edit("f.py", text, old, new):
        case Success(Edit(text=edited, line=line)):
            assert count == 1
            at = text.index(old)
            assert edited == text[:at] + new + text[at + len(old) :]
            assert line == text[:at].count("\n") + 1
        case Failure(EditRefusal(message=message)):
            assert count != 1
            if count == 0:
                assert message.startswith("old_string was not found in f.py.")
            else:
                assert message.startswith(f"old_string appears {count} times in f.py;")


@given(st.text(max_size=5), st.text(max_size=5))
def test_an_edit_request_needs_a_non_empty_old_string_that_differs(old: str, new: str) -> None:
    """Empty old_string or new_string == old_string is refused before the file is even read."""
    result = check_edit_request(old, new)
    assert isinstance(result, Success) == (bool(old) and old != new)
    if not old:
        assert "old_string is empty" in str(result.failure())


@given(digests, st.none() | digests, st.none() | digests)
def test_freshness_follows_the_passed_hash_or_else_the_last_read(
    current: str, passed: str | None, last_seen: str | None
) -> None:
    """With a sha256 argument only it counts; without one the file must have been read and be unchanged."""
    result = check_fresh("a.txt", current, passed, last_seen)
    allowed = passed == current if passed is not None else last_seen == current
    assert isinstance(result, Success) == allowed
    if not allowed:
        message = str(result.failure())
        assert message.startswith("refused: a.txt ")
        if passed is not None:
            assert f"its sha256 is now {current}" in message
        elif last_seen is None:
            assert "has not been read in this run" in message


@given(digests)
def test_a_passed_hash_is_compared_case_and_space_insensitively(current: str) -> None:
    """A sha256 copied with upper-case digits or surrounding spaces still matches."""
    assert isinstance(check_fresh("a.txt", current, f"  {current.upper()} ", None), Success)
