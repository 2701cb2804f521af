"""Two trajectories aligned, and where they part for good: the core of ``alisio eval diff``.

``diff_trajectories(a, b)`` aligns the two sequences of tool calls on their keys (tool name and normalised
arguments, ``alisio.core.lab.trajectories.trajectory.step_key``) with a longest common subsequence, so a call
inserted on one side does not shift every later comparison, then names the **first sustained divergence**.

Rules this module keeps:

- the alignment is a list of rows, in order; a row is ``same`` (both sides made the same call), ``changed``
  (at this place each side made a different call: the calls of a gap are paired up in order), ``only_a`` or
  ``only_b`` (a call the other side did not make there). Ties of the common subsequence are broken the same
  way every time (deterministic), so the same two runs always give the same rows. The common head and tail
  are matched first; a middle larger than ``MAX_CELLS`` (calls of A times calls of B) is matched position
  by position instead, which bounds the time and memory of two very long runs;
- a **gap** is a maximal run of rows that are not ``same``. A gap is *transient* when it holds at most
  ``BLIP_STEPS`` call of each side and is followed by at least ``RESYNC_STEPS`` ``same`` rows: the runs made
  one call differently and went on alike (an extra ``read_file``). Every other gap is *sustained*, and a gap
  at the end of either run always is. The first sustained gap is the first divergence; there is none when
  the runs made the same calls, or differ only by transient gaps (which are counted);
- the divergence names its first row: the step number on each side (the step a side would have made next
  when it made none there), the two calls, their arguments' difference (``argument_changes``), and each
  side's model text just before its call;
- per row, the tokens and time each side had spent when it asked for the call, and B minus A where both
  sides made a call and reported the figure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final, Literal

import msgspec

from alisio.core.base import Frozen
from alisio.core.lab.trajectories.trajectory import Step, Trajectory, step_key
from alisio.core.text import plural

__all__ = [
    "BLIP_STEPS",
    "MAX_CELLS",
    "RESYNC_STEPS",
    "ArgumentChange",
    "FirstDivergence",
    "Row",
    "RowKind",
    "TrajectoryDiff",
    "align",
    "argument_changes",
    "diff_trajectories",
    "divergence_line",
]

BLIP_STEPS: Final = 1
"""A gap with at most this many calls on each side may be transient."""
RESYNC_STEPS: Final = 2
"""A gap followed by at least this many identical calls on both sides is transient (if small enough)."""
MAX_CELLS: Final = 4_000_000
"""The largest table the common subsequence is computed with (calls of A x calls of B, once their common head
and tail are set aside); past it the middle is matched position by position."""

RowKind = Literal["same", "changed", "only_a", "only_b"]


class Row(Frozen, frozen=True, kw_only=True):
    """One place of the alignment: the step of each side there (``None``: that side made no call there)."""

    kind: RowKind
    a: int | None = None
    """A's step index (1-based)."""
    b: int | None = None
    tokens_delta: int | None = None
    """B's tokens spent by its call here minus A's (input and output), when both made a call and reported."""
    ms_delta: int | None = None
    """B's time since its start at its call here minus A's, when both made a call."""


class ArgumentChange(Frozen, frozen=True, kw_only=True):
    """One argument that differs between the two calls: its name and each side's value as JSON text
    (``None``: that side's call has no such argument)."""

    name: str
    a: str | None
    b: str | None


class FirstDivergence(Frozen, frozen=True, kw_only=True):
    """Where the two runs part for good."""

    row: int
    """The alignment row (0-based) where it starts."""
    step_a: int
    """A's step there (1-based); when A made no call there, the step it would have made next."""
    step_b: int
    call_a: Step | None
    """A's call there (``None``: A made none: it ended, or it went on with B's later calls)."""
    call_b: Step | None
    changes: tuple[ArgumentChange, ...] = ()
    """The arguments that differ, when both sides called the same tool."""


class TrajectoryDiff(Frozen, frozen=True, kw_only=True):
    """Two trajectories aligned."""

    a: Trajectory
    b: Trajectory
    rows: tuple[Row, ...]
    divergence: FirstDivergence | None
    """The first sustained divergence; ``None``: the same calls, or only transient gaps."""
    transient: int
    """Gaps before the divergence (or in all, without one) that were transient."""
    identical: bool
    """Both runs made exactly the same calls."""


