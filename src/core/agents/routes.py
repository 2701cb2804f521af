"""What the recording proxy forwards: ``route``, one decision per request target, pure.

The proxy decides "model call" (counted, budgeted, recorded) and builds the provider's URL from the same
``Route``, so no spelling of a target can be one thing to the budget and another to the provider. A target is
forwarded only when it is, exactly, ``/v1`` followed by one of its wire format's own paths
(``alisio.core.harness.wire``: ``path_of`` for the model call, ``side_paths`` for the rest):

| api | model call | also forwarded (no model call, no tokens) |
|---|---|---|
| ``openai-chat`` | ``POST /v1/chat/completions`` | ``GET /v1/models`` |
| ``openai-responses`` | ``POST /v1/responses`` | ``GET /v1/models`` |
| ``anthropic`` | ``POST /v1/messages`` | ``POST /v1/messages/count_tokens``, ``GET /v1/models`` |

Rules:
- a query string is kept and forwarded as sent (``/v1/messages?beta=true``); a fragment (``#x``) is refused:
  a request target never has one, and an HTTP client would drop it;
- the path is compared byte for byte, so percent-encoding (``/v1/chat%2Fcompletions``), empty or dot segments
  (``//``, ``/./``, ``/../``), a trailing ``/`` or another case are refused, never normalised: the provider
  may read such a path otherwise than the proxy would;
- anything else (``/v1/embeddings``, ``/v1/files``, another method) is refused: it may spend the key's money
  and is not the agent's model traffic. A target that is not a path at all (``http://evil/...``,
  ``//host/...``, ``@host/...``) is refused as such.

``error_body`` writes the proxy's own answers (a refusal, a budget, an unknown token) in the api's error
shape, so an agent's client reads them as it reads the provider's errors.
"""

from __future__ import annotations

from typing import Final

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.harness.wire import Api, path_of, side_paths

__all__ = ["VERSION", "Route", "RouteRefusal", "error_body", "forwarded", "route"]

VERSION: Final = "/v1"
"""The version segment every forwarded target starts with (the agent's base URL ends with it, or its SDK adds
it): the provider's base URL already has its own, so it is replaced, never appended."""


class Route(Frozen, frozen=True, kw_only=True):
    """A target the proxy forwards."""

    path: str
    """After the base URL: ``/chat/completions``, ``/models``."""
    query: str
    """As sent, without its ``?`` (``beta=true``); empty when none."""
    model_call: bool

    @property
    def suffix(self) -> str:
        """What is appended to the provider's base URL."""
        return self.path + (f"?{self.query}" if self.query else "")


class RouteRefusal(Frozen, frozen=True, kw_only=True):
    """Why a target is not forwarded: ``status`` 400 (not a path) or 404 (not one the proxy forwards)."""

    status: int
    message: str


def forwarded(api: Api) -> tuple[tuple[str, str, bool], ...]:
    """Every ``(method, target path, model call)`` the proxy forwards for ``api``: the model call first."""
    side = tuple((method, VERSION + path, False) for method, path in side_paths(api))
    return (("POST", VERSION + path_of(api), True), *side)


def route(api: Api, method: str, target: str) -> Result[Route, RouteRefusal]:
    """The route of one request (``method`` and the request line's target), or why it is refused."""
    if not target.startswith("/") or target.startswith("//"):
        return Failure(
            RouteRefusal(status=400, message="the request target is not a path on the provider; refused")
        )
    if "#" in target:
        return Failure(_not_forwarded(api, method, target, "a request target has no fragment"))
    path, _, query = target.partition("?")
    for allowed, allowed_path, model_call in forwarded(api):
        if path == allowed_path and method == allowed:
            return Success(Route(path=path[len(VERSION) :], query=query, model_call=model_call))
    return Failure(_not_forwarded(api, method, target, None))


def _not_forwarded(api: Api, method: str, target: str, why: str | None) -> RouteRefusal:
    shown = target if len(target) <= 120 else target[:120] + "…"
    listed = ", ".join(f"{m} {p}" for m, p, _ in forwarded(api))
    reason = f" ({why})" if why else ""
    message = (
        f"alisio proxy: {method} {shown} is not forwarded{reason}; an {api} agent's proxy forwards only "
        f"{listed}"
    )
    return RouteRefusal(status=404, message=message)


def error_body(api: Api, status: int, kind: str, message: str) -> bytes:
    """The proxy's own error answer in ``api``'s error shape (``kind``: its type, such as
    ``budget_exceeded``; a 401 is the api's authentication error)."""
    if api == "anthropic":
        shown = "authentication_error" if status == 401 else kind
        return msgspec.json.encode({"type": "error", "error": {"type": shown, "message": message}})
    code = "invalid_api_key" if status == 401 else kind
    shape = "invalid_request_error" if status == 401 else kind
    return msgspec.json.encode({"error": {"message": message, "type": shape, "code": code}})
