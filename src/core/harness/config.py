"""The harness configuration: the provider, and the *measured* configuration a report's hash stands for.

``config.toml`` (camelCase keys, read by ``alisio.shell.config_home``) looks like::

    instructions = "..."            # the system prompt (default: DEFAULT_INSTRUCTIONS)
    cache = true                    # prompt-cache breakpoints where the api has them (Anthropic)

    [provider]                      # not measured: never in the hash, never a variant override
    preset = "deepseek"             # a known provider: its baseUrl, api and key variable (alisio...presets)
    api = "openai-chat"             # the wire format: one of alisio.core.harness.wire.APIS (default openai-chat)
    id = "openai_compat"            # a label recorded in events and reports (e.g. "deepseek"), not a format
    baseUrl = "http://localhost:8000/v1"
    model = "qwen2.5-coder"
    apiKeyEnv = "OPENAI_API_KEY"    # the NAME of the variable holding the key, never the key
    maxConcurrency = 4              # requests in flight to this endpoint at once (default: --jobs)
    maxResponseBytes = 33554432     # the largest response body read from the provider (32 MiB)
    rateLimitGiveUpMs = 120000      # stop the command once the endpoint refused every request this long
    timeoutMs = 300000              # the longest wait for the connection or the next bytes of an answer
    headers = { "X-Team" = "lab" }  # extra HTTP headers: not measured, never logged or stored

    [lab]                           # not measured either: how the lab runs, not what it measures
    jobs = 4                        # runs at once (default: 4 live, the number of CPUs for replay/scripted)
    sandbox = "bwrap"               # where commands run: none (default) | bwrap; its limits: lab_settings.py

    [limits]
    maxContextChars = 200000
    maxOutputTokens = 8192

    [compaction]
    threshold = 0.8                 # compact past threshold x limits.maxContextChars

    [reasoning]
    effort = "medium"               # low | medium | high; absent = not sent

    [sampling]                      # each absent = not sent (config_provider.Sampling)
    temperature = 0.2
    topP = 0.9
    seed = 7                        # openai-chat only

    [tools]
    bashOutputLimitChars = 20000
    bashTimeoutMs = 120000
    readMaxChars = 100000
    maxCallsPerTurn = 32            # tool calls past this many in one turn are refused, not run

    [retries]
    max = 4                         # retries of a failed model call (429, 5xx, network) after the first try

    [agents.reviewer]               # a main agent, picked with --agent reviewer
    instructions = "..."
    tools = ["read_file", "list_dir", "search"]

    [mcp.servers.docs]              # not measured: an MCP server given to every run (docs/mcp.md)
    command = ["python3", "/abs/path/docs_server.py"]

Rules this module keeps:
- every value is validated when parsed; a failure is a ``ConfigError`` naming the source and the dotted key;
- only ``MeasuredConfig`` enters ``config_hash``, hashed with every default filled in, so an empty file and a
  file spelling out the defaults hash the same, and changing a default is a measured change (``cache``, added
  later, enters only when off, so older hashes stay valid);
- ``measured_keys`` is derived from the Struct definitions, and ``apply_overrides`` accepts exactly those keys;
- values are canonical: agents sorted by name, an agent's tool subset deduplicated in harness order, so the
  order things are written in never changes the hash.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Final, Literal, TypeVar, get_args

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.errors import ConfigError
from alisio.core.harness.config_messages import suggestion, validation_error
from alisio.core.harness.config_provider import (
    AGENT_NAME_PATTERN,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_RETRIES,
    AgentName,
    CallsPerTurn,
    Effort,
    Fraction,
    NonEmptyText,
    PositiveChars,
    PositiveMs,
    PositiveTokens,
    ProviderSettings,
    Retries,
    Sampling,
)
from alisio.core.harness.config_provider import TomlInput as _Input
from alisio.core.harness.lab_settings import LabSettings
from alisio.core.harness.mcp import McpServer, mcp_config_data, parse_mcp_config
from alisio.core.harness.presets import PRESET_NAMES
from alisio.core.harness.prices import ModelPrices, parse_prices, prices_data
from alisio.core.harness.wire import APIS, DEFAULT_API, DEFAULT_API_KEY_ENVS, FORMAT_IDS

__all__ = [
    "DEFAULT_API_KEY_ENV",
    "DEFAULT_API_KEY_ENVS",
    "DEFAULT_INSTRUCTIONS",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_RETRIES",
    "HARNESS_TOOLS",
    "AgentConfig",
    "Compaction",
    "Config",
    "Effort",
    "LabSettings",
    "Limits",
    "MeasuredConfig",
    "ProviderSettings",
    "Reasoning",
    "Retries",
    "Sampling",
    "TextCallsMode",
    "ToolName",
    "ToolSettings",
    "apply_overrides",
    "config_hash",
    "config_to_data",
    "measured_keys",
    "parse_config",
]

T = TypeVar("T")

ToolName = Literal[
    "read_file", "list_dir", "search", "write_file", "edit_file", "bash", "fetch_url", "analyze"
]
"""The harness tools (a user-facing contract: tool-sequence rules and agent tool subsets name them)."""

TextCallsMode = Literal["off", "parse"]
"""``tools.textCalls``: what the loop does with tool calls a model wrote as text (see ``text_calls``)."""
HARNESS_TOOLS: Final[tuple[ToolName, ...]] = get_args(ToolName)

DEFAULT_API_KEY_ENV: Final = DEFAULT_API_KEY_ENVS[DEFAULT_API]

DEFAULT_INSTRUCTIONS: Final = """\
You are alisio, a coding agent working headless in a software project. The user gives you one task; complete \
it on your own with the tools below, then stop. Nobody can answer questions during the run, so when something \
is ambiguous choose the most reasonable interpretation and say so in your summary.

