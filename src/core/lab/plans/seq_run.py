"""The sequential commands' plan and looks: which run comes next, and each task's stop from its records.

``alisio.core.stats.sequential`` holds the statistics (the e-values, the confidence sequences and their stop
rules); this module applies them to a command's records:

- ``sequential_plan``: repetition-major, so every task grows its outcomes in repetition order. Round ``r``
  runs every task's repetition ``r`` (tasks in the seeded order of ``alisio.core.lab.suites.schedule.plan_runs``);
  with two variants each (task, repetition) slot runs both back to back, in the listed order on even slots
  and reversed on odd ones (A, B, then B, A), as ``eval variants`` does. The same inputs give the same plan;
  run ``r`` gets ``seed + r``.
- ``outcomes``: a task's outcomes in one arm, in repetition order, up to the first repetition that has not
  finished (a run still in flight ends the prefix); errored runs are not outcomes (the assumption that an
  infrastructure error is unrelated to the outcome; the docs say so).
- ``paired_outcomes``: a task's pairs of two arms, paired *by repetition*: repetition j of the baseline with
  repetition j of the candidate, up to the first repetition missing on either side; a repetition with an
  errored run on either side gives no pair (both of its runs are left out). Dropping errored runs per arm
  first and pairing what is left by position would pair repetition j of one arm with a later repetition of the
  other after an error, and under a drift common to both arms (a provider that gets better or worse over
  the job) that makes a difference where there is none: 16.3% false decisions instead of 1.75% (max-k 100,
  rates drifting from 0.1 to 0.9, 40% errors on one arm; ``bench/bench_sequential.py --part drift``).
- ``look``: the task's stop at its outcomes so far, a pure function of them (resume recomputes it from
  runs.jsonl). ``first_stop`` finds the first look at which it had stopped, by bisection: a stop is monotone
  (once stopped at some prefix, stopped at every longer one).
- ``sequential_block``: report.json's ``sequential`` of one arm (``alisio.core.lab.reports.seq_block``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence

import msgspec
from returns.result import Result

from alisio.core.lab.reports.report import TaskReport
from alisio.core.lab.reports.seq_block import SequentialBlock, SequentialPlan, TaskStop, describe_plan
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.lab.suites.schedule import RunSpec, ScheduleError, plan_runs
from alisio.core.stats.rates import Interval
from alisio.core.stats.sequential import (
    SequentialDesign,
    SequentialStop,
    against_baseline,
    method_note,
    two_arm,
    until_width,
)

__all__ = [
    "TaskOutcomes",
    "both_arms",
    "design_of",
    "extended_plan",
    "first_stop",
    "look",
    "note_of",
    "outcomes",
    "paired_outcomes",
    "sequential_block",
    "sequential_gate",
    "sequential_plan",
]

TaskOutcomes = tuple[tuple[bool, ...], tuple[bool, ...]]
"""A task's outcomes: the baseline arm's (empty for a single arm) and the candidate's (or the single arm's)."""


def sequential_plan(
    variant_ids: Sequence[str] | None, task_ids: Sequence[str], max_k: int, seed: int
) -> Result[tuple[RunSpec, ...], ScheduleError]:
    """Every (task, repetition) slot once (per variant), repetition-major; see the module docstring.

    Returns:
        ``len(task_ids) * max_k`` specs (times the variants), or what ``plan_runs`` refuses.
    """

    def ordered(slots: tuple[RunSpec, ...]) -> tuple[RunSpec, ...]:
        rounds = sorted(slots, key=lambda spec: spec.repetition)  # stable: the seeded task order per round
        if variant_ids is None:
            return tuple(rounds)
        forward, backward = tuple(variant_ids), tuple(reversed(variant_ids))
        return tuple(
            msgspec.structs.replace(slot, variant=variant)
            for index, slot in enumerate(rounds)
            for variant in (forward if index % 2 == 0 else backward)
        )

    return plan_runs(task_ids, max_k, seed).map(ordered)


def outcomes(records: Iterable[RunRecord]) -> tuple[bool, ...]:
    """One task's outcomes in one arm (pass or not), repetition order, up to the first missing repetition;
    errored runs are left out."""
    by_rep = {record.repetition: record for record in records}
    found: list[bool] = []
    rep = 0
    while (record := by_rep.get(rep)) is not None:
        if record.status is not RunStatus.ERROR:
            found.append(record.status is RunStatus.PASS)
        rep += 1
    return tuple(found)


def _pairs(baseline: Iterable[RunRecord], candidate: Iterable[RunRecord]) -> list[tuple[int, bool, bool]]:
    """(repetition, baseline passed, candidate passed) of each pair, in repetition order (``paired_outcomes``)."""
    base = {record.repetition: record for record in baseline}
    cand = {record.repetition: record for record in candidate}
    pairs: list[tuple[int, bool, bool]] = []
    rep = 0
    while (b := base.get(rep)) is not None and (c := cand.get(rep)) is not None:
        if RunStatus.ERROR not in (b.status, c.status):
            pairs.append((rep, b.status is RunStatus.PASS, c.status is RunStatus.PASS))
        rep += 1
    return pairs


def paired_outcomes(baseline: Iterable[RunRecord], candidate: Iterable[RunRecord]) -> TaskOutcomes:
    """One task's pairs (module docstring): for j = 0, 1, ... while both arms have finished repetition j, the
    pair (baseline passed, candidate passed), skipped when either run errored. Both tuples have one entry per
    pair; the order records come in does not matter."""
    pairs = _pairs(baseline, candidate)
    return tuple(b for _, b, _ in pairs), tuple(c for _, _, c in pairs)


def design_of(plan: SequentialPlan, tasks: int) -> SequentialDesign:
    """The statistics' design of ``plan`` over a family of ``tasks`` tasks."""
    return SequentialDesign(
        alpha=plan.alpha,
        tasks=tasks,
        max_k=plan.max_k,
        min_k=plan.min_k,
        side=plan.side,
        margin=plan.margin,
    )


