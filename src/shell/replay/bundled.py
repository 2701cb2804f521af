"""Re-record the bundled cassettes with the scripted provider (``make record-bundled``).

``python -m alisio.shell.replay.bundled [--tasks suite/task,...] [--out DIR]``

Every bundled suite with a ``scripts/`` directory is recorded: each task that has ``scripts/<task-id>.json``
runs once with that script, under the default measured configuration (never the user's), with
``--allow-write --allow-process`` granted, and its cassette goes to ``suites/<suite>/cassettes/`` (or
``DIR/<suite>/`` with ``--out``). The recordings hold no timestamp and normalise per-run paths, so two
consecutive recordings are byte-identical. Exit 0 when every cassette was written and every recorded run
passed; 1 otherwise (one line on stderr says why). The command itself (options, exit codes) is
``alisio.shell.cli.record_bundled``; this module does the recording.
"""

from __future__ import annotations

import os
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from returns.result import Success

from alisio.core.harness.config import MeasuredConfig
from alisio.core.lab.report import Mode
from alisio.core.lab.suite import Task
from alisio.shell.harness.tools.dispatch import tool_env
from alisio.shell.lab.pipeline import (
    LabError,
    LabRun,
    bundled_suites_root,
    created_at_for,
    preflight,
    run_id_for,
)
from alisio.shell.lab.suites import LoadedSuite, discover_suites
from alisio.shell.replay.cassettes import credentials_of
from alisio.shell.replay.record import BUNDLED_GRANTS, Recorded, record_cassettes, recording_plan

SCRIPTS = "scripts"
GRANTED = BUNDLED_GRANTS


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _wanted(tasks: str | None) -> dict[str, set[str]] | None:
    """``suite/task,...`` as {suite: {task}}; ``None`` for every scripted task."""
    if tasks is None:
        return None
    wanted: dict[str, set[str]] = {}
    for item in tasks.split(","):
        suite, slash, task = item.strip().partition("/")
        if not slash or not suite or not task:
            raise LabError(f"--tasks {item!r}: expected suite/task")
        wanted.setdefault(suite, set()).add(task)
    return wanted


def _scripted_suites(root: Path) -> list[LoadedSuite]:
    suites: list[LoadedSuite] = []
    for entry in discover_suites(root):
        if isinstance(entry.result, Success) and (entry.directory / SCRIPTS).is_dir():
            suites.append(entry.result.unwrap())
    return suites


def _selected(loaded: LoadedSuite, wanted: set[str] | None) -> tuple[Task, ...]:
    scripted = {path.stem for path in (loaded.directory / SCRIPTS).glob("*.json")}
    unknown = sorted((wanted or set()) - scripted)
    if unknown:
        names = ", ".join(f"{loaded.suite.suite_id}/{task}" for task in unknown)
        raise LabError(f"--tasks: no script for {names} (scripted: {', '.join(sorted(scripted))})")
    ids = [task.id for task in loaded.suite.tasks if task.id in (wanted if wanted is not None else scripted)]
    measured = MeasuredConfig()
    return preflight(loaded, ids, GRANTED, read_only=False, allow_suite_full=False, measured=measured)


def record_suite(loaded: LoadedSuite, tasks: tuple[Task, ...], directory: Path) -> tuple[Recorded, ...]:
    """Record ``tasks`` of ``loaded`` with their scripts into ``directory`` (default configuration)."""
    from alisio.shell.lab.scripted_plan import scripted_plan

    plan, hook = recording_plan(scripted_plan(loaded.directory / SCRIPTS, tasks, None))
    now = datetime.now(UTC)
    lab = LabRun(
        loaded=loaded,
        tasks=tasks,
        k=1,
        seed=0,
        mode=Mode.LIVE,
        provider=plan,
        measured=MeasuredConfig(),
        granted=GRANTED,
        read_only=False,
        keep=False,
        directory=Path(tempfile.mkdtemp(prefix="alisio-record-")),
        run_id=run_id_for(now),
        created_at=created_at_for(now),
        tool_env=tool_env(os.environ, None),
    )
    return record_cassettes(lab, hook, directory, credentials_of(os.environ, None), say=_say)


def record_bundled(tasks: str | None, out: Path | None) -> int:
    """Record the bundled cassettes (``--tasks suite/task,...`` or all scripted ones) and say each on stderr.

    Returns:
        How many recorded runs did not pass.

    Raises:
        LabError: no bundled suites, an unknown suite or task in ``tasks``, or a task its policy refuses.
    """
    root = bundled_suites_root()
    if root is None:
        raise LabError("no bundled suites: run this from the source checkout")
    wanted = _wanted(tasks)
    suites = _scripted_suites(root)
    known = {loaded.suite.suite_id for loaded in suites}
    if wanted is not None and set(wanted) - known:
        missing = ", ".join(sorted(set(wanted) - known))
        raise LabError(f"--tasks: no scripted bundled suite {missing} (known: {', '.join(sorted(known))})")
    failed = 0
    for loaded in suites:
        if wanted is not None and loaded.suite.suite_id not in wanted:
            continue
        selected = _selected(loaded, wanted[loaded.suite.suite_id] if wanted is not None else None)
        directory = out / loaded.suite.suite_id if out is not None else loaded.directory / "cassettes"
        for item in record_suite(loaded, selected, directory):
            _say(f"wrote {item.path} ({item.calls} calls, {item.size / 1024:.1f} KB): {item.status}")
            failed += item.status != "pass"
    return failed


if __name__ == "__main__":
    from alisio.shell.cli.record_bundled import main

    main()
