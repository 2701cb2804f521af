"""Properties of the mock endpoint's answers (``alisio.core.agents.mock``): what it renders in each wire API
reads back, through the lab's own reader of a model call, as the answer it meant; a script's turn is the
conversation's; the default fixes fix-add through whichever shell tool is offered."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.agents.exchange import read_exchange
from alisio.core.agents.mock import (
    FIX_COMMAND,
    SHELL_TOOL,
    Answer,
    MockCall,
    default_reply,
    read_request,
    render,
    scripted_reply,
)
from alisio.core.harness.protocol import Usage
from alisio.core.harness.wire import Api as MockApi

APIS: list[MockApi] = ["openai-chat", "openai-responses", "anthropic"]
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40)
NAMES = st.sampled_from(["bash", "read", "edit", "exec_command", "Bash"])
ARGUMENTS = st.dictionaries(st.sampled_from(["path", "command", "n"]), st.integers(0, 9) | TEXT, max_size=3)


@st.composite
def answers(draw: st.DrawFn) -> Answer:
    calls = tuple(
        MockCall(id=f"call_{n}", name=draw(NAMES), arguments=json.dumps(draw(ARGUMENTS)))
        for n in range(draw(st.integers(0, 3)))
    )
    usage = draw(
        st.none()
        | st.builds(
            lambda given, cached, out: Usage(input_tokens=given + cached, cached_input_tokens=cached, output_tokens=out),
            st.integers(0, 10_000), st.integers(0, 10_000), st.integers(0, 10_000),
        )
    )  # fmt: skip
    text = draw(TEXT)
    return Answer(text=text, calls=calls, finish="tool_calls" if calls else "stop", usage=usage)


def _body(api: MockApi, stream: bool, items: list[dict[str, Any]], tools: list[str]) -> dict[str, Any]:
    key = "input" if api == "openai-responses" else "messages"
    offered = [
        {"type": "function", "function": {"name": n}} if api == "openai-chat" else {"name": n} for n in tools
    ]
    return {"model": "m", key: items, "tools": offered, "stream": stream}


@given(st.sampled_from(APIS), answers(), st.booleans())
def test_a_rendered_answer_reads_back_as_itself_on_every_api(
    api: MockApi, answer: Answer, stream: bool
) -> None:
    """Text, tool calls (names and arguments, in order) and usage read back as meant, streamed or not; no
    usage reads back as not reported."""
    request = json.dumps(_body(api, stream, [{"role": "user", "content": "hi"}], ["bash"])).encode()
    status, content_type, data = render(api, "m", answer, stream)
    exchange = read_exchange(api, request, status, content_type, data).unwrap()
    assert (exchange.error, exchange.text) == (None, answer.text)
    assert [(c.name, json.loads(c.arguments)) for c in exchange.tool_calls] == [
        (c.name, json.loads(c.arguments)) for c in answer.calls
    ]
    if answer.usage is None:
        assert exchange.usage is None
    else:
        assert exchange.usage is not None
        got = (exchange.usage.input_tokens, exchange.usage.cached_input_tokens, exchange.usage.output_tokens)
        assert got == (
            answer.usage.input_tokens,
            answer.usage.cached_input_tokens,
            answer.usage.output_tokens,
        )


@given(st.sampled_from(APIS), st.integers(200, 599).filter(lambda s: s != 200), TEXT)
def test_an_error_answer_is_the_status_and_the_message(api: MockApi, status: int, message: str) -> None:
    """An HTTP error reads back as that status with the message."""
    request = json.dumps(_body(api, False, [{"role": "user", "content": "hi"}], [])).encode()
    shown = render(api, "m", Answer(status=status, text=message), False)
    exchange = read_exchange(api, request, *shown).unwrap()
    assert exchange.status == status and exchange.error is not None and message.strip() in exchange.error


def _conversation(api: MockApi, turns: int, after_tool: bool) -> list[dict[str, Any]]:
    user = {"role": "user", "content": "go"}
    if api == "openai-responses":
        assistant: list[dict[str, Any]] = [
            {"type": "function_call", "call_id": "c", "name": "bash", "arguments": "{}"}
        ]
        result = {"type": "function_call_output", "call_id": "c", "output": "ok"}
    elif api == "anthropic":
        assistant = [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "bash", "input": {}}]}
        ]
        result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "ok"}]}
    else:
        assistant = [{"role": "assistant", "content": None, "tool_calls": []}]
        result = {"role": "tool", "tool_call_id": "c", "content": "ok"}
    items = [user]
    for _ in range(turns):
        items += [*assistant, result if after_tool else user]
    return items


@given(st.sampled_from(APIS), st.lists(answers(), min_size=1, max_size=4), st.integers(0, 6), st.booleans())
def test_a_script_answers_the_turn_the_conversation_is_at(
    api: MockApi, turns: list[Answer], at: int, after_tool: bool
) -> None:
    """Turn n for a conversation holding n assistant turns; past the last, HTTP 500 naming both counts."""
    request = read_request(api, _body(api, False, _conversation(api, at, after_tool), ["bash"]))
    assert (request.assistant_turns, request.after_tool) == (at, after_tool and at > 0)
    reply = scripted_reply(request, turns, "s.json")
    if at < len(turns):
        assert (reply.text, reply.calls, reply.usage) == (turns[at].text, turns[at].calls, turns[at].usage)
    else:
        assert reply.status == 500 and reply.text.endswith(
            f"has {len(turns)} turn{'s' * (len(turns) != 1)}; this conversation asks for turn {at + 1}"
        )


@given(st.sampled_from(["bash", "Bash", "exec_command", "shell"]), st.sampled_from(APIS))
def test_the_shell_placeholder_and_the_default_use_the_offered_shell_in_its_shape(
    shell: str, api: MockApi
) -> None:
    """``{shell}`` and the default's fix both become the offered shell tool, in its argument shape."""
    request = read_request(api, _body(api, False, [{"role": "user", "content": "go"}], ["read", shell]))
    turn = Answer(calls=(MockCall(id="c", name=SHELL_TOOL, arguments=json.dumps({"command": FIX_COMMAND})),))
    for reply in (
        scripted_reply(request, [turn], "s"),
        default_reply(request, command=FIX_COMMAND, always_tool=False, number=1),
    ):
        (call,) = reply.calls
        arguments = json.loads(call.arguments)
        assert call.name == shell
        command = arguments.get("cmd") or arguments["command"]
        assert command == FIX_COMMAND or command == ["bash", "-lc", FIX_COMMAND]
