"""What a lab command spends: the rates of each arm, and the command-wide caps on tokens and cost.

- Rates: ``--input-rate``/``--output-rate`` when given (they win, and the report says so), else the
  ``[prices."MODEL"]`` table of the arm's model in config.toml, else none (no cost is estimated).
- Caps (``--max-total-tokens N``, ``--max-cost-usd X``): summed over the main-loop usage the finished runs
  reported (at the arm's rates for the cost). Once a cap is reached no new run starts; the runs in flight
  finish and are kept. They are refused up front when they could not be enforced: the scripted provider (it
  spends nothing), a replay (it spends nothing either), ``--executor ray`` (its runs in flight cannot be left
  to finish yet), ``--max-cost-usd`` with no rates for a model; and a live run whose provider reports no usage
  stops at the first run that reported none, saying so (the lab cannot know it before).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from alisio.core.harness.prices import ModelPrices, Rates, cost_usd, prices_for, table_name
from alisio.core.lab.outputs.formats import SCRIPTED_PROVIDER
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.shell.errors import CommandError
from alisio.shell.lab.request import Caps, ExecutorKind, LabMode

if TYPE_CHECKING:
    from alisio.core.lab.comparisons.variants import VariantsPlan
    from alisio.core.lab.suites.suite import Task
    from alisio.shell.config_home import LoadedConfig
    from alisio.shell.lab.plans import ProviderPlan
    from alisio.shell.lab.request import LabRequest
    from alisio.shell.lab.run_one import Arm

__all__ = ["FLAG_RATES", "CapState", "arm_rates", "check_spend", "priced_arms", "run_cost"]

FLAG_RATES = "--input-rate/--output-rate"
"""What a report says its rates came from when the flags gave them."""


def arm_rates(
    flags: Rates | None, prices: tuple[ModelPrices, ...], model: str, source: str
) -> tuple[Rates | None, str | None]:
    """The rates of an arm asking ``model``, and where they came from (``source``: the config file's name)."""
    if flags is not None:
        return flags, FLAG_RATES
    rates = prices_for(prices, model)
    if rates is None:
        return None, None
    return rates, f"{source} [{table_name(model)}]"


def _source(loaded: LoadedConfig | None) -> str:
    return str(loaded.path) if loaded is not None else "config.toml"


def _prices(loaded: LoadedConfig | None) -> tuple[ModelPrices, ...]:
    return loaded.config.prices if loaded is not None else ()


def priced_arms(
    arms: tuple[Arm, ...], request: LabRequest, loaded: LoadedConfig | None, plan: ProviderPlan
) -> tuple[Arm, ...]:
    """Each arm with its rates and where they came from (the arm's model, else the plan's)."""
    out = []
    for arm in arms:
        rates, source = arm_rates(request.rates, _prices(loaded), arm.model or plan.model, _source(loaded))
        out.append(dataclasses.replace(arm, rates=rates, rates_from=source))
    return tuple(out)


def check_spend(
    request: LabRequest,
    plan: ProviderPlan,
    loaded: LoadedConfig | None,
    variants: VariantsPlan | None,
    tasks: Sequence[Task],
) -> None:
    """Refuse, before anything runs, a task's ``maxCostUsd`` without prices for a model, and a cap that could
    not be enforced (see the module docstring).

    Raises:
        CommandError: one line naming the task and field, or the flag, and why; nothing was run.
    """
    models = {plan.model, *(v.model for v in (variants.variants if variants else ()) if v.model)}
    unpriced = sorted(m for m in models if arm_rates(request.rates, _prices(loaded), m, "")[0] is None)
    costly = [task.id for task in tasks if task.budget.max_cost_usd is not None]
    if costly and unpriced:
        raise CommandError(
            f"task {costly[0]}: budget.maxCostUsd needs prices for the model {unpriced[0]} (a "
            f"[{table_name(unpriced[0])}] table in {_source(loaded)}, or --input-rate and --output-rate); "
            "nothing was run"
        )
    caps = request.caps
    if not caps.any:
        return
    flag = caps.flag
    if request.mode is LabMode.REPLAY:
        raise CommandError(f"{flag}: a replay spends nothing (its tokens are recorded ones): nothing to cap")
    if plan.id == SCRIPTED_PROVIDER:
        raise CommandError(
            f"{flag}: the scripted provider reports no real usage, so the cap cannot be enforced"
        )
    if request.executor is ExecutorKind.RAY:
        raise CommandError(
            f"{flag} is not supported with --executor ray yet (run on this machine); nothing was run"
        )
    if caps.max_cost_usd is not None and unpriced:
        raise CommandError(
            f"--max-cost-usd: no rates for the model {unpriced[0]} (give --input-rate and --output-rate, or a "
            f"[{table_name(unpriced[0])}] table in {_source(loaded)}); nothing was run"
        )


def run_cost(record: RunRecord, rates: Rates | None) -> float | None:
    """The main-loop cost of one finished run at ``rates`` (``None``: no rates, or no usage reported)."""
    m = record.measured
    if rates is None:
        return None
    return cost_usd(
        rates,
        m.input_tokens,
        m.output_tokens,
        cached_input=m.cached_input_tokens,
        cache_write=m.cache_write_input_tokens,
        reasoning=m.reasoning_tokens,
    )


@dataclass
class CapState:
    """The running totals of a command's finished runs against its caps (``add`` is called on the thread that
    ran each run, so it locks)."""

    caps: Caps
    rates: dict[str | None, Rates | None]
    """Each arm (variant id, ``None`` for a plain run) to its rates."""
    tokens: int = 0
    cost: float = 0.0
    reached: str | None = None
    """The flag of the cap that stopped the command (``--max-cost-usd``), once one did."""
    line: str | None = None
    """Why it stopped, the loop's line."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, record: RunRecord) -> str | None:
        """Count a finished run; the line saying why no new run may start, once a cap is reached."""
        m = record.measured
        with self.lock:
            if m.input_tokens is not None and m.output_tokens is not None:
                self.tokens += m.input_tokens + m.output_tokens
            cost = run_cost(record, self.rates.get(record.variant))
            if cost is not None:
                self.cost += cost
            # a run the provider answered to the end without any usage (not one cut at a budget, or errored)
            answered = record.status in (RunStatus.PASS, RunStatus.FAIL)
            unreported = answered and m.turns > 0 and m.input_tokens is None and m.output_tokens is None
            if self.reached is None and self.caps.any:
                self.reached, self.line = self._reached(unreported)
                return self.line
            return None

    def _reached(self, unreported: bool) -> tuple[str | None, str | None]:
        caps = self.caps
        if caps.max_total_tokens is not None and self.tokens >= caps.max_total_tokens:
            line = f"--max-total-tokens {caps.max_total_tokens} reached: {self.tokens:,} tokens"
            return "--max-total-tokens", line
        if caps.max_cost_usd is not None and self.cost >= caps.max_cost_usd:
            return "--max-cost-usd", f"--max-cost-usd {caps.max_cost_usd:g} reached: {self.cost:.4f} USD"
        if unreported:
            line = f"a run reported no token usage, so {caps.flag} cannot be enforced on this provider"
            return caps.flag, line
        return None, None
