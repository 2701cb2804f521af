"""``alisio eval import skill DIR``: read a skill folder (SKILL.md, its files, ``evals/evals.json``) and hand the
core's mapping (``alisio.core.lab.suites.skill``) what it needs: the texts, the file list, their digests.

The skill is read as it is, never beyond it: a file or directory that is a symbolic link leading outside DIR is
refused, naming it (``alisio.shell.lab.importers.outside``), as the other importers do; files are copied as
bytes (an eval's input may be a PDF).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from returns.result import Failure

from alisio.core.lab.suites.importers import ImportedSuite
from alisio.core.lab.suites.skill import EVALS_FILE, SKILL_FILE, skill_suite
from alisio.shell.errors import CommandError
from alisio.shell.lab.importers import outside

__all__ = ["ImportedSkill", "import_skill"]

_MAX_FILES = 2000
_MAX_BYTES = 64 << 20


@dataclass(frozen=True)
class ImportedSkill:
    """The suite to write (its JSON files as text), the files copied as bytes, what was left out."""

    imported: ImportedSuite
    binary: dict[str, bytes]
    skipped: tuple[str, ...]
    advisory: int


def _files(root: Path) -> dict[str, Path]:
    """Every regular file under ``root`` by ``/``-separated relative path; refuses links that leave it."""
    found: dict[str, Path] = {}
    total = 0
    for path in sorted(root.rglob("*")):
        problem = outside(path, root)
        if problem is not None:
            raise CommandError(problem)
        if path.is_file():
            relative = path.relative_to(root).as_posix()
            if "/__pycache__/" in f"/{relative}" or relative.startswith(".git/"):
                continue
            total += path.stat().st_size
            found[relative] = path
        if len(found) > _MAX_FILES or total > _MAX_BYTES:
            raise CommandError(
                f"{root}: more than {_MAX_FILES} files or {_MAX_BYTES >> 20} MiB: not a skill folder"
            )
    return found


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CommandError(f"{path}: not found (a skill folder has {SKILL_FILE} and {EVALS_FILE})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise CommandError(f"{path}: cannot read it as UTF-8 text: {error}") from None


def import_skill(source: Path) -> ImportedSkill:
    """The suite of the skill at ``source``.

    Raises:
        CommandError: one line naming the file (and field) that is missing or wrong.
    """
    if not source.is_dir():
        raise CommandError(f"{source}: not a directory (give the skill folder, the one holding {SKILL_FILE})")
    files = _files(source)
    skill_md = _read_text(source / SKILL_FILE)
    evals_path = source / EVALS_FILE
    evals_text = _read_text(evals_path)
    try:
        evals = json.loads(evals_text)
    except ValueError as error:
        raise CommandError(f"{evals_path}: not valid JSON: {error}") from None
    digests = [hashlib.sha256(path.read_bytes()).hexdigest() for _, path in sorted(files.items())]
    result = skill_suite(skill_md, evals, tuple(files), digests, str(evals_path), source.resolve().name)
    if isinstance(result, Failure):
        raise CommandError(result.failure())
    made = result.unwrap()
    texts = {path: json.dumps(data, indent=2) + "\n" for path, data in made.extra}
    binary = {destination: files[relative].read_bytes() for destination, relative in made.copies}
    return ImportedSkill(
        imported=(made.suite, texts), binary=binary, skipped=made.skipped, advisory=made.advisory
    )
