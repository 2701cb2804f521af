"""Properties of prices: each kind of token at its own rate, the two-rate formula kept bit for bit, the price
tables of config.toml read back and refused when bad, and maxCostUsd in the budget check."""

from __future__ import annotations

import math

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alisio.core.harness.budget import RunBudget, check, cost_after
from alisio.core.harness.config import config_to_data, parse_config
from alisio.core.harness.prices import (
    ModelPrices,
    Rates,
    cost_of_usage,
    cost_usd,
    parse_prices,
    prices_data,
    rate_items,
)
from alisio.core.harness.protocol import Usage
from alisio.core.lab.reports.report_build import build_report
from tests.property.strategies_report import conditions, run_records

rate = st.floats(0, 100, allow_nan=False)
counts = st.integers(0, 5_000_000)
rates = st.builds(
    Rates,
    input_rate=rate,
    output_rate=rate,
    cached_input_rate=st.none() | rate,
    cache_write_rate=st.none() | rate,
    reasoning_rate=st.none() | rate,
)


@given(rate, rate, counts, counts, st.none() | counts, st.none() | counts)
def test_two_rates_give_the_two_rate_formula_bit_for_bit(
    inp_rate: float, out_rate: float, inp: int, out: int, cached: int | None, reasoning: int | None
) -> None:
    """Without cachedInput, cacheWrite and reasoning prices, the parts fold back into input and output: the
    cost is exactly what ``--input-rate``/``--output-rate`` always gave, whatever the parts are."""
    two = Rates(input_rate=inp_rate, output_rate=out_rate)
    got = cost_usd(two, inp, out, cached_input=cached, reasoning=reasoning)
    assert got == inp * inp_rate / 1e6 + out * out_rate / 1e6


@given(rates, counts, counts, counts, counts, counts)
def test_each_kind_of_token_is_priced_once_at_its_own_rate(
    r: Rates, inp: int, out: int, cached: int, written: int, reasoning: int
) -> None:
    """The parts are capped at their whole (cache reads and writes within input, reasoning within output) and
    each is priced at its rate, a rate not given at its whole's; never negative."""
    got = cost_usd(r, inp, out, cached_input=cached, cache_write=written, reasoning=reasoning)
    c = min(cached, inp)
    w = min(written, inp - c)
    t = min(reasoning, out)
    cached_rate = r.input_rate if r.cached_input_rate is None else r.cached_input_rate
    write_rate = r.input_rate if r.cache_write_rate is None else r.cache_write_rate
    reasoning_rate = r.output_rate if r.reasoning_rate is None else r.reasoning_rate
    expected = (
        (inp - c - w) * r.input_rate + c * cached_rate + w * write_rate
        + (out - t) * r.output_rate + t * reasoning_rate
    ) / 1e6  # fmt: skip
    assert got is not None and got >= 0
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_the_issues_example_and_unreported_counts() -> None:
    """DeepSeek's table: 1,000 input of which 400 cached, 100 output; no input or output count: no cost."""
    deepseek = Rates(input_rate=0.28, output_rate=1.1, cached_input_rate=0.028)
    cost = cost_usd(deepseek, 1000, 100, cached_input=400)
    assert cost == pytest.approx((600 * 0.28 + 400 * 0.028 + 100 * 1.1) / 1e6)
    assert cost_usd(deepseek, None, 100) is None and cost_usd(deepseek, 100, None) is None
    assert cost_of_usage(deepseek, None) is None
    assert cost_of_usage(deepseek, Usage(input_tokens=-1, output_tokens=1)) is None  # not a usable count
    assert (
        cost_of_usage(deepseek, Usage(input_tokens=1000, output_tokens=100, cached_input_tokens=400)) == cost
    )


def test_the_rates_used_are_named_and_those_not_given_say_so() -> None:
    table = Rates(input_rate=2, output_rate=8, cached_input_rate=0.5)
    assert rate_items(table) == (
        "input 2",
        "cached input 0.5",
        "cache writes 2 (input's: not given)",
        "output 8",
        "reasoning 8 (output's: not given)",
    )


names = st.text("abcdefghijklmnopqrstuvwxyz0123456789-./", min_size=1, max_size=30)


