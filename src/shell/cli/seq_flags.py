"""The sequential flags: ``eval variants --sequential``, ``eval run --sequential --baseline``, ``--until-width``.

Each command takes the group (``SequentialFlags``; ``eval variants`` as ``VARIANTS`` takes it: no
``--baseline`` or ``--until-width``, and its own words for ``--sequential`` and ``--fail-on``) and turns it into
the request's ``SequentialPlan`` here, refusing, one line each and before anything runs, what does not make a
design: ``--k`` with a sequential flag (``--max-k`` is the most runs), ``--max-k``/``--min-k``/``--fail-on``
without one, ``--min-k`` above ``--max-k``, a width outside (0, 1], ``--sequential`` without ``--baseline`` on
``eval run``, and replay. Every executor (threads, Ray) pulls the next run from the feed only when it can start
it, so a stopped task gets no new run whichever runs them.
Import only typer and the standard library at module level: ``alisio --help`` must stay fast.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from alisio.shell.cli.options import Take, option

if TYPE_CHECKING:
    from alisio.core.lab.reports.seq_block import SequentialPlan

__all__ = [
    "SEQUENTIAL",
    "VARIANTS",
    "SequentialFlags",
    "resume_design",
    "run_sequential",
    "variants_design",
    "variants_sequential",
]

SEQUENTIAL = "Sequential"


MaxK = Annotated[
    int | None,
    option(
        "--max-k",
        help="With --sequential (eval run: or --until-width): runs per task (and variant) at most (default 50; at most "
        "500).",
        panel=SEQUENTIAL,
        metavar="N",
        show_default=False,
    ),
]
MinK = Annotated[
    int | None,
    option(
        "--min-k",
        help="With --sequential (eval run: or --until-width): no task stops before M judged runs (per variant) "
        "(default 5).",
        panel=SEQUENTIAL,
        metavar="M",
        show_default=False,
    ),
]


@dataclass(frozen=True)
class SequentialFlags:
    """Sequential: stop each task once it is decided: against a stored baseline or once its rate is known to a
    width (``eval run``), or once two variants' difference is (``eval variants``, which takes ``VARIANTS``)."""

    sequential: Annotated[
        bool,
        option(
            "--sequential",
            help="With --baseline: stop each task as soon as an anytime-valid test decides that its rate "
            "differs from the baseline report's, or that it cannot by --max-k.",
            panel=SEQUENTIAL,
        ),
    ] = False
    baseline: Annotated[
        str | None,
        option(
            "--baseline",
            help="With --sequential: the stored baseline report (a run id, a report directory or its "
            "report.json), not re-run: its counts are the baseline's data.",
            panel=SEQUENTIAL,
            metavar="REPORT",
            show_default=False,
        ),
    ] = None
    until_width: Annotated[
        float | None,
        option(
            "--until-width",
            help="Stop each task when its anytime-valid 95% confidence sequence for the success rate is "
            "narrower than W (in (0, 1]; 0.2 is ±10 points), or at --max-k.",
            panel=SEQUENTIAL,
            metavar="W",
            show_default=False,
        ),
    ] = None
    max_k: MaxK = None
    min_k: MinK = None
    fail_on: Annotated[
        str | None,
        option(
            "--fail-on",
            help="With --sequential --baseline: worse-than:M (M in (0, 1)) tests each task for 'at most M worse "
            "than the baseline', stops it once shown, and exits 4 unless every task is.",
            panel=SEQUENTIAL,
            metavar="worse-than:M",
            show_default=False,
        ),
    ] = None

    @property
    def asked(self) -> bool:
        """Whether any sequential flag was given."""
        return self.sequential or any(
            v is not None for v in (self.baseline, self.until_width, self.max_k, self.min_k, self.fail_on)
        )


VARIANTS = Take(
    omit=("baseline", "until_width"),
    help={
        "sequential": "Stop each task as soon as an anytime-valid test (e-value) decides that the two variants "
        "differ, or that it cannot by --max-k (futility): valid however often it looks, family-wise over the "
        "tasks.",
        "fail_on": "With --sequential: worse-than:M (M in (0, 1)) stops each task once the candidate is shown "
        "at most M worse than the baseline, and exits 4 unless every task is.",
    },
)
"""How ``eval variants`` takes the group: the two arms it runs are the design's, so no baseline or width."""


