"""What the live status line of a lab command says beyond the counts: waits, retries, tokens; and fitting a
finished run's line to the terminal.

Pure text. The shell feeds it the retry notices the provider raised (``provider_retry`` incidents, whose
message ends ``retry N of M in D s``) and the clock; it answers with the words the status line shows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["fit_line", "retry_wait", "status_extras"]

_RETRY = re.compile(r"retry \d+ of \d+ in (\d+(?:\.\d+)?) s$")
_STATUS = re.compile(r"^HTTP (\d{3}) ")


def retry_wait(message: str) -> tuple[str, float] | None:
    """What a retry notice waits on and for how long: ``("rate-limited", 2.0)``; ``None`` when it is not one.

    ``rate-limited`` for a 429, ``server error`` for a 5xx, ``timed out`` for a 408, else ``connection
    error`` (refused, reset, a read timeout before any event).
    """
    found = _RETRY.search(message)
    if found is None:
        return None
    status = _STATUS.match(message)
    code = int(status.group(1)) if status else None
    if code == 429:
        what = "rate-limited"
    elif code == 408:
        what = "timed out"
    elif code is not None and code >= 500:
        what = "server error"
    else:
        what = "connection error"
    return what, float(found.group(1))


def status_extras(
    waits: Sequence[tuple[str, float]], retries: int, tokens: int | None, cost_usd: float | None = None
) -> str:
    """`` · rate-limited, retrying in 2 s (3 runs waiting) · 3 retries so far · 12,345 tokens · 0.0421 USD``.

    Args:
        waits: each waiting run's reason and the seconds left of its wait (the soonest is shown).
        retries: retries over the whole command so far.
        tokens: main and compaction tokens the provider reported so far (``None``: none reported yet).
        cost_usd: those tokens at the command's rates (``None``: no rates, or nothing priced yet).
    """
    parts = []
    if waits:
        what, left = min(waits, key=lambda wait: wait[1])
        others = f" ({len(waits)} runs waiting)" if len(waits) > 1 else ""
        parts.append(f"{what}, retrying in {max(0, round(left))} s{others}")
    if retries:
        parts.append(f"{retries} {'retry' if retries == 1 else 'retries'} so far")
    if tokens is not None:
        parts.append(f"{tokens:,} tokens")
    if cost_usd is not None:
        parts.append(f"{cost_usd:,.4f} USD")
    return "".join(f" · {part}" for part in parts)


def fit_line(line: str, width: int) -> str:
    """``line`` cut to ``width`` characters with an ellipsis (the whole text stays in the report)."""
    if width < 2 or len(line) <= width:
        return line
    return line[: width - 1] + "…"
