"""The tools that read the workspace tree: ``search`` (a regular expression, line by line) and ``analyze``.

Rules they keep:

- the tree is walked without recursion (a directory nested thousands of levels deep is walked like any
  other), sorted, skipping ``SKIPPED_DIRS`` and symlinks that lead outside the workspace;
- only regular files are read: FIFOs, devices and sockets are skipped (a FIFO would block the read
  forever), and a path naming one is refused;
- a file over ``SEARCH_MAX_FILE_BYTES`` is not searched, and the result names it; analyze checks Python files
  up to ``ctx.file_max_bytes`` and names the larger ones;
- search matches with RE2 (``alisio.core.share.linear_regex``): time linear in each line whatever the
  pattern, so ``^(a+)+$`` cannot hang the harness, on the main thread or a worker of ``--jobs`` alike (a
  pattern that needs backtracking, a lookaround or a backreference, is a tool error saying so);
- each call is bounded in time (``CallTime``: the tool's cap, or the run's deadline when nearer): the walk
  stops there, and the result keeps what was found so far and says why it stopped;
- output is deterministic for the same workspace (sorted walk), as replay compares it.
"""

from __future__ import annotations

import os
import stat
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from alisio.core.harness.tooldefs import AnalyzeArgs, SearchArgs
from alisio.core.share.linear_regex import LinearPattern, compile_linear
from alisio.shell.errors import expect
from alisio.shell.harness.tools.context import CallTime, ToolContext, ToolError, ToolOutcome
from alisio.shell.harness.tools.files import SNIFF_BYTES, file_kind, read_capped
from alisio.shell.harness.tools.limits import TimeLimitReached, time_limit
from alisio.shell.harness.tools.paths import ResolvedPath, resolve_in_workspace

__all__ = ["SEARCH_MAX_FILE_BYTES", "SKIPPED_DIRS", "analyze", "search"]

SKIPPED_DIRS: Final = frozenset(
    {".git", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis"}
)
"""Directories that search and analyze never enter."""
SEARCH_MAX_FILE_BYTES: Final = 1 << 20
_SEARCH_LINE_CHARS: Final = 300
_SKIPPED_NAMES_SHOWN: Final = 5
_READ_FLAGS: Final = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


@dataclass(frozen=True, slots=True)
class _File:
    absolute: str
    relative: str
    size: int


def _regular(absolute: str) -> int | None:
    """The size of ``absolute`` when it is a regular file (symlinks followed), else ``None``."""
    try:
        status = os.stat(absolute)
    except OSError:
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


def _files_under(resolved: ResolvedPath, root: str) -> Iterator[_File]:
    """The regular files under ``resolved`` in sorted walk order (see the module docstring for what is skipped)."""
    try:
        mode = os.stat(resolved.absolute).st_mode
    except OSError:  # missing, or under a file (``a.txt/b``)
        raise ToolError(f"path not found: {resolved.relative}") from None
    if stat.S_ISREG(mode):
        yield _File(resolved.absolute, resolved.relative, os.stat(resolved.absolute).st_size)
        return
    if not stat.S_ISDIR(mode):
        raise ToolError(
            f"{resolved.relative} is {file_kind(mode)}; only regular files and directories are read"
        )
    prefix = root + os.sep
    pending = [resolved.absolute]
    while pending:  # depth first, in sorted order, like os.walk with sorted names (without its recursion)
        directory = pending.pop()
        try:
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError:
            continue
        subdirectories = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED_DIRS:
                    subdirectories.append(entry.path)
                continue
            if entry.is_symlink() and not os.path.realpath(entry.path).startswith(prefix):
                continue
            size = _regular(entry.path)
            if size is not None:
                yield _File(entry.path, entry.path[len(prefix) :].replace(os.sep, "/"), size)
        pending.extend(reversed(subdirectories))


def _read_bytes(file: _File, limit: int) -> bytes | None:
    """At most ``limit`` bytes of a regular file (opened without blocking); ``None`` when it cannot be read."""
    try:
        descriptor = os.open(file.absolute, _READ_FLAGS)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):  # swapped for a FIFO since the walk
            return None
        return read_capped(handle, limit)


def _text_of(file: _File) -> str | None:
    """The file's text, or ``None`` for a file search skips (binary, not UTF-8, unreadable)."""
    data = _read_bytes(file, SEARCH_MAX_FILE_BYTES + 1)
    if data is None or b"\0" in data[:SNIFF_BYTES]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _past(ctx: ToolContext) -> bool:
    return ctx.deadline is not None and time.monotonic() > ctx.deadline


def _names(files: list[str]) -> str:
    return ", ".join(files[:_SKIPPED_NAMES_SHOWN]) + (", ..." if len(files) > _SKIPPED_NAMES_SHOWN else "")


# --- search -----------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Found:
    matches: list[str] = field(default_factory=list)
    too_large: list[str] = field(default_factory=list)
    files: int = 0
    full: bool = False
    stopped: bool = False
    """The walk passed the call's time."""


