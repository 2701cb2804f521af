"""Run budgets (the spec's maxTurns, maxWallMs, maxTokens, maxToolCalls; and maxCostUsd) and the pure check
that stops a run.

Rules this module keeps:

- ``check`` is asked *before* each unit of work starts, with the counts as they would be if it ran: before turn
  ``n`` it gets ``turns=n``, before the ``m``-th tool call ``tool_calls=m``. A count past its limit stops the run
  (``maxTurns: 30`` allows 30 turns; ``maxToolCalls: 40`` allows 40 calls).
- Time and tokens are resources that run out: the run stops once ``elapsed_ms >= maxWallMs`` or the main-loop
  tokens used so far ``>= maxTokens``. A response's size is not known before it arrives, so a run may overshoot
  maxTokens by one response.
- maxTokens is enforced only on reported usage (``tokens_used is None`` means no turn reported any). The agent
  loop raises one ``usage_unreported`` incident for *each* main turn without usage, so the report can count
  them and knows the token figures of that run are incomplete.
- Main-loop tokens are input plus output tokens of main-loop calls; compaction calls are counted apart.
- maxCostUsd is a resource too: the run stops once the main-loop cost so far, the reported usage at the model's
  prices (``alisio.core.harness.prices.cost_usd``), ``>= maxCostUsd``. Like maxTokens it is enforced only on
  reported usage, and a run may overshoot it by one response.
- When several limits are passed at once the first in ``BUDGET_ORDER`` is reported.
"""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from alisio.core.base import Frozen
from alisio.core.harness.prices import Rates, cost_of_usage
from alisio.core.harness.protocol import Usage

__all__ = [
    "BUDGET_ORDER",
    "BudgetName",
    "BudgetStop",
    "RunBudget",
    "check",
    "cost_after",
    "output_limit",
    "tokens_of",
]

PositiveInt = Annotated[int, Meta(ge=1)]
PositiveUsd = Annotated[float, Meta(gt=0.0, le=1e9)]
"""A cost limit in USD: above 0 (NaN and infinity refused)."""

BudgetName = Literal["maxTurns", "maxWallMs", "maxTokens", "maxToolCalls", "maxCostUsd"]

BUDGET_ORDER: tuple[BudgetName, ...] = ("maxWallMs", "maxTokens", "maxCostUsd", "maxTurns", "maxToolCalls")
"""Which stop is reported when several limits are passed at the same check."""


class RunBudget(Frozen, frozen=True, kw_only=True):
    """The limits of one run. maxTurns and maxWallMs are required; the other two are optional."""

    max_turns: PositiveInt
    max_wall_ms: PositiveInt
    max_tokens: PositiveInt | None = None
    """Main-loop input + output tokens; enforced only on reported usage."""
    max_tool_calls: PositiveInt | None = None
    max_cost_usd: PositiveUsd | None = None
    """Main-loop cost in USD at the model's prices (the caller counts it with ``cost_after``); enforced only on
    reported usage. The lab refuses it, before the first run, for a model without prices."""


class BudgetStop(Frozen, frozen=True, kw_only=True):
    """A limit the run has reached: which one, its limit and the value that passed it."""

    budget: BudgetName
    limit: int | float
    value: int | float


def check(
    budget: RunBudget,
    turns: int,
    tool_calls: int,
    elapsed_ms: int,
    tokens_used: int | None,
    cost_used: float | None = None,
) -> BudgetStop | None:
    """Decide whether the next unit of work may start.

    Args:
        budget: the run's limits.
        turns: main-loop turns, counting the one about to start (if a turn is about to start).
        tool_calls: tool calls, counting the one about to run (if a tool call is about to run).
        elapsed_ms: milliseconds since the run started.
        tokens_used: main-loop tokens reported so far, ``None`` when no turn reported usage.
        cost_used: main-loop cost so far in USD, ``None`` when none could be priced (no prices, no usage).

    Returns:
        The first passed limit in ``BUDGET_ORDER``, or ``None`` when the work may start.
    """
    passed: dict[BudgetName, tuple[int | float, int | float]] = {}
    if elapsed_ms >= budget.max_wall_ms:
        passed["maxWallMs"] = (budget.max_wall_ms, elapsed_ms)
    if budget.max_tokens is not None and tokens_used is not None and tokens_used >= budget.max_tokens:
        passed["maxTokens"] = (budget.max_tokens, tokens_used)
    if budget.max_cost_usd is not None and cost_used is not None and cost_used >= budget.max_cost_usd:
        passed["maxCostUsd"] = (budget.max_cost_usd, round(cost_used, 6))  # USD to the micro-dollar
    if turns > budget.max_turns:
        passed["maxTurns"] = (budget.max_turns, turns)
    if budget.max_tool_calls is not None and tool_calls > budget.max_tool_calls:
        passed["maxToolCalls"] = (budget.max_tool_calls, tool_calls)
    for name in BUDGET_ORDER:
        if name in passed:
            limit, value = passed[name]
            return BudgetStop(budget=name, limit=limit, value=value)
    return None


def output_limit(max_output_tokens: int, max_tokens: int | None, used: int | None) -> int:
    """The output limit of the next main-loop call: ``min(limits.maxOutputTokens, maxTokens - used)``, at
    least 1, so that a token budget bounds what a call can spend (and how long it can run). Without a
    ``maxTokens`` budget it is ``limits.maxOutputTokens``; tokens not reported count as none used."""
    if max_tokens is None:
        return max_output_tokens
    return max(1, min(max_output_tokens, max_tokens - (used or 0)))


def cost_after(cost: float | None, rates: Rates | None, usage: Usage | None) -> float | None:
    """The main-loop cost after one more response: ``cost`` plus its usage at ``rates`` (unchanged when there
    are no rates or the response reported no usable counts; ``None`` until one could be priced)."""
    if rates is None:
        return cost
    added = cost_of_usage(rates, usage)
    return cost if added is None else (cost or 0.0) + added


def tokens_of(usage: Usage | None) -> int | None:
    """The main-loop tokens one response used: input + output, else the reported total, else ``None``.

    Returns ``None`` when the provider reported no token count at all (never 0 for "unknown").
    """
    if usage is None:
        return None
    if usage.input_tokens is not None or usage.output_tokens is not None:
        return (usage.input_tokens or 0) + (usage.output_tokens or 0)
    return usage.total_tokens