def _limits(max_k: int | None, min_k: int | None, k: int | None, flag: str) -> tuple[int, int]:
    """``--max-k`` and ``--min-k`` (their defaults when not given), checked."""
    from alisio.core.lab.reports.seq_block import DEFAULT_MAX_K, DEFAULT_MIN_K
    from alisio.core.stats.sequential import MAX_K
    from alisio.shell.errors import CommandError

    if k is not None:
        raise CommandError(
            f"--k sets a fixed number of runs; {flag} stops each task itself: give --max-k N instead"
        )
    top = DEFAULT_MAX_K if max_k is None else max_k
    low = DEFAULT_MIN_K if min_k is None else min_k
    if not 1 <= top <= MAX_K:
        raise CommandError(f"--max-k {top}: runs per task must be between 1 and {MAX_K}")
    if low < 1:
        raise CommandError(f"--min-k {low}: must be at least 1")
    if low > top:
        raise CommandError(f"--min-k {low} is above --max-k {top}: no task could stop before --max-k")
    return top, low


def variants_sequential(flags: SequentialFlags, k: int | None) -> SequentialPlan | None:
    """The two-arm design ``eval variants`` asked for (``None``: fixed k); the baseline variant is filled in
    once the variants file is read.

    Raises:
        CommandError: the flags do not make a design (one line).
    """
    from alisio.core.lab.reports.seq_block import SequentialPlan
    from alisio.shell.errors import CommandError

    if not flags.sequential:
        for given, name in ((flags.max_k, "--max-k"), (flags.min_k, "--min-k")):
            if given is not None:
                raise CommandError(f"{name} goes with --sequential")
        if flags.fail_on is not None:
            raise CommandError(
                "--fail-on goes with --sequential here (eval compare --fail-on gates fixed-k reports)"
            )
        return None
    top, low = _limits(flags.max_k, flags.min_k, k, "--sequential")
    if flags.fail_on is None:
        return SequentialPlan(kind="two-arm", max_k=top, min_k=low)
    return SequentialPlan(
        kind="two-arm", max_k=top, min_k=low, side="not-worse", margin=_margin(flags.fail_on)
    )


def run_sequential(
    flags: SequentialFlags, k: int | None, replay: bool, env: Mapping[str, str]
) -> SequentialPlan | None:
    """The design ``eval run`` asked for (``None``: fixed k).

    Raises:
        CommandError: the flags do not make a design, or the baseline report cannot be read (one line).
    """
    from alisio.core.lab.reports.seq_block import SequentialPlan
    from alisio.core.stats.sequential import width_problem
    from alisio.shell.errors import CommandError

    if not flags.asked:
        return None
    if flags.sequential and flags.until_width is not None:
        raise CommandError(
            "--sequential (against --baseline) and --until-width (one arm) are two designs: pick one"
        )
    flag = "--until-width" if flags.until_width is not None else "--sequential"
    if not flags.sequential and flags.until_width is None:
        if flags.baseline is not None or flags.fail_on is not None:
            given = "--baseline" if flags.baseline is not None else "--fail-on"
            raise CommandError(f"{given} goes with --sequential")
        raise CommandError("--max-k and --min-k go with --sequential --baseline REPORT or --until-width W")
    if replay:
        raise CommandError(f"{flag} stops live runs early; replay is deterministic: nothing to stop")
    top, low = _limits(flags.max_k, flags.min_k, k, flag)
    if flags.until_width is not None:
        if flags.baseline is not None or flags.fail_on is not None:
            given = "--baseline" if flags.baseline is not None else "--fail-on"
            raise CommandError(f"{given} goes with --sequential, not with --until-width (one arm)")
        problem = width_problem(flags.until_width)
        if problem is not None:
            raise CommandError(problem)
        return SequentialPlan(kind="width", max_k=top, min_k=low, width=flags.until_width)
    if flags.baseline is None:
        raise CommandError(
            "eval run --sequential tests against a stored report: add --baseline REPORT (or run both arms "
            "with eval variants --sequential)"
        )
    plan = _against(flags.baseline, top, low, env)
    if flags.fail_on is None:
        return plan
    import msgspec

    return msgspec.structs.replace(plan, side="not-worse", margin=_margin(flags.fail_on))


