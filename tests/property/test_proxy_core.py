"""Properties of the recording proxy's pure core and of every parser's usage counts (issue 26 items 8, 14, 15,
17): which targets are forwarded (``alisio.core.agents.routes``), the budget ledger's bound on calls made at
once (``alisio.core.agents.ledger``), and counts above ``MAX_TOKEN_COUNT`` refused by every wire format."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.agents.exchange import read_exchange
from alisio.core.agents.ledger import Admit, Ledger, Refuse, Reservation, Wait, admit, reservation_of, settle
from alisio.core.agents.routes import forwarded, route
from alisio.core.harness import sse, wire_anthropic, wire_gemini, wire_responses
from alisio.core.harness.budget import RunBudget
from alisio.core.harness.prices import Rates
from alisio.core.harness.protocol import MAX_NORMALISED_COUNT, MAX_TOKEN_COUNT, Usage, usage_problem
from alisio.core.harness.wire import APIS, Api, parse_response, wire_format
from alisio.core.harness.wire_format import MODEL, path_matches

# --- counts -----------------------------------------------------------------------------------------------

COUNTS = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40),
    st.integers(min_value=MAX_TOKEN_COUNT - 3, max_value=MAX_TOKEN_COUNT + 3),
    st.floats(allow_nan=True, allow_infinity=True),
)
READERS = {
    "openai-chat": (sse.usage_from, "prompt_tokens"),
    "openai-responses": (wire_responses.usage_from, "input_tokens"),
    "anthropic": (wire_anthropic.usage_from, "input_tokens"),
    "gemini": (wire_gemini.usage_from, "promptTokenCount"),
}


def _usable(value: object) -> bool:
    if isinstance(value, float):
        return value.is_integer() and 0 <= value <= MAX_TOKEN_COUNT
    return isinstance(value, int) and 0 <= value <= MAX_TOKEN_COUNT


@given(st.sampled_from(APIS), COUNTS)
def test_every_parser_uses_a_count_only_from_0_to_the_maximum(api: Api, value: object) -> None:
    """An input count is used as sent when it is an integer from 0 to MAX_TOKEN_COUNT; anything else (10**30,
    -5, 12.5, inf) makes the whole usage unusable, named, and never raises."""
    read, key = READERS[api]
    usage = read({key: value, "output_tokens": 3, "completion_tokens": 3, "candidatesTokenCount": 3})
    if _usable(value):
        assert usage.input_tokens == int(value) and usage_problem(usage) is None  # type: ignore[call-overload]
    else:
        assert usage.input_tokens is None and usage_problem(usage) == usage.invalid
        assert usage.invalid is not None and usage.invalid.startswith(f"{key} is ")


@given(
    st.one_of(
        st.integers(min_value=-(10**40), max_value=10**40),
        st.integers(min_value=MAX_NORMALISED_COUNT - 2, max_value=MAX_NORMALISED_COUNT + 2),
    )
)
def test_a_scripted_or_recorded_count_out_of_range_is_unusable(value: int) -> None:
    """usage_problem refuses counts below 0 or above the maximum a normalised count can reach (four reported
    counts) whatever produced them (a script, a cassette), not only what a parser read."""
    problem = usage_problem(Usage(input_tokens=value, output_tokens=1))
    assert (problem is None) == (0 <= value <= MAX_NORMALISED_COUNT)


@given(st.integers(min_value=MAX_TOKEN_COUNT + 1, max_value=10**40))
def test_the_proxy_keeps_no_absurd_usage(value: int) -> None:
    """Through the proxy's reading: the exchange has no usage and says why."""
    body = (
        b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}],'
        + f'"usage":{{"prompt_tokens":{value},"completion_tokens":1}}}}\n\ndata: [DONE]\n\n'.encode()
    )
    request = json.dumps({"model": "m", "messages": []}).encode()
    exchange = read_exchange("openai-chat", request, 200, "text/event-stream", body).unwrap()
    assert exchange.usage is None and exchange.usage_problem == f"prompt_tokens is {value}"


# --- stream order -----------------------------------------------------------------------------------------


@given(st.sampled_from(["[DONE]", '{"choices":[{"index":0,"delta":{"content":"x"}}]}']))
def test_an_event_after_the_end_is_a_protocol_error(after: str) -> None:
    """Whatever follows a finished answer's end event is refused, not silently dropped."""
    body = (
        b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n" + f"data: {after}\n\n".encode()
    )
    parsed = parse_response("openai-chat", body, "text/event-stream")
    assert isinstance(parsed, Failure) and "after the stream's end event" in str(parsed.failure())


# --- routes -----------------------------------------------------------------------------------------------

TARGET_CHARS = st.sampled_from(
    [*"/v1chatcompletionsmodelsrp.%2F#?=&x_-:", "//", "/./", "/../", "%2F", "beta"]
)
MODELS = st.sampled_from(["gemini-2.5-flash", "m", "a.b_c-1", "", "x/y", "%2F", ".."])
"""What stands for ``{model}`` in a forwarded template: model names, and what is none (empty, a slash...)."""
TARGETS = st.one_of(
    st.lists(TARGET_CHARS, max_size=12).map("".join),
    st.tuples(
        st.sampled_from([p for api in APIS for _, p, _ in forwarded(api)]),
        MODELS,
        st.lists(TARGET_CHARS, max_size=4).map("".join),
    ).map(lambda parts: parts[0].replace(MODEL, parts[1]) + parts[2]),
)


