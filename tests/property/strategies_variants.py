"""Generators for alisio.core.lab.comparisons.variants: variant ids, valid override tables, and compare.json documents."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.property.strategies_config import chars, thresholds, tokens

variant_ids = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,12}\Z")
variant_id_lists = st.lists(variant_ids, min_size=1, max_size=5, unique_by=str.lower)
"""Distinct (ignoring case) variant ids, baseline first."""

measured_overrides: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {},
    optional={
        "compaction.threshold": thresholds,
        "limits.maxContextChars": chars,
        "limits.maxOutputTokens": tokens,
        "reasoning.effort": st.sampled_from([None, "low", "medium", "high"]),
    },
)
"""Overrides of measured keys with valid values."""

not_measured_keys = st.sampled_from(
    ["provider.model", "provider.baseUrl", "provider.id", "provider", "plugins", "mcp.servers", "paths.data"]
)
"""Keys that do not enter the configuration hash."""


@st.composite
def compare_documents(draw: st.DrawFn, min_variants: int = 2) -> dict[str, Any]:
    """A valid compare.json as builtins: two or more variants with distinct ids and valid overrides."""
    ids = draw(st.lists(variant_ids, min_size=min_variants, max_size=4, unique_by=str.lower))
    variants = [{"id": variant_id, "overrides": draw(measured_overrides)} for variant_id in ids]
    return {"suite": draw(st.sampled_from(["smoke-coding", "calc-suite"])), "variants": variants}
