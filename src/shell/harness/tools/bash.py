"""Run one ``bash -c`` command for the ``bash`` tool: bounded in time and output, and never left running.

Rules:
- the command runs in the workspace, in a new session (its own process group), with stdin from /dev/null and
  stdout+stderr merged into one unlinked temporary file (one file descriptor, so the order is kept, and a
  backgrounded grandchild that keeps the descriptor open cannot hang the read, as it would with a pipe);
- at the timeout (or the run's deadline, whichever is first) the whole group gets SIGTERM, then SIGKILL after
  a short grace; when the command returns by itself, whatever it left running in its group is SIGKILLed
  (``stopped_background`` says so, so the model learns that a server started with ``&`` is not running);
- output past ``max_output_bytes`` kills the command (a runaway ``yes`` must not fill the disk);
- long output keeps its head and tail and says exactly how many characters were cut.

Not a sandbox: the command runs with the user's privileges and a process that leaves the group (setsid)
escapes the kill.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Final, Literal

from alisio.shell import cancel

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


def supervise_group(
    process: subprocess.Popen[bytes],
    files: tuple[IO[bytes], ...],
    *,
    timeout_s: float,
    max_output_bytes: int,
    grace_s: float,
    poll_s: float = _POLL_S,
) -> tuple[Literal["timeout", "output"] | None, bool]:
    """Wait for ``process`` (the leader of its own group) and leave nothing of its group running.

    The group is stopped (SIGTERM, then SIGKILL after ``grace_s``) at ``timeout_s``, when one of ``files``
    (its captured output) passes ``max_output_bytes``, or on KeyboardInterrupt (Ctrl-C on the main thread, or
    ``alisio.shell.cancel.Cancelled`` on a worker; re-raised); when the process
    ends by itself, whatever it left running in its group is SIGKILLed.

    Returns:
        Why it was killed (``"timeout"``, ``"output"``, or ``None`` when it ended by itself), and whether it
        left processes running in its group (background jobs) that were killed.
    """
    give_up = time.monotonic() + timeout_s
    killed: Literal["timeout", "output"] | None = None
    try:
        while True:
            remaining = give_up - time.monotonic()
            if remaining <= 0:
                killed = "timeout"
                break
            cancel.check()  # a cancelled run stops its command too (the finally below kills the group)
            try:
                process.wait(timeout=min(remaining, poll_s))
                break
            except subprocess.TimeoutExpired:
                if any(os.fstat(file.fileno()).st_size > max_output_bytes for file in files):
                    killed = "output"
                    break
    finally:
        # also reached on KeyboardInterrupt: never leave the command's group running
        if process.returncode is None:
            _stop(process, grace_s)
            stopped_background = False
        else:
            stopped_background = _group_alive(process.pid)
            _signal_group(process.pid, signal.SIGKILL)  # background jobs it left behind
    return killed, stopped_background


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
) -> CommandResult:
    """Run ``bash -c command`` in ``cwd`` and return its exit code and (truncated) merged output.

    Args:
        timeout_s: kill the command's process group after this many seconds.
        timeout_cause: what to report when that happens (the tool's timeout or the run's deadline).
        grace_s: how long SIGTERM gets before SIGKILL.
        limit_chars: the most output characters returned (head and tail are kept).
        max_output_bytes: kill the command when its output passes this size.

    Raises:
        OSError: bash could not be started (missing, or ``cwd`` gone).
    """
    started = time.monotonic()
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
        killed, stopped_background = supervise_group(
            process, (out,), timeout_s=timeout_s, max_output_bytes=max_output_bytes, grace_s=grace_s
        )
        duration_ms = round((time.monotonic() - started) * 1000)
        output = read_output(out, limit_chars, max(max_output_bytes, 8 * limit_chars + 8))
    cause: KillCause | None = timeout_cause if killed == "timeout" else killed
    return CommandResult(
        exit_code=None if killed else process.returncode,
        output=output,
        killed=cause,
        duration_ms=duration_ms,
        stopped_background=stopped_background,
    )
