"""Pagination for the search results page.

Pages are numbered from 1. A page of ``size`` results covers the half-open range [start, end) of the
result list.
"""


def page_count(total: int, size: int) -> int:
    """How many pages ``total`` results fill at ``size`` per page (0 when there are no results)."""
    if size < 1:
        raise ValueError("size must be at least 1")
    return total // size + (1 if total % size > 0 else 0)


def clamp_page(page: int, total: int, size: int) -> int:
    """``page`` brought into the valid range: at least 1, at most the last page."""
    return max(1, min(page, page_count(total, size)))


def page_bounds(page: int, total: int, size: int) -> tuple[int, int]:
    """The [start, end) indexes of ``page`` (clamped first) in a list of ``total`` results."""
    page = clamp_page(page, total, size)
    start = (page - 1) * size
    end = min(start + size, total)
    return start, end


def page_items(items: list[str], page: int, size: int) -> list[str]:
    """The results shown on ``page``."""
    start, end = page_bounds(page, len(items), size)
    return items[start:end]


def label(page: int, total: int, size: int) -> str:
    """The caption above the results, e.g. "Showing 11-20 of 45"."""
    if total == 0:
        return "No results"
    start, end = page_bounds(page, total, size)
    return f"Showing {start + 1}-{end} of {total}"
