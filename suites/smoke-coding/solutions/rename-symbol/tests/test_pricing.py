"""Tests of shop.pricing (run: python3 -m pytest tests, with src on the path)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from shop.pricing import compute_total_tax, order_total  # noqa: E402


def test_compute_total_sums_lines() -> None:
    assert order_total([("a", 250, 2), ("b", 100, 1)]) == 600


def test_compute_total_discount_rounds_down() -> None:
    assert order_total([("a", 999, 1)], discount_pct=10) == 900


def test_compute_total_tax() -> None:
    assert compute_total_tax([("a", 1000, 3)], 20) == 600