Tools (paths are relative to the workspace root; you cannot leave the workspace):
- list_dir, search, read_file: look around. Find the relevant code before changing anything.
- write_file: create a new file, or replace a file completely.
- edit_file: replace one exact, unique old_string in a file with new_string.
- bash: run a command (tests, linters, scripts) in the workspace.
- fetch_url: fetch a web page.
- analyze: run a static check of the workspace (for example, Python syntax).
Some tools may be denied by the user's policy. A denied or failed tool call comes back as an error result: \
read it, adapt, and do not retry the same call unchanged.

How to work:
1. Read before you edit. Always read a file with read_file before editing it, and pass the sha256 that \
read_file returned to edit_file. If an edit is refused because the file changed, read it again.
2. Keep changes minimal. Change only what the task needs; keep the existing style, names and structure; do not \
reformat, rename or refactor unrelated code, and do not add files that were not asked for.
3. Verify. When running commands is allowed, run the project's tests or checks after your change and fix what \
you broke. If you cannot run them, check your change by reading it again.
4. Be honest. Never claim a check passed unless you ran it and saw it pass. If you could not finish, say what \
is left and why.
5. Finish with a short summary and no tool call: what you changed (files), how you verified it, and anything \
the user should know. Your final message must not contain a tool call; it ends the run.
"""
"""The default system prompt of the harness (``instructions``)."""


class Limits(_Input, frozen=True, kw_only=True):
    """``[limits]``."""

    max_context_chars: PositiveChars = 200_000
    """The conversation size (serialized characters) the harness plans for; compaction works against it."""
    max_output_tokens: PositiveTokens = 8192
    """The output limit sent with every provider request."""


class Compaction(_Input, frozen=True, kw_only=True):
    """``[compaction]``."""

    threshold: Fraction = 0.8
    """Compact when the conversation passes ``threshold`` x ``limits.maxContextChars`` (0 < threshold <= 1)."""


class Reasoning(_Input, frozen=True, kw_only=True):
    """``[reasoning]``."""

    effort: Effort | None = None
    """The reasoning effort sent to the provider; ``None`` sends none."""


class ToolSettings(_Input, frozen=True, kw_only=True):
    """``[tools]``: limits of the harness tools."""

    bash_output_limit_chars: PositiveChars = 20_000
    """``bash`` output past this many characters is truncated, saying how much was cut."""
    bash_timeout_ms: PositiveMs = 120_000
    """Default ``bash`` timeout when the model gives no ``timeout_ms``."""
    read_max_chars: PositiveChars = 100_000
    """``read_file`` returns at most this many characters per call."""
    max_calls_per_turn: CallsPerTurn = 32
    """At most this many tool calls of one assistant turn run; each call past it is refused with a tool
    result saying so, and the turn raises one ``too_many_tool_calls`` incident."""
    text_calls: TextCallsMode = "off"
    """``off``: a final text holding calls of offered tools ends the run (a ``text_tool_call`` incident says
    so). ``parse``: the harness runs those calls as tool calls (events marked ``fromText``) and answers them in
    a user message naming each call, then the run goes on."""


class AgentConfig(Frozen, frozen=True, kw_only=True):
    """A main agent (``[agents.NAME]``), picked with ``--agent NAME`` or a task's ``agent``."""

    name: AgentName
    instructions: NonEmptyText
    """This agent's system prompt; it replaces the top-level ``instructions``."""
    tools: tuple[ToolName, ...] | None = None
    """The tools this agent may call (a subset of ``HARNESS_TOOLS``); ``None`` means all of them."""


