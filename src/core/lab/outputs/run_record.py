"""What ``alisio run`` keeps of a run: its usage line, and its transcript read back by ``eval show``.

``alisio run`` stores its event log as ``<dataDir>/run/<runId>/transcript.jsonl`` (the format of
``alisio.core.lab.runs.transcript``, redacted the same way) and ends with one usage line: main-loop tokens over the
calls that reported them (with the count when some did not), turns, tool calls and wall time. ``eval show`` on
that directory lays the transcript out as it does an eval run's, under a header from the ``run_end`` event
(and its message, when the run ended ``error``: the provider's own words, redacted when the run ended).
"""

from __future__ import annotations

from collections.abc import Sequence

from alisio.core.harness.events import (
    CUT_REASONS,
    Event,
    ProviderResponded,
    RunEnded,
    RunStarted,
    ToolCalled,
)
from alisio.core.lab.outputs.show import transcript_lines
from alisio.core.text import plural

__all__ = ["TRANSCRIPT_JSONL", "render_run_transcript", "run_header", "usage_line"]

TRANSCRIPT_JSONL = "transcript.jsonl"


def usage_line(events: Sequence[Event]) -> str:
    """``usage: 1,234 in, 56 out tokens over 3 calls; 3 turns, 2 tool calls, 4.2 s``.

    Tokens are summed over the main-loop calls that reported them; when some did not, the line says over how
    many of them the sum runs (never a guess, never 0 for "not reported"). A call cut short (``CUT_REASONS``)
    counts with the input tokens it reported before the cut, and the line says so.
    """
    main = [e for e in events if isinstance(e, ProviderResponded) and e.purpose == "main"]
    reported = [e.usage for e in main if e.usage is not None and e.usage.input_tokens is not None]
    if reported:
        inp = sum(u.input_tokens or 0 for u in reported)
        out = sum(u.output_tokens or 0 for u in reported)
        over = (
            plural(len(main), "call")
            if len(reported) == len(main)
            else f"{len(reported)} of {len(main)} calls"
        )
        tokens = f"{inp:,} in, {out:,} out tokens over {over}"
        cut = sum(e.finish_reason in CUT_REASONS and e.usage is not None for e in main)
        if cut:
            what = "its" if cut == 1 else "their"
            tokens += (
                f" ({plural(cut, 'call')} cut short: {what} input as reported before the cut, no output)"
            )
    else:
        tokens = "tokens not reported"
    end = next((e for e in reversed(events) if isinstance(e, RunEnded)), None)
    turns = end.turns if end is not None else len(main)
    calls = sum(isinstance(e, ToolCalled) for e in events)
    elapsed = max((e.elapsed_ms for e in events), default=0)
    return f"usage: {tokens}; {plural(turns, 'turn')}, {plural(calls, 'tool call')}, {elapsed / 1000:.1f} s"


def run_header(name: str, events: Sequence[Event]) -> str:
    """``alisio run <name>: completed, 3 turns, 2 tool calls, 4.2 s (openai-compat m)``: an eval show header."""
    end = next((e for e in reversed(events) if isinstance(e, RunEnded)), None)
    start = next((e for e in events if isinstance(e, RunStarted)), None)
    outcome = "no run_end (the run was cut short)" if end is None else str(end.outcome)
    why = f" ({end.reason})" if end is not None and end.reason else ""
    model = f" ({start.provider} {start.model})" if start is not None else ""
    return f"alisio run {name}: {outcome}{why}; {usage_line(events).removeprefix('usage: ')}{model}"


def render_run_transcript(name: str, events: Sequence[Event]) -> str:
    """An ``alisio run`` transcript as ``eval show`` prints it: the header, ``why: <message>`` when the run
    ended with one (a provider's error, as the run printed it), then the events."""
    end = next((e for e in reversed(events) if isinstance(e, RunEnded)), None)
    why = [f"why: {end.message}"] if end is not None and end.message else []
    return "\n".join([run_header(name, events), *why, "", *transcript_lines(events)]) + "\n"
