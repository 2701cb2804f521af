"""Helpers shared by the ``alisio eval`` commands that run a provider: stderr lines, the run prompt, the plan.

Light at import time (only ``sys``): heavy modules are imported inside the functions, so ``alisio --help``
stays fast.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from shell.config_home import LoadedConfig
    from shell.lab import ProviderPlan


def say(line: str) -> None:
    """Write one line for people on stderr (stdout is data) and flush it at once."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def ask() -> str:
    """Ask on stderr whether to run third-party code and return the answer line read from stdin."""
    sys.stderr.write("Run it? [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline()


def load_lab_config(env: Mapping[str, str]) -> LoadedConfig:
    """The configuration file of ``env``'s config home; a bad one raises ``LabError`` with its message."""
    from returns.result import Failure

    from shell.config_home import load_config
    from shell.lab import LabError

    loaded = load_config(env)
    if isinstance(loaded, Failure):
        raise LabError(str(loaded.failure()))
    config: LoadedConfig = loaded.unwrap()
    return config


def live_plan(
    loaded: LoadedConfig, model: str | None, base_url: str | None, env: Mapping[str, str]
) -> ProviderPlan:
    """The configured provider (flags override the file), built once for every run of the command."""
    from returns.result import Failure, Success

    from shell.config_home import resolve_provider
    from shell.lab import LabError, ProviderPlan
    from shell.providers.openai_compat import OpenAICompatProvider

    match resolve_provider(loaded, model, base_url, env):
        case Failure(error):
            raise LabError(str(error))
        case Success(resolved):
            pass
    key = resolved.api_key.reveal() if resolved.api_key is not None else None
    provider = OpenAICompatProvider(resolved.base_url, resolved.model, api_key=key, provider_id=resolved.id)
    return ProviderPlan(
        id=resolved.id,
        model=resolved.model,
        factory=lambda _task, _spec: provider,
        close=provider.close,
        key=key,
    )
