"""Properties of alisio.core.lab.judges.outcome: status priority, measured values read off the event log, the exit code."""

from __future__ import annotations

from hypothesis import assume, example, given
from hypothesis import strategies as st
from returns.result import Success

from alisio.core.harness.events import (
    Event,
    ProviderRequested,
    ProviderResponded,
    RunEnded,
    RunOutcome,
    ToolCalled,
)
from alisio.core.harness.protocol import Usage
from alisio.core.lab.judges.outcome import (
    SetupError,
    exit_code_for,
    measured_from,
    record_from_run,
    status_of,
)
from alisio.core.lab.runs.records import (
    TOOL_NAME_MAX,
    TOOL_SEQUENCE_MAX,
    RunRecord,
    RunStatus,
    VerifierResult,
    VerifierStatus,
    decode_runs,
    encode_runs,
)
from alisio.core.lab.suites.schedule import RunSpec
from tests.property.strategies_lab import (
    LogModel,
    event_logs,
    outcomes,
    run_specs,
    setup_errors,
    verifier_lists,
)
from tests.property.strategies_report import run_records

BUDGETS = st.sampled_from(["maxTurns", "maxWallMs", "maxTokens", "maxToolCalls"])


@given(outcomes, BUDGETS, verifier_lists, setup_errors)
def test_setup_error_wins(
    outcome: RunOutcome | None, reason: str, verifiers: tuple[VerifierResult, ...], setup: SetupError | None
) -> None:
    """A setup error makes the run error with the setup's reason, whatever happened after."""
    status, why = status_of(outcome, reason, verifiers, setup, expected=len(verifiers))
    if setup is not None:
        assert (status, why) == (RunStatus.ERROR, setup.reason)


@given(outcomes, BUDGETS, verifier_lists, setup_errors)
def test_any_verifier_error_or_loop_error_is_error(
    outcome: RunOutcome | None, reason: str, verifiers: tuple[VerifierResult, ...], setup: SetupError | None
) -> None:
    """A loop that ended error, or a verifier that could not run, makes the run error (not judged)."""
    status, _ = status_of(outcome, reason, verifiers, setup, expected=len(verifiers))
    if outcome in (None, "error") or any(v.status is VerifierStatus.ERROR for v in verifiers):
        assert status is RunStatus.ERROR


@given(outcomes, BUDGETS, verifier_lists, setup_errors)
def test_pass_needs_positive_evidence(
    outcome: RunOutcome | None, reason: str, verifiers: tuple[VerifierResult, ...], setup: SetupError | None
) -> None:
    """pass iff the loop completed, nothing broke, and at least one verifier ran and all passed."""
    status, why = status_of(outcome, reason, verifiers, setup, expected=len(verifiers))
    expected = (
        setup is None
        and outcome == "completed"
        and len(verifiers) > 0
        and all(v.status is VerifierStatus.PASS for v in verifiers)
    )
    assert (status is RunStatus.PASS) == expected
    if status is RunStatus.PASS:
        assert why is None


@given(outcomes, BUDGETS, verifier_lists, setup_errors)
def test_budget_exceeded_names_the_budget(
    outcome: RunOutcome | None, reason: str, verifiers: tuple[VerifierResult, ...], setup: SetupError | None
) -> None:
    """budget_exceeded only when the loop stopped at a budget and nothing broke; the reason is the budget."""
    status, why = status_of(outcome, reason, verifiers, setup, expected=len(verifiers))
    if status is RunStatus.BUDGET_EXCEEDED:
        assert outcome == "budget_exceeded"
        assert why == reason
    broken = setup is not None or any(v.status is VerifierStatus.ERROR for v in verifiers)
    if outcome == "budget_exceeded" and not broken:
        assert (status, why) == (RunStatus.BUDGET_EXCEEDED, reason)


@given(outcomes, BUDGETS, verifier_lists, setup_errors)
def test_fail_means_a_verifier_failed(
    outcome: RunOutcome | None, reason: str, verifiers: tuple[VerifierResult, ...], setup: SetupError | None
) -> None:
    """fail iff the loop completed, nothing broke and some verifier failed."""
    status, _ = status_of(outcome, reason, verifiers, setup, expected=len(verifiers))
    expected = (
        setup is None
        and outcome == "completed"
        and not any(v.status is VerifierStatus.ERROR for v in verifiers)
        and any(v.status is VerifierStatus.FAIL for v in verifiers)
    )
    assert (status is RunStatus.FAIL) == expected


