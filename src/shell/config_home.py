"""Where alisio keeps its configuration and data, reading config.toml, and resolving the provider.

- ``config_dir``: ``$ALISIO_CONFIG_HOME``, else ``$XDG_CONFIG_HOME/alisio``, else ``~/.config/alisio``;
  the configuration is ``config.toml`` in it. No file means every default (replay with the bundled cassettes
  points ``ALISIO_CONFIG_HOME`` at an empty directory on purpose). The file must be a regular file (a
  symlink to one is fine) of at most ``CONFIG_MAX_BYTES``: a FIFO, a device such as ``/dev/zero`` or a huge
  file is refused before it is read, and a duplicate key is refused by the TOML parser, naming the key.
- ``data_dir`` (the spec's ``<dataDir>``): ``$ALISIO_DATA_HOME``, else ``$XDG_STATE_HOME/alisio``, else
  ``~/.local/state/alisio``.
- ``resolve_provider``: ``--provider``/``--model``/``--base-url`` override the file (a preset gives the base
  URL, api and key variable); the API key is read from the variable the file names (else the preset's, else
  ``OPENAI_API_KEY``, used only when set; a preset's key goes only to its host) into an ``ApiKey`` that never shows its
  value in ``repr``/``str`` and cannot be serialized: it is never stored, logged or put in an event.

Every function takes the environment as a mapping (``os.environ`` in the CLI, a plain dict in tests).
"""

from __future__ import annotations

import difflib
import os
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.agents.config import ExternalAgent, split_agents
from alisio.core.errors import ConfigError
from alisio.core.harness.config import (
    DEFAULT_MAX_RESPONSE_BYTES,
    Config,
    ProviderSettings,
    config_hash,
    parse_config,
)
from alisio.core.harness.config_provider import unsupported_sampling
from alisio.core.harness.endpoint import redact_credentials
from alisio.core.harness.presets import PRESET_NAMES, PRESETS, key_host_refusal
from alisio.core.harness.tomlkeys import duplicate_key
from alisio.core.harness.wire import DEFAULT_API, DEFAULT_API_KEY_ENVS, Api
from alisio.shell.harness.tools.files import file_kind

__all__ = [
    "ApiKey",
    "LoadedConfig",
    "ResolvedProvider",
    "config_dir",
    "config_path",
    "data_dir",
    "key_variable",
    "load_config",
    "resolve_provider",
]

CONFIG_FILE: Final = "config.toml"
CONFIG_MAX_BYTES: Final = 1 << 20
"""The largest config.toml read (1 MiB: far more than instructions and agents need)."""


def _home(env: Mapping[str, str]) -> Path:
    home = env.get("HOME")
    return Path(home) if home else Path.home()


def _xdg(env: Mapping[str, str], name: str) -> Path | None:
    """An XDG base directory; the XDG spec says to ignore empty and relative values."""
    value = env.get(name, "")
    return Path(value) if value and Path(value).is_absolute() else None


def config_dir(env: Mapping[str, str]) -> Path:
    """``$ALISIO_CONFIG_HOME``, else ``$XDG_CONFIG_HOME/alisio``, else ``~/.config/alisio``."""
    if env.get("ALISIO_CONFIG_HOME"):
        return Path(env["ALISIO_CONFIG_HOME"])
    xdg = _xdg(env, "XDG_CONFIG_HOME")
    return xdg / "alisio" if xdg else _home(env) / ".config" / "alisio"


def config_path(env: Mapping[str, str]) -> Path:
    """The configuration file: ``config.toml`` in ``config_dir(env)``."""
    return config_dir(env) / CONFIG_FILE


def data_dir(env: Mapping[str, str]) -> Path:
    """The spec's ``<dataDir>``: ``$ALISIO_DATA_HOME``, else ``$XDG_STATE_HOME/alisio``, else
    ``~/.local/state/alisio``."""
    if env.get("ALISIO_DATA_HOME"):
        return Path(env["ALISIO_DATA_HOME"])
    xdg = _xdg(env, "XDG_STATE_HOME")
    return xdg / "alisio" if xdg else _home(env) / ".local" / "state" / "alisio"


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    """A configuration and where it came from."""

    config: Config
    path: Path
    """The file read, or the file that would have been read when ``found`` is false."""
    found: bool
    """Whether the file exists; without it every value is a default."""
    external: tuple[ExternalAgent, ...] = ()
    """The ``[agents.NAME]`` tables with a ``kind`` other than builtin (``alisio.core.agents.config``)."""

    @property
    def source(self) -> str:
        """The name errors use for this configuration."""
        return str(self.path)

    @property
    def config_hash(self) -> str:
        """The hash of the measured configuration (``alisio.core.harness.config.config_hash``)."""
        return config_hash(self.config.measured)


