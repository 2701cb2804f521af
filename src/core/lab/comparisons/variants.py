"""``alisio eval variants``: the compare.json model, the interleaved run plan, and the comparison of the arms.

compare.json (human-written; unknown fields are errors)::

    {
      "suite": "smoke-coding",
      "variants": [
        {"id": "baseline", "overrides": {}},
        {"id": "early-compaction", "overrides": {"compaction.threshold": 0.6}}
      ]
    }

A variant may also name its own ``agent`` (an ``[agents.NAME]`` of config.toml, built-in or external),
``model`` (what an external agent asks the provider for): "same tasks, Codex against OpenCode", and
``faults`` (a ``--faults`` spec, or ``"none"``; it replaces the command's ``--faults``): "the same harness on
a clean and on a flaky provider" (the comparison then states each faulted arm's robustness).
``context`` (files and text added to its runs, ``alisio.core.lab.suites.context_spec``): "with and without AGENTS.md".

Rules this module keeps:

- ``parse_variants`` checks the whole file before the first run: no key repeated in one object (a decoder
  would keep the last one silently); at least two variants; each ``id`` is a
  letter or digit then letters, digits, ``_`` or ``-`` (it names the variant's report directory, so ids are
  also unique ignoring case); ``overrides`` (optional, default none) goes through
  ``alisio.core.harness.config.apply_overrides`` on the base configuration. A key that is not a measured key is rejected
  naming the variant, the key and why: ``provider.*``, plugins, MCP and paths do not enter the configuration
  hash (to compare models use ``--model``), and a misspelt key gets the closest measured key.
- The first variant is the baseline; every other variant is compared with it.
- ``suite`` must name the suite being run (its id or its directory name): ``check_suite``.
- ``interleave`` runs every variant over the same seeded plan of ``alisio.core.lab.suites.schedule.plan_runs``: for each
  (task, repetition) slot all variants run back to back, in the listed order on even slots and reversed on
  odd ones (A, B, then B, A...), so a drifting provider is spread over the arms instead of hitting one.
  Every variant gets exactly the same (task, repetition, seed) multiset; the same inputs give the same plan.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

import msgspec
from returns.result import Failure, Result, Success, safe

from alisio.core.base import Frozen
from alisio.core.errors import ConfigError, IncompatibleReports
from alisio.core.harness.config import MeasuredConfig, apply_overrides, config_hash
from alisio.core.harness.faults import FaultSpec, parse_faults, spec_text
from alisio.core.lab.comparisons.compare import Comparison, compare_reports
from alisio.core.lab.comparisons.robustness import Robustness, robustness_rows
from alisio.core.lab.comparisons.tradeoff import RateCostRow, rate_cost_rows
from alisio.core.lab.reports.naming import naming_brief
from alisio.core.lab.reports.report import Report
from alisio.core.lab.reports.seq_block import SequentialBlock
from alisio.core.lab.suites.context_spec import ContextSpec, parse_context
from alisio.core.lab.suites.schedule import RunSpec, ScheduleError, plan_runs
from alisio.core.shape import duplicate_keys

__all__ = [
    "VARIANTS_COMPARISON_SCHEMA_VERSION",
    "Override",
    "Variant",
    "VariantComparison",
    "VariantInfo",
    "VariantsComparison",
    "VariantsPlan",
    "check_suite",
    "compare_infos",
    "compare_variants",
    "describe_overrides",
    "interleave",
    "parse_variants",
]

T = TypeVar("T")

VARIANTS_COMPARISON_SCHEMA_VERSION = 1

_VARIANT_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_ID_RULE: Final = (
    "an id is a letter or digit, then letters, digits, '_' or '-' (at most 64 characters): it names the "
    "variant's report directory"
)
_FILE_FIELDS: Final = ("suite", "variants")
_VARIANT_FIELDS: Final = ("id", "overrides", "agent", "model", "faults", "context")
_Faults = tuple[bool, FaultSpec | None]
"""A variant's ``faults``: whether it gave its own, and the spec (``None``: none, ``"none"`` written)."""
_Pair = tuple[str, dict[str, Any], tuple[str | None, str | None], _Faults, ContextSpec | None]
"""A variant as checked: its id, its overrides, its agent and model (``None``: the command's), its faults,
its context."""
_NOT_MEASURED: Final = ("plugins", "mcp", "mcpServers", "paths")
"""Settings that never enter the configuration hash besides ``provider`` (which alisio.core.harness.config explains)."""


