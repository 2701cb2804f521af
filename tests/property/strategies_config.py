"""Hypothesis strategies for ``alisio.core.harness.config``: valid values per measured key, whole configurations, junk.

Bounds are written by hand from the ``Meta`` constraints (Hypothesis does not read them, msgspec #177).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from alisio.core.harness.config import (
    HARNESS_TOOLS,
    AgentConfig,
    Compaction,
    Effort,
    LabSettings,
    Limits,
    MeasuredConfig,
    ProviderSettings,
    Reasoning,
    Retries,
    Sampling,
    ToolSettings,
)
from alisio.core.harness.presets import PRESET_NAMES
from alisio.core.harness.sandbox import SandboxKind

chars = st.integers(min_value=1, max_value=100_000_000)
tokens = st.integers(min_value=1, max_value=10_000_000)
millis = st.integers(min_value=1, max_value=86_400_000)
calls_per_turn = st.integers(min_value=1, max_value=100_000)
thresholds = st.floats(min_value=0.0, max_value=1.0, exclude_min=True, allow_nan=False)
efforts: st.SearchStrategy[Effort | None] = st.sampled_from([None, "low", "medium", "high"])
texts = st.text(min_size=1, max_size=80)
temperatures = st.none() | st.floats(min_value=0.0, max_value=2.0, allow_nan=False)
top_ps = st.none() | st.floats(min_value=0.0, max_value=1.0, exclude_min=True, allow_nan=False)
seeds = st.none() | st.integers(min_value=0, max_value=(1 << 63) - 1)
agent_names = st.from_regex(r"\A[A-Za-z][A-Za-z0-9_-]{0,12}\Z")
tool_subsets = st.none() | st.lists(st.sampled_from(HARNESS_TOOLS), max_size=10).map(tuple)


def agent_bodies() -> st.SearchStrategy[dict[str, Any]]:
    """An ``[agents.NAME]`` table as TOML gives it."""
    return st.fixed_dictionaries(
        {"instructions": texts}, optional={"tools": st.lists(st.sampled_from(HARNESS_TOOLS), max_size=10)}
    )


retry_counts = st.integers(0, 20)
agent_tables = st.dictionaries(agent_names, agent_bodies(), max_size=4)

VALUES: dict[str, st.SearchStrategy[Any]] = {
    "limits.maxContextChars": chars,
    "limits.maxOutputTokens": tokens,
    "compaction.threshold": thresholds,
    "reasoning.effort": efforts,
    "sampling.temperature": temperatures,
    "sampling.topP": top_ps,
    "sampling.seed": seeds,
    "tools.bashOutputLimitChars": chars,
    "tools.bashTimeoutMs": millis,
    "tools.readMaxChars": chars,
    "tools.maxCallsPerTurn": calls_per_turn,
    "tools.textCalls": st.sampled_from(["off", "parse"]),
    "retries.max": retry_counts,
    "instructions": texts,
    "cache": st.booleans(),
    "agents": agent_tables,
}
"""A valid override value for every measured key (the test checks these keys are exactly measured_keys())."""


@st.composite
def measured_configs(draw: st.DrawFn) -> MeasuredConfig:
    """Any valid measured configuration (agents in any order, tool subsets as written)."""
    names = draw(st.lists(agent_names, unique=True, max_size=4))
    agents = tuple(
        AgentConfig(name=name, instructions=draw(texts), tools=draw(tool_subsets)) for name in names
    )
    return MeasuredConfig(
        limits=Limits(max_context_chars=draw(chars), max_output_tokens=draw(tokens)),
        compaction=Compaction(threshold=draw(thresholds)),
        reasoning=Reasoning(effort=draw(efforts)),
        sampling=Sampling(temperature=draw(temperatures), top_p=draw(top_ps), seed=draw(seeds)),
        tools=ToolSettings(
            bash_output_limit_chars=draw(chars),
            bash_timeout_ms=draw(millis),
            read_max_chars=draw(chars),
            max_calls_per_turn=draw(calls_per_turn),
            text_calls=draw(st.sampled_from(["off", "parse"])),
        ),
        retries=Retries(max=draw(retry_counts)),
        instructions=draw(texts),
        cache=draw(st.booleans()),
        agents=agents,
    )


provider_settings = st.builds(
    ProviderSettings,
    id=st.sampled_from(["openai_compat", "scripted"]),
    base_url=st.none() | st.sampled_from(["http://localhost:8000/v1", "https://api.example.com/v1"]),
    model=st.none() | texts,
    api_key_env=st.none() | st.from_regex(r"\A[A-Z_][A-Z0-9_]{0,20}\Z"),
    max_concurrency=st.none() | st.integers(1, 1024),
    max_response_bytes=st.integers(min_value=1024, max_value=1 << 32),
    api=st.none() | st.sampled_from(["openai-chat", "openai-responses", "anthropic"]),
    rate_limit_give_up_ms=st.integers(min_value=1, max_value=86_400_000),
    preset=st.none() | st.sampled_from(PRESET_NAMES),
    headers=st.none()
    | st.dictionaries(
        st.from_regex(r"\AX-[A-Za-z]{1,8}\Z"),
        texts.filter(lambda t: "\n" not in t and "\r" not in t and "\x00" not in t),
        max_size=3,
    ),
    timeout_ms=st.none() | millis,
)
lab_settings = st.builds(
    LabSettings,
    jobs=st.none() | st.integers(1, 1024),
    sandbox=st.none() | st.sampled_from(SandboxKind),
    sandbox_processes=st.integers(16, 1 << 20),
    sandbox_file_bytes=st.integers(1 << 20, 1 << 50),
)

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=20)
    | st.sampled_from(["low", "read_file", "http://x", "OPENAI_API_KEY"])
)
_key_names = st.sampled_from(
    [
        *("provider", "limits", "compaction", "reasoning", "tools", "agents", "instructions", "threshold"),
        *("effort", "maxContextChars", "baseUrl", "apiKeyEnv", "model", "id", "reviewer", "bashTimeoutMs"),
        *("$", "a.b", "[0]"),
    ]
) | st.text(max_size=10)
junk = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_key_names, inner, max_size=5),
    max_leaves=12,
)
"""Anything tomllib (or a JSON compare file) could hand over, and more."""
junk_documents = st.dictionaries(_key_names, junk, max_size=6)
