"""Properties of alisio.core.lab.runs.workspace_diff: a text patch applies back exactly, finds its place when the
file moved, refuses a file it does not match; the cap; the paths a kept diff may name."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.lab.runs.workspace_diff import (
    FileChange,
    WorkspaceDiff,
    apply_text_patch,
    decode_workspace_diff,
    encode_workspace_diff,
    kept_diff,
    path_problem,
    text_of,
    text_patch,
)

LINES = st.lists(st.sampled_from(["a", "b", "c", "", "  x = 1", "déjà", "tab\there"]), max_size=30)


def _text(lines: list[str], final_newline: bool) -> str:
    return "\n".join(lines) + ("\n" if final_newline and lines else "")


@given(LINES, st.booleans(), LINES, st.booleans())
@example(["a"], False, ["a"], True)
@example([], False, ["x"], False)
def test_a_patch_turns_the_old_text_into_the_new_one(
    old: list[str], old_nl: bool, new: list[str], new_nl: bool
) -> None:
    """apply(old, text_patch(old, new)) == new, final newline or not; equal texts give an empty patch."""
    before, after = _text(old, old_nl), _text(new, new_nl)
    patch = text_patch(before, after)
    assert apply_text_patch(before, patch) == Success(after)
    assert (patch == "") == (before == after)


@given(
    st.lists(st.integers(0, 999).map(lambda n: f"line {n}"), min_size=1, max_size=40, unique=True),
    st.lists(st.sampled_from(["head", "more"]), min_size=1, max_size=5),
    st.sets(st.integers(0, 39)),
)
def test_a_patch_applies_to_the_file_with_lines_added_above(
    lines: list[str], above: list[str], changed: set[int]
) -> None:
    """Lines added at the top of the fixture's file shift the hunks: the patch (its context found lower down)
    still applies, and the result is the new text under the added lines (distinct lines: a context that
    repeats is ambiguous, as it is for ``patch``)."""
    edited = [f"{line} changed" if n in changed else line for n, line in enumerate(lines)]
    old, new = _text(lines, True), _text([*edited, "appended"], True)
    moved = _text(above, True) + old
    assert apply_text_patch(moved, text_patch(old, new)) == Success(_text(above, True) + new)


@given(
    st.lists(st.sampled_from(["a", "b", "c", "", "one", "two", "three"]), max_size=40),
    st.lists(st.sampled_from(["a", "b", "c", "", "one", "two", "four"]), max_size=40),
    st.integers(0, 40),
    st.integers(0, 200),
)
@example(["one", "a", "b", "two", "a", "three"], ["a", "one", "b", "b", "two", "c", "three"], 2, 4)
def test_a_patch_aligned_under_a_small_bound_applies_exactly(
    old: list[str], new: list[str], gap_pairs: int, pairs_max: int
) -> None:
    """Whatever the bounds leave to difflib (split at anchors, parts replaced whole), the patch turns the old
    text into the new one."""
    before, after = _text(old, True), _text(new, True)
    patch = text_patch(before, after, gap_pairs=gap_pairs, pairs_max=pairs_max)
    assert apply_text_patch(before, patch) == Success(after)
    assert (patch == "") == (before == after)


def test_lines_that_repeat_are_aligned_in_bounded_time_and_apply() -> None:
    """A fixture file of 6,000 lines in a repeating pattern, rewritten in another: difflib alone takes more
    than an hour here (a minute at 2,000 lines); bounded, it is instant, and the patch applies exactly."""
    old = "".join("abc"[n % 3] + "\n" for n in range(6000)) + "end\n"
    new = "".join("acb"[n % 3] + "\n" for n in range(6000)) + "END\n"
    assert apply_text_patch(old, text_patch(old, new)) == Success(new)


def test_two_edits_far_apart_in_a_long_file_stay_two_small_hunks() -> None:
    """1,000 distinct lines with lines 10 and 900 changed: too many line pairs between them for difflib at
    once, so the alignment is split at the unchanged lines; the patch is still two hunks of 7 lines."""
    old = "".join(f"line {n}\n" for n in range(1000))
    new = old.replace("line 10\n", "ten\n").replace("line 900\n", "nine hundred\n")
    patch = text_patch(old, new)
    assert patch.count("@@ -") == 2 and len(patch.splitlines()) == 2 + 2 * 8
    assert apply_text_patch(old, patch) == Success(new)


def test_a_hunk_that_does_not_match_is_named() -> None:
    """A file whose lines the hunk changes were rewritten: the patch does not apply, naming hunk 1."""
    patch = text_patch("def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n")
    result = apply_text_patch("def add(x, y):\n    return x - y\n", patch)
    assert isinstance(result, Failure) and result.failure() == "hunk 1 (at line 1) does not match the file"


@given(st.binary(max_size=64))
def test_text_is_utf8_without_nul(data: bytes) -> None:
    """text_of: the decoded text exactly when the bytes are UTF-8 and hold no NUL byte."""
    try:
        decoded: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        decoded = None
    assert text_of(data) == (decoded if b"\x00" not in data else None)


@given(st.integers(0, 3000), st.integers(200, 2000))
def test_a_diff_over_the_cap_is_not_kept_and_says_its_size(size: int, cap: int) -> None:
    """kept_diff: the bytes and kept=True at or under the cap; nothing and the size, over it."""
    diff = WorkspaceDiff(
        changes=(FileChange(path="big.txt", change="added", kind="text", patch="+" + "a" * size),)
    )
    data, kept = kept_diff(diff, cap)
    whole = encode_workspace_diff(diff)
    assert kept.bytes == len(whole) and kept.files == 1
    assert (kept.kept, data) == ((True, whole) if len(whole) <= cap else (False, b""))
    assert kept.kept or f"{len(whole):,} bytes" in kept.reason


@given(st.sampled_from(["../x", "/etc/passwd", "a/../b", "", "a//b", "./a", "a\x00b"]))
def test_a_kept_diff_naming_a_path_outside_the_workspace_is_refused(path: str) -> None:
    """A diff file edited to name ``..``, an absolute path or an empty segment is refused when read back."""
    assert path_problem(path) is not None
    data = encode_workspace_diff(
        WorkspaceDiff(changes=(FileChange(path=path, change="deleted", kind="text"),))
    )
    assert isinstance(decode_workspace_diff(data, "d.json"), Failure)


@given(st.lists(st.sampled_from(["src/a.py", "b.txt", "tests/t.py"]), unique=True))
def test_a_kept_diff_reads_back_equal(paths: list[str]) -> None:
    """encode then decode gives the same diff."""
    diff = WorkspaceDiff(
        changes=tuple(
            FileChange(path=p, change="modified", kind="text", patch="@@ -1 +1 @@\n-a\n+b\n") for p in paths
        )
    )
    assert decode_workspace_diff(encode_workspace_diff(diff), "d.json") == Success(diff)
