"""A skill's own evals (``evals/evals.json`` in a skill folder) as an alisio suite whose runs have the skill as
their context (pure mapping; ``alisio eval import skill DIR``).

The format read is skill-creator's (anthropics/skills, ``references/schemas.md``; published skills also write
the list of evals alone, and ``expected`` beside ``expected_output``)::

    {"skill_name": "pdf",
     "evals": [{"id": 1, "prompt": "...", "expected_output": "...", "files": ["evals/files/a.pdf"],
                "expectations": ["The output includes X", "The skill used script Y"]}]}

Its ``expectations`` are sentences for a grader model, and ``expected_output`` a description for a person:
neither has a deterministic check, so neither is counted. Each becomes an *advisory* note of its task
(``Task.advisory``), shown with the task in report.md and never counted. A check is imported only when the
eval states one alisio can decide: an expectation written as an alisio verifier object
(``{"kind": "file-contains", "path": "out.txt", "text": "42"}``; its ``id`` defaults to ``expect-N``). An eval
with no such check is left out (``SkillSuite.skipped`` says so, with its advisory notes): a task that nothing
decides would count every run as a pass.

What the suite holds:
- one task per imported eval (id ``eval-<id>``), its prompt as written, a fixture holding its input
  ``files`` (under ``evals/files/`` they keep their path below it, other files their path in the skill);
- ``skill/<name>/``: the skill folder without its ``evals/`` (the agent must not read the expectations);
- ``compare.json``: ``without-skill`` against ``with-skill``, whose context puts the skill in the workspace
  at ``skills/<name>/`` and tells the built-in agent where it is (``system``); ``context-claude-code.json``
  puts it where Claude Code looks for user skills (``home``: ``.claude/skills/<name>/``).

Rules: every refusal is one line naming the file and the field (``evals[2].prompt``); ids are unique; a file
an eval names must be in the skill (no absolute path, no ``..``); the suite version carries a digest of
SKILL.md, evals.json and every file copied, so a changed skill is another suite version.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.lab.suites.importers import source_version, task_id_of

__all__ = ["EVALS_FILE", "SKILL_FILE", "SkillSuite", "skill_front_matter", "skill_suite"]

SKILL_FILE: Final = "SKILL.md"
EVALS_FILE: Final = "evals/evals.json"
_BUDGET: Final = {"maxTurns": 30, "maxWallMs": 600_000}
_POLICY: Final = {"mode": "auto", "allow": ["write", "process"]}
_NAME: Final = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_FILES_DIR: Final = "evals/files/"
_NOTHING_DETERMINISTIC: Final = (
    "none of its {count} evals has a deterministic check: their expectations and expected outputs are text "
    "for a grader model or a person, imported only as advisory notes of a task that has one (write an "
    'expectation as an alisio verifier, e.g. {{"kind": "file-contains", "path": "out.txt", "text": "42"}})'
)


class SkillSuite(Frozen, frozen=True, kw_only=True):
    """What the shell writes: suite.json, compare.json and context files as data, and what to copy."""

    suite: dict[str, Any]
    extra: tuple[tuple[str, dict[str, Any]], ...]
    """Other JSON files by suite-relative path (compare.json, the context files)."""
    copies: tuple[tuple[str, str], ...]
    """(suite-relative destination, skill-relative source) of every file to copy."""
    skipped: tuple[str, ...]
    """One line per eval left out (no deterministic check), with its advisory notes."""
    advisory: int
    """Advisory notes kept in the imported tasks."""


def skill_front_matter(text: str) -> dict[str, str]:
    """The ``key: value`` lines of SKILL.md's front matter (between the first two ``---`` lines)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    found: dict[str, str] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            return found
        key, colon, value = line.partition(":")
        if colon and key.strip() and not key.startswith((" ", "\t")):
            found[key.strip()] = value.strip().strip("\"'")
    return {}


def _fail(where: str, message: str) -> Failure[str]:
    return Failure(f"{where}: {message}")


