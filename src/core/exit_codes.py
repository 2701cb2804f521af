"""The exit codes of every ``alisio`` command: a contract, in one place.

| code | meaning |
|---|---|
| 0 | it completed, whichever tasks passed (a failing task is data, not an error) |
| 1 | a usage or infrastructure error; also when some run ended ``error`` (the report is still written) |
| 2 | a replay diverged from its cassette |
| 3 | ``eval compare`` of incompatible reports (a different suiteId or suiteVersion) |
| 4 | a gate set with ``--fail-on`` was hit (``eval compare``); never used otherwise |
| 130 | interrupted by Ctrl-C (128 + SIGINT); the report of the finished runs is written |
| 129, 143 | stopped by SIGHUP or SIGTERM (128 + the signal), handled as Ctrl-C |

Click and typer report usage errors with 2, which would read as a divergence: the CLI maps them to 1.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode"]


class ExitCode(IntEnum):
    """What a command's exit status means (the table above)."""

    OK = 0
    FAILURE = 1
    """A usage or infrastructure error, or some run ended ``error``."""
    DIVERGED = 2
    INCOMPATIBLE = 3
    GATE = 4
    """A gate set with ``--fail-on`` was hit (``eval compare``); never used otherwise."""
    SIGHUP = 129
    INTERRUPTED = 130
    SIGTERM = 143

    @classmethod
    def for_signal(cls, signum: int) -> ExitCode:
        """The code after the process was stopped by signal ``signum`` (128 + the signal)."""
        return cls(128 + signum)
