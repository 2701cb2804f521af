"""Re-record the bundled cassettes with the scripted provider (``make record-bundled``).

Every bundled suite with a ``scripts/`` directory is recorded: each task that has ``scripts/<task-id>.json``
runs once with that script, through the lab's pipeline as ``eval record`` does, under the default measured
configuration (never the user's), with ``--allow-write --allow-process`` granted; its cassette goes to
``suites/<suite>/cassettes/`` (or ``DIR/<suite>/`` with ``--out``). The recordings hold no timestamp and
normalise per-run paths, so two consecutive recordings are byte-identical. The command, with its options and
exit codes, is ``python -m alisio.shell.cli.record_bundled [--tasks suite/task,...] [--out DIR]``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from returns.result import Success

from alisio.core.text import plural
from alisio.shell.errors import CommandError
from alisio.shell.lab.model import Ui
from alisio.shell.lab.pipeline import run_request
from alisio.shell.lab.request import LabMode, LabRequest, Permissions, ProviderOptions, Selection
from alisio.shell.lab.suite_choice import bundled_suites_root
from alisio.shell.lab.suites import LoadedSuite, discover_suites

__all__ = ["SCRIPTS", "record_bundled"]

SCRIPTS = "scripts"


def _wanted(tasks: str | None) -> dict[str, set[str]] | None:
    """``suite/task,...`` as {suite: {task}}; ``None`` for every scripted task."""
    if tasks is None:
        return None
    wanted: dict[str, set[str]] = {}
    for item in tasks.split(","):
        suite, slash, task = item.strip().partition("/")
        if not slash or not suite or not task:
            raise CommandError(f"--tasks {item!r}: expected suite/task")
        wanted.setdefault(suite, set()).add(task)
    return wanted


def _scripted_suites(root: Path) -> list[LoadedSuite]:
    return [
        entry.result.unwrap()
        for entry in discover_suites(root)
        if isinstance(entry.result, Success) and (entry.directory / SCRIPTS).is_dir()
    ]


def _task_ids(loaded: LoadedSuite, wanted: set[str] | None) -> tuple[str, ...]:
    scripted = {path.stem for path in (loaded.directory / SCRIPTS).glob("*.json")}
    unknown = sorted((wanted or set()) - scripted)
    if unknown:
        names = ", ".join(f"{loaded.suite.suite_id}/{task}" for task in unknown)
        raise CommandError(f"--tasks: no script for {names} (scripted: {', '.join(sorted(scripted))})")
    chosen = wanted if wanted is not None else scripted
    return tuple(task.id for task in loaded.suite.tasks if task.id in chosen)


def record_bundled(tasks: str | None, out: Path | None, say: Callable[[str], None]) -> int:
    """Record the bundled cassettes (``--tasks suite/task,...`` or all scripted ones), each said on stderr.

    Returns:
        How many recorded runs did not pass.

    Raises:
        CommandError: no bundled suites, an unknown suite or task in ``tasks``, or a task its policy refuses.
    """
    root = bundled_suites_root()
    if root is None:
        raise CommandError("no bundled suites: run this from the source checkout")
    wanted = _wanted(tasks)
    suites = _scripted_suites(root)
    known = {loaded.suite.suite_id for loaded in suites}
    if wanted is not None and set(wanted) - known:
        missing = ", ".join(sorted(set(wanted) - known))
        raise CommandError(
            f"--tasks: no scripted bundled suite {missing} (known: {', '.join(sorted(known))})"
        )
    ui = Ui(say=say, ask=lambda question: "", interactive=False)
    failed = 0
    for loaded in suites:
        suite_id = loaded.suite.suite_id
        if wanted is not None and suite_id not in wanted:
            continue
        request = LabRequest(
            selection=Selection(
                suite=suite_id, tasks=_task_ids(loaded, wanted.get(suite_id) if wanted else None), k=1
            ),
            mode=LabMode.RECORD,
            provider=ProviderOptions(script=loaded.directory / SCRIPTS),
            permissions=Permissions(write=True, process=True),
            cassette_dir=out / suite_id if out is not None else None,
            default_config=True,
            env=dict(os.environ),
        )
        outcome = run_request(request, ui)
        if outcome.interrupted is not None:
            raise outcome.interrupted
        for item in outcome.recorded:
            say(f"wrote {item.path} ({plural(item.calls, 'call')}, {item.size / 1024:.1f} KB): {item.status}")
            failed += item.status != "pass"
    return failed


if __name__ == "__main__":  # the command's earlier address: say where it is now, never succeed silently
    sys.exit("python -m alisio.shell.replay.bundled has moved: run python -m alisio.shell.cli.record_bundled")
