"""``--pass-threshold T`` and ``--scorer NAME``: how a result from another harness is judged pass or fail.

Shared by the commands that read such results (``eval compare``, ``eval stability``): an Inspect AI log or a
Harbor job directory whose score is not already pass/fail (``alisio.core.lab.sources.foreign``).
"""

from __future__ import annotations

import math
from typing import Annotated

from alisio.core.lab.sources.foreign import Scoring
from alisio.shell.cli.options import option

__all__ = ["FOREIGN", "PassThreshold", "Scorer", "scoring"]

FOREIGN = "Results from other harnesses"

PassThreshold = Annotated[
    str | None,
    option(
        "--pass-threshold",
        metavar="T",
        help="An Inspect log or Harbor job whose score is not pass/fail (partial credit, a reward in [0, 1]): "
        "a score >= T passes.",
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
