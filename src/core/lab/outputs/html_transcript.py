"""A run's transcript as report.html shows it: its events, cut to fit the page, then as HTML.

A transcript on disk (``runs/<task>/<repetition>.jsonl``) keeps tool results up to 64 KiB each; a page of
1,000 runs cannot hold them all. Rules this module keeps:

- The page's transcripts share ``PAGE_CHARS`` characters of text. ``transcript_budgets`` gives each run a
  share, a run that did not pass ``FAILING_WEIGHT`` times the share of a pass, at most ``RUN_CHARS``; a
  share below ``MIN_RUN_CHARS`` is not worth showing, and that transcript is left out of the page (the page
  says so and names ``alisio eval show``). So the transcripts of any page hold at most ``PAGE_CHARS``
  characters, whatever the runs wrote.
- Within its share a transcript keeps its events in order; each text (the prompt, an assistant turn, tool
  arguments, a tool result) shows at most ``FIELD_CHARS`` characters, and every cut is stated: how many
  characters of a text, how many events at the end.
- An ``edit_file`` call shows as the unified diff ``alisio eval show`` prints (its lines numbered by the
  file's once its result says where it replaced), the added and removed lines marked.
- Text is shown as the transcript holds it, which the secret scanner redacted when the transcript was
  written (``alisio.core.lab.runs.transcript``), and escaped (``alisio.core.lab.outputs.html_page.esc``): a
  ``<script>`` in a tool output is shown as text. (Scanning it again here would cost about a second per
  megabyte of page and find nothing new: the same scanner, the same credentials.)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence

import msgspec

from alisio.core.base import Frozen
from alisio.core.harness.events import (
    AgentExited,
    ApprovalDecided,
    BudgetStopped,
    Compacted,
    Event,
    IncidentRaised,
    ProviderRequested,
    ProviderResponded,
    RunEnded,
    RunStarted,
    ToolCalled,
    ToolResulted,
)
from alisio.core.lab.outputs.formats import format_usage
from alisio.core.lab.outputs.html_page import esc
from alisio.core.lab.outputs.show import edit_diff, edited_line
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.text import plural

__all__ = [
    "FAILING_WEIGHT",
    "FIELD_CHARS",
    "MIN_RUN_CHARS",
    "PAGE_CHARS",
    "RUN_CHARS",
    "Entry",
    "TranscriptView",
    "transcript_budgets",
    "transcript_html",
    "transcript_view",
    "transcript_view_of",
    "unavailable",
]

PAGE_CHARS = 4_000_000
"""Characters of transcript text one page holds at most."""
RUN_CHARS = 60_000
"""Characters one run's transcript shows at most."""
MIN_RUN_CHARS = 1_500
"""A smaller share is not shown at all (the transcript is left out of the page)."""
FIELD_CHARS = 4_000
"""Characters of one text (an assistant turn, a tool result...) shown at most."""
FAILING_WEIGHT = 3
"""A run that did not pass gets this many times the share of a passing run."""


class Entry(Frozen, frozen=True, kw_only=True):
    """One event as shown: its kind (a CSS class), a title line, and its text (cut)."""

    kind: str
    title: str
    body: str = ""
    cut: int = 0
    """Characters of the text not shown."""
    ok: bool | None = None
    """For a tool result: whether the tool succeeded."""
    diff: bool = False
    """The text is a unified diff (an ``edit_file`` call): its added and removed lines are marked."""


class TranscriptView(Frozen, frozen=True, kw_only=True):
    """A transcript as the page shows it, or why it cannot."""

    entries: tuple[Entry, ...] = ()
    omitted: int = 0
    """Events at the end not shown, from the first one the run's share had no room for."""
    problem: str | None = None
    """Why there is no transcript to show (missing, unreadable, left out of the page)."""


def unavailable(problem: str) -> TranscriptView:
    """A transcript the page cannot show, and why."""
    return TranscriptView(problem=problem)


def transcript_budgets(records: Iterable[RunRecord]) -> dict[tuple[str, int], int]:
    """Each run's share of ``PAGE_CHARS``, keyed by (task, repetition); 0 means left out of the page.

    A run that did not pass weighs ``FAILING_WEIGHT``, a pass 1; each share is at most ``RUN_CHARS``, and a
    share below ``MIN_RUN_CHARS`` becomes 0. The shares never add up to more than ``PAGE_CHARS``.
    """
    weights = {
        (r.task_id, r.repetition): 1 if r.status is RunStatus.PASS else FAILING_WEIGHT for r in records
    }
    total = sum(weights.values())
    if total == 0:
        return {}
    unit = PAGE_CHARS / total
    shares = {key: min(RUN_CHARS, int(unit * weight)) for key, weight in weights.items()}
    return {key: share if share >= MIN_RUN_CHARS else 0 for key, share in shares.items()}


