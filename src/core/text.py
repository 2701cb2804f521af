"""Small words every output shares: a count with its noun in the right number (``1 turn``, ``2 turns``)."""

from __future__ import annotations

__all__ = ["plural"]

_IRREGULAR = {"retry": "retries", "was": "were"}


def plural(count: int, noun: str) -> str:
    """``1 turn``, ``2 turns``, ``0 tool calls``, ``3 retries``: ``count`` and ``noun`` agreeing."""
    if count == 1:
        return f"{count} {noun}"
    head, _, last = noun.rpartition(" ")
    many = _IRREGULAR.get(last, f"{last}s")
    return f"{count} {head + ' ' if head else ''}{many}"
