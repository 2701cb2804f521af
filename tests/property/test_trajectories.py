"""Properties of alisio.core.lab.trajectories: a run's steps read off its events, two of them aligned, the
first sustained divergence, and the repetitions of a task grouped."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence

from hypothesis import example, given
from hypothesis import strategies as st

from alisio.core.harness.events import ProviderResponded, RunEnded, ToolCalled, ToolResulted
from alisio.core.harness.protocol import Usage
from alisio.core.lab.runs.records import Measured, RunRecord, RunStatus
from alisio.core.lab.trajectories.align import BLIP_STEPS, RESYNC_STEPS, align, diff_trajectories
from alisio.core.lab.trajectories.contrast import group_runs, pick_pair, pick_sides
from alisio.core.lab.trajectories.trajectory import (
    WORKSPACE,
    Ending,
    Step,
    Trajectory,
    normalised_arguments,
    step_key,
    trajectory_of,
)

CALLS = st.sampled_from(["read_file a", "read_file b", "edit_file a", "bash t", "list_dir ."])
SEQUENCES = st.lists(CALLS, max_size=12)


def _steps(calls: Sequence[str]) -> tuple[Step, ...]:
    out = []
    for index, call in enumerate(calls, start=1):
        name, arg = call.split()
        arguments = json.dumps({"path": arg})
        out.append(Step(index=index, turn=index, name=name, arguments=arguments, raw_arguments=arguments))
    return tuple(out)


def _trajectory(calls: Sequence[str]) -> Trajectory:
    return Trajectory(steps=_steps(calls), ending=Ending(outcome="completed"))


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    """The slow reference: the longest common subsequence's length, by recursion."""

    @functools.cache
    def length(i: int, j: int) -> int:
        if i == len(a) or j == len(b):
            return 0
        if a[i] == b[j]:
            return 1 + length(i + 1, j + 1)
        return max(length(i + 1, j), length(i, j + 1))

    return length(0, 0)


@given(SEQUENCES, SEQUENCES)
def test_the_alignment_keeps_every_call_of_each_side_once_in_order(a: list[str], b: list[str]) -> None:
    """Each side's steps appear once each, in order; ``same`` rows pair equal calls, as many as the longest
    common subsequence (the slow reference)."""
    rows = align(_steps(a), _steps(b))
    assert [row.a for row in rows if row.a is not None] == list(range(1, len(a) + 1))
    assert [row.b for row in rows if row.b is not None] == list(range(1, len(b) + 1))
    same = [row for row in rows if row.kind == "same"]
    assert all(row.a is not None and row.b is not None and a[row.a - 1] == b[row.b - 1] for row in same)
    assert len(same) == _lcs(a, b)
    for row in rows:
        assert (row.kind == "changed") == (row.a is not None and row.b is not None and row.kind != "same")
        assert (row.kind == "only_a") == (row.a is not None and row.b is None)


@given(SEQUENCES)
def test_a_run_against_itself_has_no_divergence(calls: list[str]) -> None:
    """diff(a, a): every row the same call, no divergence, nothing transient."""
    diff = diff_trajectories(_trajectory(calls), _trajectory(calls))
    assert diff.identical and diff.divergence is None and diff.transient == 0
    assert all(row.kind == "same" for row in diff.rows)


@given(SEQUENCES, CALLS, st.integers(0, 12))
@example(["read_file a", "edit_file a", "bash t"], "list_dir .", 1)
def test_one_call_more_then_the_same_calls_is_transient(calls: list[str], extra: str, at: int) -> None:
    """One extra call, followed by at least RESYNC_STEPS identical calls, is transient: no divergence; at the
    end (or with fewer after it) it is the divergence, and it names the extra call."""
    at = min(at, len(calls))
    longer = [*calls[:at], extra, *calls[at:]]
    diff = diff_trajectories(_trajectory(calls), _trajectory(longer))
    if diff.identical:  # the extra call was absorbed by equal neighbours: the same sequence shifted
        return
    gap = [row for row in diff.rows if row.kind != "same"]
    assert len(gap) == 1 and gap[0].kind == "only_b" and BLIP_STEPS >= 1
    after = diff.rows[diff.rows.index(gap[0]) + 1 :]
    if len(after) >= RESYNC_STEPS:
        assert diff.divergence is None and diff.transient == 1
    else:
        assert diff.divergence is not None and diff.divergence.call_a is None
        assert diff.divergence.call_b is not None and step_key(diff.divergence.call_b)[0] == extra.split()[0]