def _shown(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to ``limit`` characters, and how many characters were cut."""
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def _arguments(raw: str) -> str:
    """Tool arguments as indented JSON when they parse (they are the model's raw text otherwise)."""
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except ValueError:
        return raw


def _edit(event: ToolCalled, line: int | None) -> str | None:
    """An ``edit_file`` call as the diff ``eval show`` prints (``None``: another tool, or no strings)."""
    if event.name != "edit_file":
        return None
    try:
        parsed = json.loads(event.arguments)
    except ValueError:
        return None
    diff = edit_diff(parsed, line) if isinstance(parsed, dict) else None
    return None if diff is None else "\n".join(diff)


def _seconds(ms: int) -> str:
    return f"{ms / 1000:.1f} s"


def _entry(event: Event, turn: int, last_text: str) -> Entry | None:
    """The entry of one event (``None`` for the provider requests, shown through their responses)."""
    at = f"+{_seconds(event.elapsed_ms)}"
    match event:
        case RunStarted():
            title = f"prompt · {event.provider} {event.model} · policy {event.policy_mode}"
            return Entry(kind="start", title=title, body=event.prompt)
        case ProviderResponded():
            calls = (
                f" · {event.tool_calls} tool call{'' if event.tool_calls == 1 else 's'}"
                if event.tool_calls
                else ""
            )
            who = "compaction checkpoint" if event.purpose == "compaction" else f"turn {turn} · assistant"
            title = f"{who} · {event.finish_reason}{calls} · {format_usage(event.usage)} · {_seconds(event.duration_ms)} · {at}"
            return Entry(kind="assistant", title=title, body=event.text)
        case ToolCalled():
            effect = f" ({event.effect})" if event.effect is not None else " (unknown tool)"
            title = f"tool call {event.name}{effect} · {at}"
            diff = _edit(event, None)
            if diff is not None:
                return Entry(kind="call", title=title, body=diff, diff=True)
            return Entry(kind="call", title=title, body=_arguments(event.arguments))
        case ToolResulted():
            state = "ok" if event.ok else "failed"
            title = f"result of {event.name}: {state} · {event.duration_ms:,} ms · {at}"
            return Entry(kind="result", title=title, body=event.output_excerpt, ok=event.ok)
        case ApprovalDecided():
            decided = "granted" if event.granted else "denied"
            return Entry(
                kind="approval",
                title=f"approval {event.name} ({event.effect}): {decided} by {event.by} · {at}",
            )
        case IncidentRaised():
            return Entry(kind="incident", title=f"incident {event.kind} · {at}", body=event.message)
        case Compacted():
            title = (
                f"compaction: {event.chars_before:,} → {event.chars_after:,} characters, "
                f"{event.messages_replaced} messages replaced · {at}"
            )
            return Entry(kind="compaction", title=title)
        case BudgetStopped():
            title = f"budget stop: {event.budget} reached {event.value:,} (limit {event.limit:,}) · {at}"
            return Entry(kind="budget", title=title)
        case AgentExited():
            how = f"killed ({event.killed})" if event.killed else f"exit code {event.exit_code}"
            body = f"stdout:\n{event.stdout}\n\nstderr:\n{event.stderr}"
            return Entry(kind="end", title=f"agent {event.agent} ({event.kind}): {how} · {at}", body=body)
        case RunEnded():
            why = f" ({event.reason})" if event.reason else ""
            title = f"run ended: {event.outcome}{why} after {plural(event.turns, 'turn')} · {at}"
            body = event.final_text if event.final_text.strip() != last_text.strip() else ""
            return Entry(kind="end", title=title, body=event.message or body)  # an error's message, if any
        case _:
            return None


class _Cut:
    """Entries added in order until the run's share is used up."""

    def __init__(self, budget: int) -> None:
        self.left = budget
        self.turn = 0
        self.last_text = ""
        self.entries: list[Entry] = []
        self.edits: dict[str, tuple[int, ToolCalled, int]] = {}
        """Each ``edit_file`` call shown, by call id: its entry, its event, the characters its text had."""

    def add(self, event: Event) -> bool:
        """Add ``event``'s entry (if it has one); ``False`` when the share is used up and it was not added."""
        if isinstance(event, ProviderRequested):
            self.turn = event.turn if event.purpose == "main" else self.turn
            return True
        entry = _entry(event, self.turn, self.last_text)
        if entry is None:
            return True
        if self.left <= len(entry.title):
            return False
        self.left -= len(entry.title)
        limit = min(FIELD_CHARS, self.left)
        body, cut = _shown(entry.body, limit)
        self.left -= len(body)
        if isinstance(event, ProviderResponded) and event.purpose == "main":
            self.last_text = event.text
        if entry.diff and isinstance(event, ToolCalled):
            self.edits[event.call_id] = (len(self.entries), event, limit)
        if isinstance(event, ToolResulted):
            self._number_edit(event)
        self.entries.append(msgspec.structs.replace(entry, body=body, cut=cut))
        return True

    def _number_edit(self, event: ToolResulted) -> None:
        """Number an ``edit_file`` diff shown earlier by the file's lines, once its result says where it was."""
        line = edited_line(event.output_excerpt) if event.ok and event.name == "edit_file" else None
        shown = self.edits.pop(event.call_id, None)
        diff = None if shown is None or line is None else _edit(shown[1], line)
        if shown is None or diff is None:
            return
        index, _, limit = shown
        before = self.entries[index]
        body, cut = _shown(diff, limit)
        self.left -= len(body) - len(before.body)
        self.entries[index] = msgspec.structs.replace(before, body=body, cut=cut)


LEFT_OUT = "left out of this page: too many runs to show every transcript"


def transcript_view(events: Sequence[Event], budget: int) -> TranscriptView:
    """The events of one run as the page shows them, within ``budget`` characters.

    Args:
        events: the run's transcript, in order.
        budget: its share of the page (``transcript_budgets``); 0 leaves it out of the page.

    Returns:
        The entries in order, each text cut to ``FIELD_CHARS`` and to what is left of ``budget``, and the
        count of the events left out at the end; or, with a budget of 0, the reason it is left out.
    """
    if budget <= 0:
        return unavailable(LEFT_OUT)
    cut = _Cut(budget)
    for index, event in enumerate(events):
        if not cut.add(event):
            return TranscriptView(entries=tuple(cut.entries), omitted=len(events) - index)
    return TranscriptView(entries=tuple(cut.entries))


_EVENT = msgspec.json.Decoder(Event)


def _lines(data: bytes) -> Iterator[tuple[int, memoryview]]:
    """Each non-blank line's end offset and its bytes, without copying them."""
    view = memoryview(data)
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        if end > start and (data[start : start + 1] == b"{" or data[start:end].strip()):
            yield end, view[start:end]
        start = end + 1


def transcript_view_of(data: bytes, budget: int, source: str) -> TranscriptView:
    """``transcript_view`` of a transcript file's bytes, decoding only the events it shows.

    A transcript can hold megabytes of tool output while its share of the page is a few thousand characters:
    the lines past the share are only counted (one event per line), never decoded.

    Returns:
        The view; or why there is none: left out of the page, no events, or the first line that is not an
        event (``source`` and its 1-based number among the non-blank lines).
    """
    if budget <= 0:
        return unavailable(LEFT_OUT)
    cut = _Cut(budget)
    number = 0
    for end, line in _lines(data):
        number += 1
        try:
            event = _EVENT.decode(line)
        except msgspec.DecodeError as error:
            return unavailable(f"{source} line {number} is not an event: {error}")
        if not cut.add(event):
            start = end - len(line)
            rest = data.count(b"\n", start) + (not data.endswith(b"\n"))
            return TranscriptView(entries=tuple(cut.entries), omitted=rest)
    if number == 0:
        return unavailable("the run recorded no events (it ended before the agent started)")
    return TranscriptView(entries=tuple(cut.entries))


_DIFF_CLASS = {"+": "add", "-": "del", "@": "hunk"}


def _diff_html(text: str) -> str:
    """A unified diff's lines, added and removed ones marked (the ``---``/``+++`` file lines are not)."""
    lines = []
    for line in text.split("\n"):
        cls = "" if line.startswith(("--- ", "+++ ")) else _DIFF_CLASS.get(line[:1], "")
        lines.append(f'<span class="{cls}">{esc(line)}</span>' if cls else esc(line))
    return f'<pre class="diff">{chr(10).join(lines)}</pre>'


def _entry_html(entry: Entry) -> str:
    state = "" if entry.ok is None else (" ok" if entry.ok else " failed")
    head, _, rest = entry.title.partition(" · ")
    title = f'<div class="ev-title"><b>{esc(head)}</b>{" · " + esc(rest) if rest else ""}</div>'
    body = (_diff_html(entry.body) if entry.diff else f"<pre>{esc(entry.body)}</pre>") if entry.body else ""
    cut = f'<div class="cut">[{entry.cut:,} more characters not shown here]</div>' if entry.cut else ""
    return f'<li class="{entry.kind}{state}">{title}{body}{cut}</li>'


def transcript_html(view: TranscriptView, show: str) -> str:
    """The transcript's events as an ordered list, with every cut stated; ``show`` is the ``eval show``
    command that prints the whole transcript."""
    if view.problem is not None:
        return f'<p class="cut">No transcript here: {esc(view.problem)}. <code>{esc(show)}</code></p>'
    items = "".join(_entry_html(entry) for entry in view.entries)
    tail = ""
    if view.omitted:
        noun = "event" if view.omitted == 1 else "events"
        tail = (
            f'<p class="cut">[{view.omitted} more {noun} not shown: this run\'s share of the page is used '
            f"up; the whole transcript: <code>{esc(show)}</code>]</p>"
        )
    return f'<ol class="events">{items}</ol>{tail}'
