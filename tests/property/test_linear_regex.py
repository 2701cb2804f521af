"""Properties of alisio.core.share.linear_regex: Python's replacement semantics on ordinary patterns, never an
exception on any text, and patterns that make ``re`` backtrack for minutes finish here."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.share.linear_regex import LinearPattern, compile_linear

ATOMS = st.sampled_from(["a", "b", "ab", "[a-c]", "[^b]", r"\d", r"\w", "x", "-", r"\.", ".", "(?:ab|a)"])


@st.composite
def patterns(draw: st.DrawFn, depth: int = 0) -> str:
    """Greedy patterns both engines read alike: atoms, groups, alternation, ? * + and {m,n}."""
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        # One level only: deeper nesting makes the oracle itself (re) backtrack for minutes.
        nested = depth < 1 and draw(st.booleans())
        atom = f"(?:{draw(patterns(depth + 1))})" if nested else draw(ATOMS)
        atom = f"(?:{atom})" if len(atom) > 1 and not atom.startswith(("[", "\\", "(")) else atom
        parts.append(atom + draw(st.sampled_from(["", "", "?", "*", "+", "{1,3}", "{2}"])))
    body = "".join(parts)
    return f"(?:{body}|{draw(ATOMS)})" if draw(st.booleans()) else body


texts = st.text(alphabet="abcx-.19 \n", max_size=16)


def compiled(pattern: str) -> LinearPattern:
    match compile_linear(pattern):
        case Success(LinearPattern() as value):
            return value
    raise AssertionError(f"{pattern!r} does not compile")


@given(patterns(), texts, st.sampled_from(["<R>", "", r"\1 $0"]))
def test_replacement_agrees_with_python_re(pattern: str, text: str, replacement: str) -> None:
    """For patterns without empty matches, replace_all is re.sub with a literal replacement."""
    assume(all(m.end() > m.start() for m in re.finditer(pattern, text)))
    expected = re.sub(pattern, lambda _: replacement, text)
    assert compiled(pattern).replace_all(text, replacement) == expected


@given(st.sampled_from([r"\b", "x*", "(?:ab)*", "^", r"\d*"]), texts)
def test_empty_matches_are_replaced_once_per_position(pattern: str, text: str) -> None:
    """Patterns that can match empty behave as re.sub: each position once, never twice (google-re2's own
    iteration repeats an empty match after a skipped one)."""
    assert compiled(pattern).replace_all(text, "|") == re.sub(pattern, "|", text)


@given(st.sampled_from([r"\d+", ".", "[^a]", "a", "é+", r"\w+"]), st.text(max_size=60))
@example(".", "a\udcffb")
@example("[^a]", "\udcff\ud800")
def test_any_text_never_raises_and_unmatched_text_is_kept(pattern: str, text: str) -> None:
    """Any str, lone surrogates included (names that are not UTF-8 produce them), gives a str back; with a
    replacement the pattern cannot match, the text comes back unchanged."""
    result = compiled(pattern).replace_all(text, "<R>")
    assert isinstance(result, str)
    assert compiled("never-in-the-text-zq").replace_all(text, "<R>") == text


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        (r"^(a+)+$", "a" * 20_000 + "!", "a" * 20_000 + "!"),
        (r"(a|aa)+$", "a" * 20_000 + "!", "a" * 20_000 + "!"),
        (r"(x+x+)+y", "x" * 20_000, "x" * 20_000),
        (r"\d+x", "1" * 100_000, "1" * 100_000),
        (r"(\w+\s?)+:", "word " * 10_000 + "!", "word " * 10_000 + "!"),
    ],
    ids=["nested-plus", "overlapping-alternation", "adjacent-plus", "quadratic-in-re", "typical-redos"],
)
def test_catastrophic_patterns_finish(pattern: str, text: str, expected: str) -> None:
    """Patterns that make Python's re backtrack for minutes or years on these texts (bench/bench_regex.py)
    complete here with the right answer; under re this test would not finish."""
    assert compiled(pattern).replace_all(text, "<R>") == expected
    assert compiled(pattern).replace_all(text + "\n" + text[:50], "<R>") is not None


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(a)\1", "a backreference is not supported"),
        (r"(?P<x>a)(?P=x)", "a backreference is not supported"),
        (r"a(?=b)", "lookahead is not supported"),
        (r"a(?!b)", "lookahead is not supported"),
        (r"(?<=a)b", "lookbehind is not supported"),
        (r"(?>a+)b", "an atomic group is not supported"),
        (r"a++b", "a possessive quantifier is not supported"),
        (r"a\Z", r"\Z is not supported (write \z for the end of the text)"),
        (r"(?:a{1000}){1000}", "too large to match in bounded time and memory"),
        ("(a", "missing ): (a"),
    ],
)
def test_what_cannot_be_bounded_is_refused_with_a_reason(pattern: str, reason: str) -> None:
    """Constructs that need backtracking, or programs too large, are a Failure saying why."""
    result = compile_linear(pattern)
    assert isinstance(result, Failure)
    assert result.failure().startswith(reason)


def test_matches_empty() -> None:
    """matches_empty is about the whole pattern: x* and ^ can; \\b and a+ cannot."""
    assert [compiled(p).matches_empty() for p in ("x*", "^", r"\b", "a+")] == [True, True, False, False]


LITERAL_TEXTS = st.text(alphabet="ab/.-_ *+?()[]{}|^$#&~\\\n\t\r\v\fé€😀\u2028", max_size=12)


@given(LITERAL_TEXTS.filter(bool), st.text(alphabet="ab/.-_ *()\\\né\udcff", max_size=40))
@example("/tmp/ws", "cat /tmp/ws/a /tmp/ws/b /tmp/wsx")
@example("aa", "aaaaa")
def test_an_escaped_literal_replaces_as_the_engine_does(literal: str, text: str) -> None:
    """A pattern written by re.escape (a workspace path) takes a str.replace shortcut: the same text as RE2's
    leftmost, non-overlapping replacement, including overlapping candidates and text with lone surrogates."""
    escaped = re.escape(literal)
    pattern = compiled(escaped)
    assert pattern._literal == literal  # the shortcut is taken (white box: the result alone cannot tell)
    assert pattern.replace_all(text, "<W>") == re.sub(escaped, lambda _: "<W>", text)


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("a.b", "axb a.b", "- -"),
        (r"a\.b", "axb a.b", "axb -"),
        (r"\x41", "A", "-"),
        ("a|b", "ab", "--"),
        ("ab+", "abbb", "-"),
        ("[a]", "a[a]", "-[-]"),
        (r"\d", "1\\d", "-\\d"),
    ],
)
def test_a_pattern_with_any_operator_is_not_taken_for_a_literal(
    pattern: str, text: str, expected: str
) -> None:
    """Only exactly re.escape's output takes the shortcut; an operator or a class escape still matches as one."""
    assert compiled(pattern).replace_all(text, "-") == expected
