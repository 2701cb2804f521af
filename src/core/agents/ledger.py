"""The recording proxy's budget ledger, pure: which model call may start, with calls in flight held against the
budgets, so that calls made at once cannot overshoot ``maxTokens`` or ``maxCostUsd`` together.

Rules (``admit`` before a call is forwarded, ``settle`` when it ended):
- ``maxTurns`` counts the calls let through, answered or in flight: the call past it is refused;
- ``maxTokens`` counts the input + output tokens finished calls reported, ``maxCostUsd`` their cost at the
  model's rates, ``maxToolCalls`` the tool calls they asked for: once one is reached (past, for
  ``maxToolCalls``) the next call is refused, and every call after it (``Ledger.stop``). That decision is
  the harness's own budget check (``alisio.core.harness.budget.check``, no second copy): when several
  budgets are passed at once, the first in ``BUDGET_ORDER`` is named;
- a call in flight holds a ``Reservation``: an upper bound of what it can spend, its request's bytes as input
  tokens (a token is at least one byte of its text) plus the output limit the request declares (its wire
  format's record says where: ``max_completion_tokens`` else ``max_tokens``, times ``n``, for Chat
  Completions; ``max_output_tokens`` for Responses; ``max_tokens`` for Anthropic;
  ``generationConfig.maxOutputTokens``, times ``candidateCount``, for Gemini), priced at the dearest input and
  output rates. A request that declares no output limit, or continues a conversation kept at the provider
  (Responses' ``previous_response_id`` or ``conversation``), has no bound: its reservation is unbounded;
- a call that arrives while others are in flight waits (``Wait``) as long as what finished calls used plus
  their reservations reaches ``maxTokens`` or ``maxCostUsd`` (or one of them is unbounded); once they have
  finished, it is decided on what they reported. With no call in flight nothing waits: one call at a time is
  decided exactly as before.

The bound this gives: the tokens (and the cost) past a budget are less than what the last call let through
used, as with one call at a time, plus what calls in flight used beyond their reservation; that is 0 when
the provider keeps the declared output limit and counts no more input tokens than the request has bytes (a
provider's own additions, such as Anthropic's tool-use system prompt of a few hundred tokens, can pass it).
"""

from __future__ import annotations

import msgspec

from alisio.core.base import Frozen
from alisio.core.harness.budget import RunBudget, check, cost_after
from alisio.core.harness.prices import Rates
from alisio.core.harness.protocol import Usage
from alisio.core.harness.wire import Api, wire_format

__all__ = [
    "Admit",
    "BudgetHit",
    "Held",
    "Ledger",
    "Refuse",
    "Reservation",
    "Wait",
    "admit",
    "reservation_of",
    "settle",
]


class BudgetHit(Frozen, frozen=True, kw_only=True):
    """The budget a call went past: its name, its limit and the value that reached it."""

    budget: str
    limit: int | float
    value: int | float


class Reservation(Frozen, frozen=True, kw_only=True):
    """What one call in flight may spend at most: ``None`` when no bound is known."""

    tokens: int | None
    cost: float | None
    """USD at the dearest rates; 0 when no rates are known (no cost is counted then)."""


class Held(Frozen, frozen=True, kw_only=True):
    """A call in flight, by the proxy's ticket for it."""

    ticket: int
    reservation: Reservation


class Ledger(Frozen, frozen=True, kw_only=True):
    """The run's budget accounting so far."""

    started: int = 0
    """Calls let through (what ``maxTurns`` counts)."""
    tokens: int = 0
    """Input + output tokens finished calls reported."""
    cost: float | None = None
    """Their cost at the rates, ``None`` until one could be priced."""
    tool_calls: int = 0
    held: tuple[Held, ...] = ()
    stop: BudgetHit | None = None
    """The budget that was reached: every call from then on is refused."""


class Admit(Frozen, frozen=True, kw_only=True):
    """Forward the call; ``ledger`` holds its reservation."""

    ledger: Ledger