def _margin(fail_on: str) -> float:
    """The margin M of ``--fail-on worse-than:M`` (the only sequential gate)."""
    from alisio.core.lab.comparisons.gate import PREFIX, parse_margin
    from alisio.shell.errors import CommandError, expect

    if not fail_on.startswith(PREFIX):
        raise CommandError(f"--fail-on {fail_on}: under --sequential only worse-than:M is a sequential gate")
    return expect(parse_margin(fail_on), error=CommandError)


def _against(ref: str, top: int, low: int, env: Mapping[str, str]) -> SequentialPlan:
    """The baseline design of the report ``ref`` names: its suite and each task's counts."""
    from alisio.core.lab.reports.seq_block import BaselineCount, SequentialPlan
    from alisio.shell.config_home import data_dir  # (it imports httpx: only when a baseline is read)
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.sources import report_of

    try:
        report = report_of(ref, data_dir(env))
    except CommandError as error:
        raise CommandError(f"--baseline {ref}: {error.lines[0]}") from None
    if report.conditions.mode == "replay":
        raise CommandError(f"--baseline {ref}: a replay report measures the harness only; give a live report")
    if report.sequential is not None:
        raise CommandError(
            f"--baseline {ref}: a sequential report (its runs stopped early); give a fixed-k report"
        )
    counts = tuple(
        BaselineCount(task_id=t.task_id, passes=t.passes, judged=t.judged) for t in report.tasks if t.judged
    )
    return SequentialPlan(
        kind="baseline",
        max_k=top,
        min_k=low,
        baseline=report.conditions.run_id,
        baseline_counts=counts,
        baseline_suite=f"{report.conditions.suite_id} {report.conditions.suite_version}",
    )


Resumed = tuple[list[str], "SequentialPlan | None"]
"""What a resume's sequential flags say: the lines that refuse them (empty: they continue the run), and the
design the run continues with (the stored one, or the stored one with a larger ``--max-k``)."""


def _resumed(stored: SequentialPlan | None, given: SequentialPlan | None) -> Resumed:
    """The stored design continues when ``given`` says the same, or the same with a larger ``--max-k``
    (``alisio.core.lab.plans.seq_run.extended_plan``: the same e-processes, looked at longer); anything else is
    refused."""
    from alisio.core.lab.plans.seq_run import extended_plan
    from alisio.core.lab.reports.seq_block import describe_plan

    before = "a fixed k" if stored is None else describe_plan(stored)
    now = "a fixed k" if given is None else describe_plan(given)
    if before == now:
        return [], stored
    longer = None if stored is None or given is None else extended_plan(stored, given)
    if longer is not None:
        return [], longer
    return [
        f"the sequential design differs: {before} when the run started, {now} now (a resume may only raise "
        "--max-k)"
    ], stored


def _more_runs(stored: SequentialPlan, max_k: int | None, min_k: int | None) -> SequentialPlan:
    """``--max-k``/``--min-k`` alone, given to ``--resume`` of a sequential run: the stored design with them."""
    import msgspec

    top, low = _limits(
        stored.max_k if max_k is None else max_k, stored.min_k if min_k is None else min_k, None, "--resume"
    )
    return msgspec.structs.replace(stored, max_k=top, min_k=low)


def resume_design(stored: SequentialPlan | None, flags: SequentialFlags, env: Mapping[str, str]) -> Resumed:
    """What the sequential flags given to ``eval run --resume`` say of the stored design (``Resumed``; no flag
    given: the stored design continues)."""
    if not flags.asked:
        return [], stored
    alone = not flags.sequential and flags.baseline is None and flags.until_width is None
    if stored is not None and alone and flags.fail_on is None:  # --max-k alone speaks of the stored design
        return _resumed(stored, _more_runs(stored, flags.max_k, flags.min_k))
    return _resumed(stored, run_sequential(flags, None, False, env))


def variants_design(stored: SequentialPlan | None, flags: SequentialFlags) -> Resumed:
    """What the sequential flags given to ``eval variants --resume`` say of the stored design (``Resumed``; no
    flag given: the stored design continues).

    Raises:
        CommandError: the flags do not make a design (one line).
    """
    asked = (flags.max_k, flags.min_k, flags.fail_on) != (None, None, None)
    if not (flags.sequential or asked):
        return [], stored
    if stored is not None:  # --max-k alone, given to a sequential job, speaks of its design
        flags = dataclasses.replace(flags, sequential=True)
    return _resumed(stored, variants_sequential(flags, None))
