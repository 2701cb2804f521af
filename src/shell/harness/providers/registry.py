"""The one place a live provider is built: ``build_provider``.

``alisio run``, the lab (``alisio.shell.lab.plans.live_plan``) and the Ray worker
(``alisio.shell.lab.ray_worker.provider_plan``) all build their provider here, so the three can never build
one differently. Every api is the one ``StreamingProvider`` reading its format's record
(``alisio.core.harness.wire.FORMATS``): adding an api adds no class here.
"""

from __future__ import annotations

from collections.abc import Mapping

from alisio.core.harness.wire import Api
from alisio.shell.harness.providers.gate import Gate
from alisio.shell.harness.providers.streaming import StreamingProvider, TransportOptions

__all__ = ["build_provider"]


def build_provider(
    api: Api,
    base_url: str,
    model: str,
    *,
    api_key: str | None,
    provider_id: str,
    max_response_bytes: int,
    gate: Gate | None,
    rate_limit_give_up_ms: int,
    headers: Mapping[str, str] | None = None,
    timeout_ms: int | None = None,
) -> StreamingProvider:
    """The live provider for ``api`` (every other setting is the transport's, the same for all apis).

    ``headers`` are ``provider.headers``; ``timeout_ms`` (``provider.timeoutMs``) bounds the connection and
    each wait for the next bytes of an answer (``None``: the transport's 10 s and 300 s).
    """
    options: TransportOptions = {
        "max_response_bytes": max_response_bytes,
        "gate": gate,
        "rate_limit_give_up_s": rate_limit_give_up_ms / 1000,
    }
    if timeout_ms is not None:
        options["connect_timeout"] = options["read_timeout"] = timeout_ms / 1000
    return StreamingProvider(
        base_url, model, api=api, api_key=api_key, provider_id=provider_id, extra_headers=headers, **options
    )
