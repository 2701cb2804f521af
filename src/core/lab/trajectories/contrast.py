"""What ``eval diff`` compares: two runs with their verdicts, or the repetitions of one task grouped by the
calls they made, with a passing one set against a failing one.

Rules this module keeps:

- a run is ``passing`` when its status is ``pass``, ``failing`` when it was judged and did not pass (``fail``,
  ``budget_exceeded``); an ``error`` run is neither (infrastructure broke: it is grouped, never contrasted).
  A run read from a transcript file alone has no verdict (``status`` ``None``);
- ``group_runs``: runs with the same sequence of call keys (``step_key``) are one group. Groups are ordered
  by size (largest first), then by their first repetition; they are named ``T1``, ``T2``... in that order;
- ``pick_pair``: which passing and which failing run to set against each other: the first passing run of
  the group with the most passing runs, and the first failing run of the largest group with a failing run,
  preferring a group other than the passing run's (a different path is the likelier explanation); ``None``
  when the task has no passing or no failing run;
- ``task_divergences``: for report.html, each task with both a passing and a failing run, the pair
  ``pick_pair`` chooses and the line that names where they part (``divergence_line``); ``side_divergence``
  for comparison.html, a passing run of one side against a failing one of the other (``pick_sides``);
- ``pick_sides``: with two runs' records (``eval diff A B --task T`` without ``--rep``): when one side has a
  passing run and the other a failing one, A's first passing and B's first failing (else B's first passing
  and A's first failing); else the first run of each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from alisio.core.base import Frozen
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.lab.trajectories.align import TrajectoryDiff, diff_trajectories, divergence_line
from alisio.core.lab.trajectories.trajectory import Trajectory, step_key

__all__ = [
    "RunDiff",
    "Side",
    "TaskContrast",
    "TaskDivergence",
    "TrajectoryGroup",
    "differing_task",
    "failing",
    "group_runs",
    "mixed_task",
    "passing",
    "pick_pair",
    "pick_sides",
    "side_divergence",
    "task_divergences",
]


def passing(record: RunRecord) -> bool:
    """The run passed."""
    return record.status is RunStatus.PASS


def failing(record: RunRecord) -> bool:
    """The run was judged and did not pass (``fail``, ``budget_exceeded``)."""
    return record.judged and record.status is not RunStatus.PASS


class Side(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One run of a diff, as the output names it."""

    source: str
    """The report directory or run id, or the transcript file, it was read from."""
    task_id: str | None = None
    repetition: int | None = None
    status: str | None = None
    """``pass``, ``fail``, ``budget_exceeded`` or ``error``; ``None`` when read from a transcript alone."""
    why: str | None = None
    """Why it did not pass (failing verifiers with their detail, the budget, what broke)."""


class RunDiff(Frozen, frozen=True, kw_only=True):
    """Two runs and their trajectories aligned."""

    a: Side
    b: Side
    diff: TrajectoryDiff


class TrajectoryGroup(Frozen, frozen=True, kw_only=True):
    """Repetitions of one task that made the same calls."""

    label: str
    """``T1``, ``T2``... (largest group first)."""
    repetitions: tuple[int, ...]
    statuses: tuple[str, ...]
    """Each repetition's status, in the same order."""
    passed: int
    calls: int
    """How many tool calls the group's runs made."""
    tools: tuple[str, ...]
    """The tools called, in order (a run's outline)."""


class TaskContrast(Frozen, frozen=True, kw_only=True):
    """The repetitions of one task: their groups, and a passing run set against a failing one."""

    source: str
    task_id: str
    runs: int
    """Repetitions with a transcript (grouped)."""
    without_transcript: tuple[int, ...] = ()
    """Repetitions whose transcript was not kept (not grouped)."""
    groups: tuple[TrajectoryGroup, ...]
    contrast: RunDiff | None = None
    """A passing run against a failing one; ``None`` when the task has not both."""


def group_runs(runs: Sequence[tuple[RunRecord, Trajectory]]) -> tuple[TrajectoryGroup, ...]:
    """The runs grouped by their calls (module docstring), largest group first."""
    by_key: dict[tuple[tuple[str, str], ...], list[tuple[RunRecord, Trajectory]]] = {}
    for record, trajectory in sorted(runs, key=lambda run: run[0].repetition):
        by_key.setdefault(tuple(step_key(s) for s in trajectory.steps), []).append((record, trajectory))
    ordered = sorted(by_key.values(), key=lambda members: (-len(members), members[0][0].repetition))
    return tuple(
        TrajectoryGroup(
            label=f"T{number}",
            repetitions=tuple(record.repetition for record, _ in members),
            statuses=tuple(str(record.status) for record, _ in members),
            passed=sum(1 for record, _ in members if passing(record)),
            calls=len(members[0][1].steps),
            tools=tuple(step.name for step in members[0][1].steps),
        )
        for number, members in enumerate(ordered, start=1)
    )


