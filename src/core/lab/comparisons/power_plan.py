"""``alisio eval power``: its flags as given (text) validated into a ``PowerRequest``, the plan
(``PowerPlan``, what ``--json`` prints) and the plan as text.

The formulas are the statistics kernel's (``alisio.core.stats.power``); this module is the command's model.
"""

from __future__ import annotations

import math

from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.errors import PowerInputError
from alisio.core.lab.comparisons.power_profile import MeasuredProfile
from alisio.core.stats.power import (
    EXACT_UP_TO,
    GATE,
    MAX_TASKS,
    SUITE_MIN_TASKS,
    candidate_rate,
    exact_runs,
    runs_per_side,
    runs_per_task,
)

__all__ = [
    "ALPHA_RANGE",
    "MIN_DETECT",
    "POWER_RANGE",
    "PowerPlan",
    "PowerRequest",
    "parse_power_request",
    "plan_power",
    "render_power",
]

MIN_DETECT = 1e-4
"""The smallest change ``eval power`` plans for (0.01 pp): below it no run count is meaningful (and float
noise, not the change, decides the answer)."""
ALPHA_RANGE = (1e-6, 0.5)
POWER_RANGE = (0.01, 0.999999)
"""The levels ``eval power`` accepts: past them the normal quantiles are infinite or the plan meaningless
("1e-298% power")."""


class PowerRequest(Frozen, frozen=True, kw_only=True):
    """The validated flags of ``alisio eval power``."""

    baseline_rate: float
    detect: float
    alpha: float = 0.05
    power: float = 0.8
    tasks: int | None = None
    task_sd: float = 0.0
    measured: MeasuredProfile | None = None
    """``--from REPORT``: the suite plan uses its within-task variance, not the independent-runs one."""