@given(SEQUENCES, SEQUENCES, SEQUENCES)
def test_the_divergence_is_at_the_first_difference_after_the_common_head(
    head: list[str], a: list[str], b: list[str]
) -> None:
    """Two runs that share a head and then differ from their first call on (different first calls) part at
    the first step after the head, numbered on each side."""
    if not a or not b or a[0] == b[0]:
        return
    tail_a = [f"bash {n}" for n in range(3)]  # different tails: the gap is sustained
    tail_b = [f"list_dir {n}" for n in range(3)]
    diff = diff_trajectories(_trajectory([*head, *a, *tail_a]), _trajectory([*head, *b, *tail_b]))
    assert diff.divergence is not None
    assert diff.divergence.step_a <= len(head) + 1 + len(a)
    first_gap = next(n for n, row in enumerate(diff.rows) if row.kind != "same")
    assert first_gap >= len(head)


@given(
    st.dictionaries(st.sampled_from(["path", "command", "old", "new"]), st.text(max_size=8), max_size=4),
    st.randoms(use_true_random=False),
    st.sampled_from(["/tmp/alisio-12@abc123def456.99-t-x1y2z3", "/tmp/alisio-kept-t-abcd1234", "/workspace"]),
)
def test_normalised_arguments_ignore_order_layout_the_workspace_and_descriptions(
    arguments: dict[str, str], rng: object, workspace: str
) -> None:
    """Key order, spaces, the run's workspace path and a ``description`` do not change a call's key; the
    normalisation is idempotent."""
    keys = list(arguments)
    rng.shuffle(keys)  # type: ignore[attr-defined]
    shuffled = {k: arguments[k] for k in keys}
    with_path = {k: f"{workspace}/{v}" for k, v in arguments.items()}
    plain = normalised_arguments(json.dumps(arguments))
    assert normalised_arguments(json.dumps(shuffled, indent=2)) == plain
    assert normalised_arguments(json.dumps({**arguments, "description": "a note"})) == plain
    other = normalised_arguments(
        json.dumps({k: f"/tmp/alisio-kept-t-zzzz9999/{v}" for k, v in arguments.items()})
    )
    assert normalised_arguments(json.dumps(with_path)) == other
    assert all(WORKSPACE in v for v in json.loads(other).values())
    assert normalised_arguments(plain) == plain


def _usage(tokens: int | None) -> Usage | None:
    return None if tokens is None else Usage(input_tokens=tokens, output_tokens=1)


@given(st.lists(st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 500))), max_size=6))
def test_steps_are_the_tool_calls_with_the_tokens_spent_so_far(turns: list[tuple[int, int | None]]) -> None:
    """One step per tool call, in order, numbered from 1; the tokens at a step are the sum over the responses
    up to the one that asked for it, ``None`` once a response reported none."""
    events: list[object] = []
    spent: int | None = 0
    expected: list[int | None] = []
    for turn, (calls, tokens) in enumerate(turns):
        events.append(ProviderResponded(seq=len(events), elapsed_ms=turn, call=turn, purpose="main",
                                        finish_reason="tool_calls", usage=_usage(tokens), text_chars=0,
                                        tool_calls=calls, duration_ms=0))  # fmt: skip
        spent = None if tokens is None or spent is None else spent + tokens + 1
        for n in range(calls):
            call_id = f"c{turn}.{n}"
            events.append(ToolCalled(seq=len(events), elapsed_ms=turn, call_id=call_id, name="bash",
                                     arguments=json.dumps({"command": str(n)}), effect=None))  # fmt: skip
            events.append(ToolResulted(seq=len(events), elapsed_ms=turn, call_id=call_id, name="bash",
                                       ok=n % 2 == 0, output_excerpt="", duration_ms=0))  # fmt: skip
            expected.append(spent)
    events.append(RunEnded(seq=len(events), elapsed_ms=9, outcome="completed", turns=len(turns)))
    trajectory = trajectory_of(events)  # type: ignore[arg-type]
    assert [s.index for s in trajectory.steps] == list(range(1, len(expected) + 1))
    spent_at = [
        None if s.input_tokens is None else s.input_tokens + (s.output_tokens or 0) for s in trajectory.steps
    ]
    assert spent_at == expected
    assert [s.ok for s in trajectory.steps] == [n % 2 == 0 for calls, _ in turns for n in range(calls)]
    assert trajectory.ending.outcome == "completed" and trajectory.ending.turns == len(turns)