class Override(Frozen, frozen=True, kw_only=True):
    """One override as written: a measured key and its value as canonical JSON text."""

    key: str
    value: str
    """The value as JSON (``0.6``, ``"high"``, ``{"reviewer": {...}}``)."""


class Variant(Frozen, frozen=True, kw_only=True):
    """One arm: its id, its overrides as written, and the configuration they give."""

    id: str
    overrides: tuple[Override, ...]
    measured: MeasuredConfig
    """The base configuration with the overrides applied."""
    agent: str | None = None
    """The agent this variant's runs use (``None``: ``--agent``, else each task's)."""
    model: str | None = None
    """The model this variant's agent asks for (``None``: the configured one); an external agent's only."""
    own_faults: bool = False
    """Whether the variant gives its own ``faults`` (else the command's ``--faults`` apply)."""
    faults: FaultSpec | None = None
    """The variant's own injected provider faults (``"faults": "none"``: a clean arm); read with
    ``own_faults``."""
    context: ContextSpec | None = None
    """The files and text this variant's runs get (``alisio.core.lab.suites.context_spec``); ``None``: none. Its paths
    are relative to compare.json's directory; the shell reads them before the first run."""

    @property
    def config_hash(self) -> str:
        """The configuration hash this arm's report carries."""
        return config_hash(self.measured)


class VariantsPlan(Frozen, frozen=True, kw_only=True):
    """A valid compare.json: the suite it names and two or more variants, the first being the baseline."""

    suite: str
    variants: tuple[Variant, ...]
    warnings: tuple[str, ...] = ()
    """E.g. two variants with the same configuration hash (an A/A comparison: only variance separates them)."""


class VariantInfo(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """A variant as comparison.json records it."""

    id: str
    config_hash: str
    overrides: tuple[Override, ...]
    agent: str | None = None
    """The agent (and script) its report names, in a few words (``alisio.core.lab.reports.naming.naming_brief``);
    ``None`` in a comparison.json written before it was recorded."""
    model: str | None = None
    """The variant's own ``model`` (``None``: the command's)."""


class VariantComparison(Frozen, frozen=True, kw_only=True):
    """The baseline against one candidate variant (``alisio.core.lab.comparisons.compare``'s Comparison)."""

    baseline: str
    candidate: str
    comparison: Comparison


class VariantsComparison(Frozen, frozen=True, kw_only=True):
    """comparison.json of ``eval variants``: the variants, and the baseline compared with each other one."""

    schema_version: int = VARIANTS_COMPARISON_SCHEMA_VERSION
    suite_id: str
    baseline: str
    """The id of the first variant, which every other one is compared with."""
    variants: tuple[VariantInfo, ...]
    comparisons: tuple[VariantComparison, ...]
    sequential: SequentialBlock | None = None
    """``--sequential``: the design and each task's stop (the candidate's report's block); its decisions are
    the valid ones, the fixed-k verdicts of ``comparisons`` peek."""
    rate_cost: tuple[RateCostRow, ...] = ()
    """Each variant's success rate against its cost per success over the tasks all judged, and whether another
    variant beats it on both (``alisio.core.lab.comparisons.tradeoff``)."""
    robustness: tuple[Robustness, ...] = ()
    """Each faulted variant's success rate relative to the first clean one's, paired by task
    (``alisio.core.lab.comparisons.robustness``); empty without both a clean and a faulted variant."""


# --- parsing -------------------------------------------------------------------------------------------------

_decode_json = safe((msgspec.DecodeError, RecursionError))(msgspec.json.Decoder().decode)
_VALUE_ENCODER: Final = msgspec.json.Encoder(order="deterministic")


def _collect(results: Iterable[Result[T, ConfigError]]) -> Result[tuple[T, ...], ConfigError]:
    """All values in order, or the first failure."""
    start: Result[tuple[T, ...], ConfigError] = Success(())
    return functools.reduce(
        lambda acc, item: acc.bind(lambda done: item.map(lambda v: (*done, v))), results, start
    )


def _unknown_fields(
    table: Mapping[str, Any], known: Sequence[str], where: str, source: str
) -> ConfigError | None:
    for name in table:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]}? " if close else ""
            key = f"{where}.{name}" if where else name
            message = f"unknown field ({hint}expected {', '.join(known)})"
            return ConfigError(source=source, key=key, message=message)
    return None


