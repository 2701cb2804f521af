"""What a run left in its workspace, kept as a diff against its fixture, so it can be judged again without the
model (``alisio eval rejudge``): ``runs/<task>/<rep>.workspace.json`` beside the transcript.

Rules this module keeps:

- the diff is taken when the agent stopped, before anything is put back or any verifier runs: it is the
  agent's work, as the verifiers were about to see it (a verifier's own output, bytecode, is not in it);
- each changed entry is one ``FileChange``: ``added``, ``deleted`` or ``modified``, of kind ``text`` (UTF-8
  without a NUL byte, at most ``TEXT_MAX_BYTES``: a unified diff, three lines of context, with GNU diff's
  ``\\ No newline at end of file``), ``binary`` (its sha256 and size only: its bytes are not kept),
  ``symlink`` (its target) or ``special`` (a FIFO, a socket: named only). Paths are those of the tree
  snapshot (``alisio.core.lab.judges.verify``): ``.git``, ``node_modules`` and ``__pycache__`` are not in it;
- text is passed through the secret scanner before it is kept; a change whose text the scanner altered is
  marked ``redacted`` and cannot be applied (its text is no longer what the run wrote);
- ``text_patch`` aligns the lines in bounded time, whatever the run wrote: the lines both ends share, then
  ``difflib`` on what lies between, split at the lines found once on each side (patience diff's anchors)
  when that is over ``GAP_PAIRS`` line pairs; a part past the bounds is replaced whole (a larger patch, that
  applies the same). Without the bounds, ``difflib`` took a minute on 2,000 lines that repeat, hours on more;
- the encoded diff is kept only when it holds at most ``MAX_DIFF_BYTES`` (1 MiB); past that the run's record
  says it was not kept, and how large it was (``WorkspaceKept``), and nothing is written;
- ``apply_text_patch`` applies a patch to the text of a fixture file the way ``patch`` does without fuzz:
  each hunk's old lines must appear exactly, at the line the hunk names (moved by as much as the hunks above
  it were) or the nearest place after the previous hunk; otherwise it fails naming the hunk. A context that
  repeats in the file is taken at its nearest place, as ``patch`` takes it. ``apply(old, text_patch(old,
  new)) == new``.
"""

from __future__ import annotations

import bisect
import collections
import difflib
import re
from collections.abc import Sequence
from typing import Final, Literal

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen

__all__ = [
    "MAX_DIFF_BYTES",
    "TEXT_MAX_BYTES",
    "WORKSPACE_DIFF_SCHEMA_VERSION",
    "FileChange",
    "WorkspaceDiff",
    "WorkspaceKept",
    "apply_text_patch",
    "decode_workspace_diff",
    "diff_path",
    "encode_workspace_diff",
    "kept_diff",
    "path_problem",
    "text_of",
    "text_patch",
]

