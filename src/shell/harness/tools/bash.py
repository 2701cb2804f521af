"""The ``bash`` tool: run one ``bash -c`` command, bounded in time and output, and never left running.

Rules:
- the command runs in the workspace, in a new session (its own process group), with stdin from /dev/null and
  stdout+stderr merged into one unlinked temporary file (one file descriptor, so the order is kept, and a
  backgrounded grandchild that keeps the descriptor open cannot hang the read, as it would with a pipe);
- at the timeout (or the run's deadline, whichever is first) the whole group gets SIGTERM, then SIGKILL after
  a short grace; when the command returns by itself, whatever it left running in its group is SIGKILLed
  (``stopped_background`` says so, so the model learns that a server started with ``&`` is not running);
- the command's environment carries the run's mark (``processes.MARK_VARIABLE``); when it returns or is
  killed, every process still carrying the mark is SIGKILLed too, also one that left the group (``setsid``,
  a double-forked daemon), and the result names them;
- output past ``max_output_bytes`` kills the command (a runaway ``yes`` must not fill the disk);
- long output keeps its head and tail and says exactly how many characters were cut;
- a command with a NUL character is refused (no process can receive one).

Without a sandbox the command runs with the user's privileges, and a process that drops the mark from its
environment (``env -i``) escapes the sweep. With ``--sandbox bwrap`` (``ToolContext.sandbox``) it runs inside
bubblewrap (``alisio.shell.sandbox``): in ``/workspace``, on a read-only root, without network unless the
``external`` effect is granted, within the sandbox's limits, and nothing it starts outlives it; what the
sandbox refused, when the output shows it, is the result's ``denied`` (a ``sandbox_denied`` incident).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Final, Literal

from alisio.core.harness.sandbox import denial_in
from alisio.core.harness.tooldefs import BashArgs
from alisio.shell import cancel
from alisio.shell.harness.tools.context import NOT_RUN, ToolContext, ToolOutcome, remaining_s
from alisio.shell.harness.tools.processes import StoppedProcess, marked, stop_marked
from alisio.shell.sandbox.cgroups import Launch

if TYPE_CHECKING:
    from alisio.shell.sandbox.bwrap import SandboxRun

__all__ = [
    "CommandResult",
    "GroupEnd",
    "bash_tool",
    "read_output",
    "run_command",
    "supervise_group",
    "truncate_middle",
]

_POLL_S: Final = 0.05
_CHUNK: Final = 1 << 20
_CONTINUATION_BYTES: Final = bytes(range(0x80, 0xC0))

KillCause = Literal["timeout", "deadline", "output"]


@dataclass(frozen=True, slots=True)
class CommandResult:
    exit_code: int | None
    """``None`` when the command was killed."""
    output: str
    """stdout and stderr merged, already truncated to the character limit."""
    killed: KillCause | None
    duration_ms: int
    stopped_background: bool = False
    """The command returned by itself but left processes running in its group, which were killed."""
    stopped_marked: tuple[StoppedProcess, ...] = ()
    """Processes outside its group that still carried the run's mark when it ended, which were killed."""


@dataclass(frozen=True, slots=True)
class GroupEnd:
    """How a supervised process group ended."""

    killed: Literal["timeout", "output"] | None
    """Why it was killed, or ``None`` when the leader ended by itself."""
    stopped_background: bool
    """The leader ended by itself but left processes running in its group, which were killed."""
    stopped_marked: tuple[StoppedProcess, ...] = ()
    """Processes outside the group carrying the mark, which were killed (``stop_marked``)."""


def truncate_middle(text: str, limit: int) -> str:
    """Keep the first and last ``limit // 2`` characters of ``text`` and say how many were cut between."""
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    return _cut(text[:head], text[len(text) - tail :] if tail else "", len(text) - head - tail)


def _cut(head: str, tail: str, cut: int) -> str:
    return f"{head}\n[... {cut} characters cut ...]\n{tail}"


def _count_chars(file: IO[bytes], start: int, length: int) -> int:
    """UTF-8 code points in ``length`` bytes from ``start`` (bytes that do not continue a character)."""
    file.seek(start)
    count = 0
    while length > 0:
        chunk = file.read(min(_CHUNK, length))
        if not chunk:
            break
        length -= len(chunk)
        count += len(chunk.translate(None, _CONTINUATION_BYTES))
    return count


