"""The built-in agent as an MCP client: start a run's stdio MCP servers, list their tools, carry out calls.

``McpClients.start`` starts every server of a run (``alisio.core.harness.mcp.McpServer``) with the ``mcp``
package's stdio client, initialises a session with each and lists its tools; the agent offers them as
``mcp__<server>__<tool>`` (``alisio.core.harness.mcp.mcp_definitions``) and sends each call back here.

Rules this module keeps:
- the ``mcp`` package is asynchronous; the loop is synchronous: one background thread (an anyio blocking
  portal) owns every session, and each session lives in its own task there, entered and left in that task;
- a server starts in the run's workspace with the tools' environment (credentials scrubbed) and a process
  mark of its own (not the bash commands': their sweep after each command would stop it), so whatever it
  leaves running is found and stopped when the run ends (``stop_marked``);
  under ``--sandbox bwrap`` it runs inside the sandbox like a bash command (``/workspace``, read-only root,
  network only with ``external``), with each absolute path of its command that exists on the host bound
  read-only (``server_binds``: a program in a ``bin`` directory brings its installation, a virtual
  environment's interpreter its environment and the Python it links to) and ``--die-with-parent``;
- every wait is bounded: the start and tool listing by ``START_TIMEOUT_S`` (and the run's wall time), a call
  by the tool time limit and the run's deadline; a server that does not answer in time is a failed call
  the model reads, never a hung run;
- ``close`` stops every server (stdin closed, then SIGTERM/SIGKILL of its process group by the ``mcp``
  package, then the process-mark sweep) and is safe to call twice, after a failed start, or on Ctrl-C;
- a server's result becomes the text the model reads: its text blocks joined, other blocks described in
  one line each (``[image: image/png, 1234 bytes]``), the structured content when there is no text; an
  ``isError`` result is a failed call.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from alisio.core.harness.endpoint import redact_credentials
from alisio.core.harness.events import Effect
from alisio.core.harness.mcp import (
    McpListing,
    McpServer,
    McpTool,
    mcp_arguments,
    mcp_definitions,
    mcp_grant_problem,
    mcp_servers_from,
)
from alisio.core.harness.protocol import ToolCall
from alisio.core.harness.sandbox import BIND_ROOTS, Bind, bwrap_argv, sandbox_path_problem
from alisio.shell.harness.tools.context import NOT_RUN, ToolContext, ToolOutcome, call_time
from alisio.shell.harness.tools.dispatch import tool_env
from alisio.shell.harness.tools.processes import marked, new_mark, stop_marked

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal
    from mcp import ClientSession

    from alisio.shell.sandbox.bwrap import SandboxRun

__all__ = ["START_TIMEOUT_S", "McpClients", "McpStartError", "server_binds", "start_servers"]

START_TIMEOUT_S: Final = 60.0
"""The longest a server may take to start, initialise and list its tools."""
_STDERR_CHARS: Final = 600
"""How much of a server's stderr a start failure shows (its last characters)."""


class McpStartError(Exception):
    """A server did not start or list its tools; ``str()`` is one line naming it and why."""


@dataclass
class _Server:
    server: McpServer
    session: ClientSession
    exit: contextlib.AbstractContextManager[Any]


