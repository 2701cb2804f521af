"""``alisio eval selfcheck SUITE [--repeat N] [--jobs N] [--json]``: check a suite's verifiers with no model.

SUITE is a suite directory (or its suite.json) or the id of a bundled suite. Per task: the untouched fixture
must fail, the task's ``solution`` (when it has one) must pass, each command verifier gives the same outcome
``--repeat`` times on the same tree, and a verifier slower than half its ``timeoutMs`` is a warning
(``alisio.core.lab.judges.selfcheck``). Prints a table per task, then every flag and warning.

Exit codes: 0 clean (warnings allowed); 1 a task is flagged, or a usage problem (one line).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli.options import Json, check_min

if TYPE_CHECKING:
    from alisio.shell.lab.suites import LoadedSuite

SuiteRef = Annotated[
    str,
    typer.Argument(help="A suite directory, its suite.json, or a bundled suite's id.", metavar="SUITE"),
]
Repeat = Annotated[
    int,
    typer.Option(
        "--repeat", metavar="N", help="Runs of each command verifier on the same final tree (1 to 100)."
    ),
]
SelfcheckJobs = Annotated[
    int,
    typer.Option("--jobs", "-j", metavar="N", help="Tasks checked at once."),
]


MAX_REPEAT = 100
"""The most runs of each command verifier ``--repeat`` asks for (a usage error above it)."""


def selfcheck(suite: SuiteRef, repeat: Repeat = 3, jobs: SelfcheckJobs = 1, json: Json = False) -> ExitCode:
    """Check a suite with no model: no-op fails, the reference solution passes, verifiers repeat."""
    check_min("--repeat", repeat, 1, MAX_REPEAT)
    check_min("--jobs", jobs, 1)
    return selfcheck_loaded(load_ref(suite), repeat=repeat, jobs=jobs, json_output=json)


def load_ref(ref: str) -> LoadedSuite:
    """The suite named by ``ref``: a path when one exists there, else a bundled suite's id."""
    from returns.result import Failure

    from alisio.core.lab.suites.suite import violations
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.suite_choice import bundled_suites_root, find_suite
    from alisio.shell.lab.suites import load_suite

    path = Path(ref)
    if not path.exists():
        return find_suite(ref, None, bundled_suites_root()).loaded
    result = load_suite(path)
    if isinstance(result, Failure):
        error = result.failure()
        raise CommandError(*(f"{error.source}: {line}" for line in violations(error)))
    loaded: LoadedSuite = result.unwrap()
    return loaded


def selfcheck_loaded(loaded: LoadedSuite, *, repeat: int, jobs: int, json_output: bool) -> ExitCode:
    """Run the self-check of ``loaded`` and print it (table, or JSON with ``json_output``)."""
    import msgspec

    from alisio.core.lab.judges.selfcheck import render_selfcheck
    from alisio.shell.lab.selfcheck import run_selfcheck

    check = run_selfcheck(loaded, repeat=repeat, jobs=jobs)
    if json_output:
        sys.stdout.write(msgspec.json.encode(check).decode() + "\n")
    else:
        sys.stdout.write(render_selfcheck(check))
    return ExitCode.OK if check.clean else ExitCode.FAILURE
