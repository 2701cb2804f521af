"""Shards: a run plan cut into N deterministic slices, each run by its own process (a CI matrix job, a
Kubernetes Job index, a Slurm array task), then merged (``alisio.core.lab.plans.merge``).

Rules this module keeps:

- A slot is a (task, repetition) pair of the plan; every variant of a slot belongs to the same shard (an
  ``eval variants`` shard runs the A, B / B, A pairs of its slots, as the whole job does), so each
  (variant, task, repetition) belongs to exactly one shard.
- ``slice_plan``'s default (``even``) numbers the slots task by task (tasks in the order they first appear
  in the plan, repetitions from 0) and deals them round-robin: each task's repetitions are spread over the shards, so a
  slow task does not land in one shard, and the shards' slot counts differ by at most one.
- ``balanced`` (``--balance-from REPORT``) weighs each slot by its task's median wall time in that report (a
  task it does not have weighs the median of those it has) and gives each slot, heaviest first, to the shard
  with the least weight so far (longest processing time first): the shards' wall times come out close.
- The same plan, index, count and weights always give the same slice: nothing depends on the machine, the
  clock or the order the shards run in. The owned specs keep the plan's order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated

from msgspec import Meta
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.lab.runs.records import TaskId
from alisio.core.lab.suites.schedule import RunSpec

__all__ = [
    "MAX_SHARDS",
    "PlannedRun",
    "ShardBlock",
    "ShardChoice",
    "ShardRun",
    "TaskWeight",
    "owned_runs",
    "parse_shard",
    "slice_plan",
    "slot_count",
]

MAX_SHARDS = 10_000
"""The most shards a plan is cut into (a CI matrix or an array of that size is already unusual)."""

_SHARD = re.compile(r"\s*(\d{1,6})\s*/\s*(\d{1,6})\s*")


class ShardRun(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One planned run, named: its task, repetition and (``eval variants``) variant."""

    task_id: TaskId
    repetition: Annotated[int, Meta(ge=0)]
    variant: TaskId | None = None

    @property
    def key(self) -> tuple[str | None, str, int]:
        """``(variant, task, repetition)``: how a record is matched to it."""
        return (self.variant, self.task_id, self.repetition)

    def __str__(self) -> str:
        head = f"variant {self.variant} " if self.variant else ""
        return f"{head}task {self.task_id} rep {self.repetition}"


class PlannedRun(ShardRun, frozen=True, kw_only=True, omit_defaults=True):
    """One run of a plan ``eval plan`` writes: its task, repetition, variant, seed and fingerprint."""

    seed: int
    fingerprint: str
    """``alisio.core.lab.plans.plan_key.run_fingerprint``: runs with equal fingerprints are interchangeable."""


class TaskWeight(Frozen, frozen=True, kw_only=True):
    """A task's weight when slicing: its median wall time (ms, at least 1) in the ``--balance-from`` report."""

    task_id: TaskId
    ms: Annotated[int, Meta(ge=1)]


