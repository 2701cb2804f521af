"""Helpers shared by the ``alisio eval`` commands that run a provider: stderr lines, the run prompt, the plan.

Light at import time (only ``sys``): heavy modules are imported inside the functions, so ``alisio --help``
stays fast.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from alisio.core.harness.config import MeasuredConfig
    from alisio.core.harness.events import Effect
    from alisio.core.lab.report import Mode, Rates
    from alisio.core.lab.suite import Task
    from alisio.shell.config_home import LoadedConfig
    from alisio.shell.lab.pipeline import LabRun, ProviderPlan, SuiteChoice


@dataclass(frozen=True)
class LabRequest:
    """What ``eval run`` and ``eval variants`` were asked, once their flags are parsed."""

    suite: str
    wanted: list[str] | None
    k: int
    seed: int
    keep: bool
    out: Path | None
    suite_dir: Path | None
    yes: bool
    allow_suite_full: bool
    rates: Rates | None
    json_output: bool
    granted: frozenset[Effect]
    read_only: bool
    model: str | None
    base_url: str | None
    script: Path | None
    env: Mapping[str, str]


def start_lab(
    request: LabRequest,
    choice: SuiteChoice,
    selected: tuple[Task, ...],
    provider: ProviderPlan,
    measured: MeasuredConfig,
    mode: Mode,
) -> LabRun:
    """Confirm a third-party suite, claim the report directory and describe the runs about to start."""
    from datetime import UTC, datetime

    from alisio.core.harness.events import Effect
    from alisio.shell.config_home import data_dir
    from alisio.shell.harness.tools.dispatch import tool_env
    from alisio.shell.lab.pipeline import (
        LabRun,
        claim_run_dir,
        confirm_third_party,
        created_at_for,
        interactive_terminal,
        run_id_for,
    )

    confirm_third_party(choice, yes=request.yes, interactive=interactive_terminal(), say=say, ask=ask)
    now = datetime.now(UTC)
    run_id = run_id_for(now)
    if request.out is not None:
        directory = request.out
    else:
        run_id, directory = claim_run_dir(data_dir(request.env) / "eval", run_id)
    return LabRun(
        loaded=choice.loaded,
        tasks=selected,
        k=request.k,
        seed=request.seed,
        mode=mode,
        provider=provider,
        measured=measured,
        granted=frozenset({Effect.READ}) if request.read_only else request.granted,
        read_only=request.read_only,
        keep=request.keep,
        directory=directory,
        run_id=run_id,
        created_at=created_at_for(now),
        rates=request.rates,
        tool_env=tool_env(request.env, provider.key),
    )


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

    from alisio.shell.config_home import load_config
    from alisio.shell.lab.pipeline import LabError

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

    from alisio.shell.config_home import resolve_provider
    from alisio.shell.harness.providers.openai_compat import OpenAICompatProvider
    from alisio.shell.lab.pipeline import LabError, ProviderPlan

    match resolve_provider(loaded, model, base_url, env):
        case Failure(error):
            raise LabError(str(error))
        case Success(resolved):
            pass
    key = resolved.api_key.reveal() if resolved.api_key is not None else None
    provider = OpenAICompatProvider(
        resolved.base_url,
        resolved.model,
        api_key=key,
        provider_id=resolved.id,
        max_response_bytes=resolved.max_response_bytes,
    )
    return ProviderPlan(
        id=resolved.id,
        model=resolved.model,
        factory=lambda _task, _spec: provider,
        close=provider.close,
        key=key,
    )