class _AgentBody(_Input, frozen=True, kw_only=True):
    """An ``[agents.NAME]`` table as written (the name is its key)."""

    instructions: NonEmptyText
    tools: tuple[ToolName, ...] | None = None


def _agent_names_unique(agents: tuple[AgentConfig, ...]) -> None:
    names = [agent.name for agent in agents]
    if len(set(names)) != len(names):
        raise ValueError(f"agent names must be unique, got {names}")


class MeasuredConfig(_Input, frozen=True, kw_only=True):
    """Everything about the harness a report measures: it enters ``config_hash``; variants override it."""

    limits: Limits = msgspec.field(default_factory=Limits)
    compaction: Compaction = msgspec.field(default_factory=Compaction)
    reasoning: Reasoning = msgspec.field(default_factory=Reasoning)
    sampling: Sampling = msgspec.field(default_factory=Sampling)
    tools: ToolSettings = msgspec.field(default_factory=ToolSettings)
    retries: Retries = msgspec.field(default_factory=Retries)
    instructions: NonEmptyText = DEFAULT_INSTRUCTIONS
    """The system prompt of the harness."""
    cache: bool = True
    """Mark prompt-cache breakpoints where the api has them (Anthropic's ``cache_control``; the other apis
    cache by themselves). Enters the hash only when off (see ``config_hash``)."""
    agents: tuple[AgentConfig, ...] = ()
    """Main agents, sorted by name (``[agents.NAME]`` tables in the file)."""

    def __post_init__(self) -> None:
        _agent_names_unique(self.agents)


_MEASURED_TABLES: Final = ("limits", "compaction", "reasoning", "sampling", "tools", "retries")
"""The tables of the measured configuration (``[limits]``...); ``instructions``, ``cache`` and ``agents`` aside."""


class Config(Frozen, frozen=True, kw_only=True):
    """A whole configuration: the provider (not measured) and the measured configuration."""

    provider: ProviderSettings = msgspec.field(default_factory=ProviderSettings)
    measured: MeasuredConfig = msgspec.field(default_factory=MeasuredConfig)
    lab: LabSettings = msgspec.field(default_factory=LabSettings)
    prices: tuple[ModelPrices, ...] = ()
    """``[prices."MODEL"]`` tables, sorted by model (not measured: they price what was measured)."""
    mcp_servers: tuple[McpServer, ...] = ()
    """``[mcp.servers.NAME]``, sorted by name: MCP servers given to every run (not measured: a context)."""


# --- keys ----------------------------------------------------------------------------------------------------


def _keys_of(kind: type[msgspec.Struct], prefix: str) -> Iterable[str]:
    for field in msgspec.structs.fields(kind):
        key = f"{prefix}{field.encode_name}"
        if isinstance(field.type, type) and issubclass(field.type, msgspec.Struct):
            yield from _keys_of(field.type, f"{key}.")
        else:
            yield key


@functools.cache
def measured_keys() -> tuple[str, ...]:
    """The dotted keys of the measured configuration, in definition order (``limits.maxContextChars``, ...).

    Derived from the Struct definitions: a Struct-typed field contributes its own keys, any other field
    (``instructions``, ``agents``) is one key. These, and only these, are valid variant overrides.
    """
    return tuple(_keys_of(MeasuredConfig, ""))


@functools.cache
def _known_keys() -> tuple[str, ...]:
    provider = tuple(_keys_of(ProviderSettings, "provider."))
    lab = tuple(_keys_of(LabSettings, "lab."))
    sections = ("provider", "lab", "prices", "mcp", *_MEASURED_TABLES)
    agents = ("agents.NAME.instructions", "agents.NAME.tools")
    return (*sections, *provider, *lab, *measured_keys(), *agents, "mcp.servers.NAME.command")


# --- parsing -------------------------------------------------------------------------------------------------

_CHOICES: Final[tuple[tuple[str, str, tuple[str, ...]], ...]] = (
    (r"\.tools\[\d+\]$", "a harness tool", HARNESS_TOOLS),
    (r"^reasoning\.effort$", "a reasoning effort", get_args(Effort)),
    (r"^tools\.textCalls$", "a text-calls mode", get_args(TextCallsMode)),
    (r"^provider\.api$", "a provider api", APIS),
    (r"^provider\.preset$", "a provider preset", PRESET_NAMES),
)


