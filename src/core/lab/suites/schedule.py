"""The run plan of ``alisio eval run``: which tasks run, and in which seeded order.

Rules this module keeps:

- ``select_tasks`` picks the tasks named by ``--tasks`` (in the order given), accepting a plain task id or
  ``<suiteId>/<taskId>``; an unknown id is an error listing the known ones, never silently skipped, and a task
  named twice is an error naming it (``--k`` sets repetitions), never silently run once.
- ``plan_runs`` yields every (task, repetition) pair exactly once, repetitions counted from 0, each with
  ``seed = seed + repetition``, in an order drawn from a numpy ``Generator`` seeded with ``seed``: the same
  inputs always give the same plan. The seed only orders runs; the provider never receives it.
- A ``variant`` is carried on each ``RunSpec`` so ``eval variants`` can interleave arms over the same plan.
"""

from __future__ import annotations

from collections.abc import Sequence

from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.lab.suites.suite import Suite, Task

__all__ = ["MAX_K", "RunSpec", "ScheduleError", "plan_runs", "select_tasks"]

MAX_K = 10_000
"""The most repetitions per task a command plans (``--k``, plan.json's ``k``): past it the plan alone would
not fit in memory, and no statistic needs more."""


class ScheduleError(Frozen, frozen=True, kw_only=True, tag="schedule_error"):
    """A run plan that cannot be made: an unknown task id, k below 1, a negative seed, a repeated id."""

    message: str

    def __str__(self) -> str:
        return self.message


class RunSpec(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One planned run: a task, its repetition (from 0) and its seed (the command's seed + repetition)."""

    task_id: str
    repetition: int
    seed: int
    variant: str | None = None
    """The variant id under ``eval variants``; ``None`` for ``eval run``."""


def select_tasks(suite: Suite, wanted: Sequence[str] | None) -> Result[tuple[Task, ...], ScheduleError]:
    """The tasks of ``suite`` named in ``wanted`` (``None``: every task, in suite order).

    Args:
        suite: the parsed suite.
        wanted: task ids as given to ``--tasks``; ``<suiteId>/<taskId>`` is accepted for this suite.
            Blank entries are ignored.

    Returns:
        The tasks in the order named, or ``Failure(ScheduleError)`` naming every unknown id, the suite and
        its known task ids; a task named more than once (``a,a`` or ``a,<suiteId>/a``) and an empty
        selection are errors too.
    """
    if wanted is None:
        return Success(suite.tasks)
    by_id = {task.id: task for task in suite.tasks}
    prefix = suite.suite_id + "/"
    chosen: list[Task] = []
    unknown: list[str] = []
    repeated: list[str] = []
    for raw in wanted:
        name = raw.strip()
        task_id = name.removeprefix(prefix)
        if not name:
            continue
        task = by_id.get(task_id)
        if task is None:
            unknown.append(name)
        elif task in chosen:
            if task.id not in repeated:
                repeated.append(task.id)
        else:
            chosen.append(task)
    known = ", ".join(task.id for task in suite.tasks)
    if unknown:
        noun = "task" if len(unknown) == 1 else "tasks"
        return Failure(
            ScheduleError(
                message=f"unknown {noun} {', '.join(unknown)} in suite {suite.suite_id} (known: {known})"
            )
        )
    if repeated:
        names = ", ".join(repeated)
        return Failure(
            ScheduleError(
                message=f"--tasks names {names} more than once: name each task once (--k sets repetitions)"
            )
        )
    if not chosen:
        return Failure(ScheduleError(message=f"--tasks names no task (known in {suite.suite_id}: {known})"))
    return Success(tuple(chosen))


def plan_runs(
    task_ids: Sequence[str], k: int, seed: int, variant: str | None = None
) -> Result[tuple[RunSpec, ...], ScheduleError]:
    """Every (task, repetition) pair once, shuffled by a numpy ``Generator`` seeded with ``seed``.

    Args:
        task_ids: the selected tasks (distinct ids).
        k: repetitions per task, at least 1.
        seed: the order's seed, at least 0 (numpy seeds are non-negative); run ``r`` gets ``seed + r``.
        variant: stamped on every spec (``eval variants``).

    Returns:
        ``len(task_ids) * k`` specs in a deterministic permutation of task-major order, or
        ``Failure(ScheduleError)`` when ``k < 1`` or ``k > MAX_K``, ``seed < 0`` or an id repeats.
    """
    import numpy as np

    if k < 1:
        return Failure(ScheduleError(message=f"k must be at least 1, got {k}"))
    if k > MAX_K:
        return Failure(ScheduleError(message=f"k must be at most {MAX_K}, got {k}"))
    if seed < 0:
        return Failure(ScheduleError(message=f"the seed must be 0 or more, got {seed}"))
    if len(set(task_ids)) != len(task_ids):
        return Failure(ScheduleError(message="a task id is repeated in the selection"))
    ordered = [
        RunSpec(task_id=task_id, repetition=r, seed=seed + r, variant=variant)
        for task_id in task_ids
        for r in range(k)
    ]
    order = np.random.default_rng(seed).permutation(len(ordered))
    return Success(tuple(ordered[int(i)] for i in order))
