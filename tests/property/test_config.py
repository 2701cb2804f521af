"""Properties of ``alisio.core.harness.config``: parsing, the configuration hash, measured keys and variant overrides."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.pipeline import is_successful
from returns.result import Failure, Success

from alisio.core.errors import ConfigError
from alisio.core.harness.config import (
    DEFAULT_INSTRUCTIONS,
    HARNESS_TOOLS,
    AgentConfig,
    Config,
    MeasuredConfig,
    apply_overrides,
    config_hash,
    config_to_data,
    measured_keys,
    parse_config,
)
from tests.property.strategies_config import (
    VALUES,
    agent_tables,
    junk,
    junk_documents,
    lab_settings,
    measured_configs,
    provider_settings,
)

DEFAULT_HASH = config_hash(MeasuredConfig())


def _reversed(value: Any) -> Any:
    """The same document with every table's keys in reverse order."""
    if isinstance(value, Mapping):
        return {key: _reversed(value[key]) for key in reversed(list(value))}
    return value


def _error(result: Any) -> ConfigError:
    match result:
        case Failure(ConfigError() as error):
            return error
    raise AssertionError(f"expected a ConfigError, got {result!r}")


def _measured(data: Mapping[str, object]) -> MeasuredConfig:
    return parse_config(data, "config.toml").unwrap().measured


def test_an_empty_file_and_one_spelling_out_the_defaults_hash_the_same() -> None:
    """Writing every default explicitly is the same measured configuration as writing nothing."""
    spelled = {
        "instructions": DEFAULT_INSTRUCTIONS,
        "limits": {"maxContextChars": 200_000, "maxOutputTokens": 8192},
        "compaction": {"threshold": 0.8},
        "reasoning": {},
        "sampling": {},
        "tools": {
            "bashOutputLimitChars": 20_000,
            "bashTimeoutMs": 120_000,
            "readMaxChars": 100_000,
            "maxCallsPerTurn": 32,
            "textCalls": "off",
        },
        "agents": {},
    }
    assert config_hash(_measured({})) == config_hash(_measured(spelled)) == DEFAULT_HASH
    assert len(DEFAULT_HASH) == 64
    assert int(DEFAULT_HASH, 16) >= 0


def test_text_calls_enter_the_hash_only_when_parse() -> None:
    """tools.textCalls = "off" (the default) keeps every older hash; "parse" is another configuration; any
    other value is refused naming the key and the choices."""
    assert config_hash(_measured({"tools": {"textCalls": "off"}})) == DEFAULT_HASH
    assert config_hash(_measured({"tools": {"textCalls": "parse"}})) != DEFAULT_HASH
    error = parse_config({"tools": {"textCalls": "on"}}, "config.toml").failure()
    assert str(error) == "config.toml: tools.textCalls: 'on' is not a text-calls mode (one of off, parse)"


def test_an_integer_threshold_is_the_same_value_as_the_float() -> None:
    """TOML ``threshold = 1`` and ``threshold = 1.0`` are one measured value."""
    assert config_hash(_measured({"compaction": {"threshold": 1}})) == config_hash(
        _measured({"compaction": {"threshold": 1.0}})
    )


@given(measured_configs())
def test_the_hash_ignores_key_order_and_spelled_defaults(measured: MeasuredConfig) -> None:
    """Reordering every table of the file, or writing the defaults out, leaves the hash unchanged."""
    data = config_to_data(Config(measured=measured))
    assert config_hash(_measured(_reversed(data))) == config_hash(_measured(data)) == config_hash(measured)


@given(measured_configs(), st.randoms(use_true_random=False))
def test_agent_and_tool_order_never_change_the_hash(measured: MeasuredConfig, rng: Any) -> None:
    """Agents are a set by name and a tool subset a set: the order they are written in is not measured."""
    agents = list(measured.agents)
    rng.shuffle(agents)
    shuffled = tuple(
        msgspec.structs.replace(
            agent, tools=None if agent.tools is None else tuple(reversed(agent.tools * 2))
        )
        for agent in agents
    )
    assert config_hash(msgspec.structs.replace(measured, agents=shuffled)) == config_hash(measured)


@given(measured_configs(), st.data())
def test_changing_any_measured_value_changes_the_hash(measured: MeasuredConfig, data: st.DataObject) -> None:
    """An override that changes the (canonical) measured configuration changes its hash, and only then."""
    key = data.draw(st.sampled_from(measured_keys()))
    changed = apply_overrides(measured, {key: data.draw(VALUES[key])}, "compare.json").unwrap()
    canonical = _measured(config_to_data(Config(measured=measured)))
    same = config_to_data(Config(measured=changed)) == config_to_data(Config(measured=canonical))
    assert (config_hash(changed) == config_hash(measured)) == same