def _convert(data: object, kind: type[T], prefix: str, source: str) -> Result[T, ConfigError]:
    """msgspec's validating conversion; its one exception becomes a ConfigError at once."""
    try:
        return Success(msgspec.convert(data, kind))
    except msgspec.ValidationError as exc:
        return Failure(validation_error(str(exc), data, prefix, source, _known_keys, _CHOICES))


def _collect(results: Iterable[Result[T, ConfigError]]) -> Result[tuple[T, ...], ConfigError]:
    """All values in order, or the first failure."""
    start: Result[tuple[T, ...], ConfigError] = Success(())
    return functools.reduce(
        lambda acc, item: acc.bind(lambda done: item.map(lambda v: (*done, v))), results, start
    )


def _parse_agent(name: str, body: object, source: str) -> Result[AgentConfig, ConfigError]:
    key = f"agents.{name}"
    if not re.fullmatch(AGENT_NAME_PATTERN, name):
        message = "an agent name is a letter, then letters, digits, '_' or '-' (at most 64 characters)"
        return Failure(ConfigError(source=source, key=key, message=message))
    return _convert(body, _AgentBody, key, source).map(
        lambda parsed: AgentConfig(name=name, instructions=parsed.instructions, tools=parsed.tools)
    )


def _parse_agents(agents: object, source: str) -> Result[tuple[AgentConfig, ...], ConfigError]:
    if not isinstance(agents, Mapping):
        return Failure(
            ConfigError(source=source, key="agents", message="expected a table of [agents.NAME] tables")
        )
    return _collect(_parse_agent(str(name), body, source) for name, body in agents.items())


def _canonical_tools(tools: tuple[ToolName, ...] | None) -> tuple[ToolName, ...] | None:
    return None if tools is None else tuple(tool for tool in HARNESS_TOOLS if tool in tools)


def _canonical(measured: MeasuredConfig) -> MeasuredConfig:
    """Agents sorted by name, each tool subset deduplicated in harness order (how it was written is noise)."""
    agents = tuple(
        msgspec.structs.replace(agent, tools=_canonical_tools(agent.tools))
        for agent in sorted(measured.agents, key=lambda agent: agent.name)
    )
    return msgspec.structs.replace(measured, agents=agents)


_NOT_MEASURED: Final = ("provider", "lab", "prices", "mcp", "agents")


def _parse_measured(data: Mapping[str, object], source: str) -> Result[MeasuredConfig, ConfigError]:
    rest = {key: value for key, value in data.items() if key not in _NOT_MEASURED}
    agents = _parse_agents(data["agents"], source) if "agents" in data else Success(())
    return agents.bind(
        lambda parsed: _convert(rest, MeasuredConfig, "", source).map(
            lambda measured: _canonical(msgspec.structs.replace(measured, agents=parsed))
        )
    )


def _check_provider(settings: ProviderSettings, source: str) -> Result[ProviderSettings, ConfigError]:
    implied = FORMAT_IDS.get(settings.id)
    if implied is None or settings.api is not None:
        return Success(settings)
    message = f"{settings.id!r} is a label and selects no wire format, so this endpoint would be spoken to "
    message += f'as openai-chat; set provider.api = "{implied}", or provider.api = "openai-chat" to keep it'
    return Failure(ConfigError(source=source, key="provider.id", message=message))


def parse_config(data: Mapping[str, object], source: str) -> Result[Config, ConfigError]:
    """Validate a parsed config.toml (what ``tomllib`` returns) into a ``Config``, defaults filled in.

    Args:
        data: the TOML document as builtins (an empty mapping gives every default).
        source: the file name, shown in every error.

    Returns:
        ``Success(Config)``, or ``Failure(ConfigError)`` naming the dotted key for the first problem: an
        unknown key (with the closest known key), a wrong type, a value out of range, or an agent tool that
        is not a harness tool.
    """
    if not isinstance(data, Mapping):
        return Failure(ConfigError(source=source, key="", message="expected a TOML table at the top level"))
    if any(not isinstance(key, str) for key in data):
        return Failure(ConfigError(source=source, key="", message="every key must be a string"))
    provider = _convert(data.get("provider", {}), ProviderSettings, "provider", source).bind(
        lambda settings: _check_provider(settings, source)
    )
    lab = _convert(data.get("lab", {}), LabSettings, "lab", source)
    prices = parse_prices(data.get("prices", {}), source)
    mcp = parse_mcp_config(data.get("mcp", {}), source)
    return provider.bind(
        lambda settings: lab.bind(
            lambda lab_settings: prices.bind(
                lambda priced: _parse_measured(data, source).map(
                    lambda measured: Config(
                        provider=settings, measured=measured, lab=lab_settings, prices=priced
                    )
                )
            )
        )
    ).bind(lambda config: mcp.map(lambda servers: msgspec.structs.replace(config, mcp_servers=servers)))


