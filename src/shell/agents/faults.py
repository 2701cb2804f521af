"""Injected faults on an external agent's wire (``--faults``): the recording proxy's provider client, faulted.

An external agent talks to the provider through its run's proxy (``alisio.shell.agents.proxy``). With faults,
the proxy's client sends through ``alisio.shell.harness.providers.faults.FaultTransport`` bound to the run's
``RunWire``: every model call the agent makes (each of its own retries included) is one call of the run's
seeded schedule, and the proxy relays what the faulted client got exactly as it relays a provider's answer.
So the agent sees each fault on its own wire format, as a real provider would send it:

- ``429``, ``500``, ``503``: that status, the api's error body and headers (a 429's ``retry-after``;
  ``alisio.core.harness.faults.fault_answer``: OpenAI's ``{"error": {...}}`` for Chat Completions and
  Responses, Anthropic's ``{"type": "error", "error": {...}}``); the request never reaches the provider;
- ``stall``: no byte (not even the status line) until the agent gives up on its own read timeout; the proxy
  holds the call until the run ends or its own read timeout (600 s) passes, then answers a 502;
- ``cut``: the provider's real answer is relayed, and the connection breaks after half of its bytes (no
  last chunk: the agent sees a stream that broke);
- ``slow``: the real answer, relayed in pieces ``drip-ms`` apart.

The proxy keeps every call as it does without faults (a 429 is a call answered 429), and the run's record
keeps the schedule's hits (``RunWire.recorded``).
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from alisio.core.harness.wire import Api
from alisio.shell.harness.providers.faults import FaultTransport, RunWire

__all__ = ["faulted_client_transport"]


def faulted_client_transport(
    inner: httpx.BaseTransport, wire: RunWire | None, aborted: Callable[[], bool], api: Api
) -> httpx.BaseTransport:
    """The proxy client's transport: ``inner``, with ``wire``'s faults when the run has some, in ``api``'s
    error shape (``aborted``: the run ended, which ends a stall or a drip)."""
    if wire is None or wire.faults is None:
        return inner
    return FaultTransport(inner, wire=wire, aborted=aborted, api=api)
