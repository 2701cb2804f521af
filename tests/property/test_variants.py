"""Properties of alisio.core.lab.comparisons.variants: compare.json validation, the interleaved plan, and the arms' comparison."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.errors import ConfigError
from alisio.core.harness.config import MeasuredConfig, apply_overrides, config_hash
from alisio.core.lab.comparisons.compare import compare_reports
from alisio.core.lab.comparisons.variants import (
    VariantsComparison,
    check_suite,
    compare_variants,
    interleave,
    parse_variants,
)
from alisio.core.lab.outputs.render_variants import render_variants_markdown, variant_progress_line
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.suites.schedule import plan_runs
from tests.property.strategies_config import junk, measured_configs
from tests.property.strategies_lab import ks, seeds, task_id_lists
from tests.property.strategies_report import conditions, task_runs
from tests.property.strategies_suite import dumps_repeating, objects_in
from tests.property.strategies_variants import (
    compare_documents,
    not_measured_keys,
    variant_id_lists,
    variant_ids,
)

BASE = MeasuredConfig()


def _parse(document: Any, base: MeasuredConfig = BASE) -> Any:
    return parse_variants(json.dumps(document).encode(), "compare.json", base)


def _error(document: Any) -> ConfigError:
    result = _parse(document)
    assert isinstance(result, Failure), result
    error: ConfigError = result.failure()
    return error


# --- interleave ------------------------------------------------------------------------------------------


@given(variant_id_lists, task_id_lists, ks, seeds)
def test_every_variant_gets_the_same_runs(variants: list[str], tasks: list[str], k: int, seed: int) -> None:
    """Each variant gets exactly the (task, repetition, seed) multiset of plan_runs, and nothing else."""
    plan = interleave(variants, tasks, k, seed).unwrap()
    expected = Counter((s.task_id, s.repetition, s.seed) for s in plan_runs(tasks, k, seed).unwrap())
    assert len(plan) == len(variants) * len(tasks) * k
    assert {s.variant for s in plan} <= set(variants)
    for variant in variants:
        assert Counter((s.task_id, s.repetition, s.seed) for s in plan if s.variant == variant) == expected


@given(variant_id_lists, task_id_lists, ks, seeds)
def test_slots_run_back_to_back_alternating(variants: list[str], tasks: list[str], k: int, seed: int) -> None:
    """Slot i of the seeded plan runs every variant back to back: listed order on even i, reversed on odd i."""
    plan = interleave(variants, tasks, k, seed).unwrap()
    slots = plan_runs(tasks, k, seed).unwrap()
    n = len(variants)
    for index, slot in enumerate(slots):
        group = plan[index * n : (index + 1) * n]
        assert {(s.task_id, s.repetition, s.seed) for s in group} == {
            (slot.task_id, slot.repetition, slot.seed)
        }
        order = [s.variant for s in group]
        assert order == (variants if index % 2 == 0 else variants[::-1])


def test_two_variants_alternate_ab_ba() -> None:
    """Two variants over one task, k = 4: A, B, then B, A, then A, B, then B, A."""
    plan = interleave(["A", "B"], ["t"], 4, 0).unwrap()
    assert [s.variant for s in plan] == ["A", "B", "B", "A", "A", "B", "B", "A"]


@given(variant_id_lists, task_id_lists, ks, seeds)
def test_interleave_is_deterministic(variants: list[str], tasks: list[str], k: int, seed: int) -> None:
    """The same variants, tasks, k and seed give the same plan."""
    assert interleave(variants, tasks, k, seed) == interleave(variants, tasks, k, seed)


@given(variant_id_lists, task_id_lists, ks, seeds)
def test_a_repeated_variant_is_refused(variants: list[str], tasks: list[str], k: int, seed: int) -> None:
    """A variant id listed twice is a ScheduleError, not a doubled arm."""
    assert isinstance(interleave([*variants, variants[0]], tasks, k, seed), Failure)


@given(variant_id_lists, task_id_lists, st.integers(max_value=0), seeds)
def test_interleave_keeps_plan_runs_refusals(
    variants: list[str], tasks: list[str], k: int, seed: int
) -> None:
    """k < 1 is refused as plan_runs refuses it."""
    assert isinstance(interleave(variants, tasks, k, seed), Failure)


# --- parse_variants --------------------------------------------------------------------------------------


@given(compare_documents(), measured_configs())
def test_a_valid_file_applies_each_variants_overrides(document: dict[str, Any], base: MeasuredConfig) -> None:
    """Each variant's configuration is apply_overrides of its overrides on the base, ids and order kept."""
    plan = _parse(document, base).unwrap()
    assert plan.suite == document["suite"]
    assert [v.id for v in plan.variants] == [v["id"] for v in document["variants"]]
    for variant, written in zip(plan.variants, document["variants"], strict=True):
        assert variant.measured == apply_overrides(base, written["overrides"], "x").unwrap()
        assert variant.config_hash == config_hash(variant.measured)
        assert [o.key for o in variant.overrides] == list(written["overrides"])
        assert [json.loads(o.value) for o in variant.overrides] == list(written["overrides"].values())