def pick_pair(groups: Sequence[TrajectoryGroup]) -> tuple[int, int] | None:
    """The (passing, failing) repetitions to set against each other (module docstring), or ``None``."""
    with_pass = [g for g in groups if g.passed]
    with_fail = [g for g in groups if any(s in _FAILING for s in g.statuses)]
    if not with_pass or not with_fail:
        return None
    best = max(with_pass, key=lambda g: (g.passed, -groups.index(g)))
    good = next(rep for rep, s in zip(best.repetitions, best.statuses, strict=True) if s == RunStatus.PASS)
    others = [g for g in with_fail if g is not best] or with_fail
    worst = others[0]  # groups are ordered largest first
    bad = next(rep for rep, s in zip(worst.repetitions, worst.statuses, strict=True) if s in _FAILING)
    return good, bad


_FAILING = frozenset({RunStatus.FAIL, RunStatus.BUDGET_EXCEEDED})


def _any(record: RunRecord) -> bool:
    return True


def _first(records: Sequence[RunRecord], test: Callable[[RunRecord], bool] = _any) -> RunRecord | None:
    """The first run (by repetition) that passes ``test``."""
    return next((r for r in sorted(records, key=lambda r: r.repetition) if test(r)), None)


def pick_sides(a: Sequence[RunRecord], b: Sequence[RunRecord]) -> tuple[RunRecord, RunRecord] | None:
    """The run of each side to compare (module docstring); ``None`` when a side has no run."""
    good_a, bad_b = _first(a, passing), _first(b, failing)
    if good_a is not None and bad_b is not None:
        return good_a, bad_b
    bad_a, good_b = _first(a, failing), _first(b, passing)
    if bad_a is not None and good_b is not None:
        return bad_a, good_b
    first_a, first_b = _first(a), _first(b)
    return (first_a, first_b) if first_a is not None and first_b is not None else None


def mixed_task(records: Sequence[RunRecord]) -> str | None:
    """The first task (by id) with both a passing and a failing run, else ``None``."""
    tasks = sorted({r.task_id for r in records})
    return next(
        (
            task
            for task in tasks
            if any(passing(r) for r in records if r.task_id == task)
            and any(failing(r) for r in records if r.task_id == task)
        ),
        None,
    )


def differing_task(a: Sequence[RunRecord], b: Sequence[RunRecord]) -> str | None:
    """The task two runs' records are compared on when none is named: their only common task, else the first
    common task (by id) where one side has a passing run and the other a failing one; else ``None``."""
    common = sorted({r.task_id for r in a} & {r.task_id for r in b})
    if len(common) == 1:
        return common[0]
    for task in common:
        mine, theirs = [r for r in a if r.task_id == task], [r for r in b if r.task_id == task]
        if (any(map(passing, mine)) and any(map(failing, theirs))) or (
            any(map(failing, mine)) and any(map(passing, theirs))
        ):
            return task
    return None


class TaskDivergence(Frozen, frozen=True, kw_only=True):
    """Where a passing run (A) and a failing run (B) of one task part, for a report page."""

    task_id: str
    a_repetition: int
    a_status: str
    b_repetition: int
    b_status: str
    line: str
    """``divergence_line``: ``first divergence at step 2: A edit_file, B list_dir``."""


def _divergence(
    task_id: str, a: RunRecord, b: RunRecord, path_a: Trajectory, path_b: Trajectory
) -> TaskDivergence:
    return TaskDivergence(
        task_id=task_id,
        a_repetition=a.repetition,
        a_status=str(a.status),
        b_repetition=b.repetition,
        b_status=str(b.status),
        line=divergence_line(diff_trajectories(path_a, path_b)),
    )


def task_divergences(
    records: Sequence[RunRecord], trajectories: Mapping[tuple[str, int], Trajectory]
) -> tuple[TaskDivergence, ...]:
    """Each task (by id) with a passing and a failing run that have trajectories: the pair and the line."""
    out: list[TaskDivergence] = []
    for task_id in sorted({r.task_id for r in records}):
        runs = [
            (r, trajectories[(task_id, r.repetition)])
            for r in records
            if r.task_id == task_id and (task_id, r.repetition) in trajectories
        ]
        pair = pick_pair(group_runs(runs))
        if pair is None:
            continue
        by_rep = {record.repetition: (record, path) for record, path in runs}
        (good, good_path), (bad, bad_path) = by_rep[pair[0]], by_rep[pair[1]]
        out.append(_divergence(task_id, good, bad, good_path, bad_path))
    return tuple(out)


def side_divergence(
    task_id: str,
    a: Sequence[RunRecord],
    b: Sequence[RunRecord],
    trajectory: Callable[[str, RunRecord], Trajectory | None],
) -> TaskDivergence | None:
    """A passing run of one side against a failing run of the other (``pick_sides``), for comparison.html;
    ``None`` when there is no such pair or a transcript is missing. ``trajectory(side, record)`` reads one
    (``side``: ``a`` or ``b``)."""
    mine, theirs = [r for r in a if r.task_id == task_id], [r for r in b if r.task_id == task_id]
    pair = pick_sides(mine, theirs)
    if pair is None or passing(pair[0]) == passing(pair[1]) or not all(r.judged for r in pair):
        return None
    path_a, path_b = trajectory("a", pair[0]), trajectory("b", pair[1])
    if path_a is None or path_b is None:
        return None
    return _divergence(task_id, pair[0], pair[1], path_a, path_b)
