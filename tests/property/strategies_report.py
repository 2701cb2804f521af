"""Generators for run records, conditions and reports, plus a plain builder for fixed examples."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st

from alisio.core.lab.outputs.formats import SCRIPTED_PROVIDER
from alisio.core.lab.reports.report import AnswerSource, CompactionSettings, Conditions, Rates, Report
from alisio.core.lab.runs.records import (
    Divergence,
    Incident,
    Measured,
    RunRecord,
    RunStatus,
    VerifierResult,
    VerifierStatus,
)

TASK_IDS = ("alpha", "beta", "gamma", "delta")

# Lists of records are slow to generate (about 15 draws per record); under the dev and ci profiles the
# record-list properties run 75 examples, under ``thorough`` the profile's full count.
record_lists_settings = settings(
    max_examples=75 if settings.default.max_examples <= 200 else settings.default.max_examples
)
REASONS = {RunStatus.BUDGET_EXCEEDED: "maxWallMs", RunStatus.ERROR: "provider_network"}

ANY_TASK = st.sampled_from(TASK_IDS)
ANY_STATUS = st.sampled_from(list(RunStatus))
counts = st.integers(min_value=0, max_value=500)
tokens = st.integers(min_value=0, max_value=2_000_000)


@st.composite
def measured(draw: st.DrawFn, reported: bool | None = None) -> Measured:
    """A run's measured block; ``reported`` forces usage reported (True) or unreported (False)."""
    complete = draw(st.booleans()) if reported is None else reported
    inp = draw(tokens) if complete else draw(st.none() | tokens)
    cached = draw(st.none() | st.integers(min_value=0, max_value=inp or 0))
    return Measured(
        wall_ms=draw(st.integers(min_value=0, max_value=600_000)),
        turns=draw(counts),
        tool_calls=draw(counts),
        compactions=draw(st.integers(min_value=0, max_value=5)),
        usage_complete=complete,
        input_tokens=inp,
        output_tokens=draw(tokens) if complete else draw(st.none() | tokens),
        reasoning_tokens=draw(st.none() | tokens),
        cached_input_tokens=cached,
        cache_write_input_tokens=draw(st.none() | st.integers(min_value=0, max_value=inp or 0)),
        cached_partial=cached is not None and draw(st.booleans()),
    )


@st.composite
def run_records(
    draw: st.DrawFn,
    task_ids: st.SearchStrategy[str] = ANY_TASK,
    statuses: st.SearchStrategy[RunStatus] = ANY_STATUS,
    reported: bool | None = None,
    lean: bool = False,
) -> RunRecord:
    """One run record with any status, usage, incidents, verifiers and maybe a divergence.

    ``lean`` draws only what a report reads (status, measured, incident kinds): much faster to generate.
    """
    status = draw(statuses)
    if lean:
        kinds = draw(st.lists(st.sampled_from(("compaction", "usage_unreported")), max_size=2))
        return RunRecord(
            task_id=draw(task_ids),
            repetition=0,
            seed=0,
            status=status,
            reason=REASONS.get(status),
            measured=draw(measured(reported)),
            incidents=tuple(Incident(kind=kind) for kind in kinds),
        )
    verifier = st.builds(
        VerifierResult,
        id=st.sampled_from(("check", "scope")),
        kind=st.sampled_from(("command", "tree-diff-within")),
        status=st.sampled_from(list(VerifierStatus)),
        detail=st.text(max_size=20),
    )
    divergence = st.builds(
        Divergence,
        call_index=st.integers(0, 50),
        field=st.just("messages[3].tool.result"),
        expected=st.text(max_size=10),
        actual=st.text(max_size=10),
    )
    return RunRecord(
        task_id=draw(task_ids),
        repetition=draw(st.integers(0, 20)),
        seed=draw(st.integers(0, 2**31)),
        status=status,
        reason=REASONS.get(status),
        verifiers=tuple(draw(st.lists(verifier, max_size=2))),
        measured=draw(measured(reported)),
        incidents=tuple(
            draw(
                st.lists(
                    st.builds(
                        Incident,
                        kind=st.sampled_from(("compaction", "usage_unreported")),
                        message=st.text(max_size=8),
                    ),
                    max_size=3,
                )
            )
        ),
        errors=tuple(draw(st.lists(st.text(max_size=10), max_size=2))),
        divergence=draw(st.none() | divergence),
        variant=draw(st.none() | st.just("early-compaction")),
        config_hash=draw(st.sampled_from(("c0ffee", "beef"))),
    )


