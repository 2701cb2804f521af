"""The HTTP transport every streamed provider shares: one POST per attempt, with retries, a deadline, a size cap
and the endpoint gate. The wire format (the body, the headers, how the stream's events are read) is the
provider's; everything about getting the bytes is here, once.

Rules:

- **URL.** Each call is posted to the URL it is given (``post(url, ...)``, as an httpx transport handles the
  request it is given): the provider knows the endpoint (its base URL + the format's path, which may name the
  model), the transport the network. The base URL is passed *with* its version segment
  (``https://api.openai.com/v1``, ``https://api.anthropic.com/v1``); nothing is guessed, and a 404 from a base
  URL without one says so.
- **Secrets.** The key travels only in the headers the provider gives. It never appears in an event, an
  exception message or a retry notice; a provider message echoing it is redacted, and so are key-shaped
  strings (``sk-…`` and so ``sk-ant-…``, ``gsk-…``, ``xai-…``, Google's ``AIza…``). A user name and password
  in the base URL are sent as
  HTTP basic auth by httpx and shown nowhere (``alisio.core.harness.endpoint.redact_credentials``).
- **Stream.** SSE via httpx-sse; each event goes to the format's decoder (the record's, ``alisio.core.harness
  .wire_format``), which says when the stream is done (``[DONE]``, ``message_stop``, ``response.completed``;
  a format without an end event ends with the connection). A stream that ends
  before it returns its events: ``alisio.core.harness.protocol.assemble`` reports the truncation. A malformed
  event raises ``ProviderFailure("protocol")`` naming an excerpt. A 200 answer with a JSON body instead of a
  stream is read as one non-streamed answer of the format.
- **Retries.** 408, 429, 5xx (Anthropic's 529 included), connection errors and timeouts *before any event
  arrived* are retried up to ``max_retries`` times with exponential backoff and full jitter
  (``uniform(0, min(cap, base * 2**n))``), or after exactly ``Retry-After`` / ``retry-after-ms`` (seconds or an
  HTTP date) or, without those headers, the wait the error body names (the record's ``retry_after``: Gemini's
  ``RetryInfo.retryDelay``), capped at ``retry_after_cap``; then ``ProviderFailure`` ``rate_limited`` / ``server`` /
  ``network`` / ``timeout``. Other 4xx fail at once (``auth`` for 401/403, else ``bad_request``) with the
  provider's error message.
- **Giving up on 429s.** Once the endpoint has refused every request with 429 for ``rate_limit_give_up_s``
  (``provider.rateLimitGiveUpMs``, default 120 s) with no answer in between, a 429 is no longer retried:
  ``ProviderFailure("rate_limited")`` whose message contains ``GIVE_UP_MARK``, which stops the command as a
  refused key does (``alisio.shell.lab.pipeline``). The clock is shared by every run using this transport.
- **Deadline.** ``timeout_s`` bounds the whole call, retries included: each connect and read waits at most
  what is left, the stream stops at the first chunk after the deadline, and a retry whose wait would end past
  it is not attempted. A call cut off raises ``ProviderFailure("deadline")`` (never retried) carrying the
  events received before the cut (``partial``), so the agent can show what was streamed. The deadline is
  checked on every chunk read, so keep-alive comments cannot keep a call running.
- **Size.** One response body may be at most ``max_response_bytes`` (``provider.maxResponseBytes``); past it
  the call stops with ``ProviderFailure("too_large")``, never retried.
- **Injected faults.** The client's transport is ``faults.FaultTransport``: a run with ``--faults`` gets its
  scheduled 429s, 5xx, stalls, cuts and slow answers below this module, which retries them as it would a
  provider's; the run's ``retries.max`` replaces ``max_retries`` (``faults.current_retries``).
- **Dropped streams.** A connection that breaks after at least one event arrived is *not* retried: the
  partial answer is discarded and ``ProviderFailure("network" | "timeout")`` says how many events had arrived.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx
import msgspec
from httpx_sse import EventSource, connect_sse
from returns.result import Failure, Success

from alisio.core.harness.config import DEFAULT_MAX_RESPONSE_BYTES
from alisio.core.harness.endpoint import redact_credentials
from alisio.core.harness.faults import DEFAULT_READ_TIMEOUT_MS
from alisio.core.harness.protocol import StreamEvent, served_changes
from alisio.core.harness.sse import error_message
from alisio.core.harness.wire_format import StreamDecoder, WireFormat
from alisio.shell import cancel
from alisio.shell.harness.providers.base import (
    GIVE_UP_MARK,
    FailureKind,
    FirstEvent,
    ProviderFailure,
    RetryNotice,
)
from alisio.shell.harness.providers.faults import FaultTransport, current_retries
from alisio.shell.harness.providers.gate import Gate, GateTimeout

__all__ = ["DEFAULT_RATE_LIMIT_GIVE_UP_S", "GIVE_UP_MARK", "Transport"]

EXCERPT_CHARS = 200
DEFAULT_RATE_LIMIT_GIVE_UP_S = 120.0
_KEY_SHAPE = re.compile(r"\b(sk|gsk|xai)-[A-Za-z0-9_\-*]{6,}")
_GOOGLE_KEY_SHAPE = re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}")


@dataclass(frozen=True)
class _Call:
    """One call: where it goes (``shown``: without credentials), its body and its format's record."""

    url: str
    shown: str
    content: bytes
    wire: WireFormat


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _not_found_hint(base_url: str, url: str) -> str:
    """What a 404 says of the base URL: that it already ends with the path the format adds (the whole endpoint
    pasted as the base URL), or that it has no version segment; ``""`` when neither."""
    path = url[len(base_url) :] if url.startswith(base_url) else ""
    base = base_url.rstrip("/")
    if path and base.endswith(path):
        meant = redact_credentials(base[: -len(path)])
        return f" (the base URL already ends with {path}, which alisio adds itself; did you mean {meant}?)"
    if not re.search(r"/v\d+[a-z]*(/|$)", base_url):
        return f" (the base URL has no version segment; did you mean {redact_credentials(base_url)}/v1?)"
    return ""


