"""Where a command's runs get their provider: a ``ProviderPlan``, chosen once per command.

- ``live_plan``: the configured OpenAI-compatible provider (``--model``/``--base-url`` override the file),
  built once and shared by every run of the command.
- ``scripted_plan``: ``--script FILE`` replays one script from its first turn for every run; ``--script DIR``
  plays ``DIR/<task-id>.json`` for each selected task. Every script is read and parsed once, before the first
  run: a missing or malformed one is a ``CommandError`` naming the file, never a failure mid-suite.
- Replay and record plans are in ``alisio.shell.lab.record``: replay serves cassettes, record wraps any
  plan with a ``RunHook``.

A plan records what a report's conditions name (provider id, model, endpoint) and, for the live provider,
the API key only to keep it out of the environment of commands and the name of the variable it came from
(for the message when the provider refuses it). The key is never stored, logged or written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from alisio.core.harness.endpoint import endpoint_of
from alisio.core.lab.outputs.formats import SCRIPTED_PROVIDER
from alisio.core.lab.reports.naming import script_digest
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.suites.schedule import RunSpec
from alisio.core.lab.suites.suite import Task
from alisio.core.replay.fingerprint import Rules
from alisio.shell.errors import CommandError, expect
from alisio.shell.harness.providers.base import Provider, ProviderFailure
from alisio.shell.harness.providers.scripted import ScriptedProvider, read_script_bytes
from alisio.shell.lab.portable import PortableLive, PortableProvider, scripted

if TYPE_CHECKING:
    from alisio.core.harness.config import MeasuredConfig
    from alisio.shell.config_home import LoadedConfig

__all__ = [
    "ProviderPlan",
    "RunHook",
    "check_sampling",
    "live_plan",
    "script_player",
    "scripted_plan",
]


class RunHook(Protocol):
    """What record and replay add to a run (``alisio.shell.lab.record``)."""

    def wrap(self, provider: Provider, task: Task, rules: Rules) -> Provider:
        """The provider the run uses, given the factory's and the run's fingerprint rules."""
        ...

    def finish(self, provider: Provider, task: Task, record: RunRecord) -> RunRecord:
        """The run's record once it ended (``provider`` is what ``wrap`` returned); replay adds divergence."""
        ...


@dataclass(frozen=True)
class ProviderPlan:
    """The provider of a command: what the report names, and how each run gets its provider."""

    id: str
    model: str
    factory: Callable[[Task, RunSpec], Provider]
    """The provider for one run (the same live provider every time; a fresh scripted one per run)."""
    close: Callable[[], None]
    key: str | None = None
    """The API key, only to keep it out of the environment of commands; never stored."""
    key_source: str | None = None
    """The environment variable the key came from (named when the provider refuses it)."""
    endpoint: str | None = None
    """``scheme://host:port/path`` of a live provider (never a user name or password)."""
    hook: RunHook | None = None
    """Record and replay: wraps each run's provider and sees each run's record (``None``: neither)."""
    portable: PortableProvider | None = None
    """The same provider by content, for runs on other machines (``alisio.shell.lab.portable``)."""
    shared: Provider | None = None
    """The one provider every run shares (the live one); ``None`` when each run gets its own."""
    base_url: str | None = None
    """The live provider's base URL (where an external agent's proxy forwards); ``None`` otherwise."""
    api: str | None = None
    """The live provider's wire format (``provider.api``); ``None`` otherwise."""
    script_hash: str | None = None
    """``--script``: the digest of the scripts (``alisio.core.lab.reports.naming.script_digest``), a condition of the
    report; ``None`` otherwise."""
    read_timeout_ms: int | None = None
    """``provider.timeoutMs`` when the provider's transport reads with it (live, or a script served over
    in-memory HTTP); ``None``: the transport's default. How long a ``stall`` lasts, which a cassette recorded
    with stalls keeps (``alisio.core.harness.faults.stall_timeout_ms``)."""
    local_only: tuple[str, ...] = ()
    """Settings only this machine's provider applies (``provider.headers``, ``provider.timeoutMs``): Ray
    workers and an external agent's proxy do not get them yet, so those refuse the command instead."""

    @property
    def key_note(self) -> str:
        """``, key from VAR`` when a key is sent (a headline names the variable), else nothing."""
        return f", key from {self.key_source}" if self.key_source is not None else ""


def _local_only(headers: Mapping[str, str] | None, timeout_ms: int | None) -> tuple[str, ...]:
    """The settings given that only this machine's provider applies (``ProviderPlan.local_only``)."""
    given = (("provider.headers", bool(headers)), ("provider.timeoutMs", timeout_ms is not None))
    return tuple(name for name, present in given if present)


