"""Tool calls written as text: a final answer that is really a call the server did not parse.

Small local models served without a tool-call parser (llama.cpp, llama-cpp-python) often write the call into
the text: ``{"name": "edit_file", "arguments": {...}}`` bare, in a fenced code block (sometimes with ``//``
comments in it), or between XML-like tags (``<tool_call>``, Qwen's template; ``<tools>``; ``<function_call>``).
The server returns it as text and the run "completes" in one turn. ``text_calls`` finds every such call;
``text_tool_call`` words the ``text_tool_call`` incident raised for them (in both ``tools.textCalls`` modes);
with ``tools.textCalls = "parse"`` the loop runs them as tool calls and answers with ``text_call_results``.

Rules:
- only a JSON object whose ``name`` is one of the offered tools and whose ``arguments`` (or ``parameters``) is
  an object, or a JSON text of one, counts; OpenAI's ``{"type": "function", "function": {...}}`` wrapping and a
  list of such objects count too (each element); prose that merely mentions a tool does not;
- a *schema* of an offered tool (``parameters`` holding a JSON schema: ``"type": "object"`` with
  ``properties``) is written-as-text confusion too (the incident names it) but not a call: it is never run;
- the calls come in the order they are written; a call inside a wrapper is found once (not again as bare JSON);
- the result is a function of the text and the offered names only (replay finds the same calls again).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from alisio.core.base import Frozen
from alisio.core.harness.protocol import Message, ToolCall, ToolMessage, UserMessage

__all__ = [
    "TextCall",
    "calls_to_run",
    "text_call_answer",
    "text_call_results",
    "text_calls",
    "text_tool_call",
]

_WRAPPERS = ("tool_call", "tools", "function_call")
_TAGGED = re.compile(r"<(tool_call|tools|function_call)>\s*(.*?)\s*(?:</\1>|$)", re.DOTALL)
_FENCED = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?```", re.DOTALL)
_DECODER = json.JSONDecoder()


class TextCall(Frozen, frozen=True, kw_only=True):
    """One call of an offered tool found in a turn's text."""

    name: str
    arguments: str
    """The arguments as compact JSON text (an object)."""
    id: str | None = None
    """The id the text gave the call (``"id"`` or ``"call_id"``), if any: the answer names it."""
    where: str
    """How it was written: ``in <tools> tags``, ``in a fenced block``, ``as bare JSON``."""
    schema: bool = False
    """The text held the tool's schema, not a call: counted by the incident, never run."""


def _without_comments(chunk: str) -> str:
    """``chunk`` with ``//`` line comments removed outside JSON strings (models annotate fenced calls)."""
    out: list[str] = []
    in_string = escaped = False
    i = 0
    while i < len(chunk):
        char = chunk[i]
        if in_string:
            out.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
            out.append(char)
        elif chunk.startswith("//", i):
            end = chunk.find("\n", i)
            i = len(chunk) if end < 0 else end
            continue
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _values(chunk: str) -> Iterator[tuple[int, int, object]]:
    """(start, end, value) of each JSON object or array written in ``chunk``, left to right, not nested."""
    i = 0
    while i < len(chunk):
        start = min((p for p in (chunk.find("{", i), chunk.find("[", i)) if p >= 0), default=-1)
        if start < 0:
            return
        try:
            value, end = _DECODER.raw_decode(chunk, start)
        except ValueError:
            i = start + 1
            continue
        yield start, end, value
        i = end


def _is_schema(arguments: dict[str, object]) -> bool:
    return arguments.get("type") == "object" and isinstance(arguments.get("properties"), dict)


