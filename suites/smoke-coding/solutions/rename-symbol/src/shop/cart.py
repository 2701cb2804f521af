"""A shopping cart."""

from shop.pricing import Item, order_total


class Cart:
    """Items in a cart, with an optional discount code."""

    CODES = {"WELCOME10": 10, "VIP25": 25}

    def __init__(self) -> None:
        self.items: list[Item] = []
        self.code: str | None = None

    def add(self, sku: str, price_cents: int, quantity: int = 1) -> None:
        self.items.append((sku, price_cents, quantity))

    def total(self) -> int:
        """The amount to pay, computed by order_total with the discount of the code, if any."""
        return order_total(self.items, discount_pct=self.CODES.get(self.code or "", 0))