def _lcs_table(a: Sequence[tuple[str, str]], b: Sequence[tuple[str, str]]) -> list[list[int]]:
    """``table[i][j]``: the length of the longest common subsequence of ``a[i:]`` and ``b[j:]``."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        row, below = table[i], table[i + 1]
        for j in range(len(b) - 1, -1, -1):
            row[j] = below[j + 1] + 1 if a[i] == b[j] else max(below[j], row[j + 1])
    return table


def _matched(keys_a: Sequence[tuple[str, str]], keys_b: Sequence[tuple[str, str]]) -> list[tuple[int, int]]:
    """The pairs (0-based) of a longest common subsequence: the common head and tail taken first, the middle
    by the table (past ``MAX_CELLS`` cells, the middle is matched position by position instead)."""
    head = 0
    while head < min(len(keys_a), len(keys_b)) and keys_a[head] == keys_b[head]:
        head += 1
    tail = 0
    while tail < min(len(keys_a), len(keys_b)) - head and keys_a[-1 - tail] == keys_b[-1 - tail]:
        tail += 1
    mid_a, mid_b = keys_a[head : len(keys_a) - tail], keys_b[head : len(keys_b) - tail]
    pairs = [(n, n) for n in range(head)]
    if len(mid_a) * len(mid_b) > MAX_CELLS:
        pairs += [(head + n, head + n) for n in range(min(len(mid_a), len(mid_b))) if mid_a[n] == mid_b[n]]
    else:
        table = _lcs_table(mid_a, mid_b)
        i = j = 0
        while i < len(mid_a) and j < len(mid_b):
            if mid_a[i] == mid_b[j] and table[i][j] == table[i + 1][j + 1] + 1:
                pairs.append((head + i, head + j))
                i, j = i + 1, j + 1
            elif table[i + 1][j] >= table[i][j + 1]:
                i += 1
            else:
                j += 1
    pairs += [(len(keys_a) - tail + n, len(keys_b) - tail + n) for n in range(tail)]
    return pairs


def align(a: Sequence[Step], b: Sequence[Step]) -> tuple[Row, ...]:
    """The rows of the alignment of ``a`` and ``b`` (module docstring): matched calls are ``same``; the calls
    between two matches are paired in order as ``changed``, the rest ``only_a`` or ``only_b``."""
    pairs = _matched([step_key(s) for s in a], [step_key(s) for s in b])
    rows: list[Row] = []
    gap_a: list[int] = []
    gap_b: list[int] = []

    def flush() -> None:
        for n in range(max(len(gap_a), len(gap_b))):
            left = gap_a[n] if n < len(gap_a) else None
            right = gap_b[n] if n < len(gap_b) else None
            kind: RowKind = (
                "changed" if left is not None and right is not None else "only_a" if left else "only_b"
            )
            rows.append(Row(kind=kind, a=left, b=right))
        gap_a.clear()
        gap_b.clear()

    i = j = 0
    for match_a, match_b in [*pairs, (len(a), len(b))]:
        gap_a.extend(range(i + 1, match_a + 1))
        gap_b.extend(range(j + 1, match_b + 1))
        flush()
        if match_a < len(a):
            rows.append(Row(kind="same", a=match_a + 1, b=match_b + 1))
        i, j = match_a + 1, match_b + 1
    return tuple(_with_deltas(row, a, b) for row in rows)


def _spent(step: Step) -> int | None:
    if step.input_tokens is None or step.output_tokens is None:
        return None
    return step.input_tokens + step.output_tokens


def _with_deltas(row: Row, a: Sequence[Step], b: Sequence[Step]) -> Row:
    if row.a is None or row.b is None:
        return row
    left, right = a[row.a - 1], b[row.b - 1]
    spent_a, spent_b = _spent(left), _spent(right)
    tokens = spent_b - spent_a if spent_a is not None and spent_b is not None else None
    return msgspec.structs.replace(row, tokens_delta=tokens, ms_delta=right.elapsed_ms - left.elapsed_ms)


def _gaps(rows: Sequence[Row]) -> list[tuple[int, int]]:
    """The (start, end) row indices of each maximal run of rows that are not ``same``."""
    gaps: list[tuple[int, int]] = []
    start: int | None = None
    for index, row in enumerate(rows):
        if row.kind != "same" and start is None:
            start = index
        if row.kind == "same" and start is not None:
            gaps.append((start, index))
            start = None
    if start is not None:
        gaps.append((start, len(rows)))
    return gaps


def _transient(rows: Sequence[Row], start: int, end: int) -> bool:
    gap = rows[start:end]
    calls_a = sum(1 for row in gap if row.a is not None)
    calls_b = sum(1 for row in gap if row.b is not None)
    after = rows[end : end + RESYNC_STEPS]
    resynced = len(after) == RESYNC_STEPS and all(row.kind == "same" for row in after)
    return calls_a <= BLIP_STEPS and calls_b <= BLIP_STEPS and resynced


def _as_object(arguments: str) -> dict[str, object] | None:
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def argument_changes(a: Step, b: Step) -> tuple[ArgumentChange, ...]:
    """The arguments that differ between two calls (normalised), by name in sorted order; a call whose
    arguments are not a JSON object is one change named ``arguments``. Empty when they are the same."""
    if a.arguments == b.arguments:
        return ()
    left, right = _as_object(a.arguments), _as_object(b.arguments)
    if left is None or right is None:
        return (ArgumentChange(name="arguments", a=a.arguments, b=b.arguments),)

    def text(value: object) -> str:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)

    return tuple(
        ArgumentChange(
            name=name,
            a=text(left[name]) if name in left else None,
            b=text(right[name]) if name in right else None,
        )
        for name in sorted(set(left) | set(right))
        if left.get(name, _MISSING) != right.get(name, _MISSING)
    )


_MISSING: Final = object()


def _next_step(rows: Sequence[Row], start: int, side: Literal["a", "b"], count: int) -> int:
    """The step of ``side`` at row ``start``, else the next one it made after it, else one past its last."""
    for row in rows[start:]:
        step = row.a if side == "a" else row.b
        if step is not None:
            return step
    return count + 1


def _divergence(rows: Sequence[Row], start: int, a: Trajectory, b: Trajectory) -> FirstDivergence:
    row = rows[start]
    call_a = a.steps[row.a - 1] if row.a is not None else None
    call_b = b.steps[row.b - 1] if row.b is not None else None
    changes = argument_changes(call_a, call_b) if call_a and call_b and call_a.name == call_b.name else ()
    return FirstDivergence(
        row=start,
        step_a=_next_step(rows, start, "a", len(a.steps)),
        step_b=_next_step(rows, start, "b", len(b.steps)),
        call_a=call_a,
        call_b=call_b,
        changes=changes,
    )


def diff_trajectories(a: Trajectory, b: Trajectory) -> TrajectoryDiff:
    """``a`` and ``b`` aligned, with their first sustained divergence (module docstring)."""
    rows = align(a.steps, b.steps)
    transient = 0
    divergence = None
    for start, end in _gaps(rows):
        if _transient(rows, start, end):
            transient += 1
            continue
        divergence = _divergence(rows, start, a, b)
        break
    identical = all(row.kind == "same" for row in rows)
    return TrajectoryDiff(
        a=a, b=b, rows=rows, divergence=divergence, transient=transient, identical=identical
    )


def _named(step: Step | None, next_step: int, trajectory: Trajectory) -> str:
    """What a side did at the divergence, in a few words: the tool it called, or that it made no call."""
    if step is not None:
        return step.name
    count = len(trajectory.steps)
    if next_step > count:
        return f"no call (it ended after {plural(count, 'call')})"
    return f"no call (its next is step {next_step})"


def divergence_line(diff: TrajectoryDiff) -> str:
    """One line: where the runs part, or that they do not (for report pages and the first line of text)."""
    divergence = diff.divergence
    if diff.identical:
        return f"no divergence: the same {plural(len(diff.a.steps), 'tool call')} in the same order"
    if divergence is None:
        return (
            f"no sustained divergence: {plural(diff.transient, 'transient difference')}, then the same calls"
        )
    step_a, step_b = divergence.step_a, divergence.step_b
    where = f"step {step_a}" if step_a == step_b else f"A's step {step_a}, B's step {step_b}"
    a = _named(divergence.call_a, step_a, diff.a)
    b = _named(divergence.call_b, step_b, diff.b)
    return f"first divergence at {where}: A {a}, B {b}"