@given(st.dictionaries(names, rates, max_size=4))
def test_price_tables_read_back_from_the_shape_of_config_toml(tables: dict[str, Rates]) -> None:
    """Any model name (dots and slashes too); parse_config(config_to_data(c)) gives c back."""
    prices = tuple(ModelPrices(model=m, rates=r) for m, r in sorted(tables.items()))
    assert parse_prices(prices_data(prices), "c").unwrap() == prices
    config = parse_config({"prices": prices_data(prices)}, "c").unwrap()
    assert config.prices == prices
    assert parse_config(config_to_data(config), "c").unwrap() == config


@pytest.mark.parametrize(
    ("body", "key", "message"),
    [
        ({"input": 1, "output": 2, "reasonning": 3}, "reasonning", "unknown key (did you mean reasoning?)"),
        (
            {"input": -0.5, "output": 2},
            "input",
            "a price is USD per million tokens, 0 to 1,000,000, got -0.5",
        ),
        ({"input": math.nan, "output": 2}, "input", "0 to 1,000,000, got nan"),
        ({"input": 1, "output": math.inf}, "output", "0 to 1,000,000, got inf"),
        ({"input": 1, "output": "2"}, "output", "(expected `float`, got `str`)"),
        ({"output": 2}, "input", "missing (input and output are required)"),
    ],
)
def test_a_bad_price_table_names_the_quoted_key(body: dict[str, object], key: str, message: str) -> None:
    error = parse_config({"prices": {"openai/gpt-4.1": body}}, "config.toml").failure()
    assert error.key == f'prices."openai/gpt-4.1".{key}'
    assert message in error.message
    assert parse_config({"prices": {"m": 3}}, "c").failure().key == 'prices."m"'
    assert parse_config({"price": {}}, "c").failure().message == "unknown key (did you mean prices?)"


@given(st.floats(0.0001, 10), st.lists(st.integers(0, 100_000), min_size=1, max_size=6))
def test_max_cost_usd_stops_once_the_cost_so_far_reaches_it(limit: float, inputs: list[int]) -> None:
    """Before each turn the cost so far (each response's usage at the rates) is checked: the run stops once
    it is at the limit or past it, and never before."""
    budget = RunBudget(max_turns=100, max_wall_ms=10**6, max_cost_usd=limit)
    rates = Rates(input_rate=5, output_rate=5)
    cost = None
    for turn, inp in enumerate(inputs, start=1):
        stop = check(budget, turn, 0, 0, None, cost)
        assert (stop is not None) == (cost is not None and cost >= limit)
        if stop is not None:
            assert (stop.budget, stop.limit, stop.value) == ("maxCostUsd", limit, round(cost or 0, 6))
            return
        cost = cost_after(cost, rates, Usage(input_tokens=inp, output_tokens=10))
    assert cost == pytest.approx(sum(inp + 10 for inp in inputs) * 5 / 1e6)


def test_max_cost_usd_is_positive_and_no_usage_costs_nothing() -> None:
    for limit in (0, -1, math.nan, math.inf):
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert({"maxTurns": 1, "maxWallMs": 1, "maxCostUsd": limit}, RunBudget)
    rates = Rates(input_rate=1, output_rate=1)
    assert cost_after(None, rates, None) is None
    assert cost_after(0.5, rates, Usage()) == 0.5
    assert cost_after(0.5, None, Usage(input_tokens=10, output_tokens=10)) == 0.5  # no rates: nothing counted


@settings(max_examples=25)
@given(st.lists(run_records(reported=True), min_size=1, max_size=6), rates)
def test_the_reports_estimate_is_the_sum_of_the_runs_costs(records: list, r: Rates) -> None:  # type: ignore[type-arg]
    """The estimated cost of the suite is the sum, over its judged runs, of each run's tokens at the rates."""
    report = build_report(records, conditions(rates=r))
    judged = [x for x in records if x.judged]
    if report.summary.estimated is None:
        assert not judged or report.summary.measured.tokens is None or report.summary.measured.tokens_runs
        return
    m = [x.measured for x in judged]
    expected = sum(
        cost_usd(r, x.input_tokens, x.output_tokens, cached_input=x.cached_input_tokens,
                 cache_write=x.cache_write_input_tokens, reasoning=x.reasoning_tokens) or 0.0
        for x in m
    )  # fmt: skip
    assert report.summary.estimated.cost_usd == pytest.approx(expected, rel=1e-9, abs=1e-12)
