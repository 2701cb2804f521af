"""Token prices (USD per million tokens) and the one cost computation every estimate and cap uses.

A price comes from ``--input-rate``/``--output-rate`` or from a ``[prices."MODEL"]`` table of config.toml::

    [prices."deepseek-chat"]
    input = 0.28          # required
    output = 1.1          # required
    cachedInput = 0.028   # absent: priced at input's rate
    cacheWrite = 0.35     # absent: priced at input's rate
    reasoning = 1.1       # absent: priced at output's rate

Rules this module keeps:

- token counts follow the lab's convention: input tokens include cached input and cache writes, output tokens
  include reasoning; so each part is priced once, at its own rate: uncached input at ``input``, cache reads at
  ``cachedInput``, cache writes at ``cacheWrite``, reasoning at ``reasoning`` and the rest of the output at
  ``output``;
- a rate not given is priced at the rate of the tokens it is part of (cached input and cache writes are input,
  reasoning is output), which is also what two flags alone mean; ``rate_items`` names every rate used and says
  which were not given, so no default is silent;
- a cost is computed only from reported counts: no input or output count, no cost (``None``, never 0).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Annotated, Final

import msgspec
from msgspec import Meta
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.errors import ConfigError
from alisio.core.harness.protocol import Usage, usage_problem

__all__ = [
    "MAX_RATE",
    "PRICE_KEYS",
    "ModelPrices",
    "Rate",
    "Rates",
    "cost_of_usage",
    "cost_usd",
    "parse_prices",
    "prices_data",
    "prices_for",
    "rate_items",
    "rates_text",
    "table_name",
]

MAX_RATE: Final = 1_000_000.0
"""The highest rate accepted (USD per million tokens): far above any price, low enough to refuse ``inf``."""

Rate = Annotated[float, Meta(ge=0.0, le=MAX_RATE)]
"""USD per million tokens, 0 to ``MAX_RATE`` (NaN and negative prices are refused)."""


class Rates(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """USD per million tokens: input and output always; the other three only when they were given."""

    input_rate: float
    output_rate: float
    cached_input_rate: float | None = None
    """Cache reads (``cachedInput``); ``None``: priced at ``input_rate``."""
    cache_write_rate: float | None = None
    """Cache writes (``cacheWrite``); ``None``: priced at ``input_rate``."""
    reasoning_rate: float | None = None
    """Reasoning tokens (``reasoning``); ``None``: priced at ``output_rate``."""


def cost_usd(
    rates: Rates,
    input_tokens: int | None,
    output_tokens: int | None,
    *,
    cached_input: int | None = None,
    cache_write: int | None = None,
    reasoning: int | None = None,
) -> float | None:
    """The cost of these counts at ``rates``, each part at its own rate; ``None`` without input or output.

    Counts not reported (``None``) are priced as the tokens they are part of; a part larger than its whole
    (a provider's inconsistent counts) is capped at the whole, so no cost is ever negative.
    """
    if input_tokens is None or output_tokens is None:
        return None
    cached = min(cached_input or 0, input_tokens)
    written = min(cache_write or 0, input_tokens - cached)
    thought = min(reasoning or 0, output_tokens)
    cached_rate = rates.input_rate if rates.cached_input_rate is None else rates.cached_input_rate
    write_rate = rates.input_rate if rates.cache_write_rate is None else rates.cache_write_rate
    reasoning_rate = rates.output_rate if rates.reasoning_rate is None else rates.reasoning_rate
    # on each side (input, output) tokens at the same rate are added first (integers), then priced in a fixed
    # order: rates not given give the same float as the two-rate formula, input * r / 1e6 + output * r / 1e6
    sides: tuple[dict[float, int], dict[float, int]] = ({rates.input_rate: 0}, {rates.output_rate: 0})
    parts = (
        (0, rates.input_rate, input_tokens - cached - written),
        (0, cached_rate, cached),
        (0, write_rate, written),
        (1, rates.output_rate, output_tokens - thought),
        (1, reasoning_rate, thought),
    )
    for side, rate, count in parts:
        sides[side][rate] = sides[side].get(rate, 0) + count
    return sum(count * rate / 1e6 for group in sides for rate, count in group.items())


def cost_of_usage(rates: Rates, usage: Usage | None) -> float | None:
    """The cost of one response's reported usage at ``rates`` (``None``: no input or output count)."""
    if usage is None or usage_problem(usage) is not None:
        return None
    return cost_usd(
        rates,
        usage.input_tokens,
        usage.output_tokens,
        cached_input=usage.cached_input_tokens,
        cache_write=usage.cache_write_input_tokens,
        reasoning=usage.reasoning_tokens,
    )


def rates_text(rates: Rates, source: str | None) -> str:
    """The rates in words for a report's conditions: ``USD per million tokens: input 2, ..., from SOURCE``."""
    return f"USD per million tokens: {', '.join(rate_items(rates))}" + (f", from {source}" if source else "")


def rate_items(rates: Rates) -> tuple[str, ...]:
    """Every rate a cost is computed at, in words (``cached input 0.028``, ``reasoning 1.1 (output's: not
    given)``): what the estimated block says it used."""

    def given(name: str, value: float | None, falls_to: str, fallback: float) -> str:
        if value is None:
            return f"{name} {fallback:g} ({falls_to}'s: not given)"
        return f"{name} {value:g}"

    return (
        f"input {rates.input_rate:g}",
        given("cached input", rates.cached_input_rate, "input", rates.input_rate),
        given("cache writes", rates.cache_write_rate, "input", rates.input_rate),
        f"output {rates.output_rate:g}",
        given("reasoning", rates.reasoning_rate, "output", rates.output_rate),
    )


class ModelPrices(Frozen, frozen=True, kw_only=True):
    """One ``[prices."MODEL"]`` table: the model name as written (dots and slashes included) and its rates."""

    model: str
    rates: Rates


class _PriceBody(Frozen, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A ``[prices."MODEL"]`` table as written."""

    input: Rate
    output: Rate
    cached_input: Rate | None = None
    cache_write: Rate | None = None
    reasoning: Rate | None = None


PRICE_KEYS: Final = tuple(  # the keys of a [prices."MODEL"] table
    field.encode_name for field in msgspec.structs.fields(_PriceBody)
)
_AT: Final = re.compile(r"^(?P<message>.*?)(?: - at `\$(?:\.(?P<field>[^`]*))?`)?$", re.DOTALL)
_UNKNOWN: Final = re.compile(r"^Object (?P<what>contains unknown|missing required) field `(?P<field>.*)`$")


def table_name(model: str) -> str:
    """How config.toml names the table of ``model``: ``prices."gpt-4.1"``."""
    return f"prices.{msgspec.json.encode(model).decode()}"


def _price_error(text: str, body: Mapping[str, object], model: str, source: str) -> ConfigError:
    match = _AT.match(text)
    message, field = (match["message"], match["field"]) if match else (text, None)
    unknown = _UNKNOWN.match(message)
    if unknown and unknown["what"] == "contains unknown":
        close = difflib.get_close_matches(unknown["field"], PRICE_KEYS, n=1, cutoff=0.5)
        near = f" (did you mean {close[0]}?)" if close else ""
        known = ", ".join(PRICE_KEYS)
        key, message = (
            f"{table_name(model)}.{unknown['field']}",
            f"unknown key{near}; a price table has {known}",
        )
    elif unknown:
        key, message = f"{table_name(model)}.{unknown['field']}", "missing (input and output are required)"
    else:
        key = f"{table_name(model)}.{field}" if field else table_name(model)
        value = body.get(field) if field else None
        got = f", got {value!r}" if isinstance(value, int | float) and not isinstance(value, bool) else ""
        message = f"a price is USD per million tokens, 0 to {MAX_RATE:,.0f}{got}"
        if "Expected `float`, got" in text:
            message += f" ({text.split(' - at ')[0].lower()})"
    return ConfigError(source=source, key=key, message=message)


def parse_prices(data: object, source: str) -> Result[tuple[ModelPrices, ...], ConfigError]:
    """The ``[prices."MODEL"]`` tables of config.toml, sorted by model; a misspelt key gets the nearest one,
    a negative, NaN or infinite price is refused naming its key."""
    if not isinstance(data, Mapping):
        message = 'expected tables of prices: [prices."MODEL"] with input and output (USD per million tokens)'
        return Failure(ConfigError(source=source, key="prices", message=message))
    out: list[ModelPrices] = []
    for model, body in sorted(data.items()):
        if not isinstance(body, Mapping):
            message = "expected a table with input and output (USD per million tokens)"
            return Failure(ConfigError(source=source, key=table_name(str(model)), message=message))
        try:
            price = msgspec.convert(body, _PriceBody)
        except msgspec.ValidationError as error:
            return Failure(_price_error(str(error), body, str(model), source))
        rates = Rates(
            input_rate=price.input,
            output_rate=price.output,
            cached_input_rate=price.cached_input,
            cache_write_rate=price.cache_write,
            reasoning_rate=price.reasoning,
        )
        out.append(ModelPrices(model=str(model), rates=rates))
    return Success(tuple(out))


def prices_for(prices: tuple[ModelPrices, ...], model: str) -> Rates | None:
    """The rates of ``model`` (its name exactly as the table writes it), or ``None`` when it has no table."""
    return next((entry.rates for entry in prices if entry.model == model), None)


def prices_data(prices: tuple[ModelPrices, ...]) -> dict[str, dict[str, float]]:
    """The tables in the shape of config.toml (``parse_prices(prices_data(p), s)`` gives back ``p``)."""
    out: dict[str, dict[str, float]] = {}
    for entry in prices:
        r = entry.rates
        written = {
            "input": r.input_rate,
            "output": r.output_rate,
            "cachedInput": r.cached_input_rate,
            "cacheWrite": r.cache_write_rate,
            "reasoning": r.reasoning_rate,
        }
        out[entry.model] = {key: value for key, value in written.items() if value is not None}
    return out
