"""Small pieces of text every output shares: a count with its noun in the right number (``1 turn``, ``2 turns``),
an age (``30d``), and a position in a file as line and column."""

from __future__ import annotations

import re

__all__ = ["age_seconds", "byte_to_line_column", "line_and_column", "plural"]

_IRREGULAR = {"retry": "retries", "was": "were", "trajectory": "trajectories"}


def plural(count: int, noun: str) -> str:
    """``1 turn``, ``2 turns``, ``0 tool calls``, ``3 retries``: ``count`` and ``noun`` agreeing."""
    if count == 1:
        return f"{count} {noun}"
    head, _, last = noun.rpartition(" ")
    many = _IRREGULAR.get(last, f"{last}s")
    return f"{count} {head + ' ' if head else ''}{many}"


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def age_seconds(text: str) -> int | None:
    """``30d`` -> 2592000: a whole number and one unit (s, m, h, d, w); ``None`` when it is not one."""
    number, unit = text[:-1], text[-1:]
    if unit not in _UNITS or not number.isdigit() or len(number) > 9:
        return None
    return int(number) * _UNITS[unit]


def line_and_column(text: bytes, offset: int) -> tuple[int, int]:
    """The 1-based line and column (in characters) of byte ``offset`` of UTF-8 ``text``."""
    offset = max(0, min(offset, len(text)))
    start = text.rfind(b"\n", 0, offset) + 1
    return text.count(b"\n", 0, offset) + 1, len(text[start:offset].decode("utf-8", errors="replace")) + 1


_AT_BYTE = re.compile(r" \(byte (\d+)\)$")


def byte_to_line_column(message: str, text: bytes) -> str:
    """A parser's message ending in `` (byte N)`` (msgspec's) with the position as `` (at line L, column C)``."""
    at = _AT_BYTE.search(message)
    if at is None:
        return message
    line, column = line_and_column(text, int(at.group(1)))
    return f"{message[: at.start()]} (at line {line}, column {column})"
