"""What every tool shares: the run's ``ToolContext``, the ``ToolOutcome`` a call produces, and ``ToolError``.

``ToolContext`` holds the per-run state (the read records of ``edit_file``, the process mark) and every limit
of the tools; it is built once per run by the agent. The tool families live in ``files``, ``search``,
``bash`` and ``fetch``; ``dispatch.execute_tool`` routes a call to them.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from alisio.core.harness.toolenv import scrubbed_env
from alisio.shell.harness.tools.paths import real_root
from alisio.shell.harness.tools.processes import new_mark

if TYPE_CHECKING:
    import httpx

    from alisio.shell.sandbox.bwrap import SandboxRun

__all__ = [
    "FILE_MAX_BYTES",
    "NOT_RUN",
    "TOOL_TIME_LIMIT_S",
    "CallTime",
    "ToolContext",
    "ToolError",
    "ToolOutcome",
    "ToolTimeout",
    "call_time",
    "remaining_s",
    "sha256_hex",
    "shown_path",
]

FILE_MAX_BYTES: Final = 16 << 20
"""read_file reads files up to this size whole (with their sha256); edit_file edits files up to it."""
TOOL_TIME_LIMIT_S: Final = 30.0
"""The longest one call of an in-process tool (the file tools, search, analyze) may take."""


@dataclass(slots=True)
class ToolContext:
    """Per-run state and limits of the tools. Mutable: ``read_hashes`` grows as the run reads and writes."""

    workspace: Path
    read_hashes: dict[str, str] = field(default_factory=dict)
    """Workspace-relative path -> sha256 of the content this run last read or wrote."""
    bash_output_limit_chars: int = 20_000
    bash_default_timeout_ms: int = 120_000
    bash_kill_grace_s: float = 0.5
    bash_max_output_bytes: int = 8 << 20
    read_max_chars: int = 100_000
    """read_file shows at most this many characters per call (cut at a line boundary)."""
    file_max_bytes: int = FILE_MAX_BYTES
    """read_file reads files up to this size whole; past it only the window asked for is read (no sha256),
    and edit_file refuses the file."""
    search_max_matches: int = 100
    tool_time_limit_s: float = TOOL_TIME_LIMIT_S
    """The per-call cap of the in-process tools (bash has its timeout, fetch_url ``fetch_timeout_s``)."""
    deadline: float | None = None
    """``time.monotonic()`` value when the run's maxWallMs passes; no tool call runs past it."""
    env: Mapping[str, str] | None = None
    """The environment of ``bash`` commands; ``None`` means ``scrubbed_env(os.environ)``."""
    fetch_max_bytes: int = 1_000_000
    fetch_timeout_s: float = 20.0
    """The longest a whole fetch_url call may take (connecting, headers and body)."""
    fetch_transport: httpx.BaseTransport | None = None
    """The transport of fetch_url (tests pass ``httpx.MockTransport``); ``None`` is httpx's own."""
    process_mark: str = field(default_factory=new_mark)
    """Every bash command of the run carries it in its environment (``processes.MARK_VARIABLE``)."""
    sandbox: SandboxRun | None = None
    """Where bash commands run (``--sandbox bwrap``); ``None``: as plain subprocesses."""
    root: str = field(init=False)
    """The real path of ``workspace`` (symlinks resolved), computed once."""

    def __post_init__(self) -> None:
        self.root = real_root(self.workspace)
        if self.env is None:
            self.env = scrubbed_env(os.environ)

    def in_workspace(self, given: str) -> str:
        """``given`` as the file tools resolve it: with a sandbox, ``/workspace/...`` (the path its commands
        print; the task's ``sandbox.workdir`` when it names one) names the same file in the copy; anything
        else is left as it is."""
        if self.sandbox is None or not given.startswith(self.sandbox.workdir):
            return given
        rest = given[len(self.sandbox.workdir) :]
        if rest and not rest.startswith("/"):
            return given  # /workspaces/x is another path
        return rest.lstrip("/") or "."


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool call produced: the text the model sees, whether it succeeded, whether it was killed."""

    ok: bool
    output: str
    timed_out: bool = False
    denied: str | None = None
    """What the sandbox refused, as the output shows it (``sandbox_denied``); ``None`` without a sandbox."""


class ToolError(Exception):
    """A tool call that cannot be carried out; ``str()`` is the message the model sees."""


class ToolTimeout(ToolError):
    """A tool call stopped at its time limit (the result is marked ``timed_out``)."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def remaining_s(ctx: ToolContext) -> float | None:
    """Seconds left before the run's deadline, ``None`` without one."""
    return None if ctx.deadline is None else ctx.deadline - time.monotonic()


@dataclass(frozen=True, slots=True)
class CallTime:
    """How long one tool call may take: its own cap, or what is left of the run when that is less."""

    seconds: float
    by_deadline: bool
    """Whether the run's deadline (maxWallMs) is what limits the call."""

    def stopped(self, tool: str) -> ToolTimeout:
        """The error of a ``tool`` call stopped at ``seconds``."""
        return ToolTimeout(f"{tool} was stopped after {self.seconds:g} s: {self.why()}")

    def why(self) -> str:
        """Why a call stopped at ``seconds``, for the model."""
        if self.by_deadline:
            return "the run's time budget (maxWallMs) ran out"
        return f"it passed its time limit of {self.seconds:g} s"


def call_time(ctx: ToolContext, cap_s: float) -> CallTime | None:
    """The time one call may take (``cap_s``, or less when the run's deadline is nearer); ``None`` when the
    deadline has already passed and the call must not start."""
    left = remaining_s(ctx)
    if left is None or left > cap_s:
        return CallTime(seconds=cap_s, by_deadline=False)
    return CallTime(seconds=left, by_deadline=True) if left > 0 else None


NOT_RUN: Final = "not run: the run's time budget (maxWallMs) has run out"
"""The result of a call made after the run's deadline."""


def shown_path(path: str, root: str) -> str:
    """``path`` relative to the workspace when it lies inside (the model works with relative paths)."""
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path[len(prefix) :].replace(os.sep, "/") if path.startswith(prefix) else path
