"""What the wire formats' parsers share: reading counts, texts and codes from decoded JSON, and the SSE
framing of a response body.

- ``read_count`` reads a token count: an integer from 0 to ``MAX_TOKEN_COUNT`` (a float with an integer value
  is read as that integer); ``None`` when absent or null; any other value (``-5``, ``12.5``, ``"12"``,
  ``10**30``) is named in ``problems`` (``Usage.invalid``);
- ``SseDecoder`` splits a ``text/event-stream`` body into ``SseMessage`` values, fed in chunks cut anywhere
  (inside a line, inside a UTF-8 character, between ``\\r`` and ``\\n``): the same messages come out whatever
  the cuts. Lines end in ``\\n``, ``\\r\\n`` or ``\\r``; ``:`` lines are comments (counted, never events);
  ``data:`` lines of one event are joined by ``\\n``; a blank line ends an event that has data or a name; a
  last event the body ends without a blank line after is still given (servers that close after
  ``data: [DONE]``). Invalid UTF-8 becomes U+FFFD, as a browser's EventSource reads it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import msgspec

from alisio.core.base import Frozen
from alisio.core.harness.protocol import MAX_TOKEN_COUNT, ProviderRequest, ServedEvent

EXCERPT_CHARS = 120


class ChunkError(Frozen, frozen=True, kw_only=True, tag="chunk_error"):
    """An SSE data payload that is not a JSON object. ``str()`` names an excerpt of the payload."""

    message: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.message}: {self.excerpt!r}"


def sampling_fields(request: ProviderRequest, *, seed: bool) -> dict[str, object]:
    """The sampling settings a request carries (``temperature``, ``top_p``, and ``seed`` where the api has
    it), each only when set."""
    fields: dict[str, object] = {"temperature": request.temperature, "top_p": request.top_p}
    if seed:
        fields["seed"] = request.seed
    return {name: value for name, value in fields.items() if value is not None}


class SseMessage(Frozen, frozen=True, kw_only=True):
    """One server-sent event: its ``event:`` name (``message`` when none) and its joined ``data:`` lines."""

    event: str = "message"
    data: str = ""


class SseDecoder:
    """An incremental ``text/event-stream`` parser (sans I/O: the caller feeds bytes; see the module rules)."""

    def __init__(self) -> None:
        self._pending = bytearray()
        self._after_cr = False
        self._event = ""
        self._data: list[str] = []
        self.comments = 0
        """How many ``:`` comment lines (keep-alives) were read."""

    def feed(self, chunk: bytes) -> list[SseMessage]:
        """The events completed by ``chunk``."""
        out: list[SseMessage] = []
        start = 1 if self._after_cr and chunk[:1] == b"\n" else 0
        self._after_cr = False
        position = start
        while position < len(chunk):
            byte = chunk[position]
            if byte not in (10, 13):
                position += 1
                continue
            self._pending += chunk[start:position]
            self._line(bytes(self._pending), out)
            self._pending.clear()
            position += 1
            if byte == 13:
                if position == len(chunk):
                    self._after_cr = True  # a \n opening the next chunk ends this same line
                elif chunk[position] == 10:
                    position += 1
            start = position
        if start < len(chunk):
            self._pending += chunk[start:]
        return out

    def close(self) -> list[SseMessage]:
        """The last event, when the body ended without the blank line that would have ended it."""
        out: list[SseMessage] = []
        if self._pending:
            self._line(bytes(self._pending), out)
            self._pending.clear()
        self._line(b"", out)
        return out

    def _line(self, raw: bytes, out: list[SseMessage]) -> None:
        line = raw.decode("utf-8", errors="replace")
        if not line:
            if self._data or self._event:
                out.append(SseMessage(event=self._event or "message", data="\n".join(self._data)))
            self._event = ""
            self._data = []
            return
        if line.startswith(":"):
            self.comments += 1
            return
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value


def sse_messages(body: bytes) -> tuple[SseMessage, ...]:
    """Every event of a whole ``text/event-stream`` body."""
    decoder = SseDecoder()
    return (*decoder.feed(body), *decoder.close())


def read_count(table: Mapping[str, object], key: str, prefix: str, problems: list[str]) -> int | None:
    """The count ``table[key]``: ``None`` when absent or null; a value that is no count (not an integer from 0 to
    ``MAX_TOKEN_COUNT``) is added to ``problems``."""
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_TOKEN_COUNT:
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKEN_COUNT:
        return value
    shown = (
        msgspec.json.encode(value).decode() if isinstance(value, int | float | str | bool) else "an object"
    )
    problems.append(f"{prefix}{key} is {excerpt(shown)}")
    return None


def mapping(value: object) -> Mapping[str, object]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def text_of(value: object) -> str | None:
    """A non-empty string, else ``None``."""
    return value if isinstance(value, str) and value else None


def served_by(table: Mapping[str, object]) -> tuple[ServedEvent, ...]:
    """The served model an answer names in ``table``'s ``model`` (Anthropic's ``message_start.message``,
    Responses' ``response``): "served by" in the reports; empty when it names none."""
    model = text_of(table.get("model"))
    return (ServedEvent(model=model),) if model else ()


