"""Whether a report's verdicts can be trusted, in two blocks report.json carries: the suite's self-check,
and, for a report made by ``eval rejudge``, what was judged again and what changed.

- ``SelfCheckBlock``: the results of ``alisio eval selfcheck`` kept in the data directory under the suite's
  content hash, over the report's tasks: how many were checked, how many pass with no change (their untouched
  fixture passes: an agent that does nothing would score; each is named), how many have a reference solution
  and how many of those pass. ``self_check_line`` says it in one sentence: ``Self-check: no-op passes 0 of 7
  tasks; the solution passes 7 of 7`` or ``Self-check: not self-checked``.
- ``RejudgeBlock``: the report it judged again, the suite, verifier and fixture hashes before and after, how
  many runs were judged again, and every verdict that changed (``VerdictChange``).

Both are additive fields with defaults (absent in reports written before them), so schemaVersion stays 1.
"""

from __future__ import annotations

from alisio.core.base import Frozen
from alisio.core.text import plural

__all__ = [
    "RejudgeBlock",
    "SelfCheckBlock",
    "VerdictChange",
    "change_line",
    "noop_passing_line",
    "rejudge_line",
    "self_check_line",
]


class SelfCheckBlock(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """The suite's self-check over the report's tasks (the module docstring)."""

    tasks: int
    """The report's tasks."""
    checked: int = 0
    """Of them, those self-checked under the suite's content hash (``eval selfcheck``)."""
    noop_passing: tuple[str, ...] = ()
    """The checked tasks whose untouched fixture passes their verifiers, by id."""
    noop_errors: tuple[str, ...] = ()
    """The checked tasks whose verifiers could not run on the untouched fixture."""
    solutions: int = 0
    """The checked tasks with a reference solution."""
    solution_passes: int = 0
    """Those whose solution passes every judged verifier."""
    checked_at: str | None = None
    """When the latest of these self-checks ran (ISO 8601 UTC)."""


def self_check_line(block: SelfCheckBlock) -> str:
    """``Self-check: no-op passes 0 of 7 tasks; the solution passes 7 of 7``, or that it was not run."""
    if block.checked == 0:
        return (
            "Self-check: not self-checked (alisio eval selfcheck on this suite keeps its result under the "
            "suite's content hash)."
        )
    text = f"Self-check: no-op passes {len(block.noop_passing)} of {plural(block.checked, 'task')}"
    if block.solutions:
        text += f"; the solution passes {block.solution_passes} of {block.solutions}"
        if block.solutions < block.checked:
            text += f" ({plural(block.checked - block.solutions, 'task')} without one)"
    else:
        text += "; no task has a reference solution"
    if block.noop_errors:
        text += f"; {len(block.noop_errors)} cannot be judged on the untouched fixture"
    if block.checked < block.tasks:
        text += f" ({block.tasks - block.checked} of {plural(block.tasks, 'task')} not checked)"
    return text + "."


def noop_passing_line(task_id: str) -> str:
    """The warning every report including a task that passes with no change shows."""
    return (
        f"{task_id} passes with no change: its untouched fixture passes its verifiers (eval selfcheck), so an "
        "agent that does nothing passes it."
    )


class VerdictChange(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One run whose status the rejudge changed."""

    task_id: str
    repetition: int
    variant: str | None = None
    before: str
    """The status in the report judged again."""
    after: str
    reason: str | None = None
    """The new reason (``verifier_tampered``, ``workspace_not_kept``, ``diff_does_not_apply``...)."""
    why: str = ""
    """One line: the failing verifier's detail, or what broke."""


def change_line(change: VerdictChange) -> str:
    """``fix-add rep 2: pass -> fail: check: exit 1``."""
    reason = f" {change.reason}" if change.reason else ""
    why = f": {change.why}" if change.why else ""
    where = f"{change.variant}/" if change.variant else ""
    return f"{where}{change.task_id} rep {change.repetition}: {change.before} -> {change.after}{reason}{why}"


class RejudgeBlock(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """What ``eval rejudge`` did to make this report."""

    of_run_id: str
    """The run id of the report judged again."""
    of_created_at: str
    suite_version_before: str
    suite_version_after: str
    """The suite's version now (the report's conditions name it; ``eval compare`` pairs the two anyway)."""
    suite_hash_before: str
    suite_hash_after: str
    verifiers_hash_before: str | None = None
    """``None`` when the report judged again predates this hash (it names its suite hash only)."""
    verifiers_hash_after: str
    fixtures_hash_before: str | None = None
    fixtures_hash_after: str
    runs: int
    """Runs in the report judged again."""
    rejudged: int
    """Runs whose kept workspace was applied to the fixture and judged again."""
    not_rejudged: int = 0
    """Runs kept as they were (the agent's run broke: nothing to judge)."""
    changed: tuple[VerdictChange, ...] = ()


def _hashes(name: str, before: str | None, after: str) -> str:
    if before is None:
        return f"{name} {after[:12]} (before: not recorded)"
    return f"{name} {before[:12]} unchanged" if before == after else f"{name} {before[:12]} -> {after[:12]}"


def rejudge_line(block: RejudgeBlock) -> str:
    """``Judged again from run X without the model: 12 of 12 runs; verifiers a -> b, fixtures c unchanged; 2
    verdicts changed.``"""
    changed = plural(len(block.changed), "verdict")
    kept = f", {block.not_rejudged} kept as they were" if block.not_rejudged else ""
    return (
        f"Judged again from run {block.of_run_id} without the model: {block.rejudged} of "
        f"{plural(block.runs, 'run')}{kept}; {_hashes('verifiers', block.verifiers_hash_before, block.verifiers_hash_after)}, "
        f"{_hashes('fixtures', block.fixtures_hash_before, block.fixtures_hash_after)}; {changed} changed."
    )
