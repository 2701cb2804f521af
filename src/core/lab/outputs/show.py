"""``alisio eval show``: which run to show, and the run as a readable transcript.

``pick_run`` chooses: the run of ``--task`` and ``--rep``; without ``--rep`` the task's first run that did not
pass, else its first; without ``--task`` the first run of the report that did not pass, else the first; "first"
in task and repetition order, as report.md lists them (not the order the runs finished in).
``render_run`` lays out what happened in order: the prompt, then per turn the assistant's text, each tool
call with its arguments and its result (an ``edit_file`` as a unified diff of what it replaced, numbered by the
file's lines, from the line its result reports), approvals,
incidents, compactions and budget stops, how the run ended, then each verifier with its status and detail.
Pure text from the record and the events; the shell reads the files and prints.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence

from returns.result import Failure, Result, Success

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
from alisio.core.harness.faults import hits_text
from alisio.core.lab.outputs.formats import format_usage, verifier_kind_text
from alisio.core.lab.outputs.progress import why_not_passed
from alisio.core.lab.reports.naming import run_naming
from alisio.core.lab.reports.report import Conditions
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.text import plural

__all__ = [
    "edit_diff",
    "edit_lines",
    "edited_line",
    "naming_lines",
    "pick_run",
    "render_run",
    "transcript_lines",
]

_RESULT_LINES = 40
"""A tool result longer than this many lines shows its head and tail (``--json`` has every character)."""


def pick_run(records: Sequence[RunRecord], task: str | None, rep: int | None) -> Result[RunRecord, str]:
    """The run to show, or why there is none (naming the tasks or repetitions there are)."""
    if not records:
        return Failure("the report holds no run")
    chosen = [r for r in records if task is None or r.task_id == task]
    if not chosen:
        tasks = ", ".join(sorted({r.task_id for r in records}))
        return Failure(f"no task {task!r} in this report (tasks: {tasks})")
    if rep is not None:
        exact = [r for r in chosen if r.repetition == rep]
        if not exact:
            reps = ", ".join(str(r.repetition) for r in sorted(chosen, key=lambda r: r.repetition))
            return Failure(f"task {chosen[0].task_id} has no rep {rep} (reps: {reps})")
        return Success(exact[0])
    ordered = sorted(chosen, key=lambda r: (r.task_id, r.repetition))  # report.md's order, not run order
    failing = [r for r in ordered if r.status is not RunStatus.PASS]
    return Success(failing[0] if failing else ordered[0])


def _indented(text: str, prefix: str = "    ") -> list[str]:
    lines = text.splitlines() or [""]
    if len(lines) > _RESULT_LINES:
        head, tail = lines[: _RESULT_LINES // 2], lines[-_RESULT_LINES // 2 :]
        lines = [
            *head,
            f"[... {len(lines) - len(head) - len(tail)} lines not shown: --json has them ...]",
            *tail,
        ]
    return [prefix + line for line in lines]


_EDITED_AT = re.compile(r"replaced 1 occurrence at line (\d+)")
_HUNK = re.compile(r"@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def edited_line(output: str) -> int | None:
    """The file line a successful ``edit_file`` result says it replaced at (``replaced 1 occurrence at line
    12``), or ``None``."""
    found = _EDITED_AT.search(output)
    return int(found.group(1)) if found else None


def edit_lines(events: Sequence[Event]) -> dict[str, int]:
    """The file line each successful ``edit_file`` call replaced at, by call id (from its result's text)."""
    lines = {}
    for event in events:
        if isinstance(event, ToolResulted) and event.ok and event.name == "edit_file":
            line = edited_line(event.output_excerpt)
            if line is not None:
                lines[event.call_id] = line
    return lines


def _at_line(header: str, line: int) -> str:
    """A hunk header moved from line 1 of ``old_string`` to line ``line`` of the file."""

    def moved(m: re.Match[str]) -> str:
        # an empty side starts at 0 ("before line 1"): moved, it is "after line - 1", as diff writes it
        old, new = int(m.group(1)) + line - 1, int(m.group(3)) + line - 1
        return f"@@ -{old}{m.group(2) or ''} +{new}{m.group(4) or ''} @@"

    return _HUNK.sub(moved, header, count=1)


def edit_diff(arguments: Mapping[str, object], line: int | None) -> list[str] | None:
    """The unified diff of an ``edit_file`` call (its ``old_string`` to its ``new_string``), its hunks
    numbered from the file's line ``line`` when known (else from 1 of ``old_string``); ``None`` when the
    arguments hold no such strings."""
    old, new = arguments.get("old_string"), arguments.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    path = str(arguments.get("path", "file"))
    diff = list(
        difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{path}", f"b/{path}", lineterm="")
    )
    if line is not None:
        diff = [_at_line(d, line) if d.startswith("@@") else d for d in diff]
    return diff


def _arguments(event: ToolCalled, line: int | None = None) -> tuple[dict[str, object] | None, list[str]]:
    """The call's arguments as a dict (``None`` when they are not a JSON object) and their display lines;
    ``line`` is where an edit replaced (unknown: numbered from 1 of ``old_string``)."""
    try:
        parsed = json.loads(event.arguments)
    except ValueError:
        return None, _indented(event.arguments)
    if not isinstance(parsed, dict):
        return None, _indented(event.arguments)
    diff = edit_diff(parsed, line) if event.name == "edit_file" else None
    if diff is not None:
        return parsed, _indented("\n".join(diff))
    if event.name == "write_file" and isinstance(parsed.get("content"), str):
        content = str(parsed["content"])
        head = f"{parsed.get('path')} ({len(content.splitlines())} lines):"
        return parsed, ["    " + head, *_indented(content, "    | ")]
    shown = {key: value for key, value in parsed.items()}
    return parsed, _indented(json.dumps(shown, ensure_ascii=False, indent=2))


def _event_lines(event: Event, edits: dict[str, int]) -> list[str]:
    match event:
        case RunStarted(prompt=prompt, model=model, provider=provider, policy_mode=mode, agent=agent):
            who = f"agent {agent} via " if mode == "external" else ""
            return [f"run start: {who}{provider} {model}, policy {mode}", "prompt:", *_indented(prompt), ""]
        case ProviderRequested(turn=turn, purpose="main"):
            return [f"--- turn {turn} ---"]
        case ProviderRequested(purpose="compaction"):
            return ["--- compaction call ---"]
        case ProviderResponded(text=text, finish_reason=finish, usage=usage, duration_ms=ms):
            lines = [f"assistant ({finish}, {format_usage(usage)}, {ms / 1000:.1f} s):"]
            return lines + (_indented(text) if text else ["    (no text)"])
        case ToolCalled(name=name, call_id=call_id):
            return [f"> {name}", *_arguments(event, edits.get(call_id))[1]]
        case ToolResulted(ok=ok, output_excerpt=output, duration_ms=ms):
            return [f"< {'ok' if ok else 'error'} ({ms} ms)", *_indented(output)]
        case ApprovalDecided(name=name, effect=effect, granted=granted, by=by):
            return [f"approval: {name} ({effect}) {'granted' if granted else 'denied'} by {by}"]
        case IncidentRaised(kind=kind, message=message):
            return [f"! incident {kind}: {message}"]
        case Compacted(chars_before=before, chars_after=after, messages_replaced=replaced):
            return [f"! compaction: {plural(replaced, 'message')} replaced, {before} -> {after} characters"]
        case BudgetStopped(budget=budget, limit=limit, value=value):
            return [f"! budget {budget} exceeded (limit {limit}, reached {value})"]
        case AgentExited(agent=agent, exit_code=code, killed=killed, stdout=out, stderr=err):
            how = f"killed ({killed})" if killed else f"exit code {code}"
            lines = [f"agent {agent}: {how}"]
            lines += ["stdout:", *_indented(out)] if out else ["stdout: (empty)"]
            return lines + (["stderr:", *_indented(err)] if err else ["stderr: (empty)"])
        case RunEnded(outcome=outcome, reason=reason, turns=turns):
            why = f" ({reason})" if reason else ""
            return ["", f"run end: {outcome}{why} after {plural(turns, 'turn')}"]
    return []


def transcript_lines(events: Sequence[Event]) -> list[str]:
    """The events laid out in order (the body of ``render_run``; ``alisio run``'s transcripts too)."""
    edits = edit_lines(events)
    return [line for event in events for line in _event_lines(event, edits)]


def naming_lines(conditions: Conditions) -> str:
    """``Agent: codex: codex-cli 0.171.0 (codex, settings ...)``: what names the run (``alisio.core.lab.reports.naming``),
    one line each, over the run ``render_run`` shows."""
    return "".join(f"{n.name}: {n.value}\n" for n in run_naming(conditions) if n.present)


def render_run(record: RunRecord, events: Sequence[Event] | None) -> str:
    """The run as text: a header, the transcript (when it was kept), then the verifiers."""
    m = record.measured
    variant = f" [{record.variant}]" if record.variant else ""
    why = f" ({record.reason})" if record.reason else ""
    lines = [
        f"{record.task_id} rep {record.repetition}{variant}: {record.status}{why}, {plural(m.turns, 'turn')}, "
        f"{plural(m.tool_calls, 'tool call')}, {m.wall_ms / 1000:.1f} s",
    ]
    failing = why_not_passed(record)
    if failing:
        lines.append(f"why: {failing}")
    if record.faults is not None:
        faulted = f"{len(record.faults.hits)} of {plural(record.faults.calls, 'model call')}"
        lines.append(f"faults: {faulted} faulted ({hits_text(record.faults.hits)})")
    if record.context_used is not None:
        lines.append(
            "context: used (a tool call named one of its files)"
            if record.context_used
            else "context: not used (no tool call named one of its files)"
        )
    lines.append("")
    if events is None:
        lines += ["(no transcript was kept for this run: it was written by an older alisio)", ""]
    else:
        lines += transcript_lines(events)
    lines += ["", "verifiers:"]
    for verifier in record.verifiers:
        lines.append(f"  {verifier.status:5} {verifier.id} ({verifier_kind_text(verifier)})")
        if verifier.detail:
            lines += _indented(verifier.detail, "        ")
    if not record.verifiers:
        lines.append("  (none ran)")
    for error in record.errors:
        lines.append(f"error: {error}")
    return "\n".join(lines) + "\n"