@dataclass
class McpClients:
    """A run's MCP sessions (one per server), on one background thread."""

    servers: tuple[McpServer, ...]
    workspace: Path
    env: Mapping[str, str]
    mark: str
    sandbox: SandboxRun | None = None
    listing: McpListing = field(default_factory=lambda: mcp_definitions(()))
    _portal_cm: contextlib.AbstractContextManager[BlockingPortal] | None = None
    _portal: BlockingPortal | None = None
    _sessions: dict[str, _Server] = field(default_factory=dict)
    _stderr: dict[str, TextIO] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, timeout_s: float) -> McpListing:
        """Start every server and list its tools; raises ``McpStartError`` (after stopping the others)."""
        from anyio.from_thread import start_blocking_portal

        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        listed: list[tuple[str, tuple[tuple[str, str | None, Mapping[str, Any] | None], ...]]] = []
        try:
            for server in self.servers:
                listed.append((server.name, self._start_one(server, min(timeout_s, START_TIMEOUT_S))))
        except BaseException:
            self.close()
            raise
        self.listing = mcp_definitions(listed)
        return self.listing

    def _start_one(
        self, server: McpServer, timeout_s: float
    ) -> tuple[tuple[str, str | None, Mapping[str, Any] | None], ...]:
        assert self._portal is not None
        errlog: TextIO = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 (closed by close())
        self._stderr[server.name] = errlog
        argv = self._argv(server.command)
        connect = self._portal.wrap_async_context_manager(self._connected(argv, errlog, timeout_s))
        try:
            session = connect.__enter__()
        except BaseException as error:
            if not isinstance(error, Exception):
                raise
            raise McpStartError(self._start_failure(server, error)) from None
        self._sessions[server.name] = _Server(server=server, session=session, exit=connect)
        try:
            result = self._portal.call(_list_tools, session, timeout_s)
        except Exception as error:
            raise McpStartError(self._start_failure(server, error)) from None
        return tuple((tool.name, tool.description, tool.input_schema) for tool in result)

    @contextlib.asynccontextmanager
    async def _connected(
        self, argv: tuple[str, ...], errlog: TextIO, timeout_s: float
    ) -> AsyncIterator[ClientSession]:
        import anyio
        from mcp import ClientSession, StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=argv[0],
            args=list(argv[1:]),
            env=dict(marked(self.env, self.mark)),
            cwd=str(self.workspace),
        )
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            with anyio.fail_after(timeout_s):
                await session.initialize()
            yield session

    def _argv(self, command: tuple[str, ...]) -> tuple[str, ...]:
        sandbox = self.sandbox
        if sandbox is None:
            return command
        box = sandbox.sandbox
        return bwrap_argv(
            command,
            bwrap=box.bwrap,
            roots=box.roots,
            workspace=sandbox.workspace,
            cwd=sandbox.workdir,
            network=sandbox.network,
            limits=box.limits,
            binds=(*sandbox.binds, *server_binds(command)),
            prlimit=box.prlimit,
            workdir=sandbox.workdir,
            env=tuple(marked({}, self.mark).items()),
        )

    def _start_failure(self, server: McpServer, error: BaseException) -> str:
        what = "did not start in time" if isinstance(error, TimeoutError) else _error_line(error)
        said = self._stderr_tail(server.name)
        tail = f"; its stderr ends: {said}" if said else ""
        return redact_credentials(f"MCP server {server.name!r} ({' '.join(server.command)}): {what}{tail}")

    def _stderr_tail(self, name: str) -> str:
        errlog = self._stderr.get(name)
        if errlog is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            errlog.flush()
            errlog.seek(0)
            text = errlog.read()
            return " ".join(text[-_STDERR_CHARS:].split())
        return ""

    def call(self, server: str, tool: str, arguments: Mapping[str, Any], timeout_s: float) -> ToolOutcome:
        """Call one tool; every failure (a timeout, a server that died, an ``isError`` result) is a result."""
        entry = self._sessions.get(server)
        if entry is None or self._portal is None:
            return ToolOutcome(False, f"the MCP server {server!r} is not running")
        try:
            result = self._portal.call(_call_tool, entry.session, tool, dict(arguments), timeout_s)
        except TimeoutError:
            return ToolOutcome(
                False, f"the MCP server {server!r} did not answer within {timeout_s:.0f} s", timed_out=True
            )
        except Exception as error:
            detail = _error_line(error)
            said = self._stderr_tail(server)
            tail = f" (its stderr ends: {said})" if said else ""
            return ToolOutcome(False, redact_credentials(f"the MCP server {server!r} failed: {detail}{tail}"))
        return ToolOutcome(not result.is_error, _result_text(result))

    def call_tool(self, call: ToolCall, target: McpTool, ctx: ToolContext, timeout_ms: int) -> ToolOutcome:
        """The model's call of ``target``, bounded like a bash command (``timeout_ms``, the run's deadline)."""
        budget = call_time(ctx, timeout_ms / 1000)
        if budget is None:
            return ToolOutcome(False, NOT_RUN, timed_out=True)
        arguments = mcp_arguments(call.name, call.arguments).value_or({})
        return self.call(target.server, target.name, arguments, budget.seconds)

    def close(self) -> None:
        """Stop every server, then whatever carries the run's mark; idempotent."""
        with self._lock:
            sessions, self._sessions = self._sessions, {}
            portal_cm, self._portal_cm, self._portal = self._portal_cm, None, None
        try:
            for entry in reversed(list(sessions.values())):
                with contextlib.suppress(Exception):
                    entry.exit.__exit__(None, None, None)
        finally:
            if portal_cm is not None:
                with contextlib.suppress(Exception):
                    portal_cm.__exit__(None, None, None)
            stop_marked(self.mark)
            for errlog in self._stderr.values():
                errlog.close()
            self._stderr.clear()


