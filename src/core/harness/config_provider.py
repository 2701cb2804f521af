"""The settings of config.toml that are read but never measured (``[provider]``; ``[lab]`` is in
``alisio.core.harness.lab_settings``), the sampling
settings (measured, ``[sampling]``), the retries of a failed call (measured, ``[retries]``), and the value types
every config Struct shares.

``alisio.core.harness.config`` parses and hashes them; this module only defines them (split out of it so that
each stays readable). Rules: every Struct forbids unknown fields (a misspelt key fails), every bound is a
``Meta`` constraint, and a header value or key is never shown in an error (it may hold a secret).
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from msgspec import Meta

from alisio.core.base import Frozen
from alisio.core.harness.presets import PRESETS, PresetName
from alisio.core.harness.wire import APIS, DEFAULT_API, Api, wire_format
from alisio.core.harness.wire_format import SAMPLING_KEYS

__all__ = [
    "AGENT_NAME_PATTERN",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_RETRIES",
    "AgentName",
    "BaseUrl",
    "CallsPerTurn",
    "Effort",
    "EnvVarName",
    "Fraction",
    "NonEmptyText",
    "PositiveChars",
    "PositiveMs",
    "PositiveTokens",
    "ProviderSettings",
    "ResponseBytes",
    "Retries",
    "Sampling",
    "TomlInput",
    "unsupported_sampling",
]

DEFAULT_MAX_RESPONSE_BYTES: Final = 32 << 20
"""The largest provider response body read (SSE framing included): a real answer of maxOutputTokens, streamed
one token per chunk, stays far below it; a stream that never ends is stopped there."""

_MAX_CHARS: Final = 100_000_000
_MAX_TOKENS: Final = 10_000_000
_MAX_MS: Final = 86_400_000
_MAX_CALLS_PER_TURN: Final = 100_000

PositiveChars = Annotated[int, Meta(ge=1, le=_MAX_CHARS)]
PositiveTokens = Annotated[int, Meta(ge=1, le=_MAX_TOKENS)]
PositiveMs = Annotated[int, Meta(ge=1, le=_MAX_MS)]
CallsPerTurn = Annotated[int, Meta(ge=1, le=_MAX_CALLS_PER_TURN)]
Fraction = Annotated[float, Meta(gt=0.0, le=1.0)]
NonEmptyText = Annotated[str, Meta(min_length=1)]
AGENT_NAME_PATTERN: Final = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"
AgentName = Annotated[str, Meta(pattern=AGENT_NAME_PATTERN)]
EnvVarName = Annotated[str, Meta(pattern=r"^[A-Z_][A-Z0-9_]{0,127}$")]
BaseUrl = Annotated[str, Meta(pattern=r"^https?://\S+$")]
ResponseBytes = Annotated[int, Meta(ge=1024, le=1 << 32)]
Effort = Literal["low", "medium", "high"]
HeaderName = Annotated[str, Meta(pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")]
HeaderValue = Annotated[str, Meta(pattern=r"^[^\r\n\x00]{0,8192}$")]
Temperature = Annotated[float, Meta(ge=0.0, le=2.0)]
TopP = Annotated[float, Meta(gt=0.0, le=1.0)]
SamplingSeed = Annotated[int, Meta(ge=0, le=(1 << 63) - 1)]


class TomlInput(Frozen, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of the Structs read from config.toml: a misspelt key fails instead of being ignored."""


