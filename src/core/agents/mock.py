"""The mock model endpoint's answers (``alisio eval mock-endpoint``): what to answer a request, in its wire format.

Pure: a request's path and JSON body in, the HTTP status, content type and body out. The shell
(``alisio.shell.agents.mock_endpoint``) serves them. Every wire API the lab speaks, by path (``target_of``:
a path ending in one of a format's model calls, ``.../chat/completions``, ``.../responses``,
``.../messages``, ``.../models/M:streamGenerateContent``; a token count, ``.../messages/count_tokens``, is
answered 100 tokens and is not a model call). How a request is read and an answer written is the format's
record's (``alisio.core.harness.wire_format``). A streamed request (``stream: true``, or a streaming path)
gets server-sent events, with the usage in the last ones, else one JSON answer.

What is answered (``reply_for``), first match wins:

- a request for the model ``fail``, or any request when the endpoint was made to fail: HTTP 500 (or that
  status), ``scripted failure``, in the API's error shape;
- with a script (``--script``, the format of ``eval run --script``): the turn whose number is how many
  assistant turns the request's conversation already holds (so parallel runs each get their own turns); a
  tool call named ``{shell}`` is sent as the agent's own shell tool (``bash``, Claude Code's ``Bash``,
  Codex's ``exec_command`` or ``shell``, Gemini CLI's ``run_shell_command``: each preset's tool that means
  ``bash``) with its ``command`` in that tool's argument shape; a request that
  offers no tools (a title call, aider) gets the turn's text only; a turn's ``failure`` or ``error`` is an
  HTTP error (``auth`` 401, ``bad_request`` 400, ``rate_limited`` 429, else 500) with its message; past the
  last turn, HTTP 500 saying so. Usage is the turn's, none when it has none;
- without a script, the default, which fixes the bundled smoke-coding fix-add: a request without tools gets
  the text ``Fix add`` (aider, asked for SEARCH/REPLACE blocks, gets the block that fixes it); a request whose
  last message is a tool result gets ``Fixed: add returns a + b.`` (unless its model is ``loop``, or the
  endpoint always calls the tool: an agent that never stops, for budgets); any other request gets one call of
  the agent's shell tool running ``FIX_COMMAND``. Every answer reports ``DEFAULT_USAGE``: 100 input tokens,
  40 of them cached, and 10 output tokens, in each API's own convention (Anthropic's ``input_tokens`` leaves
  the cached ones out).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from alisio.core.agents.presets import PRESETS
from alisio.core.base import Frozen
from alisio.core.harness.protocol import ProviderResponse, ToolCall, Usage
from alisio.core.harness.wire import APIS, Api, wire_format
from alisio.core.harness.wire_common import mapping
from alisio.core.harness.wire_format import CallPath, path_matches

__all__ = [
    "AIDER_EDIT",
    "DEFAULT_USAGE",
    "FIX_COMMAND",
    "SHELL_TOOL",
    "Answer",
    "MockCall",
    "Request",
    "Target",
    "default_reply",
    "read_request",
    "render",
    "scripted_reply",
    "target_of",
]

FIX_COMMAND: Final = "sed -i 's/return a - b/return a + b/' src/calc.py"
"""The shell command that fixes smoke-coding's fix-add (``src/calc.py``'s ``add``)."""
AIDER_EDIT: Final = "src/calc.py\n```python\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n```\n"
"""The same fix as aider's SEARCH/REPLACE block (aider offers no tools)."""
DEFAULT_USAGE: Final = Usage(input_tokens=100, output_tokens=10, total_tokens=110, cached_input_tokens=40)
SHELL_TOOL: Final = "{shell}"
"""A script's tool-call name for the agent's own shell tool (its name and argument shape vary by agent)."""
_SHELLS: Final = tuple(
    dict.fromkeys(
        ("bash", *(name for preset in PRESETS.values() for name, lab in preset.tool_map if lab == "bash"))
    )
)
"""The shell tools the default answer calls: the lab's ``bash``, and each preset's tools that mean it."""


class MockCall(Frozen, frozen=True, kw_only=True):
    """One tool call of an answer: its id, the tool's name and its arguments as JSON text."""

    id: str
    name: str
    arguments: str


class Answer(Frozen, frozen=True, kw_only=True):
    """What to answer one request: an HTTP error (``status`` not 200, ``text`` its message), or a message."""

    status: int = 200
    text: str = ""
    calls: tuple[MockCall, ...] = ()
    finish: str = "stop"
    """``stop``, ``tool_calls``, ``length`` or ``content_filter`` (each API's own word is sent)."""
    usage: Usage | None = None


class Request(Frozen, frozen=True, kw_only=True):
    """What the answer depends on, read from a request's body (``read_request``)."""

    api: Api
    model: str
    stream: bool
    tools: tuple[str, ...]
    """The names of the tools the request offers, in order."""
    described: frozenset[str] = frozenset()
    """The tools whose arguments include a ``description`` (the shell call then says one)."""
    assistant_turns: int
    """How many assistant turns the conversation already holds (a script's turn number, from 0)."""
    after_tool: bool
    """The last message is a tool result."""
    asks_for_edit_blocks: bool
    """No tools, and the messages ask for SEARCH/REPLACE blocks (aider)."""


class Target(Frozen, frozen=True, kw_only=True):
    """What a POST's path is: a model call of ``api`` (``call``: what its path says), or a token count."""

    api: Api
    call: CallPath | None
    """``None``: a token count (a side request), not a model call."""


