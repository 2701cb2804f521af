"""Which suite a command runs: found by id, directory name or path, and confirmed when it is third-party code.

- A SUITE names a path when one exists there, or it holds a ``/`` or ends with ``.json`` (``suite_path``, as
  ``eval validate`` reads its PATHs); else it is an id or a directory name. ``suite_at`` turns a path into the
  ``--suite-dir`` it amounts to and the suite's name there, so ``eval run ./my-suite`` is ``eval run
  --suite-dir ./my-suite`` (plan.json, ``--resume`` and the warning are the same).
- ``find_suite`` looks in ``--suite-dir`` (a suite or a directory of suites) first, then among the bundled
  suites of the source checkout (``suites/`` beside ``src/``; an installed wheel has none and says so). An
  invalid suite still answers to the ``suiteId`` its suite.json declares, so naming it prints its violations
  instead of silently running a bundled suite of the same id.
- ``only_suite``: with no SUITE named, the one suite ``--suite-dir`` holds.
- One trust rule (``confirm_third_party``, ``confirm_trusted``): a suite whose directory is not inside the
  bundled suites (``is_bundled``), however it was named, is code that runs with the user's privileges (or in
  the sandbox): every command about to run its commands warns, asks on a terminal, and refuses without one
  unless ``--yes``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from returns.result import Failure, Success

from alisio.core.lab.suites.suite import violations as suite_violations
from alisio.shell.checkout import checkout_root
from alisio.shell.errors import CommandError
from alisio.shell.lab.suites import LoadedSuite, SuiteEntry, declared_suite_id, discover_suites

__all__ = [
    "NO_BUNDLED",
    "SuiteChoice",
    "bundled_by_name",
    "bundled_suites_root",
    "confirm_third_party",
    "confirm_trusted",
    "find_suite",
    "interactive_terminal",
    "is_bundled",
    "only_suite",
    "suite_at",
    "suite_path",
]

NO_BUNDLED = (
    "no bundled suites: this is not a source checkout (they live in its suites/ directory); pass --suite-dir"
)


def bundled_suites_root(package_file: Path | None = None) -> Path | None:
    """``suites/`` of the source checkout this package runs from, or ``None`` (an installed wheel; a module file
    given as ``package_file`` is taken for this package's, as ``alisio.shell.checkout.checkout_root`` reads it)."""
    root = checkout_root(package_file)
    suites = None if root is None else root / "suites"
    return suites if suites is not None and suites.is_dir() else None


@dataclass(frozen=True)
class SuiteChoice:
    """The suite to run, and whether it is third-party code (its directory is not inside the bundled suites)."""

    loaded: LoadedSuite
    third_party: bool


def is_bundled(directory: Path, bundled: Path | None) -> bool:
    """Whether ``directory`` (symbolic links resolved) is inside the bundled suites' root ``bundled``."""
    if bundled is None:
        return False
    return directory.resolve().is_relative_to(bundled.resolve())


def suite_path(ref: str) -> Path | None:
    """The path a SUITE argument names, or ``None`` when it is an id (or a bundled directory name): a path
    exists there, or it holds a ``/`` (or the system's separator), or it ends with ``.json``."""
    path = Path(ref)
    if os.path.lexists(path) or "/" in ref or os.sep in ref or ref.endswith(".json"):
        return path
    return None


def suite_at(path: Path) -> tuple[str, Path]:
    """The suite a SUITE path names, as the name ``find_suite`` finds it by and the ``--suite-dir`` to find it
    in: a suite directory, its suite.json, or a directory holding exactly one suite.

    Raises:
        CommandError: nothing at ``path``, no suite there, or several (naming them).
    """
    if not os.path.lexists(path):
        raise CommandError(f"SUITE {path}: no such file or directory (nor a bundled suite's id)")
    root = path.parent if path.is_file() else path
    entries = discover_suites(root)
    if not entries:
        raise CommandError(f"SUITE {path}: no suite.json here or in its immediate sub-directories")
    if len(entries) > 1:
        names = ", ".join(sorted(entry.directory.name for entry in entries))
        raise CommandError(f"SUITE {path} holds {len(entries)} suites ({names}): name the one to run")
    return entries[0].directory.name, root


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
    for root, _ in roots:
        for entry in _answering(ref, root):
            match entry.result:
                case Success(loaded):
                    return SuiteChoice(loaded=loaded, third_party=not is_bundled(loaded.directory, bundled))
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
    """Warn about a suite from outside the bundled ones; ask on a terminal unless ``yes``; refuse without one.

    ``sandboxed``: its commands run in the bwrap sandbox (the warning says what that still allows).

    Raises:
        CommandError: not confirmed, or no terminal to ask and no ``--yes``.
    """
    if not choice.third_party:
        return
    suite = choice.loaded.suite
    confirm_trusted(
        f"suite {suite.suite_id} is not a bundled suite ({choice.loaded.directory}): its verifier commands and "
        f"the tools it enables {_how(sandboxed)}. Only run suites you trust.",
        "refusing to run a suite from outside the bundled ones without a terminal to confirm it; pass --yes "
        "to accept it",
        yes=yes,
        interactive=interactive,
        say=say,
        ask=ask,
    )


def _how(sandboxed: bool) -> str:
    if sandboxed:
        return "run in the bwrap sandbox (a shared kernel, not a VM)"
    return "run with your privileges, not sandboxed"


def confirm_trusted(
    warning: str,
    refusal: str,
    *,
    yes: bool,
    interactive: bool,
    say: Callable[[str], None],
    ask: Callable[[], str],
) -> None:
    """The trust rule: say ``warning`` (after ``warning: ``); unless ``yes``, ask on a terminal, and refuse
    with ``refusal`` without one.

    Raises:
        CommandError: not confirmed (``nothing was run``), or no terminal to ask and no ``--yes``.
    """
    say(f"warning: {warning}")
    if yes:
        return
    if not interactive:
        raise CommandError(refusal)
    if ask().strip().lower() not in ("y", "yes"):
        raise CommandError("not confirmed; nothing was run")


def interactive_terminal() -> bool:
    """Whether a person can answer on this terminal (stdin and stderr are both terminals)."""
    return sys.stdin.isatty() and sys.stderr.isatty()
