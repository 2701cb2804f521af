"""The wire-format axis: every ``Api`` name has one complete record, and every per-api table is read off it."""

from __future__ import annotations

import dataclasses
from typing import get_args

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from alisio.core.agents.config import env_names
from alisio.core.agents.exchange import USAGE_CONVENTION, read_request
from alisio.core.agents.ledger import reservation_of
from alisio.core.agents.routes import forwarded, route
from alisio.core.harness.faults import FAULT_KINDS
from alisio.core.harness.protocol import (
    ProviderRequest,
    ProviderResponse,
    ToolCall,
    Usage,
    UserMessage,
)
from alisio.core.harness.wire import APIS, DEFAULT_API_KEY_ENVS, FORMATS, Api, parse_response, wire_format
from alisio.core.harness.wire_format import SAMPLING_KEYS, WireFormat, path_matches


def test_every_api_name_has_a_complete_record() -> None:
    """Each member of the ``Api`` Literal has a record under its own name, with every field set: a name
    added without a record (or a record without a name) fails here."""
    assert set(get_args(Api)) == set(FORMATS) == set(APIS)
    for api in APIS:
        record = wire_format(api)
        assert isinstance(record, WireFormat) and record.api == api
        for field in dataclasses.fields(WireFormat):
            value = getattr(record, field.name)
            # may be empty: no extra header, no prefix, no request id
            if field.name not in ("format_headers", "key_prefix", "request_id_header"):
                assert value not in (None, "", ()), f"{api}: {field.name} is not set"
        assert set(record.fault_kinds) == {kind for kind in FAULT_KINDS if kind.isdigit()}, api
        assert record.request_id_header is None or record.request_id_header.islower(), api
        assert record.model_calls and record.version.startswith("/v")
        assert set(record.sampling) <= set(SAMPLING_KEYS) and 0 < record.max_temperature <= 2
        assert record.path("m").startswith("/")


def test_the_tables_are_derived_from_the_records() -> None:
    """The key variables, agent environment, usage conventions and proxy routes are each record's own."""
    for api in APIS:
        record = wire_format(api)
        assert DEFAULT_API_KEY_ENVS[api] == record.key_env
        assert env_names(api) == (record.base_url_env, record.key_env)
        assert USAGE_CONVENTION[api] == record.usage_convention
        routes = forwarded(api)
        assert [model_call for _m, _p, model_call in routes].count(True) == len(record.model_calls)
        path = record.path("some-model-1.5").partition("?")[0]
        assert record.call_path(path) is not None
        target = record.version + record.path("some-model-1.5")
        found = route(api, "POST", target).unwrap()
        assert found.model_call and found.suffix == record.path("some-model-1.5")


@given(api=st.sampled_from(APIS), text=st.text(max_size=30), stream=st.booleans(), calls=st.integers(0, 3))
def test_an_answer_rendered_by_a_record_reads_back_the_same(
    api: Api, text: str, stream: bool, calls: int
) -> None:
    """A record's encoder (the mock endpoint's) and its decoder agree: text, tool calls and usage survive."""
    record = wire_format(api)
    tool_calls = tuple(ToolCall(id=f"call_{n}", name="bash", arguments=f'{{"n": {n}}}') for n in range(calls))
    usage = Usage(input_tokens=100, output_tokens=10, total_tokens=110, cached_input_tokens=40)
    answer = ProviderResponse(
        text=text,
        reasoning=None,
        tool_calls=tool_calls,
        finish_reason="tool_calls" if calls else "stop",
        usage=usage,
    )
    content_type, body = record.render("m", answer, stream)
    parsed = parse_response(api, body, content_type).unwrap()
    assert parsed.text == text
    assert [(c.name, msgspec.json.decode(c.arguments)) for c in parsed.tool_calls] == [
        ("bash", {"n": n}) for n in range(calls)
    ]
    assert parsed.usage is not None
    assert (parsed.usage.input_tokens, parsed.usage.output_tokens, parsed.usage.cached_input_tokens) == (
        100,
        10,
        40,
    )
    assert parsed.finish_reason == answer.finish_reason


@given(api=st.sampled_from(APIS), limit=st.integers(1, 100_000))
def test_the_output_limit_a_request_declares_is_reserved(api: Api, limit: int) -> None:
    """The proxy reserves what the built-in provider's own request declares: its bytes plus its limit."""
    request = ProviderRequest(
        model="m", instructions="i", messages=(UserMessage(content="u"),), max_output_tokens=limit
    )
    body = msgspec.json.encode(wire_format(api).request_body(request, "http://127.0.0.1:1/v1"))
    assert reservation_of(api, body, None).tokens == len(body) + limit
    facts = read_request(api, body, wire_format(api).path("m").partition("?")[0]).unwrap()
    assert facts.message_count in (1, 2) and facts.stream  # Chat Completions: the system message too


@given(
    model=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,20}", fullmatch=True),
    junk=st.sampled_from(["/", "%2F", "/..", "?", "#"]),
)
def test_a_model_in_a_path_is_one_name_never_a_path(model: str, junk: str) -> None:
    """``{model}`` matches one model name; a slash, percent-encoding or a query inside it never matches."""
    assert path_matches("/models/{model}:x", f"/models/{model}:x") is not None
    assert path_matches("/models/{model}:x", f"/models/{model}{junk}:x") is None


def test_an_error_body_of_each_record_is_read_as_its_error() -> None:
    """The proxy's and the mock's own errors, in the api's shape, read back as errors with their message."""
    for api in APIS:
        body = wire_format(api).error_body(429, "rate_limited", "slow down")
        parsed = parse_response(api, body, "application/json").unwrap()
        assert parsed.error == "slow down"


@given(api=st.sampled_from(APIS), seconds=st.integers(0, 3600))
def test_an_injected_429_carries_the_retry_hint_its_record_reads(api: Api, seconds: int) -> None:
    """A 429 body with a record's retry info reads back as that error, and its own ``retry_after`` finds the
    seconds in it when the api's errors carry a hint (Gemini's ``RetryInfo``); the others' body is unchanged
    (their ``retry-after`` header says it)."""
    record = wire_format(api)
    plain = record.error_body(429, record.fault_kinds["429"], "slow down")
    body = record.retry_info(plain, float(seconds))
    assert parse_response(api, body, "application/json").unwrap().error == "slow down"
    hint = record.retry_after(msgspec.json.decode(body))
    if api == "gemini":
        assert hint == seconds
    else:
        assert hint is None and body == plain
