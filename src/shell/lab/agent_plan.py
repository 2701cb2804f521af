"""Which agent each arm's runs use, and the runners of the external ones: ``agent_plan``, before the first run.

An arm's agent is its variant's ``agent``, else ``--agent``, else each task's own ``agent`` (``None``: the
built-in default). The external agents among them (``[agents.NAME]`` with a ``kind`` other than builtin) get
a runner each (``alisio.shell.agents.setup``), and the report's conditions name the agent, its kind, its
version and the digest of its settings (the built-in agent: ``alisio <version>``).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

import msgspec

from alisio.core.agents.cassette import AgentCassette
from alisio.core.agents.config import ExternalAgent
from alisio.core.lab.reports.report import DEFAULT_AGENT, MIXED_AGENTS, AgentCondition
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.suites.schedule import RunSpec
from alisio.core.lab.suites.suite import Task
from alisio.shell.agents.seam import AgentRunner
from alisio.shell.errors import CommandError
from alisio.shell.harness.providers.base import Provider
from alisio.shell.lab.plans import ProviderPlan
from alisio.shell.lab.preflight import Agents
from alisio.shell.lab.record import Recorded
from alisio.shell.lab.request import ExecutorKind, LabMode, LabRequest

__all__ = [
    "AgentPlan",
    "agent_plan",
    "agents_of",
    "check_isolation",
    "condition_for",
    "replay_placeholder",
    "uses_external",
    "write_recorded_agents",
]


@dataclass(frozen=True)
class AgentPlan:
    """The external agents' runners by name, their conditions, and the plan."""

    runners: dict[str, AgentRunner] = field(default_factory=dict)
    conditions: dict[str, AgentCondition] = field(default_factory=dict)
    plan: ProviderPlan | None = None
    configs: dict[str, str] = field(default_factory=dict)
    """The sha256 of each agent's settings (plan.json keeps it: a resume checks it)."""


def agents_of(
    request: LabRequest,
    external: Sequence[ExternalAgent],
    variants: Mapping[str, tuple[str | None, str | None]],
) -> dict[str | None, Agents]:
    """What preflight needs for each arm (``None``: a plain run): its agent override, the external names.

    Raises:
        CommandError: a variant's ``model`` for a built-in agent (the built-in agent's model is ``--model``).
    """
    names = frozenset(agent.name for agent in external)
    arms: dict[str | None, Agents] = {None: Agents(override=request.provider.agent, external=names)}
    for variant, (agent, model) in variants.items():
        chosen = agent or request.provider.agent
        if model is not None and chosen not in names:
            raise CommandError(
                f"--variants: variant {variant}: model: only an external agent's model can differ between "
                "variants (the built-in agent's is --model); nothing was run"
            )
        arms[variant] = Agents(override=chosen, external=names)
    return arms


def agent_plan(
    request: LabRequest,
    external: Sequence[ExternalAgent],
    source: str,
    tasks: Sequence[Task],
    arm_agents: Sequence[str | None],
    plan: ProviderPlan,
    cassette_dir: Path,
    suite: tuple[str, str],
) -> AgentPlan:
    """The runners of the external agents the arms and tasks use (none: the plan as it is).

    Raises:
        CommandError: an external agent that cannot run here (``alisio.shell.agents.setup``).
    """
    used = [*arm_agents, *(task.agent for task in tasks)]
    names = {agent.name for agent in external}
    if not any(name in names for name in used):  # the built-in agent alone: nothing to set up, nor import
        return AgentPlan(plan=plan)
    from alisio.shell.agents.replay import read_agent_cassettes
    from alisio.shell.agents.setup import external_runners
    from alisio.shell.lab.record import check_recorded_faults

    def cassettes(agent: ExternalAgent) -> dict[str, AgentCassette]:
        mine = [task for task in tasks if (request.provider.agent or task.agent) == agent.name]
        found = read_agent_cassettes(cassette_dir, agent.name, mine)
        check_recorded_faults(found, request.provider.faults)  # the replay meets the recording's faults
        return found

    runners, versions = external_runners(
        external,
        used,
        source,
        plan,
        request.env,
        ray=request.executor is ExecutorKind.RAY,
        harness_version=version("alisio"),
        replay=cassettes if request.mode is LabMode.REPLAY else None,
        record=request.mode is LabMode.RECORD,
        suite=suite,
    )
    if not runners:
        return AgentPlan(plan=plan)
    first = next(iter(runners.values()))
    replaced = dataclasses.replace(plan, id=first.upstream.provider_id, model=first.model, hook=None)
    conditions, configs = _named(external, runners, versions)
    return AgentPlan(runners=dict(runners), conditions=conditions, plan=replaced, configs=configs)


