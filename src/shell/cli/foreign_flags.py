"""``--pass-threshold T`` and ``--scorer NAME``: how a result from another harness is judged pass or fail.

Shared by the commands that read such results (``eval compare``, ``eval stability``): an Inspect AI log or a
Harbor job directory whose score is not already pass/fail (``alisio.core.lab.sources.foreign``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Final

from alisio.core.lab.sources.foreign import Scoring
from alisio.shell.cli.options import option

if TYPE_CHECKING:
    from alisio.core.lab.reports.report import Report

__all__ = ["FOREIGN", "PassThreshold", "Scorer", "refuse_unused", "scoring"]

FOREIGN_KINDS: Final = frozenset({"inspect", "harbor"})
"""The agent kinds ``alisio.core.lab.foreign`` gives a result from another harness (an alisio report's agent
is the built-in one or an external agent's preset)."""

FOREIGN = "Results from other harnesses"

PassThreshold = Annotated[
    str | None,
    option(
        "--pass-threshold",
        metavar="T",
        help="An Inspect log or Harbor job whose score is not pass/fail (partial credit, a reward in [0, 1]): "
        "a score >= T passes (refused when every input is an alisio report).",
        panel=FOREIGN,
    ),
]
Scorer = Annotated[
    str | None,
    option(
        "--scorer",
        metavar="NAME",
        help="The scorer (Inspect) or reward key (Harbor) to judge by, when there is more than one.",
        panel=FOREIGN,
    ),
]


def scoring(pass_threshold: str | None, scorer: str | None) -> Scoring:
    """The flags as a ``Scoring`` (raises ``CommandError`` naming a threshold that is not a finite number)."""
    from alisio.shell.errors import CommandError

    threshold: float | None = None
    if pass_threshold is not None:
        try:
            threshold = float(pass_threshold)
        except ValueError:
            threshold = math.nan
        if not math.isfinite(threshold):
            raise CommandError(f"--pass-threshold {pass_threshold}: not a number (a score >= T passes)")
    return Scoring(scorer=scorer, pass_threshold=threshold)


def refuse_unused(judged: Scoring, reports: Iterable[Report]) -> None:
    """Refuse ``--pass-threshold`` and ``--scorer`` when none of ``reports`` is a result from another harness.

    Raises:
        CommandError: one line naming the flags given, where they would change nothing.
    """
    from alisio.shell.errors import CommandError

    given = [
        flag
        for flag, value in (("--pass-threshold", judged.pass_threshold), ("--scorer", judged.scorer))
        if value is not None
    ]
    read = list(reports)
    if not given or any(
        r.conditions.agent is not None and r.conditions.agent.kind in FOREIGN_KINDS for r in read
    ):
        return
    flags, them = (given[0], "it") if len(given) == 1 else (" and ".join(given), "them")
    what = (
        "these are alisio reports, whose runs their verifiers judged pass or fail"
        if read
        else "no result is read here (--from names one)"
    )
    raise CommandError(
        f"{flags}: only for results from other harnesses (an Inspect log, a Harbor job); {what}, so {flags} "
        f"would change nothing: drop {them}"
    )