class ProviderSettings(TomlInput, frozen=True, kw_only=True):
    """``[provider]``: who answers. Not measured: it never enters the hash and is never a variant override."""

    api: Api | None = None
    """The wire format; ``None`` (not written) is ``openai-chat``: use ``resolved_api``."""
    id: NonEmptyText = "openai_compat"
    """A label recorded as ``provider`` in run_start and reports (use ``resolved_id``); it selects no wire
    format. An id that reads as one (``anthropic``) with no ``api`` written is refused."""
    base_url: BaseUrl | None = None
    """The base URL, with its version segment (``--base-url`` overrides it)."""
    model: NonEmptyText | None = None
    """The model name (``--model`` overrides it)."""
    api_key_env: EnvVarName | None = None
    """The NAME of the environment variable holding the key, never the key. ``None`` (not written): the api's
    variable (``DEFAULT_API_KEY_ENVS``) when set, else no key (local servers need none); a name written here
    must be set."""
    max_concurrency: Annotated[int, Meta(ge=1, le=1024)] | None = None
    """At most this many requests in flight to the endpoint at once, over every concurrent run of a command
    (``None``: as many as ``--jobs``)."""

    max_response_bytes: ResponseBytes = DEFAULT_MAX_RESPONSE_BYTES
    """The largest response body read from the provider (1 KiB to 4 GiB); past it the call fails with
    ``provider_too_large``. Not measured: a safety limit on the endpoint, not a strategy."""
    rate_limit_give_up_ms: PositiveMs = 120_000
    """Once the endpoint has answered every request with 429 for this long, the command stops as on a refused
    key (the report of what finished is written and says why)."""

    preset: PresetName | None = None
    """A known provider (``--provider`` overrides it): its base URL, api and key variable, each overridden by
    what is written (``alisio.core.harness.presets``)."""
    headers: dict[HeaderName, HeaderValue] | None = None
    """Extra HTTP headers sent with every request (``OpenAI-Organization``, a gateway's routing header). Not
    measured, and never logged, stored or put in an event, report or cassette."""
    timeout_ms: PositiveMs | None = None
    """The longest wait for the connection or for the next bytes of a response (default 300000 ms to read,
    10000 ms to connect); the run's ``budget.maxWallMs`` still bounds the whole call."""

    @property
    def resolved_api(self) -> Api:
        """``api``; else the preset's; else the default ``openai-chat``."""
        if self.api is not None:
            return self.api
        return PRESETS[self.preset].api if self.preset is not None else DEFAULT_API

    @property
    def resolved_id(self) -> str:
        """``id``; at its default, the preset's name, else the api's name for every api but ``openai-chat``."""
        if self.id == "openai_compat" and self.preset is not None:
            return self.preset
        if self.id == "openai_compat" and self.resolved_api != DEFAULT_API:
            return self.resolved_api
        return self.id


class Sampling(TomlInput, frozen=True, kw_only=True):
    """``[sampling]`` (measured): sent only when written, and only to the apis that take it.

    Each api takes the settings its record lists (``alisio.core.harness.wire_format.WireFormat.sampling``):
    ``temperature`` and ``topP`` go to all; ``seed`` only to the apis that have one (the Responses and
    Messages apis have none, and a seed written for them is refused).
    """

    temperature: Temperature | None = None
    """0 to 2 (Anthropic takes 0 to 1); ``None`` sends none (the provider's default)."""
    top_p: TopP | None = None
    """Nucleus sampling, above 0 and at most 1; ``None`` sends none."""
    seed: SamplingSeed | None = None
    """The provider's sampling seed (best effort on its side); ``None`` sends none."""


def unsupported_sampling(api: Api, sampling: Sampling) -> tuple[str, str] | None:
    """The first sampling setting ``api`` cannot take, as ``(dotted key, why)``; ``None`` when all can go.

    What each api takes is its record's (``WireFormat.sampling``, ``max_temperature``): ``seed`` goes only to
    the apis that have one; Anthropic takes a temperature of at most 1.
    """
    record = wire_format(api)
    for field, key in SAMPLING_KEYS.items():
        if getattr(sampling, field) is not None and field not in record.sampling:
            takers = ", ".join(name for name in APIS if field in wire_format(name).sampling)
            return f"sampling.{key}", f"the {api} api takes no {key} (only {takers})"
    if sampling.temperature is not None and sampling.temperature > record.max_temperature:
        limit = f"{record.max_temperature:g}"
        return "sampling.temperature", f"the {api} api takes 0 to {limit}, got {sampling.temperature}"
    return None


DEFAULT_MAX_RETRIES: Final = 4
"""``retries.max``: the built-in provider's retries of a failed model call."""
RetryCount = Annotated[int, Meta(ge=0, le=20)]


class Retries(TomlInput, frozen=True, kw_only=True):
    """``[retries]`` (measured): how the built-in provider retries a failed model call (a 429, a 5xx, a
    connection error or timeout before any event; ``alisio.shell.harness.providers.transport``)."""

    max: RetryCount = DEFAULT_MAX_RETRIES
    """Retries of one model call after its first attempt (0: none). Enters the hash only when not 4."""
