"""Pure judges: one verifier and the facts the shell gathered for it in, one ``VerifierResult`` out.

The shell (``alisio.shell.lab.verifiers``) runs commands, reads files and snapshots trees; every decision is made
here, from data. Each judge returns ``pass``, ``fail`` or ``error`` (spec, "Verifiers"):

- ``error`` means the verifier could not run: a command that did not start, a path that resolves outside the
  workspace, a file that cannot be read, an event log without ``run_start`` or ``run_end``. It is neither a
  pass nor a fail.
- A pass needs positive evidence (style rule 18): a command pass needs a started process, an exit code equal
  to ``expectExit`` and, when asked, the text on stdout; a tool-sequence pass needs a complete event log.
- A command that exceeds its timeout is a *fail*, not an error: it is the task's own check running code the
  agent wrote (a hung check is the agent's doing).
- ``detail`` is short and names the evidence: the exit code and the last lines of output, the first rule that
  failed and its offending call (seq and an excerpt of its arguments), the paths changed outside ``allowed``.

Tool-sequence rules count *calls* (``tool_call`` events), whatever happened to them afterwards: a call the
policy refused or that failed still counts for ``before``, ``never`` and ``max-calls``. ``no-repeat-failure``
compares arguments canonically: the raw JSON text is decoded and re-encoded with sorted keys and no
whitespace, so ``{"path": "a"}`` and ``{"path":"a"}`` are the same call (key order and spacing are how the
model serialised it, not what it asked for); arguments that are not valid JSON are compared byte for byte.

Tree diffs ignore ``.git``, ``node_modules`` and ``__pycache__`` anywhere in a path: the spec names the first
two; ``__pycache__`` plays ``node_modules``' role for the Python fixtures (running ``python3 check.py`` writes
bytecode the agent never asked for).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Final, Literal

import msgspec

from alisio.core.base import Frozen
from alisio.core.harness.events import Event, RunEnded, RunStarted, ToolCalled, ToolResulted
from alisio.core.harness.tooldefs import arguments_text
from alisio.core.lab.runs.records import VerifierResult, VerifierStatus
from alisio.core.lab.suites.suite import (
    ANY_TOOL,
    BeforeRule,
    CalledRule,
    CommandVerifier,
    FileAbsentVerifier,
    FileContainsVerifier,
    FileEqualsVerifier,
    MaxCallsRule,
    NeverRule,
    NoRepeatFailureRule,
    NotCalledRule,
    Rule,
    ToolSequenceVerifier,
    TreeDiffWithinVerifier,
)
from alisio.core.lab.suites.suite_paths import normalize
from alisio.core.text import plural

__all__ = [
    "IGNORED_DIRS",
    "AgentTools",
    "CommandFacts",
    "FileFacts",
    "FileFound",
    "FileMissing",
    "FileUnusable",
    "NotAFile",
    "TreeEntry",
    "TreeSnapshot",
    "canonical_arguments",
    "changed_paths",
    "is_ignored",
    "judge_command",
    "judge_file",
    "judge_tool_sequence",
    "judge_tree_diff",
    "tree_snapshot",
]

IGNORED_DIRS: Final = frozenset({".git", "node_modules", "__pycache__"})
"""Directory names a tree diff never looks into, at any depth."""
_EXCERPT_CHARS: Final = 120
_TAIL_LINES: Final = 5
_TAIL_CHARS: Final = 300
_LISTED_PATHS: Final = 5


def _result(verifier_id: str, kind: str, status: VerifierStatus, detail: str) -> VerifierResult:
    return VerifierResult(id=verifier_id, kind=kind, status=status, detail=detail)


def _excerpt(text: str, limit: int = _EXCERPT_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = text.replace("\r", "\\r").replace("\n", "\\n")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --- command ---------------------------------------------------------------------------------------------


class CommandFacts(Frozen, frozen=True, kw_only=True):
    """What running a command verifier's argv produced (gathered by ``alisio.shell.lab.verifiers``)."""

    started: bool
    """False when the process could not be started (executable not found, permission denied, bad cwd)."""
    exit_code: int | None = None
    """The exit status; negative ``-N`` when killed by signal N; None when it did not start or was killed
    by us (timeout, output limit)."""
    stdout: str = ""
    """Everything the command wrote to stdout (decoded as UTF-8 with replacement), up to the output limit."""
    stderr_excerpt: str = ""
    """The last part of stderr."""
    timed_out: bool = False
    output_limit_exceeded: bool = False
    """The command wrote more than the shell's output limit and was killed (a runaway check)."""
    duration_ms: int = 0
    start_error: str = ""
    """Why it did not start, when ``started`` is False."""


