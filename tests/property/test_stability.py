"""Properties of ``alisio.core.lab.comparisons.stability`` (flip rates, pooling, hints) and ``alisio.core.lab.judges.selfcheck``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.lab.comparisons.stability import ReportRuns, Stability, failure_hints, stability
from alisio.core.lab.judges.selfcheck import TaskObservation, VerifierRepeat, judge_task, task_line
from alisio.core.lab.runs.records import (
    Incident,
    Measured,
    RunRecord,
    RunStatus,
    VerifierResult,
    VerifierStatus,
)

MEASURED = Measured(wall_ms=1, turns=1, tool_calls=0, compactions=0, usage_complete=True)
TASKS = ("a", "b", "c")
statuses = st.sampled_from([RunStatus.PASS, RunStatus.FAIL, RunStatus.BUDGET_EXCEEDED, RunStatus.ERROR])


def run(task_id: str, repetition: int, status: RunStatus, **extra: object) -> RunRecord:
    return RunRecord(
        task_id=task_id, repetition=repetition, seed=repetition, status=status, measured=MEASURED, **extra
    )  # type: ignore[arg-type]


@st.composite
def reports(draw: st.DrawFn) -> list[ReportRuns]:
    count = draw(st.integers(2, 5))
    found = []
    for index in range(count):
        runs = [
            run(task_id, rep, status)
            for task_id in draw(st.lists(st.sampled_from(TASKS), min_size=1, max_size=3, unique=True))
            for rep, status in enumerate(draw(st.lists(statuses, min_size=1, max_size=6)))
        ]
        found.append(ReportRuns(label=f"r{index}", suite_id="s", suite_version="1.0.0", runs=tuple(runs)))
    return found


def stable_of(given_reports: list[ReportRuns]) -> Stability:
    result = stability(given_reports)
    assert isinstance(result, Success)
    return result.unwrap()


@given(reports())
def test_pooled_counts_are_the_sums_and_rates_lie_in_their_intervals(given_reports: list[ReportRuns]) -> None:
    for task in stable_of(given_reports).tasks:
        assert task.passes == sum(r.passes for r in task.reports)
        assert task.judged == sum(r.judged for r in task.reports)
        if task.rate is not None and task.interval is not None:
            assert task.interval.low <= task.rate <= task.interval.high
        assert 0.0 <= task.flip_rate <= 1.0


@given(reports())
def test_a_mixed_report_is_a_flip_and_unstable_tasks_come_first(given_reports: list[ReportRuns]) -> None:
    result = stable_of(given_reports)
    for task in result.tasks:
        for rate in task.reports:
            if 0 < rate.passes < rate.judged:
                assert rate.flipped and rate.why == "mixed" and task.unstable
    flip_rates = [task.flip_rate for task in result.tasks]
    assert flip_rates == sorted(flip_rates, reverse=True)
    assert result.unstable == tuple(task.task_id for task in result.tasks if task.flips > 0)


@given(reports(), st.randoms(use_true_random=False))
def test_report_order_does_not_change_flips(given_reports: list[ReportRuns], rng: object) -> None:
    shuffled = list(given_reports)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    left = {t.task_id: (t.flips, t.passes, t.judged) for t in stable_of(given_reports).tasks}
    right = {t.task_id: (t.flips, t.passes, t.judged) for t in stable_of(shuffled).tasks}
    assert left == right


@given(st.lists(st.booleans(), min_size=1, max_size=8), st.integers(2, 5))
def test_the_same_outcome_in_every_report_never_flips(outcomes: list[bool], count: int) -> None:
    """Every run passes, or every run fails, in every report: flip rate 0."""
    status = RunStatus.PASS if outcomes[0] else RunStatus.FAIL
    same = [
        ReportRuns(
            label=f"r{i}",
            suite_id="s",
            suite_version="1",
            runs=tuple(run("a", r, status) for r in range(len(outcomes))),
        )
        for i in range(count)
    ]
    (task,) = stable_of(same).tasks
    assert task.flip_rate == 0.0 and not task.unstable and task.hints == ()


def test_different_versions_and_one_report_are_refused() -> None:
    one = ReportRuns(label="x", suite_id="s", suite_version="1.0.0", runs=(run("a", 0, RunStatus.PASS),))
    other = ReportRuns(label="y", suite_id="s", suite_version="1.1.0", runs=(run("a", 0, RunStatus.PASS),))
    assert isinstance(stability([one]), Failure)
    refused = stability([one, other])
    assert isinstance(refused, Failure)
    assert "y is s 1.1.0, but x is s 1.0.0" in refused.failure()


@given(st.integers(1, 6), st.integers(0, 6))
def test_hints_name_a_budget_every_failure_shares(fails: int, passes: int) -> None:
    runs = [run("a", i, RunStatus.BUDGET_EXCEEDED, reason="maxWallMs") for i in range(fails)]
    runs += [run("a", fails + i, RunStatus.PASS) for i in range(passes)]
    assert failure_hints(runs)[0] == "fails only by maxWallMs"


@given(st.integers(1, 6), st.integers(0, 6))
def test_hints_count_timeouts_and_incidents_only_in_failures(timeouts: int, other: int) -> None:
    timed_out = VerifierResult(
        id="check", kind="command", status=VerifierStatus.FAIL, detail="timed out after 5 ms"
    )
    wrong = VerifierResult(id="check", kind="command", status=VerifierStatus.FAIL, detail="exit 1")
    compaction = (Incident(kind="compaction"),)
    runs = [
        run("a", i, RunStatus.FAIL, verifiers=(timed_out,), incidents=compaction) for i in range(timeouts)
    ]
    runs += [run("a", 50 + i, RunStatus.FAIL, verifiers=(wrong,), incidents=compaction) for i in range(other)]
    runs.append(run("a", 99, RunStatus.PASS))
    hints = failure_hints(runs)
    assert f"check timeout in {timeouts} of {timeouts + other} failures" in hints
    assert "fails only after compaction" in hints


def result(status: VerifierStatus, verifier_id: str = "check") -> VerifierResult:
    return VerifierResult(id=verifier_id, kind="command", status=status, detail="d")


@given(st.lists(st.sampled_from(list(VerifierStatus)), min_size=1, max_size=4))
def test_selfcheck_flags_a_passing_noop_and_differing_repeats(noop: list[VerifierStatus]) -> None:
    observation = TaskObservation(
        task_id="t",
        noop=tuple(result(s, f"v{i}") for i, s in enumerate(noop)),
        repeats=(
            VerifierRepeat(id="v0", statuses=tuple(noop), durations_ms=(1,) * len(noop), timeout_ms=10),
        ),
    )
    check = judge_task(observation)
    all_pass = all(s is VerifierStatus.PASS for s in noop)
    assert (check.noop == "PASSES") == all_pass
    assert (check.repeat == "DIFFERS") == (len(set(noop)) > 1)
    assert bool(check.flags) == (check.noop != "fails" or check.repeat == "DIFFERS")


@given(st.lists(st.sampled_from(list(VerifierStatus)), min_size=1, max_size=4), st.integers(1, 500))
def test_a_selfcheck_task_line_names_its_cells_and_its_first_flag_cut_short(
    noop: list[VerifierStatus], total: int
) -> None:
    """``[i/n] id: no-op X, oracle Y, repeat Z``, then the first flag (at most 120 characters) when flagged."""
    observation = TaskObservation(
        task_id="t",
        noop=tuple(result(s, f"v{i}") for i, s in enumerate(noop)),
        repeats=(
            VerifierRepeat(id="v0", statuses=tuple(noop), durations_ms=(1,) * len(noop), timeout_ms=10),
        ),
    )
    check = judge_task(observation)
    line = task_line(total, total, check)
    head = f"[{total}/{total}] t: no-op {check.noop}, oracle {check.oracle}, repeat {check.repeat}"
    assert line.startswith(head)
    if not check.flags:
        assert line == f"{head} ({check.runs}x)"
    else:
        flag = line.split(": flagged: ", 1)[1].split(" (and ")[0]
        assert len(flag) <= 120 and check.flags[0].startswith(flag.removesuffix("…"))
        assert (" (and " in line) == (len(check.flags) > 1)