def int_of(value: object) -> int | None:
    """An integer that is not a boolean, else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def code_of(value: object) -> str | None:
    """An error code as text (``429``, ``"overloaded_error"``), else ``None``."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | str):
        return str(value)
    return None


def excerpt(text: str) -> str:
    """``text`` cut to ``EXCERPT_CHARS`` characters, with an ellipsis when cut."""
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "…"


def json_text(value: object) -> str:
    """``value`` as compact JSON text, keys in the order they were decoded (as the provider sent them)."""
    return msgspec.json.encode(value).decode()


def openai_error_body(status: int, kind: str | None, message: str) -> bytes:
    """An error in OpenAI's shape (Chat Completions, Responses): ``{"error": {"message", "type", "code"}}``;
    a 401 is ``invalid_api_key``; ``kind`` ``None`` is a ``server_error`` with no code."""
    if kind is None:
        return json_body({"error": {"message": message, "type": "server_error"}})
    code = "invalid_api_key" if status == 401 else kind
    shape = "invalid_request_error" if status == 401 else kind
    return msgspec.json.encode({"error": {"message": message, "type": shape, "code": code}})


def no_retry_hint(body: object) -> float | None:
    """The retry hint of a format whose error bodies carry none (its ``Retry-After`` header says it)."""
    return None


def no_retry_info(body: bytes, seconds: float) -> bytes:
    """The 429 body of a format whose error bodies carry no retry hint: ``body`` as is."""
    return body


def positive(value: object) -> int | None:
    """A positive integer (not a boolean), else ``None``."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def tools_by_name(tools: object) -> tuple[tuple[str, Mapping[str, object]], ...]:
    """Each tool's name and parameter schema, for tools listed flat (``{"name", "parameters"}``, Anthropic's
    ``input_schema``) or nested (Chat Completions' ``{"function": {"name", "parameters"}}``)."""
    found: list[tuple[str, Mapping[str, object]]] = []
    for tool in tools if isinstance(tools, list) else []:
        table = mapping(tool)
        function = table.get("function")
        holder = function if isinstance(function, Mapping) else table
        name = holder.get("name")
        schema = holder.get("parameters") or holder.get("input_schema")
        if isinstance(name, str) and name:
            found.append((name, mapping(schema)))
    return tuple(found)


def json_body(value: object) -> bytes:
    """``value`` as JSON written as Python's ``json`` writes it (``", "``, ``": "``, ASCII): how the mock
    endpoint's answers have always looked."""
    return json.dumps(value).encode()


def sse_body(events: list[tuple[str | None, object]]) -> bytes:
    """A ``text/event-stream`` body of ``(event name or None, data)`` events (the data as ``json_body``)."""
    named = ((f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n" for name, data in events)
    return "".join(named).encode()
