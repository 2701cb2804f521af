"""What a task's verifiers read, kept from the agent: the protected files, their validation, and the hashes a
rejudged report names (the verifiers apart from the fixtures).

A task's ``protected`` (suite.json) lists paths of its fixture, files or directories, relative to the task
directory::

    "protected": ["check.py", "tests/"]

Without it, the protected files are the verifier code its ``command`` verifiers run that exists in the fixture
(``protected_paths``), taken relative to the verifier's ``cwd``: the program itself (``./check.sh``), the
script an interpreter runs (``python3 check.py``, ``bash run.sh``, ``node test.js``: the first word that is
not an option; what follows is its arguments, data), the paths a test runner is given (``pytest tests/``,
``python3 -m pytest tests/``, ``--rootdir=tests``), and the same inside a shell's ``-c`` script; for a command
that runs pytest, also the files pytest reads from its directory before any test: ``conftest.py`` and
``pytest.ini`` (protected when the fixture has them; their appearing there is tampering when it does not: a
``conftest.py`` dropped beside the tests can make every test pass). A name that
is a fixture directory protects every file under it; the task directory itself is never one. A path the task
lets the agent change (a ``tree-diff-within`` entry, or what a file verifier inspects) is left out: ``grep -q
TODO greet.py`` reads the agent's work, not the verifier's. ``"protected": []`` protects nothing (a task whose
agent must write its own tests); an explicit list is taken as it is.

Rules (``alisio.core.lab.judges.integrity`` checks a run against them):

- a protected file changed, deleted or replaced, or a file added under a protected directory, is tampering
  (a ``conftest.py`` dropped into ``tests/`` changes what the tests do);
- each entry of ``protected`` is validated like the other paths of a task (it stays inside the task
  directory, lexically and through symlinks) and must exist in the fixture; a repeated entry is refused;
- the list is part of the task, so of the suite's content hash (when set: a suite without it keeps its hash).
"""

from __future__ import annotations

import hashlib
import itertools
import re
import shlex
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

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


_INTERPRETERS: Final = frozenset(
    {"python", "python3", "node", "bash", "sh", "zsh", "ruby", "perl", "php", "bun", "deno"}
)
_SHELLS: Final = frozenset({"bash", "sh", "zsh"})
_RUNNERS: Final = frozenset({"pytest", "py.test"})
_TEST_MODULES: Final = frozenset({"pytest", "unittest"})
_VERSIONED: Final = re.compile(r"^python3\.\d+$")
_PYTEST_FILES: Final = ("conftest.py", "pytest.ini")
"""What pytest reads from the directory it starts in before any test: a plugin and its configuration."""


def _targets(words: Sequence[str]) -> list[str]:
    """A test runner's path arguments (``--flag=value`` counting its value)."""
    out: list[str] = []
    for word in words:
        if not word.startswith("-"):
            out.append(word)
        elif "=" in word:
            out.append(word.split("=", 1)[1])
    return out


def _script(code: str) -> list[str]:
    """The code words of a shell script (``bash -c``): each command between ``&&``, ``||``, ``;`` and ``|``."""
    try:
        lexer = shlex.shlex(code, posix=True, punctuation_chars=True)
        tokens = list(lexer)
    except ValueError:  # an unbalanced quote: its plain words
        tokens = code.split()
    words: list[str] = []
    command: list[str] = []
    for token in [*tokens, ";"]:
        if token and set(token) <= set("&|;()<>"):
            words += _code_words(command)
            command = []
        else:
            command.append(token)
    return words


def _code_words(command: Sequence[str]) -> list[str]:
    """The words of a command that name the verifier's own code: the program itself, the script an
    interpreter runs, a test runner's paths, and the same inside a shell's ``-c`` script."""
    if not command:
        return []
    program = command[0].rsplit("/", 1)[-1]
    rest = list(command[1:])
    if program == "env":
        return _code_words([word for word in rest if "=" not in word or word.startswith("-")])
    words = [command[0]]
    if program in _RUNNERS:
        return words + _targets(rest)
    if program not in _INTERPRETERS and not _VERSIONED.match(program):
        return words
    for index, word in enumerate(rest):
        if word == "-m":
            module = rest[index + 1] if index + 1 < len(rest) else ""
            return words + (_targets(rest[index + 2 :]) if module in _TEST_MODULES else [])
        if word == "-c":
            code = rest[index + 1] if index + 1 < len(rest) else ""
            return words + (_script(code) if program in _SHELLS else [])
        if not word.startswith("-"):
            return [*words, word]  # the script; what follows is its arguments
    return words


def _runs_pytest(command: Sequence[str]) -> bool:
    """Whether ``command`` runs pytest: as a program, with ``-m pytest``, or inside a shell's ``-c`` script."""
    words = list(command)
    for index, word in enumerate(command):
        if word == "-c" and index + 1 < len(command) and command[0].rsplit("/", 1)[-1] in _SHELLS:
            words += command[index + 1].replace(";", " ").replace("&", " ").replace("|", " ").split()
    names = [word.rsplit("/", 1)[-1] for word in words]
    return any(name in _RUNNERS for name in names) or any(
        a == "-m" and b == "pytest" for a, b in itertools.pairwise(names)
    )


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
    protected: tuple[str, ...] | None,
    commands: tuple[Command, ...],
    files: Collection[str],
    changeable: tuple[str, ...] = (),
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The protected files of a task, and the protected directories (module docstring).

    Args:
        protected: the task's ``protected`` (``None``: derived from its commands).
        commands: each command verifier's argument array and ``cwd``.
        files: every file of the fixture, relative to it (normalised, ``/``-separated).
        changeable: what the task lets the agent change (its ``tree-diff-within`` entries, the paths its file
            verifiers inspect): never protected by the derived default (an explicit list is taken as it is).

    Returns:
        (files, directories): the fixture files that are protected, and the fixture-relative directories a
        new file may not appear under. Both sorted, each once.
    """
    entries: list[str] = []
    watched: set[str] = set()  # paths pytest reads that the fixture lacks: their appearing is tampering
    if protected is not None:
        entries = [normalize(entry) for entry in protected]
    else:
        for command, cwd in commands:
            base = normalize(cwd) if cwd is not None else ""
            for word in _code_words(command):
                if word and not word.startswith("/") and lexical_problem(word, "task directory") is None:
                    entries.append(join(base, normalize(word)))
            if _runs_pytest(command):
                for name in _PYTEST_FILES:
                    path = join(base, name)
                    if path in files:
                        entries.append(path)
                    else:
                        watched.add(path)
        allowed = [normalize(path) for path in changeable]
        entries = [e for e in entries if not any(is_within(e, a) for a in allowed if a)]
        watched = {w for w in watched if not any(is_within(w, a) for a in allowed if a)}
    chosen: set[str] = set()
    directories: set[str] = set(watched)
    for entry in entries:
        named = _expand(entry, files)
        if protected is None:
            named = [
                f for f in named if not any(is_within(f, normalize(a)) for a in changeable if normalize(a))
            ]
        chosen.update(named)
        open_below = protected is None and any(
            is_within(normalize(a), entry) for a in changeable if normalize(a)
        )
        if named and entry not in files and not open_below:  # new files may appear where the task allows
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
