"""``eval diff`` as text for a terminal: the two runs, their first sustained divergence, the aligned steps
with token and time deltas, and where each run ended; for one task's repetitions, the groups first.

Text that comes from a run (arguments, the model's words, verifier details) is shown as it is, cut; the
shell passes the whole through its terminal filter before printing. ``--json`` prints the values instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from alisio.core.lab.outputs.formats import format_num, format_seconds
from alisio.core.lab.trajectories.align import FirstDivergence, Row, divergence_line
from alisio.core.lab.trajectories.contrast import RunDiff, Side, TaskContrast, TrajectoryGroup
from alisio.core.lab.trajectories.trajectory import Ending, Step, Trajectory
from alisio.core.text import plural

__all__ = ["CALL_CHARS", "render_contrast", "render_run_diff", "side_label"]

CALL_CHARS: Final = 72
"""Characters of a call shown in the table of steps."""
_DETAIL_CHARS: Final = 400
"""Characters of a call, an argument value or a model text shown at the divergence."""
_MARK: Final = {"same": "=", "changed": "~", "only_a": "<", "only_b": ">"}


def _cut(text: str, limit: int) -> str:
    """``text`` on one line (its line breaks as spaces), at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _cut_call(text: str, limit: int) -> str:
    """A call as it is (normalised arguments are JSON on one line: spaces inside strings count), cut."""
    flat = text.replace("\n", " ").replace("\r", " ")
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _call(step: Step | None, limit: int) -> str:
    if step is None:
        return "(no call here)"
    return _cut_call(f"{step.name} {step.arguments}", limit)


def side_label(side: Side) -> str:
    """``SOURCE TASK rep N: STATUS (WHY)``, as much as is known."""
    where = side.source
    if side.task_id is not None:
        where += f" {side.task_id}"
    if side.repetition is not None:
        where += f" rep {side.repetition}"
    verdict = side.status or "no verdict (a transcript alone)"
    if side.why:
        verdict += f" ({_cut(side.why, 200)})"
    return f"{where}: {verdict}"


def _text_before(side: str, step: Step | None) -> list[str]:
    if step is None:
        return []
    if step.text_turn is None:
        return [f"  model text before {side}'s call: (none: the model said nothing before it)"]
    return [
        f"  model text before {side}'s call (turn {step.text_turn}): {_cut(step.text_before, _DETAIL_CHARS)}"
    ]


def _divergence_lines(divergence: FirstDivergence) -> list[str]:
    lines = [
        f"  A: {_call(divergence.call_a, _DETAIL_CHARS)}",
        f"  B: {_call(divergence.call_b, _DETAIL_CHARS)}",
    ]
    if divergence.changes:
        lines.append("  arguments that differ:")
        for change in divergence.changes:
            left = _cut_call(change.a, 160) if change.a is not None else "(absent)"
            right = _cut_call(change.b, 160) if change.b is not None else "(absent)"
            lines.append(f"    {change.name}: {left} -> {right}")
    return lines + _text_before("A", divergence.call_a) + _text_before("B", divergence.call_b)


def _tokens(step: Step | None) -> str:
    if step is None or step.input_tokens is None or step.output_tokens is None:
        return "-"
    return format_num(step.input_tokens + step.output_tokens)


def _delta(value: int | None, seconds: bool = False) -> str:
    if value is None:
        return "-"
    shown = f"{abs(value) / 1000:.1f} s" if seconds else f"{abs(value):,}"
    return f"{'-' if value < 0 and shown.strip('0. s') else '+'}{shown}"


