"""The file tools: ``read_file``, ``list_dir``, ``write_file`` and ``edit_file``.

What the model sees is decided in the core (``alisio.core.harness.reading`` for read_file's window,
``alisio.core.harness.edits`` for edit_file's rules); this module reads and writes. Rules it keeps:

- every path goes through ``alisio.shell.harness.tools.paths`` (symlinks resolved, escapes refused);
- only regular files are read: a FIFO, a device or a socket is refused before anything waits on it (opened
  non-blocking, then checked again on the open descriptor);
- reading is bounded: a file up to ``ctx.file_max_bytes`` is read whole (its sha256 is recorded, so
  edit_file may change it); past that read_file streams only the lines asked for (at most about
  ``4 * read_max_chars`` bytes, never the whole file) and shows no sha256, and edit_file refuses it;
- what can take long runs under the call's time limit (``limits.time_limit``): read_file's streaming (an
  offset far into a huge file) and list_dir (a huge directory); the rest is bounded by size;
- write_file creates files at most ``MAX_WRITE_DEPTH`` directories deep, making the parents one by one;
- a file is never written in place: new content goes to a new file in the same directory, which is renamed
  over the name (``os.replace``). The old file is never opened for writing, so a hard link that points
  outside the workspace is never written through, and a write cut short leaves the old content whole;
- ``ctx.read_hashes`` maps a workspace-relative path to the sha256 of the content this run last read or
  wrote, so an edit is always made against text the model has seen;
- output is deterministic for the same workspace (sorted listings), as replay compares it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from typing import BinaryIO, Final

from alisio.core.harness.edits import apply_edit, check_edit_request, check_fresh
from alisio.core.harness.reading import partial_view, read_view
from alisio.core.harness.tooldefs import EditFileArgs, ListDirArgs, ReadFileArgs, WriteFileArgs
from alisio.shell.errors import expect
from alisio.shell.harness.tools.context import CallTime, ToolContext, ToolError, ToolOutcome, sha256_hex
from alisio.shell.harness.tools.limits import TimeLimitReached, time_limit
from alisio.shell.harness.tools.paths import ResolvedPath, resolve_in_workspace

__all__ = [
    "SNIFF_BYTES",
    "edit_file",
    "file_kind",
    "list_dir",
    "open_regular",
    "read_capped",
    "read_file",
    "write_file",
]

SNIFF_BYTES: Final = 8192
"""A NUL byte in the first this many bytes makes a file binary."""
_LIST_MAX_ENTRIES: Final = 1000
MAX_WRITE_DEPTH: Final = 128
"""write_file creates files at most this many directories deep: Python's recursive tree tools (``shutil.rmtree``
and ``copytree``, which copy and remove workspaces) fail on trees nested about 1,000 levels deep."""
_SKIP_CHUNK: Final = 1 << 16


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words (``a FIFO (named pipe)``, ``a character device``...)."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


@contextlib.contextmanager
def open_regular(resolved: ResolvedPath, tool: str, what: str = "file") -> Iterator[BinaryIO]:
    """Open a regular file for reading without ever blocking on it; anything else is a ``ToolError``."""
    relative = resolved.relative
    try:
        mode = os.stat(resolved.absolute).st_mode
    except FileNotFoundError:
        raise ToolError(f"{what} not found: {relative}") from None
    if stat.S_ISDIR(mode):
        raise ToolError(f"{relative} is a directory; use list_dir to see what it contains")
    if not stat.S_ISREG(mode):
        raise ToolError(
            f"{relative} is {file_kind(mode)}, not a regular file; {tool} only handles regular files"
        )
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    )
    descriptor = os.open(resolved.absolute, flags)
    with os.fdopen(descriptor, "rb") as file:
        # the name may have been swapped for a FIFO since the stat: check what was opened
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ToolError(f"{relative} is not a regular file; {tool} only handles regular files")
        yield file


def read_capped(handle: BinaryIO, limit: int) -> bytes:
    """The file's bytes up to ``limit + 1`` (more than ``limit`` means it is larger), never allocating more than
    the file holds (``read(n)`` reserves ``n`` bytes up front, which costs more than the read of a small file)."""
    size = os.fstat(handle.fileno()).st_size
    data = handle.read(min(size, limit) + 1)
    if size < len(data) <= limit:  # it grew since the fstat: read on, up to the limit
        data += handle.read(limit + 1 - len(data))
    return data


def _decode_text(data: bytes, relative: str) -> str:
    if b"\0" in data[:SNIFF_BYTES]:
        raise ToolError(f"{relative} is a binary file; the file tools only handle UTF-8 text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ToolError(f"{relative} is not UTF-8 text (byte {error.start} cannot be decoded)") from None


# --- read_file ------------------------------------------------------------------------------------------


def read_file(args: ReadFileArgs, ctx: ToolContext, budget: CallTime) -> ToolOutcome:
    resolved = resolve_in_workspace(ctx.root, ctx.in_workspace(args.path))
    with open_regular(resolved, "read_file") as file:
        small = os.fstat(file.fileno()).st_size <= ctx.file_max_bytes
        data = read_capped(file, ctx.file_max_bytes) if small else b""
        if not small or len(data) > ctx.file_max_bytes:  # the size says so, or it grew while we read
            try:
                with time_limit(budget.seconds):  # reaching a far offset may stream gigabytes
                    return _read_window(file, resolved.relative, args, ctx)
            except TimeLimitReached:
                raise budget.stopped("read_file") from None
    text = _decode_text(data, resolved.relative)
    digest = sha256_hex(data)
    ctx.read_hashes[resolved.relative] = digest
    view = read_view(resolved.relative, digest, text, args.offset, args.limit, ctx.read_max_chars)
    return ToolOutcome(True, expect(view, error=ToolError))


def _read_window(file: BinaryIO, relative: str, args: ReadFileArgs, ctx: ToolContext) -> ToolOutcome:
    """read_file of a file over ``file_max_bytes``: only the lines asked for are read, streaming."""
    file.seek(0)
    if b"\0" in file.read(SNIFF_BYTES):
        raise ToolError(f"{relative} is a binary file; the file tools only handle UTF-8 text")
    start = (args.offset or 1) - 1
    max_bytes = 4 * ctx.read_max_chars + 4  # enough for read_max_chars + 1 characters
    raw, total = _stream_lines(file, start, args.limit, max_bytes)
    lines = _decode_lines(raw, relative, start, cut=total is None and sum(map(len, raw)) >= max_bytes)
    size = os.fstat(file.fileno()).st_size
    view = partial_view(relative, size, ctx.file_max_bytes, start, lines, total, ctx.read_max_chars)
    return ToolOutcome(True, expect(view, error=ToolError))


def _stream_lines(
    file: BinaryIO, start: int, limit: int | None, max_bytes: int
) -> tuple[list[bytes], int | None]:
    """The lines from index ``start`` on (at most ``limit``, at most ``max_bytes``), and the file's line count
    when the reading reached the end (else ``None``). Memory stays within ``max_bytes`` + one chunk."""
    file.seek(0)
    passed = 0
    in_line = False
    while passed < start:
        piece = file.readline(_SKIP_CHUNK)
        if not piece:
            return [], passed + in_line  # a last line without "\n" still counts
        in_line = not piece.endswith(b"\n")
        passed += not in_line
    lines: list[bytes] = []
    used = 0
    while (limit is None or len(lines) < limit) and used < max_bytes:
        piece = file.readline(max_bytes - used)
        if not piece:
            return lines, start + len(lines)
        lines.append(piece)
        used += len(piece)
    at_end = not file.read(1)
    return lines, (start + len(lines) if at_end else None)


def _decode_lines(raw: list[bytes], relative: str, start: int, *, cut: bool) -> list[str]:
    """Decode each line; the last one may end inside a character when ``cut`` (the byte cap was reached)."""
    lines: list[str] = []
    for index, line in enumerate(raw):
        last = index == len(raw) - 1
        try:
            lines.append(line.decode("utf-8", "ignore" if last and cut else "strict"))
        except UnicodeDecodeError:
            raise ToolError(
                f"{relative} is not UTF-8 text (line {start + index + 1} cannot be decoded)"
            ) from None
    return lines


# --- list_dir ---------------------------------------------------------------------------------------------


def list_dir(args: ListDirArgs, ctx: ToolContext, budget: CallTime) -> ToolOutcome:
    resolved = resolve_in_workspace(ctx.root, ctx.in_workspace(args.path))
    try:
        with time_limit(budget.seconds), os.scandir(resolved.absolute) as scan:
            names = sorted(entry.name + "/" if entry.is_dir() else entry.name for entry in scan)
    except TimeLimitReached:
        raise budget.stopped("list_dir") from None
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


# --- write_file and edit_file ---------------------------------------------------------------------------------


def write_file(args: WriteFileArgs, ctx: ToolContext) -> ToolOutcome:
    resolved = resolve_in_workspace(ctx.root, ctx.in_workspace(args.path))
    if os.path.isdir(resolved.absolute):
        raise ToolError(f"{resolved.relative} is a directory; give a file path")
    try:
        data = args.content.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ToolError(f"content is not valid text: {error.reason} at character {error.start}") from None
    depth = resolved.relative.count("/")
    if depth > MAX_WRITE_DEPTH:
        raise ToolError(
            f"refused: the path is nested {depth} directories deep; write_file creates files at most "
            f"{MAX_WRITE_DEPTH} directories deep"
        )
    existed = os.path.exists(resolved.absolute)
    blocker = _file_in_the_way(ctx.root, resolved.relative)
    if blocker is not None:
        raise ToolError(f"{blocker} is a file, so {resolved.relative} cannot be created")
    _make_parents(ctx.root, resolved.relative)
    _store(resolved, data, "write_file")
    digest = sha256_hex(data)
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


def _make_parents(root: str, relative: str) -> None:
    """Create the missing parents of ``relative`` one by one (``os.makedirs`` recurses once per level)."""
    absolute = root
    for name in relative.split("/")[:-1]:
        absolute = os.path.join(absolute, name)
        with contextlib.suppress(FileExistsError):
            os.mkdir(absolute)


def _store(resolved: ResolvedPath, data: bytes, tool: str) -> None:
    """Give ``resolved`` the content ``data``: a new file is created; an existing one is replaced by renaming a
    new file over its name, keeping its permission bits (see the module docstring for why)."""
    try:
        mode = os.stat(resolved.absolute).st_mode
    except FileNotFoundError:
        _create(resolved.absolute, data)
        return
    if not stat.S_ISREG(mode):
        raise ToolError(
            f"{resolved.relative} is {file_kind(mode)}, not a regular file; {tool} only handles regular files"
        )
    if not os.access(resolved.absolute, os.W_OK):  # renaming would bypass the file's own permission
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), resolved.absolute)
    directory, name = os.path.split(resolved.absolute)
    try:
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{name[:64]}.", suffix=".alisio")
    except PermissionError as error:
        raise PermissionError(error.errno, error.strerror, directory) from None
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.chmod(temporary, stat.S_IMODE(mode))
        os.replace(temporary, resolved.absolute)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _create(absolute: str, data: bytes) -> None:
    """Create a new file (never opening one that appeared meanwhile); a write cut short removes it."""
    with open(absolute, "xb") as file:
        try:
            file.write(data)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(absolute)
            raise


def edit_file(args: EditFileArgs, ctx: ToolContext) -> ToolOutcome:
    resolved = resolve_in_workspace(ctx.root, ctx.in_workspace(args.path))
    relative = resolved.relative
    if not os.path.exists(resolved.absolute):
        raise ToolError(
            f"file not found: {relative}; edit_file changes existing files, use write_file to create one"
        )
    expect(check_edit_request(args.old_string, args.new_string), error=ToolError)
    with open_regular(resolved, "edit_file") as file:
        data = read_capped(file, ctx.file_max_bytes)
    if len(data) > ctx.file_max_bytes:
        raise ToolError(
            f"{relative} is larger than the {ctx.file_max_bytes} bytes edit_file changes; use bash (sed, a "
            "script) to edit it"
        )
    digest = sha256_hex(data)
    expect(check_fresh(relative, digest, args.sha256, ctx.read_hashes.get(relative)), error=ToolError)
    edit = expect(
        apply_edit(relative, _decode_text(data, relative), args.old_string, args.new_string), error=ToolError
    )
    new_data = edit.text.encode("utf-8")
    _store(resolved, new_data, "edit_file")
    new_digest = sha256_hex(new_data)
    ctx.read_hashes[relative] = new_digest
    return ToolOutcome(
        True, f"edited {relative}: replaced 1 occurrence at line {edit.line}; sha256: {new_digest}"
    )
