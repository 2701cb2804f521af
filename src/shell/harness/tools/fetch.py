"""Fetch one URL for the ``fetch_url`` tool: GET, bounded in time and size, text responses only.

httpx is imported inside ``fetch_text`` so that importing the tools costs nothing when no URL is fetched; the
transport is a parameter (tests may pass ``httpx.MockTransport``), the default is httpx's own.
Every failure is returned as a ``FetchResult`` with ``ok=False`` and a message the model can act on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import httpx

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

    The body is read up to ``max_bytes`` (the rest is not downloaded, and the result says it was cut).
    A non-2xx status is ``ok=False`` but still shows the body; a non-text content type is refused.
    """
    if not url.startswith(("http://", "https://")):
        return FetchResult(False, f"refused: {url!r} is not an http:// or https:// URL")
    import httpx

    try:
        with (
            httpx.Client(
                timeout=timeout_s, follow_redirects=True, max_redirects=5, transport=transport
            ) as client,
            client.stream("GET", url, headers={"User-Agent": user_agent}) as response,
        ):
            content_type = response.headers.get("content-type", "")
            if content_type and not is_text_type(content_type):
                return FetchResult(
                    False,
                    f"refused: {url} returned {content_type}, which is not text (status {response.status_code})",
                )
            body = bytearray()
            cut = False
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    cut = True
                    del body[max_bytes:]
                    break
            status = response.status_code
            encoding = response.encoding or "utf-8"
            final_url = str(response.url)
    except httpx.TimeoutException:
        return FetchResult(False, f"fetching {url} timed out after {timeout_s:g} s")
    except (httpx.HTTPError, httpx.InvalidURL) as error:
        return FetchResult(False, f"fetching {url} failed: {type(error).__name__}: {error}")
    if not content_type and b"\0" in body[:8192]:
        return FetchResult(False, f"refused: {url} returned binary content without a content type")
    try:
        text = bytes(body).decode(encoding, "replace")
    except LookupError:
        text = bytes(body).decode("utf-8", "replace")
    note = f"\n[cut: only the first {max_bytes} bytes were read]" if cut else ""
    header = f"status: {status}\ncontent-type: {content_type or 'unknown'}\nurl: {final_url}\n---\n"
    return FetchResult(200 <= status < 300, header + text + note)
