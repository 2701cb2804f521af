"""The built-in runner of the agent seam (``alisio.shell.agents.seam``): alisio's own loop
(``alisio.shell.harness.agent``) against the command's provider plan, wrapped by record or replay when the
command records or replays."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import msgspec

from alisio.core.harness.config_provider import DEFAULT_MAX_RETRIES
from alisio.core.harness.events import Effect, Event
from alisio.core.lab.runs.records import RunRecord
from alisio.shell.agents.seam import AgentJob, AgentRun
from alisio.shell.lab.plans import ProviderPlan
from alisio.shell.lab.preflight import task_policy

__all__ = ["BuiltinRunner"]


@dataclass(frozen=True)
class BuiltinRunner:
    """alisio's own agent loop against the command's provider plan (record and replay wrap the provider)."""

    plan: ProviderPlan
    granted: frozenset[Effect]
    read_only: bool
    harness_version: str
    tool_env: Mapping[str, str] | None
    on_event: Callable[[Event], None] | None = None
    """Sees each event as it happens (the live status)."""

    def run(self, job: AgentJob) -> AgentRun:
        from alisio.shell.harness.agent import AgentSetup, run_agent

        ctx = self
        provider = ctx.plan.factory(job.task, job.spec)
        hook = ctx.plan.hook
        if hook is not None:
            provider = hook.wrap(provider, job.task, job.rules)
        setup = AgentSetup(
            prompt=job.task.prompt,
            workspace=job.workspace,
            provider=provider,
            model=ctx.plan.model,
            measured=job.measured,
            policy=task_policy(job.task.policy, ctx.read_only),
            granted=ctx.granted,
            budget=job.task.budget,
            agent=job.agent,
            approver=None,
            normalize_rules=job.rules,
            harness_version=ctx.harness_version,
            config_hash=job.config_hash,
            env=ctx.tool_env,
            on_event=self.on_event,
            sandbox=job.sandbox,
            rates=job.rates,
            system=job.context_system,
            mcp_servers=job.mcp_servers,
        )
        faults = None
        if job.faults is None and job.measured.retries.max == DEFAULT_MAX_RETRIES:
            result = run_agent(
                setup
            )  # the transport's own default: no httpx for a replay (test_command_cost)
        else:
            from alisio.shell.harness.providers.faults import RunWire, run_wire

            wire = RunWire(job.faults, f"{job.task.id}/{job.spec.repetition}", job.measured.retries.max)
            with run_wire(wire):  # the run's faults and retries.max, in the provider's HTTP layer
                result = run_agent(setup)
            faults = wire.recorded()
        message = result.message if result.outcome == "error" else None

        def finish(record: RunRecord) -> RunRecord:
            record = record if faults is None else msgspec.structs.replace(record, faults=faults)
            return record if hook is None else hook.finish(provider, job.task, record)

        return AgentRun(
            events=result.events, outcome=result.outcome, reason=result.reason, message=message, finish=finish
        )