def _tail(text: str) -> str:
    """The last few non-empty lines of ``text``, on one line, bounded."""
    lines = [line for line in text.splitlines() if line.strip()][-_TAIL_LINES:]
    joined = " | ".join(line.strip() for line in lines)
    return joined if len(joined) <= _TAIL_CHARS else "…" + joined[-(_TAIL_CHARS - 1) :]


def _output_detail(facts: CommandFacts) -> str:
    parts = []
    if facts.stdout.strip():
        parts.append(f"stdout: {_tail(facts.stdout)}")
    if facts.stderr_excerpt.strip():
        parts.append(f"stderr: {_tail(facts.stderr_excerpt)}")
    return "; ".join(parts) if parts else "no output"


def judge_command(verifier: CommandVerifier, facts: CommandFacts) -> VerifierResult:
    """Judge a command verifier.

    Returns:
        error when it did not start; fail when it timed out, exceeded the output limit, exited with another
        code than ``expectExit`` or did not print ``expectStdoutIncludes``; pass otherwise (which requires
        a started process and an exit code).
    """

    def verdict(status: VerifierStatus, detail: str) -> VerifierResult:
        return _result(verifier.id, "command", status, detail)

    if not facts.started:
        return verdict(VerifierStatus.ERROR, f"did not start: {facts.start_error or 'unknown cause'}")
    if facts.timed_out:
        return verdict(
            VerifierStatus.FAIL,
            f"timed out after {verifier.timeout_ms} ms and was killed; {_output_detail(facts)}",
        )
    if facts.output_limit_exceeded:
        return verdict(VerifierStatus.FAIL, "killed: its output exceeded the limit")
    if facts.exit_code is None:  # started, not killed by us, no status: no evidence either way
        return verdict(VerifierStatus.ERROR, "no exit status was recorded")
    code = facts.exit_code
    shown = f"exit {code}" + (f" (signal {-code})" if code < 0 else "")
    if code != verifier.expect_exit:
        return verdict(
            VerifierStatus.FAIL, f"{shown} (expected {verifier.expect_exit}); {_output_detail(facts)}"
        )
    needle = verifier.expect_stdout_includes
    if needle is not None and needle not in facts.stdout:
        return verdict(
            VerifierStatus.FAIL,
            f"{shown}, but stdout does not include {_excerpt(needle)!r}; {_output_detail(facts)}",
        )
    return verdict(VerifierStatus.PASS, shown + (f", stdout includes {_excerpt(needle)!r}" if needle else ""))


# --- files -----------------------------------------------------------------------------------------------


class FileFound(Frozen, frozen=True, kw_only=True, tag="found"):
    """A regular file (possibly reached through a symlink inside the workspace) and its bytes."""

    data: bytes


class FileMissing(Frozen, frozen=True, kw_only=True, tag="missing"):
    """Nothing exists at the path (not even a dangling link)."""


class NotAFile(Frozen, frozen=True, kw_only=True, tag="not_a_file"):
    """Something that is not a regular file exists at the path."""

    what: str
    """What it is, for the detail: "a directory", "a dangling symlink", "a special file"."""


class FileUnusable(Frozen, frozen=True, kw_only=True, tag="unusable"):
    """The path cannot be judged: it resolves outside the workspace, or reading it failed."""

    reason: str


