"""Properties of ``alisio.core.harness.faults``: the spec's grammar, its canonical text, the seeded schedule,
the answers each api sends, the hits as records keep them, the fault that ended a run and how long a stall
lasted; of a cassette's cut points (``alisio.core.replay.cassette.cut_points_problem``); and of ``alisio.core.lab.comparisons.robustness``
against a direct computation."""

from __future__ import annotations

import json
import math

import msgspec
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.harness.faults import (
    DEFAULT_READ_TIMEOUT_MS,
    FAULT_KINDS,
    FaultHit,
    FaultSpec,
    fault_answer,
    fault_at,
    fault_that_ended,
    hits_text,
    parse_faults,
    spec_text,
    stall_timeout_ms,
)
from alisio.core.lab.comparisons.robustness import robustness_rows
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.runs.records import RunFaults
from alisio.core.replay.cassette import CassetteHeader, cut_points_problem
from alisio.core.stats import paired_difference, ratio_estimate
from tests.property.strategies_report import conditions, task_runs

kinds = st.lists(st.sampled_from(FAULT_KINDS), min_size=1, max_size=len(FAULT_KINDS), unique=True)


@st.composite
def specs(draw: st.DrawFn) -> FaultSpec:
    chosen = draw(kinds)
    budget = 1.0
    rates = {}
    for kind in chosen:
        rate = draw(st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0]))
        rate = min(rate, round(budget, 2))
        budget -= rate
        rates[kind] = rate
    text = ",".join(f"{kind}:{rate:g}" for kind, rate in rates.items())
    text += f",seed={draw(st.integers(0, 10**9))}"
    if draw(st.booleans()):
        text += f",retry-after={draw(st.sampled_from([0, 0.5, 2, 30]))}"
    if draw(st.booleans()):
        text += f",drip-ms={draw(st.integers(0, 2000))}"
    parsed = parse_faults(text)
    assert isinstance(parsed, Success), parsed
    spec = parsed.unwrap()
    assert spec is not None
    return spec


@given(specs())
def test_the_canonical_text_parses_back_to_the_same_spec(spec: FaultSpec) -> None:
    again = parse_faults(spec_text(spec)).unwrap()
    assert again == spec
    assert spec_text(again) == spec_text(spec)


@given(specs(), st.text(alphabet="ab/0123456789", max_size=12), st.integers(0, 10_000))
def test_the_schedule_is_a_function_of_seed_run_and_call(spec: FaultSpec, run: str, call: int) -> None:
    first = fault_at(spec, run, call)
    assert first == fault_at(spec, run, call)
    assert first is None or first in dict(spec.rates)


@given(specs())
def test_each_kind_hits_its_rate_of_the_calls(spec: FaultSpec) -> None:
    calls = 4000
    drawn = [fault_at(spec, "task/0", call) for call in range(calls)]
    for kind, rate in spec.rates:
        share = drawn.count(kind) / calls
        # 5 standard errors: a draw outside is a broken schedule, not bad luck
        assert abs(share - rate) <= 5 * math.sqrt(rate * (1 - rate) / calls) + 1e-9
    if sum(rate for _, rate in spec.rates) == 0:
        assert set(drawn) == {None}


def test_runs_draw_their_own_schedules() -> None:
    spec = parse_faults("500:0.5,seed=1").unwrap()
    assert spec is not None
    first = [fault_at(spec, "a/0", call) for call in range(64)]
    assert first != [fault_at(spec, "b/0", call) for call in range(64)]
    assert first != [fault_at(spec, "a/1", call) for call in range(64)]
    other_seed = parse_faults("500:0.5,seed=2").unwrap()
    assert other_seed is not None
    assert first != [fault_at(other_seed, "a/0", call) for call in range(64)]


@given(st.text(max_size=40))
def test_any_text_is_a_spec_or_one_line_naming_what_is_wrong(text: str) -> None:
    match parse_faults(text):
        case Success(spec):
            assert spec is None or 0 < sum(rate for _, rate in spec.rates) <= 1.0 + 1e-9 or spec.rates == ()
        case Failure(problem):
            assert problem and "\n" not in problem


def test_specs_people_write() -> None:
    assert parse_faults("none").unwrap() is None
    assert parse_faults("").unwrap() is None
    assert spec_text(parse_faults(" cut:0.05 , 429:0.1 ,seed=7").unwrap()) == "429:0.1,cut:0.05,seed=7"
    assert spec_text(parse_faults("slow:1,drip-ms=500,retry-after=1").unwrap()) == "slow:1,seed=0"
    problems = {
        "429:0.1,429:0.2": "429:0.2: 429 is given twice",
        "429:0.1,seed=1,seed=2": "seed=2: seed is given twice",
        "429:nan": "429:nan: a rate is a number from 0 to 1 (the share of calls faulted)",
        "429:0.1,wait=3": "wait=3: unknown setting (settings: seed, retry-after, drip-ms)",
        "seed=3": "seed=3: no fault given; expected KIND:RATE entries and settings, e.g. 429:0.1,cut:0.05,seed=7",
        "429:0.1,drip-ms=99999999": "drip-ms=99999999: milliseconds from 0 to 60000",
        "429:0.1,retry-after=-1": "retry-after=-1: seconds from 0 to 3600",
    }
    for text, problem in problems.items():
        assert parse_faults(text).failure() == problem