@given(outcomes, BUDGETS, verifier_lists, setup_errors, st.integers(min_value=0, max_value=8))
def test_a_result_list_of_another_length_than_the_tasks_verifiers_is_an_error(
    outcome: RunOutcome | None,
    reason: str,
    verifiers: tuple[VerifierResult, ...],
    setup: SetupError | None,
    expected: int,
) -> None:
    """Results for fewer (or more) verifiers than the task declares are never a pass, fail or budget stop: a
    verifier kind the shell skipped would otherwise let a run pass on its other verifiers."""
    assume(verifiers and len(verifiers) != expected)
    status, why = status_of(outcome, reason, verifiers, setup, expected=expected)
    assert status is RunStatus.ERROR
    if setup is None and outcome not in (None, "error"):
        assert why == "verifier_results_mismatch"


def test_one_verifier_result_short_of_the_task_is_not_a_pass() -> None:
    """Two passing results for a task of three verifiers: error, not pass."""
    passed = VerifierResult(id="v", kind="command", status=VerifierStatus.PASS)
    assert status_of("completed", None, (passed, passed), expected=3) == (
        RunStatus.ERROR,
        "verifier_results_mismatch",
    )
    assert status_of("completed", None, (passed, passed), expected=2) == (RunStatus.PASS, None)


def test_no_verifier_results_is_not_a_pass() -> None:
    """A completed run with no verifier result is an error (no evidence), never a pass."""
    assert status_of("completed", None, (), expected=1) == (RunStatus.ERROR, "no_verifier_results")


def _answered(model: LogModel) -> list[Usage | None]:
    return [turn.usage for turn in model.turns if turn.responded]


@given(event_logs())
def test_main_tokens_are_the_reported_sums(log: tuple[tuple[Event, ...], LogModel]) -> None:
    """Input and output tokens are sums over main responses that reported them; absent (not 0) when none did,
    a run without any main request included (its usage was never reported)."""
    events, model = log
    measured = measured_from(events)
    usages = [u for u in _answered(model) if u is not None]
    inputs = [u.input_tokens for u in usages if u.input_tokens is not None]
    outputs = [u.output_tokens for u in usages if u.output_tokens is not None]
    assert measured.input_tokens == (sum(inputs) if inputs else None)
    assert measured.output_tokens == (sum(outputs) if outputs else None)


@given(event_logs())
def test_usage_complete_iff_every_main_request_reported(log: tuple[tuple[Event, ...], LogModel]) -> None:
    """usageComplete iff there was a main request and every one got a response reporting input and output
    tokens."""
    events, model = log
    expected = bool(model.turns) and all(
        t.responded
        and t.usage is not None
        and t.usage.input_tokens is not None
        and t.usage.output_tokens is not None
        for t in model.turns
    )
    assert measured_from(events).usage_complete == expected


@given(event_logs())
def test_cached_input_and_partial(log: tuple[tuple[Event, ...], LogModel]) -> None:
    """Cached input sums what was reported (absent when nothing was); partial when only some turns reported."""
    events, model = log
    measured = measured_from(events)
    cached = [
        u.cached_input_tokens for u in _answered(model) if u is not None and u.cached_input_tokens is not None
    ]
    assert measured.cached_input_tokens == (sum(cached) if cached else None)
    assert measured.cached_partial == (0 < len(cached) < len(model.turns))


@given(event_logs())
def test_reasoning_only_when_every_turn_reported(log: tuple[tuple[Event, ...], LogModel]) -> None:
    """Reasoning tokens are present only when every main request got a response reporting them."""
    events, model = log
    reasoning = [t.usage.reasoning_tokens if t.responded and t.usage else None for t in model.turns]
    measured = measured_from(events)
    if model.turns and all(r is not None for r in reasoning):
        assert measured.reasoning_tokens == sum(r for r in reasoning if r is not None)
    else:
        assert measured.reasoning_tokens is None


@given(event_logs())
def test_counts_and_wall_time(log: tuple[tuple[Event, ...], LogModel]) -> None:
    """Turns, tool calls and compactions are counted off the log; wall time is the last event's time."""
    events, model = log
    measured = measured_from(events)
    assert measured.tool_calls == sum(t.tools for t in model.turns if t.responded)
    assert measured.compactions == len(model.compactions)
    assert measured.turns == len(model.turns)
    assert measured.wall_ms == (events[-1].elapsed_ms if events else 0)
    called = [e.name for e in events if isinstance(e, ToolCalled)]
    assert measured.tool_sequence == tuple(called) and len(called) == measured.tool_calls