@given(compare_documents())
def test_equal_hashes_are_warned_about(document: dict[str, Any]) -> None:
    """A warning names each variant whose configuration hash repeats an earlier variant's."""
    plan = _parse(document).unwrap()
    repeats = len(plan.variants) - len({v.config_hash for v in plan.variants})
    assert len(plan.warnings) == repeats


def test_a_threshold_override_changes_the_hash() -> None:
    """compaction.threshold 0.6 against the default gives two configuration hashes and no warning."""
    document = {
        "suite": "s",
        "variants": [
            {"id": "baseline", "overrides": {}},
            {"id": "early", "overrides": {"compaction.threshold": 0.6}},
        ],
    }
    plan = _parse(document).unwrap()
    assert plan.variants[0].config_hash == config_hash(BASE)
    assert plan.variants[1].measured.compaction.threshold == 0.6
    assert plan.variants[0].config_hash != plan.variants[1].config_hash
    assert plan.warnings == ()


@given(compare_documents(), not_measured_keys, st.data())
def test_a_key_outside_the_hash_rejects_the_file(
    document: dict[str, Any], key: str, data: st.DataObject
) -> None:
    """A provider, plugin, MCP or path key in any variant rejects the file, naming the variant and the key."""
    index = data.draw(st.integers(0, len(document["variants"]) - 1))
    variant = document["variants"][index]
    variant["overrides"][key] = "x"
    error = _error(document)
    assert error.key == key
    assert error.source == f"compare.json: variant {variant['id']}"
    assert "does not enter the configuration hash" in error.message
    if key.startswith("provider"):
        assert "to compare models use --model" in error.message


@given(compare_documents(), st.data())
def test_a_repeated_key_rejects_the_file_naming_it(document: dict[str, Any], data: st.DataObject) -> None:
    """A key written twice in any object of compare.json (even an override with the same value) is refused
    naming the key, and the variant when it is inside one: the last value never silently wins."""
    target = data.draw(st.sampled_from(objects_in(document)))
    node = document
    for part in target:
        node = node[part]
    key = next(iter(node))
    text = dumps_repeating(document, target, node[key])
    result = parse_variants(text.encode(), "compare.json", BASE)
    assert isinstance(result, Failure), result
    error = result.failure()
    path = (*target, key)
    assert error.key == "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    assert error.message.startswith("duplicate key (only one value may be given)")
    if len(path) > 2 and path[2] != "id":
        assert f"in variant {json.dumps(document['variants'][path[1]]['id'])}" in error.message


def test_provider_model_message() -> None:
    """provider.model reads: file, variant, key, and "to compare models use --model"."""
    document = {
        "suite": "s",
        "variants": [{"id": "a"}, {"id": "gpt", "overrides": {"provider.model": "gpt-x"}}],
    }
    assert str(_error(document)) == (
        "compare.json: variant gpt: provider.model: does not enter the configuration hash; to compare models "
        "use --model"
    )


def test_a_misspelt_key_gets_a_suggestion() -> None:
    """compaction.treshold is unknown, with "did you mean compaction.threshold?"."""
    document = {
        "suite": "s",
        "variants": [{"id": "a"}, {"id": "b", "overrides": {"compaction.treshold": 0.6}}],
    }
    error = _error(document)
    assert (error.source, error.key) == ("compare.json: variant b", "compaction.treshold")
    assert error.message.startswith("unknown key (did you mean compaction.threshold?)")


def test_an_out_of_range_value_is_rejected() -> None:
    """compaction.threshold 1.5 is rejected naming the variant and the key."""
    document = {
        "suite": "s",
        "variants": [{"id": "a"}, {"id": "b", "overrides": {"compaction.threshold": 1.5}}],
    }
    error = _error(document)
    assert (error.source, error.key) == ("compare.json: variant b", "compaction.threshold")


