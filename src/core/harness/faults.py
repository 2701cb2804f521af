"""Injected provider faults (``--faults SPEC``): the spec, the seeded schedule, and each fault as its api sends it.

A spec names the faults to inject and the share of model calls each hits, then optional settings::

    429:0.1,cut:0.05,seed=7
    500:0.2,503:0.1,stall:0.05,slow:0.1,seed=3,retry-after=2,drip-ms=200

Kinds, in the order the schedule lays them out:

- ``429``: HTTP 429 with a ``retry-after`` header (``retry-after=S`` seconds, default 1) and the api's
  rate-limit error body;
- ``500``, ``503``: that HTTP status with the api's server error body (Anthropic's ``api_error`` and
  ``overloaded_error``);
- ``stall``: no byte of an answer until the client's read timeout passes (the built-in provider's
  ``provider.timeoutMs``, default 300 s: ``stall_timeout_ms``; an external agent's own), then the connection
  is dropped;
- ``cut``: the real answer starts, and the connection breaks after half of its bytes; the hit keeps where it
  broke (``FaultHit.events``): how many of the answer's stream events the harness had received;
- ``slow``: the real answer arrives whole, in ``DRIP_PIECES`` pieces each ``drip-ms`` apart (default 500).

Rules this module keeps:

- ``parse_faults`` accepts a spec or says in one line what is wrong with which entry; a kind appears once,
  each rate is in [0, 1] and the rates add up to at most 1; ``none`` (or an empty spec) means no faults;
- ``fault_at`` is a pure function of the spec's seed, the run's name and the run's call index (every HTTP
  attempt counts, a retry included, so a retry may or may not be faulted again): the same three give the
  same fault, on any machine, and a run repeated with the same spec sees the same schedule;
- ``spec_text`` is the canonical form (kinds in the order above, settings only when not at their default):
  what names a run in its report's conditions, so two spellings of one spec compare as the same condition;
- ``fault_that_ended`` names the fault that ended a run in error only when the run's last call met it and
  failed the way that fault fails (what ``eval record`` needs to keep such a run's cassette: its replay meets
  the same fault).
"""

from __future__ import annotations

import hashlib
import re
from typing import Final, Literal, get_args

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.harness.wire import Api, wire_format
from alisio.core.text import plural

__all__ = [
    "DEFAULT_DRIP_MS",
    "DEFAULT_READ_TIMEOUT_MS",
    "DEFAULT_RETRY_AFTER_S",
    "DRIP_PIECES",
    "FAULT_KINDS",
    "FaultAnswer",
    "FaultHit",
    "FaultKind",
    "FaultSpec",
    "fault_answer",
    "fault_at",
    "fault_that_ended",
    "hits_text",
    "parse_faults",
    "spec_text",
    "stall_timeout_ms",
]

FaultKind = Literal["429", "500", "503", "stall", "cut", "slow"]
FAULT_KINDS: Final[tuple[FaultKind, ...]] = get_args(FaultKind)
DEFAULT_RETRY_AFTER_S: Final = 1.0
DEFAULT_DRIP_MS: Final = 500
DEFAULT_READ_TIMEOUT_MS: Final = 300_000
"""The built-in provider's read timeout without ``provider.timeoutMs``: how long a ``stall`` lasts then."""
DRIP_PIECES: Final = 10
"""A ``slow`` answer arrives in this many pieces, each after ``drip-ms``."""
_SETTINGS: Final = ("seed", "retry-after", "drip-ms")
_MAX_RETRY_AFTER_S: Final = 3600.0
_MAX_DRIP_MS: Final = 60_000
_SYNTAX: Final = "KIND:RATE entries and settings, e.g. 429:0.1,cut:0.05,seed=7"


class FaultSpec(Frozen, frozen=True, kw_only=True):
    """A valid spec: the rate of each kind given (in ``FAULT_KINDS`` order; a rate of 0 is kept, so the spec
    still names the faults it was asked for) and the settings."""

    rates: tuple[tuple[FaultKind, float], ...]
    seed: int = 0
    retry_after_s: float = DEFAULT_RETRY_AFTER_S
    drip_ms: int = DEFAULT_DRIP_MS