def target_of(path: str) -> Target | None:
    """What a POST to ``path`` is (a path ending in one of a format's model calls or token counts), or
    ``None`` (404)."""
    path = path.split("?")[0].split("#")[0].rstrip("/")
    for api in APIS:
        record = wire_format(api)
        if any(method == "POST" and _ends_with(template, path) for method, template in record.side_paths):
            return Target(api=api, call=None)
    for api in APIS:
        record = wire_format(api)
        for template, stream in record.model_calls:
            found = _ends_with(template, path)
            if found is not None:
                return Target(api=api, call=CallPath(model=found.groupdict().get("model"), stream=stream))
    return None


def _ends_with(template: str, path: str) -> Any:
    """The match of ``template`` against the end of ``path`` (from one of its ``/``), or ``None``."""
    for cut in (i for i, char in enumerate(path) if char == "/"):
        found = path_matches(template, path[cut:])
        if found is not None:
            return found
    return None


def _takes_description(schema: Mapping[str, object]) -> bool:
    """Whether a tool's schema has a ``description`` argument (OpenCode's and Claude Code's shell tools)."""
    properties = schema.get("properties")
    return isinstance(properties, dict) and "description" in properties


def _turns_and_last(api: Api, body: Mapping[str, Any]) -> tuple[int, bool]:
    """How many assistant turns the conversation holds, and whether its last item is a tool result."""
    record = wire_format(api)
    items = body.get(record.conversation)
    items = items if isinstance(items, list) else []
    turns, inside = 0, False
    for item in items:
        assistant = record.assistant_item(mapping(item))
        turns += assistant and not inside
        inside = assistant
    last = mapping(items[-1]) if items else {}
    return turns, record.tool_result_item(last)


def read_request(api: Api, body: Mapping[str, Any], call: CallPath | None = None) -> Request:
    """The facts of a request's (already parsed) JSON body that its answer depends on (``call``: what its
    path says, the model and whether it streams, where the api puts them there)."""
    schemas = wire_format(api).tool_schemas(body.get("tools"))
    tools = tuple(name for name, _schema in schemas)
    described = frozenset(name for name, schema in schemas if _takes_description(schema))
    turns, after = _turns_and_last(api, body)
    model = call.model if call is not None and call.model is not None else body.get("model")
    stream = call.stream if call is not None and call.stream is not None else body.get("stream") is True
    messages = json.dumps(body.get(wire_format(api).conversation) or [])
    return Request(
        api=api,
        model=model if isinstance(model, str) else "m",
        stream=stream,
        tools=tools,
        described=described,
        assistant_turns=turns,
        after_tool=after,
        asks_for_edit_blocks=not tools and "SEARCH/REPLACE" in messages,
    )


def _shell_of(tools: Sequence[str]) -> str | None:
    return next((name for name in _SHELLS if name in tools), next(iter(tools), None))


def _shell_arguments(request: Request, tool: str | None, command: str) -> str:
    """The shell tool's arguments: Codex's ``exec_command`` takes ``cmd``, its ``shell`` an argv; a tool
    whose schema has a ``description`` gets one."""
    if tool == "exec_command":
        return json.dumps({"cmd": command})
    if tool == "shell":
        return json.dumps({"command": ["bash", "-lc", command]})
    if tool in request.described:
        return json.dumps({"command": command, "description": "run a command"})
    return json.dumps({"command": command})


def default_reply(request: Request, *, command: str, always_tool: bool, number: int) -> Answer:
    """The default answer (see the module docstring); ``number`` numbers the tool call's id."""
    if request.asks_for_edit_blocks:
        return Answer(text=AIDER_EDIT, usage=DEFAULT_USAGE)
    if not request.tools:
        return Answer(text="Fix add", usage=DEFAULT_USAGE)
    if request.after_tool and not always_tool and request.model != "loop":
        return Answer(text="Fixed: add returns a + b.", usage=DEFAULT_USAGE)
    shell = _shell_of(request.tools)
    call = MockCall(
        id=f"call_{number}", name=shell or "bash", arguments=_shell_arguments(request, shell, command)
    )
    return Answer(calls=(call,), finish="tool_calls", usage=DEFAULT_USAGE)


def scripted_reply(request: Request, turns: Sequence[Answer], source: str) -> Answer:
    """The script's answer to ``request`` (see the module docstring): ``turns`` are the script's turns as
    answers (the shell reads ``eval run --script``'s format); ``source`` names the script."""
    number = request.assistant_turns
    if number >= len(turns):
        return Answer(
            status=500,
            text=f"mock-endpoint: {source} has {len(turns)} turn{'s' if len(turns) != 1 else ''}; this "
            f"conversation asks for turn {number + 1}",
        )
    answer = turns[number]
    if answer.status != 200:
        return answer
    if not request.tools:
        return Answer(text=answer.text, usage=answer.usage, finish="stop")
    shell = _shell_of(request.tools)
    calls = tuple(
        MockCall(
            id=call.id,
            name=shell or "bash",
            arguments=_shell_arguments(request, shell, _command(call.arguments)),
        )
        if call.name == SHELL_TOOL
        else call
        for call in answer.calls
    )
    return Answer(text=answer.text, calls=calls, finish=answer.finish, usage=answer.usage)


def _command(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    command = value.get("command") if isinstance(value, dict) else None
    return command if isinstance(command, str) else arguments


def render(api: Api, model: str, answer: Answer, stream: bool) -> tuple[int, str, bytes]:
    """The HTTP status, content type and body of ``answer`` in ``api``'s wire format (its record's)."""
    record = wire_format(api)
    if answer.status != 200:
        return answer.status, "application/json", record.error_body(answer.status, None, answer.text)
    calls = tuple(ToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in answer.calls)
    response = ProviderResponse(
        text=answer.text, reasoning=None, tool_calls=calls, finish_reason=answer.finish, usage=answer.usage
    )
    return (200, *record.render(model, response, stream))
