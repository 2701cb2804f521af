"""Properties of an ``eval variants`` plan.json (``ManifestVariant``): it round-trips, a resume compares each
variant (its id and order, configuration hash, model, agent) instead of the job's one configuration hash, and
a kept record is checked against its own variant's hash."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Success

from alisio.core.lab.plans.manifest import (
    ManifestVariant,
    RunManifest,
    decode_manifest,
    differences,
    encode_manifest,
    measurement_differences,
)
from alisio.core.lab.runs.records import RunRecord
from tests.property.strategies_report import run_records
from tests.property.test_manifest import _hash, _task_id, manifests

_variant = st.builds(
    ManifestVariant,
    id=_task_id,
    config_hash=_hash,
    model=st.none() | st.sampled_from(["m", "m2"]),
    agent=st.none() | st.sampled_from(["fake", "other"]),
)
_variants = st.lists(_variant, min_size=2, max_size=4, unique_by=lambda v: v.id).map(tuple)


def _job(manifest: RunManifest, variants: tuple[ManifestVariant, ...]) -> RunManifest:
    return msgspec.structs.replace(
        manifest, variants=variants, variants_file="/abs/compare.json", config_hash=variants[0].config_hash
    )


@given(manifests, _variants)
def test_a_variants_plan_round_trips_and_differs_from_itself_in_nothing(
    manifest: RunManifest, variants: tuple[ManifestVariant, ...]
) -> None:
    job = _job(manifest, variants)
    assert decode_manifest(encode_manifest(job), "plan.json") == Success(job)
    assert differences(job, job) == ()


@given(manifests, _variants, st.data())
def test_each_variant_that_changed_is_named_once_per_field(
    manifest: RunManifest, variants: tuple[ManifestVariant, ...], data: st.DataObject
) -> None:
    """The same ids in the same order: one line per variant and field that changed (hash, model, agent),
    naming the variant; the job's own configuration hash (the baseline's) is never a line of its own."""
    now = tuple(
        msgspec.structs.replace(
            v,
            config_hash=data.draw(st.sampled_from([v.config_hash, "f" * 64])),
            model=data.draw(st.sampled_from([v.model, "m3"])),
            agent=data.draw(st.sampled_from([v.agent, "third"])),
        )
        for v in variants
    )
    lines = differences(_job(manifest, variants), _job(manifest, now))
    expected = [
        f"variant {old.id}'s {what}"
        for old, new in zip(variants, now, strict=True)
        for field, what in (("config_hash", "configuration hash"), ("model", "model"), ("agent", "agent"))
        if getattr(old, field) != getattr(new, field)
    ]
    assert len(lines) == len(expected)
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith(start) and " when the run started, " in line and line.endswith(" now")
    assert not any(line.startswith("the configuration hash") for line in lines)


@given(manifests, _variants, _variants)
def test_other_variants_are_one_line_naming_both_lists(
    manifest: RunManifest, before: tuple[ManifestVariant, ...], after: tuple[ManifestVariant, ...]
) -> None:
    lines = differences(_job(manifest, before), _job(manifest, after))
    ids = ([v.id for v in before], [v.id for v in after])
    if ids[0] == ids[1]:
        assert not any(line.startswith("the variants differ") for line in lines)
    else:
        assert lines == (
            f"the variants differ: {', '.join(ids[0])} when the run started, {', '.join(ids[1])} now",
        )


@settings(max_examples=40)  # each example draws whole run records
@given(manifests, _variants, st.lists(run_records(lean=True), min_size=1, max_size=4), st.data())
def test_a_kept_record_is_checked_against_its_own_variants_hash(
    manifest: RunManifest,
    variants: tuple[ManifestVariant, ...],
    records: list[RunRecord],
    data: st.DataObject,
) -> None:
    """A record measured under its variant's hash is never foreign, whatever the baseline's; one measured
    under another hash is, in the one line that counts them."""
    job = _job(manifest, variants)
    tagged = []
    for record in records:
        variant = data.draw(st.sampled_from(variants))
        own = data.draw(st.booleans())
        tagged.append(
            msgspec.structs.replace(
                record, variant=variant.id, config_hash=variant.config_hash if own else "0" * 64
            )
        )
    expected = {v.id: v.config_hash for v in variants}
    foreign = [r for r in tagged if r.config_hash != expected[r.variant or ""]]
    lines = [line for line in measurement_differences(job, job, tagged) if "measured configuration" in line]
    if not foreign:
        assert lines == []
    else:
        (line,) = lines
        first = foreign[0]
        assert line.startswith(f"{len(foreign)} record") and f"of {first.variant}/runs.jsonl" in line