def conditions(
    mode: AnswerSource = AnswerSource.LIVE,
    k: int = 5,
    suite_version: str = "1.0.0",
    suite_hash: str = "hash-1",
    rates: Rates | None = None,
    compaction: CompactionSettings | None = None,
    harness_version: str = "0.1.0",
    suite_id: str = "demo",
    provider: str = "openai-compat",
    endpoint: str | None = None,
    model: str = "model-a",
    config_hash: str = "cfg-1",
) -> Conditions:
    """Conditions with sensible defaults; override what a test is about."""
    return Conditions(
        suite_id=suite_id,
        suite_version=suite_version,
        suite_hash=suite_hash,
        harness_version=harness_version,
        config_hash=config_hash,
        provider=provider,
        model=model,
        endpoint=endpoint,
        mode=mode,
        k=k,
        seed=42,
        compaction=compaction or CompactionSettings(threshold=0.8, max_context_chars=200_000),
        rates=rates,
        run_id="run-1",
        created_at="2026-01-01T00:00:00Z",
    )


conditions_strategy = st.builds(
    conditions,
    mode=st.sampled_from(list(AnswerSource)),
    k=st.integers(1, 10),
    rates=st.none() | st.builds(Rates, input_rate=st.floats(0, 20), output_rate=st.floats(0, 60)),
)


def task_runs(
    task_id: str,
    passes: int,
    fails: int = 0,
    budget_exceeded: int = 0,
    errors: int = 0,
    *,
    wall_ms: int = 30_000,
    input_tokens: int | None = 10_000,
    output_tokens: int | None = 1_000,
    cached_input_tokens: int | None = None,
) -> list[RunRecord]:
    """Plain records for one task: ``passes`` pass, then fail, budget_exceeded and error runs."""
    statuses = (
        [RunStatus.PASS] * passes
        + [RunStatus.FAIL] * fails
        + [RunStatus.BUDGET_EXCEEDED] * budget_exceeded
        + [RunStatus.ERROR] * errors
    )
    return [
        RunRecord(
            task_id=task_id,
            repetition=i,
            seed=42 + i,
            status=status,
            reason=REASONS.get(status),
            measured=Measured(
                wall_ms=wall_ms + 1000 * i,
                turns=4,
                tool_calls=6,
                compactions=0,
                usage_complete=input_tokens is not None,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cached_input_tokens=cached_input_tokens,
            ),
            config_hash="cfg-1",
        )
        for i, status in enumerate(statuses)
    ]


MODES = ("live", "replay", "scripted", "variants", "resumed", "interrupted")
"""The ways a report comes to be, as ``eval compare`` meets them."""


@st.composite
def reports_of_mode(draw: st.DrawFn, mode: str | None = None) -> Report:
    """A report as one mode writes it: live (with an endpoint), replay and scripted (none), one variant of a
    variants run, a resumed run (with retried runs) or an interrupted one (fewer runs than planned)."""
    from alisio.core.lab.reports.report_build import build_report

    mode = mode or draw(st.sampled_from(MODES))
    live = AnswerSource.REPLAY if mode == "replay" else AnswerSource.LIVE
    provider = {"scripted": SCRIPTED_PROVIDER, "replay": "replay"}.get(mode, "openai-compat")
    endpoint = None if mode in ("replay", "scripted") else "http://127.0.0.1:8080/v1"
    k = draw(st.integers(1, 6))
    tasks = draw(st.lists(st.sampled_from(TASK_IDS), min_size=0, max_size=3, unique=True))
    records: list[RunRecord] = []
    for task in tasks:
        statuses = draw(st.lists(ANY_STATUS, min_size=1, max_size=k))
        records += task_runs(
            task,
            statuses.count(RunStatus.PASS),
            statuses.count(RunStatus.FAIL),
            statuses.count(RunStatus.BUDGET_EXCEEDED),
            statuses.count(RunStatus.ERROR),
            input_tokens=draw(st.none() | st.just(1_000)),
        )
    cond = conditions(
        mode=live,
        k=k,
        provider=provider,
        endpoint=endpoint,
        config_hash="cfg-variant" if mode == "variants" else "cfg-1",
        rates=draw(st.none() | st.just(Rates(input_rate=1.0, output_rate=4.0))),
    )
    interrupted = mode == "interrupted"
    return build_report(
        records,
        cond,
        planned_runs=len(tasks) * k + (3 if interrupted else 0),
        interrupted=interrupted,
        stopped="Ctrl-C" if interrupted else None,
        retried=draw(st.integers(1, 3)) if mode == "resumed" else 0,
    )