def _read_toml(path: Path) -> Result[dict[str, object], ConfigError]:
    """The file's TOML document; an unreadable, special or oversized file, or invalid TOML, is a ConfigError
    naming the file."""
    source = str(path)
    try:
        data = _read_regular(path, CONFIG_MAX_BYTES)
    except OSError as exc:
        return Failure(ConfigError(source=source, key="", message=f"cannot read: {exc.strerror or exc}"))
    except ValueError as exc:
        return Failure(ConfigError(source=source, key="", message=f"cannot read: {exc}"))
    try:
        text = data.decode("utf-8")
        return Success(tomllib.loads(text))
    except UnicodeDecodeError as exc:
        return Failure(ConfigError(source=source, key="", message=f"not UTF-8 text (byte {exc.start})"))
    except tomllib.TOMLDecodeError as exc:
        twice = duplicate_key(text) if "Cannot overwrite" in str(exc) else None
        if twice is not None:  # tomllib does not say which key
            message = f"set twice (lines {twice.first_line} and {twice.line}); a key may appear only once"
            return Failure(ConfigError(source=source, key=twice.key, message=message))
        # Python 3.11 puts the position only in the message: "Invalid value (at line 3, column 9)".
        return Failure(ConfigError(source=source, key="", message=f"invalid TOML: {exc}"))


def _read_regular(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, opened without blocking (a FIFO never waits).

    Raises:
        OSError: the file cannot be opened or read.
        ValueError: it is not a regular file, or it is larger than ``limit`` (the message says which).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    descriptor = os.open(path, flags)
    with os.fdopen(descriptor, "rb") as handle:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"it is {file_kind(mode)}, not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"it is larger than {limit} bytes, the most a configuration file may hold")
    return data


def load_config(env: Mapping[str, str]) -> Result[LoadedConfig, ConfigError]:
    """Read and validate ``config.toml`` from ``config_dir(env)``.

    Returns:
        ``Success(LoadedConfig)``; a missing file gives every default (``found`` false). ``Failure(ConfigError)``
        for an unreadable file, invalid TOML (the message gives line and column) or an invalid value (the
        dotted key, e.g. ``limits.maxContextChars``).
    """
    path = config_path(env)
    if not path.exists():
        return Success(LoadedConfig(config=Config(), path=path, found=False))
    return (
        _read_toml(path)
        .bind(lambda data: split_agents(data, str(path)))
        .bind(
            lambda split: parse_config(split[0], str(path)).map(
                lambda config: LoadedConfig(config=config, path=path, found=True, external=split[1])
            )
        )
    )


class ApiKey:
    """An API key. Its value shows nowhere (``repr``, ``str``, f-strings) and msgspec/json cannot encode it;
    only ``reveal()`` gives it, for the one HTTP header that needs it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The key itself: put it in the Authorization header and nowhere else."""
        return self._value

    def __repr__(self) -> str:
        return "ApiKey(***)"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ApiKey) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> str | tuple[object, ...]:
        raise TypeError("an ApiKey cannot be pickled or copied to disk")


@dataclass(frozen=True, slots=True)
class ResolvedProvider:
    """The provider to call: the configuration's settings with the flags applied, and the key if any."""

    id: str
    base_url: str
    model: str
    api_key: ApiKey | None = field(default=None, repr=False)
    """``None`` when no key is configured (local servers need none). Never stored, logged or in an event."""
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    """The largest response body read from the provider (``provider.maxResponseBytes``)."""
    api: Api = DEFAULT_API
    """``provider.api``: the wire format."""
    key_source: str | None = None
    """The variable the key was read from (``None`` when no key is sent)."""
    rate_limit_give_up_ms: int = 120_000
    """``provider.rateLimitGiveUpMs``."""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    """``provider.headers``: sent with every request; never stored, logged or in an event."""
    timeout_ms: int | None = None
    """``provider.timeoutMs``: the longest wait to connect or for the next bytes (``None``: the defaults)."""


_MAX_PORT: Final = 65535
"""The largest TCP port: a base URL's port must be in 1.._MAX_PORT."""


def key_variable(settings: ProviderSettings) -> str | None:
    """The variable the key is read from: ``provider.apiKeyEnv``; else the preset's (``None`` for a local
    server's preset: no key is sent); else the api's (``ANTHROPIC_API_KEY`` for ``anthropic``,
    ``OPENAI_API_KEY`` otherwise)."""
    if settings.api_key_env is not None:
        return settings.api_key_env
    if settings.preset is not None:
        return PRESETS[settings.preset].key_env
    return DEFAULT_API_KEY_ENVS[settings.resolved_api]


def _url_problem(base_url: str) -> str | None:
    """Why ``base_url`` cannot be called (not http(s), no host, a port that is not a number or not in
    1-65535: ``http://[::1``, ``http://h:x``, ``http://h:99999``), else None."""
    import httpx  # here, not at the top: a replay or a scripted run never loads it (bench_commands.py)

    shown = repr(redact_credentials(base_url))
    if not base_url.startswith(("http://", "https://")):
        return f"expected an http:// or https:// URL, got {shown}"
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL as error:  # httpx's words name the part: "Invalid port: 'x'"
        return f"not a valid URL: {shown} ({error})"
    if not url.host:
        return f"not a valid URL: {shown} (no host)"
    if url.port is not None and not 0 < url.port <= _MAX_PORT:  # httpx takes 99999, the socket would not
        return f"not a valid URL: {shown} (port {url.port} is out of range: a port is 1 to {_MAX_PORT})"
    return None