def _choice(
    raw: dict[str, Any], where: str, source: str
) -> Result[tuple[str | None, str | None], ConfigError]:
    """The variant's ``agent`` and ``model``: each a non-empty string when given."""
    for name in ("agent", "model"):
        value = raw.get(name)
        if value is not None and (not isinstance(value, str) or not value):
            message = (
                "expected an agent of config.toml ([agents.NAME])"
                if name == "agent"
                else "expected a model name"
            )
            return Failure(ConfigError(source=source, key=f"{where}.{name}", message=message))
    return Success((raw.get("agent"), raw.get("model")))


def _faults(raw: dict[str, Any], where: str, source: str) -> Result[_Faults, ConfigError]:
    """The variant's ``faults``: a ``--faults`` spec, or ``"none"`` for a clean arm."""
    if "faults" not in raw:
        return Success((False, None))
    value = raw["faults"]
    if not isinstance(value, str):
        message = 'expected a faults spec such as "429:0.1,cut:0.05,seed=7", or "none"'
        return Failure(ConfigError(source=source, key=f"{where}.faults", message=message))
    return (
        parse_faults(value)
        .map(lambda spec: (True, spec))
        .alt(lambda problem: ConfigError(source=source, key=f"{where}.faults", message=problem))
    )


def _check_variant(raw: object, index: int, source: str) -> Result[_Pair, ConfigError]:
    where = f"variants[{index}]"
    if not isinstance(raw, dict):
        return Failure(
            ConfigError(source=source, key=where, message="expected an object with id and overrides")
        )
    unknown = _unknown_fields(raw, _VARIANT_FIELDS, where, source)
    if unknown is not None:
        return Failure(unknown)
    variant_id = raw.get("id")
    if variant_id is None:
        return Failure(
            ConfigError(source=source, key=f"{where}.id", message="missing (every variant has an id)")
        )
    if not isinstance(variant_id, str) or not _VARIANT_ID.fullmatch(variant_id):
        shown = _VALUE_ENCODER.encode(variant_id).decode()[:70]
        return Failure(ConfigError(source=source, key=f"{where}.id", message=f"{_ID_RULE}, got {shown}"))
    overrides = raw.get("overrides", {})
    if not isinstance(overrides, dict):
        message = 'expected an object of measured keys to values, e.g. {"compaction.threshold": 0.6}'
        return Failure(ConfigError(source=source, key=f"{where}.overrides", message=message))
    context: Result[ContextSpec | None, ConfigError] = Success(None)
    if raw.get("context") is not None:
        context = parse_context(raw["context"], f"{source}: variant {variant_id}")
    return _choice(raw, where, source).bind(
        lambda choice: _faults(raw, where, source).bind(
            lambda faults: context.map(lambda spec: (variant_id, overrides, choice, faults, spec))
        )
    )


def _check_ids(pairs: tuple[_Pair, ...], source: str) -> Result[None, ConfigError]:
    seen: dict[str, int] = {}
    for index, (variant_id, *_) in enumerate(pairs):
        first = seen.setdefault(variant_id.lower(), index)
        if first != index:
            message = (
                f"{variant_id!r} repeats the id of variants[{first}] (ids name report directories, so they "
                "must differ ignoring case)"
            )
            return Failure(ConfigError(source=source, key=f"variants[{index}].id", message=message))
    return Success(None)


def _check_file(raw: object, source: str) -> Result[tuple[str, tuple[_Pair, ...]], ConfigError]:
    if not isinstance(raw, dict):
        return Failure(
            ConfigError(source=source, key="", message="expected a JSON object with suite and variants")
        )
    unknown = _unknown_fields(raw, _FILE_FIELDS, "", source)
    if unknown is not None:
        return Failure(unknown)
    suite, variants = raw.get("suite"), raw.get("variants")
    if not isinstance(suite, str) or not suite:
        message = "missing" if suite is None else "expected the suite id, a non-empty string"
        return Failure(ConfigError(source=source, key="suite", message=message))
    if not isinstance(variants, list):
        message = "missing" if variants is None else "expected an array of variants"
        return Failure(ConfigError(source=source, key="variants", message=message))
    if len(variants) < 2:
        message = f"at least two variants are needed (the first is the baseline), got {len(variants)}"
        return Failure(ConfigError(source=source, key="variants", message=message))
    return (
        _collect(_check_variant(item, index, source) for index, item in enumerate(variants))
        .bind(lambda pairs: _check_ids(pairs, source).map(lambda _: pairs))
        .map(lambda pairs: (suite, pairs))
    )


