"""``alisio eval list [--suite-dir DIR] [--json]``: the bundled suites (checkout only) and those in DIR.

stdout gets one line per suite, ``<suiteId>  <suiteVersion>  <n> tasks  <description>`` (bundled first, then
``--suite-dir``), or with ``--json`` one document ``{"bundledRoot": ..., "suites": [...]}``. A broken suite is
listed with its error (``<directory>  invalid: <first violation>``; every violation in JSON) and does not hide
the others. From an installed wheel there are no bundled suites: stderr says so. Exit 0, also with broken
suites (``eval validate`` is the gate); 1 when ``--suite-dir`` does not exist or holds no suite.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from alisio.shell.cli.options import Json

SuiteDir = Annotated[
    Path | None,
    typer.Option("--suite-dir", help="A suite, or a directory of suites, outside the bundled ones."),
]


def list_suites(suite_dir: SuiteDir = None, json_output: Json = False) -> None:
    """List the bundled suites and those in --suite-dir: id, version, task count, description."""
    import msgspec
    from returns.result import Failure, Success

    from alisio.core.lab.suite import violations
    from alisio.shell.lab.suite_choice import NO_BUNDLED, bundled_suites_root
    from alisio.shell.lab.suites import SuiteEntry, discover_suites, shown_name

    bundled = bundled_suites_root()
    sources: list[tuple[str, SuiteEntry]] = []
    if bundled is not None:
        sources += [("bundled", entry) for entry in discover_suites(bundled)]
    else:
        print(f"alisio eval list: {NO_BUNDLED}", file=sys.stderr)
    if suite_dir is not None:
        found = discover_suites(suite_dir) if suite_dir.exists() else ()
        if not found:
            why = (
                "no such directory"
                if not suite_dir.exists()
                else "no suite.json here or in its sub-directories"
            )
            print(f"alisio eval list: --suite-dir {shown_name(suite_dir)}: {why}", file=sys.stderr)
            raise typer.Exit(1)
        sources += [("suite-dir", entry) for entry in found]
    rows: list[dict[str, object]] = []
    for source, entry in sources:
        match entry.result:
            case Success(loaded):
                suite = loaded.suite
                rows.append(
                    {
                        "suiteId": suite.suite_id,
                        "suiteVersion": suite.suite_version,
                        "tasks": len(suite.tasks),
                        "description": suite.description,
                        "source": source,
                        "path": shown_name(entry.directory),
                        "valid": True,
                    }
                )
            case Failure(error):
                rows.append(
                    {
                        "directory": shown_name(entry.directory.name),
                        "source": source,
                        "path": shown_name(entry.directory),
                        "valid": False,
                        "errors": [f"{error.source}: {line}" for line in violations(error)],
                    }
                )
    if json_output:
        document = {"bundledRoot": shown_name(bundled) if bundled is not None else None, "suites": rows}
        sys.stdout.write(msgspec.json.encode(document).decode() + "\n")
        raise typer.Exit(0)
    for row in rows:
        if row["valid"]:
            tasks = row["tasks"]
            noun = "task" if tasks == 1 else "tasks"
            line = f"{row['suiteId']}  {row['suiteVersion']}  {tasks} {noun}  {row['description']}"
            print(line + ("" if row["source"] == "bundled" else f"  ({row['path']})"))
        else:
            errors = row["errors"]
            assert isinstance(errors, list)
            more = f" (+{len(errors) - 1} more; see alisio eval validate)" if len(errors) > 1 else ""
            print(f"{row['directory']}  invalid: {errors[0]}{more}")
    if not rows and bundled is not None:
        print("alisio eval list: no suites found", file=sys.stderr)
    raise typer.Exit(0)
