"""Prices of line items. An item is a (sku, unit_price_cents, quantity) tuple."""

Item = tuple[str, int, int]

__all__ = ["Item", "order_total", "compute_total_tax"]


def order_total(items: list[Item], *, discount_pct: int = 0) -> int:
    """The total of ``items`` in cents, after a whole-order discount (rounded down)."""
    gross = sum(price * quantity for _, price, quantity in items)
    return gross - gross * discount_pct // 100


def compute_total_tax(items: list[Item], rate_pct: int) -> int:
    """The tax on the total of ``items`` (no discount), in cents, rounded down.

    Not to be confused with order_total: this is only the tax part.
    """
    return order_total(items) * rate_pct // 100