def _row_lines(row: Row, a: Trajectory, b: Trajectory) -> list[str]:
    left = a.steps[row.a - 1] if row.a is not None else None
    right = b.steps[row.b - 1] if row.b is not None else None
    numbers = f"{row.a or '':>3} {row.b or '':>3}"
    figures = (
        f"{_tokens(left):>9} {_tokens(right):>9} {_delta(row.tokens_delta):>8}"
        f" {format_seconds(left.elapsed_ms) if left else '-':>8} {format_seconds(right.elapsed_ms) if right else '-':>8}"
        f" {_delta(row.ms_delta, seconds=True):>8}"
    )
    mark = _MARK[row.kind]
    if row.kind == "same":
        return [f"  {mark} {numbers}  {_call(left, CALL_CHARS):<{CALL_CHARS}} {figures}"]
    if row.kind == "changed":
        return [
            f"  {mark} {numbers}  A {_call(left, CALL_CHARS - 2):<{CALL_CHARS - 2}} {figures}",
            f"  {' ' * 9}  B {_call(right, CALL_CHARS - 2)}",
        ]
    side, step = ("A", left) if row.kind == "only_a" else ("B", right)
    return [f"  {mark} {numbers}  {side} {_call(step, CALL_CHARS - 2):<{CALL_CHARS - 2}} {figures}"]


def _ending(side: str, trajectory: Trajectory) -> str:
    end: Ending = trajectory.ending
    how = end.outcome
    if end.reason:
        how += f" {end.reason}"
    if end.budget:
        how += f" ({end.budget})"
    tokens = (
        f", {format_num(end.input_tokens + end.output_tokens)} tokens"
        if end.input_tokens is not None and end.output_tokens is not None
        else ""
    )
    counts = f"{plural(end.turns, 'turn')}, {plural(len(trajectory.steps), 'tool call')}{tokens}"
    said = end.message or end.final_text
    text = f": {_cut(said, 200)}" if said.strip() else ""
    return f"  {side}: {how} after {counts}, {format_seconds(end.wall_ms)}{text}"


def render_run_diff(run: RunDiff) -> str:
    """The text of two runs' diff (module docstring)."""
    diff = run.diff
    lines = [f"A: {side_label(run.a)}", f"B: {side_label(run.b)}", "", divergence_line(diff)]
    if diff.divergence is not None:
        lines += _divergence_lines(diff.divergence)
    if diff.rows:
        lines += [
            "",
            "steps (= same call, ~ different calls, < only A, > only B; tokens and time when the model asked):",
            f"  {'':1} {'A':>3} {'B':>3}  {'call':<{CALL_CHARS}} {'tokens A':>9} {'tokens B':>9} {'delta':>8}"
            f" {'time A':>8} {'time B':>8} {'delta':>8}",
        ]
        for row in diff.rows:
            lines += _row_lines(row, diff.a, diff.b)
    lines += ["", "ended:", _ending("A", diff.a), _ending("B", diff.b)]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _group_line(group: TrajectoryGroup) -> str:
    reps = ", ".join(str(rep) for rep in group.repetitions)
    runs = plural(len(group.repetitions), "run")
    outline = ", ".join(group.tools[:8]) + (", ..." if len(group.tools) > 8 else "")
    calls = plural(group.calls, "call") + (f": {outline}" if outline else "")
    others = sorted({s for s in group.statuses if s != "pass"})
    rest = f" ({', '.join(others)} otherwise)" if others and group.passed else ""
    return f"  {group.label}  {runs} (rep {reps}), {group.passed} passed{rest}; {calls}"


def _no_contrast(groups: Sequence[TrajectoryGroup], runs: int) -> str:
    passed = sum(g.passed for g in groups)
    if passed == runs:
        return f"nothing to contrast: all {plural(runs, 'run')} passed"
    if passed == 0:
        return f"nothing to contrast: none of the {plural(runs, 'run')} passed"
    return "nothing to contrast: no judged run failed (the others ended error)"


def render_contrast(contrast: TaskContrast) -> str:
    """The text of one task's repetitions: the groups, then a passing run against a failing one."""
    count = plural(len(contrast.groups), "trajectory")
    lines = [f"{contrast.task_id} in {contrast.source}: {plural(contrast.runs, 'run')}, {count}"]
    lines += [_group_line(group) for group in contrast.groups]
    if contrast.without_transcript:
        reps = ", ".join(str(rep) for rep in contrast.without_transcript)
        lines.append(f"  no transcript was kept for rep {reps}")
    if contrast.contrast is None:
        return "\n".join([*lines, _no_contrast(contrast.groups, contrast.runs)]) + "\n"
    pair = contrast.contrast
    lines += ["", f"passing rep {pair.a.repetition} against failing rep {pair.b.repetition}:", ""]
    return "\n".join(lines) + "\n" + render_run_diff(pair)