@given(st.sampled_from(APIS), st.sampled_from(["GET", "POST", "PUT"]), TARGETS)
def test_a_target_is_forwarded_exactly_when_it_is_one_of_its_apis_own(
    api: Api, method: str, target: str
) -> None:
    """Forwarded iff the path before ``?`` is, byte for byte, one of the api's own (a model name for its
    ``{model}``) with its method and the target has no fragment; then the model-call flag and the URL suffix
    come from that same decision (the api's version segment replaced by the base URL's)."""
    path, _, query = target.partition("?")
    matching = [call for m, p, call in forwarded(api) if m == method and path_matches(p, path) is not None]
    expected = bool(matching) and "#" not in target
    match route(api, method, target):
        case Success(found):
            assert expected
            assert found.model_call == matching[0]
            version = wire_format(api).version
            assert found.suffix == path.removeprefix(version) + (f"?{query}" if query else "")
        case Failure(refusal):
            assert not expected
            assert refusal.status in (400, 404)


# --- the ledger -------------------------------------------------------------------------------------------

RATES = Rates(input_rate=3.0, output_rate=15.0)


@st.composite
def schedules(draw: st.DrawFn) -> tuple[list[tuple[int, int]], list[int]]:
    """Calls (their reservation in tokens, what they use, at most that) and a random interleaving of steps."""
    calls = []
    for _ in range(draw(st.integers(min_value=1, max_value=12))):
        reserved = draw(st.integers(min_value=1, max_value=5000))
        calls.append((reserved, draw(st.integers(min_value=0, max_value=reserved))))
    steps = draw(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=80))
    return calls, steps


@given(schedules(), st.integers(min_value=1, max_value=20000))
def test_calls_at_once_overshoot_max_tokens_by_less_than_the_last_call_let_through(
    schedule: tuple[list[tuple[int, int]], list[int]], limit: int
) -> None:
    """Whatever the interleaving of arrivals and ends, when each call uses at most its reservation, the tokens
    finished calls used stay below maxTokens plus what the last call let through used (one call at a time's
    bound); a call is never held while no call is in flight."""
    calls, steps = schedule
    budget = RunBudget(max_turns=1000, max_wall_ms=1000, max_tokens=limit)
    ledger, waiting, flying, last = Ledger(), list(range(len(calls))), [], 0
    for step in steps + [0] * (3 * len(calls)):
        if flying and (step % 2 or not waiting):
            ticket = flying.pop(step % len(flying))
            ledger = settle(ledger, ticket, Usage(input_tokens=calls[ticket][1], output_tokens=0), 0, None)
            continue
        if not waiting:
            break
        ticket = waiting[0]
        decision = admit(ledger, budget, ticket, Reservation(tokens=calls[ticket][0], cost=0.0))
        match decision:
            case Admit(ledger=admitted):
                ledger, last = admitted, calls[ticket][1]
                flying.append(waiting.pop(0))
            case Refuse(ledger=refused):
                ledger = refused
                waiting.clear()
            case Wait():
                assert flying, "held with no call in flight"
    for ticket in flying:
        ledger = settle(ledger, ticket, Usage(input_tokens=calls[ticket][1], output_tokens=0), 0, None)
    assert ledger.tokens < limit + last or ledger.tokens == 0


@given(
    st.sampled_from(APIS),
    st.integers(min_value=1, max_value=10**6),
    st.text(max_size=200),
)
def test_a_reservation_bounds_input_by_bytes_and_output_by_the_declared_limit(
    api: Api, limit: int, prompt: str
) -> None:
    """The reservation is the body's bytes plus the declared output limit, priced at the dearest rates; a
    request without a declared limit (or continuing a stored conversation) is unbounded."""
    if api == "gemini":  # the limit sits in generationConfig, the model in the URL
        body: dict[str, Any] = {
            "contents": [{"role": "user", "parts": [{"text": prompt}]}],
            "generationConfig": {"maxOutputTokens": limit},
        }
        unbounded = json.dumps({"contents": body["contents"], "generationConfig": {}}).encode()
    else:
        field = {
            "openai-chat": "max_tokens",
            "openai-responses": "max_output_tokens",
            "anthropic": "max_tokens",
        }[api]
        body = {"model": "m", "messages": [{"role": "user", "content": prompt}], field: limit}
        unbounded = json.dumps({k: v for k, v in body.items() if k != field}).encode()
    raw = json.dumps(body).encode()
    reservation = reservation_of(api, raw, RATES)
    assert reservation.tokens == len(raw) + limit
    assert reservation.cost is not None
    assert abs(reservation.cost - (len(raw) * 3.0 + limit * 15.0) / 1e6) < 1e-9
    assert reservation_of(api, unbounded, RATES) == Reservation(tokens=None, cost=None)
    if api == "openai-responses":
        stored = json.dumps(body | {"previous_response_id": "resp_1"}).encode()
        assert reservation_of(api, stored, RATES).tokens is None
