"""Carry out the model's tool calls in the workspace (the tools themselves are defined in ``alisio.core.harness.tooldefs``).

``execute_tool(call, ctx)`` decodes the arguments with the core, runs the tool and returns a ``ToolOutcome``.
It never raises for anything the model can cause: invalid JSON, a missing, extra or wrong-typed argument,
an unknown tool, a path outside the workspace, a missing or binary file, a refused edit, a failing or
timed-out command are all ``ToolOutcome(ok=False, output=<what went wrong and what to do>)``. The policy is
not checked here: the agent asks ``alisio.core.harness.policy.decide`` before calling ``execute_tool``.

Rules the file tools keep:
- every path goes through ``alisio.shell.harness.tools.paths`` (symlinks resolved, escapes refused);
- ``ctx.read_hashes`` maps a workspace-relative path to the sha256 of the content this run last read or
  wrote; ``edit_file`` of an existing file needs that record (or an explicit ``sha256``) and refuses when the
  file changed since, so an edit is always made against text the model has seen;
- output is deterministic for the same workspace (sorted listings, sorted search), as replay compares it.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
import warnings
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Final

from returns.result import Failure

from alisio.core.harness.protocol import ToolCall
from alisio.core.harness.tooldefs import (
    AnalyzeArgs,
    BashArgs,
    EditFileArgs,
    FetchUrlArgs,
    ListDirArgs,
    ReadFileArgs,
    SearchArgs,
    ToolArguments,
    WriteFileArgs,
    decode_arguments,
)
from alisio.shell.harness.tools.bash import run_command
from alisio.shell.harness.tools.fetch import fetch_text
from alisio.shell.harness.tools.paths import ResolvedPath, WorkspacePathError, real_root, resolve_in_workspace

SKIPPED_DIRS: Final = frozenset(
    {".git", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis"}
)
"""Directories that search and analyze never enter."""
SEARCH_MAX_FILE_BYTES: Final = 1 << 20
_SNIFF_BYTES: Final = 8192
_SEARCH_LINE_CHARS: Final = 300
_SKIPPED_NAMES_SHOWN: Final = 5
_LIST_MAX_ENTRIES: Final = 1000
_BACKGROUND_NOTE: Final = (
    "\n[processes the command left running in the background were stopped when it returned: nothing a bash "
    "call starts keeps running after it; start a server and use it in the same command]"
)
_SECRET_WORDS: Final = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


def scrubbed_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment for ``bash``: ``environ`` without variables that look like secrets, and no pagers.

    A variable whose name contains KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL or AUTH is dropped (the
    provider's API key must not be one ``env`` away from the model); PAGER and GIT_PAGER are ``cat`` and git
    never prompts, since stdin is empty.
    """
    env = {
        name: value
        for name, value in environ.items()
        if not any(word in name.upper() for word in _SECRET_WORDS)
    }
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"})
    return env


def tool_env(environ: Mapping[str, str], key: str | None) -> dict[str, str]:
    """``scrubbed_env(environ)`` without any variable holding the provider ``key``, whatever its name.

    ``provider.apiKeyEnv`` may name a variable such as ``MY_LLM`` that no name rule catches: the key must
    still not be one ``env`` away from the model.
    """
    return {name: value for name, value in scrubbed_env(environ).items() if not key or key not in value}


