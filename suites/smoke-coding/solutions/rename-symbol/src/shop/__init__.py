"""A tiny shop: line items, carts, and a sales report."""

from shop.pricing import compute_total_tax, order_total

__all__ = ["order_total", "compute_total_tax"]
