# formatted by tools/fmt.py
"""Stock levels of the warehouse: a mapping from SKU to the quantity on hand."""
REORDER_LEVEL = 5


def needs_reorder(stock: dict[str, int], sku: str) -> bool:
    """True when the SKU is below the reorder level (an unknown SKU has 0)."""
    return stock.get(sku, 0) < REORDER_LEVEL


def restock(stock: dict[str, int], deliveries: list[tuple[str, int]]) -> dict[str, int]:
    """A new stock mapping with every delivery added to the quantity on hand.

    A delivery of a SKU that is not stocked yet adds it. A delivery with a negative quantity raises
    ValueError and changes nothing. The stock passed in is never modified.
    """
    if any(quantity < 0 for _, quantity in deliveries):
        raise ValueError("a delivery cannot have a negative quantity")
    result = dict(stock)
    for sku, quantity in deliveries:
        result[sku] = result.get(sku, 0) + quantity
    return result


def low_stock(stock: dict[str, int]) -> list[str]:
    """The SKUs to reorder, in alphabetical order."""
    return sorted(sku for sku in stock if needs_reorder(stock, sku))


def describe(stock: dict[str, int], sku: str) -> str:
    return f"{sku}: {stock.get(sku, 0)} on hand"