@dataclass(slots=True)
class ToolContext:
    """Per-run state and limits of the tools. Mutable: ``read_hashes`` grows as the run reads and writes."""

    workspace: Path
    read_hashes: dict[str, str] = field(default_factory=dict)
    """Workspace-relative path -> sha256 of the content this run last read or wrote."""
    bash_output_limit_chars: int = 20_000
    bash_default_timeout_ms: int = 120_000
    bash_kill_grace_s: float = 0.5
    bash_max_output_bytes: int = 8 << 20
    read_max_chars: int = 100_000
    """read_file shows at most this many characters per call (cut at a line boundary)."""
    search_max_matches: int = 100
    deadline: float | None = None
    """``time.monotonic()`` value when the run's maxWallMs passes; a running command is killed then."""
    env: Mapping[str, str] | None = None
    """The environment of ``bash`` commands; ``None`` means ``scrubbed_env(os.environ)``."""
    fetch_max_bytes: int = 1_000_000
    fetch_timeout_s: float = 20.0
    root: str = field(init=False)
    """The real path of ``workspace`` (symlinks resolved), computed once."""

    def __post_init__(self) -> None:
        self.root = real_root(self.workspace)
        if self.env is None:
            self.env = scrubbed_env(os.environ)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool call produced: the text the model sees, whether it succeeded, whether it was killed."""

    ok: bool
    output: str
    timed_out: bool = False


class ToolError(Exception):
    """A tool call that cannot be carried out; ``str()`` is the message the model sees."""


def execute_tool(call: ToolCall, ctx: ToolContext) -> ToolOutcome:
    """Run one tool call in ``ctx.workspace``; a failure is a ``ToolOutcome(ok=False)``, never an exception."""
    decoded = decode_arguments(call.name, call.arguments)
    if isinstance(decoded, Failure):
        return ToolOutcome(False, decoded.failure().message)
    args = decoded.unwrap()
    try:
        return _dispatch(args, ctx)
    except (ToolError, WorkspacePathError) as error:
        return ToolOutcome(False, str(error))
    except OSError as error:
        where = f": {_shown_path(str(error.filename), ctx.root)}" if error.filename else ""
        return ToolOutcome(False, f"{call.name} failed: {error.strerror or error}{where}")


def _shown_path(path: str, root: str) -> str:
    """``path`` relative to the workspace when it lies inside (the model works with relative paths)."""
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path[len(prefix) :].replace(os.sep, "/") if path.startswith(prefix) else path


def _dispatch(args: ToolArguments, ctx: ToolContext) -> ToolOutcome:
    match args:
        case ReadFileArgs():
            return _read_file(args, ctx)
        case ListDirArgs():
            return _list_dir(args, ctx)
        case SearchArgs():
            return _search(args, ctx)
        case WriteFileArgs():
            return _write_file(args, ctx)
        case EditFileArgs():
            return _edit_file(args, ctx)
        case BashArgs():
            return _bash(args, ctx)
        case FetchUrlArgs():
            return _fetch_url(args, ctx)
        case AnalyzeArgs():
            return _analyze(args, ctx)


# --- files ------------------------------------------------------------------------------------------------


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` kept (only ``\\n`` ends a line, as editors and ``wc -l`` count them)."""
    lines = text.split("\n")
    last = lines.pop()
    result = [line + "\n" for line in lines]
    if last:
        result.append(last)
    return result


def _read_bytes(resolved: ResolvedPath, what: str = "file") -> bytes:
    try:
        with open(resolved.absolute, "rb") as file:
            return file.read()
    except FileNotFoundError:
        raise ToolError(f"{what} not found: {resolved.relative}") from None
    except IsADirectoryError:
        raise ToolError(f"{resolved.relative} is a directory; use list_dir to see what it contains") from None


