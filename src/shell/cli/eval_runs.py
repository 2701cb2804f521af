"""``alisio eval runs [--suite ID] [--model NAME] [--limit N] [--json] [--prune --older-than AGE]``: the stored
runs, newest first.

The runs of ``<dataDir>/eval`` and the ``--out`` directories registered there (``alisio.shell.lab.registry``).
A header row, then one line per report (a variants run: one per variant, ``<runId>/<variant>``): the run id,
the suite and its version, the agent (``alisio.core.lab.reports.naming``), the model and its mode (``scripted`` for
``--script``), when it was created, the pass rate (passes over judged runs), the runs that ended error, and
the ``--label``. A run a command is writing shows how far it got (``running (3/5 done)``), one whose command
ended before its report says so (``stopped (3/5 done, no report: ...)``), and a report that cannot be read
is listed as unreadable. ``--suite`` and
``--model`` keep the runs of that suite or model, ``--limit N`` the N newest; ``--json`` prints one document.
Any run id shown, ``latest``, or a unique prefix of one, names that run for show, compare, export and
``--resume``.

``--prune --older-than AGE`` (``30d``, ``12h``, ``2w``) removes the runs of ``<dataDir>/eval`` last written
longer ago than AGE (never a registered ``--out`` directory, never one a command is writing), and says what
it removed. Exit 0; 1 for an invalid flag value.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alisio.core.exit_codes import ExitCode
from alisio.shell.cli import common
from alisio.shell.cli.options import Json

if TYPE_CHECKING:
    from alisio.core.lab.plans.manifest import RunManifest
    from alisio.shell.lab.stored import StoredRun

SuiteFilter = Annotated[str | None, typer.Option("--suite", help="Only runs of this suite id.", metavar="ID")]
ModelFilter = Annotated[str | None, typer.Option("--model", help="Only runs of this model.", metavar="NAME")]
Limit = Annotated[int | None, typer.Option("--limit", help="Only the N newest runs.", metavar="N")]
Prune = Annotated[bool, typer.Option("--prune", help="Remove stored runs older than --older-than.")]
OlderThan = Annotated[
    str | None,
    typer.Option("--older-than", help="With --prune: an age, as 30d, 12h or 2w.", metavar="AGE"),
]

HtmlDir = Annotated[
    Path | None,
    typer.Option(
        "--html",
        help="Write DIR/index.html: one page over the runs (or the RUN|DIR given), with links to each report.html "
        "and comparison.html; it works from file://.",
        metavar="DIR",
        show_default=False,
    ),
]
Given = Annotated[
    list[str] | None,
    typer.Argument(
        help="With --html: the runs to index (run ids or report directories); default the stored runs.",
        metavar="[RUN|DIR]...",
        show_default=False,
    ),
]

HEADER = ("RUN ID", "SUITE", "AGENT", "MODEL (MODE)", "CREATED", "RESULT", "LABEL")


def _row(run: StoredRun) -> dict[str, object]:
    """What ``eval runs`` says of one run (``--json`` prints it as is)."""
    from alisio.core.lab.reports.naming import mode_text, naming_brief, run_naming

    report, progress = run.report, run.progress
    row: dict[str, object] = {"runId": run.run_id, "directory": str(run.directory)}
    if progress is not None:
        state = "running" if progress.running else "stopped"
        row |= {"state": state, "done": progress.done, "planned": progress.planned}
    if report is None:
        manifest = None if progress is None else progress.manifest
        if manifest is None:
            return row | {"readable": False}
        mode = "scripted" if manifest.script is not None else str(manifest.mode)
        return row | {
            "readable": False,
            "suiteId": manifest.suite_id,
            "suiteVersion": manifest.suite_version,
            "agent": _planned_agent(manifest, run.run_id),
            "model": manifest.model,
            "mode": mode,
            "createdAt": manifest.created_at,
            "label": manifest.label,
        }
    c, s = report.conditions, report.summary
    return row | {
        "readable": True,
        "suiteId": c.suite_id,
        "suiteVersion": c.suite_version,
        "agent": naming_brief(c),
        "naming": {named.key: named.value for named in run_naming(c) if named.present},
        "model": c.model,
        "mode": mode_text(c),
        "createdAt": c.created_at,
        "label": c.label,
        "passes": s.passes,
        "judged": s.judged,
        "errored": s.errored,
        "interrupted": report.interrupted,
        "capped": report.capped,
    }


def _planned_agent(manifest: RunManifest, run_id: str) -> str:
    """A run in progress's agent as its plan.json names it, as a report would (``codex (codex-cli 0.171.0)``,
    ``alisio 0.1.0, script 1a2b3c4d5e6f7a8b``); tasks that name different agents read ``per task (a, b)``."""
    variant = next((v for v in manifest.variants if run_id.endswith(f"/{v.id}")), None)
    name = variant.agent if variant is not None and variant.agent else manifest.agent
    external = {agent.name: agent.version for agent in manifest.agents}
    builtin = f"alisio {manifest.harness_version}" if manifest.harness_version else "alisio"
    if name is None and len(external) == 1:
        name = next(iter(external))
    if name is None:
        brief = f"per task ({', '.join(external)})" if external else builtin
    else:
        brief = f"{name} ({external.get(name, builtin)})"
    return brief + (f", script {manifest.script_hash[:16]}" if manifest.script_hash else "")


def _progress_text(row: dict[str, object]) -> str:
    """``running (3/5 done)``; ``stopped (3/5 done, no report)`` for a run whose command ended first."""
    planned = f"/{row['planned']}" if row["planned"] is not None else ""
    if row["state"] == "running":
        return f"running ({row['done']}{planned} done)"
    return f"stopped ({row['done']}{planned} done, no report: eval run --resume continues it)"


def _result(row: dict[str, object]) -> str:
    rate = f"{row['passes']}/{row['judged']} pass" if row["judged"] else "no judged run"
    rate += f", {row['errored']} error" if row["errored"] else ""
    if row["capped"]:
        rate += f", stopped by {row['capped']}"
    elif row["interrupted"]:
        rate += ", interrupted"
    return rate


def _model(row: dict[str, object]) -> str:
    """``qwen2.5-coder (live)``; ``scripted`` alone when the model is the script's own name."""
    return str(row["model"]) if row["model"] == row["mode"] else f"{row['model']} ({row['mode']})"


