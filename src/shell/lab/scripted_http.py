"""``--script`` served over HTTP in memory, for runs with injected faults (``--faults``).

The scripted provider hands its turns to the agent directly, with no HTTP and so nothing to fault. When a
command injects faults, each run's script is served instead by an in-memory endpoint (``httpx.MockTransport``)
that answers Chat Completions requests as ``alisio eval mock-endpoint`` does (``alisio.core.agents.mock``: the
turn whose number is how many assistant turns the request already holds, so a retried request gets the same
turn), read by the built-in OpenAI-compatible provider through the shared transport: its retries, its
``Retry-After`` handling and its read timeout (``provider.timeoutMs``, as a live provider's) meet the injected
faults exactly as they would a live endpoint's.
"""

from __future__ import annotations

import json

import httpx

from alisio.core.agents.mock import read_request, render, scripted_reply
from alisio.core.harness.config import DEFAULT_MAX_RESPONSE_BYTES
from alisio.shell.agents.mock_endpoint import script_answers
from alisio.shell.harness.providers.faults import FaultTransport
from alisio.shell.harness.providers.openai_compat import OpenAICompatProvider
from alisio.shell.harness.providers.streaming import TransportOptions

__all__ = ["SCRIPTED_BASE_URL", "scripted_http_provider"]

SCRIPTED_BASE_URL = "http://scripted.invalid/v1"
"""Where the in-memory endpoint answers (never a network address)."""


def scripted_http_provider(
    data: bytes, source: str, model: str, provider_id: str, timeout_ms: int | None = None
) -> OpenAICompatProvider:
    """A provider that plays the script ``data`` (named ``source``) over in-memory HTTP, faults and all;
    ``timeout_ms``: ``provider.timeoutMs``, its connect and read timeout as a live provider's (how long a
    ``stall`` lasts; ``None``: the transport's defaults).

    Raises:
        ScriptError: the script is invalid (the scripted plan has already read it, so this means a bug).
    """
    answers = script_answers(data, source)

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        reply = scripted_reply(read_request("openai-chat", body), answers, source)
        status, content_type, content = render("openai-chat", model, reply, bool(body.get("stream")))
        return httpx.Response(status, headers={"content-type": content_type}, content=content)

    options: TransportOptions = {
        "client": httpx.Client(transport=FaultTransport(httpx.MockTransport(answer))),
        "max_response_bytes": DEFAULT_MAX_RESPONSE_BYTES,
        "backoff_base": 0.05,
        "backoff_cap": 0.5,
    }
    if timeout_ms is not None:
        options["connect_timeout"] = options["read_timeout"] = timeout_ms / 1000
    return OpenAICompatProvider(SCRIPTED_BASE_URL, model, provider_id=provider_id, **options)
