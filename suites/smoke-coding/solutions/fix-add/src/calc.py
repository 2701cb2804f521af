"""Arithmetic helpers for the invoice module."""


def add(a: int, b: int) -> int:
    """Return the sum of a and b."""
    return a + b


def total(values: list[int]) -> int:
    """Return the sum of every value (0 for an empty list)."""
    result = 0
    for value in values:
        result = add(result, value)
    return result