@given(measured_configs(), provider_settings, provider_settings, lab_settings, lab_settings)
def test_the_provider_never_enters_the_hash(
    measured: MeasuredConfig, one: Any, other: Any, lab_one: Any, lab_other: Any
) -> None:
    """Two files that differ only in [provider] and [lab] measure the same configuration."""
    first = parse_config(
        config_to_data(Config(provider=one, measured=measured, lab=lab_one)), "a.toml"
    ).unwrap()
    second = parse_config(
        config_to_data(Config(provider=other, measured=measured, lab=lab_other)), "b.toml"
    ).unwrap()
    assert (first.provider, first.lab) == (one, lab_one)
    assert (second.provider, second.lab) == (other, lab_other)
    assert config_hash(first.measured) == config_hash(second.measured) == config_hash(measured)


@given(measured_configs(), provider_settings, lab_settings)
def test_config_round_trips_through_file_data_and_json(
    measured: MeasuredConfig, provider: Any, lab: Any
) -> None:
    """parse_config(config_to_data(c)) gives c back, and a Config survives JSON encoding."""
    config = parse_config(
        config_to_data(Config(provider=provider, measured=measured, lab=lab)), "c.toml"
    ).unwrap()
    assert parse_config(config_to_data(config), "c.toml") == Success(config)
    assert msgspec.json.decode(msgspec.json.encode(config), type=Config) == config
    assert config_hash(config.measured) == config_hash(measured)


def test_measured_keys_are_derived_from_the_structs() -> None:
    """The measured keys are the dotted camelCase keys users write, and the provider is not among them."""
    assert measured_keys() == (
        "limits.maxContextChars",
        "limits.maxOutputTokens",
        "compaction.threshold",
        "reasoning.effort",
        "sampling.temperature",
        "sampling.topP",
        "sampling.seed",
        "tools.bashOutputLimitChars",
        "tools.bashTimeoutMs",
        "tools.readMaxChars",
        "tools.maxCallsPerTurn",
        "tools.textCalls",
        "retries.max",
        "instructions",
        "cache",
        "agents",
    )
    assert set(VALUES) == set(measured_keys())


@given(measured_configs(), st.data())
def test_every_measured_key_is_an_accepted_override(measured: MeasuredConfig, data: st.DataObject) -> None:
    """Each measured key is accepted with any valid value, and lands where parse_config would put it."""
    key = data.draw(st.sampled_from(measured_keys()))
    value = data.draw(VALUES[key])
    changed = apply_overrides(measured, {key: value}, "compare.json").unwrap()
    section, _, name = key.partition(".")
    expected = _measured({key: value} if not name else {section: {name: value}})
    written, wanted = (config_to_data(Config(measured=m))[section] for m in (changed, expected))
    if name:
        assert isinstance(written, dict)
        assert isinstance(wanted, dict)
        assert written.get(name) == wanted.get(name)
    else:
        assert written == wanted


@given(st.text(max_size=30) | st.sampled_from(["limits", "provider", "provider.model", "agents.x.tools"]))
def test_keys_outside_the_measured_configuration_are_refused(key: str) -> None:
    """apply_overrides accepts a key exactly when it is in measured_keys()."""
    result = apply_overrides(MeasuredConfig(), {key: 1}, "compare.json variant v")
    if key in measured_keys():
        assert is_successful(result) or _error(result).key == key
    else:
        error = _error(result)
        assert error.key == key
        assert error.source == "compare.json variant v"


@pytest.mark.parametrize("key", ["provider.model", "provider.baseUrl", "provider.apiKeyEnv", "provider"])
def test_a_provider_override_says_it_is_not_measured_and_points_to_model(key: str) -> None:
    """Comparing models is --model's job: a provider override explains why it is refused."""
    error = _error(apply_overrides(MeasuredConfig(), {key: "gpt"}, "compare.json"))
    assert error.key == key
    assert "does not enter the configuration hash" in error.message
    assert "--model" in error.message


@pytest.mark.parametrize(
    ("overrides", "key", "fragment"),
    [
        ({"compaction.threshold": 1.5}, "compaction.threshold", "<= 1.0"),
        ({"compaction.threshold": 0}, "compaction.threshold", "> 0.0"),
        ({"compaction.threshold": "0.6"}, "compaction.threshold", "expected a number, got a string"),
        ({"limits.maxContextChars": True}, "limits.maxContextChars", "got a boolean"),
        ({"reasoning.effort": "max"}, "reasoning.effort", "one of low, medium, high"),
        (
            {"agents": {"r": {"instructions": "x", "tools": ["rm"]}}},
            "agents.r.tools[0]",
            "not a harness tool",
        ),
        ({"compaction.treshold": 0.6}, "compaction.treshold", "did you mean compaction.threshold?"),
    ],
)
def test_a_wrong_override_value_names_the_key(overrides: dict[str, object], key: str, fragment: str) -> None:
    """A mistyped or out-of-range override is refused naming its key and what was expected."""
    error = _error(apply_overrides(MeasuredConfig(), overrides, "compare.json variant v"))
    assert (error.key, error.source) == (key, "compare.json variant v")
    assert fragment in error.message