def _named(
    external: Sequence[ExternalAgent], runners: Mapping[str, AgentRunner], versions: Mapping[str, str]
) -> tuple[dict[str, AgentCondition], dict[str, str]]:
    """Each external agent that runs as the report's conditions name it, and the sha256 of its settings."""
    configs = {
        agent.name: hashlib.sha256(msgspec.json.encode(agent)).hexdigest()
        for agent in external
        if agent.name in runners
    }
    conditions = {
        agent.name: AgentCondition(
            name=agent.name, kind=agent.kind, version=versions[agent.name], settings_hash=configs[agent.name]
        )
        for agent in external
        if agent.name in configs
    }
    return conditions, configs


def uses_external(request: LabRequest, tasks: Sequence[Task], external: Sequence[ExternalAgent]) -> bool:
    """Whether any run of the command is an external agent's (``--agent``, or a task's ``agent``)."""
    names = {agent.name for agent in external}
    return any((request.provider.agent or task.agent) in names for task in tasks)


def replay_placeholder() -> ProviderPlan:
    """The plan of a replay whose runs are external agents' (their proxies serve the cassettes)."""

    def factory(task: Task, spec: RunSpec) -> Provider:
        raise AssertionError("an external agent's replay uses no provider")

    return ProviderPlan(id="replay", model="replay", factory=factory, close=lambda: None)


def write_recorded_agents(
    runners: Mapping[str, AgentRunner],
    directory: Path,
    records: Sequence[RunRecord],
    known: tuple[tuple[str, str], ...],
    say: Callable[[str], None],
) -> tuple[Recorded, ...]:
    """The cassettes the external runners recorded, written into ``<directory>/<agent>/``."""
    from alisio.shell.agents.replay import write_agent_cassettes
    from alisio.shell.agents.runner import ExternalRunner

    by_task = {record.task_id: record for record in records}
    written: list[Recorded] = []
    for name, runner in runners.items():
        if isinstance(runner, ExternalRunner) and runner.recorded:
            for task_id, path, calls, size in write_agent_cassettes(
                directory, name, runner.recorded, known, say
            ):
                record = by_task[task_id]
                written.append(Recorded(task_id, path, calls, size, record.status, record.reason))
    return tuple(written)


def condition_for(
    arm_agent: str | None, tasks: Sequence[Task], conditions: Mapping[str, AgentCondition]
) -> AgentCondition:
    """The agent a report's conditions name: the arm's, else the one agent every task names (the built-in
    default when none names one), else ``mixed``, naming each agent with its version."""
    names = {arm_agent} if arm_agent is not None else {task.agent for task in tasks}
    harness = version("alisio")

    def one(name: str | None) -> AgentCondition:
        if name is None:
            return AgentCondition(name=DEFAULT_AGENT, kind="builtin", version=harness)
        return conditions.get(name) or AgentCondition(name=name, kind="builtin", version=harness)

    if len(names) == 1:
        return one(next(iter(names)))
    each = [one(name) for name in sorted(names, key=lambda name: name or "")]
    return AgentCondition(
        name=", ".join(agent.name for agent in each),
        kind=MIXED_AGENTS,
        version="; ".join(f"{agent.name} {agent.version}" for agent in each),
    )


def check_isolation(
    names: Sequence[str], sandboxed: bool, env: Mapping[str, str], key: str | None, say: Callable[[str], None]
) -> None:
    """Where the external agents ``names`` run. Under a sandbox each runs in it with the proxy's relay, which
    needs the sandbox's ``/usr/bin/python3``: without it the command refuses (never an agent run
    unsandboxed). Without one, ``say`` warns when they could read the credentials of alisio's environment
    ``env`` (and the API ``key``) from alisio's process (``alisio.shell.key_guard.exposure``: alisio runs as
    root, or cannot hide its memory).

    Raises:
        CommandError: the sandbox cannot relay to the proxy.
    """
    if not names:
        return
    if sandboxed:
        from alisio.shell.sandbox.agents import relay_problem

        problem = relay_problem()
        if problem is not None:
            raise CommandError(f"{problem} (external agents {', '.join(names)}); nothing was run")
        return
    from alisio.shell.key_guard import exposure
    from alisio.shell.lab.cassettes import credentials_of

    held = [name for name, _ in credentials_of(env, key)]
    warning = exposure(", ".join(names), held) if held else None
    if warning is not None:
        say(warning)