class ShardChoice(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """``--shard I/N`` (with ``--balance-from``'s weights): which slice a command runs."""

    index: Annotated[int, Meta(ge=1)]
    """1-based."""
    count: Annotated[int, Meta(ge=1, le=MAX_SHARDS)]
    weights: tuple[TaskWeight, ...] = ()
    """Empty: the even slicing; else each task's weight (``--balance-from``)."""
    balance_from: str | None = None
    """The report the weights came from, as given (for people)."""

    @property
    def slicing(self) -> str:
        """``even`` or ``balanced``."""
        return "balanced" if self.weights else "even"


class ShardBlock(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """plan.json's ``shard``: which slice of which plan a shard's report directory holds."""

    digest: str
    """The whole plan's digest (``alisio.core.lab.plans.plan_key.plan_digest``): every shard of one plan has it."""
    index: Annotated[int, Meta(ge=1)]
    count: Annotated[int, Meta(ge=1, le=MAX_SHARDS)]
    slicing: str = "even"
    weights: tuple[TaskWeight, ...] = ()
    balance_from: str | None = None
    planned_runs: Annotated[int, Meta(ge=1)]
    """How many runs the whole plan holds (over every shard and variant)."""
    verdict_rule: str | None = None
    """How the merged comparison decides (``eval variants``); ``None`` for a plain run, which gives none."""
    runs: tuple[ShardRun, ...]
    """The runs this shard owns, in plan order."""

    def choice(self) -> ShardChoice:
        """The ``ShardChoice`` that cut this slice (a resume cuts it again)."""
        return ShardChoice(
            index=self.index, count=self.count, weights=self.weights, balance_from=self.balance_from
        )


def parse_shard(text: str) -> Result[tuple[int, int], str]:
    """``I/N`` (1-based, 1 <= I <= N <= ``MAX_SHARDS``) as ``(I, N)``, or the one-line reason it is not."""
    match = _SHARD.fullmatch(text)
    if match is None:
        return Failure(
            f"--shard {text}: expected I/N, the shard's number (from 1) over the number of shards, as 2/4"
        )
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or count > MAX_SHARDS:
        return Failure(f"--shard {text}: the number of shards is from 1 to {MAX_SHARDS}")
    if not 1 <= index <= count:
        return Failure(f"--shard {text}: the shard's number is from 1 to {count} (shards are counted from 1)")
    return Success((index, count))


def _slots(plan: Sequence[RunSpec]) -> list[tuple[str, int]]:
    """The plan's (task, repetition) slots, task by task (in the order the tasks first appear in the plan),
    each task's repetitions from 0."""
    first: dict[str, int] = {}
    for spec in plan:
        first.setdefault(spec.task_id, len(first))
    slots = {(spec.task_id, spec.repetition) for spec in plan}
    return sorted(slots, key=lambda slot: (first[slot[0]], slot[1]))


def slot_count(plan: Sequence[RunSpec]) -> int:
    """How many (task, repetition) slots ``plan`` holds: the most shards it can be cut into."""
    return len({(spec.task_id, spec.repetition) for spec in plan})


def _assign(
    slots: Sequence[tuple[str, int]], count: int, weights: Mapping[str, int]
) -> dict[tuple[str, int], int]:
    """Each slot's shard (1-based): round-robin without weights; else heaviest first to the lightest shard."""
    if not weights:
        return {slot: number % count + 1 for number, slot in enumerate(slots)}
    known = sorted(weights.values())
    fallback = known[len(known) // 2] if known else 1
    weigh = {slot: weights.get(slot[0], fallback) for slot in slots}
    order = sorted(range(len(slots)), key=lambda n: (-weigh[slots[n]], n))
    loads = [0] * count
    assigned: dict[tuple[str, int], int] = {}
    for n in order:
        lightest = min(range(count), key=lambda shard: (loads[shard], shard))
        loads[lightest] += weigh[slots[n]]
        assigned[slots[n]] = lightest + 1
    return assigned


def slice_plan(plan: Sequence[RunSpec], choice: ShardChoice) -> Result[tuple[RunSpec, ...], str]:
    """The specs of ``plan`` that shard ``choice.index`` of ``choice.count`` owns, in plan order.

    Returns:
        The slice, or the one-line reason there is none: more shards than the plan has slots (a shard would
        own no run), or an index above the count.
    """
    slots = _slots(plan)
    if choice.index > choice.count:
        return Failure(
            f"--shard {choice.index}/{choice.count}: the shard's number is from 1 to {choice.count}"
        )
    if choice.count > len(slots):
        return Failure(
            f"--shard {choice.index}/{choice.count}: the plan has {len(slots)} (task, repetition) "
            f"slot{'s' if len(slots) != 1 else ''}, so some shard would run nothing: cut it into at most "
            f"{len(slots)}"
        )
    assigned = _assign(slots, choice.count, {w.task_id: w.ms for w in choice.weights})
    return Success(tuple(s for s in plan if assigned[(s.task_id, s.repetition)] == choice.index))


def owned_runs(specs: Sequence[RunSpec]) -> tuple[ShardRun, ...]:
    """The specs as ``ShardRun``s (what plan.json keeps of a shard's slice)."""
    return tuple(ShardRun(task_id=s.task_id, repetition=s.repetition, variant=s.variant) for s in specs)