@functools.lru_cache(maxsize=4096)
def look(plan: SequentialPlan, tasks: int, task_id: str, seen: TaskOutcomes) -> SequentialStop:
    """The task's stop at the outcomes ``seen`` (its baseline arm's and its candidate's).

    Cached (a pure function of hashable values): the feed looks again after each run of either arm, and a
    report's ``first_stop`` bisects over prefixes the feed already looked at."""
    base, candidate = seen
    if plan.kind == "two-arm":
        return two_arm(design_of(plan, tasks), base, candidate)
    if plan.kind == "baseline":
        count = next(c for c in plan.baseline_counts if c.task_id == task_id)
        return against_baseline(design_of(plan, tasks), count.passes, count.judged, candidate)
    assert plan.width is not None  # a width plan always has one (checked where it is made)
    if not candidate:  # no outcome yet (an interrupted run, errors only): the whole [0, 1], not stopped
        return SequentialStop(
            stopped=False,
            reason=None,
            direction=None,
            runs=0,
            statistic=1.0,
            threshold=plan.width,
            interval=None,
        )
    return until_width(plan.alpha, tasks, plan.width, plan.max_k, plan.min_k, candidate)


def _cut(plan: SequentialPlan, seen: TaskOutcomes, n: int) -> TaskOutcomes:
    base, candidate = seen
    return (base[:n], candidate[:n]) if plan.kind == "two-arm" else (base, candidate[:n])


def first_stop(plan: SequentialPlan, tasks: int, task_id: str, seen: TaskOutcomes) -> int | None:
    """The fewest outcomes per arm at which the task had stopped (``None``: not stopped at ``seen``)."""
    base, candidate = seen
    top = min(len(base), len(candidate)) if plan.kind == "two-arm" else len(candidate)
    if not look(plan, tasks, task_id, _cut(plan, seen, top)).stopped:
        return None
    low, high = 0, top  # stopped at high, and (by monotony) at every longer prefix
    while low < high:
        middle = (low + high) // 2
        if look(plan, tasks, task_id, _cut(plan, seen, middle)).stopped:
            high = middle
        else:
            low = middle + 1
    return high


def note_of(plan: SequentialPlan, tasks: int) -> str:
    """The method footnote of ``plan``'s kind."""
    return method_note(plan.kind, design_of(plan, tasks), plan.width)


def _tokens_saved(task: TaskReport | None, saved: int) -> int | None:
    if task is None or task.measured.tokens is None or saved == 0:
        return None if task is None or task.measured.tokens is None else 0
    runs = task.measured.tokens_runs or task.judged
    return round(task.measured.tokens.total / runs * saved) if runs else None


def _task_stop(
    plan: SequentialPlan,
    tasks: int,
    task_id: str,
    seen: TaskOutcomes,
    arm: tuple[int, int],
    task: TaskReport | None,
    after: Callable[[int], int] | None = None,
) -> TaskStop:
    """The task's final look; ``arm``: this arm's finished runs and outcomes; ``after``: this arm's runs after
    the look that stopped the task, from its number of outcomes (default: the outcomes past it)."""
    runs, judged = arm
    stop = look(plan, tasks, task_id, seen)
    reason = stop.reason if stop.stopped else None
    if reason is None and runs >= plan.max_k:
        reason = "max-k"  # every planned run finished (some errored, so fewer outcomes than max_k)
    at = first_stop(plan, tasks, task_id, seen)
    saved = max(plan.max_k - runs, 0)
    low_high = stop.interval
    return TaskStop(
        task_id=task_id,
        runs=runs,
        judged=judged,
        reason=reason,
        direction=stop.direction if reason == "decided" else None,
        statistic=stop.statistic,
        threshold=stop.threshold,
        interval=Interval(low=low_high[0], high=low_high[1]) if low_high is not None else None,
        stopped_at=at,
        after_stop=0 if at is None else (after(at) if after is not None else max(judged - at, 0)),
        runs_saved=saved,
        tokens_saved=_tokens_saved(task, saved),
    )


