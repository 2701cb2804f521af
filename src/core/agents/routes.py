"""What the recording proxy forwards: ``route``, one decision per request target, pure.

The proxy decides "model call" (counted, budgeted, recorded) and builds the provider's URL from the same
``Route``, so no spelling of a target can be one thing to the budget and another to the provider. A target is
forwarded only when it is, exactly, the format's version segment followed by one of its own paths (its record,
``alisio.core.harness.wire_format``: ``version``, ``model_calls``, ``side_paths``; ``{model}`` a model name),
for instance:

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

from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.harness.wire import Api, wire_format
from alisio.core.harness.wire_format import path_matches

__all__ = ["Route", "RouteRefusal", "error_body", "forwarded", "route"]


class Route(Frozen, frozen=True, kw_only=True):
    """A target the proxy forwards."""

    path: str
    """After the base URL (the target without the format's version segment, which the provider's base URL
    already has: it is replaced, never appended): ``/chat/completions``, ``/models``."""
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
    """Every ``(method, target path template, model call)`` the proxy forwards for ``api``: model calls
    first."""
    record = wire_format(api)
    calls = tuple(("POST", record.version + template, True) for template, _stream in record.model_calls)
    side = tuple((method, record.version + template, False) for method, template in record.side_paths)
    return (*calls, *side)


def route(api: Api, method: str, target: str) -> Result[Route, RouteRefusal]:
    """The route of one request (``method`` and the request line's target), or why it is refused."""
    if not target.startswith("/") or target.startswith("//"):
        return Failure(
            RouteRefusal(status=400, message="the request target is not a path on the provider; refused")
        )
    if "#" in target:
        return Failure(_not_forwarded(api, method, target, "a request target has no fragment"))
    path, _, query = target.partition("?")
    version = wire_format(api).version
    for allowed, template, model_call in forwarded(api):
        if method == allowed and path_matches(template, path) is not None:
            return Success(Route(path=path[len(version) :], query=query, model_call=model_call))
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
    return wire_format(api).error_body(status, kind, message)
