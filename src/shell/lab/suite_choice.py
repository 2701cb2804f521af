"""Which suite a command runs: found by id or directory name, and confirmed when it is third-party code.

- ``find_suite`` looks in ``--suite-dir`` (a suite or a directory of suites; third-party) first, then among
  the bundled suites of the source checkout (``suites/`` beside ``src/``; an installed wheel has none and says
  so). An invalid suite still answers to the ``suiteId`` its suite.json declares, so naming it prints its
  violations instead of silently running a bundled suite of the same id.
- ``only_suite``: with no SUITE named, the one suite ``--suite-dir`` holds.
- ``confirm_third_party``: a ``--suite-dir`` suite is code that runs with the user's privileges: warn, ask on
  a terminal, refuse without one unless ``--yes``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from returns.result import Failure, Success

from alisio.core.lab.suites.suite import violations as suite_violations
from alisio.shell.errors import CommandError
from alisio.shell.lab.suites import LoadedSuite, SuiteEntry, declared_suite_id, discover_suites

__all__ = [
    "NO_BUNDLED",
    "SuiteChoice",
    "bundled_by_name",
    "bundled_suites_root",
    "confirm_third_party",
    "find_suite",
    "interactive_terminal",
    "only_suite",
]

NO_BUNDLED = (
    "no bundled suites: this is not a source checkout (they live in its suites/ directory); pass --suite-dir"
)


def bundled_suites_root(package_file: Path | None = None) -> Path | None:
    """``suites/`` of the source checkout this package runs from, or ``None`` (an installed wheel).

    A checkout is recognised by this module at ``src/shell/lab/`` (symbolic links resolved) next to a
    ``pyproject.toml`` and a ``suites/`` directory.
    """
    here = (package_file or Path(__file__)).resolve()
    package = here.parent.parent
    root = package.parent.parent
    if (
        here.parent.name == "lab"
        and package.name == "shell"
        and package.parent.name == "src"
        and (root / "pyproject.toml").is_file()
    ):
        suites = root / "suites"
        return suites if suites.is_dir() else None
    return None


@dataclass(frozen=True)
class SuiteChoice:
    """The suite to run, and whether it came from ``--suite-dir`` (third-party code)."""

    loaded: LoadedSuite
    third_party: bool


def _entry_names(entry: SuiteEntry) -> set[str]:
    """The names a suite answers to: its directory name and its suiteId.

    An invalid suite still answers to the ``suiteId`` its raw suite.json declares, so that naming it gives its
    violations instead of silently falling back to a bundled suite with the same id.
    """
    names = {entry.directory.name}
    match entry.result:
        case Success(loaded):
            names.add(loaded.suite.suite_id)
        case Failure(_):
            names |= declared_suite_id(entry.directory)
    return names


def _answering(ref: str, root: Path) -> tuple[SuiteEntry, ...]:
    """The suite of ``root`` that answers to ``ref`` (none or one): a directory named ``ref`` wins over a
    suiteId; two directories that both declare the suiteId ``ref`` are refused, never one picked silently.

    Raises:
        CommandError: ``ref`` is the suiteId of several suites of ``root`` and the name of none of them.
    """
    entries = [entry for entry in discover_suites(root, named=ref) if ref in _entry_names(entry)]
    if len(entries) > 1:
        entries = [entry for entry in entries if entry.directory.name == ref] or entries
    if len(entries) > 1:
        shown = ", ".join(str(entry.directory) for entry in entries)
        raise CommandError(
            f"suite {ref!r} is ambiguous: {len(entries)} suites in {root} declare suiteId {ref!r} ({shown}); "
            "give --suite-dir the one to run"
        )
    return tuple(entries)


def find_suite(ref: str, suite_dir: Path | None, bundled: Path | None) -> SuiteChoice:
    """The suite whose id or directory name is ``ref``: in ``suite_dir`` first, then among the bundled ones.

    Raises:
        CommandError: no such suite (listing the known ones), a ``suite_dir`` that does not exist, a matching
            suite that is invalid (every violation, with its file), or several suites of one root matching.
    """
    if suite_dir is not None and not suite_dir.exists():
        raise CommandError(f"--suite-dir {suite_dir}: no such directory")
    roots = [(root, third_party) for root, third_party in ((suite_dir, True), (bundled, False)) if root]
    for root, third_party in roots:
        for entry in _answering(ref, root):
            match entry.result:
                case Success(loaded):
                    return SuiteChoice(loaded=loaded, third_party=third_party)
                case Failure(error):
                    raise CommandError(*(f"{error.source}: {line}" for line in suite_violations(error)))
    entries = [entry for root, _ in roots for entry in discover_suites(root)]
    known = sorted({e.result.unwrap().suite.suite_id for e in entries if isinstance(e.result, Success)})
    message = f"no suite {ref!r}"
    if known:
        message += f" (known: {', '.join(known)})"
    if bundled is None:
        message += (
            f"; {NO_BUNDLED}" if suite_dir is None else "; there are no bundled suites outside a checkout"
        )
    elif suite_dir is None:
        message += "; pass --suite-dir DIR for a suite outside the bundled ones"
    raise CommandError(message)


def bundled_by_name(name: str) -> tuple[SuiteEntry, ...]:
    """The bundled suites whose id or directory name is ``name`` (``eval validate smoke-coding``)."""
    root = bundled_suites_root()
    if root is None:
        return ()
    return tuple(entry for entry in discover_suites(root) if name in _entry_names(entry))


def only_suite(suite_dir: Path | None) -> str:
    """The one suite ``--suite-dir`` holds, by its directory name, when no SUITE was named.

    Raises:
        CommandError: no ``--suite-dir``, or one that holds no suite or several (naming them).
    """
    if suite_dir is None:
        raise CommandError("name a SUITE to run (or pass --suite-dir DIR holding one suite)")
    if not suite_dir.exists():
        raise CommandError(f"--suite-dir {suite_dir}: no such directory")
    entries = discover_suites(suite_dir)
    if len(entries) == 1:
        return entries[0].directory.name
    if not entries:
        raise CommandError(f"--suite-dir {suite_dir}: no suite.json here or in its immediate sub-directories")
    names = ", ".join(sorted(entry.directory.name for entry in entries))
    raise CommandError(
        f"--suite-dir {suite_dir} holds {len(entries)} suites ({names}): name the SUITE to run"
    )


def confirm_third_party(
    choice: SuiteChoice,
    *,
    yes: bool,
    interactive: bool,
    say: Callable[[str], None],
    ask: Callable[[], str],
    sandboxed: bool = False,
) -> None:
    """Warn about a ``--suite-dir`` suite; ask on a terminal unless ``yes``; refuse without one.

    ``sandboxed``: its commands run in the bwrap sandbox (the warning says what that still allows).

    Raises:
        CommandError: not confirmed, or no terminal to ask and no ``--yes``.
    """
    if not choice.third_party:
        return
    suite = choice.loaded.suite
    how = (
        "run in the bwrap sandbox (a shared kernel, not a VM)"
        if sandboxed
        else "run with your privileges, not sandboxed"
    )
    say(
        f"warning: suite {suite.suite_id} comes from --suite-dir ({choice.loaded.directory}): its verifier "
        f"commands and the tools it enables {how}. Only run suites you trust."
    )
    if yes:
        return
    if not interactive:
        raise CommandError(
            "refusing to run a --suite-dir suite without a terminal to confirm it; pass --yes to accept it"
        )
    if ask().strip().lower() not in ("y", "yes"):
        raise CommandError("not confirmed; nothing was run")


def interactive_terminal() -> bool:
    """Whether a person can answer on this terminal (stdin and stderr are both terminals)."""
    return sys.stdin.isatty() and sys.stderr.isatty()
