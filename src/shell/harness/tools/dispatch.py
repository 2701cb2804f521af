"""Carry out the model's tool calls in the workspace (the tools themselves are defined in ``alisio.core.harness.tooldefs``).

``execute_tool(call, ctx)`` decodes the arguments with the core, runs the tool and returns a ``ToolOutcome``.
It never raises for anything the model, a file or a server can cause: invalid JSON, a missing, extra or
wrong-typed argument, an unknown tool, a path outside the workspace, a missing, binary or special file, a
refused edit, a failing or timed-out command, and any unexpected exception inside a tool (a
``RecursionError``, a ``MemoryError``, a ``ValueError`` from a library) are all
``ToolOutcome(ok=False, output=<what went wrong and what to do>)``. The policy is not checked here: the agent
asks ``alisio.core.harness.policy.decide`` before calling ``execute_tool``.

Rules:
- the tool families live in ``files`` (read_file, list_dir, write_file, edit_file), ``search`` (search,
  analyze), ``bash`` and ``fetch``; their shared state and limits in ``context.ToolContext``;
- every call is bounded: nothing starts after the run's deadline; the in-process tools whose work depends on
  what they find (search, analyze, list_dir, read_file's streaming of a large file) stop at
  ``ctx.tool_time_limit_s`` or the deadline (``limits.time_limit``), the others are bounded by size (a file
  of at most ``ctx.file_max_bytes``, content the model sent); bash stops at its timeout, fetch_url at
  ``ctx.fetch_timeout_s``;
- the run's process mark never reaches the model: it is shown as ``<run-mark>`` in every result (so a
  command that prints its environment gives the same result in every run, as replay needs).
"""

from __future__ import annotations

from typing import Final

from returns.result import Failure

from alisio.core.harness.endpoint import redact_credentials
from alisio.core.harness.protocol import ToolCall
from alisio.core.harness.tooldefs import (
    AnalyzeArgs,
    BashArgs,
    EditFileArgs,
    FetchUrlArgs,
    ListDirArgs,
    ReadFileArgs,
    SearchArgs,
    ToolArguments,
    WriteFileArgs,
    decode_arguments,
)
from alisio.core.harness.toolenv import scrubbed_env, tool_env
from alisio.shell.harness.tools.bash import bash_tool
from alisio.shell.harness.tools.context import (
    NOT_RUN,
    CallTime,
    ToolContext,
    ToolError,
    ToolOutcome,
    ToolTimeout,
    call_time,
    shown_path,
)
from alisio.shell.harness.tools.fetch import fetch_url_tool
from alisio.shell.harness.tools.files import edit_file, list_dir, read_file, write_file
from alisio.shell.harness.tools.paths import WorkspacePathError
from alisio.shell.harness.tools.search import SEARCH_MAX_FILE_BYTES, SKIPPED_DIRS, analyze, search

__all__ = [
    "MARK_SHOWN",
    "SEARCH_MAX_FILE_BYTES",
    "SKIPPED_DIRS",
    "ToolContext",
    "ToolOutcome",
    "execute_tool",
    "scrubbed_env",
    "tool_env",
]

MARK_SHOWN: Final = "<run-mark>"
"""What the model sees in place of the run's process mark."""
_SHOWN_PATH_CHARS: Final = 300


def execute_tool(call: ToolCall, ctx: ToolContext) -> ToolOutcome:
    """Run one tool call in ``ctx.workspace``; a failure is a ``ToolOutcome(ok=False)``, never an exception."""
    decoded = decode_arguments(call.name, call.arguments)
    if isinstance(decoded, Failure):
        return ToolOutcome(False, decoded.failure().message)
    outcome = _guarded(call.name, decoded.unwrap(), ctx)
    if ctx.process_mark in outcome.output:
        outcome = ToolOutcome(
            outcome.ok,
            outcome.output.replace(ctx.process_mark, MARK_SHOWN),
            outcome.timed_out,
            outcome.denied,
        )
    return outcome


def _guarded(name: str, args: ToolArguments, ctx: ToolContext) -> ToolOutcome:
    """Run the tool; turn every exception it raises into a result the model reads."""
    try:
        return _dispatch(args, ctx)
    except ToolTimeout as error:
        return ToolOutcome(False, str(error), timed_out=True)
    except (ToolError, WorkspacePathError) as error:
        return ToolOutcome(False, str(error))
    except OSError as error:
        where = f": {_shown(str(error.filename), ctx.root)}" if error.filename else ""
        return ToolOutcome(False, f"{name} failed: {error.strerror or error}{where}")
    except RecursionError:
        return ToolOutcome(False, f"{name} failed: the input is nested too deeply to handle (RecursionError)")
    except MemoryError:
        return ToolOutcome(False, f"{name} failed: the input is too large to handle (MemoryError)")
    except Exception as error:  # the rule above: nothing a tool meets ends the run
        detail = redact_credentials(str(error))[:_SHOWN_PATH_CHARS]
        return ToolOutcome(False, f"{name} failed: {type(error).__name__}: {detail}")


def _shown(path: str, root: str) -> str:
    shown = shown_path(path, root)
    return shown if len(shown) <= _SHOWN_PATH_CHARS else shown[:_SHOWN_PATH_CHARS] + "..."


def _dispatch(args: ToolArguments, ctx: ToolContext) -> ToolOutcome:
    match args:
        case BashArgs():
            return bash_tool(args, ctx)
        case FetchUrlArgs():
            return fetch_url_tool(args, ctx)
    budget = call_time(ctx, ctx.tool_time_limit_s)
    if budget is None:
        return ToolOutcome(False, NOT_RUN, timed_out=True)
    match args:
        case SearchArgs():
            return search(args, ctx, budget)
        case AnalyzeArgs():
            return analyze(args, ctx, budget)
    return _file_tool(args, ctx, budget)


def _file_tool(
    args: ReadFileArgs | ListDirArgs | WriteFileArgs | EditFileArgs, ctx: ToolContext, budget: CallTime
) -> ToolOutcome:
    match args:
        case ReadFileArgs():
            return read_file(args, ctx, budget)
        case ListDirArgs():
            return list_dir(args, ctx, budget)
        case WriteFileArgs():
            return write_file(args, ctx)
        case EditFileArgs():
            return edit_file(args, ctx)