def read_output(file: IO[bytes], limit_chars: int, max_decode_bytes: int) -> str:
    """The captured output as text, truncated to ``limit_chars`` with the exact count of cut characters.

    Output up to ``max_decode_bytes`` (at least ``8 * limit_chars + 8``, so head and tail never overlap) is
    decoded whole; past that, only the head and tail are decoded and the characters in between are counted
    without decoding them.
    """
    size = os.fstat(file.fileno()).st_size
    if size <= max_decode_bytes:
        file.seek(0)
        return truncate_middle(file.read().decode("utf-8", "replace"), limit_chars)
    head_chars = limit_chars // 2
    tail_chars = limit_chars - head_chars
    window = 4 * limit_chars + 4  # a UTF-8 character is at most 4 bytes
    file.seek(0)
    head = file.read(window).decode("utf-8", "replace")[:head_chars]
    file.seek(size - window)
    tail_text = file.read(window).decode("utf-8", "replace")
    tail = tail_text[len(tail_text) - tail_chars :] if tail_chars else ""
    total = _count_chars(file, 0, size)
    return _cut(head, tail, total - len(head) - len(tail))


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    """Whether any process is left in the group (signal 0 only checks; an unreaped zombie counts too)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _stop(process: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the process group, wait up to ``grace_s`` for the leader, then SIGKILL whatever is left."""
    _signal_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace_s)
    _signal_group(process.pid, signal.SIGKILL)
    process.wait()


