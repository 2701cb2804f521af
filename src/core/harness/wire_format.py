"""The record of one wire format: ``WireFormat``, every fact the lab needs of an api, in one place.

Each codec module ends with its record (``sse.FORMAT``, ``wire_responses.FORMAT``, ``wire_anthropic.FORMAT``,
``wire_gemini.FORMAT``) and ``alisio.core.harness.wire`` registers them under the ``Api`` names. Everything
that differs between apis is read off the record, by the built-in provider and the recording proxy alike:

- **where**: the path of a model call after the base URL (``path``: a function of the model, which Gemini puts
  in the URL), the paths that are one (``model_calls``: templates where ``{model}`` stands for a model name,
  each saying whether its answer streams, else the body's ``model`` and ``stream`` say it), the requests that
  are no model call (``side_paths``), and the version segment an agent's SDK puts before them;
- **the key**: the header that carries it and how it is written (``key_header``, ``key_prefix``), the headers
  every request carries, and the environment variables an agent reads its key and base URL from;
- **the request**: where the conversation and the tools sit (``conversation``, ``tool_schemas``), which
  conversation items are the model's turns and which are tool results, the sampling settings it takes, and
  the output limit a request declares (what the proxy reserves against a token budget);
- **the codec**: the request builder, the stream decoder, the reader of a non-streamed body, the retry hint
  of an error body, the api's error shape (with the error type of each injected fault, its request-id header
  and how a 429 carries its retry hint), and the encoder of an answer (the mock endpoint's);
- **usage**: how the provider counts, in words (``usage_convention``); the decoder normalises it to the lab's
  convention (``inputTokens`` includes cached input, ``outputTokens`` includes reasoning).

Rules: a record is complete (``tests/property/test_wire_formats.py`` checks every ``Api`` member has one, and
every field is set); nothing outside a codec module branches on an api's name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from returns.result import Result

from alisio.core.harness.protocol import ProviderRequest, ProviderResponse, StreamEvent
from alisio.core.harness.wire_common import ChunkError

__all__ = ["MODEL", "SAMPLING_KEYS", "CallPath", "StreamDecoder", "WireFormat", "path_matches"]

SAMPLING_KEYS: Final[Mapping[str, str]] = {"temperature": "temperature", "top_p": "topP", "seed": "seed"}
"""The sampling settings of ``[sampling]`` (their field, their key) a format may take."""


class StreamDecoder(Protocol):
    """What each format's stream decoder offers (``sse.ChatStream``, ``AnthropicStream``, ...)."""

    done: bool
    """True once the format's last event arrived (``[DONE]``, ``message_stop``, ``response.completed``;
    Gemini has none: its stream ends with the connection)."""

    def feed(self, event: str, data: str) -> Result[tuple[StreamEvent, ...], ChunkError]:
        """The stream events of one SSE event (``event``: its name, ``message`` when unnamed)."""
        ...


@dataclass(frozen=True, kw_only=True)
class CallPath:
    """What a model call's path says: the model (``None``: the body says it) and whether the answer streams
    (``None``: the body's ``stream`` says it)."""

    model: str | None
    stream: bool | None


MODEL: Final = "{model}"
"""In a path template: one model name (``gemini-2.5-flash``), a letter or digit then letters, digits, ``.``,
``_`` or ``-``; never a ``/``, a ``%`` or a dot segment."""
_MODEL_NAME: Final = r"(?P<model>[A-Za-z0-9][A-Za-z0-9._-]{0,199})"


def path_matches(template: str, path: str) -> re.Match[str] | None:
    """Whether ``path`` is, byte for byte, ``template`` with a model name for its ``{model}``."""
    before, found, after = template.partition(MODEL)
    pattern = re.escape(before) + (_MODEL_NAME + re.escape(after) if found else "")
    return re.fullmatch(pattern, path)


