"""What a task's verifiers read, kept from the agent: the protected files, their validation, and the hashes a
rejudged report names (the verifiers apart from the fixtures).

A task's ``protected`` (suite.json) lists paths of its fixture, files or directories, relative to the task
directory::

    "protected": ["check.py", "tests/"]

Without it, the protected files are those its ``command`` verifiers name that exist in the fixture
(``protected_paths``): each word of each command (a word with spaces, a ``bash -c`` script, is split into
words; ``--flag=value`` counts its value), taken relative to the verifier's ``cwd``, that is a fixture file,
or a fixture directory (then every file under it); the task directory itself is never one.
``"protected": []`` protects nothing (a task whose agent must write its own tests).

Rules (``alisio.core.lab.judges.integrity`` checks a run against them):

- a protected file changed, deleted or replaced, or a file added under a protected directory, is tampering
  (a ``conftest.py`` dropped into ``tests/`` changes what the tests do);
- each entry of ``protected`` is validated like the other paths of a task (it stays inside the task
  directory, lexically and through symlinks) and must exist in the fixture; a repeated entry is refused;
- the list is part of the task, so of the suite's content hash (when set: a suite without it keeps its hash).
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Collection, Mapping
from typing import Any

import msgspec

from alisio.core.lab.suites.suite_paths import (
    PathFacts,
    is_within,
    join,
    lexical_problem,
    normalize,
    resolve,
)
from alisio.core.shape import FieldPath, Problem, json_repr

__all__ = ["Command", "fixtures_hash", "protected_paths", "protected_problems", "verifiers_hash"]

_hash_encoder = msgspec.json.Encoder(order="deterministic")


def _words(command: tuple[str, ...]) -> list[str]:
    words: list[str] = []
    for argument in command:
        parts = [argument]
        if any(space in argument for space in " \t\n"):
            try:
                parts = shlex.split(argument)
            except ValueError:  # an unbalanced quote: its plain words
                parts = argument.split()
        for part in parts:
            words.append(part)
            if part.startswith("-") and "=" in part:
                words.append(part.split("=", 1)[1])
    return words


def _expand(entry: str, files: Collection[str]) -> list[str]:
    """``entry`` (fixture-relative, normalised) as the fixture files it names: itself, or those under it."""
    if entry in ("", "."):
        return []
    if entry in files:
        return [entry]
    return sorted(path for path in files if is_within(path, entry) and path != entry)


Command = tuple[tuple[str, ...], str | None]
"""A command verifier's argument array and ``cwd``."""


def protected_paths(
    protected: tuple[str, ...] | None, commands: tuple[Command, ...], files: Collection[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The protected files of a task, and the protected directories (module docstring).

    Args:
        protected: the task's ``protected`` (``None``: derived from its commands).
        commands: each command verifier's argument array and ``cwd``.
        files: every file of the fixture, relative to it (normalised, ``/``-separated).

    Returns:
        (files, directories): the fixture files that are protected, and the fixture-relative directories a
        new file may not appear under. Both sorted, each once.
    """
    entries: list[str] = []
    if protected is not None:
        entries = [normalize(entry) for entry in protected]
    else:
        for command, cwd in commands:
            base = normalize(cwd) if cwd is not None else ""
            for word in _words(command):
                if word and not word.startswith("/") and lexical_problem(word, "task directory") is None:
                    entries.append(join(base, normalize(word)))
    chosen: set[str] = set()
    directories: set[str] = set()
    for entry in entries:
        named = _expand(entry, files)
        chosen.update(named)
        if named and entry not in files:
            directories.add(entry)
    return tuple(sorted(chosen)), tuple(sorted(directories))


def protected_problems(
    task: dict[str, Any], misshapen: list[FieldPath], facts: PathFacts, root: str | None,
    links: Mapping[str, str | None],
) -> list[Problem]:  # fmt: skip
    """The rule violations of a task's ``protected`` (decoded JSON), paths relative to the task."""
    raw = task.get("protected")
    if not isinstance(raw, list) or any(path[:1] == ("protected",) for path in misshapen):
        return []
    problems: list[Problem] = []
    for index, entry in enumerate(raw):
        where: FieldPath = ("protected", index)
        if entry in raw[:index]:
            problems.append((where, f"duplicate path {json_repr(entry, limit=200)}"))
            continue
        lexical = lexical_problem(entry, "task directory")
        if lexical is not None:
            problems.append((where, lexical))
            continue
        if root is None:
            continue
        resolved = resolve(join(root, normalize(entry)), links)
        if resolved is None or not is_within(resolved, root):
            problems.append((where, "path escapes the task directory through a symlink"))
        elif resolved == root:
            problems.append((where, "names the whole task directory (the agent could change nothing)"))
        elif resolved not in facts.files and resolved not in facts.directories:
            problems.append((where, f"{json_repr(entry, limit=200)} does not exist in the fixture"))
    return problems


class _Verifiers(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    task: str
    verifiers: tuple[Any, ...]
    protected: tuple[str, ...] | None


def verifiers_hash(tasks: tuple[Any, ...]) -> str:
    """The sha256 (hex) of every task's verifiers and ``protected``, by task id: what judges a run, apart from
    the fixtures (``fixtures_hash``); a rejudged report names both, before and after."""
    parts = tuple(
        _Verifiers(task=task.id, verifiers=task.verifiers, protected=task.protected) for task in tasks
    )
    return hashlib.sha256(_hash_encoder.encode(sorted(parts, key=lambda part: part.task))).hexdigest()


def fixtures_hash(files: Mapping[str, str]) -> str:
    """The sha256 (hex) of the fixture files (suite-relative path -> sha256 of its bytes), sorted."""
    return hashlib.sha256(_hash_encoder.encode(sorted(files.items()))).hexdigest()
