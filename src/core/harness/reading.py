"""What ``read_file`` shows, as pure functions: the header, the window of lines, and where it is cut.

The shell (``alisio.shell.harness.tools.files``) reads the bytes; this module decides what the model sees.

Rules:

- only ``\\n`` ends a line (as editors and ``wc -l`` count them); a last line without one still counts, and
  a ``\\r`` stays part of its line, so the text shown is exactly the text stored;
- ``offset`` is the first line shown (from 1, default 1), ``limit`` how many (default: the rest);
- the window is cut at a line boundary so it holds at most ``max_chars`` characters, and the header says which
  ``offset`` reads on; a single line longer than that is cut at ``max_chars`` and says so;
- a file read whole is shown with its sha256 and its line count (``lines: 4-5 of 10``); a file too large to
  read whole is shown from a window read on its own (``partial_view``): no sha256 (the rest was never read,
  so ``edit_file`` cannot vouch for it), and its line count only when the window reached the end.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate

from returns.result import Failure, Result, Success

from alisio.core.base import Frozen

__all__ = ["ReadRefusal", "Window", "count_lines", "partial_view", "read_view", "split_lines", "window"]


class ReadRefusal(Frozen, frozen=True, kw_only=True, tag="read_refusal"):
    """A window that cannot be shown (an offset past the end); ``message`` is what the model is told."""

    message: str

    def __str__(self) -> str:
        return self.message


class Window(Frozen, frozen=True, kw_only=True):
    """The lines shown: their text, the number of the last one shown, and the note on a cut (or ``""``)."""

    body: str
    end: int
    """The number (from 1) of the last line shown."""
    note: str


def split_lines(text: str) -> tuple[str, ...]:
    """The lines of ``text``, each with its ``\\n`` kept; a last line without one is kept, an empty one is not."""
    lines = text.split("\n")
    last = lines.pop()
    kept = [line + "\n" for line in lines]
    if last:
        kept.append(last)
    return tuple(kept)


def count_lines(text: str) -> int:
    """How many lines ``text`` has: one per ``\\n``, plus a last line without one."""
    return text.count("\n") + (bool(text) and not text.endswith("\n"))


def window(lines: Sequence[str], start: int, stop: int, max_chars: int, *, first: int = 1) -> Window:
    """``lines[start:stop]`` cut to whole lines within ``max_chars`` characters.

    Args:
        lines: the lines, each with its ``\\n``; ``lines[0]`` is line number ``first``.
        start, stop: the slice to show (``start < stop``).
        max_chars: the most characters shown (at least 1).
        first: the line number of ``lines[0]`` (a window read on its own starts past line 1).
    """
    chosen = lines[start:stop]
    body = "".join(chosen)
    if len(body) <= max_chars:
        return Window(body=body, end=first + stop - 1, note="")
    count = bisect_right(list(accumulate(map(len, chosen))), max_chars)
    number = first + start
    if count == 0:  # a single line longer than the limit
        return Window(
            body=chosen[0][:max_chars] + "\n",
            end=number,
            note=f"[line {number} cut at {max_chars} characters]\n",
        )
    end = number + count - 1
    note = f"[cut at {max_chars} characters: call read_file with offset={end + 1} to read on]\n"
    return Window(body="".join(chosen[:count]), end=end, note=note)


def read_view(
    relative: str, digest: str, text: str, offset: int | None, limit: int | None, max_chars: int
) -> Result[str, ReadRefusal]:
    """What ``read_file`` returns for a file read whole: header (path, sha256, lines), ``---``, the window.

    Returns:
        The tool result; ``Failure(ReadRefusal)`` when ``offset`` is past the last line.
    """
    header = f"path: {relative}\nsha256: {digest}\n"
    if not text:
        return Success(f"{header}lines: none (empty file)\n---\n")
    total = count_lines(text)
    start = (offset or 1) - 1
    stop = total if limit is None else min(total, start + limit)
    if start == 0 and stop == total and len(text) <= max_chars:  # the common case, kept cheap
        return Success(f"{header}lines: 1-{total} of {total}\n---\n{text}")
    if start >= total:
        return Failure(_past_the_end(relative, start, total))
    shown = window(split_lines(text), start, stop, max_chars)
    return Success(f"{header}lines: {start + 1}-{shown.end} of {total}\n{shown.note}---\n{shown.body}")


def partial_view(
    relative: str,
    size: int,
    whole_limit: int,
    start: int,
    lines: Sequence[str],
    total: int | None,
    max_chars: int,
) -> Result[str, ReadRefusal]:
    """What ``read_file`` returns for a file too large to read whole, from a window read on its own.

    Args:
        relative: the file, workspace-relative.
        size: the file's size in bytes; ``whole_limit`` the most bytes read_file reads whole.
        start: the index (from 0) of the first line wanted (``offset - 1``).
        lines: the lines read from there, as many as the call asked for (or fewer at the end of the file).
        total: the file's line count when the reading reached its end, else ``None``.
        max_chars: the most characters shown.

    Returns:
        The tool result, without a sha256; ``Failure(ReadRefusal)`` when ``start`` is past the end.
    """
    if not lines:
        return Failure(_past_the_end(relative, start, total or 0))
    header = (
        f"path: {relative}\nsha256: not computed (the file has {size} bytes, more than the {whole_limit} "
        "read_file reads whole; edit_file cannot change it: use bash)\n"
    )
    shown = window(lines, 0, len(lines), max_chars, first=start + 1)
    of = f"of {total}" if total is not None else "(the total was not counted)"
    return Success(f"{header}lines: {start + 1}-{shown.end} {of}\n{shown.note}---\n{shown.body}")


def _past_the_end(relative: str, start: int, total: int) -> ReadRefusal:
    return ReadRefusal(message=f"offset {start + 1} is past the end of {relative}, which has {total} lines")
