"""Which agent each arm's runs use, and the runners of the external ones: ``agent_plan``, before the first run.

An arm's agent is its variant's ``agent``, else ``--agent``, else each task's own ``agent`` (``None``: the
built-in default). The external agents among them (``[agents.NAME]`` with a ``kind`` other than builtin) get
a runner each (``alisio.shell.agents.setup``), and the report's conditions name the agent, its kind and
its version.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version

from alisio.core.agents.config import ExternalAgent
from alisio.core.lab.report import AgentCondition
from alisio.core.lab.suite import Task
from alisio.shell.lab.agents import AgentRunner
from alisio.shell.lab.plans import ProviderPlan
from alisio.shell.lab.preflight import Agents
from alisio.shell.lab.request import ExecutorKind, LabRequest

__all__ = ["AgentPlan", "agent_plan", "agents_of", "condition_for"]


@dataclass(frozen=True)
class AgentPlan:
    """The external agents' runners by name, their conditions, and the plan (closing their client too)."""

    runners: dict[str, AgentRunner] = field(default_factory=dict)
    conditions: dict[str, AgentCondition] = field(default_factory=dict)
    plan: ProviderPlan | None = None


def agents_of(request: LabRequest, external: Sequence[ExternalAgent]) -> Agents:
    """What preflight needs: the ``--agent`` override and the external agents' names."""
    return Agents(override=request.provider.agent, external=frozenset(agent.name for agent in external))


def agent_plan(
    request: LabRequest,
    external: Sequence[ExternalAgent],
    source: str,
    tasks: Sequence[Task],
    arm_agents: Sequence[str | None],
    plan: ProviderPlan,
) -> AgentPlan:
    """The runners of the external agents the arms and tasks use (none: the plan as it is).

    Raises:
        LabError: an external agent that cannot run here (``alisio.shell.agents.setup``).
    """
    from alisio.shell.agents.setup import external_runners

    used = [*arm_agents, *(task.agent for task in tasks)]
    runners, versions, client = external_runners(
        external,
        used,
        source,
        plan,
        request.env,
        ray=request.executor is ExecutorKind.RAY,
        harness_version=version("alisio"),
    )
    if client is None:
        return AgentPlan(plan=plan)
    close = plan.close

    def close_both() -> None:
        client.close()
        close()

    kinds = {agent.name: agent.kind for agent in external}
    conditions = {
        name: AgentCondition(name=name, kind=kinds[name], version=versions[name]) for name in runners
    }
    return AgentPlan(
        runners=dict(runners), conditions=conditions, plan=dataclasses.replace(plan, close=close_both)
    )


def condition_for(
    arm_agent: str | None, tasks: Sequence[Task], conditions: Mapping[str, AgentCondition]
) -> AgentCondition | None:
    """The agent a report's conditions name: the arm's, else the one agent every task names, else none."""
    names = {arm_agent} if arm_agent is not None else {task.agent for task in tasks}
    if len(names) != 1:
        return None
    (name,) = names
    if name is None:
        return None
    return conditions.get(name) or AgentCondition(name=name, kind="builtin", version=version("alisio"))
