"""An OpenAI-compatible Chat Completions provider: one streamed HTTP call per request, with retries.

Works with OpenAI, DeepSeek, OpenRouter, Groq, xAI, Z.ai and local servers (vLLM, llama.cpp, Ollama).

Rules:

- **URL.** The request goes to ``base_url`` as given (trailing ``/`` removed) + ``/chat/completions``. Pass
  the base URL the way providers document it, *with* its version segment: ``https://api.openai.com/v1``,
  ``http://localhost:8000/v1``. Nothing is guessed; a 404 from a base URL without ``/v1`` says so.
- **Key.** ``Authorization: Bearer <key>`` is sent only when a key is given (local servers need none). The key
  never appears in an event, an exception message or a retry notice; a provider message echoing it is redacted.
  A user name and password in the base URL (``http://user:pass@host/v1``) are sent as HTTP basic auth by httpx
  and shown nowhere: every message names the URL with its user information redacted
  (``alisio.core.harness.endpoint.redact_credentials``).
- **Body.** ``alisio.core.harness.sse.chat_request_body``: ``stream: true``, ``stream_options.include_usage: true``; the
  output limit goes in ``max_completion_tokens`` for api.openai.com and ``max_tokens`` elsewhere (override with
  ``limit_field``).
- **Stream.** SSE via httpx-sse; ``:`` comments (keep-alive) are skipped, ``data: [DONE]`` ends the stream, an
  ``event: error`` or an ``error`` object inside a 200 stream becomes a ``StreamErrorEvent``. A stream that
  ends without a finish reason returns its events: ``alisio.core.harness.protocol.assemble`` reports the truncation. A
  malformed chunk raises ``ProviderFailure("protocol")`` naming an excerpt. A 200 answer with a JSON body
  instead of a stream (a server ignoring ``stream``) is read as one non-streamed completion.
- **Retries.** 408, 429, 5xx, connection errors and timeouts *before any event arrived* are retried up to
  ``max_retries`` times with exponential backoff and full jitter (``uniform(0, min(cap, base * 2**n))``), or
  after exactly ``Retry-After`` / ``retry-after-ms`` (seconds or an HTTP date, capped at ``retry_after_cap``)
  when the server sends one; then ``ProviderFailure`` ``rate_limited`` / ``server`` / ``network`` /
  ``timeout``. Other 4xx fail at once (``auth`` for 401/403, else ``bad_request``) with the provider's
  ``error.message``.
- **Deadline.** ``stream(..., timeout_s=T)`` bounds the whole call, retries included: each connect and read
  waits at most what is left of ``T``, the stream stops at the first event after ``T`` passed, and a retry whose
  wait would end past ``T`` is not attempted (the failure that asked for it is raised at once, saying so). A
  call cut off at ``T`` raises ``ProviderFailure("deadline")`` (never retried). The deadline is checked on every
  chunk read, so keep-alive comments (which never become events) cannot keep a call running past ``T``.
- **Size.** One response body (SSE framing included, or an error or JSON body) may be at most
  ``max_response_bytes`` (``provider.maxResponseBytes``, default 32 MiB): past it the call stops at once with
  ``ProviderFailure("too_large")``, never retried, so a stream that never ends or one endless SSE line cannot
  grow memory without bound.
- **Dropped streams.** A connection that breaks or times out after at least one event arrived is *not*
  retried: the partial answer is discarded and ``ProviderFailure("network" | "timeout")`` says how many events
  had arrived. Retrying silently would re-run a generation the user may be paying for and could mix two answers.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import Self

import httpx
import msgspec
from httpx_sse import EventSource, connect_sse
from returns.result import Failure, Success

from alisio.core.harness.config import DEFAULT_MAX_RESPONSE_BYTES
from alisio.core.harness.endpoint import redact_credentials
from alisio.core.harness.protocol import ProviderRequest, StreamEvent, served_changes
from alisio.core.harness.sse import (
    DONE,
    LimitField,
    chat_request_body,
    completion_events,
    decode_data,
    error_message,
)
from alisio.shell import cancel
from alisio.shell.harness.providers.base import FailureKind, FirstEvent, ProviderFailure, RetryNotice
from alisio.shell.harness.providers.gate import Gate, GateTimeout

EXCERPT_CHARS = 200
_KEY_SHAPE = re.compile(r"\b(sk|gsk|xai)-[A-Za-z0-9_\-*]{6,}")


def _utc_now() -> datetime:
    """The real wall-clock time in UTC (the default ``now`` of ``OpenAICompatProvider``)."""
    return datetime.now(UTC)


class _Retryable(Exception):
    """An attempt that failed in a way worth retrying; ``failure`` is raised once retries run out."""

    def __init__(self, failure: ProviderFailure, retry_after: float | None = None) -> None:
        super().__init__(failure.message)
        self.failure = failure
        self.retry_after = retry_after


class OpenAICompatProvider:
    """Streams Chat Completions from an OpenAI-compatible endpoint (see the module docstring for the rules).

    Args:
        base_url: e.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:8080/v1``.
        model: used when a request names no model.
        api_key: the bearer token, or ``None`` for servers that need none.
        client: an ``httpx.Client`` to use (tests, proxies); one is created and owned otherwise.
        max_retries: retries after the first attempt.
        backoff_base, backoff_cap: seconds; the n-th retry waits ``uniform(0, min(cap, base * 2**n))``.
        retry_after_cap: the longest ``Retry-After`` honoured, in seconds (longer values are cut to it).
        connect_timeout, read_timeout: seconds; the read timeout is the longest silence between two reads.
        sleep: how to wait between attempts (tests pass a recorder).
        clock: a monotonic clock in seconds, for the ``timeout_s`` deadline of a call.
        now: the current UTC time, to turn a ``Retry-After`` HTTP date into seconds (tests pass a fixed one).
        jitter: ``upper -> delay`` in ``[0, upper]``; defaults to a uniform draw.
        limit_field: the body field for the output limit; by default chosen from the host.
        provider_id: the label recorded in events and reports (``provider.id`` of config.toml).
        max_response_bytes: the largest response body read (``provider.maxResponseBytes``).
        gate: shared by the concurrent runs of a command: caps the requests in flight and spreads a
            ``Retry-After`` pause to every caller (``None``: no cap, as for one run at a time).
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        client: httpx.Client | None = None,
        max_retries: int = 4,
        backoff_base: float = 0.5,
        backoff_cap: float = 20.0,
        retry_after_cap: float = 60.0,
        connect_timeout: float = 10.0,
        read_timeout: float = 300.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = _utc_now,
        jitter: Callable[[float], float] | None = None,
        limit_field: LimitField | None = None,
        provider_id: str = "openai_compat",
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        gate: Gate | None = None,
    ) -> None:
        self._provider_id = provider_id
        self._base_url = base_url.rstrip("/")
        self._url = self._base_url + "/chat/completions"
        self._shown_url = redact_credentials(self._url)
        """The endpoint as every message shows it: without a user name or password."""
        self._max_response_bytes = max_response_bytes
        self._gate = gate
        self._model = model
        self._api_key = api_key or None
        self._timeout = httpx.Timeout(read_timeout, connect=connect_timeout)
        self._read_timeout = read_timeout
        self._connect_timeout = connect_timeout
        self._clock = clock
        self._now = now
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client(timeout=self._timeout)
        self._max_retries = max_retries
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        self._retry_after_cap = retry_after_cap
        self._sleep = sleep
        self._jitter = jitter if jitter is not None else _uniform_jitter(random.Random())
        host = httpx.URL(self._url).host
        self._limit_field: LimitField = limit_field or (
            "max_completion_tokens" if host == "api.openai.com" else "max_tokens"
        )

    @property
    def id(self) -> str:
        """The configured ``provider.id`` (a label of the endpoint; the protocol is always this one)."""
        return self._provider_id

    @property
    def url(self) -> str:
        """The endpoint requests are posted to, with any user name and password redacted."""
        return self._shown_url

    def close(self) -> None:
        """Close the HTTP client if this provider created it."""
        if self._owns_client:
            self._client.close()

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
        """Send ``request`` and return every stream event, retrying as the module docstring says.

        ``timeout_s`` bounds the whole call (see "Deadline" in the module docstring).
        """
        model = request.model or self._model
        if not model:
            raise ProviderFailure("bad_request", f"no model given for {self._shown_url} (set --model)")
        if model != request.model:
            request = msgspec.structs.replace(request, model=model)
        content = msgspec.json.encode(chat_request_body(request, limit_field=self._limit_field))
        deadline = None if timeout_s is None else self._clock() + timeout_s
        attempt = 0
        while True:
            try:
                return self._gated_attempt(content, deadline, timeout_s, on_first_event)
            except _Retryable as retryable:
                if deadline is not None and self._clock() >= deadline:
                    raise self._deadline_failure(timeout_s) from None
                if attempt >= self._max_retries:
                    raise retryable.failure from None
                delay = self._delay(attempt, retryable.retry_after)
                if deadline is not None and self._clock() + delay >= deadline:
                    # Waiting out the time left would only end in the same failure: report it now.
                    failure = retryable.failure
                    line = f"{failure.message} (not retried: the {delay:.1f} s wait would outlast the call's deadline)"
                    raise ProviderFailure(failure.kind, line, failure.status) from None
                attempt += 1
                if self._gate is not None and retryable.retry_after is not None:
                    self._gate.pause(delay)  # the endpoint asked to wait: every worker of it waits
                if on_retry is not None:
                    on_retry(
                        f"{retryable.failure.message}; retry {attempt} of {self._max_retries} in {delay:.1f} s"
                    )
                self._sleep(delay)
            except ProviderFailure as failure:
                if (
                    deadline is not None
                    and failure.kind in ("timeout", "network")
                    and self._clock() >= deadline
                ):
                    raise self._deadline_failure(timeout_s) from None
                raise

    def _gated_attempt(
        self, content: bytes, deadline: float | None, timeout_s: float | None, first: FirstEvent | None
    ) -> tuple[StreamEvent, ...]:
        if self._gate is None:
            return self._attempt(content, deadline, first)
        try:
            with self._gate.slot(deadline):
                return self._attempt(content, deadline, first)
        except GateTimeout:
            raise self._deadline_failure(timeout_s) from None

    def _deadline_failure(self, timeout_s: float | None) -> ProviderFailure:
        line = f"the call to {self._shown_url} did not finish within the {timeout_s:.1f} s it was given"
        return ProviderFailure("deadline", line)

    def _timeout_until(self, deadline: float | None) -> httpx.Timeout:
        """The client's timeouts, each cut to what is left before ``deadline``."""
        if deadline is None:
            return self._timeout
        left = max(0.001, deadline - self._clock())
        read = min(self._read_timeout, left)
        return httpx.Timeout(read, connect=min(self._connect_timeout, left))

    # --- one attempt --------------------------------------------------------------------------------------

    def _attempt(
        self, content: bytes, deadline: float | None, first: FirstEvent | None = None
    ) -> tuple[StreamEvent, ...]:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        with (
            self._transport_errors(received=0),
            connect_sse(
                self._client,
                "POST",
                self._url,
                content=content,
                headers=headers,
                timeout=self._timeout_until(deadline),
            ) as source,
        ):
            response = source.response
            guard = _GuardedStream(response.stream, self._max_response_bytes, self._too_large)
            response.stream = guard
            if not response.is_success:
                response.read()
                raise self._http_failure(response)
            content_type = response.headers.get("content-type", "")
            if "text/event-stream" not in content_type:
                response.read()
                if first is not None:
                    first()
                return self._non_stream(response, content_type)
            return self._read_stream(source, deadline, guard, first)

    def _too_large(self, received: int) -> ProviderFailure:
        return ProviderFailure(
            "too_large",
            f"the response from {self._shown_url} passed {self._max_response_bytes} bytes "
            f"(provider.maxResponseBytes) after {received} bytes without ending; the partial response was "
            "discarded",
        )

    def _read_stream(
        self, source: EventSource, deadline: float | None, guard: _GuardedStream, first: FirstEvent | None
    ) -> tuple[StreamEvent, ...]:
        events: list[StreamEvent] = []
        received = 0

        def past_deadline() -> None:
            cancel.check()  # Ctrl-C while runs stream on worker threads: drop the stream at the next chunk
            if deadline is not None and self._clock() >= deadline:
                raise ProviderFailure(
                    "deadline",
                    f"the stream from {self._shown_url} was still running when its time ran out "
                    f"({received} events received; the partial response was discarded)",
                )

        # Keep-alive comments never reach iter_sse, and each one restarts the read timeout: check the
        # deadline on every chunk of bytes, so a server sending only comments cannot outlive the call.
        guard.check = past_deadline
        with self._transport_errors(received=lambda: received):
            for sse in source.iter_sse():
                if received == 0 and first is not None:
                    first()
                received += 1
                past_deadline()
                if sse.data.strip() == DONE:
                    break
                if not sse.data and sse.event == "message":
                    continue
                match decode_data(sse.data, None if sse.event == "message" else sse.event):
                    case Success(chunk):
                        events.extend(chunk)
                    case Failure(error):
                        raise ProviderFailure("protocol", self._redact(f"{self._shown_url}: {error}"))
        return served_changes(tuple(events))

    def _non_stream(self, response: httpx.Response, content_type: str) -> tuple[StreamEvent, ...]:
        try:
            body: object = msgspec.json.decode(response.content)
        except msgspec.DecodeError:
            body = None
        if isinstance(body, dict) and ("choices" in body or "error" in body):
            return completion_events(body)
        raise ProviderFailure(
            "protocol",
            self._redact(
                f"{self._shown_url} answered {content_type or 'without a content type'} instead of "
                f"text/event-stream: {_excerpt(response.text)!r}"
            ),
            response.status_code,
        )

    @contextmanager
    def _transport_errors(self, received: int | Callable[[], int]) -> Iterator[None]:
        """Translate httpx's transport errors into retryable or final ``ProviderFailure``s (one place)."""
        try:
            yield
        except httpx.TransportError as error:
            count = received() if callable(received) else received
            kind: FailureKind = "timeout" if isinstance(error, httpx.TimeoutException) else "network"
            detail = _excerpt(str(error)) or type(error).__name__
            if count == 0:
                raise _Retryable(
                    ProviderFailure(kind, self._redact(f"{kind} error calling {self._shown_url}: {detail}"))
                ) from None
            raise ProviderFailure(
                kind,
                self._redact(
                    f"the stream from {self._shown_url} broke off mid-stream after {count} events ({detail}); "
                    "the partial response was discarded and not retried"
                ),
            ) from None

    def _http_failure(self, response: httpx.Response) -> Exception:
        status = response.status_code
        try:
            message = error_message(msgspec.json.decode(response.content))
        except msgspec.DecodeError:
            message = None
        text = message or _excerpt(response.text) or response.reason_phrase
        line = f"HTTP {status} from {self._shown_url}: {text}"
        if status == 404 and not re.search(r"/v\d+[a-z]*(/|$)", self._base_url):
            shown_base = redact_credentials(self._base_url)
            line += f" (the base URL has no version segment; did you mean {shown_base}/v1?)"
        line = self._redact(line)
        if status in (401, 403):
            return ProviderFailure("auth", line, status)
        if status == 429:
            return _Retryable(ProviderFailure("rate_limited", line, status), self._retry_after(response))
        if status == 408:
            return _Retryable(ProviderFailure("timeout", line, status), self._retry_after(response))
        if status >= 500:
            return _Retryable(ProviderFailure("server", line, status), self._retry_after(response))
        return ProviderFailure("bad_request", line, status)

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
        if self._api_key:
            text = text.replace(self._api_key, "<redacted>")
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


def _uniform_jitter(rng: random.Random) -> Callable[[float], float]:
    return lambda upper: rng.uniform(0.0, upper)


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS] + "…"
