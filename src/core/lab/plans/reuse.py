"""``--reuse RUN|DIR``: which stored runs a command takes instead of running them again.

Rules this module keeps:

- A stored run is taken for a planned run of the same task and repetition when the arms' keys are equal
  (``alisio.core.lab.plans.plan_key.ArmKey``: the suite's content, the configuration, the agent, the model, the
  endpoint, the mode...): it measured what the planned run would measure. The seed only orders runs, so it
  need not match.
- A stored run that ended ``error`` (infrastructure) is not taken: the planned run runs.
- Each arm of the command takes runs from the first stored arm with an equal key (a plain run's one arm, or
  any variant of a stored ``eval variants`` job); a taken record is the stored one, its variant set to the
  arm that takes it.
- An arm with no equal stored arm takes nothing, and the reason is named, field by field, against the stored
  arm of the same variant id (else the first): never silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from alisio.core.base import Frozen
from alisio.core.lab.plans.manifest import RunManifest
from alisio.core.lab.plans.plan_key import arm_keys, key_differences
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.lab.suites.schedule import RunSpec

__all__ = ["ReusePick", "pick_reused"]


class ReusePick(Frozen, frozen=True, kw_only=True):
    """What ``--reuse`` takes for a command: the records, which stored arm each arm took them from, and why
    an arm took none."""

    records: tuple[RunRecord, ...]
    """The records taken, in plan order, each with the variant of the arm that takes it."""
    sources: tuple[tuple[str | None, str | None], ...]
    """``(arm, stored arm)`` for each arm that takes runs."""
    mismatched: tuple[tuple[str | None, tuple[str, ...]], ...]
    """``(arm, what differs)`` for each arm whose key no stored arm has."""
    errored: int
    """Stored runs of a matching arm left out because they ended error (they run again)."""


def pick_reused(
    stored: RunManifest,
    stored_records: Mapping[str | None, Sequence[RunRecord]],
    current: RunManifest,
    todo: Sequence[RunSpec],
) -> ReusePick:
    """The stored records ``todo``'s runs can take (module docstring).

    Args:
        stored: the stored run's plan.json.
        stored_records: its records, by variant (``None``: a plain run's).
        current: the command's plan.json.
        todo: the command's runs not yet run (plan order).
    """
    theirs, ours = arm_keys(stored), arm_keys(current)
    sources: dict[str | None, str | None] = {}
    mismatched = []
    for arm, key in ours.items():
        matching = [name for name, their in theirs.items() if their == key]
        if matching:
            sources[arm] = matching[0]
            continue
        closest = theirs.get(arm, next(iter(theirs.values())))
        lines = key_differences(closest, key)
        mismatched.append((arm, tuple(lines)))
    by_key = {(arm, r.task_id, r.repetition): r for arm, records in stored_records.items() for r in records}
    taken: list[RunRecord] = []
    errored = 0
    for spec in todo:
        if spec.variant not in sources:
            continue
        record = by_key.get((sources[spec.variant], spec.task_id, spec.repetition))
        if record is None:
            continue
        if record.status is RunStatus.ERROR:
            errored += 1
            continue
        taken.append(msgspec.structs.replace(record, variant=spec.variant))
    return ReusePick(
        records=tuple(taken),
        sources=tuple(sources.items()),
        mismatched=tuple(mismatched),
        errored=errored,
    )
