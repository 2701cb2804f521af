"""Name the key a TOML document sets twice (``tomllib`` rejects it but says only "Cannot overwrite a value").

``duplicate_key(text)`` reads the document line by line, tracking which table it is in and skipping strings
(basic, literal and both multi-line kinds) and comments, and returns the first key, dotted from its table,
that is set a second time in the same table. It only names the key: ``tomllib`` decides what is valid, and
the shell asks this module only after ``tomllib`` refused the document.

Rules: a table header (``[a.b]``) or an array-of-tables header (``[[a]]``) starts a new set of keys; keys
are compared after removing the quotes of quoted parts and the spaces around dots (``"a" . b`` is
``a.b``); a duplicate inside an inline table, or a key that clashes with a table, is not named (``None``).
"""

from __future__ import annotations

import re
from typing import Final

from alisio.core.base import Frozen

__all__ = ["DuplicateKey", "duplicate_key"]

_PART: Final = r"(?:[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*')"
_KEY: Final = re.compile(rf"\s*(?P<key>{_PART}(?:\s*\.\s*{_PART})*)\s*=")
_HEADER: Final = re.compile(rf"\s*\[\[?\s*(?P<key>{_PART}(?:\s*\.\s*{_PART})*)\s*\]\]?\s*(?:#.*)?$")
_PARTS: Final = re.compile(_PART)


class DuplicateKey(Frozen, frozen=True, kw_only=True):
    """A key set twice in one table: its dotted name and the two lines (from 1) that set it."""

    key: str
    first_line: int
    line: int


def _dotted(key: str) -> str:
    parts = (part[1:-1] if part[0] in "\"'" else part for part in _PARTS.findall(key))
    return ".".join(parts)


def _code_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each line that starts outside a multi-line string, in order."""
    kept: list[tuple[int, str]] = []
    quote = ""  # the delimiter of the string being read: ", ', \"\"\" or '''
    for number, line in enumerate(text.split("\n"), 1):
        if not quote:
            kept.append((number, line))
        index = 0
        while index < len(line):
            if quote:
                if quote[0] == '"' and line[index] == "\\":
                    index += 2  # an escape inside a basic string
                elif line.startswith(quote, index):
                    index += len(quote)
                    quote = ""
                else:
                    index += 1
                continue
            char = line[index]
            if char == "#":
                break
            if char in "\"'":
                quote = char * 3 if line.startswith(char * 3, index) else char
                index += len(quote)
                continue
            index += 1
        if len(quote) == 1:  # a one-line string never spans lines (tomllib reports that itself)
            quote = ""
    return kept


def duplicate_key(text: str) -> DuplicateKey | None:
    """The first key set twice in the same table of ``text``, dotted from the document root, or ``None``."""
    table = ""
    seen: dict[str, int] = {}
    for number, line in _code_lines(text):
        header = _HEADER.match(line)
        if header:
            table, seen = _dotted(header["key"]), {}
            continue
        key = _KEY.match(line)
        if key is None:
            continue
        name = _dotted(key["key"])
        if name in seen:
            full = f"{table}.{name}" if table else name
            return DuplicateKey(key=full, first_line=seen[name], line=number)
        seen[name] = number
    return None
