"""Small words every output shares: a count with its noun in the right number (``1 turn``, ``2 turns``)."""

from __future__ import annotations

__all__ = ["age_seconds", "plural"]

_IRREGULAR = {"retry": "retries", "was": "were"}


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