def _record(rep: int, status: RunStatus) -> RunRecord:
    measured = Measured(wall_ms=1, turns=1, tool_calls=0, compactions=0, usage_complete=True)
    return RunRecord(task_id="t", repetition=rep, seed=rep, status=status, measured=measured)


STATUSES = st.sampled_from([RunStatus.PASS, RunStatus.FAIL, RunStatus.BUDGET_EXCEEDED, RunStatus.ERROR])


@given(st.lists(st.tuples(st.lists(CALLS, max_size=3), STATUSES), min_size=1, max_size=8))
def test_groups_partition_the_runs_and_the_pair_is_a_pass_and_a_failure(
    runs: list[tuple[list[str], RunStatus]],
) -> None:
    """Every repetition is in exactly one group, each group's runs made the same calls, groups are largest
    first; the pair is a passing and a failing repetition exactly when the task has both."""
    pairs = [(_record(rep, status), _trajectory(calls)) for rep, (calls, status) in enumerate(runs)]
    groups = group_runs(pairs)
    reps = sorted(rep for group in groups for rep in group.repetitions)
    assert reps == list(range(len(runs)))
    for group in groups:
        assert len({tuple(runs[rep][0]) for rep in group.repetitions}) == 1
        assert group.passed == sum(1 for rep in group.repetitions if runs[rep][1] is RunStatus.PASS)
    assert [len(g.repetitions) for g in groups] == sorted((len(g.repetitions) for g in groups), reverse=True)
    statuses = [status for _, status in runs]
    pair = pick_pair(groups)
    has_both = RunStatus.PASS in statuses and any(
        s in (RunStatus.FAIL, RunStatus.BUDGET_EXCEEDED) for s in statuses
    )
    assert (pair is not None) == has_both
    if pair is not None:
        assert statuses[pair[0]] is RunStatus.PASS
        assert statuses[pair[1]] in (RunStatus.FAIL, RunStatus.BUDGET_EXCEEDED)


@given(st.lists(STATUSES, min_size=1, max_size=5), st.lists(STATUSES, min_size=1, max_size=5))
def test_two_sides_set_a_pass_against_a_failure_when_they_can(a: list[RunStatus], b: list[RunStatus]) -> None:
    """Without --rep: A's pass against B's failure when there are such, else B's pass against A's failure,
    else the first run of each."""
    side_a = [_record(rep, status) for rep, status in enumerate(a)]
    side_b = [_record(rep, status) for rep, status in enumerate(b)]
    picked = pick_sides(side_a, side_b)
    assert picked is not None
    failed = (RunStatus.FAIL, RunStatus.BUDGET_EXCEEDED)
    if RunStatus.PASS in a and any(s in failed for s in b):
        assert picked[0].status is RunStatus.PASS and picked[1].status in failed
    elif RunStatus.PASS in b and any(s in failed for s in a):
        assert picked[0].status in failed and picked[1].status is RunStatus.PASS
    else:
        assert (picked[0].repetition, picked[1].repetition) == (0, 0)
