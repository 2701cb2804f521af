"""Properties of ``alisio.core.harness.budget``: when a run may go on and which limit stops it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.harness.budget import BUDGET_ORDER, RunBudget, check, tokens_of
from alisio.core.harness.protocol import Usage
from tests.property.strategies_harness import budgets, counts, usages


@given(budgets, counts, counts, counts, st.none() | counts)
def test_a_stop_names_a_limit_that_was_really_passed(
    budget: RunBudget, turns: int, calls: int, elapsed: int, tokens: int | None
) -> None:
    """Any stop reports a limit and a value that passes it; no stop means every limit holds."""
    stop = check(budget, turns, calls, elapsed, tokens)
    within = (
        elapsed < budget.max_wall_ms
        and (budget.max_tokens is None or tokens is None or tokens < budget.max_tokens)
        and turns <= budget.max_turns
        and (budget.max_tool_calls is None or calls <= budget.max_tool_calls)
    )
    assert (stop is None) == within
    if stop is not None:
        assert stop.budget in BUDGET_ORDER
        if stop.budget in ("maxWallMs", "maxTokens"):
            assert stop.value >= stop.limit
        else:
            assert stop.value > stop.limit


@given(budgets)
def test_exactly_max_turns_turns_are_allowed(budget: RunBudget) -> None:
    """maxTurns N lets turn N start and stops turn N + 1."""
    assert check(budget, budget.max_turns, 0, 0, None) is None
    stop = check(budget, budget.max_turns + 1, 0, 0, None)
    assert stop is not None and stop.budget == "maxTurns" and stop.value == budget.max_turns + 1


@given(budgets, counts)
def test_max_tokens_is_not_enforced_without_reported_usage(budget: RunBudget, turns: int) -> None:
    """Without reported usage (None) maxTokens never stops a run."""
    stop = check(budget, min(turns, budget.max_turns), 0, 0, None)
    assert stop is None


def test_wall_time_wins_when_several_limits_pass() -> None:
    """When every limit is passed at once the reported one is maxWallMs (the first of BUDGET_ORDER)."""
    budget = RunBudget(max_turns=1, max_wall_ms=10, max_tokens=5, max_tool_calls=1)
    stop = check(budget, 2, 2, 10, 5)
    assert stop is not None and (stop.budget, stop.limit, stop.value) == ("maxWallMs", 10, 10)


@given(usages)
def test_tokens_are_input_plus_output_and_unknown_stays_unknown(usage: Usage | None) -> None:
    """tokens_of is input + output when either is reported, else the total, else None (never a guessed 0)."""
    tokens = tokens_of(usage)
    if usage is None:
        assert tokens is None
    elif usage.input_tokens is not None or usage.output_tokens is not None:
        assert tokens == (usage.input_tokens or 0) + (usage.output_tokens or 0)
    else:
        assert tokens == usage.total_tokens
