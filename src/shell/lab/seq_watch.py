"""The feed of a sequential command: after every finished run, the task's look; a stopped task starts no run.

``eval variants --sequential``, ``eval run --sequential --baseline`` and ``eval run --until-width`` run the
repetition-major plan of ``alisio.core.lab.plans.seq_run.sequential_plan`` through a ``SpecFeed`` whose ``skip`` is
``SeqWatch.skip`` and whose ``learn`` is ``SeqWatch.learn``: each finished record updates its task's outcomes
and its stop (``alisio.core.lab.plans.seq_run.look``, a pure function of the outcomes so far); an executor pulls
the next spec only when it can start it, and a spec of a stopped task is skipped then. Runs already in
flight when their task stops are waited for, and their records kept and counted (the report's
``afterStop``): the final look includes them, which is valid because the stop is monotone and the final
look is itself a stopping time.

A resume builds the watch from the records runs.jsonl kept, so a task stopped before the kill stays stopped.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from alisio.core.lab.comparisons.variants import VariantsPlan
from alisio.core.lab.plans.seq_run import look, outcomes, paired_outcomes, sequential_block
from alisio.core.lab.reports.report import Report
from alisio.core.lab.reports.seq_block import SequentialPlan
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.suites.schedule import RunSpec
from alisio.core.lab.suites.suite import Suite, Task
from alisio.shell.errors import CommandError
from alisio.shell.lab.runner import SpecFeed

__all__ = ["SeqWatch", "checked_sequential", "sequential_feed", "with_sequential"]


class SeqWatch:
    """Each task's records so far and whether it has stopped."""

    def __init__(self, plan: SequentialPlan, task_ids: Sequence[str], kept: Sequence[RunRecord]) -> None:
        self.plan = plan
        self.tasks = len(task_ids)
        self.records: dict[str, list[RunRecord]] = {task_id: [] for task_id in task_ids}
        self.stopped: set[str] = set()
        for record in kept:
            self.learn(record)

    def learn(self, record: RunRecord) -> None:
        """A run finished: look at its task again (a stopped task stays stopped)."""
        mine = self.records.setdefault(record.task_id, [])
        mine.append(record)
        if record.task_id in self.stopped:
            return
        if self.plan.kind == "two-arm":  # paired by repetition, a repetition with an error skipped
            base, candidate = paired_outcomes(
                (r for r in mine if r.variant == self.plan.baseline),
                (r for r in mine if r.variant != self.plan.baseline),
            )
        else:
            base, candidate = (), outcomes(mine)
        if look(self.plan, self.tasks, record.task_id, (base, candidate)).stopped:
            self.stopped.add(record.task_id)

    def skip(self, spec: RunSpec) -> bool:
        """Whether ``spec`` must not start: its task has stopped."""
        return spec.task_id in self.stopped


def sequential_feed(
    plan: SequentialPlan | None, todo: Sequence[RunSpec], task_ids: Sequence[str], kept: Sequence[RunRecord]
) -> SpecFeed:
    """The feed of the runs ``todo``: all of them (``plan`` is ``None``), or those of tasks not stopped."""
    if plan is None:
        return SpecFeed(todo)
    watch = SeqWatch(plan, task_ids, kept)
    return SpecFeed(todo, skip=watch.skip, learn=watch.learn)


def with_sequential(
    plan: SequentialPlan | None,
    report: Report,
    records: Sequence[RunRecord],
    variant: str | None,
    task_ids: Sequence[str],
) -> Report:
    """``report`` (one arm's) with its ``sequential`` block over every arm's ``records`` (the family:
    ``task_ids``, the command's tasks); as it is without a sequential design."""
    if plan is None:
        return report
    reports = {task.task_id: task for task in report.tasks}
    block = sequential_block(plan, task_ids, records, variant, reports)
    return msgspec.structs.replace(report, sequential=block)


def checked_sequential(
    plan: SequentialPlan | None, variants: VariantsPlan | None, tasks: Sequence[Task], suite: Suite
) -> SequentialPlan | None:
    """``plan`` checked against what runs, before the first run: two variants, the first the baseline; a
    baseline report of this suite and version with judged runs of every selected task (its counts kept for
    those tasks only).

    Raises:
        CommandError: one line naming what does not fit (nothing was run).
    """
    if plan is None:
        return None
    if plan.kind == "two-arm":
        found = () if variants is None else variants.variants
        if len(found) != 2:
            raise CommandError(
                f"--sequential compares two variants (the baseline and one candidate); the variants file "
                f"has {len(found)}: nothing was run"
            )
        return msgspec.structs.replace(plan, baseline=found[0].id)
    if plan.kind != "baseline":
        return plan
    here = f"{suite.suite_id} {suite.suite_version}"
    if plan.baseline_suite != here:
        raise CommandError(
            f"--baseline {plan.baseline}: a report of suite {plan.baseline_suite}, not of {here}: compare "
            "like with like (nothing was run)"
        )
    counts = {count.task_id: count for count in plan.baseline_counts}
    missing = [task.id for task in tasks if task.id not in counts]
    if missing:
        raise CommandError(
            f"--baseline {plan.baseline}: no judged run of task {', '.join(missing)} in that report "
            "(select the tasks it has with --tasks; nothing was run)"
        )
    kept = tuple(counts[task.id] for task in tasks)
    return msgspec.structs.replace(plan, baseline_counts=kept)