def test_overrides_apply_the_values_given() -> None:
    """An override sets exactly the value written, and the rest stays."""
    base = _measured({"limits": {"maxOutputTokens": 1000}})
    changed = apply_overrides(
        base,
        {
            "compaction.threshold": 0.6,
            "reasoning.effort": "high",
            "agents": {"r": {"instructions": "Review."}},
        },
        "c",
    ).unwrap()
    assert changed.compaction.threshold == 0.6
    assert changed.reasoning.effort == "high"
    assert changed.limits.max_output_tokens == 1000
    assert changed.agents == (AgentConfig(name="r", instructions="Review."),)
    assert apply_overrides(changed, {"reasoning.effort": None}, "c").unwrap().reasoning.effort is None


@pytest.mark.parametrize(
    ("data", "key", "fragment"),
    [
        ({"limits": {"maxContextChar": 1}}, "limits.maxContextChar", "did you mean limits.maxContextChars?"),
        ({"plugins": {}}, "plugins", "unknown key"),
        ({"limits": {"maxContextChars": 0}}, "limits.maxContextChars", ">= 1, got 0"),
        (
            {"limits": {"maxOutputTokens": "8k"}},
            "limits.maxOutputTokens",
            "expected an integer, got a string",
        ),
        ({"limits": 5}, "limits", "expected an object, got an integer"),
        ({"compaction": {"threshold": 0.0}}, "compaction.threshold", "> 0.0"),
        ({"tools": {"maxCallsPerTurn": 0}}, "tools.maxCallsPerTurn", ">= 1"),
        (
            {"agents": {"r": {"instructions": "x", "tools": ["bash", "shell"]}}},
            "agents.r.tools[1]",
            "'shell'",
        ),
        ({"agents": {"r": {}}}, "agents.r.instructions", "missing"),
        ({"agents": {"r": {"instruction": "x"}}}, "agents.r.instruction", "agents.NAME.instructions"),
        ({"agents": {"1st": {"instructions": "x"}}}, "agents.1st", "agent name"),
        ({"agents": []}, "agents", "[agents.NAME]"),
        ({"provider": {"baseUrl": "localhost:8000"}}, "provider.baseUrl", "http:// or https://"),
        ({"provider": {"apiKey": "sk-x"}}, "provider.apiKey", "provider.apiKeyEnv"),
        ({"instructions": ""}, "instructions", "length >= 1"),
    ],
)
def test_an_invalid_file_names_the_dotted_key(data: dict[str, object], key: str, fragment: str) -> None:
    """Each invalid value is reported with the file, the dotted key and what is wrong."""
    error = _error(parse_config(data, "/home/u/.config/alisio/config.toml"))
    assert error.key == key
    assert error.source == "/home/u/.config/alisio/config.toml"
    assert fragment in error.message
    assert str(error).startswith(f"/home/u/.config/alisio/config.toml: {key}: ")


def test_an_unknown_key_is_never_matched_to_a_table_name() -> None:
    """``limits.bad`` gets no "did you mean limits?": hints come from keys at the same depth only."""
    error = _error(parse_config({"limits": {"bad": 1}}, "config.toml"))
    assert (error.key, error.message) == ("limits.bad", "unknown key")


def test_a_key_pasted_into_api_key_env_is_never_echoed() -> None:
    """A user who writes the key itself where its variable name goes does not see it printed back."""
    error = _error(parse_config({"provider": {"apiKeyEnv": "sk-proj-SECRET123"}}, "config.toml"))
    assert error.key == "provider.apiKeyEnv"
    assert "SECRET123" not in str(error)


@given(agent_tables)
def test_agents_come_out_sorted_with_canonical_tool_subsets(tables: dict[str, Any]) -> None:
    """Parsed agents are sorted by name; a tool subset keeps harness order without duplicates."""
    agents = _measured({"agents": tables}).agents
    assert [agent.name for agent in agents] == sorted(tables)
    for agent in agents:
        written = tables[agent.name].get("tools")
        if written is None:
            assert agent.tools is None
        else:
            assert agent.tools == tuple(tool for tool in HARNESS_TOOLS if tool in written)


@given(junk_documents)
def test_parse_config_never_raises_on_junk(data: dict[Any, Any]) -> None:
    """Whatever the document holds, parse_config returns a Result; a failure names a source."""
    result = parse_config(data, "junk.toml")
    assert is_successful(result) or _error(result).source == "junk.toml"


@given(st.dictionaries(st.sampled_from(measured_keys()) | st.text(max_size=12), junk, max_size=4))
def test_apply_overrides_never_raises_on_junk(overrides: dict[str, Any]) -> None:
    """Whatever compare.json holds, apply_overrides returns a Result."""
    result = apply_overrides(MeasuredConfig(), overrides, "compare.json")
    assert is_successful(result) or _error(result).source == "compare.json"
