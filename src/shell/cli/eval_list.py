"""``alisio eval list [--suite-dir DIR] [--json]``: the bundled suites (checkout only) and those in DIR.

stdout gets one line per suite, ``<suiteId>  <suiteVersion>  <n> tasks  <description>`` (bundled first, then
``--suite-dir``), or with ``--json`` one document ``{"bundledRoot": ..., "suites": [...]}``. A broken suite is
listed with its error (``<directory>  invalid: <first violation>``; every violation in JSON) and does not hide
the others. From an installed wheel there are no bundled suites: stderr says so. Exit 0, also with broken
suites (``eval validate`` is the gate); 1 when ``--suite-dir`` does not exist or holds no suite.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli import common
from alisio.shell.cli.options import Json

if TYPE_CHECKING:
    from alisio.shell.lab.suites import SuiteEntry

SuiteDir = Annotated[
    Path | None,
    typer.Option(
        "--suite-dir", help="A suite, or a directory of suites, outside the bundled ones.", metavar="DIR"
    ),
]


def _sources(suite_dir: Path | None) -> tuple[Path | None, list[tuple[str, SuiteEntry]]]:
    """The bundled root (``None`` outside a checkout) and every suite entry: bundled first, then DIR's."""
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.suite_choice import NO_BUNDLED, bundled_suites_root
    from alisio.shell.lab.suites import discover_suites, shown_name

    bundled = bundled_suites_root()
    sources: list[tuple[str, SuiteEntry]] = []
    if bundled is not None:
        sources += [("bundled", entry) for entry in discover_suites(bundled)]
    else:
        common.say(f"alisio eval list: {NO_BUNDLED}")
    if suite_dir is not None:
        found = discover_suites(suite_dir) if suite_dir.exists() else ()
        if not found:
            why = (
                "no such directory"
                if not suite_dir.exists()
                else "no suite.json here or in its sub-directories"
            )
            raise CommandError(f"--suite-dir {shown_name(suite_dir)}: {why}")
        sources += [("suite-dir", entry) for entry in found]
    return bundled, sources


def _row(source: str, entry: SuiteEntry) -> dict[str, object]:
    from returns.result import Failure, Success

    from alisio.core.lab.suites.suite import violations
    from alisio.shell.lab.suites import shown_name

    match entry.result:
        case Success(loaded):
            suite = loaded.suite
            return {
                "suiteId": suite.suite_id,
                "suiteVersion": suite.suite_version,
                "tasks": len(suite.tasks),
                "description": suite.description,
                "source": source,
                "path": shown_name(entry.directory),
                "valid": True,
            }
        case Failure(error):
            return {
                "directory": shown_name(entry.directory.name),
                "source": source,
                "path": shown_name(entry.directory),
                "valid": False,
                "errors": [f"{error.source}: {line}" for line in violations(error)],
            }
    raise AssertionError("unreachable")  # pragma: no cover


def _line(row: dict[str, object]) -> str:
    if row["valid"]:
        tasks = row["tasks"]
        noun = "task" if tasks == 1 else "tasks"
        line = f"{row['suiteId']}  {row['suiteVersion']}  {tasks} {noun}  {row['description']}"
        return line + ("" if row["source"] == "bundled" else f"  ({row['path']})")
    errors = row["errors"]
    assert isinstance(errors, list)
    more = f" (+{len(errors) - 1} more; see alisio eval validate)" if len(errors) > 1 else ""
    return f"{row['directory']}  invalid: {errors[0]}{more}"


def list_suites(suite_dir: SuiteDir = None, json_output: Json = False) -> ExitCode:
    """List the bundled suites and those in --suite-dir: id, version, task count, description."""
    import msgspec

    from alisio.shell.lab.suites import shown_name

    bundled, sources = _sources(suite_dir)
    rows = [_row(source, entry) for source, entry in sources]
    if json_output:
        document = {"bundledRoot": shown_name(bundled) if bundled is not None else None, "suites": rows}
        common.out(msgspec.json.encode(document).decode() + "\n")
        return ExitCode.OK
    for row in rows:
        common.out(_line(row) + "\n")
    if not rows and bundled is not None:
        common.say("alisio eval list: no suites found")
    return ExitCode.OK
