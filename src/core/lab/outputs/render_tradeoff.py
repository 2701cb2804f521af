"""How the success-rate-against-cost rows (``alisio.core.lab.comparisons.tradeoff``) print: one table, a note.

Rules: an undefined figure prints "n/a"; an arm that passed nothing prints "no success" for its cost; an arm
without token counts on every shared task is "not ranked"; USD only when some arm has prices.
"""

from __future__ import annotations

from collections.abc import Sequence

from alisio.core.lab.comparisons.tradeoff import RateCostRow
from alisio.core.lab.outputs.render_profile import ratio_text
from alisio.core.lab.outputs.view import Table
from alisio.core.stats.rates import ClusteredMean

__all__ = ["TRADEOFF_NOTE", "rate_cost_table", "tradeoff_markdown"]

TRADEOFF_NOTE = (
    "Not beaten: no other arm has a success rate at least as high and a cost per success at least as low (one "
    "of them strictly), on the point estimates; overlapping intervals mean the data do not yet separate the "
    "arms. Over the tasks every arm judged; cost per success pools each arm's tokens (failures included) over "
    "its successes, with Fieller's 95% interval clustered by task."
)


def _rate(rate: ClusteredMean | None) -> str:
    if rate is None:
        return "n/a"
    if rate.interval is None:
        return f"{rate.mean * 100:.1f}%"
    return f"{rate.mean * 100:.1f}% [{rate.interval.low * 100:.1f}%, {rate.interval.high * 100:.1f}%]"


def rate_cost_table(rows: Sequence[RateCostRow]) -> Table:
    """The rows as a table: arm, rate, tokens per success, USD per success (when any arm has it), not beaten."""
    usd = any(r.usd_per_success is not None for r in rows)
    header = (
        "Arm",
        "Success rate [95%]",
        "Tokens per success [95%]",
        *(("USD per success [95%]",) if usd else ()),
    )
    body = []
    for r in rows:
        tokens = "n/a" if r.tokens_per_success is None else ratio_text(r.tokens_per_success)
        if r.tokens_per_success is None and r.not_beaten is not None:
            tokens = "no success"
        cells = [r.arm, _rate(r.rate), tokens]
        if usd:
            cells.append("n/a" if r.usd_per_success is None else ratio_text(r.usd_per_success, usd=True))
        mark = {True: "yes", False: "no", None: "not ranked"}[r.not_beaten]
        body.append((*cells, mark))
    return Table(header=(*header, "Not beaten"), rows=tuple(body))


def tradeoff_markdown(rows: Sequence[RateCostRow]) -> list[str]:
    """The section ``## Success rate against cost`` (nothing with fewer than 2 arms)."""
    from alisio.core.lab.outputs.render import markdown_table

    if len(rows) < 2:
        return []
    table = rate_cost_table(rows)
    return ["## Success rate against cost", "", *markdown_table(table.header, table.rows), "", TRADEOFF_NOTE]