def live_plan(
    loaded: LoadedConfig,
    model: str | None,
    base_url: str | None,
    env: Mapping[str, str],
    jobs: int = 1,
    preset: str | None = None,
) -> ProviderPlan:
    """The configured provider (flags override the file), built once for every run of the command.

    Its requests in flight are capped at ``provider.maxConcurrency`` (default ``jobs``) over every
    concurrent run, and a ``Retry-After`` pauses them all (``alisio.shell.harness.providers.gate``).

    Raises:
        CommandError: no base URL or model, or a named key variable that is not set (naming the file and key).
    """
    from alisio.shell.config_home import resolve_provider
    from alisio.shell.harness.providers.gate import EndpointGate
    from alisio.shell.harness.providers.registry import build_provider

    resolved = expect(resolve_provider(loaded, model, base_url, env, preset))
    key = resolved.api_key.reveal() if resolved.api_key is not None else None
    provider = build_provider(
        resolved.api,
        resolved.base_url,
        resolved.model,
        api_key=key,
        provider_id=resolved.id,
        max_response_bytes=resolved.max_response_bytes,
        gate=EndpointGate(loaded.config.provider.max_concurrency or jobs),
        rate_limit_give_up_ms=resolved.rate_limit_give_up_ms,
        headers=resolved.headers,
        timeout_ms=resolved.timeout_ms,
    )
    return ProviderPlan(
        id=resolved.id,
        api=resolved.api,
        local_only=_local_only(resolved.headers, resolved.timeout_ms),
        model=resolved.model,
        factory=lambda _task, _spec: provider,
        close=provider.close,
        key=key,
        key_source=resolved.key_source,
        endpoint=endpoint_of(resolved.base_url),
        portable=PortableLive(
            id=resolved.id,
            model=resolved.model,
            base_url=resolved.base_url,
            max_response_bytes=resolved.max_response_bytes,
            max_concurrency=loaded.config.provider.max_concurrency,
            api=resolved.api,
            rate_limit_give_up_ms=resolved.rate_limit_give_up_ms,
        ),
        shared=provider,
        base_url=resolved.base_url,
        read_timeout_ms=resolved.timeout_ms,
    )


def check_sampling(plan: ProviderPlan, configs: Sequence[tuple[str, MeasuredConfig]], source: str) -> None:
    """Refuse, before the first run, a variant whose sampling settings the live api cannot take.

    Raises:
        CommandError: naming the file, the variant and the key (``sampling.seed`` for ``anthropic``, ...).
    """
    from alisio.core.harness.config_provider import unsupported_sampling

    if not isinstance(plan.portable, PortableLive):
        return  # scripted turns and replay send nothing to an api
    for variant, measured in configs:
        found = unsupported_sampling(plan.portable.api, measured.sampling)
        if found is not None:
            raise CommandError(f"{source}: variant {variant}: {found[0]}: {found[1]}")


def _read_script(path: Path) -> bytes:
    try:
        data = read_script_bytes(path)
        ScriptedProvider.from_json(data, str(path))
    except OSError as error:
        raise CommandError(f"--script {path}: cannot read: {error.strerror or error}") from None
    except ProviderFailure as failure:
        raise CommandError(f"--script {failure}") from None
    return data


def scripted_plan(
    script: Path,
    tasks: tuple[Task, ...],
    model: str | None,
    *,
    over_http: bool = False,
    timeout_ms: int | None = None,
) -> ProviderPlan:
    """A fresh scripted provider per run: from one file, or from ``<dir>/<task-id>.json``.

    ``over_http``: each run's script is served over in-memory HTTP to the built-in OpenAI-compatible provider
    (``alisio.shell.lab.scripted_http``), so injected faults reach its transport and its retries, read with
    ``timeout_ms`` (``provider.timeoutMs``) as a live provider reads.

    Raises:
        CommandError: a selected task without its script in a directory, or a script that cannot be read or
            parsed (naming the file).
    """
    files = {task.id: script / f"{task.id}.json" for task in tasks} if script.is_dir() else None
    missing = [task_id for task_id, path in (files or {}).items() if not path.exists()]
    if missing:
        names = ", ".join(f"{task_id}.json" for task_id in missing)
        raise CommandError(
            f"--script {script}: no {names} for the selected tasks (select scripted ones with --tasks)"
        )
    scripts = {task_id: (_read_script(path), str(path)) for task_id, path in (files or {"": script}).items()}
    timeout_ms = timeout_ms if over_http else None
    return ProviderPlan(
        id=SCRIPTED_PROVIDER,
        model=model or SCRIPTED_PROVIDER,
        factory=script_player(
            scripts, model or SCRIPTED_PROVIDER, over_http=over_http, timeout_ms=timeout_ms
        ),
        close=lambda: None,
        portable=scripted(model, scripts, over_http=over_http, timeout_ms=timeout_ms),
        script_hash=script_digest((task_id, data) for task_id, (data, _) in scripts.items()),
        read_timeout_ms=timeout_ms,
    )


def script_player(
    scripts: Mapping[str, tuple[bytes, str]], model: str, *, over_http: bool, timeout_ms: int | None = None
) -> Callable[[Task, RunSpec], Provider]:
    """The factory of a scripted plan, here and on a Ray worker: a fresh provider per run playing the task's
    script (task id -> bytes, source; the key ``""`` is the one file every task plays), served over in-memory
    HTTP when ``over_http``, read with ``timeout_ms`` (``scripted_plan``)."""

    def factory(task: Task, _spec: RunSpec) -> Provider:
        data, source = scripts["" if "" in scripts else task.id]
        if over_http:
            from alisio.shell.lab.scripted_http import scripted_http_provider

            return scripted_http_provider(data, source, model, SCRIPTED_PROVIDER, timeout_ms)
        return ScriptedProvider.from_json(data, source)

    return factory
