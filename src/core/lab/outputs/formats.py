"""How the lab's numbers and notices are written, in every output (report.md, report.html, comparisons, CI).

Rules this module keeps:

- Rates print as ``80.0% [37.6%, 96.4%]`` (95% Wilson), the same way everywhere
  (``alisio.core.stats.verdict.format_interval``); differences of rates print in percentage points with a sign
  (``+7.9 pp``, never ``-0.0 pp``).
- Absent figures print "not reported" (provider numbers) or "n/a" (undefined statistics), never 0.
- The notices (replay, scripted provider, the suite rate) are worded once, here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from alisio.core.harness.protocol import Usage
from alisio.core.lab.reports.naming import SCRIPTED
from alisio.core.lab.reports.report import AnswerSource, Count
from alisio.core.lab.runs.records import VerifierResult
from alisio.core.share.secrets import redact
from alisio.core.stats.rates import ClusteredMean, Interval, IntervalMethod
from alisio.core.stats.verdict import format_interval

__all__ = [
    "NOT_REPORTED",
    "REPLAY_NOTICE",
    "SCRIPTED_NOTICE",
    "SCRIPTED_PROVIDER",
    "SUITE_INTERVAL_NOTE",
    "SUITE_RATE_NOTE",
    "context_use",
    "format_counts",
    "format_int",
    "format_num",
    "format_pp",
    "format_rate",
    "format_seconds",
    "format_seconds2",
    "format_usage",
    "format_usd",
    "measured_note",
    "pct",
    "suite_interval_text",
    "terminal_text",
    "verifier_kind_text",
    "visible_controls",
]

REPLAY_NOTICE = "Replay measures the harness, not the model: the model answers come from a recording."
SCRIPTED_PROVIDER = SCRIPTED
"""The provider id of ``--script`` runs: fixed assistant turns, no model."""
SCRIPTED_NOTICE = (
    "The provider is scripted: fixed assistant turns from a file, not a model. These numbers measure the "
    "harness and the suite's verifiers, not model quality."
)
SUITE_RATE_NOTE = (
    "The suite success rate is the mean of the per-task success rates with a task-clustered standard error, "
    "because runs cluster within tasks: runs are never pooled across tasks into one rate."
)
SUITE_INTERVAL_NOTE = (
    "Its 95% interval is a t interval over tasks (mean ± t(0.975, tasks − 1) × standard error), wider than "
    "±1.96 standard errors when there are few tasks; when every task has the same rate the spread of the "
    "tasks says nothing, so the interval is the Wilson interval of all the runs pooled."
)
NOT_REPORTED = "not reported"


def pct(value: float) -> str:
    """``80.0%``."""
    return f"{value * 100:.1f}%"


def format_rate(rate: float | None, interval: Interval | None) -> str:
    """``80.0% [37.6%, 96.4%]``; the bare rate without an interval (replay); ``n/a`` without a rate."""
    if rate is None:
        return "n/a"
    if interval is None:
        return pct(rate)
    return f"{pct(rate)} {format_interval(interval)}"


def format_pp(value: float) -> str:
    """A difference of rates in percentage points with its sign: ``+7.9 pp``, ``-40.0 pp`` (never ``-0.0``)."""
    text = f"{value * 100:+.1f}"
    return ("+" + text[1:] if text == "-0.0" else text) + " pp"


def suite_interval_text(rate: ClusteredMean) -> str:
    """``[16.9%, 83.1%] (95% t interval, 3 degrees of freedom)``, or the pooled Wilson case said in words;
    empty for a rate without an interval (replay, or a report written before intervals existed)."""
    if rate.interval is None:
        return ""
    if rate.interval_method is IntervalMethod.POOLED_WILSON:
        every = "the only task" if rate.tasks == 1 else "every task has the same rate"
        return f"{format_interval(rate.interval)} ({every}: pooled Wilson 95% interval)"
    df = rate.tasks - 1
    return (
        f"{format_interval(rate.interval)} (95% t interval, {df} degree{'' if df == 1 else 's'} of freedom)"
    )


def format_int(value: int | None) -> str:
    """``12,345``, or "not reported" for an absent provider figure."""
    return NOT_REPORTED if value is None else f"{value:,}"


def format_usage(usage: Usage | None) -> str:
    """One provider call's tokens: ``1,234 in, 56 out``; a figure the provider left out is ``?``, and no
    usage at all is "usage not reported" (never 0, never ``None``)."""
    if usage is None or (usage.input_tokens is None and usage.output_tokens is None):
        return "usage not reported"

    def count(value: int | None) -> str:
        return "?" if value is None else f"{value:,}"

    return f"{count(usage.input_tokens)} in, {count(usage.output_tokens)} out"


def format_num(value: float | None, digits: int = 0, absent: str = "n/a") -> str:
    """``1,234.5`` with ``digits`` decimals, or ``absent``."""
    return absent if value is None else f"{value:,.{digits}f}"


def format_seconds(ms: float | None) -> str:
    """Milliseconds as ``12.3 s``, or ``n/a``."""
    return "n/a" if ms is None else f"{ms / 1000:,.1f} s"


def format_seconds2(ms2: float | None) -> str:
    """A variance in ms² as ``1.5 s²``, or ``n/a``."""
    return "n/a" if ms2 is None else f"{ms2 / 1e6:,.1f} s²"


def format_usd(value: float | None) -> str:
    """``0.1234`` (USD, four decimals), or ``n/a``."""
    return "n/a" if value is None else f"{value:,.4f}"


def format_counts(counts: Iterable[Count]) -> str:
    """``compaction 2, usage_unreported 1``, or ``none``."""
    return ", ".join(f"{c.name} {c.count}" for c in counts) or "none"


_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible_controls(text: str) -> str:
    """``text`` with each control character but tab, newline and carriage return (and each lone surrogate
    or noncharacter) written as a visible escape such as ``\\x1b``: XML 1.0 forbids them, and in a page they
    would show as nothing or garble the text (terminal colour codes in a command's output)."""
    return _CONTROLS.sub(_escape, text)


def verifier_kind_text(verifier: VerifierResult) -> str:
    """The verifier's kind for a verifier list, saying how many of its rules held vacuously (over 0 calls)."""
    if not verifier.vacuous_rules:
        return verifier.kind
    return f"{verifier.kind}, {verifier.vacuous_rules} rule(s) vacuous"


MEASURED_NOTE = (
    "Over judged runs only. Tokens are provider-reported main-loop tokens (compaction calls excluded), "
    'summed over the judged runs that reported usage for every turn ("N/M runs" when not all did; "not '
    'reported" when none did). Per-success figures are the total spend of the judged runs, failures '
    "included, divided by the successes (n/a when some runs did not report tokens). Cached input is cached "
    "over input tokens pooled over the runs that reported it in every turn."
)


FIRST_EVENT_NOTE = (
    "First event median: from sending a request to the first event of its answer, over the provider calls "
    "(retries and waits included); a long one with a short wall time per token is queueing on the server."
)
RECORDED_NOTE = (
    "A replay spends no tokens: the token figures are the cassette's, as recorded, once per replayed run."
)


def measured_note(mode: AnswerSource) -> str:
    """The note under a Measured table: what the figures are (a replay's tokens are the recording's)."""
    note = f"{MEASURED_NOTE} {FIRST_EVENT_NOTE}"
    return f"{RECORDED_NOTE} {note}" if mode is AnswerSource.REPLAY else note


def terminal_text(text: str, known: tuple[tuple[str, str], ...]) -> str:
    """``text`` as it may reach a terminal: every secret redacted (``alisio.core.share.secrets.redact``),
    then every control character but tab and newline shown as an escape (``visible_controls``), so that
    untrusted text (a verifier's output, a provider's error, the model's words) can neither show a key nor
    move the cursor, clear the screen or set the window title (``ESC]0;...BEL``, ``ESC[2J``)."""
    return visible_controls(redact(text, known)).replace("\r\n", "\n").replace("\r", "\\r")


def context_use(used: int | None, judged: int) -> str:
    """``3/5``: of a task's judged runs, how many used the context (a tool call named one of its files);
    ``n/a`` when the report has no count."""
    return "n/a" if used is None else f"{used}/{judged}"