def _decode_text(data: bytes, relative: str) -> str:
    if b"\0" in data[:_SNIFF_BYTES]:
        raise ToolError(f"{relative} is a binary file; the file tools only handle UTF-8 text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ToolError(f"{relative} is not UTF-8 text (byte {error.start} cannot be decoded)") from None


def _window(lines: list[str], start: int, stop: int, max_chars: int) -> tuple[str, int, str]:
    """The text of ``lines[start:stop]`` cut to whole lines within ``max_chars``: (body, end line, note)."""
    body = "".join(lines[start:stop])
    if len(body) <= max_chars:
        return body, stop, ""
    sizes = list(accumulate(map(len, lines[start:stop])))
    count = bisect_right(sizes, max_chars)
    if count == 0:  # a single line longer than the limit
        return (
            lines[start][:max_chars] + "\n",
            start + 1,
            f"[line {start + 1} cut at {max_chars} characters]\n",
        )
    end = start + count
    note = f"[cut at {max_chars} characters: call read_file with offset={end + 1} to read on]\n"
    return "".join(lines[start:end]), end, note


def _read_file(args: ReadFileArgs, ctx: ToolContext) -> ToolOutcome:
    resolved = resolve_in_workspace(ctx.root, args.path)
    data = _read_bytes(resolved)
    text = _decode_text(data, resolved.relative)
    digest = _sha256(data)
    ctx.read_hashes[resolved.relative] = digest
    header = f"path: {resolved.relative}\nsha256: {digest}\n"
    if not text:
        return ToolOutcome(True, f"{header}lines: none (empty file)\n---\n")
    total = text.count("\n") + (not text.endswith("\n"))
    start = (args.offset or 1) - 1
    stop = total if args.limit is None else min(total, start + args.limit)
    if start == 0 and stop == total and len(text) <= ctx.read_max_chars:  # the common case, kept cheap
        return ToolOutcome(True, f"{header}lines: 1-{total} of {total}\n---\n{text}")
    if start >= total:
        raise ToolError(f"offset {start + 1} is past the end of {resolved.relative}, which has {total} lines")
    body, end, note = _window(_split_lines(text), start, stop, ctx.read_max_chars)
    return ToolOutcome(True, f"{header}lines: {start + 1}-{end} of {total}\n{note}---\n{body}")


def _list_dir(args: ListDirArgs, ctx: ToolContext) -> ToolOutcome:
    resolved = resolve_in_workspace(ctx.root, args.path)
    try:
        with os.scandir(resolved.absolute) as scan:
            names = sorted(entry.name + "/" if entry.is_dir() else entry.name for entry in scan)
    except FileNotFoundError:
        raise ToolError(f"directory not found: {resolved.relative}") from None
    except NotADirectoryError:
        raise ToolError(f"{resolved.relative} is a file, not a directory; use read_file") from None
    if not names:
        return ToolOutcome(True, f"{resolved.relative}: (empty directory)")
    more = len(names) - _LIST_MAX_ENTRIES
    listing = "\n".join(names[:_LIST_MAX_ENTRIES])
    if more > 0:
        listing += f"\n[... {more} more entries not shown]"
    return ToolOutcome(True, listing)


def _write_file(args: WriteFileArgs, ctx: ToolContext) -> ToolOutcome:
    resolved = resolve_in_workspace(ctx.root, args.path)
    if os.path.isdir(resolved.absolute):
        raise ToolError(f"{resolved.relative} is a directory; give a file path")
    try:
        data = args.content.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ToolError(f"content is not valid text: {error.reason} at character {error.start}") from None
    existed = os.path.exists(resolved.absolute)
    blocker = _file_in_the_way(ctx.root, resolved.relative)
    if blocker is not None:
        raise ToolError(f"{blocker} is a file, so {resolved.relative} cannot be created")
    os.makedirs(os.path.dirname(resolved.absolute), exist_ok=True)
    with open(resolved.absolute, "wb") as file:
        file.write(data)
    digest = _sha256(data)
    ctx.read_hashes[resolved.relative] = digest
    verb = "replaced" if existed else "created"
    return ToolOutcome(True, f"{verb} {resolved.relative} ({len(data)} bytes); sha256: {digest}")


def _file_in_the_way(root: str, relative: str) -> str | None:
    """The first parent of ``relative`` (workspace-relative, ``/``-separated) that exists but is no directory."""
    parents = relative.split("/")[:-1]
    for depth in range(1, len(parents) + 1):
        parent = "/".join(parents[:depth])
        absolute = os.path.join(root, parent)
        if not os.path.isdir(absolute):
            return parent if os.path.lexists(absolute) else None
    return None


def _check_fresh(args: EditFileArgs, relative: str, digest: str, ctx: ToolContext) -> None:
    """Refuse an edit made against text the model has not seen: unread, or changed since it was read."""
    if args.sha256 is not None:
        if args.sha256.strip().lower() != digest:
            raise ToolError(
                f"refused: {relative} changed since the sha256 you passed ({args.sha256}); its sha256 is "
                f"now {digest}. read_file it again and make the edit against the current text"
            )
        return
    known = ctx.read_hashes.get(relative)
    if known is None:
        raise ToolError(
            f"refused: {relative} has not been read in this run. read_file it first (or pass the sha256 "
            "read_file returned), then retry the edit"
        )
    if known != digest:
        raise ToolError(
            f"refused: {relative} changed since this run last read or wrote it (for example by a command). "
            "read_file it again and make the edit against the current text"
        )


def _edit_file(args: EditFileArgs, ctx: ToolContext) -> ToolOutcome:
    resolved = resolve_in_workspace(ctx.root, args.path)
    relative = resolved.relative
    if not os.path.exists(resolved.absolute):
        raise ToolError(
            f"file not found: {relative}; edit_file changes existing files, use write_file to create one"
        )
    if not args.old_string:
        raise ToolError(
            "old_string is empty; give the exact text to replace (use write_file to create a file)"
        )
    if args.old_string == args.new_string:
        raise ToolError("new_string is the same as old_string: the edit would change nothing")
    data = _read_bytes(resolved)
    digest = _sha256(data)
    _check_fresh(args, relative, digest, ctx)
    text = _decode_text(data, relative)
    count = text.count(args.old_string)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {relative}. It must match the file character for character, "
            "whitespace and indentation included: read_file it again and copy the text exactly"
        )
    if count > 1:
        raise ToolError(
            f"old_string appears {count} times in {relative}; it must appear exactly once. Include more "
            "surrounding lines in old_string to make it unique"
        )
    at = text.index(args.old_string)
    new_data = (text[:at] + args.new_string + text[at + len(args.old_string) :]).encode("utf-8")
    with open(resolved.absolute, "wb") as file:
        file.write(new_data)
    new_digest = _sha256(new_data)
    ctx.read_hashes[relative] = new_digest
    line = text.count("\n", 0, at) + 1
    return ToolOutcome(True, f"edited {relative}: replaced 1 occurrence at line {line}; sha256: {new_digest}")