def _no_duplicate_keys(raw: object, data: bytes, source: str) -> Result[object, ConfigError]:
    """``raw`` when no object of the file repeats a key; else the first repeat, naming its variant.

    A decoder keeps the last of two equal keys: ``{"compaction.threshold": 0.6, "compaction.threshold": 0.9}``
    would run 0.9 while the author reads 0.6.
    """
    repeated = duplicate_keys(data)
    if not repeated:
        return Success(raw)
    path, message = repeated[0]
    key = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path).lstrip(".")
    variants = raw.get("variants") if isinstance(raw, dict) else None
    index = path[1] if len(path) > 2 and path[0] == "variants" and isinstance(path[1], int) else None
    variant = variants[index] if index is not None and isinstance(variants, list) else None
    variant_id = variant.get("id") if isinstance(variant, dict) else None
    if isinstance(variant_id, str) and path[2:3] != ("id",):
        message = f"{message} in variant {_VALUE_ENCODER.encode(variant_id).decode()[:70]}"
    more = f" (and {len(repeated) - 1} more)" if len(repeated) > 1 else ""
    return Failure(ConfigError(source=source, key=key, message=message + more))


def _not_measured(overrides: Mapping[str, Any], source: str) -> Result[None, ConfigError]:
    for key in overrides:
        head = key.partition(".")[0]
        if head in _NOT_MEASURED:
            message = f"does not enter the configuration hash ({head} is not measured), so no variant may override it"
            return Failure(ConfigError(source=source, key=key, message=message))
    return Success(None)


def _variant(
    variant_id: str,
    overrides: dict[str, Any],
    choice: tuple[str | None, str | None],
    faults: _Faults,
    context: ContextSpec | None,
    base: MeasuredConfig,
    source: str,
) -> Result[Variant, ConfigError]:
    where = f"{source}: variant {variant_id}"
    written = tuple(
        Override(key=key, value=_VALUE_ENCODER.encode(value).decode()) for key, value in overrides.items()
    )
    return (
        _not_measured(overrides, where)
        .bind(lambda _: apply_overrides(base, overrides, where))
        .map(
            lambda measured: Variant(
                id=variant_id,
                overrides=written,
                measured=measured,
                agent=choice[0],
                model=choice[1],
                own_faults=faults[0],
                faults=faults[1],
                context=context,
            )
        )
    )


def _same_hash_warnings(variants: tuple[Variant, ...]) -> tuple[str, ...]:
    first: dict[str, str] = {}
    out: list[str] = []
    for variant in variants:
        faults = spec_text(variant.faults) if variant.own_faults else "command"
        context = _VALUE_ENCODER.encode(variant.context).decode() if variant.context is not None else ""
        earlier = first.setdefault(
            f"{variant.config_hash} {variant.agent} {variant.model} {faults} {context}", variant.id
        )
        if earlier != variant.id:
            out.append(
                f"variants {earlier} and {variant.id} have the same configuration (hash "
                f"{variant.config_hash[:16]}): only run-to-run variance separates them"
            )
    return tuple(out)


def parse_variants(data: bytes, source: str, base: MeasuredConfig) -> Result[VariantsPlan, ConfigError]:
    """Parse and validate compare.json, applying every variant's overrides to ``base``.

    Args:
        data: the file's bytes (JSON).
        source: the file name, shown in every error.
        base: the measured configuration of the user (config.toml), which each variant overrides.

    Returns:
        ``Success(VariantsPlan)``, or ``Failure(ConfigError)`` for the first problem: not JSON, a key repeated
        in one object (naming the key and its variant), an unknown
        field, a missing or empty ``suite``, fewer than two variants, an id that is not a safe directory
        name or repeats (ignoring case), an override key that is not measured (naming the variant, the key
        and why; ``provider.*`` says "to compare models use --model") or a value of the wrong type or range.
    """
    return (
        _decode_json(data)
        .alt(lambda error: ConfigError(source=source, key="", message=f"not valid JSON: {error}"))
        .bind(lambda raw: _no_duplicate_keys(raw, data, source))
        .bind(lambda raw: _check_file(raw, source))
        .bind(
            lambda checked: _collect(
                _variant(variant_id, overrides, choice, faults, context, base, source)
                for variant_id, overrides, choice, faults, context in checked[1]
            ).map(
                lambda variants: VariantsPlan(
                    suite=checked[0], variants=variants, warnings=_same_hash_warnings(variants)
                )
            )
        )
    )