class Refuse(Frozen, frozen=True, kw_only=True):
    """Refuse the call (and every later one): ``hit`` is the budget."""

    ledger: Ledger
    hit: BudgetHit


class Wait(Frozen, frozen=True, kw_only=True):
    """Ask again once a call in flight has finished."""


def _reached(ledger: Ledger, budget: RunBudget) -> BudgetHit | None:
    """The budget the next call would pass: the harness's own check (``alisio.core.harness.budget.check``),
    asked as before a turn, with the call about to start counted (the wall clock is the runner's)."""
    stop = check(budget, ledger.started + 1, ledger.tool_calls, 0, ledger.tokens, ledger.cost)
    if stop is None:
        return None
    value = ledger.started if stop.budget == "maxTurns" else stop.value
    return BudgetHit(budget=stop.budget, limit=stop.limit, value=value)


def _would_reach(ledger: Ledger, budget: RunBudget) -> bool:
    """Whether the calls in flight could, together, reach ``maxTokens`` or ``maxCostUsd``."""
    reserved = [held.reservation for held in ledger.held]
    if budget.max_tokens is not None:
        tokens = [r.tokens for r in reserved]
        if any(t is None for t in tokens) or ledger.tokens + sum(t or 0 for t in tokens) >= budget.max_tokens:
            return True
    if budget.max_cost_usd is not None:
        costs = [r.cost for r in reserved]
        used = ledger.cost or 0.0
        if any(c is None for c in costs) or used + sum(c or 0.0 for c in costs) >= budget.max_cost_usd:
            return True
    return False


def admit(ledger: Ledger, budget: RunBudget, ticket: int, reservation: Reservation) -> Admit | Refuse | Wait:
    """May call ``ticket`` (holding ``reservation``) start now? (Rules in the module docstring.)"""
    if ledger.stop is not None:
        return Refuse(ledger=ledger, hit=ledger.stop)
    hit = _reached(ledger, budget)
    if hit is not None:
        return Refuse(ledger=msgspec.structs.replace(ledger, stop=hit), hit=hit)
    if ledger.held and _would_reach(ledger, budget):
        return Wait()
    held = (*ledger.held, Held(ticket=ticket, reservation=reservation))
    return Admit(ledger=msgspec.structs.replace(ledger, started=ledger.started + 1, held=held))


def settle(ledger: Ledger, ticket: int, usage: Usage | None, tool_calls: int, rates: Rates | None) -> Ledger:
    """The ledger once call ``ticket`` ended: its reservation released, what it reported counted (``usage``
    as read: ``None`` when not reported or not usable)."""
    tokens = (usage.input_tokens or 0) + (usage.output_tokens or 0) if usage is not None else 0
    return msgspec.structs.replace(
        ledger,
        tokens=ledger.tokens + tokens,
        cost=cost_after(ledger.cost, rates, usage),
        tool_calls=ledger.tool_calls + tool_calls,
        held=tuple(held for held in ledger.held if held.ticket != ticket),
    )


_UNBOUNDED = Reservation(tokens=None, cost=None)


def reservation_of(api: Api, body: bytes, rates: Rates | None) -> Reservation:
    """The reservation of a model call whose request body is ``body`` (rules in the module docstring; the
    output limit it declares is its record's ``output_limit``)."""
    try:
        data: object = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return _UNBOUNDED
    if not isinstance(data, dict):
        return _UNBOUNDED
    output = wire_format(api).output_limit(data)
    if output is None:
        return _UNBOUNDED
    if rates is None:
        return Reservation(tokens=len(body) + output, cost=0.0)
    input_rate = max(rates.input_rate, rates.cached_input_rate or 0.0, rates.cache_write_rate or 0.0)
    output_rate = max(rates.output_rate, rates.reasoning_rate or 0.0)
    cost = len(body) * input_rate / 1e6 + output * output_rate / 1e6
    return Reservation(tokens=len(body) + output, cost=cost)
