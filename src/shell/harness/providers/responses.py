"""The OpenAI Responses provider (``provider.api = "openai-responses"``): ``POST {base_url}/responses``,
streamed.

- **Body.** ``alisio.core.harness.wire_responses.request_body``: ``store: false``, ``include:
  ["reasoning.encrypted_content"]``, the encrypted reasoning of earlier turns sent back verbatim, function
  tools; ``previous_response_id`` is never used, so the conversation is explicit and replay deterministic.
- **Key.** ``Authorization: Bearer <key>``, only when one is given.
- **Everything else** is the shared transport's (``alisio.shell.harness.providers.transport``).
"""

from __future__ import annotations

from typing import ClassVar

from alisio.core.harness.protocol import ProviderRequest
from alisio.core.harness.wire import Api
from alisio.core.harness.wire_responses import request_body
from alisio.shell.harness.providers.streaming import StreamingProvider

__all__ = ["ResponsesProvider"]


class ResponsesProvider(StreamingProvider):
    """Streams OpenAI Responses (see ``StreamingProvider`` for the arguments)."""

    api: ClassVar[Api] = "openai-responses"
    default_id: ClassVar[str] = "openai-responses"

    def request_body(self, request: ProviderRequest) -> dict[str, object]:
        return request_body(request)
