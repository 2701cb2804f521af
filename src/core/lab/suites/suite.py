"""The suite.json model (schema version 1), its parser and its validation.

A suite is a directory with a suite.json and one fixture directory per task (the spec, "Writing a suite").
This module is the only gate between that human-written file and the lab:

- ``parse_suite(bytes, source, facts)`` returns ``Success(Suite)`` or ``Failure(SuiteError)`` and never
  raises, whatever the bytes. The error reports *every* violation it can find, one per line, each as
  ``task <id>: <field path>: <what>`` (``tasks[3].id: ...`` when the task id is unusable or is the
  problem), or ``<field path>: <what>`` for suite-level fields (written by
  ``alisio.core.lab.suites.suite_messages``). ``violations(error)`` lists them.
- Shape first (keys repeated in one object, unknown fields, missing fields, wrong types, constraints; see
  ``alisio.core.shape``), then the rules types cannot state: unique task and verifier ids, paths that stay
  inside the suite or the task directory (lexically, and through the symlinks in ``PathFacts``), a fixture
  that exists and holds only UTF-8 names, regular expressions that RE2 compiles
  (``alisio.core.share.linear_regex``: a pattern that needs backtracking could hang ``eval record``, so it
  is refused here), a ``before`` rule over two different tools.
- Wire names are camelCase (``maxTurns``, ``timeoutMs``, ``fixtureGit``, ``replayNormalize``); unknown
  fields are errors so a typo fails; defaults are omitted on encode, so adding a defaulted field later
  leaves ``suite_content_hash`` of existing suites unchanged.
- Constructing a ``Suite`` in Python skips the semantic rules: only ``parse_suite`` validates.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

import msgspec
from msgspec import Meta
from returns.result import Failure, Result, Success, safe

from alisio.core.base import Frozen
from alisio.core.errors import SuiteError
from alisio.core.harness.budget import RunBudget
from alisio.core.lab.runs.records import ID_PATTERN
from alisio.core.lab.suites.protected import protected_problems
from alisio.core.lab.suites.suite_messages import format_problems
from alisio.core.lab.suites.suite_paths import (
    PathFacts,
    entry_problem,
    escaping_links,
    is_within,
    join,
    lexical_problem,
    normalize,
    resolve,
    unusable_entries,
)
from alisio.core.lab.suites.suite_sandbox import TaskSandbox, sandbox_problems
from alisio.core.shape import (
    FieldPath,
    Noun,
    Problem,
    did_you_mean,
    duplicate_keys,
    json_repr,
    parse_msgspec_path,
    shape_problems,
    words,
)
from alisio.core.share.linear_regex import LinearPattern, compile_linear
from alisio.core.text import byte_to_line_column

__all__ = [
    "ANY_TOOL",
    "MAX_SAFE_INT",
    "MAX_WALL_MS",
    "TOOL_NAMES",
    "BeforeRule",
    "Budget",
    "CalledRule",
    "CommandVerifier",
    "Effect",
    "FileAbsentVerifier",
    "FileContainsVerifier",
    "FileEqualsVerifier",
    "MaxCallsRule",
    "NeverRule",
    "NoRepeatFailureRule",
    "NormalizeRule",
    "NotCalledRule",
    "PathFacts",
    "Rule",
    "RuleTool",
    "Suite",
    "Task",
    "TaskPolicy",
    "TaskPolicyMode",
    "ToolName",
    "ToolSequenceVerifier",
    "TreeDiffWithinVerifier",
    "Verifier",
    "encode_suite",
    "parse_suite",
    "suite_content_hash",
    "violations",
]

# --- Constrained scalars -------------------------------------------------------------------------------

MAX_SAFE_INT = 2**53 - 1
"""The largest integer JSON tools agree on (JavaScript's Number.MAX_SAFE_INTEGER): a budget above it is
a typo, and an unbounded one would reach the shell as an out-of-range timeout or counter."""
MAX_WALL_MS = 2**31 - 1
"""About 24.8 days: the largest timer delay of the original (Node) implementation and well inside every
timeout the shell hands to the OS (a larger value overflows ``poll``/``select`` and would crash a run)."""
PositiveInt = Annotated[int, Meta(ge=1, le=MAX_SAFE_INT)]
WallMs = Annotated[int, Meta(ge=1, le=MAX_WALL_MS)]
Count = Annotated[int, Meta(ge=0, le=MAX_SAFE_INT)]
TimeoutMs = Annotated[int, Meta(ge=1, le=600_000)]
NonEmpty = Annotated[str, Meta(min_length=1)]
Id = Annotated[str, Meta(pattern=ID_PATTERN)]
AgentName = Annotated[str, Meta(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}\Z")]
Sha256 = Annotated[str, Meta(pattern=r"^[0-9a-f]{64}\Z")]
SemVer = Annotated[
    str,
    Meta(
        pattern=r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
        r"(-(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*)?"
        r"(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\Z"
    ),
]
SchemaVersion = Literal[1]

ToolName = Literal[
    "read_file", "list_dir", "search", "write_file", "edit_file", "bash", "fetch_url", "analyze"
]
"""The harness tools, by the names tool-sequence rules use (a user-facing contract)."""
TOOL_NAMES: tuple[str, ...] = get_args(ToolName)
RuleTool = Annotated[
    str, Meta(pattern=rf"^(?:{'|'.join(TOOL_NAMES)}|mcp__[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*__[A-Za-z0-9_-]+)$")
]
"""A tool a tool-sequence rule names: a harness tool, or an MCP server's tool as offered
(``mcp__<server>__<tool>``, ``alisio.core.harness.mcp``)."""
Effect = Literal["write", "process", "external", "analysis"]
"""The effects ``policy.allow`` can add (read is always granted)."""
TaskPolicyMode = Literal["ask", "auto", "full"]


class _SuiteStruct(Frozen, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """Human-written suite input: a typo is an error; defaults stay off the wire (stable hashes)."""


# --- Budget and policy ---------------------------------------------------------------------------------


class Budget(RunBudget, _SuiteStruct, frozen=True, kw_only=True):
    """Per-run limits, the harness's ``RunBudget`` within suite.json's bounds; one passed ends ``budget_exceeded``."""

    max_turns: PositiveInt
    max_wall_ms: WallMs
    max_tokens: PositiveInt | None = None
    """Enforced only when the provider reports usage."""
    max_tool_calls: PositiveInt | None = None


class TaskPolicy(_SuiteStruct, frozen=True, kw_only=True):
    """What the task asks to be allowed; a suite can only equal or restrict the runner's grants."""

    mode: TaskPolicyMode
    allow: tuple[Effect, ...] = ()
    read_only: bool = False


# --- Verifiers -----------------------------------------------------------------------------------------


class CommandVerifier(_SuiteStruct, frozen=True, kw_only=True, tag_field="kind", tag="command"):
    """Runs ``command`` (an argument array, no shell) in the task directory (or ``cwd`` below it)."""

    id: Id
    command: Annotated[tuple[str, ...], Meta(min_length=1)]
    timeout_ms: TimeoutMs
    expect_exit: int = 0
    expect_stdout_includes: str | None = None
    cwd: str | None = None


class FileEqualsVerifier(_SuiteStruct, frozen=True, kw_only=True, tag_field="kind", tag="file-equals"):
    """The file's sha256 (lowercase hex) equals ``sha256``."""

    id: Id
    path: str
    sha256: Sha256


class FileContainsVerifier(_SuiteStruct, frozen=True, kw_only=True, tag_field="kind", tag="file-contains"):
    """The file contains ``text``."""

    id: Id
    path: str
    text: NonEmpty


class FileAbsentVerifier(_SuiteStruct, frozen=True, kw_only=True, tag_field="kind", tag="file-absent"):
    """The file does not exist."""

    id: Id
    path: str


class TreeDiffWithinVerifier(
    _SuiteStruct, frozen=True, kw_only=True, tag_field="kind", tag="tree-diff-within"
):
    """Every changed, added or deleted file is in ``allowed`` (``dir/`` allows a whole directory)."""

    id: Id
    allowed: tuple[str, ...]


class BeforeRule(_SuiteStruct, frozen=True, kw_only=True, tag_field="type", tag="before"):
    """``first`` happened before every ``then`` call (tool names, not files)."""

    first: RuleTool
    then: RuleTool


class NeverRule(_SuiteStruct, frozen=True, kw_only=True, tag_field="type", tag="never"):
    """The tool was never called."""

    tool: RuleTool


class MaxCallsRule(_SuiteStruct, frozen=True, kw_only=True, tag_field="type", tag="max-calls"):
    """The tool was called at most ``max`` times."""

    tool: RuleTool
    max: Count


class NoRepeatFailureRule(_SuiteStruct, frozen=True, kw_only=True, tag_field="type", tag="no-repeat-failure"):
    """An identical failed call of the tool was not repeated."""

    tool: RuleTool


ANY_TOOL = "*"
"""``called`` and ``not-called`` over every tool (an external agent's unmapped tools included)."""
ToolOrAny = ToolName | Literal["*"]


class _CallRule(_SuiteStruct, frozen=True, kw_only=True):
    tool: ToolOrAny
    args_include: NonEmpty | None = None


class CalledRule(_CallRule, frozen=True, kw_only=True, tag_field="type", tag="called"):
    """Some call of the tool (``*``: any) has arguments holding ``argsInclude`` (when given): the agent read
    the skill, named the file."""


class NotCalledRule(_CallRule, frozen=True, kw_only=True, tag_field="type", tag="not-called"):
    """No call of the tool (``*``: any) has arguments holding ``argsInclude`` (when given): the negative
    control, a task where the skill must not trigger."""


Rule = BeforeRule | NeverRule | MaxCallsRule | NoRepeatFailureRule | CalledRule | NotCalledRule


class ToolSequenceVerifier(_SuiteStruct, frozen=True, kw_only=True, tag_field="kind", tag="tool-sequence"):
    """Rules over the tool calls of the run; passes when every rule holds."""

    id: Id
    rules: Annotated[tuple[Rule, ...], Meta(min_length=1)]


Verifier = (
    CommandVerifier
    | FileEqualsVerifier
    | FileContainsVerifier
    | FileAbsentVerifier
    | TreeDiffWithinVerifier
    | ToolSequenceVerifier
)


# --- Tasks and the suite -------------------------------------------------------------------------------


class NormalizeRule(_SuiteStruct, frozen=True, kw_only=True):
    """Replay noise: every match of ``pattern`` (a Python regular expression) becomes ``replace``."""

    pattern: NonEmpty
    replace: str


class Task(_SuiteStruct, frozen=True, kw_only=True):
    """One task: a prompt run in a temporary copy of ``fixture``, judged by its verifiers."""

    id: Id
    prompt: NonEmpty
    fixture: str
    """The fixture directory, relative to the suite directory."""
    budget: Budget
    policy: TaskPolicy
    verifiers: Annotated[tuple[Verifier, ...], Meta(min_length=1)]
    tags: tuple[NonEmpty, ...] = ()
    agent: AgentName | None = None
    """Run the task with this main agent of the configuration."""
    fixture_git: bool = False
    """Initialise a git repository inside the copy."""
    replay_normalize: tuple[NormalizeRule, ...] = ()
    solution: str | None = None  # a directory laid over the copy, or a script run with bash in it
    sandbox: TaskSandbox | None = None  # fixed paths under --sandbox bwrap (core.lab.suite_sandbox)
    protected: tuple[NonEmpty, ...] | None = None  # kept from the agent (core.lab.suites.protected)
    advisory: tuple[NonEmpty, ...] = ()
    """Notes no check decides (an imported skill eval's expectations for a grader model): shown with the task
    in report.md, never counted."""


class Suite(_SuiteStruct, frozen=True, kw_only=True):
    """A suite.json. ``suiteVersion`` must be bumped whenever a fixture or a verifier changes."""

    schema_version: SchemaVersion
    suite_id: Id
    suite_version: SemVer
    description: str
    tasks: Annotated[tuple[Task, ...], Meta(min_length=1)]


def _unknown_rule_tool(value: object) -> str:
    """A rule's tool that is neither a harness tool nor an MCP tool name: the closest harness tool first."""
    known = f"expected {words(TOOL_NAMES)}, or an MCP server's tool as mcp__<server>__<tool>"
    return f"unknown tool {json_repr(value)} ({did_you_mean(value, TOOL_NAMES)}{known})"


_NOUNS: Mapping[Any, Noun] = {
    Effect: "effect",
    TaskPolicyMode: "mode",
    ToolName: "tool",
    RuleTool: _unknown_rule_tool,
    SchemaVersion: "schema version",
    Verifier: "verifier kind",
    Rule: "rule type",
    Id: 'a valid id (letters, digits, ".", "_" or "-", starting with a letter or digit; at most 128)',
    AgentName: 'a plain agent name (letters, digits, "_" or "-", starting with a letter)',
    Sha256: "a sha256 (64 lowercase hex digits)",
    SemVer: "semver (MAJOR.MINOR.PATCH, as in 1.0.0 or 2.1.0-rc.1)",
}

# --- Parsing -------------------------------------------------------------------------------------------

_BOM = b"\xef\xbb\xbf"
_NO_FACTS = PathFacts()
_json_decode = safe((msgspec.DecodeError, RecursionError))(msgspec.json.Decoder().decode)
_encoder = msgspec.json.Encoder()
_hash_encoder = msgspec.json.Encoder(order="deterministic")


def parse_suite(data: bytes, source: str, facts: PathFacts = _NO_FACTS) -> Result[Suite, SuiteError]:
    """Parse and validate a suite.json.

    Args:
        data: the file's bytes (UTF-8 JSON; a leading byte-order mark is tolerated).
        source: the file name used in the error.
        facts: what the shell found under the suite directory; ``PathFacts()`` skips the checks that need
            the filesystem (fixture existence, escaping symlinks).

    Returns:
        ``Success(Suite)``, or ``Failure(SuiteError)`` whose message holds one violation per line: bytes
        that are not UTF-8 or not JSON, and every shape and rule violation found.
    """
    text = data.removeprefix(_BOM)
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as error:
        return Failure(
            SuiteError(source=source, message=f"not valid UTF-8 (byte {error.start + len(data) - len(text)})")
        )
    return (
        _json_decode(text)
        .alt(lambda error: SuiteError(source=source, message=f"not valid JSON: {_json_message(error, text)}"))
        .bind(lambda raw: _validate(raw, text, source, facts))
    )


def violations(error: SuiteError) -> tuple[str, ...]:
    """The violations of a ``SuiteError``, one per entry, without the source."""
    return tuple(error.message.split("\n"))


def encode_suite(suite: Suite) -> bytes:
    """The suite as indented JSON with a final newline; ``parse_suite`` reads it back equal."""
    return msgspec.json.format(_encoder.encode(suite), indent=2) + b"\n"


class _HashInput(Frozen, frozen=True, kw_only=True):
    tasks: tuple[Task, ...]
    fixture_files: tuple[tuple[str, str], ...]


def suite_content_hash(suite: Suite, fixture_files: Mapping[str, str]) -> str:
    """The sha256 (hex) of what a run depends on: the tasks with their verifiers, and the fixture files.

    Args:
        suite: the parsed suite (only ``tasks`` counts, not the id, version or description, nor a task's
            ``solution``: no run reads it, so adding one to a suite leaves its reports comparable).
        fixture_files: suite-relative path of every fixture file, and of every file a command verifier
            has bound (``sandbox.verifierMounts``) -> the sha256 of its bytes (the shell reads them). A
            changed, added or removed file changes the hash.

    Returns:
        64 lowercase hex digits, over the deterministic (sorted-key) msgspec encoding. Two reports that
        share a suiteVersion but not this hash ran different suites.
    """
    tasks = tuple(msgspec.structs.replace(task, solution=None) for task in suite.tasks)  # no run reads it
    files = tuple(sorted(fixture_files.items()))
    return hashlib.sha256(_hash_encoder.encode(_HashInput(tasks=tasks, fixture_files=files))).hexdigest()


def _json_message(error: Exception, text: bytes) -> str:
    """msgspec's message, its byte offset as a line and column (1-based, as config.toml errors give them)."""
    message = byte_to_line_column(str(error).removeprefix("JSON is malformed: "), text)
    return message[:1].lower() + message[1:] if message else type(error).__name__


def _validate(raw: Any, text: bytes, source: str, facts: PathFacts) -> Result[Suite, SuiteError]:
    # A repeated key decodes as its last value: the author would read one budget and run another.
    problems = duplicate_keys(text) + _suite_problems(raw, facts)
    if problems:
        return Failure(SuiteError(source=source, message=format_problems(problems, raw)))
    try:
        return Success(msgspec.convert(raw, Suite))
    except msgspec.ValidationError as error:  # shape_problems missed it: still report it, with its path
        message, path = parse_msgspec_path(str(error))
        return Failure(SuiteError(source=source, message=format_problems([(path, message)], raw)))


def _suite_problems(raw: Any, facts: PathFacts) -> list[Problem]:
    if not isinstance(raw, dict):
        return [((), "a suite.json must hold a JSON object")]
    problems = shape_problems(raw, Suite, (), _NOUNS)
    tasks = raw.get("tasks")
    if isinstance(tasks, list):
        links = {link.path: link.target for link in facts.symlinks}
        rules = _duplicates(tasks, ("tasks",), "task id")
        for index, task in enumerate(tasks):
            if isinstance(task, dict):
                misshapen = [path[2:] for path, _ in problems if path[:2] == ("tasks", index)]
                rules += [
                    (("tasks", index, *p), why) for p, why in _task_problems(task, misshapen, facts, links)
                ]
        problems += rules
    return problems


def _duplicates(items: list[Any], where: FieldPath, noun: str) -> list[Problem]:
    """A problem for each item whose string ``id`` repeats an earlier one."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        item_id = item.get("id") if isinstance(item, dict) else None
        if isinstance(item_id, str):
            if item_id in seen:
                problems.append(((*where, index, "id"), f"duplicate {noun} {json_repr(item_id, limit=200)}"))
            seen.add(item_id)
    return problems


# --- Rules types cannot state --------------------------------------------------------------------------


def _well_shaped(misshapen: list[FieldPath], *where: str | int) -> bool:
    """No shape problem at ``where``, above it or below it."""
    return not any(path[: len(where)] == where or where[: len(path)] == path for path in misshapen)


def _task_problems(
    task: dict[str, Any], misshapen: list[FieldPath], facts: PathFacts, links: Mapping[str, str | None]
) -> list[Problem]:
    """The rule violations of one task (decoded JSON), checked wherever its shape allows.

    Paths are relative to the task. Parts with a shape problem are skipped: they are reported already.
    """
    problems: list[Problem] = []
    root: str | None = None
    fixture = task.get("fixture")
    if isinstance(fixture, str) and _well_shaped(misshapen, "fixture"):
        fixture_problems, root = _fixture_problems(fixture, facts, links)
        problems += fixture_problems
    solution = task.get("solution")
    if isinstance(solution, str) and _well_shaped(misshapen, "solution"):
        problems += [(("solution",), why) for why in [entry_problem(solution, facts, links)] if why]
    problems += sandbox_problems(task, misshapen, facts, links)
    problems += protected_problems(task, misshapen, facts, root, links)
    verifiers = task.get("verifiers")
    if isinstance(verifiers, list):
        problems += _duplicates(verifiers, ("verifiers",), "verifier id")
        for index, raw in enumerate(verifiers):
            verifier = _converted(raw, Verifier) if _well_shaped(misshapen, "verifiers", index) else None
            if verifier is not None:
                problems += [
                    (("verifiers", index, *path), why)
                    for path, why in _verifier_problems(verifier, root, links)
                ]
    allow = task.get("policy", {}).get("allow") if isinstance(task.get("policy"), dict) else None
    if isinstance(allow, list):
        problems += [
            (("policy", "allow", index), f"duplicate effect {json_repr(effect)}")
            for index, effect in enumerate(allow)
            if isinstance(effect, str) and effect in allow[:index]
        ]
    normalize_rules = task.get("replayNormalize")
    if isinstance(normalize_rules, list):
        for index, rule in enumerate(normalize_rules):
            pattern = rule.get("pattern") if isinstance(rule, dict) else None
            why = _pattern_problem(pattern) if isinstance(pattern, str) and pattern else None
            if why is not None:
                problems.append((("replayNormalize", index, "pattern"), why))
    return problems


def _converted(raw: Any, typ: Any) -> Any:
    """``raw`` as ``typ``, or None (only for a part whose shape was found valid, so None means a bug there)."""
    try:
        return msgspec.convert(raw, typ)
    except msgspec.ValidationError:
        return None


def _fixture_problems(
    fixture: str, facts: PathFacts, links: Mapping[str, str | None]
) -> tuple[list[Problem], str | None]:
    """Problems of the fixture path, and its resolved suite-relative directory when it is usable."""
    where: FieldPath = ("fixture",)
    lexical = lexical_problem(fixture, "suite directory")
    if lexical is not None:
        return [(where, lexical)], None
    if not facts.gathered:
        return [], None
    resolved = resolve(normalize(fixture), links)
    if resolved is None:
        return [(where, "escapes the suite directory through a symlink")], None
    if resolved == "":
        return [(where, "names the suite directory itself (through a symlink)")], None
    if resolved not in facts.directories:
        what = "is a file, not a directory" if resolved in facts.files else "does not exist"
        return [(where, f"{json_repr(fixture, limit=200)} {what}")], None
    problems: list[Problem] = [
        (where, f"{json_repr(link.path, limit=200)} is a symlink that escapes the task directory")
        for link in escaping_links(resolved, facts)
    ]
    problems += [(where, message) for message in unusable_entries(resolved, facts)]
    return problems, resolved


def _verifier_problems(
    verifier: Verifier, root: str | None, links: Mapping[str, str | None]
) -> list[Problem]:
    """Violations of one verifier: its paths, and the rules of its kind."""
    match verifier:
        case CommandVerifier(command=command, cwd=cwd):
            problems: list[Problem] = []
            if command[0] == "":
                problems.append((("command", 0), "must not be empty (the program to run)"))
            if cwd is not None:
                problems += _task_path_problems(cwd, ("cwd",), root, links)
            return problems
        case FileEqualsVerifier(path=path) | FileContainsVerifier(path=path) | FileAbsentVerifier(path=path):
            return _task_path_problems(path, ("path",), root, links)
        case TreeDiffWithinVerifier(allowed=allowed):
            return [
                p
                for i, entry in enumerate(allowed)
                for p in _task_path_problems(entry, ("allowed", i), root, links)
            ]
        case ToolSequenceVerifier(rules=rules):
            return [
                (("rules", index, "then"), f"same tool as first ({rule.first})")
                for index, rule in enumerate(rules)
                if isinstance(rule, BeforeRule) and rule.first == rule.then
            ]


def _task_path_problems(
    path: str, where: FieldPath, root: str | None, links: Mapping[str, str | None]
) -> list[Problem]:
    """A verifier path must stay inside the task directory, lexically and through symlinks."""
    lexical = lexical_problem(path, "task directory")
    if lexical is not None:
        return [(where, lexical)]
    if root is None:
        return []
    resolved = resolve(join(root, normalize(path)), links)
    if resolved is None or not is_within(resolved, root):
        return [(where, "path escapes the task directory through a symlink")]
    return []


def _pattern_problem(pattern: str) -> str | None:
    """Why a replayNormalize pattern is refused: RE2 cannot compile it (a syntax error, or a construct that
    needs backtracking and so could hang a recording), or it matches the empty string."""
    match compile_linear(pattern):
        case Failure(message):
            return f"invalid regular expression: {message}"
        case Success(LinearPattern() as compiled) if compiled.matches_empty():
            return "matches the empty string (it would insert the replacement everywhere)"
    return None