def check_suite(
    plan: VariantsPlan, suite_id: str, directory_name: str, source: str
) -> Result[VariantsPlan, ConfigError]:
    """``plan`` when its ``suite`` names the suite being run (its id or directory name), else a ConfigError."""
    if plan.suite in (suite_id, directory_name):
        return Success(plan)
    message = f"names suite {plan.suite!r}, but the command runs suite {suite_id!r}; fix one of the two"
    return Failure(ConfigError(source=source, key="suite", message=message))


# --- the run plan ------------------------------------------------------------------------------------------


def interleave(
    variant_ids: Sequence[str], task_ids: Sequence[str], k: int, seed: int
) -> Result[tuple[RunSpec, ...], ScheduleError]:
    """Every variant over the same seeded plan, back to back per slot, alternating the order.

    Args:
        variant_ids: the variants in file order (distinct).
        task_ids, k, seed: as for ``alisio.core.lab.suites.schedule.plan_runs``, whose order gives the slots.

    Returns:
        ``len(variant_ids) * len(task_ids) * k`` specs: slot ``i`` of ``plan_runs`` once per variant, in
        ``variant_ids`` order for even ``i`` and reversed for odd ``i``; or ``Failure(ScheduleError)`` for a
        repeated variant id or whatever ``plan_runs`` refuses.
    """
    if len(set(variant_ids)) != len(variant_ids):
        return Failure(ScheduleError(message="a variant id is repeated"))
    forward, backward = tuple(variant_ids), tuple(reversed(variant_ids))
    return plan_runs(task_ids, k, seed).map(
        lambda slots: tuple(
            msgspec.structs.replace(slot, variant=variant)
            for index, slot in enumerate(slots)
            for variant in (forward if index % 2 == 0 else backward)
        )
    )


# --- comparing the arms ------------------------------------------------------------------------------------


def describe_overrides(overrides: Sequence[Override], model: str | None = None) -> str:
    """``compaction.threshold=0.6, limits.maxContextChars=60000``, ``model gpt-5``, or ``no overrides``."""
    given = ([f"model {model}"] if model is not None else []) + [f"{o.key}={o.value}" for o in overrides]
    return ", ".join(given) or "no overrides"


def compare_variants(
    variants: Sequence[Variant], reports: Sequence[Report]
) -> Result[VariantsComparison, IncompatibleReports]:
    """The first variant's report (the baseline) compared with each other variant's report.

    Args:
        variants: the variants, baseline first.
        reports: their reports, in the same order.

    Returns:
        The VariantsComparison, or ``Failure(IncompatibleReports)`` as ``alisio.core.lab.comparisons.compare.compare_reports``
        (reports of one ``eval variants`` command share their suite, so this means a bug upstream).
    """
    infos = tuple(
        VariantInfo(id=v.id, config_hash=v.config_hash, overrides=v.overrides, model=v.model)
        for v in variants
    )
    return compare_infos(infos, reports)


def compare_infos(
    variants: Sequence[VariantInfo], reports: Sequence[Report]
) -> Result[VariantsComparison, IncompatibleReports]:
    """``compare_variants`` of the variants as comparison.json records them (``eval merge`` has no
    configuration to build ``Variant``s from, only each variant's id, hash, model and overrides); each is named
    by the agent its report names."""
    infos = tuple(
        msgspec.structs.replace(v, agent=naming_brief(report.conditions))
        for v, report in zip(variants, reports, strict=True)
    )
    base, base_report = variants[0], reports[0]
    start: Result[tuple[VariantComparison, ...], IncompatibleReports] = Success(())
    compared = functools.reduce(
        lambda acc, pair: acc.bind(
            lambda done: compare_reports(base_report, pair[1]).map(
                lambda c: (*done, VariantComparison(baseline=base.id, candidate=pair[0].id, comparison=c))
            )
        ),
        zip(variants[1:], reports[1:], strict=True),
        start,
    )
    return compared.map(
        lambda comparisons: VariantsComparison(
            suite_id=base_report.conditions.suite_id,
            baseline=base.id,
            variants=infos,
            comparisons=comparisons,
            rate_cost=rate_cost_rows([(v.id, r) for v, r in zip(variants, reports, strict=True)]),
            robustness=robustness_rows([(v.id, r) for v, r in zip(variants, reports, strict=True)]),
        )
    )
