"""How a suite's violations read: one line each, ``task <id>: <field path>: <what>``.

``parse_suite`` (``alisio.core.lab.suites.suite``) finds the problems, each a field path from the document's
root and a message; ``format_problems`` writes them, suite-level fields first, then task by task in
document order:

- a problem inside a task whose id is usable names the task by its id and the rest of the path
  (``task add-one: verifiers[0].timeoutMs: ...``); a problem with the id itself, or in a task whose id is not
  usable, keeps the index (``tasks[3].id: ...``);
- keys that are not plain names are quoted as JSON (``policy["a b"]``);
- a carriage return or a newline inside a message is escaped, so each problem stays one line
  (``violations`` splits them back).
"""

from __future__ import annotations

import re
from typing import Any

from alisio.core.lab.runs.records import ID_PATTERN
from alisio.core.shape import FieldPath, Problem, json_repr

__all__ = ["format_problems"]

_ID = re.compile(ID_PATTERN)
"""A usable task id (the pattern of the suite's ``Id``, as msgspec applies it: a search)."""
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def format_problems(problems: list[Problem], raw: Any) -> str:
    """One line per problem, suite-level fields first, then task by task in document order."""
    ordered = sorted(problems, key=lambda problem: _task_index(problem[0]))
    return "\n".join(_format(path, message, raw) for path, message in ordered)


def _task_index(path: FieldPath) -> int:
    return path[1] if len(path) >= 2 and path[0] == "tasks" and isinstance(path[1], int) else -1


def _format(path: FieldPath, message: str, raw: Any) -> str:
    line = _where(path, raw)
    return (f"{line}: {message}" if line else message).replace("\r", "\\r").replace("\n", "\\n")


def _where(path: FieldPath, raw: Any) -> str:
    """``task <id>: rest.of[0].path`` when the task id is usable, else ``tasks[i].rest``."""
    index = _task_index(path)
    rest = path[2:]
    if index >= 0 and rest[:1] != ("id",):
        task_id = _usable_task_id(raw, index)
        if task_id is not None:
            return f"task {task_id}: {_dotted(rest)}" if rest else f"task {task_id}"
    return _dotted(path)


def _usable_task_id(raw: Any, index: int) -> str | None:
    tasks = raw.get("tasks") if isinstance(raw, dict) else None
    task = tasks[index] if isinstance(tasks, list) and index < len(tasks) else None
    task_id = task.get("id") if isinstance(task, dict) else None
    return task_id if isinstance(task_id, str) and _ID.search(task_id) is not None else None


def _dotted(path: FieldPath) -> str:
    parts: list[str] = []
    for segment in path:
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
        elif _PLAIN_KEY.fullmatch(segment):
            parts.append(f".{segment}" if parts else segment)
        else:
            parts.append(f"[{json_repr(segment)}]")
    return "".join(parts)
