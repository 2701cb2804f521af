"""Regular expressions that cannot hang: RE2 (google-re2), for the patterns a suite author or a model writes.

Used by a suite's ``replayNormalize`` and by the harness's ``search`` tool: both run the same way on any
thread and any machine, which a time limit (a signal, main thread only; a clock) could not promise.

Python's ``re`` backtracks: ``(a+)+$`` on forty ``a`` and a ``!`` takes minutes, and even ``\\d+x`` takes
70 seconds on 100 000 digits (``bench/bench_regex.py``). A suite's ``replayNormalize`` patterns run over every
message of a run (tool results are up to 100 000 characters), so one careless pattern used to hang
``eval record`` past the task's ``maxWallMs``. Two ways out were weighed:

- a time limit per normalisation: not possible in the core (no clock, by design), and not deterministic
  (the same cassette would replay on a fast machine and diverge on a slow one);
- a matcher without backtracking: RE2 runs each search in time linear in the text, whatever the pattern,
  and its compiled program is capped (8 MiB), so a huge counted repetition is refused when it compiles.

RE2 it is. What it does not run cannot be bounded, and is refused with a reason: backreferences
(``\\1``, ``(?P=name)``), lookarounds (``(?=``, ``(?!``, ``(?<=``, ``(?<!``), atomic groups and possessive
quantifiers, ``\\Z`` (write ``\\z``), repetitions above 1000. Otherwise the syntax is Python's, with these
differences: ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII-only, and ``$`` (without ``(?m)``) matches only
at the very end, not before a final newline.

Limit that remains: a replacement over a whole text is one linear search per match, so a pattern whose
higher-priority branch keeps scanning past each short match (``a*b|a`` over a long run of ``a``) costs time
quadratic in the text; no such pattern hangs for minutes on a tool result, but keep patterns specific.

Rules: pure (RE2 is computation only); never raises on any ``str`` (text with lone surrogates, as file
names that are not UTF-8 produce, is matched as the bytes Python would give them); replacements are
literal text (no group references or backslash escapes).
"""

from __future__ import annotations

import re
from typing import Any

import re2
from returns.result import Failure, Result, Success

__all__ = ["LinearPattern", "compile_linear"]

_OPTIONS: Any = re2.Options()
_OPTIONS.log_errors = False  # RE2 otherwise writes every refused pattern to stderr through absl logging

_BACKTRACKING = "is not supported (it needs backtracking, which cannot be bounded)"
_UNSUPPORTED: tuple[tuple[str, str], ...] = (
    ("invalid perl operator: (?=", f"lookahead {_BACKTRACKING}"),
    ("invalid perl operator: (?!", f"lookahead {_BACKTRACKING}"),
    ("invalid perl operator: (?<", f"lookbehind {_BACKTRACKING}"),
    ("invalid perl operator: (?>", f"an atomic group {_BACKTRACKING}"),
    ("bad repetition operator: *+", f"a possessive quantifier {_BACKTRACKING}"),
    ("bad repetition operator: ++", f"a possessive quantifier {_BACKTRACKING}"),
    ("bad repetition operator: ?+", f"a possessive quantifier {_BACKTRACKING}"),
    ("invalid escape sequence: \\Z", "\\Z is not supported (write \\z for the end of the text)"),
    ("invalid repetition size", "too large to match in bounded time and memory"),
    ("pattern too large", "too large to match in bounded time and memory"),
)


class LinearPattern:
    """A compiled pattern; matching never backtracks (see the module docstring)."""

    __slots__ = ("_literal", "_regex")

    def __init__(self, regex: Any, literal: str | None = None) -> None:
        self._regex = regex
        self._literal = literal
        """The text the pattern matches when it matches only that text (``re.escape`` of it), else ``None``."""

    def found_in(self, text: str) -> bool:
        """Whether the pattern matches anywhere in ``text`` (time linear in ``text``)."""
        return self._regex.search(text.encode("utf-8", "surrogatepass")) is not None

    def matches_empty(self) -> bool:
        """Whether the whole pattern matches the empty string."""
        return self._regex.fullmatch(b"") is not None

    def replace_all(self, text: str, replacement: str) -> str:
        """``text`` with every non-overlapping match, leftmost first, replaced by ``replacement`` (literal).

        An empty match is replaced once and the search moves on by one character (as ``re.sub``). A literal
        pattern (a workspace path, ``re.escape``d) is replaced by ``str.replace``, which does the same.
        """
        if self._literal is not None:
            return text.replace(self._literal, replacement)
        data = text.encode("utf-8", "surrogatepass")
        kept: list[bytes] = []
        copied = pos = 0
        while pos <= len(data):
            found = self._regex.search(data, pos)
            if found is None:
                break
            start, end = found.span()
            kept.append(data[copied:start])
            copied = end
            pos = end if end > start else _next_character(data, end)
        if not kept:
            return text
        kept.append(data[copied:])
        # The kept text is decoded piece by piece: a replacement can never form or split a character.
        return replacement.join(_decoded(piece) for piece in kept)


def _decoded(piece: bytes) -> str:
    try:
        return piece.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:  # a match that cut a character in two: keep what can be kept, never raise
        return piece.decode("utf-8", "replace")


def _next_character(data: bytes, index: int) -> int:
    """The index after the UTF-8 character at ``index`` (past the end: ``len(data) + 1``)."""
    index += 1
    while index < len(data) and 0x80 <= data[index] < 0xC0:
        index += 1
    return index


def compile_linear(pattern: str) -> Result[LinearPattern, str]:
    """Compile ``pattern`` for RE2.

    Returns:
        ``Success(LinearPattern)``, or ``Failure(message)``: a syntax error in RE2's words
        (``missing ): (a``), or what cannot be matched without backtracking and is therefore not supported
        (``a backreference is not supported: ...``), or a program too large to compile.
    """
    try:
        data = pattern.encode("utf-8")
    except UnicodeEncodeError:
        return Failure("not valid text (it holds a lone surrogate)")
    try:
        return Success(LinearPattern(re2.compile(data, _OPTIONS), _literal(pattern)))
    except re2.error as error:
        return Failure(_message(error, pattern))


_ESCAPED = re.compile(r"\\(.)", re.DOTALL)


def _literal(pattern: str) -> str | None:
    """The text ``pattern`` stands for when it is that text written by ``re.escape`` (so it matches only it)."""
    text = _ESCAPED.sub(r"\1", pattern)
    return text if text and re.escape(text) == pattern else None


def _message(error: Exception, pattern: str) -> str:
    raw = error.args[0] if error.args else ""
    text = raw.decode("utf-8", "backslashreplace") if isinstance(raw, bytes) else str(raw)
    for prefix, what in _UNSUPPORTED:
        if text.startswith(prefix):
            return f"{what}: {text}"
    backreference = "invalid escape sequence: \\"
    if "(?P=" in pattern or (text.startswith(backreference) and text[len(backreference) :][:1].isdigit()):
        return f"a backreference {_BACKTRACKING}: {text}"
    return text