def _missing(source: str, key: str, flag: str, what: str) -> ConfigError:
    message = f"no {what}: pass {flag} or set {key.partition('.')[2]} under [provider] in this file"
    return ConfigError(source=source, key=key, message=message)


def _api_key(
    settings: ProviderSettings, source: str, base_url: str, env: Mapping[str, str], flagged: bool = False
) -> Result[ApiKey | None, ConfigError]:
    named = settings.api_key_env
    variable = key_variable(settings)
    value = env.get(variable, "") if variable is not None else ""
    if value:
        refusal = key_host_refusal(settings.preset, base_url) if settings.preset and not named else None
        if refusal is not None:  # named where the preset was given: --provider, or the file's provider.preset
            where = ("--provider", "") if flagged else (source, "provider.preset")
            return Failure(ConfigError(source=where[0], key=where[1], message=refusal))
        return Success(ApiKey(value))
    if named is None:
        return Success(None)
    message = f"names the variable {named}, which is not set or empty (export it, or remove apiKeyEnv for a "
    message += "server that needs no key)"
    return Failure(ConfigError(source=source, key="provider.apiKeyEnv", message=message))


def _with_preset(
    settings: ProviderSettings, preset_flag: str | None
) -> Result[ProviderSettings, ConfigError]:
    """``settings`` with ``--provider NAME`` as its preset (the flag overrides ``provider.preset``)."""
    if preset_flag is None:
        return Success(settings)
    if preset_flag not in PRESET_NAMES:
        close = difflib.get_close_matches(preset_flag, PRESET_NAMES, n=1, cutoff=0.5)
        near = f"; did you mean {close[0]!r}?" if close else ""
        message = f"{preset_flag!r} is not a provider preset (one of {', '.join(PRESET_NAMES)}){near}"
        return Failure(ConfigError(source="--provider", key="", message=message))
    return Success(msgspec.structs.replace(settings, preset=preset_flag))


def _checked_sampling(loaded: LoadedConfig, api: Api) -> Result[None, ConfigError]:
    found = unsupported_sampling(api, loaded.config.measured.sampling)
    if found is None:
        return Success(None)
    return Failure(ConfigError(source=loaded.source, key=found[0], message=found[1]))


def resolve_provider(
    loaded: LoadedConfig,
    model_flag: str | None,
    base_url_flag: str | None,
    env: Mapping[str, str],
    preset_flag: str | None = None,
) -> Result[ResolvedProvider, ConfigError]:
    """The provider for a live run: flags override the file, and the key comes from the environment.

    With no file at all, ``--base-url URL --model NAME`` is enough (OpenAI-compatible local servers need no
    key), and so is ``--provider NAME --model NAME``: a preset gives the base URL, the api and the key
    variable, each overridden by what is written. The key is read from ``key_variable`` and used only when
    set; a key from a preset's own variable goes only to the preset's host.

    Returns:
        ``Success(ResolvedProvider)``, or ``Failure(ConfigError)`` naming the file and the key: an unknown
        ``--provider``, no base URL (``provider.baseUrl`` / ``--base-url``), a base URL that is not http(s),
        no model (``provider.model`` / ``--model``), an explicitly named ``provider.apiKeyEnv`` whose
        variable is not set, a preset's key bound for another host, or a sampling setting the api does not
        take.
    """
    return _with_preset(loaded.config.provider, preset_flag).bind(
        lambda settings: _resolved(loaded, settings, model_flag, base_url_flag, env)
    )


def _resolved(
    loaded: LoadedConfig,
    settings: ProviderSettings,
    model_flag: str | None,
    base_url_flag: str | None,
    env: Mapping[str, str],
) -> Result[ResolvedProvider, ConfigError]:
    preset_url = PRESETS[settings.preset].base_url if settings.preset is not None else None
    base_url = base_url_flag or settings.base_url or preset_url
    model = model_flag or settings.model
    if not base_url:
        return Failure(_missing(loaded.source, "provider.baseUrl", "--base-url URL", "base URL"))
    problem = _url_problem(base_url)
    if problem is not None:  # named where the URL was written (a preset's is always valid)
        where = ("--base-url", "") if base_url_flag else (loaded.source, "provider.baseUrl")
        return Failure(ConfigError(source=where[0], key=where[1], message=problem))
    if not model:
        return Failure(_missing(loaded.source, "provider.model", "--model NAME", "model"))
    checked = _checked_sampling(loaded, settings.resolved_api)
    flagged = settings.preset != loaded.config.provider.preset  # --provider set it, not the file
    return checked.bind(lambda _: _api_key(settings, loaded.source, base_url, env, flagged)).map(
        lambda key: ResolvedProvider(
            id=settings.resolved_id,
            base_url=base_url,
            model=model,
            api_key=key,
            max_response_bytes=settings.max_response_bytes,
            api=settings.resolved_api,
            key_source=key_variable(settings) if key is not None else None,
            rate_limit_give_up_ms=settings.rate_limit_give_up_ms,
            headers=dict(settings.headers or {}),
            timeout_ms=settings.timeout_ms,
        )
    )
