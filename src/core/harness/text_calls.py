"""Tool calls written as text: a final answer that is really a call the server did not parse.

Small local models served without a tool-call parser (llama.cpp, llama-cpp-python) often write the call into
the text: ``{"name": "edit_file", "arguments": {...}}`` bare, in a fenced code block, or between
``<tool_call>`` tags (Qwen's template). The server returns it as text, the run "completes" in one turn, and
every failure then looks like a wrong fix. ``text_tool_call`` finds such a call so the loop can raise a
``text_tool_call`` incident; the run itself still ends as the model left it (the verifiers judge it).

Rules: only a JSON object whose ``name`` is one of the offered tools and whose ``arguments`` (or
``parameters``) is an object or a JSON text counts; a list of such objects counts by its first; prose that
merely mentions a tool does not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

__all__ = ["text_tool_call"]

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCED = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?```", re.DOTALL)


def _candidates(text: str) -> Iterator[tuple[str, str]]:
    """(where, JSON text) for each place a call may be written: tags, fences, the whole text."""
    for match in _TAGGED.finditer(text):
        yield "in <tool_call> tags", match.group(1)
    for match in _FENCED.finditer(text):
        yield "in a fenced block", match.group(1)
    yield "as bare JSON", text.strip()


def _called(candidate: str, offered: frozenset[str]) -> str | None:
    """The tool ``candidate`` (JSON text) calls when it is a call of an offered tool, else None."""
    try:
        value = json.loads(candidate)
    except ValueError:
        return None
    if isinstance(value, list) and value:
        value = value[0]
    if not isinstance(value, dict):
        return None
    name = value.get("name")
    arguments = value.get("arguments", value.get("parameters"))
    if not isinstance(name, str) or name not in offered:
        return None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    return name if isinstance(arguments, dict) else None


def text_tool_call(text: str, offered: tuple[str, ...]) -> str | None:
    """Why ``text`` (a final answer) is a call of an offered tool written as text, or None when it is not.

    Returns:
        ``the final text is a call of edit_file written in <tool_call> tags, not a tool call: the server did
        not parse it (serve the model with a tool-call parser, or a template that has one)``.
    """
    if not text.strip() or not offered:
        return None
    names = frozenset(offered)
    for where, candidate in _candidates(text):
        name = _called(candidate, names)
        if name is not None:
            return (
                f"the final text is a call of {name} written {where}, not a tool call: the server did not "
                "parse it (serve the model with a tool-call parser, or a chat template that has one)"
            )
    return None