def test_each_api_gets_its_own_error_shape() -> None:
    spec = parse_faults("429:1,retry-after=2.5").unwrap()
    assert spec is not None
    chat = fault_answer("openai-chat", "429", spec)
    assert chat.status == 429 and ("retry-after", "2.5") in chat.headers
    assert json.loads(chat.body)["error"]["type"] == "rate_limit_exceeded"
    responses = fault_answer("openai-responses", "500", spec)
    assert responses.status == 500 and json.loads(responses.body)["error"]["type"] == "server_error"
    assert not any(name == "retry-after" for name, _ in responses.headers)
    gemini = json.loads(fault_answer("gemini", "429", spec).body)
    assert gemini["error"]["code"] == 429 and gemini["error"]["status"] == "RESOURCE_EXHAUSTED"
    anthropic = fault_answer("anthropic", "503", spec)
    body = json.loads(anthropic.body)
    assert anthropic.status == 503 and body["type"] == "error" and body["error"]["type"] == "overloaded_error"


def _recorded(spec: FaultSpec, run: str, calls: int, events: st.DataObject) -> RunFaults:
    """The faults a recording of ``calls`` calls under ``spec`` keeps: the schedule's hits, each cut's point."""
    hits = []
    for call in range(calls):
        kind = fault_at(spec, run, call)
        if kind == "cut":
            broke = events.draw(st.integers(0, 40))
            hits.append(
                FaultHit(call=call, kind=kind, events=broke, ended=broke > 0 and events.draw(st.booleans()))
            )
        elif kind is not None:
            hits.append(FaultHit(call=call, kind=kind))
    return RunFaults(calls=calls, hits=tuple(hits))


def _header(task: str, spec: FaultSpec, record: RunFaults | None) -> CassetteHeader:
    return CassetteHeader(
        format="cassette/v1", suite_id="s", suite_version="1", task_id=task, config_hash="h",
        harness_version="0", model="m", provider="p", faults=spec_text(spec), fault_record=record,
    )  # fmt: skip


@given(specs(), st.sampled_from(["fix-add", "t"]), st.integers(0, 40), st.data())
def test_a_cassette_replays_its_cuts_only_with_the_cut_points_of_its_schedule(
    spec: FaultSpec, task: str, calls: int, data: st.DataObject
) -> None:
    """A recording's record (the schedule of its repetition 0, each cut with its point) is accepted; without
    it, without one cut's point, or with a hit that is not the schedule's, it is refused when the spec cuts."""
    cuts = any(kind == "cut" and rate > 0 for kind, rate in spec.rates)
    record = _recorded(spec, f"{task}/0", calls, data)
    assert cut_points_problem(_header(task, spec, record), spec) is None
    assert cut_points_problem(_header(task, spec, record), None) is None
    older = cut_points_problem(_header(task, spec, None), spec)
    assert (older is not None) == cuts
    if older is not None:
        assert older.startswith("recorded with cut faults but without where each cut broke")
    for index, hit in enumerate(record.hits):
        if hit.kind == "cut":
            pointless = msgspec.structs.replace(
                record,
                hits=(*record.hits[:index], FaultHit(call=hit.call, kind="cut"), *record.hits[index + 1 :]),
            )
            problem = cut_points_problem(_header(task, spec, pointless), spec)
            assert (
                problem
                == f"faultRecord.hits[{index}]: the cut at call {hit.call} does not say where it broke (events)"
            )
    if cuts and record.hits:
        dropped = msgspec.structs.replace(record, hits=record.hits[1:])
        problem = cut_points_problem(_header(task, spec, dropped), spec)
        assert problem is not None and problem.startswith("faultRecord: its hits are not the schedule")
    if cuts:  # the same record for another repetition's schedule is refused unless it is the same schedule
        other = _recorded(spec, f"{task}/1", calls, data)
        if [(h.call, h.kind) for h in other.hits] != [(h.call, h.kind) for h in record.hits]:
            assert cut_points_problem(_header(task, spec, other), spec) is not None


@given(st.integers(0, 3), st.integers(0, 40), st.booleans())
def test_a_hit_without_a_cut_point_is_kept_as_records_always_kept_it(
    call: int, events: int, ended: bool
) -> None:
    plain = FaultHit(call=call, kind="429")
    assert msgspec.json.decode(msgspec.json.encode(plain)) == {"call": call, "kind": "429"}
    cut = FaultHit(call=call, kind="cut", events=events, ended=ended)
    assert msgspec.json.decode(msgspec.json.encode(cut), type=FaultHit) == cut
    shown = msgspec.json.decode(msgspec.json.encode(cut))
    assert shown == {"call": call, "kind": "cut", "events": events, **({"ended": True} if ended else {})}


