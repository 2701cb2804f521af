"""``alisio eval selfcheck [SUITE] [--suite-dir DIR [--yes]] [--tasks IDS] [--repeat N] [--jobs N] [--sandbox
bwrap|none] [--json]``.

Checks a suite's verifiers with no model. SUITE is found as ``eval run`` finds it: a suite directory (or its
suite.json), the id of a bundled suite, or with ``--suite-dir`` an id or directory name in DIR, then among the
bundled suites (none needed when DIR holds one suite), with the same errors. A suite from outside the bundled
ones, however named, is third-party code: the same warning and confirmation as ``eval run`` (asked on a
terminal; elsewhere ``--yes``) before anything runs.
``--tasks`` checks only those tasks (the same ids, and the same errors, as ``eval run``'s).
Per task: the untouched fixture must fail, the task's ``solution`` (when it has one) must pass, each command
verifier gives the same outcome ``--repeat`` times on the same tree, and a verifier slower than half its
``timeoutMs`` is a warning (``alisio.core.lab.judges.selfcheck``). Prints a table per task, then every flag and
warning. ``--sandbox bwrap`` (default: ``[lab] sandbox`` in config.toml, else none) runs the verifiers and
script solutions in bubblewrap; a task with a ``sandbox`` section (an imported Harbor task) needs it. The
result is kept in the data directory under the suite's content hash: every report of that suite content says
it (``alisio.shell.lab.selfcheck_store``).

Exit codes: 0 clean (warnings allowed); 1 a task is flagged, or a usage problem (one line).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli.options import Json, SandboxFlag, check_min

if TYPE_CHECKING:
    from alisio.core.lab.judges.selfcheck import SelfCheck
    from alisio.shell.lab.suites import LoadedSuite
    from alisio.shell.sandbox.bwrap import Sandbox

SuiteRef = Annotated[
    str | None,
    typer.Argument(
        help="A suite directory, its suite.json, or a bundled suite's id; with --suite-dir, as eval run's "
        "SUITE (not needed when --suite-dir holds one suite).",
        metavar="SUITE",
        show_default=False,
    ),
]
Repeat = Annotated[
    int,
    typer.Option(
        "--repeat", metavar="N", help="Runs of each command verifier on the same final tree (1 to 100)."
    ),
]
SelfcheckTasks = Annotated[
    str | None,
    typer.Option(
        "--tasks",
        metavar="IDS",
        help="Only these tasks: id,id (or suite/id), as eval run's.",
        show_default=False,
    ),
]
SelfcheckJobs = Annotated[
    int,
    typer.Option("--jobs", "-j", metavar="N", help="Tasks checked at once."),
]
SelfcheckSuiteDir = Annotated[
    Path | None,
    typer.Option(
        "--suite-dir",
        metavar="DIR",
        help="A suite, or a directory of suites, outside the bundled ones (as eval run's).",
        show_default=False,
    ),
]
SelfcheckYes = Annotated[
    bool,
    typer.Option(
        "--yes", help="Accept a suite from outside the bundled ones without asking (as eval run's)."
    ),
]


MAX_REPEAT = 100
"""The most runs of each command verifier ``--repeat`` asks for (a usage error above it)."""


def selfcheck(
    suite: SuiteRef = None,
    tasks: SelfcheckTasks = None,
    repeat: Repeat = 3,
    jobs: SelfcheckJobs = 1,
    sandbox: SandboxFlag = None,
    json: Json = False,
    suite_dir: SelfcheckSuiteDir = None,
    yes: SelfcheckYes = False,
) -> ExitCode:
    """Check a suite with no model: no-op fails, the reference solution passes, verifiers repeat."""
    from alisio.shell.cli.common import suite_and_dir
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.suite_choice import bundled_suites_root, find_suite, only_suite

    check_min("--repeat", repeat, 1, MAX_REPEAT)
    check_min("--jobs", jobs, 1)
    wanted = tuple(tasks.split(",")) if tasks is not None else None
    if suite is None and suite_dir is None:
        raise CommandError(
            "name a SUITE to check (a suite directory, its suite.json or a bundled suite's id), or pass "
            "--suite-dir DIR holding one suite"
        )
    suite, suite_dir = suite_and_dir(suite, suite_dir)
    choice = find_suite(suite or only_suite(suite_dir), suite_dir, bundled_suites_root())
    return selfcheck_loaded(
        choice.loaded,
        repeat=repeat,
        jobs=jobs,
        json_output=json,
        wanted=wanted,
        sandbox=sandbox,
        suite_dir_yes=yes if choice.third_party else None,
    )


def selfcheck_loaded(
    loaded: LoadedSuite,
    *,
    repeat: int,
    jobs: int,
    json_output: bool,
    wanted: tuple[str, ...] | None = None,
    sandbox: str | None = None,
    suite_dir_yes: bool | None = None,
) -> ExitCode:
    """Run the self-check of ``loaded`` (the tasks ``wanted``, default all; ``sandbox``: ``--sandbox``) and
    print it (table, or JSON with ``json_output``). ``suite_dir_yes``: ``--yes`` for a suite from outside the
    bundled ones, which is warned about and confirmed as ``eval run`` does (``confirm_third_party``) before
    anything runs; ``None`` for a bundled suite.

    Raises:
        CommandError: an unknown task id; the sandbox asked for cannot run; a ``--suite-dir`` suite not
            confirmed; a task needs the sandbox and runs without it.
    """
    import functools

    import msgspec

    from alisio.core.lab.judges.selfcheck import render_selfcheck
    from alisio.core.lab.suites.schedule import select_tasks
    from alisio.shell.errors import expect
    from alisio.shell.lab.selfcheck import run_selfcheck

    chosen = expect(select_tasks(loaded.suite, wanted))
    resolved = configured_sandbox(sandbox)
    confirm = None
    if suite_dir_yes is not None:
        confirm = functools.partial(_confirm, loaded, yes=suite_dir_yes, sandboxed=resolved is not None)
    check = run_selfcheck(loaded, repeat=repeat, jobs=jobs, sandbox=resolved, tasks=chosen, confirm=confirm)
    _keep(loaded, check)
    if json_output:
        sys.stdout.write(msgspec.json.encode(check).decode() + "\n")
    else:
        sys.stdout.write(render_selfcheck(check))
    return ExitCode.OK if check.clean else ExitCode.FAILURE


def _keep(loaded: LoadedSuite, check: SelfCheck) -> None:
    """Keep the check in the data directory under the suite's content hash, for every report of it to say
    (``alisio.shell.lab.selfcheck_store``); a directory that cannot be written is said, never fatal."""
    from datetime import UTC, datetime

    from alisio.shell.cli.common import environment, say
    from alisio.shell.config_home import data_dir
    from alisio.shell.lab.selfcheck_store import store_selfcheck

    root = data_dir(environment())
    try:
        store_selfcheck(root, loaded, check, datetime.now(UTC))
    except OSError as error:
        say(f"warning: the self-check was not kept in {root}: {error.strerror or error}")


def _confirm(loaded: LoadedSuite, *, yes: bool, sandboxed: bool) -> None:
    """``eval run``'s warning and confirmation of a suite from outside the bundled ones (asked on a terminal)."""
    import functools

    from alisio.shell.cli.common import ask, say
    from alisio.shell.lab.suite_choice import SuiteChoice, confirm_third_party, interactive_terminal

    confirm_third_party(
        SuiteChoice(loaded=loaded, third_party=True),
        yes=yes,
        interactive=interactive_terminal(),
        say=say,
        ask=functools.partial(ask, "Run it? [y/N] "),
        sandboxed=sandboxed,
    )


def configured_sandbox(flag: str | None) -> Sandbox | None:
    """The sandbox ``--sandbox`` asks for (else ``[lab] sandbox`` in config.toml, else none), checked here.

    Raises:
        CommandError: the configuration cannot be read, or the sandbox asked for cannot run.
    """
    import os

    from alisio.core.harness.sandbox import SandboxKind
    from alisio.shell.cli.common import say
    from alisio.shell.config_home import load_config
    from alisio.shell.errors import expect
    from alisio.shell.lab.pipeline import sandbox_for

    lab = expect(load_config(os.environ)).config.lab
    return sandbox_for(SandboxKind(flag) if flag is not None else None, lab, os.environ, say)[1]