class PowerPlan(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """What ``alisio eval power --json`` prints."""

    baseline_rate: float
    candidate_rate: float
    detect: float
    alpha: float
    power: float
    runs_per_side: int
    """Runs per side for one task (rounded up)."""
    runs_per_side_exact: float
    tasks: int | None = None
    task_sd: float | None = None
    """Between-task standard deviation of the change assumed for the suite plan."""
    runs_per_task: int | None = None
    """Runs per task and side for the paired suite comparison over ``tasks`` tasks (rounded up); absent when
    no number of runs is enough with that many tasks."""
    runs_per_task_exact: float | None = None
    min_tasks: int | None = None
    """The fewest tasks for which some number of runs per task is enough (absent when more than
    ``MAX_TASKS`` would be needed)."""
    runs_per_side_method: str = "normal"
    """``normal`` (the pooled two-proportion formula, floored at 5) or ``boschloo_exact`` (exact power)."""
    suite_statistic: str | None = None
    """What the suite plan sizes: ``paired_t`` (the stratified permutation test compare prints is close to
    it from ``SUITE_MIN_TASKS`` tasks up)."""
    warnings: tuple[str, ...] = ()
    measured: MeasuredProfile | None = None
    """``--from REPORT``: what was read from the report, which the suite plan used."""
    tasks_at_report_k: int | None = None
    """``--from REPORT``: the fewest tasks for which the report's k per task and side is enough (absent when
    more than ``MAX_TASKS`` would be needed)."""


def _number(flag: str, text: str | None, default: float | None = None) -> Result[float, PowerInputError]:
    if text is None:
        if default is None:
            return Failure(PowerInputError(flag=flag, message="is required"))
        return Success(default)
    try:
        value = float(text)
    except ValueError:
        return Failure(PowerInputError(flag=flag, message=f"expected a number, got {text!r}"))
    if not math.isfinite(value):
        return Failure(PowerInputError(flag=flag, message=f"expected a finite number, got {text!r}"))
    return Success(value)


def _range(flag: str, value: float, low: float, high: float, closed: bool) -> Result[float, PowerInputError]:
    inside = low <= value <= high if closed else low < value < high
    if inside:
        return Success(value)
    bounds = f"[{low:g}, {high:g}]" if closed else f"({low:g}, {high:g})"
    return Failure(PowerInputError(flag=flag, message=f"must be in {bounds}, got {value:g}"))


def _tasks(text: str | None) -> Result[int | None, PowerInputError]:
    if text is None:
        return Success(None)
    if not text.strip().isdigit() or not 2 <= int(text) <= MAX_TASKS:
        message = (
            f"expected a whole number of tasks from 2 (the paired comparison needs a spread) to {MAX_TASKS}, "
            f"got {text[:40]!r}"
        )
        return Failure(PowerInputError(flag="--tasks", message=message))
    return Success(int(text))


def parse_power_request(
    baseline_rate: str | None,
    detect: str | None,
    alpha: str | None = None,
    power: str | None = None,
    tasks: str | None = None,
    task_sd: str | None = None,
) -> Result[PowerRequest, PowerInputError]:
    """The flags of ``alisio eval power`` as given (text), validated into a ``PowerRequest``.

    Returns:
        ``Failure(PowerInputError)`` naming the first flag that is missing, not a number or out of range:
        rates in [0, 1], the detected change at least ``MIN_DETECT`` up or down with the candidate rate in
        [0, 1], alpha in ``ALPHA_RANGE``, power in ``POWER_RANGE``, tasks a whole number from 2 to
        ``MAX_TASKS``, task-sd >= 0, task-sd only with tasks.
    """
    p1 = _number("--baseline-rate", baseline_rate).bind(
        lambda v: _range("--baseline-rate", v, 0.0, 1.0, True)
    )
    level = _number("--alpha", alpha, 0.05).bind(lambda v: _range("--alpha", v, *ALPHA_RANGE, True))
    wanted = _number("--power", power, 0.8).bind(lambda v: _range("--power", v, *POWER_RANGE, True))
    sd = _number("--task-sd", task_sd, 0.0).bind(lambda v: _range("--task-sd", v, 0.0, 1.0, True))
    return p1.bind(
        lambda rate: (
            _number("--detect", detect)
            .bind(lambda delta: _delta(rate, delta))
            .bind(
                lambda delta: level.bind(
                    lambda a: wanted.bind(
                        lambda w: _tasks(tasks).bind(
                            lambda t: sd.bind(
                                lambda s: _request(rate, delta, a, w, t, s, task_sd is not None)
                            )
                        )
                    )
                )
            )
        )
    )


def _delta(rate: float, delta: float) -> Result[float, PowerInputError]:
    if delta == 0.0:
        return Failure(PowerInputError(flag="--detect", message="the change to detect must not be 0"))
    if abs(delta) < MIN_DETECT:
        message = f"the change to detect must be at least {MIN_DETECT:g} (0.01 pp) up or down, got {delta:g}"
        return Failure(PowerInputError(flag="--detect", message=message))
    if not 0.0 <= candidate_rate(rate, delta) <= 1.0:
        message = f"{rate:g} {delta:+g} = {candidate_rate(rate, delta):g} is not a rate in [0, 1]"
        return Failure(PowerInputError(flag="--detect", message=message))
    return Success(delta)


def _request(
    rate: float, delta: float, alpha: float, power: float, tasks: int | None, sd: float, sd_given: bool
) -> Result[PowerRequest, PowerInputError]:
    if sd_given and tasks is None:
        message = "only applies to the suite plan: give --tasks too"
        return Failure(PowerInputError(flag="--task-sd", message=message))
    return Success(
        PowerRequest(baseline_rate=rate, detect=delta, alpha=alpha, power=power, tasks=tasks, task_sd=sd)
    )


def _tasks_at_k(r: PowerRequest, k: int) -> int | None:
    """The fewest tasks whose suite plan needs at most ``k`` runs per task and side (None past MAX_TASKS)."""
    within = None if r.measured is None else r.measured.within_variance

    def enough(tasks: int) -> bool:
        need = runs_per_task(r.baseline_rate, r.detect, tasks, r.task_sd, r.alpha, r.power, within)[0]
        return need is not None and max(GATE, math.ceil(need - 1e-9)) <= k

    if not enough(MAX_TASKS):
        return None
    low, high = 2, MAX_TASKS  # the runs needed fall as tasks are added
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle + 1, high)
    return low


def plan_power(request: PowerRequest) -> PowerPlan:
    """Runs per side for one task and, with ``tasks``, runs per task for the paired suite comparison (with
    ``measured``: its within-task variance, and the fewest tasks at the report's k)."""
    r = request
    exact = runs_per_side(r.baseline_rate, r.detect, r.alpha, r.power)
    per_task: tuple[float | None, int] = (None, 0)
    within = None if r.measured is None else r.measured.within_variance
    if r.tasks is not None:
        per_task = runs_per_task(r.baseline_rate, r.detect, r.tasks, r.task_sd, r.alpha, r.power, within)
    k_exact = per_task[0]
    normal = math.ceil(exact - 1e-9)
    small = None
    if normal <= EXACT_UP_TO:
        small = exact_runs(
            r.baseline_rate, candidate_rate(r.baseline_rate, r.detect), normal, r.alpha, r.power
        )
        normal = EXACT_UP_TO + 1 if small is None else normal  # not even 10 runs reach it exactly
    warnings: tuple[str, ...] = ()
    if r.tasks is not None and r.tasks < SUITE_MIN_TASKS:
        warnings = (
            f"with {r.tasks} tasks the paired t approximation behind the suite plan is unreliable "
            f"(use at least {SUITE_MIN_TASKS} tasks, or plan one task at a time)",
        )
    return PowerPlan(
        baseline_rate=r.baseline_rate,
        candidate_rate=candidate_rate(r.baseline_rate, r.detect),
        detect=r.detect,
        alpha=r.alpha,
        power=r.power,
        runs_per_side=max(GATE, normal if small is None else small),
        runs_per_side_exact=exact,
        runs_per_side_method="normal" if small is None else "boschloo_exact",
        tasks=r.tasks,
        task_sd=None if r.tasks is None else r.task_sd,
        runs_per_task=None if k_exact is None else max(GATE, math.ceil(k_exact - 1e-9)),
        runs_per_task_exact=k_exact,
        min_tasks=None if r.tasks is None or per_task[1] > MAX_TASKS else per_task[1],
        suite_statistic=None if r.tasks is None else "paired_t",
        warnings=warnings,
        measured=r.measured,
        tasks_at_report_k=None if r.measured is None else _tasks_at_k(r, r.measured.k),
    )


