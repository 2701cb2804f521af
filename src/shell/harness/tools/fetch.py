"""The ``fetch_url`` tool: GET one URL, bounded in total time and in size, text responses only.

httpx is imported inside ``fetch_text`` so that importing the tools costs nothing when no URL is fetched; the
transport is a parameter (tests may pass ``httpx.MockTransport``), the default is httpx's own.

Rules:
- every failure is a ``FetchResult`` with ``ok=False`` and a message the model can act on;
- ``timeout_s`` bounds the whole call, not each read: every read waits at most what is left, the body stops at
  the first chunk past it, and the whole call runs under ``limits.time_limit`` so a server that sends its
  headers one byte at a time cannot hold it either;
- the body is read up to ``max_bytes`` and no further;
- every URL and error text in a result has its user information redacted
  (``alisio.core.harness.endpoint.redact_credentials``): a password in a URL is never echoed (the body is
  shown as served).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from alisio.core.harness.endpoint import redact_credentials
from alisio.core.harness.tooldefs import FetchUrlArgs
from alisio.shell.harness.tools.context import NOT_RUN, ToolContext, ToolOutcome, call_time
from alisio.shell.harness.tools.limits import TimeLimitReached, time_limit

if TYPE_CHECKING:
    import httpx

__all__ = ["FetchResult", "fetch_text", "fetch_url_tool", "is_text_type"]

_TEXT_TYPES: Final = (
    "application/json",
    "application/xml",
    "application/javascript",
    "application/x-javascript",
    "application/ecmascript",
    "application/x-www-form-urlencoded",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
)


@dataclass(frozen=True, slots=True)
class FetchResult:
    """What the model is told: ``ok`` false for a refusal, a failure or a non-2xx status."""

    ok: bool
    output: str


def is_text_type(content_type: str) -> bool:
    """Whether a Content-Type names text the model can read (text/*, JSON, XML, JavaScript, YAML, TOML)."""
    media = content_type.split(";", 1)[0].strip().lower()
    return (
        media.startswith("text/") or media in _TEXT_TYPES or media.endswith("+json") or media.endswith("+xml")
    )


def fetch_text(
    url: str,
    *,
    timeout_s: float,
    max_bytes: int,
    user_agent: str = "alisio",
    transport: httpx.BaseTransport | None = None,
) -> FetchResult:
    """GET ``url`` (following up to 5 redirects) and return the status, content type and text body.

    The whole call takes at most about ``timeout_s`` (see the module docstring). The body is read up to
    ``max_bytes`` (the rest is not downloaded, and the result says it was cut). A non-2xx status is
    ``ok=False`` but still shows the body; a non-text content type is refused.
    """
    shown = redact_credentials(url)
    if not url.startswith(("http://", "https://")):
        return FetchResult(False, f"refused: {shown!r} is not an http:// or https:// URL")
    try:
        with time_limit(timeout_s):
            result = _get(url, shown, timeout_s, max_bytes, user_agent, transport)
    except TimeLimitReached:
        return FetchResult(False, f"fetching {shown} timed out after {timeout_s:g} s")
    return result


def _get(
    url: str,
    shown: str,
    timeout_s: float,
    max_bytes: int,
    user_agent: str,
    transport: httpx.BaseTransport | None,
) -> FetchResult:
    import httpx

    deadline = time.monotonic() + timeout_s
    try:
        with (
            httpx.Client(
                timeout=max(timeout_s, 0.001), follow_redirects=True, max_redirects=5, transport=transport
            ) as client,
            client.stream("GET", url, headers={"User-Agent": user_agent}) as response,
        ):
            content_type = response.headers.get("content-type", "")
            if content_type and not is_text_type(content_type):
                return FetchResult(
                    False,
                    f"refused: {shown} returned {content_type}, which is not text (status {response.status_code})",
                )
            body, cut = _read_body(response, max_bytes, deadline)
            status = response.status_code
            encoding = response.encoding or "utf-8"
            final_url = str(response.url)
    except httpx.TimeoutException:
        return FetchResult(False, f"fetching {shown} timed out after {timeout_s:g} s")
    except (httpx.HTTPError, httpx.InvalidURL) as error:
        detail = redact_credentials(str(error))
        return FetchResult(False, f"fetching {shown} failed: {type(error).__name__}: {detail}")
    if not content_type and b"\0" in body[:8192]:
        return FetchResult(False, f"refused: {shown} returned binary content without a content type")
    try:
        text = bytes(body).decode(encoding, "replace")
    except LookupError:
        text = bytes(body).decode("utf-8", "replace")
    note = f"\n[cut: only the first {max_bytes} bytes were read]" if cut else ""
    header = f"status: {status}\ncontent-type: {content_type or 'unknown'}\nurl: {redact_credentials(final_url)}\n---\n"
    return FetchResult(200 <= status < 300, header + text + note)


def _read_body(response: httpx.Response, max_bytes: int, deadline: float) -> tuple[bytearray, bool]:
    """The body up to ``max_bytes`` (and whether it was cut); a chunk arriving past ``deadline`` ends it with a
    timeout, so a server trickling bytes cannot outlast the call."""
    import httpx

    body = bytearray()
    for chunk in response.iter_bytes():
        if time.monotonic() > deadline:
            raise httpx.ReadTimeout("the body was still arriving when the time ran out")
        body += chunk
        if len(body) > max_bytes:
            del body[max_bytes:]
            return body, True
    return body, False


def fetch_url_tool(args: FetchUrlArgs, ctx: ToolContext) -> ToolOutcome:
    """fetch_url with the run's limits: ``ctx.fetch_timeout_s``, or less when the run's deadline is nearer."""
    budget = call_time(ctx, ctx.fetch_timeout_s)
    if budget is None:
        return ToolOutcome(False, NOT_RUN, timed_out=True)
    result = fetch_text(
        args.url, timeout_s=budget.seconds, max_bytes=ctx.fetch_max_bytes, transport=ctx.fetch_transport
    )
    return ToolOutcome(result.ok, result.output)
