"""From what a run did to its ``RunRecord``: the status, the measured block and the exit code of a command.

Rules this module keeps:

- The status has a priority, first match wins:

  1. ``error``: the run could not be set up (``setup_error``, e.g. the fixture copy failed), the agent loop
     ended ``error`` (provider network or auth, config), the verifiers gave a result list whose length is not
     the task's number of verifiers (``verifier_results_mismatch``: a verifier kind the shell forgot would
     otherwise let a run pass on its other verifiers), or any verifier could not run (status error). Reason:
     the setup error's, else the loop's, else ``verifier_results_mismatch``, else ``verifier_error``. An
     error is infrastructure: it is excluded from every rate;
  2. ``fail`` with reason ``verifier_tampered``: the agent changed a file its verifiers read
     (``alisio.core.lab.judges.integrity``), whatever the verifiers then said of the restored originals and
     whatever stopped the loop, as long as the loop did not end ``error``;
  3. ``budget_exceeded``: the loop stopped at a budget; the reason is the budget name (``maxTurns``...);
  4. ``fail``: a verifier failed;
  5. ``pass``: every verifier passed, and there was at least one. A pass needs positive evidence: a run with
     no verifier result at all is an ``error`` (``no_verifier_results``), never a pass.
- Measured values are read off the event log only. Tokens are main-loop tokens (``purpose == "main"``); the
  usage of compaction calls is never added. ``usageComplete`` is true when at least one main-loop request was
  made and every one got a response reporting both input and output tokens. Input and output totals are
  summed over the responses that reported them and are absent (never 0) when none did, a run that made no
  main-loop request included (an external agent killed before its first call finished: its usage was never
  reported, so it reads "not reported", never 0); reasoning tokens only when every main response reported them. Cached input is summed over
  the responses that reported it, absent when none did, and ``cachedPartial`` when only some main requests
  got a response that reported it.
- ``exit_code_for``: 1 when any run ended error (the report is still written), else 0 whatever passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from alisio.core.base import Frozen
from alisio.core.exit_codes import ExitCode
from alisio.core.harness.events import (
    Compacted,
    Event,
    IncidentRaised,
    ProviderRequested,
    ProviderResponded,
    RunEnded,
    RunOutcome,
    ToolCalled,
)
from alisio.core.lab.judges.integrity import TAMPERED
from alisio.core.lab.runs.records import (
    TOOL_NAME_MAX,
    TOOL_SEQUENCE_MAX,
    Incident,
    Measured,
    RunRecord,
    RunStatus,
    VerifierResult,
    VerifierStatus,
)
from alisio.core.lab.suites.schedule import RunSpec

__all__ = ["SetupError", "exit_code_for", "measured_from", "record_from_run", "status_of"]


class SetupError(Frozen, frozen=True, kw_only=True):
    """Infrastructure that broke around the agent loop (the run never started, or was not judged)."""

    reason: str
    """The record's reason, e.g. ``fixture_copy``."""
    message: str
    """One line for the user, naming what broke (the fixture, the verifier...)."""


def status_of(
    outcome: RunOutcome | None,
    reason: str | None,
    verifiers: Sequence[VerifierResult],
    setup_error: SetupError | None = None,
    *,
    expected: int,
    tampered: bool = False,
) -> tuple[RunStatus, str | None]:
    """The run's status and reason, by the priority in the module docstring.

    Args:
        outcome: how the agent loop ended; ``None`` when it did not run.
        reason: the loop's reason (the budget name, or the cause of an error).
        verifiers: the verifier results (may be empty when the run never reached them).
        setup_error: what broke around the loop, if anything.
        expected: how many verifiers the task declares (a non-empty ``verifiers`` of another length is an
            ``error``).
        tampered: the agent changed a protected file (a ``fail``, reason ``verifier_tampered``).
    """
    if setup_error is not None:
        return RunStatus.ERROR, setup_error.reason
    if outcome is None:
        return RunStatus.ERROR, "not_run"
    if outcome == "error":
        return RunStatus.ERROR, reason or "agent_error"
    if tampered:
        return RunStatus.FAIL, TAMPERED
    if verifiers and len(verifiers) != expected:
        return RunStatus.ERROR, "verifier_results_mismatch"
    if any(v.status is VerifierStatus.ERROR for v in verifiers):
        return RunStatus.ERROR, "verifier_error"
    if outcome == "budget_exceeded":
        return RunStatus.BUDGET_EXCEEDED, reason or "budget"
    if not verifiers:
        return RunStatus.ERROR, "no_verifier_results"
    if any(v.status is VerifierStatus.FAIL for v in verifiers):
        return RunStatus.FAIL, None
    return RunStatus.PASS, None


def _sum_reported(values: Sequence[int | None]) -> int | None:
    """The sum of the reported values; ``None`` when none was reported."""
    reported = [value for value in values if value is not None]
    return sum(reported) if reported else None


