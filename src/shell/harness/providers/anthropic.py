"""The Anthropic Messages provider (``provider.api = "anthropic"``): ``POST {base_url}/messages``, streamed.

- **Body.** ``alisio.core.harness.wire_anthropic.request_body``: thinking blocks sent back verbatim before the
  ``tool_use`` they led to, ``cache_control`` breakpoints when the measured key ``cache`` is on, the reasoning
  effort as ``thinking.budget_tokens``.
- **Headers.** ``anthropic-version: 2023-06-01``; the key in ``x-api-key`` (from ``ANTHROPIC_API_KEY``, or the
  variable ``provider.apiKeyEnv`` names), only when one is given.
- **Base URL** with its version segment, as for the other apis: ``https://api.anthropic.com/v1``.
- **Everything else** is the shared transport's (``alisio.shell.harness.providers.transport``); an
  ``overloaded_error`` (HTTP 529) is retried as any 5xx.
"""

from __future__ import annotations

from typing import ClassVar

from alisio.core.harness.protocol import ProviderRequest
from alisio.core.harness.wire import Api
from alisio.core.harness.wire_anthropic import ANTHROPIC_VERSION, request_body
from alisio.shell.harness.providers.streaming import StreamingProvider

__all__ = ["AnthropicProvider"]


class AnthropicProvider(StreamingProvider):
    """Streams Anthropic Messages (see ``StreamingProvider`` for the arguments)."""

    api: ClassVar[Api] = "anthropic"
    default_id: ClassVar[str] = "anthropic"

    def key_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def format_headers(self) -> dict[str, str]:
        return {"anthropic-version": ANTHROPIC_VERSION}

    def request_body(self, request: ProviderRequest) -> dict[str, object]:
        return request_body(request)