class FaultHit(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """One faulted call of a run, as its record keeps it."""

    call: int
    """The run's call index (0-based; every HTTP attempt to the model counts, retries included)."""
    kind: FaultKind
    events: int | None = None
    """For a ``cut``: how many stream events of the answer the harness had received when the connection broke
    (0: none, and the call was retried like a failed connection; more: the call failed, not retried).
    ``None`` for the other kinds (and in records written before cuts kept it)."""
    ended: bool = False
    """For a ``cut``: the answer's last event (``[DONE]``, ``message_stop``, ...) was among those ``events``, so
    the harness had the whole answer and never met the break."""


class FaultAnswer(Frozen, frozen=True, kw_only=True):
    """What a provider of ``api`` sends for an error fault: status, headers and JSON body."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def _rate(kind: str, text: str) -> Result[float, str]:
    value = _number(text)
    if value is None or not 0.0 <= value <= 1.0:
        return Failure(f"{kind}:{text}: a rate is a number from 0 to 1 (the share of calls faulted)")
    return Success(value)


def _setting(name: str, text: str, spec: FaultSpec) -> Result[FaultSpec, str]:
    if name == "seed":
        if not re.fullmatch(r"\d{1,18}", text):
            return Failure(f"seed={text}: a seed is a whole number from 0")
        return Success(msgspec.structs.replace(spec, seed=int(text)))
    if name == "retry-after":
        value = _number(text)
        if value is None or not 0.0 <= value <= _MAX_RETRY_AFTER_S:
            return Failure(f"retry-after={text}: seconds from 0 to {_MAX_RETRY_AFTER_S:.0f}")
        return Success(msgspec.structs.replace(spec, retry_after_s=value))
    if not re.fullmatch(r"\d{1,6}", text) or int(text) > _MAX_DRIP_MS:
        return Failure(f"drip-ms={text}: milliseconds from 0 to {_MAX_DRIP_MS}")
    return Success(msgspec.structs.replace(spec, drip_ms=int(text)))


def parse_faults(text: str) -> Result[FaultSpec | None, str]:
    """The spec ``text`` (``None``: no faults: ``none`` or empty), or one line saying what is wrong.

    >>> parse_faults("cut:0.05,429:0.1,seed=7").map(spec_text).unwrap()
    '429:0.1,cut:0.05,seed=7'
    >>> parse_faults("429:2").failure()
    '429:2: a rate is a number from 0 to 1 (the share of calls faulted)'
    """
    cleaned = text.strip()
    if not cleaned.isprintable():
        return Failure(f"{cleaned[:60]!r}: a faults spec is one line of printable characters ({_SYNTAX})")
    if cleaned in ("", "none"):
        return Success(None)
    rates: dict[str, float] = {}
    spec = FaultSpec(rates=())
    seen: set[str] = set()
    for raw in cleaned.split(","):
        entry = raw.strip()
        name, sep, value = entry.partition("=")
        if sep:
            name = name.strip()
            if name not in _SETTINGS:
                return Failure(f"{entry}: unknown setting (settings: {', '.join(_SETTINGS)})")
            if name in seen:
                return Failure(f"{entry}: {name} is given twice")
            seen.add(name)
            checked = _setting(name, value.strip(), spec)
            if isinstance(checked, Failure):
                return checked
            spec = checked.unwrap()
            continue
        kind, colon, rate = entry.partition(":")
        kind = kind.strip()
        if not colon or not kind:
            return Failure(f"{entry or '(empty)'}: expected {_SYNTAX}")
        if kind not in FAULT_KINDS:
            return Failure(f"{entry}: unknown fault {kind!r} (faults: {', '.join(FAULT_KINDS)})")
        if kind in rates:
            return Failure(f"{entry}: {kind} is given twice")
        checked_rate = _rate(kind, rate.strip())
        if isinstance(checked_rate, Failure):
            return checked_rate
        rates[kind] = checked_rate.unwrap()
    if not rates:
        return Failure(f"{cleaned}: no fault given; expected {_SYNTAX}")
    total = sum(rates.values())
    if total > 1.0 + 1e-9:
        return Failure(
            f"{cleaned}: the rates add up to {total:g}, more than 1 (each call gets one fault at most)"
        )
    ordered = tuple((kind, rates[kind]) for kind in FAULT_KINDS if kind in rates)
    return Success(msgspec.structs.replace(spec, rates=ordered))


def spec_text(spec: FaultSpec | None) -> str:
    """The canonical spec (``none`` for no faults): kinds in ``FAULT_KINDS`` order, the seed always, other
    settings when not at their default."""
    if spec is None:
        return "none"
    parts = [f"{kind}:{rate:g}" for kind, rate in spec.rates] + [f"seed={spec.seed}"]
    if spec.retry_after_s != DEFAULT_RETRY_AFTER_S:
        parts.append(f"retry-after={spec.retry_after_s:g}")
    if spec.drip_ms != DEFAULT_DRIP_MS:
        parts.append(f"drip-ms={spec.drip_ms}")
    return ",".join(parts)


def fault_at(spec: FaultSpec, run: str, call: int) -> FaultKind | None:
    """The fault of call ``call`` of the run named ``run`` (``None``: the call goes through).

    ``run`` names the run within its command (the lab's ``<task>/<repetition>``; ``alisio run``'s ``run``),
    so each task and repetition draws its own schedule. A uniform draw u in [0, 1) from sha256 of (spec seed,
    run, call); the kinds take consecutive shares of [0, 1) by their rates in ``FAULT_KINDS`` order, so each
    kind hits its rate of the calls.
    """
    digest = hashlib.sha256(f"alisio-faults:{spec.seed}:{run}:{call}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2.0**64
    edge = 0.0
    for kind, rate in spec.rates:
        edge += rate
        if u < edge:
            return kind
    return None


def stall_timeout_ms(spec: FaultSpec | None, timeout_ms: int | None) -> int | None:
    """How long each ``stall`` of a run under ``spec`` lasts with the built-in provider, whose read timeout is
    ``timeout_ms`` (``provider.timeoutMs``; ``None``: the default): what a cassette recorded under ``spec``
    keeps, so that its replay's stalls last as long; ``None`` when ``spec`` injects no stall.

    >>> stall_timeout_ms(parse_faults("stall:0.1").unwrap(), None), stall_timeout_ms(None, 500)
    (300000, None)
    """
    if spec is None or not any(kind == "stall" and rate > 0 for kind, rate in spec.rates):
        return None
    return DEFAULT_READ_TIMEOUT_MS if timeout_ms is None else timeout_ms


def hits_text(hits: tuple[FaultHit, ...]) -> str:
    """``call 0: 429, call 3: cut after 2 events`` (``none``).

    >>> hits_text((FaultHit(call=0, kind="429"), FaultHit(call=1, kind="cut", events=0)))
    'call 0: 429, call 1: cut before the first event'
    """
    return ", ".join(f"call {hit.call}: {_hit_text(hit)}" for hit in hits) or "none"


def _hit_text(hit: FaultHit) -> str:
    if hit.kind != "cut" or hit.events is None:
        return hit.kind
    if hit.ended:
        return f"cut after the answer's end ({plural(hit.events, 'event')})"
    return "cut before the first event" if hit.events == 0 else f"cut after {plural(hit.events, 'event')}"


_FAILURE_REASON: Final[dict[FaultKind, str]] = {
    "429": "provider_rate_limited",
    "500": "provider_server",
    "503": "provider_server",
    "stall": "provider_timeout",
    "cut": "provider_network",
}
"""The run-end reason of a call whose last attempt met each fault and failed (``ProviderFailure.reason``)."""


def fault_that_ended(calls: int, hits: tuple[FaultHit, ...], reason: str | None) -> FaultHit | None:
    """The fault that ended a run which ended ``error`` with ``reason`` after ``calls`` model calls and
    ``hits``: the hit of its last call, when that call's failure is the one its fault gives (retries run out
    on a 429, 5xx, stall or cut before the first event; a cut after some events); ``None`` when the run ended
    otherwise (the provider's own failure, a cut after the answer's end, which the harness never met).

    >>> fault_that_ended(2, (FaultHit(call=1, kind="cut", events=3),), "provider_network")
    FaultHit(call=1, kind='cut', events=3, ended=False)
    >>> fault_that_ended(3, (FaultHit(call=1, kind="cut", events=3),), "provider_network") is None
    True
    """
    if not hits or hits[-1].call != calls - 1 or hits[-1].ended:
        return None
    last = hits[-1]
    return last if _FAILURE_REASON.get(last.kind) == reason else None


_MESSAGES: Final[dict[str, str]] = {
    "429": "Rate limit reached (injected fault). Please try again later.",
    "500": "The server had an error while processing your request (injected fault).",
    "503": "The server is overloaded or not ready yet (injected fault).",
}


def fault_answer(api: Api, kind: Literal["429", "500", "503"], spec: FaultSpec) -> FaultAnswer:
    """The answer a provider of ``api`` gives for an error fault: its status, its headers (a 429's
    ``retry-after``, the api's request id header) and its error body in the api's own shape, all read off its
    wire format's record (``alisio.core.harness.wire.wire_format(api)``: ``error_body`` with the fault's
    ``fault_kinds`` entry, ``request_id_header``, and ``retry_info`` for a 429: Gemini's ``RetryInfo``)."""
    status = int(kind)
    headers: list[tuple[str, str]] = [("content-type", "application/json")]
    if kind == "429":
        headers.append(("retry-after", f"{spec.retry_after_s:g}"))
    record = wire_format(api)
    if record.request_id_header is not None:
        headers.append((record.request_id_header, "req_injected_fault"))
    body = record.error_body(status, record.fault_kinds[kind], _MESSAGES[kind])
    if kind == "429":
        body = record.retry_info(body, spec.retry_after_s)
    return FaultAnswer(status=status, headers=tuple(headers), body=body)