@given(st.one_of(st.none(), specs()), st.one_of(st.none(), st.integers(1, 86_400_000)))
def test_a_cassette_keeps_how_long_a_stall_lasted_only_when_it_may_have_met_one(
    spec: FaultSpec | None, timeout_ms: int | None
) -> None:
    kept = stall_timeout_ms(spec, timeout_ms)
    stalls = spec is not None and dict(spec.rates).get("stall", 0.0) > 0
    assert kept == ((DEFAULT_READ_TIMEOUT_MS if timeout_ms is None else timeout_ms) if stalls else None)
    header = CassetteHeader(
        format="cassette/v1", suite_id="s", suite_version="1", task_id="t", config_hash="h", harness_version="v",
        model="m", provider="p", read_timeout_ms=kept,
    )  # fmt: skip
    encoded = msgspec.json.encode(header)
    assert (b'"readTimeoutMs"' in encoded) is stalls  # absent from every cassette without stalls
    assert msgspec.json.decode(encoded, type=CassetteHeader) == header


def test_hits_say_where_each_cut_broke() -> None:
    hits = (
        FaultHit(call=0, kind="cut", events=0),
        FaultHit(call=1, kind="500"),
        FaultHit(call=2, kind="cut", events=1),
        FaultHit(call=3, kind="cut", events=7, ended=True),
        FaultHit(call=4, kind="cut"),
    )
    assert hits_text(hits) == (
        "call 0: cut before the first event, call 1: 500, call 2: cut after 1 event, "
        "call 3: cut after the answer's end (7 events), call 4: cut"
    )


REASONS = {"429": "provider_rate_limited", "500": "provider_server", "503": "provider_server",
           "stall": "provider_timeout", "cut": "provider_network"}  # fmt: skip


@given(
    st.lists(st.tuples(st.sampled_from(FAULT_KINDS), st.integers(0, 3), st.booleans()), max_size=5),
    st.integers(0, 3),
    st.sampled_from([None, "provider_auth", "provider_protocol", *REASONS.values()]),
)
def test_only_the_last_calls_fault_ends_a_run_and_only_with_its_own_failure(
    drawn: list[tuple[str, int, bool]], extra: int, reason: str | None
) -> None:
    hits = tuple(
        FaultHit(
            call=call, kind=kind, events=events if kind == "cut" else None, ended=ended and kind == "cut"
        )  # type: ignore[arg-type]
        for call, (kind, events, ended) in enumerate(drawn)
    )
    calls = len(hits) + extra
    found = fault_that_ended(calls, hits, reason)
    if not hits or extra or hits[-1].ended or REASONS.get(hits[-1].kind) != reason:
        assert (
            found is None
        )  # the provider's own failure, a call after the fault, or a fault that failed nothing
    else:
        assert found == hits[-1]


outcomes = st.tuples(st.integers(0, 4), st.integers(0, 3), st.integers(0, 2))
"""One task's passes, fails and errors."""


@given(st.lists(st.tuples(outcomes, outcomes), min_size=1, max_size=6))
def test_robustness_is_the_faulted_passes_over_the_clean_ones_paired_by_task(
    tasks: list[tuple[tuple[int, int, int], tuple[int, int, int]]],
) -> None:
    """Against a direct computation: errors count as not passing, the ratio is Σ faulted / Σ clean passes with
    the kernel's Fieller interval of the per-task passes, and the difference is the kernel's paired one."""
    used = [(c, f) for c, f in tasks if sum(c) > 0 and sum(f) > 0]
    clean_records = [r for i, (c, _) in enumerate(tasks) for r in task_runs(f"t{i}", c[0], c[1], 0, c[2])]
    faulted_records = [r for i, (_, f) in enumerate(tasks) for r in task_runs(f"t{i}", f[0], f[1], 0, f[2])]
    clean = build_report(clean_records, conditions())
    faulted = build_report(faulted_records, msgspec.structs.replace(conditions(), faults="500:0.5,seed=1"))
    rows = robustness_rows([("clean", clean), ("faulted", faulted)])
    assert robustness_rows([("faulted", faulted)]) == ()  # no clean arm, no robustness
    if not used:
        assert rows == ()
        return
    (row,) = rows
    assert (row.clean, row.faulted, row.faults, row.tasks) == (
        "clean",
        "faulted",
        "500:0.5,seed=1",
        len(used),
    )
    assert row.clean_passes == sum(c[0] for c, _ in used) and row.clean_runs == sum(sum(c) for c, _ in used)
    assert row.faulted_passes == sum(f[0] for _, f in used) and row.faulted_runs == sum(
        sum(f) for _, f in used
    )
    expected = ratio_estimate([float(f[0]) for _, f in used], [c[0] for c, _ in used])
    if expected is None:
        assert row.ratio is None
    else:
        assert row.ratio == row.faulted_passes / row.clean_passes == expected.estimate
        assert (row.ratio_low, row.ratio_high) == (expected.low, expected.high)
    assert row.difference == paired_difference([(c[0], sum(c), f[0], sum(f)) for c, f in used])