@given(variant_ids)
def test_one_variant_is_not_enough(variant_id: str) -> None:
    """A single variant (nothing to compare) is rejected at variants."""
    error = _error({"suite": "s", "variants": [{"id": variant_id}]})
    assert error.key == "variants"
    assert "at least two variants" in error.message


@given(st.sampled_from(["", ".", "..", "../x", "a/b", "a b", "-a", "_a", "é", "a" * 65, "a.b"]))
def test_unsafe_ids_are_rejected(bad: str) -> None:
    """An id that is not a safe directory name is rejected at its path."""
    error = _error({"suite": "s", "variants": [{"id": "ok"}, {"id": bad}]})
    assert error.key == "variants[1].id"


@given(variant_ids)
def test_ids_must_differ_ignoring_case(variant_id: str) -> None:
    """Two ids equal ignoring case would share a report directory on some filesystems: rejected."""
    error = _error({"suite": "s", "variants": [{"id": variant_id}, {"id": variant_id.swapcase()}]})
    assert error.key == "variants[1].id"


@given(st.sampled_from(["variant", "name", "description"]), st.sampled_from(["top", "variant"]))
def test_unknown_fields_are_rejected(name: str, where: str) -> None:
    """An unknown field at the top or in a variant is an error naming it."""
    document: dict[str, Any] = {"suite": "s", "variants": [{"id": "a"}, {"id": "b"}]}
    (document if where == "top" else document["variants"][1])[name] = 1
    error = _error(document)
    assert error.key == (name if where == "top" else f"variants[1].{name}")
    assert error.message.startswith("unknown field")


@given(junk)
def test_any_json_gives_a_result(value: object) -> None:
    """Whatever JSON the file holds, parsing returns a Result and never raises."""
    assert isinstance(_parse(value), Success | Failure)


@given(st.binary(max_size=40))
def test_any_bytes_give_a_result(data: bytes) -> None:
    """Bytes that are not JSON are a ConfigError, never an exception."""
    assert isinstance(parse_variants(data, "compare.json", BASE), Success | Failure)


@given(compare_documents(), st.text(min_size=1, max_size=12))
def test_the_suite_must_match(document: dict[str, Any], other: str) -> None:
    """check_suite accepts the suite id or directory name compare.json names, and nothing else."""
    plan = _parse(document).unwrap()
    assert check_suite(plan, plan.suite, "dir", "f") == Success(plan)
    assert check_suite(plan, "id", plan.suite, "f") == Success(plan)
    if other != plan.suite:
        assert isinstance(check_suite(plan, other, other, "f"), Failure)


# --- the comparison of the arms -------------------------------------------------------------------------


def _records(variant: str, passes: int) -> list[RunRecord]:
    return [msgspec.structs.replace(r, variant=variant) for r in task_runs("alpha", passes, 5 - passes)]


def test_the_baseline_is_compared_with_each_other_variant() -> None:
    """Three variants give two comparisons, baseline first, each equal to compare_reports of the two reports."""
    document = {
        "suite": "demo",
        "variants": [
            {"id": "base"},
            {"id": "low", "overrides": {"compaction.threshold": 0.5}},
            {"id": "high", "overrides": {"limits.maxContextChars": 1000}},
        ],
    }
    plan = _parse(document).unwrap()
    reports = [
        build_report(_records(v.id, p), conditions()) for v, p in zip(plan.variants, (0, 5, 2), strict=True)
    ]
    result: VariantsComparison = compare_variants(plan.variants, reports).unwrap()
    assert result.baseline == "base"
    assert [(c.baseline, c.candidate) for c in result.comparisons] == [("base", "low"), ("base", "high")]
    assert result.comparisons[0].comparison == compare_reports(reports[0], reports[1]).unwrap()
    assert [t.outcome for t in result.comparisons[0].comparison.tasks] == ["improved"]
    assert [i.config_hash for i in result.variants] == [v.config_hash for v in plan.variants]
    markdown = render_variants_markdown(result)
    assert "## base → low: Comparison: demo 1.0.0" in markdown
    assert "## base → high: Comparison: demo 1.0.0" in markdown
    assert "| low | candidate | " in markdown and "compaction.threshold=0.5" in markdown


def test_progress_names_the_variant() -> None:
    """A variant's progress line reads [i/n] variant task rep r: status (...), r as in runs.jsonl."""
    record = _records("early-compaction", 5)[1]
    assert record.repetition == 1
    assert variant_progress_line(3, 20, record).startswith("[3/20] early-compaction alpha rep 1: pass (")
