"""The paths of a suite: lexical rules, and resolution through symlink facts the shell gathered.

A suite names two kinds of path (the spec, "Writing a suite"):

- a task's ``fixture``, relative to the suite directory, which must be an existing directory inside it;
- verifier paths (``path``, ``allowed[]``, ``cwd``), relative to the task directory (the fixture copy).

Rules this module keeps:

- Lexical checks need no facts: a path is non-empty, relative (no leading ``/``, no drive letter), uses
  ``/`` as its separator, has no ``..`` segment and does not name its root itself.
- The core never touches the filesystem. The shell walks the suite directory once (not following links)
  and hands over ``PathFacts``: the real directories and files, and for every symlink its fully resolved
  target relative to the suite directory (``None`` when it resolves outside the suite or cannot be
  resolved). ``resolve`` follows those links component by component, purely.
- ``PathFacts()`` (``gathered=False``) means "no facts": existence and symlink checks are skipped.
- A name that is not UTF-8 cannot enter a report, a cassette or the content hash (they are UTF-8 text): the
  shell lists such entries apart (``PathFacts.undecodable``, escaped) and a fixture holding one is refused.
- An entry that is neither a directory, a regular file nor a symlink (a FIFO, a socket, a device) cannot be
  copied into a run's workspace: the shell lists those apart too (``PathFacts.special``), and a fixture
  holding one is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from alisio.core.base import Frozen

__all__ = [
    "PathFacts",
    "SymlinkFact",
    "entry_problem",
    "escaping_links",
    "is_within",
    "join",
    "lexical_problem",
    "normalize",
    "resolve",
    "undecodable_names",
    "unusable_entries",
]


class SymlinkFact(Frozen, frozen=True, kw_only=True):
    """One symlink found under the suite directory."""

    path: str
    """Where the link is, relative to the suite directory (POSIX, no ``.`` or ``..``)."""
    target: str | None
    """Its fully resolved target relative to the suite directory (``""`` is the suite directory itself),
    or ``None`` when it resolves outside the suite or cannot be resolved (a loop)."""


class PathFacts(Frozen, frozen=True, kw_only=True):
    """What the shell found under a suite directory; all paths relative to it, POSIX, normalised."""

    gathered: bool = False
    """False: no facts were gathered, so existence and symlink checks are skipped."""
    directories: frozenset[str] = frozenset()
    """Real directories (never through a symlink)."""
    files: frozenset[str] = frozenset()
    """Real regular files (never through a symlink)."""
    symlinks: frozenset[SymlinkFact] = frozenset()
    """Every symlink, with its resolved target."""
    undecodable: frozenset[str] = frozenset()
    """Entries whose name is not UTF-8: the path of the entry with its undecodable bytes written as ``\\xNN``
    (``fixtures/a/bad\\xff.txt``). Nothing below such a directory is listed: one name is enough to refuse."""
    special: frozenset[tuple[str, str]] = frozenset()
    """Entries that are neither a directory, a regular file nor a symlink, each with what it is in words
    (``("fixtures/a/pipe", "a FIFO (named pipe)")``): a run could not copy them."""


_DRIVE = re.compile(r"^[A-Za-z]:")


def lexical_problem(path: str, root: str) -> str | None:
    """Why ``path`` is not an acceptable relative path under ``root`` (a name for messages), or None."""
    if path == "":
        return "must not be empty"
    if "\x00" in path:
        return "contains a NUL character"
    if "\\" in path:
        return "use / as the path separator"
    if path.startswith("/") or _DRIVE.match(path):
        return f"absolute path (paths are relative to the {root})"
    if ".." in path.split("/"):
        if _climbs_out(path):
            return f"path escapes the {root} (a .. segment)"
        # fixtures/../x stays inside, but the spec rejects every "..": say so rather than claim an escape.
        return f"contains a .. segment (not allowed, even inside the {root}; write the path without ..)"
    if normalize(path) == "":
        return f"names the {root} itself"
    return None


def _climbs_out(path: str) -> bool:
    """Whether resolving ``..`` segments lexically ever goes above the root."""
    depth = 0
    for segment in path.split("/"):
        if segment == "..":
            depth -= 1
            if depth < 0:
                return True
        elif segment not in ("", "."):
            depth += 1
    return False


def normalize(path: str) -> str:
    """``path`` without empty and ``.`` segments (``./src//a.py/`` -> ``src/a.py``); ``""`` is the root."""
    return "/".join(segment for segment in path.split("/") if segment not in ("", "."))


def join(base: str, path: str) -> str:
    """``base/path`` for normalised parts, where ``""`` is the suite directory."""
    return f"{base}/{path}" if base and path else base or path


def resolve(path: str, links: Mapping[str, str | None]) -> str | None:
    """Resolve a normalised suite-relative path through ``links``; None when it leaves the suite.

    Each link target is already fully resolved (the shell used ``Path.resolve``), so after a substitution
    only the remaining components need following; each step consumes one component, so this terminates.
    """
    current = ""
    for segment in path.split("/") if path else ():
        candidate = join(current, segment)
        if candidate in links:
            target = links[candidate]
            if target is None:
                return None
            candidate = target
        current = candidate
    return current


def is_within(path: str, root: str) -> bool:
    """Whether the normalised ``path`` is ``root`` or below it (``""`` is the suite directory)."""
    return root == "" or path == root or path.startswith(root + "/")


def escaping_links(root: str, facts: PathFacts) -> tuple[SymlinkFact, ...]:
    """The symlinks below ``root`` whose target is not inside ``root``, sorted by path."""
    return tuple(
        sorted(
            (
                link
                for link in facts.symlinks
                if is_within(link.path, root)
                and link.path != root
                and (link.target is None or not is_within(link.target, root))
            ),
            key=lambda link: link.path,
        )
    )


MAX_NAMED = 10
"""At most this many undecodable names are listed per fixture (a generated tree could hold thousands)."""


def undecodable_names(root: str, facts: PathFacts) -> tuple[str, ...]:
    """One message per entry under ``root`` whose name is not UTF-8 (it could not enter a report, a
    cassette or the content hash, which are UTF-8 text): at most ``MAX_NAMED``, then a count of the rest."""
    names = sorted(path for path in facts.undecodable if is_within(path, root))
    shown = [path if len(path) <= 200 else path[:197] + "..." for path in names[:MAX_NAMED]]
    messages = [
        f"{path}: the name is not valid UTF-8 (rename it; undecodable bytes shown as \\xNN)" for path in shown
    ]
    if len(names) > MAX_NAMED:
        messages.append(f"and {len(names) - MAX_NAMED} more names that are not valid UTF-8")
    return tuple(messages)


def unusable_entries(root: str, facts: PathFacts) -> tuple[str, ...]:
    """One message per entry under ``root`` that a run could not use: a name that is not UTF-8
    (``undecodable_names``), or an entry that is not a directory, a file or a symlink (at most ``MAX_NAMED``,
    then a count of the rest)."""
    special = sorted((path, kind) for path, kind in facts.special if is_within(path, root))
    messages = [
        f"{json.dumps(path[:200], ensure_ascii=False)} is {kind}: a fixture holds only directories, regular "
        "files and symlinks (a run could not copy it)"
        for path, kind in special[:MAX_NAMED]
    ]
    if len(special) > MAX_NAMED:
        messages.append(
            f"and {len(special) - MAX_NAMED} more entries that are not files, directories or links"
        )
    return undecodable_names(root, facts) + tuple(messages)


def entry_problem(path: str, facts: PathFacts, links: Mapping[str, str | None]) -> str | None:
    """Why ``path`` (a task's ``solution``) is not an entry inside the suite directory, or None.

    Lexical rules first; with gathered facts, it must resolve inside the suite to a directory or a file.
    """
    lexical = lexical_problem(path, "suite directory")
    if lexical is not None:
        return lexical
    if not facts.gathered:
        return None
    resolved = resolve(normalize(path), links)
    if resolved is None:
        return "escapes the suite directory through a symlink"
    if resolved not in facts.directories and resolved not in facts.files:
        return f"{json.dumps(path)[:200]} does not exist (a directory to lay over the copy, or a script)"
    return None
