"""Generators for the outputs people and CI read (report.md's run list, report.html, JUnit, the step summary):
hostile text, an arm's records with one record per (task, repetition), and transcripts."""

from __future__ import annotations

from hypothesis import strategies as st

from alisio.core.harness.events import (
    ApprovalDecided,
    BudgetStopped,
    Compacted,
    Effect,
    Event,
    IncidentKind,
    IncidentRaised,
    ProviderRequested,
    ProviderResponded,
    RunEnded,
    RunStarted,
    ToolCalled,
    ToolResulted,
)
from alisio.core.lab.runs.records import (
    Divergence,
    Measured,
    RunRecord,
    RunStatus,
    VerifierResult,
    VerifierStatus,
)
from tests.property.strategies_harness import usages
from tests.property.strategies_report import REASONS

SECRET = "sk-test-0123456789abcdefTOPSECRET"
"""A credential the tests pass as known: it must never appear in an output."""
KNOWN = (("OPENAI_API_KEY", SECRET),)

HOSTILE = (
    "<script>alert(1)</script>",
    "</pre><script>document.title='x'</script>",
    '"><img src=x onerror=alert(1)>',
    "]]></failure><error/>",
    "```\ncode\n````",
    "a\x00b\x1b[31mred\x1b[0m\x07",
    "& &amp; &lt; <!-- -->",
    "line one\nline two\nline three\nline four\nline five\nline six\nline seven",
    f"key {SECRET} in the output",
    "x" * 400,
)
hostile_text = st.one_of(
    st.text(max_size=30),
    st.sampled_from(HOSTILE),
    st.lists(st.sampled_from(HOSTILE), max_size=3).map("".join),
)

TASKS = ("alpha", "beta", "fix-add", "g.h_i-9")
MEASURED = st.sampled_from(
    [
        Measured(wall_ms=0, turns=0, tool_calls=0, compactions=0, usage_complete=False),
        Measured(
            wall_ms=12_345,
            turns=4,
            tool_calls=6,
            compactions=1,
            usage_complete=True,
            input_tokens=900,
            output_tokens=80,
        ),
        Measured(
            wall_ms=600_000, turns=30, tool_calls=40, compactions=0, usage_complete=False, input_tokens=5
        ),
    ]
)
"""What a run measured does not change what these outputs say about it: a few fixed values keep the
generation fast."""


@st.composite
def arm_records(draw: st.DrawFn, max_size: int = 12, k: int = 5) -> tuple[RunRecord, ...]:
    """An arm's records: at most one per (task, repetition < k), any status, verifiers and errors with
    hostile text."""
    keys = draw(
        st.lists(st.tuples(st.sampled_from(TASKS), st.integers(0, k - 1)), unique=True, max_size=max_size)
    )
    verifier = st.builds(
        VerifierResult,
        id=st.sampled_from(("check", "scope", "seq")),
        kind=st.sampled_from(("command", "tree-diff-within", "tool-sequence")),
        status=st.sampled_from(list(VerifierStatus)),
        detail=hostile_text,
    )
    records = []
    for task, rep in keys:
        status = draw(st.sampled_from(list(RunStatus)))
        divergence = None
        if status is RunStatus.ERROR and draw(st.booleans()):
            divergence = Divergence(call_index=1, field="messages[3].tool.result", expected="a", actual="b")
        records.append(
            RunRecord(
                task_id=task,
                repetition=rep,
                seed=rep,
                status=status,
                reason=REASONS.get(status),
                verifiers=tuple(draw(st.lists(verifier, max_size=3))),
                measured=draw(MEASURED),
                errors=tuple(draw(st.lists(hostile_text, max_size=2))) if status is RunStatus.ERROR else (),
                divergence=divergence,
            )
        )
    return tuple(records)


@st.composite
def transcripts(draw: st.DrawFn, big: bool = False) -> tuple[Event, ...]:
    """A run's events in order, with hostile text; ``big`` makes tool results and texts up to 64 KiB."""
    text = st.text(alphabet="abc xyz\n", min_size=0, max_size=65_536) if big else hostile_text
    events: list[Event] = [
        RunStarted(
            seq=0,
            elapsed_ms=0,
            prompt=draw(text),
            provider="scripted",
            model="m",
            policy_mode="auto",
            config_hash="c",
            harness_version="0.1.0",
        )
    ]
    turns = draw(st.integers(0, 6 if big else 4))
    for turn in range(1, turns + 1):
        n = len(events)
        events.append(
            ProviderRequested(
                seq=n,
                elapsed_ms=n,
                call=turn - 1,
                turn=turn,
                purpose="main",
                fingerprint="f",
                message_count=turn,
            )
        )
        calls = draw(st.integers(0, 2))
        events.append(
            ProviderResponded(
                seq=n + 1,
                elapsed_ms=n + 1,
                call=turn - 1,
                purpose="main",
                finish_reason="tool_calls" if calls else "stop",
                usage=draw(usages),
                text_chars=0,
                tool_calls=calls,
                duration_ms=10,
                text=draw(text),
            )
        )
        for index in range(calls):
            m = len(events)
            events.append(
                ToolCalled(
                    seq=m,
                    elapsed_ms=m,
                    call_id=f"c{turn}-{index}",
                    name="bash",
                    arguments=draw(
                        st.sampled_from(['{"command": "ls"}', "not json <b>", '{"path": "<script>"}'])
                    ),
                    effect=draw(st.none() | st.just(Effect.PROCESS)),
                )
            )
            events.append(
                ToolResulted(
                    seq=m + 1,
                    elapsed_ms=m + 1,
                    call_id=f"c{turn}-{index}",
                    name="bash",
                    ok=draw(st.booleans()),
                    output_excerpt=draw(text),
                    duration_ms=3,
                )
            )
    n = len(events)
    extras: list[Event] = [
        ApprovalDecided(
            seq=n, elapsed_ms=n, call_id="c", name="bash", effect=Effect.PROCESS, granted=False, by="headless"
        ),
        IncidentRaised(seq=n, elapsed_ms=n, kind=IncidentKind.COMPACTION, message=draw(hostile_text)),
        Compacted(seq=n, elapsed_ms=n, chars_before=900, chars_after=100, messages_replaced=4, usage=None),
        BudgetStopped(seq=n, elapsed_ms=n, budget="maxTurns", limit=3, value=4),
    ]
    events += draw(st.lists(st.sampled_from(extras), max_size=3))
    events.append(
        RunEnded(
            seq=len(events), elapsed_ms=len(events), outcome="completed", final_text=draw(text), turns=turns
        )
    )
    return tuple(events)
