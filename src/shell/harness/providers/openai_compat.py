"""An OpenAI-compatible Chat Completions provider (``provider.api = "openai-chat"``, the default).

Works with OpenAI, DeepSeek, OpenRouter, Groq, xAI, Z.ai and local servers (vLLM, llama.cpp, Ollama).

- **Body.** ``alisio.core.harness.sse.chat_request_body``: ``stream: true``, ``stream_options.include_usage:
  true``; the output limit goes in ``max_completion_tokens`` for api.openai.com and ``max_tokens`` elsewhere
  (the record's choice, ``sse.limit_field_for``; override with ``limit_field``).
- **Key.** ``Authorization: Bearer <key>``, only when a key is given (local servers need none).
- **Everything else** (URL, retries, ``Retry-After``, the deadline, the size cap, the gate, redaction) is the
  shared transport's: ``alisio.shell.harness.providers.transport``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Unpack

from alisio.core.harness.protocol import ProviderRequest
from alisio.core.harness.sse import LimitField, chat_request_body, limit_field_for
from alisio.shell.harness.providers.streaming import StreamingProvider, TransportOptions

__all__ = ["OpenAICompatProvider"]


class OpenAICompatProvider(StreamingProvider):
    """Streams Chat Completions (see ``StreamingProvider`` for the arguments).

    Args:
        limit_field: the body field for the output limit; by default chosen from the host.
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        provider_id: str | None = None,
        limit_field: LimitField | None = None,
        extra_headers: Mapping[str, str] | None = None,
        **options: Unpack[TransportOptions],
    ) -> None:
        super().__init__(
            base_url,
            model,
            api="openai-chat",
            api_key=api_key,
            provider_id=provider_id,
            extra_headers=extra_headers,
            **options,
        )
        self._limit_field: LimitField = limit_field or limit_field_for(base_url)

    def request_body(self, request: ProviderRequest) -> dict[str, object]:
        return chat_request_body(request, limit_field=self._limit_field)