FileFacts = FileFound | FileMissing | NotAFile | FileUnusable
"""What the shell found at a file verifier's path."""

FileVerifier = FileEqualsVerifier | FileContainsVerifier | FileAbsentVerifier
_FILE_KINDS: Final[Mapping[type[FileVerifier], str]] = {
    FileEqualsVerifier: "file-equals",
    FileContainsVerifier: "file-contains",
    FileAbsentVerifier: "file-absent",
}


def judge_file(verifier: FileVerifier, facts: FileFacts) -> VerifierResult:
    """Judge file-equals, file-contains or file-absent.

    file-equals and file-contains fail when the file is missing or is not a regular file; file-absent
    passes only when nothing exists at the path (a directory or a dangling link there is a fail). A path
    that cannot be judged (outside the workspace, unreadable) is an error for every kind.

    file-contains compares bytes: ``text`` encoded as UTF-8 is searched in the file's bytes. For a UTF-8 file
    that is the same as a search in its text (UTF-8 is self-synchronising), and it also works for a file
    that does not decode.
    """
    kind = _FILE_KINDS[type(verifier)]
    path = verifier.path

    def verdict(status: VerifierStatus, detail: str) -> VerifierResult:
        return _result(verifier.id, kind, status, detail)

    match facts:
        case FileUnusable(reason=reason):
            return verdict(VerifierStatus.ERROR, f"{path}: {reason}")
        case FileMissing():
            if isinstance(verifier, FileAbsentVerifier):
                return verdict(VerifierStatus.PASS, f"{path} does not exist")
            return verdict(VerifierStatus.FAIL, f"{path} does not exist")
        case NotAFile(what=what):
            return verdict(VerifierStatus.FAIL, f"{path} is {what}, not a file")
        case FileFound(data=data):
            return _judge_found(verifier, data, verdict)


def _judge_found(
    verifier: FileVerifier, data: bytes, verdict: Callable[[VerifierStatus, str], VerifierResult]
) -> VerifierResult:
    path = verifier.path
    match verifier:
        case FileAbsentVerifier():
            return verdict(VerifierStatus.FAIL, f"{path} exists ({len(data)} bytes)")
        case FileEqualsVerifier(sha256=expected):
            actual = hashlib.sha256(data).hexdigest()
            if actual == expected:
                return verdict(VerifierStatus.PASS, f"{path} has sha256 {expected[:12]}…")
            return verdict(
                VerifierStatus.FAIL, f"{path} has sha256 {actual[:12]}… (expected {expected[:12]}…)"
            )
        case FileContainsVerifier(text=text):
            if text.encode("utf-8") in data:
                return verdict(VerifierStatus.PASS, f"{path} contains {_excerpt(text)!r}")
            return verdict(VerifierStatus.FAIL, f"{path} does not contain {_excerpt(text)!r}")


# --- tree diff -------------------------------------------------------------------------------------------


class TreeEntry(Frozen, frozen=True, kw_only=True):
    """One entry of a tree snapshot."""

    path: str
    """Relative to the workspace root, POSIX form."""
    kind: Literal["file", "symlink", "special"]
    """A regular file, a symlink (never followed), or anything else (fifo, socket, device)."""
    digest: str = ""
    """The sha256 (hex) of a file's bytes, the target text of a symlink, empty for a special file."""


class TreeSnapshot(Frozen, frozen=True, kw_only=True):
    """The files of a workspace at one moment, sorted by path (see ``tree_snapshot``)."""

    entries: tuple[TreeEntry, ...] = ()

    def as_mapping(self) -> Mapping[str, tuple[str, str]]:
        """Path -> (kind, digest)."""
        return {entry.path: (entry.kind, entry.digest) for entry in self.entries}


def tree_snapshot(entries: Iterable[TreeEntry]) -> TreeSnapshot:
    """A snapshot of ``entries``, sorted by path, without those under an ignored directory."""
    return TreeSnapshot(
        entries=tuple(sorted((e for e in entries if not is_ignored(e.path)), key=lambda e: e.path))
    )