# --- search and analyze -------------------------------------------------------------------------------------


def _files_under(resolved: ResolvedPath, root: str) -> Iterator[tuple[str, str]]:
    """(absolute, workspace-relative) of the files under ``resolved``, sorted, skipping ``SKIPPED_DIRS`` and
    symlinks that lead outside the workspace."""
    if os.path.isfile(resolved.absolute):
        yield resolved.absolute, resolved.relative
        return
    if not os.path.isdir(resolved.absolute):
        raise ToolError(f"path not found: {resolved.relative}")
    prefix = root + os.sep
    for directory, dirnames, filenames in os.walk(resolved.absolute):
        dirnames[:] = sorted(name for name in dirnames if name not in SKIPPED_DIRS)
        for name in sorted(filenames):
            absolute = os.path.join(directory, name)
            if os.path.islink(absolute) and not os.path.realpath(absolute).startswith(prefix):
                continue
            yield absolute, absolute[len(prefix) :].replace(os.sep, "/")


def _text_of(absolute: str) -> str | None:
    """The file's text, or ``None`` for a file search skips (binary, not UTF-8, unreadable)."""
    try:
        with open(absolute, "rb") as file:
            data = file.read()
    except OSError:
        return None
    if b"\0" in data[:_SNIFF_BYTES]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _search(args: SearchArgs, ctx: ToolContext) -> ToolOutcome:
    try:
        pattern = re.compile(args.pattern)
    except re.error as error:
        raise ToolError(f"invalid regular expression {args.pattern!r}: {error}") from None
    resolved = resolve_in_workspace(ctx.root, args.path or ".")
    matches: list[str] = []
    too_large: list[str] = []
    files = 0
    for absolute, relative in _files_under(resolved, ctx.root):
        if ctx.deadline is not None and time.monotonic() > ctx.deadline:
            matches.append("[search stopped: the run's time ran out]")
            break
        if _size(absolute) > SEARCH_MAX_FILE_BYTES:
            too_large.append(relative)
            continue
        text = _text_of(absolute)
        if text is None:
            continue
        files += 1
        for number, raw in enumerate(text.split("\n"), 1):
            line = raw.removesuffix("\r")  # numbered as read_file counts lines, matched without CR
            if pattern.search(line):
                if len(matches) == ctx.search_max_matches:
                    matches.append(
                        f"[stopped after {ctx.search_max_matches} matches; narrow the pattern or the path]"
                    )
                    return ToolOutcome(True, "\n".join(matches))
                shown = line if len(line) <= _SEARCH_LINE_CHARS else line[:_SEARCH_LINE_CHARS] + " [...]"
                matches.append(f"{relative}:{number}: {shown}")
    if not matches:
        matches.append(f"no matches for {args.pattern!r} in {files} text files under {resolved.relative}")
    if too_large:
        names = ", ".join(too_large[:_SKIPPED_NAMES_SHOWN]) + (
            ", ..." if len(too_large) > _SKIPPED_NAMES_SHOWN else ""
        )
        plural = "file" if len(too_large) == 1 else "files"
        matches.append(
            f"[not searched: {len(too_large)} {plural} over {SEARCH_MAX_FILE_BYTES >> 20} MiB: {names}; "
            "read them with read_file and offset/limit, or grep them with bash]"
        )
    return ToolOutcome(True, "\n".join(matches))