def _cells(row: dict[str, object]) -> tuple[str, ...]:
    if "suiteId" not in row:
        return (str(row["runId"]), "(unreadable report)", "", "", "", "", "")
    running = "state" in row and row["state"] == "running"
    result = _progress_text(row) if "state" in row and (running or not row["readable"]) else _result(row)
    return (
        str(row["runId"]),
        f"{row['suiteId']} {row['suiteVersion']}",
        str(row.get("agent", "")),
        _model(row),
        str(row["createdAt"]),
        result,
        str(row["label"] or ""),
    )


def _table(rows: list[dict[str, object]]) -> str:
    """The header and one line per run, in columns two spaces apart."""
    lines = [HEADER, *(_cells(row) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    return "".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() + "\n"
        for line in lines
    )


def _named(run: StoredRun) -> tuple[str, str] | None:
    """The suite id and model of ``run``: its report's, else its plan.json's (a run still without a report)."""
    if run.report is not None:
        return run.report.conditions.suite_id, run.report.conditions.model
    manifest = None if run.progress is None else run.progress.manifest
    return None if manifest is None else (manifest.suite_id, manifest.model)


def _kept(found: list[StoredRun], suite: str | None, model: str | None) -> list[StoredRun]:
    return [
        run
        for run in found
        if (suite is None or ((named := _named(run)) is not None and named[0] == suite))
        and (model is None or ((named := _named(run)) is not None and named[1] == model))
    ]


def runs(
    suite: SuiteFilter = None,
    model: ModelFilter = None,
    limit: Limit = None,
    prune: Prune = False,
    older_than: OlderThan = None,
    json_output: Json = False,
    html: HtmlDir = None,
    given: Given = None,
) -> ExitCode:
    """List the stored runs, newest first: id, suite, model, when, pass rate, label."""
    import msgspec

    from alisio.shell.cli.options import check_min
    from alisio.shell.config_home import data_dir
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.stored import stored_runs

    root = data_dir(common.environment())
    if prune or older_than is not None:
        return _prune(root, prune, older_than)
    check_min("--limit", limit, 1)
    if given and html is None:
        raise CommandError("RUN|DIR arguments go with --html DIR (eval show opens one run)")
    if html is not None:
        from alisio.shell.lab.runs_page import write_runs_index

        listed = _kept(given_runs(given, root) if given else stored_runs(root), suite, model)[:limit]
        common.say(f"wrote {write_runs_index(html, listed)} ({len(listed)} runs)")
        return ExitCode.OK
    found = _kept(stored_runs(root), suite, model)[:limit]
    rows = [_row(run) for run in found]
    if json_output:
        common.out(msgspec.json.encode({"dataDir": str(root / "eval"), "runs": rows}) + b"\n")
        return ExitCode.OK
    if not rows:
        which = " matching --suite/--model" if suite is not None or model is not None else ""
        common.say(
            f"no stored runs{which} in {root / 'eval'} (eval run writes one there unless --out is given)"
        )
        return ExitCode.OK
    common.out(_table(rows))
    return ExitCode.OK


def _prune(root: Path, prune: bool, older_than: str | None) -> ExitCode:
    import time

    from alisio.core.text import age_seconds, plural
    from alisio.shell.errors import CommandError
    from alisio.shell.lab.prune import prune_runs

    if not prune or older_than is None:
        raise CommandError("--prune and --older-than AGE go together (as in --prune --older-than 30d)")
    age = age_seconds(older_than)
    if age is None:
        raise CommandError(
            f"--older-than: expected a whole number and a unit (s, m, h, d, w), got {older_than!r}"
        )
    try:
        done = prune_runs(root, age, time.time())
    except OSError as error:
        raise CommandError(f"{error.filename or root}: cannot prune: {error.strerror or error}") from None
    shown = f": {', '.join(done.removed)}" if done.removed else ""
    common.say(
        f"removed {plural(len(done.removed), 'run')} older than {older_than} from {root / 'eval'}{shown}"
    )
    if done.busy:
        common.say(f"kept {plural(len(done.busy), 'run')} another command is writing: {', '.join(done.busy)}")
    if done.unregistered:
        common.say(
            f"forgot {plural(done.unregistered, 'registered --out directory')} that holds no report now"
        )
    return ExitCode.OK


def given_runs(refs: list[str], root: Path) -> list[StoredRun]:
    """The runs ``refs`` name (run ids or directories; a variants job's root: each of its variants), in the
    order given.

    Raises:
        CommandError: a reference that names no run.
    """
    from returns.result import Success

    from alisio.shell.lab.store import read_report
    from alisio.shell.lab.stored import StoredRun, run_directory, variants_of

    found = []
    for ref in refs:
        directory = run_directory(ref, root)
        for where in [directory, *(directory / v for v in variants_of(directory))]:
            if (where / "report.json").is_file() or (where / "runs.jsonl").is_file():
                read = read_report(where)
                report = read.unwrap() if isinstance(read, Success) else None
                run_id = report.conditions.run_id if report is not None else where.name
                found.append(StoredRun(run_id=run_id, directory=where, report=report, modified=0.0))
    return found