class _Retryable(Exception):
    """An attempt that failed in a way worth retrying; ``failure`` is raised once retries run out."""

    def __init__(self, failure: ProviderFailure, retry_after: float | None = None) -> None:
        super().__init__(failure.message)
        self.failure = failure
        self.retry_after = retry_after


class Transport:
    """POSTs one JSON body and reads the streamed answer (see the module docstring for every rule).

    Args:
        base_url: the base URL as configured (for the "no version segment" hint of a 404).
        headers: sent with every attempt (the key's header included); ``secret`` is redacted from messages.
        client: an ``httpx.Client`` to use (tests, proxies); one is created and owned otherwise.
        max_retries, backoff_base, backoff_cap, retry_after_cap, connect_timeout, read_timeout: as named
            (seconds).
        sleep, clock, now, jitter: the waits, the monotonic clock, the UTC time (for Retry-After dates) and
            the jitter draw, passed in by tests.
        max_response_bytes: ``provider.maxResponseBytes``.
        gate: shared by the concurrent runs of a command (``None``: no cap).
        rate_limit_give_up_s: ``provider.rateLimitGiveUpMs`` / 1000.
    """

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str],
        secret: str | None = None,
        hidden: tuple[str, ...] = (),
        client: httpx.Client | None = None,
        max_retries: int = 4,
        backoff_base: float = 0.5,
        backoff_cap: float = 20.0,
        retry_after_cap: float = 60.0,
        connect_timeout: float = 10.0,
        read_timeout: float = DEFAULT_READ_TIMEOUT_MS / 1000,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = _utc_now,
        jitter: Callable[[float], float] | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        gate: Gate | None = None,
        rate_limit_give_up_s: float = DEFAULT_RATE_LIMIT_GIVE_UP_S,
    ) -> None:
        self._base_url = base_url
        self._headers = {"Content-Type": "application/json", **headers}
        self._secret = secret or None
        self._hidden = tuple(value for value in hidden if len(value) >= 4)
        """``provider.headers`` values: redacted from every message, as the key is (a provider that echoes
        a header in its error body must not get it into an event or a report)."""
        self._owns_client = client is None
        self._timeout = httpx.Timeout(read_timeout, connect=connect_timeout)
        self._client = client if client is not None else _own_client(self._timeout)
        self._read_timeout = read_timeout
        self._connect_timeout = connect_timeout
        self._max_retries = max_retries
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        self._retry_after_cap = retry_after_cap
        self._sleep = sleep
        self._clock = clock
        self._now = now
        rng = random.Random()
        self._jitter = jitter if jitter is not None else (lambda upper: rng.uniform(0.0, upper))
        self._max_response_bytes = max_response_bytes
        self._gate = gate
        self._give_up_s = rate_limit_give_up_s
        self._refused_since: float | None = None
        self._refusals = threading.Lock()

    def close(self) -> None:
        """Close the HTTP client if this transport created it."""
        if self._owns_client:
            self._client.close()

    def post(
        self,
        url: str,
        content: bytes,
        wire: WireFormat,
        on_retry: RetryNotice | None = None,
        *,
        timeout_s: float | None = None,
        on_first_event: FirstEvent | None = None,
    ) -> tuple[StreamEvent, ...]:
        """POST ``content`` to ``url`` and return every stream event of the answer, read with ``wire``'s
        codec, retrying as the module docstring says.

        ``on_first_event`` is called once per attempt, when the first event of the answer arrives.
        """
        call = _Call(url, redact_credentials(url), content, wire)
        deadline = None if timeout_s is None else self._clock() + timeout_s
        retries = current_retries(self._max_retries)  # the run's retries.max, when a run set it
        attempt = 0
        while True:
            try:
                return self._gated_attempt(call, deadline, timeout_s, on_first_event)
            except _Retryable as retryable:
                attempt += 1
                delay = self._before_retry(call, retryable, attempt, retries, deadline, timeout_s)
                if on_retry is not None:
                    on_retry(f"{retryable.failure.message}; retry {attempt} of {retries} in {delay:.1f} s")
                self._sleep(delay)
            except ProviderFailure as failure:
                if (
                    deadline is not None
                    and failure.kind in ("timeout", "network")
                    and self._clock() >= deadline
                ):
                    raise self._deadline_failure(call, timeout_s, failure.partial) from None
                raise

    def _before_retry(
        self,
        call: _Call,
        retryable: _Retryable,
        attempt: int,
        retries: int,
        deadline: float | None,
        timeout_s: float | None,
    ) -> float:
        """The wait before retry ``attempt`` of ``retries``; raises the failure when no retry is to be made."""
        if deadline is not None and self._clock() >= deadline:
            raise self._deadline_failure(call, timeout_s) from None
        if attempt > retries:
            raise retryable.failure from None
        delay = self._delay(attempt - 1, retryable.retry_after)
        if deadline is not None and self._clock() + delay >= deadline:
            # Waiting out the time left would only end in the same failure: report it now.
            failure = retryable.failure
            line = (
                f"{failure.message} (not retried: the {delay:.1f} s wait would outlast the call's deadline)"
            )
            raise ProviderFailure(failure.kind, line, failure.status) from None
        if self._gate is not None and retryable.retry_after is not None:
            self._gate.pause(delay)  # the endpoint asked to wait: every worker of it waits
        return delay

    def _gated_attempt(
        self, call: _Call, deadline: float | None, timeout_s: float | None, first: FirstEvent | None = None
    ) -> tuple[StreamEvent, ...]:
        if self._gate is None:
            return self._attempt(call, deadline, first)
        try:
            with self._gate.slot(deadline):
                return self._attempt(call, deadline, first)
        except GateTimeout:
            raise self._deadline_failure(call, timeout_s) from None

    def _deadline_failure(
        self, call: _Call, timeout_s: float | None, partial: tuple[StreamEvent, ...] = ()
    ) -> ProviderFailure:
        line = f"the call to {call.shown} did not finish within the {timeout_s or 0:.1f} s it was given"
        failure = ProviderFailure("deadline", line)
        failure.partial = partial
        return failure

    def _timeout_until(self, deadline: float | None) -> httpx.Timeout:
        if deadline is None:
            return self._timeout
        left = max(0.001, deadline - self._clock())
        return httpx.Timeout(min(self._read_timeout, left), connect=min(self._connect_timeout, left))

    # --- one attempt --------------------------------------------------------------------------------------

    def _attempt(
        self, call: _Call, deadline: float | None, first: FirstEvent | None = None
    ) -> tuple[StreamEvent, ...]:
        with (
            self._transport_errors(call, received=0),
            connect_sse(
                self._client,
                "POST",
                call.url,
                content=call.content,
                headers=self._headers,
                timeout=self._timeout_until(deadline),
            ) as source,
        ):
            response = source.response
            guard = _GuardedStream(
                response.stream, self._max_response_bytes, lambda received: self._too_large(call, received)
            )
            response.stream = guard
            if not response.is_success:
                response.read()
                raise self._http_failure(call, response)
            self._answered()
            content_type = response.headers.get("content-type", "")
            if "text/event-stream" not in content_type:
                response.read()
                if first is not None:
                    first()
                return self._non_stream(call, response, content_type)
            return self._read_stream(call, source, deadline, guard, first)

    def _too_large(self, call: _Call, received: int) -> ProviderFailure:
        return ProviderFailure(
            "too_large",
            f"the response from {call.shown} passed {self._max_response_bytes} bytes "
            f"(provider.maxResponseBytes) after {received} bytes without ending; the partial response was "
            "discarded",
        )

    def _read_stream(
        self,
        call: _Call,
        source: EventSource,
        deadline: float | None,
        guard: _GuardedStream,
        first: FirstEvent | None = None,
    ) -> tuple[StreamEvent, ...]:
        decoder: StreamDecoder = call.wire.stream_decoder()
        events: list[StreamEvent] = []
        received = 0

        def past_deadline() -> None:
            cancel.check()  # Ctrl-C while runs stream on worker threads: drop the stream at the next chunk
            if deadline is not None and self._clock() >= deadline:
                failure = ProviderFailure(
                    "deadline",
                    f"the stream from {call.shown} was still running when its time ran out "
                    f"({received} events received; the partial response was discarded)",
                )
                failure.partial = tuple(events)
                raise failure

        # Keep-alive comments never reach iter_sse, and each one restarts the read timeout: check the
        # deadline on every chunk of bytes, so a server sending only comments cannot outlive the call.
        guard.check = past_deadline
        try:
            with self._transport_errors(call, received=lambda: received):
                for sse in source.iter_sse():
                    if received == 0 and first is not None:
                        first()
                    received += 1
                    past_deadline()
                    match decoder.feed(sse.event or "message", sse.data):
                        case Success(found):
                            events.extend(found)
                        case Failure(error):
                            raise ProviderFailure("protocol", self._redact(f"{call.shown}: {error}"))
                    if decoder.done:
                        break
        except ProviderFailure as failure:
            failure.partial = failure.partial or tuple(events)  # a read that timed out at the deadline
            raise
        return served_changes(tuple(events))

    def _non_stream(
        self, call: _Call, response: httpx.Response, content_type: str
    ) -> tuple[StreamEvent, ...]:
        try:
            body: object = msgspec.json.decode(response.content)
        except msgspec.DecodeError:
            body = None
        events = call.wire.body_events(body) if isinstance(body, dict) else None
        if events is not None:
            return events
        raise ProviderFailure(
            "protocol",
            self._redact(
                f"{call.shown} answered {content_type or 'without a content type'} instead of "
                f"text/event-stream: {_excerpt(response.text)!r}"
            ),
            response.status_code,
        )

    @contextmanager
    def _transport_errors(self, call: _Call, received: int | Callable[[], int]) -> Iterator[None]:
        """Translate httpx's transport errors into retryable or final ``ProviderFailure``s (one place)."""
        try:
            yield
        except httpx.TransportError as error:
            count = received() if callable(received) else received
            kind: FailureKind = "timeout" if isinstance(error, httpx.TimeoutException) else "network"
            detail = _excerpt(str(error)) or type(error).__name__
            if count == 0:
                raise _Retryable(
                    ProviderFailure(kind, self._redact(f"{kind} error calling {call.shown}: {detail}"))
                ) from None
            raise ProviderFailure(
                kind,
                self._redact(
                    f"the stream from {call.shown} broke off mid-stream after {count} events ({detail}); "
                    "the partial response was discarded and not retried"
                ),
            ) from None

    def _http_failure(self, call: _Call, response: httpx.Response) -> Exception:
        status = response.status_code
        try:
            body: object = msgspec.json.decode(response.content)
        except msgspec.DecodeError:
            body = None
        message = error_message(body)
        text = message or _excerpt(response.text) or response.reason_phrase
        line = f"HTTP {status} from {call.shown}: {text}"
        if status == 404:
            line += _not_found_hint(self._base_url, call.url)
        line = self._redact(line)
        wait = self._retry_after(response)
        if wait is None:
            hinted = call.wire.retry_after(body)
            wait = None if hinted is None else max(0.0, hinted)
        if status in (401, 403):
            return ProviderFailure("auth", line, status)
        if status == 429:
            return self._refused(line, wait)
        if status == 408:
            return _Retryable(ProviderFailure("timeout", line, status), wait)
        if status >= 500:
            return _Retryable(ProviderFailure("server", line, status), wait)
        return ProviderFailure("bad_request", line, status)

    # --- 429s over time -----------------------------------------------------------------------------------

    def _answered(self) -> None:
        with self._refusals:
            self._refused_since = None

    def _refused(self, line: str, retry_after: float | None) -> Exception:
        """A 429: retryable, until the endpoint has refused every request for ``rate_limit_give_up_s``."""
        now = self._clock()
        with self._refusals:
            if self._refused_since is None:
                self._refused_since = now
            refused_for = now - self._refused_since
        if refused_for >= self._give_up_s:
            return ProviderFailure(
                "rate_limited",
                f"{line} (the endpoint refused every request for {refused_for:.0f} s, "
                f"{GIVE_UP_MARK} {self._give_up_s * 1000:.0f}: giving up)",
                429,
            )
        return _Retryable(ProviderFailure("rate_limited", line, 429), retry_after)

    # --- helpers ------------------------------------------------------------------------------------------

    def _retry_after(self, response: httpx.Response) -> float | None:
        """Seconds the server asked us to wait (``retry-after-ms``, ``Retry-After`` seconds or date)."""
        milliseconds = response.headers.get("retry-after-ms")
        if milliseconds is not None:
            try:
                return max(0.0, float(milliseconds) / 1000.0)
            except ValueError:
                pass
        value = response.headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - self._now()).total_seconds())

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self._retry_after_cap)
        return self._jitter(min(self._backoff_cap, self._backoff_base * 2**attempt))

    def _redact(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "<redacted>")
        for value in self._hidden:
            text = text.replace(value, "<redacted>")
        text = _GOOGLE_KEY_SHAPE.sub("AIza<redacted>", text)
        return redact_credentials(_KEY_SHAPE.sub(lambda match: f"{match.group(1)}-<redacted>", text))