def start_servers(
    servers: Mapping[str, tuple[str, ...]],
    granted: frozenset[Effect],
    workspace: Path,
    env: Mapping[str, str] | None,
    sandbox: SandboxRun | None,
    timeout_s: float,
) -> McpClients | None:
    """A run's servers started and listed (``None``: it was given none); raises ``McpStartError`` when they
    may not start (``process`` not granted) or one cannot (the others are stopped first)."""
    found = mcp_servers_from(servers)
    if not found:
        return None
    problem = mcp_grant_problem((server.name for server in found), granted)
    if problem is not None:
        raise McpStartError(problem)
    clients = McpClients(
        servers=found,
        workspace=workspace,
        env=env if env is not None else tool_env(os.environ, None),
        mark=new_mark(),
        sandbox=sandbox,
    )
    clients.start(timeout_s)
    return clients


async def _list_tools(session: ClientSession, timeout_s: float) -> list[Any]:
    import anyio
    from mcp.types import PaginatedRequestParams

    tools: list[Any] = []
    cursor: str | None = None
    with anyio.fail_after(timeout_s):
        while True:
            params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools


async def _call_tool(session: ClientSession, tool: str, arguments: dict[str, Any], timeout_s: float) -> Any:
    import anyio

    with anyio.fail_after(timeout_s):
        return await session.call_tool(tool, arguments)


def _error_line(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_error_line(inner) for inner in error.exceptions)
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _result_text(result: Any) -> str:
    """What the model reads of a tool result."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            size = len(getattr(block, "data", "") or "") * 3 // 4
            parts.append(f"[{kind}: {getattr(block, 'mime_type', '?')}, about {size} bytes]")
        elif kind == "resource_link":
            parts.append(f"[resource link: {getattr(block, 'uri', '')}]")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if isinstance(text, str) else f"[resource: {getattr(resource, 'uri', '')}]")
        else:
            parts.append(f"[{kind or 'unknown'} content]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, sort_keys=True, ensure_ascii=False))
    return "\n".join(parts) if parts else "(the tool returned no content)"


def server_binds(command: tuple[str, ...]) -> tuple[Bind, ...]:
    """What a sandboxed server's command needs bound read-only: each absolute path in it that exists on the
    host outside what the sandbox binds anyway: its directory, for a file (for a program in a ``bin``
    directory, the installation around it: a virtual environment, a pyenv or node prefix), and the same for
    the file the path links to; each once."""
    seen: dict[str, None] = {}
    for part in command:
        if not part.startswith("/") or "\0" in part:
            continue
        path = Path(os.path.normpath(part))
        if not path.exists():
            continue
        for found in (path, path.resolve()):
            place = found if found.is_dir() else found.parent
            place = place.parent if place.name == "bin" else place
            text = str(place)
            visible = any(text == root or text.startswith(root + "/") for root in BIND_ROOTS)
            # inside /tmp or /home is fine: the binds come after the sandbox's own /tmp and HOME (a checkout
            # or a venv under /tmp, as CI's clone); the sandbox's other places and mount points are not
            own = sandbox_path_problem(text) is not None and not text.startswith(("/tmp/", "/home/"))
            if not visible and not own:
                seen.setdefault(text)
    return tuple(Bind(source=place, target=place, writable=False) for place in seen)