def search(args: SearchArgs, ctx: ToolContext, budget: CallTime) -> ToolOutcome:
    """Search the text files under ``args.path`` line by line; see the module docstring for the bounds."""
    found = _Found()
    resolved = resolve_in_workspace(ctx.root, ctx.in_workspace(args.path or "."))
    pattern = expect(
        compile_linear(args.pattern), f"invalid regular expression {args.pattern!r}", error=ToolError
    )
    deadline = time.monotonic() + budget.seconds
    _scan(pattern, resolved, ctx, found, deadline)
    if found.stopped:
        found.matches.append(f"[search stopped after {budget.seconds:g} s: {budget.why()}; narrow the path]")
        return ToolOutcome(False, "\n".join(found.matches), timed_out=True)
    if found.full:
        return ToolOutcome(True, "\n".join(found.matches))
    if not found.matches:
        found.matches.append(
            f"no matches for {args.pattern!r} in {found.files} text files under {resolved.relative}"
        )
    if found.too_large:
        plural = "file" if len(found.too_large) == 1 else "files"
        found.matches.append(
            f"[not searched: {len(found.too_large)} {plural} over {SEARCH_MAX_FILE_BYTES >> 20} MiB: "
            f"{_names(found.too_large)}; read them with read_file and offset/limit, or grep them with bash]"
        )
    return ToolOutcome(True, "\n".join(found.matches))


def _scan(
    pattern: LinearPattern, resolved: ResolvedPath, ctx: ToolContext, found: _Found, deadline: float
) -> None:
    for file in _files_under(resolved, ctx.root):
        if _past(ctx):
            found.matches.append("[search stopped: the run's time ran out]")
            return
        if time.monotonic() > deadline:
            found.stopped = True
            return
        if file.size > SEARCH_MAX_FILE_BYTES:
            found.too_large.append(file.relative)
            continue
        text = _text_of(file)
        if text is None:
            continue
        found.files += 1
        for number, raw in enumerate(text.split("\n"), 1):
            line = raw.removesuffix("\r")  # numbered as read_file counts lines, matched without CR
            if not pattern.found_in(line):
                continue
            if len(found.matches) == ctx.search_max_matches:
                found.matches.append(
                    f"[stopped after {ctx.search_max_matches} matches; narrow the pattern or the path]"
                )
                found.full = True
                return
            shown = line if len(line) <= _SEARCH_LINE_CHARS else line[:_SEARCH_LINE_CHARS] + " [...]"
            found.matches.append(f"{file.relative}:{number}: {shown}")


# --- analyze ------------------------------------------------------------------------------------------------------


def _syntax_problems(source: bytes, relative: str) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            compile(source, relative, "exec", dont_inherit=True)
        except SyntaxError as error:
            return [
                f"{relative}:{error.lineno or 0}:{error.offset or 0}: {type(error).__name__}: {error.msg}"
            ]
        except ValueError as error:  # source with NUL bytes
            return [f"{relative}:0:0: {error}"]
        except (RecursionError, MemoryError) as error:
            # compile() gives up on deeply nested expressions with these instead of a SyntaxError
            detail = str(error) or "the parser ran out of stack"
            return [f"{relative}:0:0: too deeply nested to compile ({type(error).__name__}: {detail})"]
    return [f"{relative}:{w.lineno}:0: warning: {w.message}" for w in caught]


@dataclass(slots=True)
class _Checked:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    too_large: list[str] = field(default_factory=list)
    files: int = 0


def analyze(args: AnalyzeArgs, ctx: ToolContext, budget: CallTime) -> ToolOutcome:
    """Compile every Python file under ``args.path`` (without running it) and list what does not compile."""
    checked = _Checked()
    timed_out = False
    resolved = resolve_in_workspace(ctx.root, ctx.in_workspace(args.path or "."))
    try:
        with time_limit(budget.seconds):
            _check(resolved, ctx, checked)
    except TimeLimitReached:
        checked.notes.append(f"[analyze stopped after {budget.seconds:g} s: {budget.why()}]")
        timed_out = True
    if checked.too_large:
        checked.notes.append(
            f"[not checked: {len(checked.too_large)} Python files over {ctx.file_max_bytes} bytes: "
            f"{_names(checked.too_large)}]"
        )
    lines = [*checked.problems, *checked.notes]
    if checked.files == 0 and not lines:
        return ToolOutcome(True, f"no Python files under {resolved.relative}")
    if checked.problems:
        summary = f"{len(checked.problems)} problems in {checked.files} Python files"
    else:
        summary = f"no problems found in {checked.files} Python files"
    return ToolOutcome(not timed_out, "\n".join([*lines, summary]), timed_out=timed_out)


def _check(resolved: ResolvedPath, ctx: ToolContext, checked: _Checked) -> None:
    for file in _files_under(resolved, ctx.root):
        if not file.relative.endswith(".py"):
            continue
        if _past(ctx):
            checked.notes.append("[analyze stopped: the run's time ran out]")
            return
        if file.size > ctx.file_max_bytes:
            checked.too_large.append(file.relative)
            continue
        source = _read_bytes(file, ctx.file_max_bytes)
        if source is None:
            continue
        checked.files += 1
        checked.problems.extend(_syntax_problems(source, file.relative))
