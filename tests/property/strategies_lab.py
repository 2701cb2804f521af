"""Generators for the lab's core: run plans, event logs with a plain model of what they hold, verifier results."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from alisio.core.harness.events import (
    Compacted,
    Event,
    IncidentKind,
    IncidentRaised,
    ProviderRequested,
    ProviderResponded,
    RunEnded,
    RunOutcome,
    ToolCalled,
    ToolResulted,
)
from alisio.core.harness.protocol import Usage
from alisio.core.lab.judges.outcome import SetupError
from alisio.core.lab.runs.records import VerifierResult, VerifierStatus
from alisio.core.lab.suites.schedule import RunSpec

task_id_lists = st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True), max_size=6, unique=True)
ks = st.integers(min_value=1, max_value=6)
seeds = st.integers(min_value=0, max_value=2**32)

run_specs = st.builds(
    RunSpec,
    task_id=st.sampled_from(["fix-add", "rename", "t1"]),
    repetition=st.integers(min_value=0, max_value=9),
    seed=st.integers(min_value=0, max_value=1000),
    variant=st.none() | st.just("early"),
)

outcomes: st.SearchStrategy[RunOutcome | None] = st.sampled_from(
    [None, "completed", "budget_exceeded", "error"]
)
setup_errors = st.none() | st.builds(
    SetupError,
    reason=st.sampled_from(["fixture_copy", "workspace"]),
    message=st.text(min_size=1, max_size=20),
)
verifier_results = st.builds(
    VerifierResult,
    id=st.sampled_from(["check", "scope", "seq"]),
    kind=st.sampled_from(["command", "tree-diff-within", "tool-sequence"]),
    status=st.sampled_from(list(VerifierStatus)),
    detail=st.text(max_size=10),
)
verifier_lists = st.lists(verifier_results, max_size=4).map(tuple)

_count = st.none() | st.integers(min_value=0, max_value=100_000)
_usage = st.none() | st.builds(
    Usage,
    input_tokens=_count,
    output_tokens=_count,
    cached_input_tokens=_count,
    reasoning_tokens=_count,
)


@dataclass(frozen=True)
class MainTurn:
    """One main-loop provider call: whether it got a response, and the usage that response reported."""

    responded: bool
    usage: Usage | None
    tools: int


@dataclass(frozen=True)
class LogModel:
    """What an event log holds, said plainly (the oracle for ``measured_from``)."""

    turns: tuple[MainTurn, ...]
    compactions: tuple[Usage | None, ...]
    incidents: tuple[tuple[IncidentKind, str], ...]
    ended_turns: int | None
    """``RunEnded.turns``; ``None`` when the log has no run end."""


@st.composite
def event_logs(draw: st.DrawFn) -> tuple[tuple[Event, ...], LogModel]:
    """An event log of main turns (some unanswered), compaction calls, tool calls and incidents."""
    turns = draw(
        st.lists(
            st.builds(MainTurn, responded=st.booleans(), usage=_usage, tools=st.integers(0, 3)),
            max_size=6,
        )
    )
    compactions: list[Usage | None] = []
    incidents: list[tuple[IncidentKind, str]] = []
    events: list[Event] = []
    clock = 0

    def add(event_type: type[Event], /, **fields: object) -> None:
        nonlocal clock
        clock += draw(st.integers(min_value=0, max_value=5000))
        events.append(event_type(seq=len(events), elapsed_ms=clock, **fields))  # type: ignore[arg-type]

    call = 0
    for number, turn in enumerate(turns, start=1):
        if draw(st.booleans()):
            usage = draw(_usage)
            compactions.append(usage)
            add(
                ProviderRequested,
                call=call,
                turn=number,
                purpose="compaction",
                fingerprint="f",
                message_count=1,
            )
            add(ProviderResponded, call=call, purpose="compaction", finish_reason="stop", usage=usage, text_chars=1,
                tool_calls=0, duration_ms=1)  # fmt: skip
            add(Compacted, chars_before=10, chars_after=5, messages_replaced=2, usage=usage)
            call += 1
        add(ProviderRequested, call=call, turn=number, purpose="main", fingerprint="f", message_count=1)
        if turn.responded:
            add(ProviderResponded, call=call, purpose="main", finish_reason="stop", usage=turn.usage, text_chars=0,
                tool_calls=turn.tools, duration_ms=1)  # fmt: skip
            for index in range(turn.tools):
                add(ToolCalled, call_id=f"c{call}_{index}", name="bash", arguments="{}", effect=None)
                add(ToolResulted, call_id=f"c{call}_{index}", name="bash", ok=True, output_excerpt="",
                    duration_ms=1)  # fmt: skip
        if draw(st.booleans()):
            incident = (draw(st.sampled_from(list(IncidentKind))), draw(st.text(max_size=8)))
            incidents.append(incident)
            add(IncidentRaised, kind=incident[0], message=incident[1])
        call += 1
    ended = draw(st.booleans())
    if ended:
        add(RunEnded, outcome="completed", turns=len(turns))
    model = LogModel(
        turns=tuple(turns),
        compactions=tuple(compactions),
        incidents=tuple(incidents),
        ended_turns=len(turns) if ended else None,
    )
    return tuple(events), model
