"""The scripted provider plan of ``--script`` (eval run, record, variants) and ``make record-bundled``.

``--script FILE`` replays one script from its first turn for every run; ``--script DIR`` plays
``DIR/<task-id>.json`` for each selected task. Every script is read and parsed once, before the first run:
a missing or malformed one is a ``LabError`` (one line naming the file), never a failure mid-suite.
"""

from __future__ import annotations

from pathlib import Path

from alisio.core.lab.render import SCRIPTED_PROVIDER
from alisio.core.lab.suite import Task
from alisio.shell.harness.providers.base import ProviderFailure
from alisio.shell.harness.providers.scripted import ScriptedProvider
from alisio.shell.lab.pipeline import LabError, ProviderPlan

__all__ = ["scripted_plan"]


def scripted_plan(script: Path, tasks: tuple[Task, ...], model: str | None) -> ProviderPlan:
    """A fresh scripted provider per run: from one file, or from ``<dir>/<task-id>.json``."""
    files = {task.id: script / f"{task.id}.json" for task in tasks} if script.is_dir() else None
    missing = [task_id for task_id, path in (files or {}).items() if not path.exists()]
    if missing:
        names = ", ".join(f"{task_id}.json" for task_id in missing)
        raise LabError(
            f"--script {script}: no {names} for the selected tasks (select scripted ones with --tasks)"
        )
    scripts: dict[str, tuple[bytes, str]] = {}
    for task_id, path in (files or {"": script}).items():
        try:
            data = path.read_bytes()
            ScriptedProvider.from_json(data, str(path))
        except OSError as error:
            raise LabError(f"--script {path}: cannot read: {error.strerror or error}") from None
        except ProviderFailure as failure:
            raise LabError(f"--script {failure}") from None
        scripts[task_id] = (data, str(path))

    def factory(task: Task, _spec: object) -> ScriptedProvider:
        data, source = scripts[task.id if files is not None else ""]
        return ScriptedProvider.from_json(data, source)

    return ProviderPlan(
        id=SCRIPTED_PROVIDER, model=model or SCRIPTED_PROVIDER, factory=factory, close=lambda: None
    )
