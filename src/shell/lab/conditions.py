"""An arm's measurement conditions, as its report carries them: ``arm_conditions``.

The pipeline writes them into each report; the headline of ``eval run`` and ``eval variants`` reads the same
ones before the first run, so what a command says it runs is what its report says it ran (the agent, the
script: ``alisio.core.lab.reports.naming``).
"""

from __future__ import annotations

from importlib.metadata import version

from alisio.core.harness.config import config_hash
from alisio.core.harness.faults import spec_text
from alisio.core.lab.reports.report import CompactionSettings, Conditions
from alisio.shell.lab.agent_plan import condition_for
from alisio.shell.lab.model import LabStart
from alisio.shell.lab.run_one import Arm

__all__ = ["arm_conditions"]


def arm_conditions(start: LabStart, arm: Arm, created_at: str) -> Conditions:
    """The conditions of ``arm``'s report (``created_at``: when the command started, ISO 8601 UTC)."""
    suite = start.choice.loaded
    measured = arm.measured
    return Conditions(
        suite_id=suite.suite.suite_id,
        suite_version=suite.suite.suite_version,
        suite_hash=suite.content_hash,
        harness_version=version("alisio"),
        config_hash=config_hash(measured),
        provider=start.provider.id,
        model=arm.model or start.provider.model,
        endpoint=start.provider.endpoint,
        mode=start.mode,
        k=start.k,
        seed=start.seed,
        compaction=CompactionSettings(
            threshold=measured.compaction.threshold, max_context_chars=measured.limits.max_context_chars
        ),
        rates=arm.rates,
        rates_from=arm.rates_from,
        run_id=arm.run_id,
        created_at=created_at,
        agent=condition_for(arm.agent, start.tasks, start.agent_conditions),
        script_hash=start.provider.script_hash,
        sandbox=start.sandbox,
        label=start.label,
        faults=None if arm.faults is None else spec_text(arm.faults),
        context=arm.context.condition if arm.context is not None else None,
    )