def is_ignored(path: str) -> bool:
    """Whether ``path`` lies under ``.git``, ``node_modules`` or ``__pycache__`` (at any depth)."""
    return any(segment in IGNORED_DIRS for segment in path.split("/"))


Change = tuple[Literal["added", "deleted", "changed"], str]


def changed_paths(before: TreeSnapshot, after: TreeSnapshot) -> tuple[Change, ...]:
    """Every added, deleted or changed (content, link target or kind) path, sorted, ignored dirs left out.

    Permission bits and timestamps are not compared: ``chmod +x`` alone is not a change.
    """
    old, new = before.as_mapping(), after.as_mapping()
    changes: list[Change] = []
    for path in sorted(old.keys() | new.keys()):
        if is_ignored(path) or old.get(path) == new.get(path):
            continue
        changes.append(("added" if path not in old else "deleted" if path not in new else "changed", path))
    return tuple(changes)


def _allows(allowed: tuple[str, ...], path: str) -> bool:
    """``dir/`` (trailing slash) allows everything below ``dir``; any other entry allows that exact path."""
    for entry in allowed:
        name = normalize(entry)
        if entry.endswith("/"):
            if name == "" or path.startswith(name + "/"):
                return True
        elif path == name:
            return True
    return False


def judge_tree_diff(
    verifier: TreeDiffWithinVerifier, before: TreeSnapshot, after: TreeSnapshot
) -> VerifierResult:
    """Judge tree-diff-within: pass when every change between the snapshots is in ``allowed``.

    Returns:
        pass (detail: how many changes, all allowed), or fail listing the first few changes outside
        ``allowed`` and how many there are.
    """
    changes = changed_paths(before, after)
    outside = [(how, path) for how, path in changes if not _allows(verifier.allowed, path)]
    if not outside:
        detail = f"{len(changes)} changed path(s), all allowed" if changes else "no changes"
        return _result(verifier.id, "tree-diff-within", VerifierStatus.PASS, detail)
    listed = ", ".join(f"{how} {path}" for how, path in outside[:_LISTED_PATHS])
    more = f" (and {len(outside) - _LISTED_PATHS} more)" if len(outside) > _LISTED_PATHS else ""
    detail = f"{len(outside)} change(s) outside allowed: {listed}{more}"
    return _result(verifier.id, "tree-diff-within", VerifierStatus.FAIL, detail)


# --- tool sequence ---------------------------------------------------------------------------------------

_canonical_encoder = msgspec.json.Encoder(order="deterministic")
_any_decoder = msgspec.json.Decoder()


def canonical_arguments(raw: str) -> bytes:
    """The arguments as canonical JSON (sorted keys, no whitespace); the raw bytes when they do not parse."""
    try:
        return b"json:" + _canonical_encoder.encode(_any_decoder.decode(raw))
    except (msgspec.DecodeError, RecursionError, OverflowError):
        return b"raw:" + raw.encode("utf-8", "surrogatepass")


class _Call(Frozen, frozen=True, kw_only=True):
    seq: int
    name: str
    arguments: str
    failed: bool
    """The call's ``tool_result`` said ok=false (a call without a result is not known to have failed)."""


def _calls(events: tuple[Event, ...]) -> tuple[_Call, ...]:
    """Tool calls in order, each paired with its result.

    A result belongs to the *latest* unanswered call with the same id and tool name: providers may reuse
    call ids across turns, and a call left unanswered (the run stopped mid-turn) must not absorb the result
    of a later call that reused its id.
    """
    pending: dict[tuple[str, str], list[int]] = {}
    calls: list[ToolCalled] = []
    failed: set[int] = set()
    for event in events:
        if isinstance(event, ToolCalled):
            pending.setdefault((event.call_id, event.name), []).append(len(calls))
            calls.append(event)
        elif isinstance(event, ToolResulted) and pending.get((event.call_id, event.name)):
            index = pending[(event.call_id, event.name)].pop()
            if not event.ok:
                failed.add(index)
    return tuple(
        _Call(seq=c.seq, name=c.name, arguments=c.arguments, failed=i in failed) for i, c in enumerate(calls)
    )


