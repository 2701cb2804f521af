"""A sales report built from named metrics."""

from shop import pricing

# Metric name -> the pricing function it calls; the name is also the report's column title.
METRICS = ("order_total", "compute_total_tax")


def metric(name: str, items: list[pricing.Item]) -> int:
    """Evaluate one metric by the name of its pricing function."""
    function = getattr(pricing, name)
    return function(items, 20) if name.endswith("_tax") else function(items)


def summary(items: list[pricing.Item]) -> dict[str, int]:
    """Every metric of METRICS for ``items``."""
    return {name: metric(name, items) for name in METRICS}
