"""``alisio eval diff A [B] [--task ID]... [--rep N]... [--json]``: where two runs part, and why one task passes
some times and fails others.

A and B are each a run id (``latest``, a unique prefix), a report directory, an ``eval export`` bundle, a
transcript file (``runs/<task>/<rep>.jsonl``) or the directory ``alisio run`` kept
(``alisio.shell.lab.trajectories``).

- Two sides: one run of each. ``--task`` and ``--rep`` given once apply to both sides, given twice the first
  is A's and the second B's. Without ``--task`` the sides' only common task, else the first where one side
  passes and the other fails; without ``--rep`` a passing run of one side against a failing run of the other
  when there are such, else the first run of each (``alisio.core.lab.trajectories.contrast``).
- One side: the repetitions of one task (``--task``, default the first task with both passing and failing
  runs), grouped by the tool calls they made, each group saying how many passed; then a passing run against
  a failing one. ``--rep N --rep M`` compares those two repetitions instead.

The comparison (``alisio.core.lab.trajectories.align``) aligns the two sequences of tool calls, names the
first sustained divergence (the step, both calls, their arguments' difference, the model's text just before
each), lists every step with the tokens and time each run had spent, and where each run ended. ``--json``
prints the same as one JSON document.

Exit codes: 0 compared (or nothing to contrast, which it says); 1 a run, task, repetition or file that
cannot be found or read, or flags that do not fit the sides (one line naming what there is).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli import common
from alisio.shell.cli.options import Json

if TYPE_CHECKING:
    from alisio.core.lab.runs.records import RunRecord
    from alisio.core.lab.trajectories.contrast import RunDiff, Side, TaskContrast
    from alisio.core.lab.trajectories.trajectory import Trajectory
    from alisio.shell.lab.trajectories import Runs

Refs = Annotated[
    list[str],
    typer.Argument(
        help="One or two runs: a run id (latest, a unique prefix), a report directory, an eval export bundle, "
        "a transcript file (runs/<task>/<rep>.jsonl) or an alisio run directory. One: the repetitions of one "
        "task, passing against failing.",
        metavar="A [B]",
        show_default=False,
    ),
]
TaskFlag = Annotated[
    list[str] | None,
    typer.Option(
        "--task",
        metavar="ID",
        help="The task (once: both sides; twice: A's, then B's). Default: the task where the runs differ.",
        show_default=False,
    ),
]
RepFlag = Annotated[
    list[int] | None,
    typer.Option(
        "--rep",
        metavar="N",
        help="The repetition (once: both sides; twice: A's, then B's, or two repetitions of one run). "
        "Default: a passing run against a failing one.",
        show_default=False,
    ),
]


def diff(refs: Refs, task: TaskFlag = None, rep: RepFlag = None, json_output: Json = False) -> ExitCode:
    """Where two runs part: the first sustained divergence of their tool calls, step by step, and how each ended."""
    import msgspec

    from alisio.core.lab.outputs.render_diff import render_contrast, render_run_diff
    from alisio.core.lab.trajectories.contrast import TaskContrast
    from alisio.shell.cli.safe_text import redacted, shown
    from alisio.shell.config_home import data_dir
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.trajectories import load_runs

    tasks, reps = tuple(task or ()), tuple(rep or ())
    if not 1 <= len(refs) <= 2:
        raise CommandError(f"give one run (its repetitions are compared) or two, not {len(refs)}")
    if len(tasks) > len(refs) or len(reps) > 2:
        raise CommandError(
            f"--task and --rep are given once (both sides) or once per side: {len(refs)} "
            f"{'run' if len(refs) == 1 else 'runs'}, {len(tasks)} --task, {len(reps)} --rep"
        )
    data_root = data_dir(common.environment())
    sides = [load_runs(ref, data_root) for ref in refs]
    result: RunDiff | TaskContrast
    if len(sides) == 2:
        result = _two(sides[0], sides[1], tasks, reps)
    elif len(reps) == 2:
        result = _two(sides[0], sides[0], tasks, reps)
    elif reps:
        raise CommandError(
            "--rep once with one run: give --rep twice to compare two of its repetitions, or a second run"
        )
    else:
        result = _contrast(sides[0], tasks[0] if tasks else None)
    if json_output:
        common.out(redacted(msgspec.json.encode(result).decode()) + "\n")
    else:
        common.out(
            shown(render_contrast(result) if isinstance(result, TaskContrast) else render_run_diff(result))
        )
    return ExitCode.OK


def _record(runs: Runs, task_id: str, rep: int | None) -> RunRecord:
    """The run of ``task_id`` (``rep``, else its first that did not pass, else its first), or one line naming
    the tasks or repetitions there are."""
    from returns.result import Failure, Success

    from alisio.core.lab.outputs.show import pick_run
    from alisio.shell.errors import CommandError

    match pick_run(runs.records, task_id, rep):
        case Success(record):
            return record  # type: ignore[no-any-return]
        case Failure(problem):
            raise CommandError(f"{runs.source}: {problem}")
    raise AssertionError("unreachable")  # pragma: no cover


def _side(runs: Runs, record: RunRecord | None) -> Side:
    from alisio.core.lab.outputs.progress import why_not_passed
    from alisio.core.lab.trajectories.contrast import Side

    if record is None:
        return Side(source=runs.source)
    why = why_not_passed(record) or (record.reason or None)
    return Side(
        source=runs.source,
        task_id=record.task_id,
        repetition=record.repetition,
        status=str(record.status),
        why=why,
    )


def _task_for(index: int, runs: Runs, other: Runs, tasks: tuple[str, ...]) -> str | None:
    """The task of side ``index`` to compare: the ``--task`` given for it, else the one the two sides differ
    on (``None`` for a lone transcript)."""
    from alisio.core.lab.trajectories.contrast import differing_task
    from alisio.shell.errors import CommandError

    if runs.lone:
        return None
    if tasks:
        return tasks[min(index, len(tasks) - 1)]
    found = differing_task(runs.records, runs.records if other.lone else other.records)
    if found is None:
        tasks_there = ", ".join(sorted({r.task_id for r in runs.records})) or "none"
        raise CommandError(f"{runs.source}: name the task to compare with --task (tasks: {tasks_there})")
    return found


def _chosen(
    a: Runs, b: Runs, tasks: tuple[str, ...], reps: tuple[int, ...]
) -> tuple[RunRecord | None, RunRecord | None]:
    """The record of each side (``None`` for a lone transcript), as the module docstring says."""
    from alisio.core.lab.trajectories.contrast import pick_sides
    from alisio.shell.errors import CommandError

    if a.lone and b.lone:
        if tasks or reps:
            raise CommandError("two transcript files are one run each: --task and --rep do not apply")
        return None, None
    task_a, task_b = _task_for(0, a, b, tasks), _task_for(1, b, a, tasks)
    if reps or a.lone or b.lone:
        chosen = []
        for index, (side, task_id) in enumerate(((a, task_a), (b, task_b))):
            rep = reps[min(index, len(reps) - 1)] if reps else None
            chosen.append(None if task_id is None else _record(side, task_id, rep))
        return chosen[0], chosen[1]
    assert task_a is not None and task_b is not None
    pair = pick_sides(
        [r for r in a.records if r.task_id == task_a], [r for r in b.records if r.task_id == task_b]
    )
    if pair is None:  # a side without the task: its runs say which tasks it has
        return _record(a, task_a, None), _record(b, task_b, None)
    return pair


def _trajectory_of(runs: Runs, record: RunRecord | None) -> Trajectory:
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.trajectories import read_trajectory

    trajectory = read_trajectory(runs, record)
    if trajectory is None:
        assert record is not None
        raise CommandError(
            f"{runs.source}: no transcript was kept for {record.task_id} rep {record.repetition}"
        )
    return trajectory


def _two(a: Runs, b: Runs, tasks: tuple[str, ...], reps: tuple[int, ...]) -> RunDiff:
    from alisio.core.lab.trajectories.align import diff_trajectories
    from alisio.core.lab.trajectories.contrast import RunDiff

    record_a, record_b = _chosen(a, b, tasks, reps)
    trajectories = _trajectory_of(a, record_a), _trajectory_of(b, record_b)
    return RunDiff(a=_side(a, record_a), b=_side(b, record_b), diff=diff_trajectories(*trajectories))


def _contrast(runs: Runs, given: str | None) -> TaskContrast:
    from alisio.core.lab.trajectories.align import diff_trajectories
    from alisio.core.lab.trajectories.contrast import RunDiff, TaskContrast, group_runs, mixed_task, pick_pair
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.trajectories import read_trajectory

    if runs.lone:
        raise CommandError(
            f"{runs.source}: one transcript alone has nothing to compare with: give a second run or transcript"
        )
    task_id = given or mixed_task(runs.records)
    if task_id is None:
        tasks = ", ".join(sorted({r.task_id for r in runs.records})) or "none"
        raise CommandError(
            f"{runs.source}: no task has both passing and failing runs (tasks: {tasks}); name one with --task"
        )
    mine = sorted((r for r in runs.records if r.task_id == task_id), key=lambda r: r.repetition)
    if not mine:
        _record(runs, task_id, None)  # names the tasks there are
    read = [(record, read_trajectory(runs, record)) for record in mine]
    kept = [(record, trajectory) for record, trajectory in read if trajectory is not None]
    groups = group_runs(kept)
    pair = pick_pair(groups)
    contrast = None
    if pair is not None:
        by_rep = {record.repetition: (record, trajectory) for record, trajectory in kept}
        (good, good_path), (bad, bad_path) = by_rep[pair[0]], by_rep[pair[1]]
        contrast = RunDiff(
            a=_side(runs, good), b=_side(runs, bad), diff=diff_trajectories(good_path, bad_path)
        )
    return TaskContrast(
        source=runs.source,
        task_id=task_id,
        runs=len(kept),
        without_transcript=tuple(record.repetition for record, trajectory in read if trajectory is None),
        groups=groups,
        contrast=contrast,
    )
