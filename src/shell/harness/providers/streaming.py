"""The HTTP provider of every wire format: a format's record (``alisio.core.harness.wire_format``) over the
shared ``Transport``.

The record says what is the format's: the request body, the path of a model call (which may name the model:
Gemini's), the header that carries the key and the headers every request carries, and how the answer is
read. Everything else (retries, the deadline, the size cap, the endpoint gate, redaction) is the transport's,
so every api behaves the same way on the network. The provider knows the endpoint and builds each call's URL
(base URL + the record's path for the call's model); the transport knows the network.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from types import TracebackType
from typing import Self, TypedDict, Unpack

import httpx
import msgspec

from alisio.core.harness.endpoint import redact_credentials
from alisio.core.harness.protocol import ProviderRequest, StreamEvent
from alisio.core.harness.wire import DEFAULT_API, Api, wire_format
from alisio.shell.harness.providers.base import FirstEvent, ProviderFailure, RetryNotice
from alisio.shell.harness.providers.gate import Gate
from alisio.shell.harness.providers.transport import Transport

__all__ = ["StreamingProvider", "TransportOptions"]


class TransportOptions(TypedDict, total=False):
    """The ``Transport`` settings a provider passes on (see ``alisio.shell.harness.providers.transport``)."""

    client: httpx.Client | None
    max_retries: int
    backoff_base: float
    backoff_cap: float
    retry_after_cap: float
    connect_timeout: float
    read_timeout: float
    sleep: Callable[[float], None]
    clock: Callable[[], float]
    now: Callable[[], datetime]
    jitter: Callable[[float], float] | None
    max_response_bytes: int
    gate: Gate | None
    rate_limit_give_up_s: float


class StreamingProvider:
    """Streams one wire format from an endpoint.

    Args:
        base_url: e.g. ``https://api.openai.com/v1``, ``https://api.anthropic.com/v1``.
        model: used when a request names no model.
        api: the wire format (``provider.api``).
        api_key: the key, or ``None`` for servers that need none.
        provider_id: the label recorded in events and reports (``provider.id``); the format's default otherwise.
        extra_headers: ``provider.headers``, sent with every request (never logged or stored).
        **options: the transport's settings (``TransportOptions``).
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api: Api = DEFAULT_API,
        api_key: str | None = None,
        provider_id: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        **options: Unpack[TransportOptions],
    ) -> None:
        self.api = api
        self.wire = wire_format(api)
        self._provider_id = provider_id or self.wire.default_id
        self._model = model
        self._base = base_url.rstrip("/")
        key = api_key or None
        headers = _merged(dict(self.wire.format_headers), extra_headers or {})  # may replace a format header
        headers = _merged(headers, self.wire.key_headers(key) if key else {})  # never the key's
        hidden = tuple((extra_headers or {}).values())
        self._transport = Transport(self._base, headers=headers, secret=key, hidden=hidden, **options)

    @property
    def id(self) -> str:
        """The configured ``provider.id`` (a label of the endpoint; ``provider.api`` picks the format)."""
        return self._provider_id

    def url_for(self, model: str) -> str:
        """The endpoint a model call for ``model`` is posted to."""
        return self._base + self.wire.path(model)

    @property
    def url(self) -> str:
        """The endpoint of the default model's calls, with any user name and password redacted."""
        return redact_credentials(self.url_for(self._model or "MODEL"))

    def request_body(self, request: ProviderRequest) -> dict[str, object]:
        """The JSON body for ``request`` (the model is already filled in): the record's builder."""
        return self.wire.request_body(request, self._base)

    def close(self) -> None:
        """Close the HTTP client if this provider created it."""
        self._transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def stream(
        self,
        request: ProviderRequest,
        on_retry: RetryNotice | None = None,
        *,
        timeout_s: float | None = None,
        on_first_event: FirstEvent | None = None,
    ) -> tuple[StreamEvent, ...]:
        """Send ``request`` and return every stream event (``timeout_s`` bounds the whole call)."""
        model = request.model or self._model
        if not model:
            shown = redact_credentials(self._base + self.wire.path("MODEL"))
            raise ProviderFailure("bad_request", f"no model given for {shown} (set --model)")
        if model != request.model:
            request = msgspec.structs.replace(request, model=model)
        content = msgspec.json.encode(self.request_body(request))
        return self._transport.post(
            self.url_for(model),
            content,
            self.wire,
            on_retry,
            timeout_s=timeout_s,
            on_first_event=on_first_event,
        )


def _merged(headers: Mapping[str, str], over: Mapping[str, str]) -> dict[str, str]:
    """``headers`` with ``over`` laid on top, names compared without case, as HTTP compares them: a
    ``provider.headers`` ``authorization`` replaces ``Authorization`` instead of going out beside it."""
    replaced = {name.lower() for name in over}
    return {**{name: value for name, value in headers.items() if name.lower() not in replaced}, **over}