# --- hash, data, overrides -----------------------------------------------------------------------------------

_IN_ORDER: Final = msgspec.json.Encoder()
"""Keeps the key order ``to_builtins`` gives (the Structs' field order), as the first hashes were written."""


def config_hash(measured: MeasuredConfig) -> str:
    """The sha256 (64 hex digits) of the measured configuration with every default filled in.

    Computed over deterministic JSON of the canonical form (agents by name, tool subsets in harness order),
    so neither key order nor spelling out a default changes it, and any measured value does. The provider is
    not an argument: it never enters the hash. Show the first 16 digits; store all 64.
    """
    data = msgspec.to_builtins(_canonical(measured))
    if data.get("cache") is True:
        del data["cache"]  # added after the first reports: at its default it leaves their hashes as they were
    if data["tools"].get("textCalls") == "off":
        del data["tools"]["textCalls"]  # the same: at its default it leaves older hashes as they were
    if not _without_none(data.get("sampling")):
        del data["sampling"]  # the same: sampling enters only once a value is written
    if data.get("retries") == {"max": DEFAULT_MAX_RETRIES}:
        del data["retries"]  # the same: retries enter only when not at the default
    return hashlib.sha256(_IN_ORDER.encode(data)).hexdigest()


def _without_none(table: object) -> dict[str, object]:
    """A table of builtins minus its ``None`` values (TOML has no null: absent means None)."""
    assert isinstance(table, dict)  # msgspec.to_builtins turns every Struct into a dict
    return {key: value for key, value in table.items() if value is not None}


def _measured_data(measured: MeasuredConfig) -> dict[str, object]:
    built = _without_none(msgspec.to_builtins(measured))
    agents = {agent.name: _without_none(msgspec.to_builtins(agent)) for agent in measured.agents}
    for body in agents.values():
        del body["name"]
    tables = {section: _without_none(built[section]) for section in _MEASURED_TABLES}
    return {**built, **tables, "agents": agents}


def config_to_data(config: Config) -> dict[str, object]:
    """The configuration in the shape of config.toml (builtins; absent optional values left out).

    ``parse_config(config_to_data(c), s)`` gives back ``c`` (in canonical form).
    """
    return {
        "provider": _without_none(msgspec.to_builtins(config.provider)),
        "lab": _without_none(msgspec.to_builtins(config.lab)),
        **({"prices": prices_data(config.prices)} if config.prices else {}),
        **({"mcp": mcp_config_data(config.mcp_servers)} if config.mcp_servers else {}),
        **_measured_data(config.measured),
    }


def _with_value(data: Mapping[str, object], key: str, value: object) -> dict[str, object]:
    section, _, name = key.partition(".")
    if not name:
        return {**data, section: value}
    table = data.get(section)
    return {**data, section: {**(table if isinstance(table, Mapping) else {}), name: value}}


def _check_key(key: object, source: str) -> Result[str, ConfigError]:
    if isinstance(key, str) and key in measured_keys():
        return Success(key)
    key = str(key)
    if key == "provider" or key.startswith("provider."):
        message = "does not enter the configuration hash; to compare models use --model"
        return Failure(ConfigError(source=source, key=key, message=message))
    known = ", ".join(measured_keys())
    message = f"unknown key{suggestion(key, measured_keys())}; overrides accept only measured keys: {known}"
    return Failure(ConfigError(source=source, key=key, message=message))


def apply_overrides(
    measured: MeasuredConfig, overrides: Mapping[str, object], source: str
) -> Result[MeasuredConfig, ConfigError]:
    """Apply a variant's ``{"compaction.threshold": 0.6, ...}`` to a measured configuration.

    Args:
        measured: the configuration the variant starts from.
        overrides: dotted measured keys (``measured_keys()``) to values as written in compare.json;
            ``agents`` takes a mapping of agent name to ``{"instructions": ..., "tools": [...]}`` and replaces
            every agent; ``reasoning.effort`` may be ``null``.
        source: where the overrides come from (file and variant), shown in every error.

    Returns:
        ``Success`` with the overridden configuration, or ``Failure(ConfigError)`` for a key that is not a
        measured key (``provider.*`` says why: it does not enter the hash), or a value of the wrong type or
        out of range.
    """

    def merge(data: Mapping[str, object], key: str) -> dict[str, object]:
        return _with_value(data, key, overrides[key])

    checked = _collect(_check_key(key, source) for key in overrides)
    return checked.bind(
        lambda keys: _parse_measured(functools.reduce(merge, keys, _measured_data(measured)), source)
    )