def _describe(rule: Rule) -> str:
    match rule:
        case CalledRule(tool=tool, args_include=text) | NotCalledRule(tool=tool, args_include=text):
            name = "called" if isinstance(rule, CalledRule) else "not-called"
            shown = "" if text is None else f", {_excerpt(repr(text), 80)}"
            return f"{name}({tool}{shown})"
        case BeforeRule(first=first, then=then):
            return f"before({first}, {then})"
        case NeverRule(tool=tool):
            return f"never({tool})"
        case MaxCallsRule(tool=tool, max=most):
            return f"max-calls({tool}, {most})"
        case NoRepeatFailureRule(tool=tool):
            return f"no-repeat-failure({tool})"


def _call_text(call: _Call) -> str:
    return f"{call.name} call at seq {call.seq} with {_excerpt(call.arguments)}"


def _matching(tool: str, text: str | None, calls: tuple[_Call, ...]) -> list[_Call]:
    """The calls of ``tool`` (``*``: every call) whose arguments hold ``text`` (``None``: any arguments)."""
    return [
        call
        for call in calls
        if (tool == ANY_TOOL or call.name == tool)
        and (text is None or text in arguments_text(call.arguments))
    ]


def _rule_violation(rule: Rule, calls: tuple[_Call, ...]) -> str | None:
    """Why ``rule`` does not hold over ``calls`` (naming the offending call), or None when it holds."""
    match rule:
        case CalledRule(tool=tool, args_include=text):
            if _matching(tool, text, calls):
                return None
            what = "no call" if tool == ANY_TOOL else f"no {tool} call"
            named = "" if text is None else f" whose arguments hold {_excerpt(repr(text), 80)}"
            return f"{what}{named} among {plural(len(calls), 'tool call')}"
        case NotCalledRule(tool=tool, args_include=text):
            found = _matching(tool, text, calls)
            return f"{_call_text(found[0])} ({len(found)} such call(s) in all)" if found else None
        case BeforeRule(first=first, then=then):
            for call in calls:
                if call.name == first:
                    return None
                if call.name == then:
                    return f"{_call_text(call)} has no earlier {first} call"
            return None
        case NeverRule(tool=tool):
            called = [call for call in calls if call.name == tool]
            return f"{_call_text(called[0])} ({len(called)} call(s) in all)" if called else None
        case MaxCallsRule(tool=tool, max=most):
            called = [call for call in calls if call.name == tool]
            if len(called) <= most:
                return None
            return (
                f"{plural(len(called), 'call')}; the first over the limit is the {_call_text(called[most])}"
            )
        case NoRepeatFailureRule(tool=tool):
            failed_at: dict[bytes, int] = {}
            for call in calls:
                if call.name != tool:
                    continue
                key = canonical_arguments(call.arguments)
                if key in failed_at:
                    return f"{_call_text(call)} repeats the failed call at seq {failed_at[key]}"
                if call.failed:
                    failed_at[key] = call.seq
            return None


def _constrained(rule: Rule, calls: tuple[_Call, ...]) -> int:
    """How many calls ``rule`` constrains: a rule that constrains none held vacuously.

    before: the ``then`` calls; max-calls and no-repeat-failure: the tool's calls; never: every call (a run
    with no tool call at all proves nothing about a tool it never had the chance to call).
    """
    match rule:
        case BeforeRule(then=tool) | MaxCallsRule(tool=tool) | NoRepeatFailureRule(tool=tool):
            return sum(1 for call in calls if call.name == tool)
        case NeverRule() | CalledRule():
            return len(calls)
        case NotCalledRule(tool=tool):
            return len(calls) if tool == ANY_TOOL else sum(1 for call in calls if call.name == tool)


