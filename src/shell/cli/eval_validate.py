"""``alisio eval validate PATH... [--json]``: check suites without running them.

Each PATH is a suite directory, its suite.json, a directory whose immediate sub-directories are suites, or
the id (or directory name) of a bundled suite, as ``eval run`` takes it.
A valid suite prints ``ok <suiteId> <suiteVersion> (<n> tasks) <path>`` on stdout; an invalid one prints
one line per violation on stderr (``<file>: task <id>: <field>: <what>``). Exit 0 when every suite is
valid, 1 when any is invalid or a PATH holds no suite. ``--json`` prints one JSON document on stdout
instead of the ok lines (the error lines still go to stderr). ``--selfcheck`` also self-checks each valid
suite (``alisio eval selfcheck``, with ``--sandbox`` as there): a suite from outside the bundled ones is
warned about and confirmed first, as there (``--yes`` without a terminal).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli.options import Json, SandboxFlag

if TYPE_CHECKING:
    from alisio.shell.lab.suites import SuiteEntry

Paths = Annotated[
    list[Path],
    typer.Argument(
        help="Suite directories, suite.json files, directories of suites, or bundled suite ids.",
        metavar="PATH",
        show_default=False,
    ),
]


SelfcheckFlag = Annotated[
    bool,
    typer.Option(
        "--selfcheck",
        help="Also self-check each valid suite with no model (alisio eval selfcheck, --repeat 3): its table "
        "follows its ok line; a flagged task makes the exit 1. Not with --json.",
    ),
]


ValidateYes = Annotated[
    bool,
    typer.Option(
        "--yes", help="With --selfcheck: accept suites from outside the bundled ones without asking."
    ),
]


def validate(
    paths: Paths,
    json_output: Json = False,
    selfcheck: SelfcheckFlag = False,
    sandbox: SandboxFlag = None,
    yes: ValidateYes = False,
) -> ExitCode:
    """Validate suites: every violation, with the task and the field, one per line on stderr."""
    import msgspec
    from returns.result import Failure, Success

    from alisio.core.lab.suites.suite import violations
    from alisio.shell.lab.suites import shown_name

    if selfcheck and json_output:
        raise typer.BadParameter("use alisio eval selfcheck --json for JSON", param_hint="'--selfcheck'")
    if sandbox is not None and not selfcheck:
        raise typer.BadParameter("only with --selfcheck (it runs the verifiers)", param_hint="'--sandbox'")
    if yes and not selfcheck:
        raise typer.BadParameter("only with --selfcheck (it runs the verifiers)", param_hint="'--yes'")
    entries = _entries(paths)
    report: list[dict[str, object]] = []
    for entry in entries:
        match entry.result:
            case Success(loaded):
                suite = loaded.suite
                count = len(suite.tasks)
                if not json_output:
                    noun = "task" if count == 1 else "tasks"
                    print(
                        f"ok {suite.suite_id} {suite.suite_version} ({count} {noun}) {shown_name(entry.directory)}"
                    )
                report.append(
                    {
                        "path": shown_name(entry.directory),
                        "valid": True,
                        "suiteId": suite.suite_id,
                        "suiteVersion": suite.suite_version,
                        "tasks": count,
                        "contentHash": loaded.content_hash,
                    }
                )
            case Failure(error):
                lines = violations(error)
                for line in lines:
                    print(f"{error.source}: {line}", file=sys.stderr)
                report.append(
                    {
                        "path": shown_name(entry.directory),
                        "valid": False,
                        "source": error.source,
                        "errors": list(lines),
                    }
                )
    valid = all(item["valid"] for item in report)
    if selfcheck:
        valid = _selfcheck(entries, sandbox, yes) and valid
    if json_output:
        sys.stdout.write(msgspec.json.encode({"valid": valid, "suites": report}).decode() + "\n")
    return ExitCode.OK if valid else ExitCode.FAILURE


def _selfcheck(entries: list[SuiteEntry], sandbox: str | None, yes: bool) -> bool:
    """Self-check each valid suite (its table on stdout; ``sandbox``: ``--sandbox``; one from outside the
    bundled suites confirmed first, ``yes``: ``--yes``); True when none has a flagged task."""
    from returns.result import Success

    from alisio.shell.cli.eval_selfcheck import selfcheck_loaded
    from alisio.shell.lab.suite_choice import bundled_suites_root, is_bundled

    clean = True
    bundled = bundled_suites_root()
    for entry in entries:
        if isinstance(entry.result, Success):
            loaded = entry.result.unwrap()
            code = selfcheck_loaded(
                loaded,
                repeat=3,
                jobs=1,
                json_output=False,
                sandbox=sandbox,
                suite_dir_yes=None if is_bundled(loaded.directory, bundled) else yes,
            )
            clean = clean and code == ExitCode.OK
    return clean


def _entries(paths: list[Path]) -> list[SuiteEntry]:
    """The suites each PATH names (a bundled suite by its id when no such path exists), or why none."""
    from returns.result import Failure

    from alisio.core.errors import SuiteError
    from alisio.shell.lab.suite_choice import bundled_by_name
    from alisio.shell.lab.suites import SuiteEntry, discover_suites, shown_name

    entries: list[SuiteEntry] = []
    for path in paths:
        name = str(path)
        by_id = not path.exists() and "/" not in name and not name.endswith(".json")
        found = bundled_by_name(name) if by_id else discover_suites(path)
        if not found:
            message = (
                "no suite.json here or in its immediate sub-directories"
                if not by_id
                else "no such file or directory, and no bundled suite of that id"
            )
            found = (
                SuiteEntry(
                    directory=path, result=Failure(SuiteError(source=shown_name(path), message=message))
                ),
            )
        entries += found
    return entries