def _call_of(value: object, offered: frozenset[str], where: str) -> TextCall | None:
    """The call ``value`` (a decoded JSON object) writes when it calls an offered tool, else None."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict) and "name" not in value:
        value = {**value["function"], **({"id": value["id"]} if "id" in value else {})}
    name = value.get("name")
    arguments = value.get("arguments", value.get("parameters", value.get("input")))
    if not isinstance(name, str) or name not in offered:
        return None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    call_id = value.get("id", value.get("call_id"))
    return TextCall(
        name=name,
        arguments=json.dumps(arguments, ensure_ascii=False, separators=(",", ":")),
        id=call_id if isinstance(call_id, str) and call_id else None,
        where=where,
        schema=_is_schema(arguments),
    )


def _calls_in(chunk: str, offered: frozenset[str], where: str) -> Iterator[tuple[int, TextCall]]:
    for start, _end, value in _values(chunk):
        for item in value if isinstance(value, list) else [value]:
            call = _call_of(item, offered, where)
            if call is not None:
                yield start, call


def _wrapped(text: str) -> Iterator[tuple[int, int, str, str]]:
    """(start, end, where, inside) of each wrapper: tags, then fences that overlap no tags (spans never overlap)."""
    spans: list[tuple[int, int]] = []
    for match in _TAGGED.finditer(text):
        spans.append(match.span())
        yield match.start(), match.end(), f"in <{match.group(1)}> tags", match.group(2)
    for match in _FENCED.finditer(text):
        if not any(match.start() < end and start < match.end() for start, end in spans):
            yield match.start(), match.end(), "in a fenced block", match.group(1)


def text_calls(text: str, offered: tuple[str, ...]) -> tuple[TextCall, ...]:
    """Every call of an offered tool (or schema of one) written in ``text``, in the order written.

    Returns:
        The calls; empty when ``text`` holds none (prose, JSON naming tools not offered, broken JSON).
    """
    names = frozenset(offered)
    if not text.strip() or not names:
        return ()
    found: list[tuple[int, TextCall]] = []
    outside: list[str] = []
    last = 0
    for start, end, where, inside in sorted(_wrapped(text)):
        found.extend((start + at, call) for at, call in _calls_in(_without_comments(inside), names, where))
        outside.append(text[last:start] + " " * (end - start))  # blanked: a wrapped call is not bare too
        last = end
    outside.append(text[last:])
    bare = "".join(outside)
    loose = tuple(_calls_in(bare, names, "as bare JSON"))
    if not loose and "//" in bare:  # prose may hold a URL: strip comments only when the text needs it
        loose = tuple(_calls_in(_without_comments(bare), names, "as bare JSON"))
    found.extend(loose)
    return tuple(call for _, call in sorted(found, key=lambda pair: pair[0]))


def text_tool_call(text: str, offered: tuple[str, ...]) -> str | None:
    """Why ``text`` (a final answer) holds a call of an offered tool written as text, or None when it does not.

    Returns:
        ``the final text is a call of edit_file written in <tool_call> tags, not a tool call: the server did
        not parse it (serve the model with a tool-call parser, or a chat template that has one)``; with more
        than one, ``... is a call of edit_file written in a fenced block (and 2 more), ...``.
    """
    calls = text_calls(text, offered)
    if not calls:
        return None
    first = calls[0]
    what = "the schema of" if first.schema else "a call of"
    more = f" (and {len(calls) - 1} more)" if len(calls) > 1 else ""
    return (
        f"the final text is {what} {first.name} written {first.where}{more}, not a tool call: the server did "
        "not parse it (serve the model with a tool-call parser, or a chat template that has one)"
    )


def text_call_results(results: tuple[tuple[str, str, str], ...]) -> str:
    """The user message that answers calls written as text. No API has an id to answer a call the model wrote
    as text (its turn holds no structured call), so each result is named by its tool and call id instead.

    Args:
        results: (tool name, call id, the tool's output) per call, in the order they ran.
    """
    head = (
        "Your last message wrote tool calls as text; the harness ran them. Their results, in order:"
        if len(results) > 1
        else "Your last message wrote a tool call as text; the harness ran it. Its result:"
    )
    parts = [
        f"<tool_result name={json.dumps(name)} id={json.dumps(call_id)}>\n{output}\n</tool_result>"
        for name, call_id, output in results
    ]
    return "\n\n".join([head, *parts])


def calls_to_run(calls: tuple[TextCall, ...], turn: int) -> tuple[ToolCall, ...]:
    """The tool calls ``tools.textCalls = "parse"`` runs for the calls written in turn ``turn``'s text: every
    call but a schema, with the id the text gave it or ``text-<turn>-<n>`` (n from 1; the same on replay)."""
    runnable = [call for call in calls if not call.schema]
    return tuple(
        ToolCall(id=call.id or f"text-{turn}-{n}", name=call.name, arguments=call.arguments)
        for n, call in enumerate(runnable, start=1)
    )


def text_call_answer(answers: list[Message]) -> UserMessage:
    """The user message answering the tool messages of calls written as text (``text_call_results``)."""
    named = tuple((a.name, a.tool_call_id, a.content) for a in answers if isinstance(a, ToolMessage))
    return UserMessage(content=text_call_results(named))