class _ExitWatch:
    """Waits for a process to end and notices at once when it does.

    ``Popen.wait(timeout)`` polls with sleeps that double up to 50 ms, so a command that takes 25 ms is seen
    to end at about 31 ms, one of 35 ms at about 63 ms. A pidfd (Linux 5.3) becomes readable when the
    process ends: ``ended`` polls it, and falls back on ``Popen.wait`` where there is none.
    """

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process
        self._poll: select.poll | None = None
        self._pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):  # no pidfd_open: not Linux, or an older kernel
            self._pidfd = os.pidfd_open(process.pid)
            self._poll = select.poll()
            self._poll.register(self._pidfd, select.POLLIN)

    def ended(self, timeout_s: float) -> bool:
        """Whether the process ended (and was reaped) within ``timeout_s``."""
        if self._poll is None:
            try:
                self._process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                return False
            return True
        if not self._poll.poll(max(timeout_s, 0.0) * 1000):
            return False
        self._process.wait()  # it has ended: this only reaps it
        return True

    def close(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


_DRAIN_S: Final = 1.0


def _drain(pgid: int) -> None:
    """Wait (bounded) for a sandbox's dying group to empty, then SIGKILL whatever is left of it."""
    give_up = time.monotonic() + _DRAIN_S
    while _group_alive(pgid) and time.monotonic() < give_up:
        time.sleep(0.002)
    _signal_group(pgid, signal.SIGKILL)


def supervise_group(
    process: subprocess.Popen[bytes],
    files: tuple[IO[bytes], ...],
    *,
    timeout_s: float,
    max_output_bytes: int,
    grace_s: float,
    poll_s: float = _POLL_S,
    mark: str | None = None,
    sandboxed: bool = False,
) -> GroupEnd:
    """Wait for ``process`` (the leader of its own group) and leave nothing of its group running.

    The group is stopped (SIGTERM, then SIGKILL after ``grace_s``) at ``timeout_s``, when one of ``files``
    (its captured output) passes ``max_output_bytes``, or on KeyboardInterrupt (Ctrl-C on the main thread, or
    ``alisio.shell.cancel.Cancelled`` on a worker; re-raised); when the process
    ends by itself, whatever it left running in its group is SIGKILLed. With a ``mark`` (which the process's
    environment carries), every other process still carrying it is SIGKILLed too.

    ``sandboxed``: the leader is bwrap, which returns the command's exit status while its PID namespace is
    still being torn down (every process inside is being killed): the group is given up to ``_DRAIN_S`` to
    empty before it is SIGKILLed, and ``stopped_background`` is never reported (what the command left
    running cannot be told apart from the sandbox's own processes; it dies with the namespace either way).
    """
    give_up = time.monotonic() + timeout_s
    killed: Literal["timeout", "output"] | None = None
    exit_watch = _ExitWatch(process)
    try:
        while True:
            remaining = give_up - time.monotonic()
            if remaining <= 0:
                killed = "timeout"
                break
            cancel.check()  # a cancelled run stops its command too (the finally below kills the group)
            if exit_watch.ended(min(remaining, poll_s)):
                break
            if any(os.fstat(file.fileno()).st_size > max_output_bytes for file in files):
                killed = "output"
                break
    finally:
        exit_watch.close()
        # also reached on KeyboardInterrupt: never leave the command's group running
        if process.returncode is None:
            _stop(process, grace_s)
            stopped_background = False
        elif sandboxed:
            stopped_background = False
            _drain(process.pid)
        else:
            stopped_background = _group_alive(process.pid)
            _signal_group(process.pid, signal.SIGKILL)  # background jobs it left behind
        escaped = stop_marked(mark, spare_group=process.pid) if mark else ()
    return GroupEnd(killed=killed, stopped_background=stopped_background, stopped_marked=escaped)


def _launch(argv: list[str], sandbox: SandboxRun | None) -> contextlib.AbstractContextManager[Launch]:
    return contextlib.nullcontext(Launch(argv)) if sandbox is None else sandbox.command(argv)


def run_command(
    command: str,
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout_s: float,
    timeout_cause: Literal["timeout", "deadline"] = "timeout",
    grace_s: float = 0.5,
    limit_chars: int = 20_000,
    max_output_bytes: int = 8 << 20,
    mark: str | None = None,
    sandbox: SandboxRun | None = None,
) -> CommandResult:
    """Run ``bash -c command`` in ``cwd`` and return its exit code and (truncated) merged output.

    Args:
        timeout_s: kill the command's process group after this many seconds.
        timeout_cause: what to report when that happens (the tool's timeout or the run's deadline).
        grace_s: how long SIGTERM gets before SIGKILL.
        limit_chars: the most output characters returned (head and tail are kept).
        max_output_bytes: kill the command when its output passes this size.
        mark: set as ``MARK_VARIABLE`` in the command's environment; processes still carrying it when the
            command ends are stopped (``CommandResult.stopped_marked``).
        sandbox: run it inside this run's sandbox, in ``/workspace`` (``cwd`` is then the host workspace).

    Raises:
        OSError: bash could not be started (missing, or ``cwd`` gone).
    """
    started = time.monotonic()
    with _launch(["bash", "-c", command], sandbox) as launch, tempfile.TemporaryFile() as out:
        process = launch.popen(
            cwd=cwd, env=marked(env, mark) if mark else dict(env), stdout=out, stderr=subprocess.STDOUT
        )
        end = supervise_group(
            process,
            (out,),
            timeout_s=timeout_s,
            max_output_bytes=max_output_bytes,
            grace_s=grace_s,
            mark=mark,
            sandboxed=sandbox is not None,
        )
        duration_ms = round((time.monotonic() - started) * 1000)
        output = read_output(out, limit_chars, max(max_output_bytes, 8 * limit_chars + 8))
    cause: KillCause | None = timeout_cause if end.killed == "timeout" else end.killed
    return CommandResult(
        exit_code=None if end.killed else process.returncode,
        output=output,
        killed=cause,
        duration_ms=duration_ms,
        stopped_background=end.stopped_background,
        stopped_marked=end.stopped_marked,
    )


# --- the tool -----------------------------------------------------------------------------------------------

_BACKGROUND_NOTE: Final = (
    "\n[processes the command left running in the background were stopped when it returned: nothing a bash "
    "call starts keeps running after it; start a server and use it in the same command]"
)


def _escaped_note(stopped: tuple[StoppedProcess, ...]) -> str:
    if not stopped:
        return ""
    names = ", ".join(map(str, stopped[:5])) + (", ..." if len(stopped) > 5 else "")
    plural = "process" if len(stopped) == 1 else "processes"
    return (
        f"\n[stopped {len(stopped)} {plural} the command had left running outside its process group (setsid, "
        f"a daemon): {names}; nothing a bash call starts keeps running after it]"
    )


def bash_tool(args: BashArgs, ctx: ToolContext) -> ToolOutcome:
    """Run ``args.command`` in the workspace with the run's limits, mark and environment."""
    if "\0" in args.command:
        return ToolOutcome(
            False, "refused: the command contains a NUL character, which no program can receive; remove it"
        )
    timeout_s = (args.timeout_ms or ctx.bash_default_timeout_ms) / 1000
    remaining = remaining_s(ctx)
    cause: Literal["timeout", "deadline"] = "timeout"
    if remaining is not None and remaining < timeout_s:
        if remaining <= 0:
            return ToolOutcome(False, NOT_RUN, timed_out=True)
        timeout_s, cause = remaining, "deadline"
    result = run_command(
        args.command,
        cwd=ctx.root,
        env=ctx.env or {},
        timeout_s=timeout_s,
        timeout_cause=cause,
        grace_s=ctx.bash_kill_grace_s,
        limit_chars=ctx.bash_output_limit_chars,
        max_output_bytes=ctx.bash_max_output_bytes,
        mark=ctx.process_mark,
        sandbox=ctx.sandbox,
    )
    denied = None if ctx.sandbox is None else denial_in(result.output, network=ctx.sandbox.network)
    output = (result.output or "(no output)") + _escaped_note(result.stopped_marked)
    match result.killed:
        case None:
            note = _BACKGROUND_NOTE if result.stopped_background else ""
            text = f"exit code: {result.exit_code}\n{output}{note}"
            return ToolOutcome(result.exit_code == 0, text, denied=denied)
        case "timeout":
            status = f"killed after {result.duration_ms} ms: the command passed its timeout of {round(timeout_s * 1000)} ms"
        case "deadline":
            status = f"killed after {result.duration_ms} ms: the run's time budget (maxWallMs) ran out"
        case "output":
            return ToolOutcome(
                False,
                f"killed: the output passed {ctx.bash_max_output_bytes} bytes; redirect it to a file\n{output}",
                denied=denied,
            )
    return ToolOutcome(False, f"{status}\n{output}", timed_out=True, denied=denied)
