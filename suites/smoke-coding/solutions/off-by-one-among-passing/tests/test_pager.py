"""Tests of pager (run: python3 -m pytest tests)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import pager  # noqa: E402


def test_page_count_exact_and_partial() -> None:
    assert pager.page_count(20, 10) == 2
    assert pager.page_count(25, 10) == 3
    assert pager.page_count(0, 10) == 0
    assert pager.page_count(9, 10) == 1


def test_clamp_page() -> None:
    assert pager.clamp_page(0, 45, 10) == 1
    assert pager.clamp_page(9, 45, 10) == 5
    assert pager.clamp_page(3, 45, 10) == 3


def test_page_items_middle_and_last() -> None:
    items = [f"r{i}" for i in range(1, 46)]
    assert pager.page_items(items, 2, 10) == [f"r{i}" for i in range(11, 21)]
    assert pager.page_items(items, 5, 10) == [f"r{i}" for i in range(41, 46)]


def test_label() -> None:
    assert pager.label(2, 45, 10) == "Showing 11-20 of 45"
    assert pager.label(1, 0, 10) == "No results"
    assert pager.label(7, 45, 10) == "Showing 41-45 of 45"


def test_a_remainder_of_one_gets_its_own_page() -> None:
    items = [f"r{i}" for i in range(1, 22)]
    assert pager.page_count(21, 10) == 3
    assert pager.page_items(items, 3, 10) == ["r21"]