def _size(absolute: str) -> int:
    try:
        return os.path.getsize(absolute)
    except OSError:
        return 0


def _syntax_problems(absolute: str, relative: str) -> list[str]:
    with open(absolute, "rb") as file:
        source = file.read()
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
    return [f"{relative}:{w.lineno}:0: warning: {w.message}" for w in caught]


def _analyze(args: AnalyzeArgs, ctx: ToolContext) -> ToolOutcome:
    resolved = resolve_in_workspace(ctx.root, args.path or ".")
    problems: list[str] = []
    checked = 0
    for absolute, relative in _files_under(resolved, ctx.root):
        if not relative.endswith(".py"):
            continue
        if ctx.deadline is not None and time.monotonic() > ctx.deadline:
            problems.append("[analyze stopped: the run's time ran out]")
            break
        checked += 1
        problems.extend(_syntax_problems(absolute, relative))
    if checked == 0:
        return ToolOutcome(True, f"no Python files under {resolved.relative}")
    if not problems:
        return ToolOutcome(True, f"no problems found in {checked} Python files")
    return ToolOutcome(True, "\n".join([*problems, f"{len(problems)} problems in {checked} Python files"]))


# --- process and network ------------------------------------------------------------------------------------


def _remaining_s(ctx: ToolContext) -> float | None:
    return None if ctx.deadline is None else ctx.deadline - time.monotonic()


def _bash(args: BashArgs, ctx: ToolContext) -> ToolOutcome:
    timeout_s = (args.timeout_ms or ctx.bash_default_timeout_ms) / 1000
    remaining = _remaining_s(ctx)
    cause: str = "timeout"
    if remaining is not None and remaining < timeout_s:
        if remaining <= 0:
            return ToolOutcome(
                False, "not run: the run's time budget (maxWallMs) has run out", timed_out=True
            )
        timeout_s, cause = remaining, "deadline"
    result = run_command(
        args.command,
        cwd=ctx.root,
        env=ctx.env or {},
        timeout_s=timeout_s,
        timeout_cause="deadline" if cause == "deadline" else "timeout",
        grace_s=ctx.bash_kill_grace_s,
        limit_chars=ctx.bash_output_limit_chars,
        max_output_bytes=ctx.bash_max_output_bytes,
    )
    output = result.output or "(no output)"
    match result.killed:
        case None:
            note = _BACKGROUND_NOTE if result.stopped_background else ""
            return ToolOutcome(result.exit_code == 0, f"exit code: {result.exit_code}\n{output}{note}")
        case "timeout":
            status = f"killed after {result.duration_ms} ms: the command passed its timeout of {round(timeout_s * 1000)} ms"
        case "deadline":
            status = f"killed after {result.duration_ms} ms: the run's time budget (maxWallMs) ran out"
        case "output":
            return ToolOutcome(
                False,
                f"killed: the output passed {ctx.bash_max_output_bytes} bytes; redirect it to a file\n{output}",
            )
    return ToolOutcome(False, f"{status}\n{output}", timed_out=True)


def _fetch_url(args: FetchUrlArgs, ctx: ToolContext) -> ToolOutcome:
    timeout_s = ctx.fetch_timeout_s
    remaining = _remaining_s(ctx)
    if remaining is not None:
        if remaining <= 0:
            return ToolOutcome(
                False, "not run: the run's time budget (maxWallMs) has run out", timed_out=True
            )
        timeout_s = min(timeout_s, remaining)
    result = fetch_text(args.url, timeout_s=timeout_s, max_bytes=ctx.fetch_max_bytes)
    return ToolOutcome(result.ok, result.output)
