"""The harness's tools as data: name, effect, the description the model reads, and the arguments' schema.

Tool names and arguments are a user-facing contract (tool-sequence rules name them), so they are defined
once here and nowhere else. Each tool has an arguments Struct (snake_case on the wire, unknown fields
forbidden) and a hand-written JSON schema that says the same thing; ``tests/property/test_tooldefs.py`` keeps
the two in agreement. The shell (``alisio.shell.harness.tools.dispatch``) carries the tools out.

Rules:
- a schema is stored as canonical JSON text (sorted keys, no spaces), so a ``ToolSpec`` is a hashable value
  and the request fingerprint does not depend on dict order;
- ``decode_arguments`` never raises: invalid JSON, a missing, extra or wrong-typed argument, and an unknown
  tool are each a ``ToolArgumentError`` whose message the model sees and can act on;
- ``tool_specs`` returns tools in the canonical ``TOOLS`` order whatever order names are given in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Annotated, Any, Final

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.harness.events import Effect
from alisio.core.harness.protocol import ToolSpec

MAX_TIMEOUT_MS: Final = 600_000
"""The longest ``bash`` timeout a model may ask for (10 minutes); maxWallMs still applies."""

PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
TimeoutMs = Annotated[int, msgspec.Meta(ge=1, le=MAX_TIMEOUT_MS)]


class _Args(Frozen, frozen=True, kw_only=True, rename=None, forbid_unknown_fields=True):
    """Base of the tool argument Structs: snake_case names as the model sends them, no unknown fields."""


class ReadFileArgs(_Args, frozen=True, kw_only=True):
    path: str
    offset: PositiveInt | None = None
    limit: PositiveInt | None = None


class ListDirArgs(_Args, frozen=True, kw_only=True):
    path: str


class SearchArgs(_Args, frozen=True, kw_only=True):
    pattern: str
    path: str | None = None


class WriteFileArgs(_Args, frozen=True, kw_only=True):
    path: str
    content: str


class EditFileArgs(_Args, frozen=True, kw_only=True):
    path: str
    old_string: str
    new_string: str
    sha256: str | None = None


class BashArgs(_Args, frozen=True, kw_only=True):
    command: str
    timeout_ms: TimeoutMs | None = None


class FetchUrlArgs(_Args, frozen=True, kw_only=True):
    url: str


class AnalyzeArgs(_Args, frozen=True, kw_only=True):
    path: str | None = None


ToolArguments = (
    ReadFileArgs
    | ListDirArgs
    | SearchArgs
    | WriteFileArgs
    | EditFileArgs
    | BashArgs
    | FetchUrlArgs
    | AnalyzeArgs
)


class ToolDefinition(Frozen, frozen=True, kw_only=True):
    """One tool: what the model sees (name, description, schema) and what the policy decides on (effect)."""

    name: str
    effect: Effect
    description: str
    parameters_json: str
    """The JSON schema of the arguments, canonical JSON text."""

    def spec(self) -> ToolSpec:
        """The tool as sent to the provider."""
        return ToolSpec(name=self.name, description=self.description, parameters_json=self.parameters_json)


class ToolArgumentError(Frozen, frozen=True, kw_only=True, tag="tool_argument_error"):
    """A tool call the harness cannot carry out as sent; ``message`` is the tool result the model sees."""

    tool: str
    message: str

    def __str__(self) -> str:
        return self.message


class UnknownToolError(Frozen, frozen=True, kw_only=True, tag="unknown_tool_error"):
    """A tool name (in a configuration's tool subset) that the harness does not have."""

    name: str
    message: str

    def __str__(self) -> str:
        return self.message


_ENCODER: Final = msgspec.json.Encoder(order="deterministic")


def canonical_json(value: object) -> str:
    """``value`` as canonical JSON text: sorted keys, no insignificant whitespace."""
    return _ENCODER.encode(value).decode()


def _schema(properties: Mapping[str, Mapping[str, Any]], required: tuple[str, ...]) -> str:
    schema: dict[str, Any] = {"type": "object", "properties": dict(properties), "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return canonical_json(schema)


_PATH = "A path relative to the workspace root (an absolute path must lie inside the workspace)."

_READ_FILE = ToolDefinition(
    name="read_file",
    effect=Effect.READ,
    description=(
        "Read a UTF-8 text file in the workspace. The result starts with a header giving the path, the "
        "sha256 of the whole file, and which lines are shown out of how many, then a line '---' and the "
        "text exactly as stored, without line numbers (so it can be copied into edit_file's old_string). "
        "offset is the first line to show (1-based, default 1) and limit how many lines (default: the rest "
        "of the file). A long file is cut at a line boundary and the header says how to read on. Binary "
        "files are refused. Reading a file is what lets edit_file change it."
    ),
    parameters_json=_schema(
        {
            "path": {"type": "string", "description": _PATH},
            "offset": {"type": "integer", "minimum": 1, "description": "First line to show, from 1."},
            "limit": {"type": "integer", "minimum": 1, "description": "How many lines to show."},
        },
        ("path",),
    ),
)

_LIST_DIR = ToolDefinition(
    name="list_dir",
    effect=Effect.READ,
    description=(
        "List a directory of the workspace: one entry per line, sorted by name, directories with a "
        "trailing '/'. Use '.' for the workspace root."
    ),
    parameters_json=_schema({"path": {"type": "string", "description": _PATH}}, ("path",)),
)

_SEARCH = ToolDefinition(
    name="search",
    effect=Effect.READ,
    description=(
        "Search the text files under a path (default: the whole workspace) for a Python regular "
        "expression, line by line. Returns one 'path:line: text' per matching line, in path order; "
        ".git, node_modules and cache directories, binary files and files over 1 MB are skipped, and the "
        "result stops after a fixed number of matches (it says so: narrow the pattern or the path)."
    ),
    parameters_json=_schema(
        {
            "pattern": {
                "type": "string",
                "description": "A regular expression in Python re syntax, without lookarounds or "
                "backreferences (matched in linear time; \\d, \\w, \\s are ASCII).",
            },
            "path": {"type": "string", "description": "A file or directory to search. " + _PATH},
        },
        ("pattern",),
    ),
)

_WRITE_FILE = ToolDefinition(
    name="write_file",
    effect=Effect.WRITE,
    description=(
        "Create a file, or replace a file's whole content, with content (UTF-8 text). Missing parent "
        "directories are created. Returns the new sha256. To change part of an existing file, prefer "
        "edit_file."
    ),
    parameters_json=_schema(
        {
            "path": {"type": "string", "description": _PATH},
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        ("path", "content"),
    ),
)

_EDIT_FILE = ToolDefinition(
    name="edit_file",
    effect=Effect.WRITE,
    description=(
        "Replace exactly one occurrence of old_string with new_string in an existing file. The file must "
        "have been read with read_file (or written) earlier in this run, or you must pass the sha256 that "
        "read_file returned; the edit is refused if the file changed since that read (read it again). "
        "old_string must appear exactly once, matching the file's text character for character "
        "(whitespace and indentation included): if it is absent or appears more than once the edit is "
        "refused and the result says how many times it was found; include more surrounding lines to make "
        "it unique. Returns the new sha256. To create a file, use write_file."
    ),
    parameters_json=_schema(
        {
            "path": {"type": "string", "description": _PATH},
            "old_string": {"type": "string", "description": "The exact text to replace (non-empty)."},
            "new_string": {"type": "string", "description": "The text to put in its place."},
            "sha256": {
                "type": "string",
                "description": "The sha256 read_file returned; the edit is refused if the file changed.",
            },
        },
        ("path", "old_string", "new_string"),
    ),
)

_BASH = ToolDefinition(
    name="bash",
    effect=Effect.PROCESS,
    description=(
        "Run a command with 'bash -c' in the workspace root, with no input (stdin is empty). Returns the "
        "exit code, then stdout and stderr merged in the order they were written. Long output keeps its "
        "beginning and end and says how many characters were cut. The command is killed, with every "
        "process it started, when timeout_ms passes (the harness sets the default) or the run's time runs out; processes "
        "left running in the background are killed when the command returns. Each call starts a fresh "
        "shell: cd and variables do not carry over."
    ),
    parameters_json=_schema(
        {
            "command": {"type": "string", "description": "The bash command line to run."},
            "timeout_ms": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TIMEOUT_MS,
                "description": "Kill the command after this many milliseconds.",
            },
        },
        ("command",),
    ),
)

_FETCH_URL = ToolDefinition(
    name="fetch_url",
    effect=Effect.EXTERNAL,
    description=(
        "Fetch an http(s) URL with GET and return the status, the content type and the body as text. "
        "Only text responses (text/*, JSON, XML, JavaScript) are returned; the body is cut at a size limit "
        "and the request has a timeout."
    ),
    parameters_json=_schema(
        {"url": {"type": "string", "description": "An absolute http:// or https:// URL."}}, ("url",)
    ),
)

_ANALYZE = ToolDefinition(
    name="analyze",
    effect=Effect.ANALYSIS,
    description=(
        "Check the Python files under a path (default: the whole workspace) for syntax errors without "
        "running them. Returns one 'path:line:column: message' per file that does not compile, or says "
        "that no problems were found and how many files were checked."
    ),
    parameters_json=_schema(
        {"path": {"type": "string", "description": "A file or directory to check. " + _PATH}}, ()
    ),
)

TOOLS: Final[tuple[ToolDefinition, ...]] = (
    _READ_FILE,
    _LIST_DIR,
    _SEARCH,
    _WRITE_FILE,
    _EDIT_FILE,
    _BASH,
    _FETCH_URL,
    _ANALYZE,
)
"""Every tool, in the canonical order (the order tools are offered to the model)."""

TOOL_NAMES: Final[tuple[str, ...]] = tuple(tool.name for tool in TOOLS)

ARGUMENT_TYPES: Final[Mapping[str, type[ToolArguments]]] = MappingProxyType(
    {
        "read_file": ReadFileArgs,
        "list_dir": ListDirArgs,
        "search": SearchArgs,
        "write_file": WriteFileArgs,
        "edit_file": EditFileArgs,
        "bash": BashArgs,
        "fetch_url": FetchUrlArgs,
        "analyze": AnalyzeArgs,
    }
)
"""The arguments Struct of each tool."""

_BY_NAME: Final[Mapping[str, ToolDefinition]] = MappingProxyType({tool.name: tool for tool in TOOLS})
_SPECS: Final[Mapping[str, ToolSpec]] = MappingProxyType({tool.name: tool.spec() for tool in TOOLS})
_ALL_SPECS: Final[tuple[ToolSpec, ...]] = tuple(_SPECS[name] for name in TOOL_NAMES)
_DECODERS: Final[Mapping[str, msgspec.json.Decoder[Any]]] = MappingProxyType(
    {name: msgspec.json.Decoder(kind) for name, kind in ARGUMENT_TYPES.items()}
)


def tool_definition(name: str) -> ToolDefinition | None:
    """The tool called ``name``, or ``None`` when the harness has no such tool."""
    return _BY_NAME.get(name)


def effect_of(name: str) -> Effect | None:
    """The effect of the tool called ``name``, or ``None`` for an unknown tool."""
    tool = _BY_NAME.get(name)
    return tool.effect if tool is not None else None


def tool_specs(names: Iterable[str] | None = None) -> Result[tuple[ToolSpec, ...], UnknownToolError]:
    """The specs of the named tools (all tools when ``names`` is ``None``), in ``TOOLS`` order.

    Returns:
        The specs, each once; ``Failure(UnknownToolError)`` naming the first unknown name and listing the
        known ones.
    """
    if names is None:
        return Success(_ALL_SPECS)
    wanted = frozenset(names)
    for name in sorted(wanted):
        if name not in _BY_NAME:
            known = ", ".join(TOOL_NAMES)
            return Failure(UnknownToolError(name=name, message=f"unknown tool {name!r} (tools: {known})"))
    return Success(tuple(_SPECS[name] for name in TOOL_NAMES if name in wanted))


def decode_arguments(name: str, arguments: str) -> Result[ToolArguments, ToolArgumentError]:
    """Decode a tool call's raw JSON arguments into the tool's arguments Struct.

    An empty (or blank) arguments string means no arguments, as some models send for optional-only tools.

    Returns:
        The arguments, or ``Failure(ToolArgumentError)`` for an unknown tool, text that is not JSON, or a
        missing, unknown or wrong-typed argument (msgspec's message, which names the field).
    """
    decoder = _DECODERS.get(name)
    if decoder is None:
        return Failure(
            ToolArgumentError(
                tool=name, message=f"unknown tool {name!r}; the tools are: {', '.join(TOOL_NAMES)}"
            )
        )
    text = arguments if arguments.strip() else "{}"
    try:
        decoded: ToolArguments = decoder.decode(text)
    except msgspec.ValidationError as error:
        return Failure(ToolArgumentError(tool=name, message=f"invalid arguments for {name}: {error}"))
    except msgspec.DecodeError as error:
        return Failure(
            ToolArgumentError(tool=name, message=f"invalid arguments for {name}: not valid JSON ({error})")
        )
    return Success(decoded)


def arguments_text(arguments: str) -> str:
    """The raw arguments and, when they are JSON, every string in them unescaped (a path with a ``/`` the
    model wrote as ``\\/`` is still named)."""
    try:
        decoded = msgspec.json.decode(arguments)
    except (msgspec.DecodeError, RecursionError):
        return arguments
    strings: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)

    try:
        walk(decoded)
    except RecursionError:
        return arguments
    return "\n".join((arguments, *strings))
