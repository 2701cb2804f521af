"""Before the first run: the external agents a command uses, checked, each with its runner.

``external_runners`` refuses, one line naming the file, the agent and the field (exit 1, nothing run):
- a preset whose binary is not installed (naming the install command);
- an ``api`` the proxy does not speak yet;
- a command with no live provider to forward to (``--script`` plays turns to the built-in agent only);
- ``--executor ray`` (an external agent runs on this machine only).

The agent's version is asked once per command (its ``version`` command, a preset's ``--version``) for the
report's conditions; one that cannot be asked is ``unknown``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final, Protocol

from alisio.core.agents.cassette import AgentCassette
from alisio.core.agents.config import ExternalAgent
from alisio.core.agents.exchange import unsupported_api
from alisio.core.agents.external import binary_name, install_hint, version_command
from alisio.shell.agents.runner import BASIC_ENV, ExternalRunner, Upstream
from alisio.shell.checkout import checkout_root
from alisio.shell.errors import CommandError

__all__ = ["agent_version", "agents_bin", "external_runners", "find_binary"]

_RAY = "--executor ray: external agents ({names}) run on this machine only; nothing was run"

_VERSION_TIMEOUT_S: Final = 60.0


class Forwarding(Protocol):
    """What an external agent's proxy needs of the command's provider plan (``alisio.shell.lab.plans``'
    ``ProviderPlan``, a floor above): where to forward, with what key, and what it cannot pass on."""

    @property
    def id(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def key(self) -> str | None: ...
    @property
    def base_url(self) -> str | None: ...
    @property
    def local_only(self) -> tuple[str, ...]: ...


def agents_bin() -> Path | None:
    """``.agents/bin`` of the source checkout (where ``make agents`` installs), or ``None`` in a wheel."""
    root = checkout_root()
    return None if root is None else root / ".agents" / "bin"


def find_binary(agent: ExternalAgent, env: Mapping[str, str]) -> str | None:
    """The preset's executable: ``binary``, else on PATH, else in the checkout's ``.agents/bin``."""
    if agent.binary is not None:
        return agent.binary if shutil.which(agent.binary) else None
    extra = agents_bin()
    path = os.pathsep.join(filter(None, [env.get("PATH", ""), str(extra) if extra else ""]))
    return shutil.which(binary_name(agent), path=path)


def agent_version(argv: tuple[str, ...], env: Mapping[str, str]) -> str:
    """The first line the version command prints (``unknown`` when it cannot be run or prints nothing)."""
    if not argv:
        return "unknown"
    basic = {name: env[name] for name in BASIC_ENV if name in env}
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            timeout=_VERSION_TIMEOUT_S,
            env=basic,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = [line.strip() for line in (done.stdout or done.stderr).decode("utf-8", "replace").splitlines()]
    return next((line for line in lines if line), "unknown")[:200]


def _refuse_unforwardable(wanted: Sequence[ExternalAgent], plan: Forwarding, source: str) -> None:
    """Refuse, before the first run, settings the proxy does not pass on yet (``provider.headers``,
    ``provider.timeoutMs``). An agent's wire format may differ from ``provider.api``: one endpoint (a gateway,
    a local server) often serves several, and the proxy forwards the agent's requests unchanged."""
    if plan.local_only:
        names = ", ".join(agent.name for agent in wanted)
        raise CommandError(
            f"{source}: {', '.join(plan.local_only)}: not passed on by an external agent's proxy yet "
            f"(agents {names}); remove it to run them; nothing was run"
        )


def _check(agent: ExternalAgent, source: str, env: Mapping[str, str]) -> str:
    """The agent's executable (its command's first word for a command agent); raises ``CommandError``."""
    where = f"{source}: agents.{agent.name}"
    problem = unsupported_api(agent.api)
    if problem is not None:
        field = "api" if agent.kind == "command" else "kind"
        spoken = "" if agent.kind == "command" else f" ({agent.kind} speaks {agent.api})"
        raise CommandError(f"{where}.{field}: {problem}{spoken}; nothing was run")
    if agent.kind == "command":
        return agent.command[0]
    binary = find_binary(agent, env)
    if binary is None:
        field = "binary" if agent.binary else "kind"
        raise CommandError(
            f"{where}.{field}: {agent.kind} is not installed ({binary_name(agent)} not found); install it with "
            f"{install_hint(agent.kind)}; nothing was run"
        )
    return binary


def _recorded_conditions(
    cassettes: Mapping[str, Mapping[str, AgentCassette]] | None,
) -> tuple[str, str] | None:
    """Replay: the provider and model the cassettes were recorded with."""
    headers = [c.header for recorded in (cassettes or {}).values() for c in recorded.values()]
    return (headers[0].provider, headers[0].model) if headers else None


def external_runners(
    external: Iterable[ExternalAgent],
    used: Iterable[str | None],
    source: str,
    plan: Forwarding,
    env: Mapping[str, str],
    *,
    ray: bool,
    harness_version: str,
    replay: Callable[[ExternalAgent], dict[str, AgentCassette]] | None = None,
    record: bool = False,
    suite: tuple[str, str] = ("", ""),
) -> tuple[dict[str, ExternalRunner], dict[str, str]]:
    """The runner and the version of each external agent in ``used`` (each run's proxy makes its own
    provider client, closed when the run ends).

    Args:
        replay: replay mode: reads an agent's cassettes (by task id), raising ``CommandError`` for a missing one.
        record: record mode: each runner keeps its runs' cassettes (``ExternalRunner.recorded``).

    Raises:
        CommandError: the first problem (module docstring), naming the file, the agent and the field.
    """
    by_name = {agent.name: agent for agent in external}
    wanted = [by_name[name] for name in dict.fromkeys(used) if name is not None and name in by_name]
    if not wanted:
        return {}, {}
    binaries = {agent.name: _check(agent, source, env) for agent in wanted}
    names = ", ".join(agent.name for agent in wanted)
    if ray:
        raise CommandError(_RAY.format(names=names))
    if replay is None:
        _refuse_unforwardable(wanted, plan, source)
    cassettes = {agent.name: replay(agent) for agent in wanted} if replay is not None else None
    if plan.base_url is None and cassettes is None:
        raise CommandError(
            f"{source}: agents.{wanted[0].name}: an external agent needs a live provider to forward to "
            "(config.toml [provider] or --base-url); --script plays turns to the built-in agent only"
        )
    provider_id, model = _recorded_conditions(cassettes) or (plan.id, plan.model)
    base_url = plan.base_url or "http://127.0.0.1:9"  # replay forwards no model call
    upstream = Upstream(provider_id=provider_id, base_url=base_url, key=plan.key)
    runners = {
        agent.name: ExternalRunner(
            agent=agent,
            binary=binaries[agent.name],
            model=model,
            upstream=upstream,
            environ=dict(env),
            harness_version=harness_version,
            cassettes=cassettes[agent.name] if cassettes is not None else None,
            recorded={} if record else None,
            suite=suite,
        )
        for agent in wanted
    }
    versions = {
        agent.name: agent_version(version_command(agent, binaries[agent.name]), env) for agent in wanted
    }
    return runners, versions