def sequential_block(
    plan: SequentialPlan,
    task_ids: Sequence[str],
    records: Sequence[RunRecord],
    variant: str | None,
    reports: Mapping[str, TaskReport],
) -> SequentialBlock:
    """One arm's ``sequential`` block: each task's final look over ``records`` (every arm's), this arm's runs
    and savings (``reports``: this arm's task reports, for the tokens)."""
    other = next((r.variant for r in records if r.variant != variant), None)
    base_arm = plan.baseline if plan.kind == "two-arm" else None
    cand_arm = (other if variant == base_arm else variant) if plan.kind == "two-arm" else variant
    stops = []
    for task_id in sorted(task_ids):
        mine = [r for r in records if r.task_id == task_id]
        after: Callable[[int], int] | None = None
        if plan.kind == "two-arm":
            pairs = _pairs(
                (r for r in mine if r.variant == base_arm), (r for r in mine if r.variant == cand_arm)
            )
            base, candidate = tuple(b for _, b, _ in pairs), tuple(c for _, _, c in pairs)
            judged_reps = [
                r.repetition for r in mine if r.variant == variant and r.status is not RunStatus.ERROR
            ]

            def after(
                at: int, pairs: list[tuple[int, bool, bool]] = pairs, reps: list[int] = judged_reps
            ) -> int:
                # this arm's judged runs past the stopping pair's repetition (a partner may never have run)
                return sum(rep > pairs[at - 1][0] for rep in reps) if at else len(reps)

        else:
            base, candidate = (), outcomes(r for r in mine if r.variant == cand_arm)
        runs = sum(r.variant == variant for r in mine)
        arm = (runs, len(candidate))  # two arms: the pairs, the same in both arms
        stops.append(
            _task_stop(plan, len(task_ids), task_id, (base, candidate), arm, reports.get(task_id), after)
        )
    tokens = [s.tokens_saved for s in stops if s.tokens_saved is not None]
    return SequentialBlock(
        plan=plan,
        tasks=tuple(stops),
        runs_saved=sum(s.runs_saved for s in stops),
        tokens_saved=sum(tokens) if tokens else None,
        method=note_of(plan, len(task_ids)),
    )


def extended_plan(stored: SequentialPlan, given: SequentialPlan) -> SequentialPlan | None:
    """``stored`` with ``given``'s ``max_k``, when ``given`` is the same design with a larger ``max_k`` (a
    resume that asks for more runs), else None.

    Continuing is valid: each task's e-process and its threshold do not depend on ``max_k`` (Ville's
    inequality covers the whole unbounded sequence of looks, so stopping at 50 pairs, looking, and going on to
    100 is one more stopping rule); only futility and the max-k stop read ``max_k``, and they never decide a
    direction. A decided task stays decided; a task stopped for futility or max-k is looked at again under the
    larger ``max_k``. Starting a *fresh* job instead spends the error again."""
    if given.max_k <= stored.max_k:
        return None
    longer = msgspec.structs.replace(stored, max_k=given.max_k)
    return longer if describe_plan(longer) == describe_plan(given) else None


def both_arms(blocks: Sequence[SequentialBlock]) -> SequentialBlock:
    """The comparison's block of a two-variant run: the candidate's stops (the last block), each task's runs
    and savings summed over the arms."""
    last = blocks[-1]
    stops = []
    for index, stop in enumerate(last.tasks):
        mine = [block.tasks[index] for block in blocks]
        tokens = [s.tokens_saved for s in mine if s.tokens_saved is not None]
        stops.append(
            msgspec.structs.replace(
                stop,
                runs=sum(s.runs for s in mine),
                judged=sum(s.judged for s in mine),
                after_stop=sum(s.after_stop for s in mine),
                runs_saved=sum(s.runs_saved for s in mine),
                tokens_saved=sum(tokens) if tokens else None,
            )
        )
    totals = [block.tokens_saved for block in blocks if block.tokens_saved is not None]
    return msgspec.structs.replace(
        last,
        tasks=tuple(stops),
        runs_saved=sum(block.runs_saved for block in blocks),
        tokens_saved=sum(totals) if totals else None,
    )


def sequential_gate(block: SequentialBlock) -> tuple[str, bool]:
    """The sequential non-inferiority gate (``--fail-on worse-than:M`` under ``--sequential``): one line, and
    whether it is hit, i.e. some task was not decided "not worse by M" (futility, max-k, or not stopped)."""
    flag = f"--fail-on worse-than:{block.plan.margin:g} (sequential)"
    hits = [s for s in block.tasks if not (s.reason == "decided" and s.direction == "not-worse")]
    total = len(block.tasks)
    noun = "task" if total == 1 else "tasks"
    if not hits:
        return (
            f"{flag}: not hit: all {total} {noun} shown at most {block.plan.margin * 100:g} pp worse",
            False,
        )
    unit = "pairs" if block.plan.kind == "two-arm" else "runs"
    shown = ", ".join(
        f"{s.task_id} {s.reason} at {s.stopped_at} {unit}" if s.reason else f"{s.task_id} not stopped"
        for s in hits[:10]
    )
    more = f" and {len(hits) - 10} more" if len(hits) > 10 else ""
    return f"{flag}: hit by {len(hits)} of {total} {noun} ({shown}{more}): exit 4", True
