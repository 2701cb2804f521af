"""Provider presets: ``--provider NAME`` or ``provider.preset`` sets the base URL, the api and the key variable.

| preset | api | base URL | key variable |
|---|---|---|---|
| ``openai`` | openai-responses | ``https://api.openai.com/v1`` | ``OPENAI_API_KEY`` |
| ``anthropic`` | anthropic | ``https://api.anthropic.com/v1`` | ``ANTHROPIC_API_KEY`` |
| ``gemini`` | gemini | ``https://generativelanguage.googleapis.com/v1beta`` | ``GEMINI_API_KEY`` |
| ``openrouter`` | openai-chat | ``https://openrouter.ai/api/v1`` | ``OPENROUTER_API_KEY`` |
| ``deepseek`` | openai-chat | ``https://api.deepseek.com/v1`` | ``DEEPSEEK_API_KEY`` |
| ``ollama`` | openai-chat | ``http://localhost:11434/v1`` | none |
| ``vllm`` | openai-chat | ``http://localhost:8000/v1`` | none |
| ``llamacpp`` | openai-chat | ``http://localhost:8080/v1`` | none |

Rules:
- what is written explicitly (``--base-url``, ``provider.baseUrl``, ``provider.api``, ``provider.apiKeyEnv``)
  overrides the preset's value;
- a key read from the preset's own variable is sent only to the preset's host (``key_host_refusal``); to send
  a key elsewhere, name its variable with ``provider.apiKeyEnv``;
- a preset with no key variable sends no key, whatever ``OPENAI_API_KEY`` holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, get_args
from urllib.parse import urlsplit

from alisio.core.base import Frozen
from alisio.core.harness.wire import Api

__all__ = ["PRESETS", "PRESET_NAMES", "Preset", "PresetName", "key_host_refusal"]

PresetName = Literal["openai", "anthropic", "gemini", "openrouter", "deepseek", "ollama", "vllm", "llamacpp"]
PRESET_NAMES: Final[tuple[PresetName, ...]] = get_args(PresetName)


class Preset(Frozen, frozen=True, kw_only=True):
    """Where a known provider answers, in which format, and the variable its key is read from."""

    api: Api
    base_url: str
    key_env: str | None
    """``None``: a local server that needs no key (none is sent)."""


PRESETS: Final[Mapping[PresetName, Preset]] = {
    "openai": Preset(api="openai-responses", base_url="https://api.openai.com/v1", key_env="OPENAI_API_KEY"),
    "anthropic": Preset(
        api="anthropic", base_url="https://api.anthropic.com/v1", key_env="ANTHROPIC_API_KEY"
    ),
    "gemini": Preset(
        api="gemini", base_url="https://generativelanguage.googleapis.com/v1beta", key_env="GEMINI_API_KEY"
    ),
    "openrouter": Preset(
        api="openai-chat", base_url="https://openrouter.ai/api/v1", key_env="OPENROUTER_API_KEY"
    ),
    "deepseek": Preset(api="openai-chat", base_url="https://api.deepseek.com/v1", key_env="DEEPSEEK_API_KEY"),
    "ollama": Preset(api="openai-chat", base_url="http://localhost:11434/v1", key_env=None),
    "vllm": Preset(api="openai-chat", base_url="http://localhost:8000/v1", key_env=None),
    "llamacpp": Preset(api="openai-chat", base_url="http://localhost:8080/v1", key_env=None),
}


def _origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port of ``url`` (the default port of its scheme when none is written)."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        return scheme, (parts.hostname or "").lower(), parts.port or {"https": 443, "http": 80}.get(scheme)
    except ValueError:
        return "", "", None


def _host(url: str) -> str:
    return _origin(url)[1]


def key_host_refusal(name: PresetName, base_url: str) -> str | None:
    """Why the key of preset ``name``'s variable may not go to ``base_url``, or ``None`` when it may: only to
    the preset's own scheme, host and port (never over plain HTTP to a host the preset reaches over HTTPS)."""
    preset = PRESETS[name]
    host, own = _host(base_url), _host(preset.base_url)
    if preset.key_env is None or _origin(base_url) == _origin(preset.base_url):
        return None
    if host == own:
        return (
            f"the key from {preset.key_env} (preset {name}) is sent only to {preset.base_url.rsplit('/', 1)[0]}"
            f", not to {base_url} (another scheme or port); name the variable to send there with "
            "provider.apiKeyEnv"
        )
    return (
        f"the key from {preset.key_env} (preset {name}) is sent only to {own}, not to {host or base_url}; "
        "name the variable to send there with provider.apiKeyEnv"
    )