def _held_detail(rules: tuple[Rule, ...], calls: tuple[_Call, ...]) -> tuple[str, int]:
    """The pass detail, naming each rule that held over 0 calls as vacuous, and how many did."""
    vacuous = [_describe(rule) for rule in rules if _constrained(rule, calls) == 0]
    detail = f"{len(rules)} rule(s) hold over {len(calls)} tool call(s)"
    if vacuous:
        detail += f"; vacuous (held over 0 calls): {', '.join(vacuous)}"
    return detail, len(vacuous)


class AgentTools(Frozen, frozen=True, kw_only=True):
    """What an external agent's tool calls can say: which lab tools it has (its tool names mapped), and that
    its tool results are not seen (the proxy sees only what the model asked for)."""

    agent: str
    tools: frozenset[str]


def _rule_tools(rule: Rule) -> tuple[str, ...]:
    match rule:
        case BeforeRule(first=first, then=then):
            return (first, then)
        case NeverRule(tool=tool) | MaxCallsRule(tool=tool) | NoRepeatFailureRule(tool=tool):
            return (tool,)
        case CalledRule(tool=tool) | NotCalledRule(tool=tool):
            return () if tool == ANY_TOOL else (tool,)


def _inapplicable(rule: Rule, agent: AgentTools) -> str | None:
    """Why ``rule`` cannot judge ``agent``'s run (a tool it lacks; a rule over tool results), or ``None``."""
    if isinstance(rule, NoRepeatFailureRule):
        return f"{_describe(rule)}: cannot apply to agent {agent.agent}: the results of its tool calls are not seen"
    lacking = [tool for tool in _rule_tools(rule) if tool not in agent.tools]
    if not lacking:
        return None
    has = ", ".join(sorted(agent.tools)) or "none"
    return f"{_describe(rule)}: agent {agent.agent} has no {lacking[0]} tool (its tools map to: {has})"


def judge_tool_sequence(
    verifier: ToolSequenceVerifier, events: tuple[Event, ...], agent: AgentTools | None = None
) -> VerifierResult:
    """Judge a tool-sequence verifier over the run's event log.

    Rules (tool names, not files; every ``tool_call`` counts, whatever its result):
        before: every ``then`` call has an earlier ``first`` call (no ``then`` call passes);
        never: no call of the tool; max-calls: at most ``max`` calls;
        no-repeat-failure: no call has the same tool and canonical arguments as an earlier call whose
        result was ok=false (the repeat counts whatever its own result).

    Args:
        agent: an external agent's tools (``None``: the built-in agent, which has every tool): a rule over a
            tool it lacks, or a no-repeat-failure rule, is an error naming why, never a silent pass.

    Returns:
        error when the log has no ``run_start`` or no ``run_end`` (the evidence is incomplete), or a rule
        cannot apply to the agent; fail naming the first rule (in suite order) that does not hold and its
        offending call; pass when all hold, its detail naming the rules that held over 0 calls ("vacuous"),
        counted in ``vacuous_rules``.
    """

    def verdict(status: VerifierStatus, detail: str) -> VerifierResult:
        return _result(verifier.id, "tool-sequence", status, detail)

    missing = [
        name
        for name, kind in (("run_start", RunStarted), ("run_end", RunEnded))
        if not any(isinstance(event, kind) for event in events)
    ]
    if missing:
        return verdict(VerifierStatus.ERROR, f"missing events: no {' and no '.join(missing)} in the log")
    if agent is not None:
        problems = [why for rule in verifier.rules if (why := _inapplicable(rule, agent)) is not None]
        if problems:
            return verdict(VerifierStatus.ERROR, problems[0])
    calls = _calls(events)
    for rule in verifier.rules:
        why = _rule_violation(rule, calls)
        if why is not None:
            return verdict(VerifierStatus.FAIL, f"{_describe(rule)}: {why}")
    detail, vacuous = _held_detail(verifier.rules, calls)
    return msgspec.structs.replace(verdict(VerifierStatus.PASS, detail), vacuous_rules=vacuous)
