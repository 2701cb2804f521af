"""``alisio eval runs --html DIR``: write DIR/index.html over stored runs (``alisio.core.lab.outputs.runs_index``).

The links are relative paths from DIR to each report's report.html and, for one variant of an ``eval
variants`` job, to the job's comparison.html, URL-quoted: the page works from ``file://``, and a folder
holding both the page and the runs can be moved or attached as a whole. A page or link that does not exist is
not linked. DIR is created; index.html in it is replaced, atomically, and must be a regular file or a new name.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from alisio.core.lab.outputs.render_html import REPORT_HTML
from alisio.core.lab.outputs.runs_index import index_row, render_runs_index
from alisio.shell.errors import CommandError
from alisio.shell.lab.ci_outputs import OutputProblem, check_output_file, write_output_file
from alisio.shell.lab.outputs import COMPARISON_HTML
from alisio.shell.lab.preflight import NOTHING_WRITTEN
from alisio.shell.lab.resume import PLAN_JSON
from alisio.shell.lab.stored import StoredRun

__all__ = ["INDEX_HTML", "write_runs_index"]

INDEX_HTML = "index.html"


def _href(target: Path, page_dir: Path) -> str | None:
    """``target`` relative to ``page_dir``, URL-quoted; ``None`` when it is not a file."""
    if not target.is_file():
        return None
    return quote(os.path.relpath(target.resolve(), page_dir.resolve()).replace(os.sep, "/"))


def _comparison(run: StoredRun, page_dir: Path) -> str | None:
    """A variant's job's comparison.html (its parent is the job's root, with plan.json or the page)."""
    root = run.directory.parent
    if "/" not in run.run_id or not (root / COMPARISON_HTML).is_file():
        return None
    if not (root / PLAN_JSON).is_file() and not (root / "comparison.json").is_file():
        return None
    return _href(root / COMPARISON_HTML, page_dir)


def write_runs_index(directory: Path, runs: Sequence[StoredRun]) -> Path:
    """Write ``directory``/index.html over ``runs`` (in the order given) and return its path.

    Raises:
        CommandError: the directory cannot be created, or the page written (nothing else is touched).
    """
    page = directory / INDEX_HTML
    check_output_file(page, "--html", NOTHING_WRITTEN)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CommandError(f"--html {directory}: cannot create it: {error.strerror or error}") from None
    rows = [
        index_row(
            run.run_id, run.report, _href(run.directory / REPORT_HTML, directory), _comparison(run, directory)
        )
        for run in runs
    ]
    try:
        write_output_file(page, render_runs_index(rows), "--html")
    except OutputProblem as problem:
        raise CommandError(str(problem)) from None
    return page
