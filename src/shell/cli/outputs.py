"""What the lab commands say of their CI outputs: ``--junit FILE`` and the ``$GITHUB_STEP_SUMMARY`` block.

``eval run`` and ``eval variants`` check and write them in the pipeline (rows of ``alisio.shell.lab.outputs``)
and show here what was written and what could not be. ``eval ci`` writes one of each for all its suites
(``ci_outputs``), with the ``--junit`` row's check. A file that cannot be written is one line on stderr; the
command then exits 1 unless its code is already non-zero (``settle``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli.common import say

if TYPE_CHECKING:
    from alisio.core.lab.outputs.junit import JUnitSuite
    from alisio.shell.lab.model import LabOutcome
    from alisio.shell.lab.request import LabRequest
    from alisio.shell.replay.ci import CiOutcome

__all__ = ["attempt", "ci_outputs", "lab_outputs", "settle"]


def settle(code: ExitCode, problems: list[str], prefix: str) -> ExitCode:
    """Print each problem (one line, prefixed with the command); the code, or 1 when it was 0 and a problem
    was found (a divergence keeps 2, a gate 4)."""
    for problem in problems:
        say(f"{prefix}: {problem}")
    return ExitCode.FAILURE if problems and code is ExitCode.OK else code


def attempt(problems: list[str], action: Callable[[], None]) -> None:
    """Run ``action``; an ``OutputProblem`` it raises becomes a line in ``problems`` (for ``settle``)."""
    from alisio.shell.lab.ci_outputs import OutputProblem

    try:
        action()
    except OutputProblem as problem:
        problems.append(str(problem))


def _write_junit(
    path: Path | None, suites: list[JUnitSuite], known: tuple[tuple[str, str], ...], quiet: bool
) -> None:
    from alisio.core.lab.outputs.junit import junit_xml
    from alisio.shell.lab.ci_outputs import write_output_file
    from alisio.shell.lab.outputs import JUNIT

    if path is None:
        return
    write_output_file(path, junit_xml(suites, known), JUNIT)
    if not quiet:
        say(f"junit: {path}")


def lab_outputs(outcome: LabOutcome, request: LabRequest, code: ExitCode, prefix: str) -> ExitCode:
    """After ``eval run`` or ``eval variants`` showed its result: what the pipeline wrote for CI (``junit:
    FILE`` unless ``--quiet``) and each CI output it could not write (``settle``)."""
    if not request.output.quiet:
        for note in outcome.notes:
            say(note)
    return settle(code, list(outcome.problems), prefix)


def ci_outputs(
    outcome: CiOutcome, junit: Path | None, env: Mapping[str, str], verdict: str, code: ExitCode, prefix: str
) -> ExitCode:
    """The ``--junit`` file (a testsuite per suite: replayed, skipped or broken) and the step summary of
    ``eval ci``; ``verdict`` is the line the command printed last."""
    from alisio.core.lab.outputs.junit import BrokenSuite, ReportSuite, SkippedSuite
    from alisio.core.lab.outputs.step_summary import CiSuiteLine, ci_summary
    from alisio.core.lab.runs.records import RunStatus
    from alisio.shell.lab.cassettes import credentials_of
    from alisio.shell.lab.ci_outputs import append_step_summary

    suites: list[JUnitSuite] = []
    lines: list[CiSuiteLine] = []
    for replay in outcome.suites:
        name = replay.loaded.suite.suite_id
        if replay.problems:
            suites.append(BrokenSuite(name=name, problems=replay.problems))
            lines.append(CiSuiteLine(suite=name, status="error", note=replay.problems[0]))
        elif replay.outcome is None:
            message = f"no cassettes in {replay.cassettes}"
            suites.append(SkippedSuite(name=name, message=message))
            lines.append(CiSuiteLine(suite=name, status="skipped", note=message))
        else:
            (arm,) = replay.outcome.arms
            suites.append(ReportSuite(name=name, report=arm.report, records=arm.records, show_as=arm.show_as))
            records = replay.records
            diverged = sum(r.divergence is not None for r in records)
            lines.append(
                CiSuiteLine(
                    suite=name,
                    status="replayed",
                    replayed=len(records),
                    passed=sum(r.status is RunStatus.PASS for r in records),
                    diverged=diverged,
                    not_passing=sum(r.status is not RunStatus.PASS for r in records) - diverged,
                )
            )
    problems: list[str] = []
    attempt(problems, lambda: _write_junit(junit, suites, credentials_of(env, None), False))
    attempt(problems, lambda: append_step_summary(env, ci_summary(lines, verdict)))
    return settle(code, problems, prefix)