WORKSPACE_DIFF_SCHEMA_VERSION: Final = 1
MAX_DIFF_BYTES: Final = 1 << 20
"""The most a run's kept diff may hold (1 MiB, encoded); a larger one is not kept."""
TEXT_MAX_BYTES: Final = 8 << 20
"""A file larger than this is kept as binary (hash and size), never read as text."""
GAP_PAIRS: Final = 250_000
"""The most line pairs (changed lines of the fixture's file x the run's) ``difflib`` aligns at once: its
worst case there (lines that repeat) is about a second."""
DIFF_PAIRS_MAX: Final = 1_000_000
"""The most line pairs ``difflib`` aligns for one file, in all."""
_NO_NEWLINE: Final = "\\ No newline at end of file\n"
_HUNK: Final = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class FileChange(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One entry of the workspace that differs from the fixture."""

    path: str
    """Relative to the workspace root, ``/``-separated."""
    change: Literal["added", "deleted", "modified"]
    kind: Literal["text", "binary", "symlink", "special"]
    """Of what the run left (of what it deleted, for ``deleted``)."""
    patch: str = ""
    """``text``: the unified diff's hunks (an added file: from empty)."""
    target: str = ""
    """``symlink``: the link's target."""
    sha256: str = ""
    """The sha256 of what the run left (a file's bytes, a link's target); empty for ``deleted``."""
    size: int = 0
    """Its size in bytes."""
    executable: bool = False
    """A file the run left executable."""
    redacted: bool = False
    """The secret scanner changed the text (it held a credential): it cannot be applied."""


class WorkspaceDiff(Frozen, frozen=True, kw_only=True):
    """A run's ``<rep>.workspace.json``."""

    schema_version: int = WORKSPACE_DIFF_SCHEMA_VERSION
    changes: tuple[FileChange, ...] = ()


class WorkspaceKept(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """What a run's record says of its kept diff."""

    kept: bool
    files: int = 0
    """Entries that differ from the fixture."""
    bytes: int = 0
    """The size of the diff (kept or not; when not kept, at least this: past the cap, files are not read)."""
    reason: str = ""
    """Why it was not kept."""


def diff_path(task_id: str, repetition: int) -> str:
    """Where a run's diff goes, relative to its report directory: ``runs/<task>/<rep>.workspace.json``."""
    return f"runs/{task_id}/{repetition}.workspace.json"


def text_of(data: bytes) -> str | None:
    """``data`` as text when it is UTF-8 without a NUL byte and at most ``TEXT_MAX_BYTES``, else ``None``."""
    if len(data) > TEXT_MAX_BYTES or b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _range(start: int, end: int) -> str:
    length = end - start
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


def _line(prefix: str, line: str) -> str:
    return f"{prefix}{line}" if line.endswith("\n") else f"{prefix}{line}\n{_NO_NEWLINE}"


Opcode = tuple[Literal["replace", "delete", "insert", "equal"], int, int, int, int]
"""``difflib``'s: a tag (``equal``, ``replace``, ``delete``, ``insert``) and the lines of each side."""


class _Grouped(difflib.SequenceMatcher[str]):
    """``difflib``'s hunks (``get_grouped_opcodes``) of opcodes found by ``_opcodes``."""

    def __init__(self, opcodes: list[Opcode]) -> None:
        super().__init__(None, "", "")
        self.found = opcodes

    def get_opcodes(self) -> list[Opcode]:
        return self.found


def _unique(lines: Sequence[str]) -> dict[str, int]:
    counts = collections.Counter(lines)
    return {line: n for n, line in enumerate(lines) if counts[line] == 1}


def _anchors(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Patience diff's anchors: of the lines found once in ``a`` and once in ``b``, the longest run in the
    same order on both sides, as (line of ``a``, line of ``b``)."""
    once_b = _unique(b)
    pairs = [(i, once_b[line]) for line, i in _unique(a).items() if line in once_b]
    tops: list[int] = []  # the b line ending each pile (patience sorting), and its pair
    top_pairs: list[int] = []
    back: list[int] = []
    for k, (_, j) in enumerate(pairs):
        pile = bisect.bisect_left(tops, j)
        back.append(top_pairs[pile - 1] if pile else -1)
        tops[pile : pile + 1], top_pairs[pile : pile + 1] = [j], [k]
    chain: list[tuple[int, int]] = []
    k = top_pairs[-1] if top_pairs else -1
    while k >= 0:
        chain.append(pairs[k])
        k = back[k]
    return chain[::-1]


def _aligned(a: Sequence[str], b: Sequence[str], ia: int, ib: int, *, align: bool) -> list[Opcode]:
    """``difflib``'s alignment of ``a`` and ``b`` (lines ``ia`` and ``ib`` on), or without ``align`` the
    lines replaced whole."""
    if not a or not b:
        return (
            [("delete", ia, ia + len(a), ib, ib)] if a else [("insert", ia, ia, ib, ib + len(b))] if b else []
        )
    if not align:
        return [("replace", ia, ia + len(a), ib, ib + len(b))]
    found = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return [(tag, i1 + ia, i2 + ia, j1 + ib, j2 + ib) for tag, i1, i2, j1, j2 in found]


def _opcodes(a: Sequence[str], b: Sequence[str], gap_pairs: int, pairs_max: int) -> list[Opcode]:
    """How ``a`` becomes ``b``, in bounded time: the lines both ends share; between them ``difflib``'s
    alignment (its time grows with the product of the lines, and far faster on lines that repeat), split at
    patience anchors when that product is over ``gap_pairs``, each part aligned while ``pairs_max`` lasts; a part past the bounds is replaced whole (the patch is larger, and applies the same)."""
    common = min(len(a), len(b))
    head = next((n for n in range(common) if a[n] != b[n]), common)
    tail = next((n for n in range(common - head) if a[-1 - n] != b[-1 - n]), common - head)
    a_mid, b_mid = a[head : len(a) - tail], b[head : len(b) - tail]
    cuts = [] if len(a_mid) * len(b_mid) <= gap_pairs else _anchors(a_mid, b_mid)
    ops: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    budget, i0, j0 = pairs_max, 0, 0
    for i, j in [*cuts, (len(a_mid), len(b_mid))]:
        pairs = (i - i0) * (j - j0)
        align = pairs <= min(budget, gap_pairs)
        ops += _aligned(a_mid[i0:i], b_mid[j0:j], head + i0, head + j0, align=align)
        budget -= pairs if align else 0
        ops += [("equal", head + i, head + i + 1, head + j, head + j + 1)] if i < len(a_mid) else []
        i0, j0 = i + 1, j + 1
    ops += [("equal", len(a) - tail, len(a), len(b) - tail, len(b))] if tail else []
    merged: list[Opcode] = []
    for op in ops:  # an anchor beside an equal line: one equal run
        if merged and op[0] == merged[-1][0] == "equal":
            merged[-1] = ("equal", merged[-1][1], op[2], merged[-1][3], op[4])
        else:
            merged.append(op)
    return merged


def text_patch(old: str, new: str, gap_pairs: int = GAP_PAIRS, pairs_max: int = DIFF_PAIRS_MAX) -> str:
    """The hunks that turn ``old`` into ``new`` (three lines of context); ``""`` when they are equal.
    ``gap_pairs`` and ``pairs_max`` bound the alignment's work (``_opcodes``)."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out: list[str] = []
    for group in _Grouped(_opcodes(a, b, gap_pairs, pairs_max)).get_grouped_opcodes(3):
        out.append(f"@@ -{_range(group[0][1], group[-1][2])} +{_range(group[0][3], group[-1][4])} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [_line(" ", line) for line in a[a1:a2]]
                continue
            out += [_line("-", line) for line in a[a1:a2]]
            out += [_line("+", line) for line in b[b1:b2]]
    return "".join(out)


Hunk = tuple[int, list[str], list[str]]


def _hunks(patch: str) -> Result[list[Hunk], str]:
    """(old start, old lines, new lines) of each hunk."""
    hunks: list[Hunk] = []
    last: list[list[str]] = []
    for number, line in enumerate(patch.splitlines(keepends=True), start=1):
        header = _HUNK.match(line)
        if header is not None:
            hunks.append((int(header.group(1)), [], []))
            continue
        if not hunks:
            return Failure(f"line {number} of the patch is not in a hunk")
        _, old, new = hunks[-1]
        match line[:1]:
            case " ":
                old.append(line[1:])
                new.append(line[1:])
                last = [old, new]
            case "-":
                old.append(line[1:])
                last = [old]
            case "+":
                new.append(line[1:])
                last = [new]
            case "\\":
                for side in last:
                    side[-1] = side[-1].removesuffix("\n")
            case _:
                return Failure(f"line {number} of the patch starts with neither ' ', '-', '+' nor '\\'")
    return Success(hunks)


def _find(lines: Sequence[str], wanted: Sequence[str], at: int, start: int) -> int | None:
    """Where ``wanted`` appears in ``lines`` at or after ``start``, nearest to ``at``."""
    size = len(wanted)
    for distance in range(len(lines) + 1):
        for place in (at + distance, at - distance) if distance else (at,):
            if start <= place <= len(lines) - size and list(lines[place : place + size]) == list(wanted):
                return place
    return None


def apply_text_patch(old: str, patch: str) -> Result[str, str]:
    """``old`` with ``patch`` applied (module docstring), or why it does not apply."""
    match _hunks(patch):
        case Failure(problem):
            return Failure(problem)
        case Success(hunks):
            pass
    lines = old.splitlines(keepends=True)
    out: list[str] = []
    position = offset = 0
    for number, (start, before, after) in enumerate(hunks, start=1):
        expected = (max(start - 1, 0) if before else start) + offset
        place = _find(lines, before, expected, position)
        if place is None:
            return Failure(f"hunk {number} (at line {start}) does not match the file")
        offset += place - expected  # the file moved by this much here: so do the hunks below
        out += lines[position:place] + after
        position = place + len(before)
    return Success("".join(out + lines[position:]))


def path_problem(path: str) -> str | None:
    """Why ``path`` cannot be a workspace entry of a kept diff (absolute, ``..``, empty), or ``None``."""
    parts = path.split("/")
    if not path or path.startswith("/") or any(part in ("", ".", "..") for part in parts) or "\x00" in path:
        return f"{path!r} is not a relative path inside the workspace"
    return None


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(WorkspaceDiff)


def encode_workspace_diff(diff: WorkspaceDiff) -> bytes:
    """The diff's JSON bytes."""
    return _ENCODER.encode(diff)


def kept_diff(
    diff: WorkspaceDiff, cap: int = MAX_DIFF_BYTES, *, complete: bool = True
) -> tuple[bytes, WorkspaceKept]:
    """The bytes to write (empty when not kept) and what the record says of them; ``complete=False``: the
    text of its last files was not read, the diff being over ``cap`` already (its size a lower bound)."""
    data = encode_workspace_diff(diff)
    files = len(diff.changes)
    if not complete:
        reason = f"the diff holds more than {len(data):,} bytes (the rest of its files not read), more than the {cap:,} a run keeps"  # fmt: skip
        return b"", WorkspaceKept(kept=False, files=files, bytes=len(data), reason=reason)
    if len(data) > cap:
        reason = f"the diff holds {len(data):,} bytes, more than the {cap:,} a run keeps"
        return b"", WorkspaceKept(kept=False, files=files, bytes=len(data), reason=reason)
    return data, WorkspaceKept(kept=True, files=files, bytes=len(data))


def decode_workspace_diff(data: bytes, source: str) -> Result[WorkspaceDiff, str]:
    """A kept diff read back, its paths checked; or one line naming the file and the problem."""
    try:
        diff = _DECODER.decode(data)
    except msgspec.DecodeError as error:
        return Failure(f"{source}: not a workspace diff: {error}")
    if diff.schema_version > WORKSPACE_DIFF_SCHEMA_VERSION:
        return Failure(f"{source}: schemaVersion {diff.schema_version} is newer than this alisio reads")
    for change in diff.changes:
        problem = path_problem(change.path)
        if problem is not None:
            return Failure(f"{source}: {problem}")
    return Success(diff)