def measured_from(events: Sequence[Event]) -> Measured:
    """The measured block of a run, from its event log (see the module docstring for the token rules)."""
    requests = 0
    responses: list[ProviderResponded] = []
    tool_calls = compactions = wall_ms = 0
    tools: list[str] = []
    turns: int | None = None
    for event in events:
        wall_ms = max(wall_ms, event.elapsed_ms)
        match event:
            case ProviderRequested(purpose="main"):
                requests += 1
            case ProviderResponded(purpose="main"):
                responses.append(event)
            case ToolCalled(name=name):
                tool_calls += 1
                if len(tools) < TOOL_SEQUENCE_MAX:
                    tools.append(name[:TOOL_NAME_MAX])
            case Compacted():
                compactions += 1
            case RunEnded(turns=ended_turns):
                turns = ended_turns
            case _:
                pass
    usages = [r.usage for r in responses]
    inputs = [u.input_tokens if u is not None else None for u in usages]
    outputs = [u.output_tokens if u is not None else None for u in usages]
    reasoning = [u.reasoning_tokens if u is not None else None for u in usages]
    cached = [u.cached_input_tokens if u is not None else None for u in usages]
    written = [u.cache_write_input_tokens if u is not None else None for u in usages]
    answered = 0 < requests == len(responses)
    complete = answered and all(i is not None and o is not None for i, o in zip(inputs, outputs, strict=True))
    cached_count = sum(value is not None for value in cached)
    input_tokens, output_tokens = _sum_reported(inputs), _sum_reported(outputs)
    all_reasoning = requests > 0 and answered and all(value is not None for value in reasoning)
    responded = [e for e in events if isinstance(e, ProviderResponded)]  # compaction calls too
    return Measured(
        wall_ms=wall_ms,
        turns=turns if turns is not None else requests,
        tool_calls=tool_calls,
        compactions=compactions,
        usage_complete=complete,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        reasoning_tokens=_sum_reported(reasoning) if all_reasoning else None,
        cached_input_tokens=_sum_reported(cached),
        cache_write_input_tokens=_sum_reported(written),
        cached_partial=0 < cached_count < requests,
        first_event_ms=tuple(r.first_event_ms for r in responded if r.first_event_ms is not None),
        served_models=_distinct(r.served_model for r in responded),
        system_fingerprints=_distinct(r.system_fingerprint for r in responded),
        tool_sequence=tuple(tools),
    )


def record_from_run(
    spec: RunSpec,
    events: Sequence[Event],
    outcome: RunOutcome | None,
    reason: str | None,
    verifiers: Sequence[VerifierResult],
    *,
    config_hash: str,
    error: str | None = None,
    setup_error: SetupError | None = None,
    expected_verifiers: int = 0,
    tampered: str | None = None,
) -> RunRecord:
    """The ``RunRecord`` of one finished run.

    Args:
        spec: the planned run (task, repetition, seed, variant).
        events: the run's event log (empty when the agent loop never ran).
        outcome, reason: how the loop ended (``RunResult.outcome``/``reason``); ``outcome`` is ``None`` when
            the loop did not run.
        verifiers: the verifier results, in suite order.
        config_hash: the hash of the measured configuration the run used.
        error: the loop's one-line error message (``RunResult.message``), kept in ``errors``.
        setup_error: what broke around the loop (fixture copy...), which makes the run ``error``.
        expected_verifiers: how many verifiers the task declares (``len(task.verifiers)``); left at 0, any
            verifier result makes the run ``error`` (``verifier_results_mismatch``), never a pass.
        tampered: what the agent changed of its protected files (``integrity.tamper_message``), when it
            did: the run fails (``verifier_tampered``) and the record holds an incident of that kind.

    Returns:
        The record: status and reason by ``status_of``, measured by ``measured_from``, incidents in event
        order, and ``errors`` holding the setup error, the loop's message and each verifier error, in order.
    """
    status, why = status_of(
        outcome, reason, verifiers, setup_error, expected=expected_verifiers, tampered=tampered is not None
    )
    errors: list[str] = []
    if setup_error is not None:
        errors.append(setup_error.message)
    if error:
        errors.append(error)
    errors += [
        f"verifier {v.id}: {v.detail}" if v.detail else f"verifier {v.id}: could not run"
        for v in verifiers
        if v.status is VerifierStatus.ERROR
    ]
    return RunRecord(
        task_id=spec.task_id,
        repetition=spec.repetition,
        seed=spec.seed,
        status=status,
        reason=why,
        verifiers=tuple(verifiers),
        measured=measured_from(events),
        incidents=_incidents(events, tampered),
        errors=tuple(errors),
        variant=spec.variant,
        config_hash=config_hash,
    )


def _incidents(events: Sequence[Event], tampered: str | None) -> tuple[Incident, ...]:
    """The run's incidents in event order, then its tampering (found once the agent stopped)."""
    found = [Incident(kind=str(e.kind), message=e.message) for e in events if isinstance(e, IncidentRaised)]
    return (*found, Incident(kind=TAMPERED, message=tampered)) if tampered is not None else tuple(found)


def _distinct(values: Iterable[str | None]) -> tuple[str, ...]:
    """The values that are not ``None``, each once, in order of first appearance."""
    return tuple(dict.fromkeys(value for value in values if value is not None))


def exit_code_for(records: Sequence[RunRecord]) -> ExitCode:
    """The exit code of a lab command's runs: ``FAILURE`` (1) when any run ended error, else ``OK`` (0).

    A replay divergence is an error run too; the command gives it ``DIVERGED`` (2) before this applies.
    """
    if any(record.divergence is not None for record in records):
        return ExitCode.DIVERGED
    return ExitCode.FAILURE if any(record.status is RunStatus.ERROR for record in records) else ExitCode.OK
