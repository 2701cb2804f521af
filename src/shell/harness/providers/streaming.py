"""The base of the three HTTP providers: a wire format (``alisio.core.harness.wire``) over the shared
``Transport``.

A provider subclass says only what is its format's: ``api`` (which core module reads the answers), the
request body, and the headers that carry the key. Everything else (retries, the deadline, the size cap, the
endpoint gate, redaction) is the transport's, so the three providers behave the same way on the network.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from datetime import datetime
from types import TracebackType
from typing import ClassVar, Self, TypedDict, Unpack

import httpx
import msgspec

from alisio.core.harness.protocol import ProviderRequest, StreamEvent
from alisio.core.harness.wire import Api, body_events, path_of, stream_decoder
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


class StreamingProvider(ABC):
    """Streams one wire format from an endpoint; subclasses give ``api``, ``request_body`` and ``key_headers``.

    Args:
        base_url: e.g. ``https://api.openai.com/v1``, ``https://api.anthropic.com/v1``.
        model: used when a request names no model.
        api_key: the key, or ``None`` for servers that need none.
        provider_id: the label recorded in events and reports (``provider.id``); the format's default otherwise.
        extra_headers: ``provider.headers``, sent with every request (never logged or stored).
        **options: the transport's settings (``TransportOptions``).
    """

    api: ClassVar[Api]
    default_id: ClassVar[str]

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        provider_id: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        **options: Unpack[TransportOptions],
    ) -> None:
        self._provider_id = provider_id or self.default_id
        self._model = model
        base = base_url.rstrip("/")
        key = api_key or None
        headers = _merged(self.format_headers(), extra_headers or {})  # may replace a format header
        headers = _merged(headers, self.key_headers(key) if key else {})  # never the key's
        hidden = tuple((extra_headers or {}).values())
        self._transport = Transport(
            base + path_of(self.api), base, headers=headers, secret=key, hidden=hidden, **options
        )

    @property
    def id(self) -> str:
        """The configured ``provider.id`` (a label of the endpoint; ``provider.api`` picks the format)."""
        return self._provider_id

    @property
    def url(self) -> str:
        """The endpoint requests are posted to, with any user name and password redacted."""
        return self._transport.shown_url

    def key_headers(self, key: str) -> dict[str, str]:
        """The headers that carry ``key`` (``Authorization: Bearer`` unless the format says otherwise)."""
        return {"Authorization": f"Bearer {key}"}

    def format_headers(self) -> dict[str, str]:
        """Headers every request of the format carries (Anthropic's ``anthropic-version``)."""
        return {}

    @abstractmethod
    def request_body(self, request: ProviderRequest) -> dict[str, object]:
        """The JSON body for ``request`` (the model is already filled in); each format gives its own."""

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
            raise ProviderFailure("bad_request", f"no model given for {self.url} (set --model)")
        if model != request.model:
            request = msgspec.structs.replace(request, model=model)
        content = msgspec.json.encode(self.request_body(request))
        api = self.api
        return self._transport.post(
            content,
            lambda: stream_decoder(api),
            lambda body: body_events(api, body),
            on_retry,
            timeout_s=timeout_s,
            on_first_event=on_first_event,
        )


def _merged(headers: Mapping[str, str], over: Mapping[str, str]) -> dict[str, str]:
    """``headers`` with ``over`` laid on top, names compared without case, as HTTP compares them: a
    ``provider.headers`` ``authorization`` replaces ``Authorization`` instead of going out beside it."""
    replaced = {name.lower() for name in over}
    return {**{name: value for name, value in headers.items() if name.lower() not in replaced}, **over}