def _pct(rate: float) -> str:
    return f"{rate * 100:.1f}%"


def _one_task_line(p: PowerPlan) -> str:
    if p.runs_per_side_method == "boschloo_exact":
        how = f"the exact power of Boschloo's test; the normal formula says {p.runs_per_side_exact:.1f}"
    else:
        how = f"{p.runs_per_side_exact:.1f} before rounding up; two-proportion test with the pooled variance"
        how += f" under the null; at least {GATE}, the judged runs a verdict needs"
    return f"- one task: {p.runs_per_side} runs per side ({how})."


def _measured_lines(p: PowerPlan) -> list[str]:
    """What ``--from REPORT`` read, and what the plan still assumes."""
    m = p.measured
    if m is None:
        return []
    icc = ""
    if m.icc is not None:
        shown = (
            f"{m.icc:.2f}"
            if m.icc_interval is None
            else (f"{m.icc:.2f} [{m.icc_interval.low:.2f}, {m.icc_interval.high:.2f}]")
        )
        icc = f", ICC {shown}"
    lines = [
        f"Measured in report {m.run_id} ({m.tasks} tasks, k={m.k}): suite rate {_pct(m.suite_rate)}{icc}; "
        f"within-task variance per run {m.within_variance:.4f}, against {m.independent_variance:.4f} if every "
        f"task sat at {_pct(m.suite_rate)} (what the plan assumes without --from).",
        f"Assumed: every task's rate moves by {p.detect * 100:+.1f} pp (give the spread of the change across "
        f"tasks with --task-sd; now {(p.task_sd or 0.0) * 100:.1f} pp), runs independent within a task.",
    ]
    return lines


def _report_k_line(p: PowerPlan) -> list[str]:
    m = p.measured
    if m is None:
        return []
    if p.tasks_at_report_k is None:
        return [
            f"- at the report's k={m.k} runs per task and side: more than {MAX_TASKS} tasks would be needed."
        ]
    return [f"- at the report's k={m.k} runs per task and side: {p.tasks_at_report_k} tasks."]


def render_power(plan: PowerPlan) -> str:
    """What ``alisio eval power`` prints without ``--json``: the plan in sentences."""
    p = plan
    lines = [
        *_measured_lines(p),
        f"To detect {_pct(p.baseline_rate)} -> {_pct(p.candidate_rate)} ({p.detect * 100:+.1f} pp) with "
        f"{p.power * 100:g}% power at two-sided alpha {p.alpha:g}:",
        _one_task_line(p),
    ]
    if p.tasks is not None:
        spread = f"the change varying across tasks with standard deviation {(p.task_sd or 0.0) * 100:.1f} pp"
        if p.measured is not None:
            spread += ", the measured within-task variance"
        if p.runs_per_task is not None and p.runs_per_task_exact is not None:
            lines.append(
                f"- {p.tasks} tasks paired by task, {spread}: {p.runs_per_task} runs per task and side "
                f"({p.runs_per_task_exact:.1f} before rounding up, at least {GATE}; sized for a paired t test "
                "of the mean difference, which the stratified permutation p of eval compare tracks)."
            )
        elif p.min_tasks is not None and p.min_tasks <= MAX_TASKS:
            lines.append(
                f"- {p.tasks} tasks paired by task, {spread}: no number of runs per task is enough; "
                f"at least {p.min_tasks} tasks are needed."
            )
        else:
            lines.append(
                f"- {p.tasks} tasks paired by task, {spread}: no number of runs per task is enough; "
                f"more than {MAX_TASKS} tasks would be needed."
            )
    lines += _report_k_line(p)
    lines += [f"warning: {w}." for w in p.warnings]
    lines.append(
        "These sizes are for a 5% test (eval compare --verdict exact, before the correction across tasks); "
        "the default disjoint-interval verdict needs about 1.65 times as many runs for the same power."
    )
    return "\n".join(lines) + "\n"