class _GuardedStream(httpx.SyncByteStream):
    """A response body that stops past ``limit`` bytes (``too_large`` gives the failure to raise) and calls
    ``check`` (the call's deadline, once the stream is read) before handing on each chunk."""

    def __init__(
        self,
        inner: httpx.SyncByteStream | httpx.AsyncByteStream,
        limit: int,
        too_large: Callable[[int], ProviderFailure],
    ) -> None:
        self._inner = inner
        self._limit = limit
        self._too_large = too_large
        self.check: Callable[[], None] | None = None

    def __iter__(self) -> Iterator[bytes]:
        if not isinstance(self._inner, httpx.SyncByteStream):
            raise TypeError("the provider reads responses synchronously")
        received = 0
        for chunk in self._inner:
            received += len(chunk)
            if received > self._limit:
                raise self._too_large(received)
            if self.check is not None:
                self.check()
            yield chunk

    def close(self) -> None:
        if isinstance(self._inner, httpx.SyncByteStream):
            self._inner.close()


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS] + "…"


def _own_client(timeout: httpx.Timeout) -> httpx.Client:
    """The client a provider creates: its connections close on a cancellation (``cancellable``), and a run
    with ``--faults`` gets its injected faults (``faults``)."""
    from alisio.shell.harness.providers.cancellable import cancellable_transport

    return httpx.Client(timeout=timeout, transport=FaultTransport(cancellable_transport()))