@dataclass(frozen=True, kw_only=True)
class WireFormat:
    """Every fact of one wire format (see the module docstring)."""

    api: str
    """Its ``provider.api`` name."""
    title: str
    """Its name for people: ``Chat Completions``, ``Anthropic Messages``."""
    default_id: str
    """The ``provider`` label of a provider built for it with no ``provider.id``."""

    # --- where ------------------------------------------------------------------------------------------
    path: Callable[[str], str]
    """The path (and query) of a streamed model call for a model, after the base URL: ``/chat/completions``,
    ``/models/gemini-2.5-flash:streamGenerateContent?alt=sse``."""
    model_calls: tuple[tuple[str, bool | None], ...]
    """Every path of a (``POST``) model call after the base URL, without its query, as a template (``{model}``:
    a model name), and whether its answer streams (``None``: the body's ``stream`` says)."""
    side_paths: tuple[tuple[str, str], ...]
    """Requests that are no model call and spend no tokens: ``(method, path template after the base URL)``."""
    version: str
    """The version segment an agent's requests start with (``/v1``; Gemini ``/v1beta``)."""
    sdk_adds_version: bool
    """Whether an agent's SDK adds ``version`` to the base URL it is given (Anthropic's and Google's do)."""

    # --- the key ----------------------------------------------------------------------------------------
    key_header: str
    key_prefix: str
    """Written before the key in ``key_header`` (``Bearer `` for ``Authorization``)."""
    format_headers: tuple[tuple[str, str], ...]
    """Headers every request carries (Anthropic's ``anthropic-version``)."""
    key_env: str
    """The variable a key is read from when ``provider.apiKeyEnv`` names none; an agent's key variable."""
    base_url_env: str
    """The variable an agent of this api reads its base URL from."""

    # --- the request ------------------------------------------------------------------------------------
    conversation: str
    """The request's key holding the conversation (``messages``, ``input``, ``contents``)."""
    tool_schemas: Callable[[object], tuple[tuple[str, Mapping[str, object]], ...]]
    """The request's ``tools`` value -> each tool's name and its parameter schema, in order."""
    assistant_item: Callable[[Mapping[str, object]], bool]
    """Whether a conversation item is (part of) the model's turn."""
    tool_result_item: Callable[[Mapping[str, object]], bool]
    """Whether a conversation item carries a tool result."""
    sampling: tuple[str, ...]
    """The ``SAMPLING_KEYS`` fields it takes (a setting it has no key for is refused, never dropped)."""
    max_temperature: float
    output_limit: Callable[[Mapping[str, object]], int | None]
    """The most output tokens a request body declares, ``None`` when it declares no bound."""

    # --- the codec --------------------------------------------------------------------------------------
    request_body: Callable[[ProviderRequest, str], dict[str, object]]
    """``(request, base URL)`` -> the JSON body of a streamed model call (the model already filled in)."""
    stream_decoder: Callable[[], StreamDecoder]
    body_events: Callable[[Mapping[str, object]], tuple[StreamEvent, ...] | None]
    """A non-streamed JSON answer or error body -> its events; ``None`` when it is not one of this api."""
    retry_after: Callable[[object], float | None]
    """Seconds an error body asks to wait (Gemini's ``RetryInfo``), ``None`` when it says none."""
    error_body: Callable[[int, str | None, str], bytes]
    """``(status, kind, message)`` -> an error in the api's shape (``kind`` ``None``: a server error)."""
    fault_kinds: Mapping[str, str | None]
    """The ``kind`` of ``error_body`` each injected error fault (``429``, ``500``, ``503``) is sent with:
    the api's error type (Anthropic's ``overloaded_error`` for a 503), ``None`` for its server error (Gemini's
    are all ``None``: the status text its ``error_body`` writes says it all)."""
    request_id_header: str | None
    """The header its answers carry their request id in (``x-request-id``, Anthropic's ``request-id``;
    ``None``: it sends none)."""
    retry_info: Callable[[bytes, float], bytes]
    """``(a 429 error body, seconds to wait)`` -> the body with the retry hint its clients read (Gemini's
    ``RetryInfo``: what ``retry_after`` reads back); the others' unchanged (their ``retry-after`` header)."""
    render: Callable[[str, ProviderResponse, bool], tuple[str, bytes]]
    """``(model, answer, streamed)`` -> content type and body of that answer as a provider sends it."""
    token_count: Callable[[int], bytes]
    """The answer to a token-count side request (Anthropic's, Gemini's) counting that many tokens."""

    usage_convention: str
    """How the provider counts, in words (its own usage object is kept in ``Usage.provider_fields``)."""

    def call_path(self, path: str, method: str = "POST") -> CallPath | None:
        """What ``path`` (after the base URL, without its query) says, when it is a model call."""
        if method != "POST":
            return None
        for template, stream in self.model_calls:
            found = path_matches(template, path)
            if found is not None:
                return CallPath(model=found.groupdict().get("model"), stream=stream)
        return None

    def side_call(self, method: str, path: str) -> bool:
        """Whether ``method`` ``path`` (after the base URL) is one of ``side_paths``."""
        return any(method == m and path_matches(t, path) for m, t in self.side_paths)

    def key_headers(self, key: str) -> dict[str, str]:
        """The header that carries ``key``."""
        return {self.key_header: self.key_prefix + key}