def test_the_tool_sequence_is_capped_in_length_and_name() -> None:
    """A run of more calls than ``TOOL_SEQUENCE_MAX`` keeps the first ones, each name cut to
    ``TOOL_NAME_MAX`` characters; the count stays the true one."""
    long = "x" * (TOOL_NAME_MAX + 10)
    events = [
        ToolCalled(
            seq=i, elapsed_ms=i, call_id=f"c{i}", name=long if i == 0 else "bash", arguments="{}", effect=None
        )
        for i in range(TOOL_SEQUENCE_MAX + 5)
    ]
    measured = measured_from(events)
    assert measured.tool_calls == TOOL_SEQUENCE_MAX + 5 and len(measured.tool_sequence) == TOOL_SEQUENCE_MAX
    assert measured.tool_sequence[0] == "x" * TOOL_NAME_MAX and measured.tool_sequence[1] == "bash"


@given(
    event_logs(), st.builds(Usage, input_tokens=st.integers(1, 10**6), output_tokens=st.integers(1, 10**6))
)
def test_compaction_usage_is_never_main(log: tuple[tuple[Event, ...], LogModel], usage: Usage) -> None:
    """Adding a compaction call with usage changes no main-loop token figure."""
    events, _ = log
    extra: tuple[Event, ...] = (
        ProviderRequested(seq=0, elapsed_ms=0, call=99, turn=1, purpose="compaction", fingerprint="f", message_count=1),
        ProviderResponded(seq=1, elapsed_ms=0, call=99, purpose="compaction", finish_reason="stop", usage=usage,
                          text_chars=1, tool_calls=0, duration_ms=1),
    )  # fmt: skip
    before, after = measured_from(events), measured_from(extra + events)
    assert (before.input_tokens, before.output_tokens, before.usage_complete, before.cached_input_tokens) == (
        after.input_tokens,
        after.output_tokens,
        after.usage_complete,
        after.cached_input_tokens,
    )


@example(
    events=(
        ProviderRequested(
            seq=0, elapsed_ms=0, call=0, turn=1, purpose="main", fingerprint="f", message_count=1
        ),
        RunEnded(seq=1, elapsed_ms=5, outcome="budget_exceeded", reason="maxWallMs", turns=1),
    )
)
@given(event_logs().map(lambda log: log[0]))
def test_an_unanswered_request_is_not_complete(events: tuple[Event, ...]) -> None:
    """A main request cut off before its response (e.g. at maxWallMs) leaves usage incomplete."""
    requests = sum(isinstance(e, ProviderRequested) and e.purpose == "main" for e in events)
    responses = sum(isinstance(e, ProviderResponded) and e.purpose == "main" for e in events)
    if responses < requests:
        assert not measured_from(events).usage_complete


@given(run_specs, event_logs(), outcomes, verifier_lists, setup_errors, st.none() | st.text(max_size=10))
def test_record_carries_spec_incidents_and_round_trips(
    spec: RunSpec,
    log: tuple[tuple[Event, ...], LogModel],
    outcome: RunOutcome | None,
    verifiers: tuple[VerifierResult, ...],
    setup: SetupError | None,
    message: str | None,
) -> None:
    """The record names the spec's task, repetition, seed and variant, keeps incidents in order, and
    survives runs.jsonl."""
    events, model = log
    record = record_from_run(
        spec,
        events,
        outcome,
        "maxTurns",
        verifiers,
        config_hash="h",
        error=message,
        setup_error=setup,
        expected_verifiers=len(verifiers),
    )
    assert (record.task_id, record.repetition, record.seed, record.variant) == (
        spec.task_id,
        spec.repetition,
        spec.seed,
        spec.variant,
    )
    assert [(i.kind, i.message) for i in record.incidents] == [(str(k), m) for k, m in model.incidents]
    assert record.verifiers == verifiers
    assert record.config_hash == "h"
    assert (record.status, record.reason) == status_of(
        outcome, "maxTurns", verifiers, setup, expected=len(verifiers)
    )
    if setup is not None:
        assert record.errors[0] == setup.message
    assert len(record.errors) == (setup is not None) + bool(message) + sum(
        v.status is VerifierStatus.ERROR for v in verifiers
    )
    assert decode_runs(encode_runs([record]), "runs.jsonl") == Success((record,))


@given(st.lists(run_records(), max_size=6))
def test_exit_code_is_two_on_a_divergence_else_one_iff_some_run_errored(records: list[RunRecord]) -> None:
    """Exit 2 when a replay diverged, else 1 when any run ended error (the report is still written), else 0."""
    diverged = any(r.divergence is not None for r in records)
    assert exit_code_for(records) == (
        2 if diverged else 1 if any(r.status is RunStatus.ERROR for r in records) else 0
    )