def _relative_problem(path: str) -> str | None:
    parts = path.split("/")
    if not path or path.startswith("/") or "\\" in path or any(part in ("", ".", "..") for part in parts):
        return "must be a path inside the skill (relative, no '..', no empty part)"
    if path == EVALS_FILE:
        return "names evals.json itself"
    return None


def _fixture_path(path: str) -> str:
    return path[len(_FILES_DIR) :] if path.startswith(_FILES_DIR) else path


class _Eval(Frozen, frozen=True, kw_only=True):
    task_id: str
    prompt: str
    files: tuple[str, ...]
    verifiers: tuple[dict[str, Any], ...]
    advisory: tuple[str, ...]


def _advisory(raw: Mapping[str, Any]) -> list[str]:
    """``expected_output`` (skill-creator's) and ``expected`` (seen in published skills: "PASS"), as notes."""
    notes = []
    for key, label in (("expected_output", "expected output"), ("expected", "expected")):
        expected = raw.get(key)
        if isinstance(expected, str) and expected.strip():
            notes.append(f"{label}: {expected.strip()}")
    return notes


def _one_eval(index: int, raw: object, source: str, skill_files: frozenset[str]) -> Result[_Eval, str]:
    where = f"{source}: evals[{index}]"
    if not isinstance(raw, dict):
        return _fail(where, "expected an object with id and prompt")
    eval_id = raw.get("id")
    if isinstance(eval_id, bool) or not isinstance(eval_id, (int, str)) or str(eval_id).strip() == "":
        return _fail(f"{where}.id", "expected an integer or a non-empty string")
    prompt = raw.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return _fail(f"{where}.prompt", "expected the task's prompt (a non-empty string)")
    files = raw.get("files", [])
    if not isinstance(files, list) or not all(isinstance(path, str) for path in files):
        return _fail(f"{where}.files", "expected a list of paths relative to the skill")
    for number, path in enumerate(files):
        problem = _relative_problem(path)
        if problem is None and path not in skill_files:
            problem = "is not a file of the skill"
        if problem is not None:
            return _fail(f"{where}.files[{number}]", f"{path!r} {problem}")
    fixture_paths = [_fixture_path(path) for path in files]
    if len(set(fixture_paths)) != len(fixture_paths):
        return _fail(f"{where}.files", "two files land on the same path in the fixture")
    expectations = raw.get("expectations", [])
    if not isinstance(expectations, list):
        return _fail(f"{where}.expectations", "expected a list")
    verifiers: list[dict[str, Any]] = []
    advisory = _advisory(raw)
    for number, expectation in enumerate(expectations):
        if isinstance(expectation, str):
            if expectation.strip():
                advisory.append(expectation.strip())
        elif isinstance(expectation, dict) and isinstance(expectation.get("kind"), str):
            verifiers.append({"id": f"expect-{number + 1}", **expectation})
        else:
            message = "expected a sentence (advisory) or an alisio verifier object with a kind"
            return _fail(f"{where}.expectations[{number}]", message)
    return Success(
        _Eval(
            task_id=task_id_of(f"eval-{eval_id}"),
            prompt=prompt,
            files=tuple(files),
            verifiers=tuple(verifiers),
            advisory=tuple(advisory),
        )
    )


def _contexts(name: str, description: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    where = f"skills/{name}/"
    what = f": {description}" if description else ""
    system = (
        f"A skill is installed in the workspace at {where}SKILL.md ({name}{what}). When the task matches it, "
        "read that file first and follow it; its scripts and references are beside it."
    )
    builtin = {"label": f"skill {name}", "workspace": {where: f"skill/{name}/"}, "system": system}
    claude = {"label": f"skill {name}", "home": {f".claude/skills/{name}/": f"skill/{name}/"}}
    compare = {
        "suite": f"skill-{name}",
        "variants": [{"id": "without-skill"}, {"id": "with-skill", "context": builtin}],
    }
    return (
        ("compare.json", compare),
        ("context-builtin.json", builtin),
        ("context-claude-code.json", claude),
    )


def skill_suite(
    skill_md: str,
    evals_raw: object,
    skill_files: Sequence[str],
    digests: Sequence[str],
    source: str,
    folder: str = "",
) -> Result[SkillSuite, str]:
    """The suite of a skill's evals.

    Args:
        skill_md: SKILL.md's text.
        evals_raw: evals.json, decoded.
        skill_files: every regular file of the skill, relative to its root (``/``-separated).
        digests: the sha256 of SKILL.md, evals.json and every file copied (the suite version's digest).
        source: how messages name evals.json (its path).
        folder: the skill folder's name: the skill's name when neither SKILL.md nor evals.json gives one.

    Returns:
        The suite, or one line naming the file and field that is wrong (no eval with a deterministic check:
        a line saying so, listing what was read).
    """
    front = skill_front_matter(skill_md)
    listed = _listed(evals_raw)
    if listed is None:
        return _fail(source, 'expected {"skill_name": ..., "evals": [...]} (or the list of evals alone)')
    named = evals_raw.get("skill_name") if isinstance(evals_raw, dict) else None
    name = front.get("name") or (named if isinstance(named, str) else "") or folder
    if not _NAME.match(name):
        return _fail(f"{source}: skill_name", f"{name!r} is not a skill name (lower-case letters, digits, -)")
    match _evals(listed, source, frozenset(skill_files)):
        case Failure() as failure:
            return failure
        case Success(parsed):
            pass
    kept = [one for one in parsed if one.verifiers]
    if not kept:
        return _fail(source, _NOTHING_DETERMINISTIC.format(count=len(parsed)))
    suite = {
        "schemaVersion": 1,
        "suiteId": f"skill-{name}",
        "suiteVersion": source_version("1.0.0", digests),
        "description": f"The evals of the skill {name} (imported from {source})",
        "tasks": [_task(one) for one in kept],
    }
    copies = [(f"fixtures/{one.task_id}/{_fixture_path(path)}", path) for one in kept for path in one.files]
    copies += [
        (f"skill/{name}/{path}", path) for path in sorted(skill_files) if not path.startswith("evals/")
    ]
    return Success(
        SkillSuite(
            suite=suite,
            extra=_contexts(name, front.get("description", "")),
            copies=tuple(copies),
            skipped=tuple(_skipped(one) for one in parsed if not one.verifiers),
            advisory=sum(len(one.advisory) for one in kept),
        )
    )


def _listed(raw: object) -> list[object] | None:
    """The evals: ``{"evals": [...]}``, or the list alone (as some published skills write it)."""
    if isinstance(raw, dict) and isinstance(raw.get("evals"), list):
        return list(raw["evals"])
    return list(raw) if isinstance(raw, list) else None


def _evals(raw: list[object], source: str, files: frozenset[str]) -> Result[list[_Eval], str]:
    """Every eval parsed, their task ids unique."""
    parsed: list[_Eval] = []
    for index, entry in enumerate(raw):
        match _one_eval(index, entry, source, files):
            case Failure() as failure:
                return failure
            case Success(one):
                if any(other.task_id == one.task_id for other in parsed):
                    return _fail(f"{source}: evals[{index}].id", f"repeats the id of task {one.task_id}")
                parsed.append(one)
    return Success(parsed)


def _task(one: _Eval) -> dict[str, Any]:
    return {
        "id": one.task_id,
        "prompt": one.prompt,
        "fixture": f"fixtures/{one.task_id}",
        "budget": dict(_BUDGET),
        "policy": dict(_POLICY),
        "verifiers": list(one.verifiers),
        **({"advisory": list(one.advisory)} if one.advisory else {}),
    }


def _skipped(one: _Eval) -> str:
    count = len(one.advisory)
    notes = " | ".join(one.advisory) or "none"
    return f"{one.task_id}: not imported, no deterministic check ({count} advisory note{'s' if count != 1 else ''}: {notes})"
