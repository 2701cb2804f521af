"""Gather the facts each verifier of a task needs, and let ``alisio.core.lab.judges.verify`` judge them.

``run_verifiers(task, workspace, events)`` returns one ``VerifierResult`` per verifier, in suite order. It
never raises for anything a run can cause: a command that does not start, a path outside the workspace, an
unreadable file or tree are ``error`` results (facts that could not be gathered), never exceptions.

How facts are gathered:
- command: the argv runs directly (no shell) in the workspace (or its ``cwd`` below it, resolved inside the
  workspace), stdin from /dev/null, in a new session (its own process group), with the environment of the
  ``bash`` tool (``alisio.core.harness.toolenv.scrubbed_env``: no variables that look like secrets). At
  ``timeoutMs`` the whole group gets SIGTERM, then SIGKILL after a short grace; when the command ends by
  itself whatever it left running in its group is SIGKILLed. Like a bash command, it carries a mark of its
  own in its environment (``alisio.shell.harness.tools.processes``), and whatever still carries it when the
  command ends (a daemon that left the group with ``setsid``) is SIGKILLed too. stdout and stderr go to unlinked temporary files (a grandchild
  holding them cannot hang the read); stdout is kept whole up to ``max_output_bytes`` (past it the command
  is killed and fails), stderr only as its tail.
- file-equals / file-contains / file-absent: the path is resolved inside the workspace with every symlink
  followed (``alisio.shell.harness.tools.paths``); a path that leads outside is an error.
- tree-diff-within: the tree is snapshot once, *before* any verifier runs, so what a command verifier writes
  (a report file, bytecode) is never blamed on the agent; it is compared with ``Workspace.before``.
- tool-sequence: read off the event log alone.

Without a sandbox a command verifier runs with the user's privileges (the spec, "Limits"). With
``--sandbox bwrap`` it runs inside bubblewrap like a bash command (``alisio.shell.sandbox``), in
``/workspace`` (or the task's ``sandbox.workdir``; or its ``cwd`` below it), with the task's
``sandbox.verifierMounts``; what its output shows the sandbox refused is passed to ``on_denied`` (the lab
records a ``sandbox_denied`` incident).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final, assert_never

from alisio.core.harness.events import Event
from alisio.core.harness.sandbox import denial_in, inside_path
from alisio.core.harness.toolenv import scrubbed_env
from alisio.core.lab.judges.verify import (
    AgentTools,
    CommandFacts,
    FileFacts,
    FileFound,
    FileMissing,
    FileUnusable,
    NotAFile,
    TreeSnapshot,
    judge_command,
    judge_file,
    judge_tool_sequence,
    judge_tree_diff,
)
from alisio.core.lab.runs.records import VerifierResult, VerifierStatus
from alisio.core.lab.suites.suite import (
    CommandVerifier,
    FileAbsentVerifier,
    FileContainsVerifier,
    FileEqualsVerifier,
    Task,
    ToolSequenceVerifier,
    TreeDiffWithinVerifier,
)
from alisio.shell.harness.tools.bash import supervise_group
from alisio.shell.harness.tools.paths import WorkspacePathError, real_root, resolve_in_workspace
from alisio.shell.harness.tools.processes import marked, new_mark
from alisio.shell.lab.workspace import Workspace, snapshot_tree
from alisio.shell.sandbox.cgroups import Launch

if TYPE_CHECKING:
    from alisio.shell.sandbox.bwrap import SandboxRun

__all__ = ["MAX_OUTPUT_BYTES", "gather_file_facts", "run_argv", "run_verifiers"]

MAX_OUTPUT_BYTES: Final = 4 << 20
"""A command verifier writing more than this (stdout or stderr) is killed and fails."""
_STDERR_TAIL_BYTES: Final = 4096
_POLL_S: Final = 0.02


def run_verifiers(
    task: Task,
    workspace: Workspace,
    events: tuple[Event, ...],
    *,
    env: Mapping[str, str] | None = None,
    grace_s: float = 0.5,
    agent: AgentTools | None = None,
    sandbox: SandboxRun | None = None,
    on_denied: Callable[[str, str], None] = lambda verifier, what: None,
) -> tuple[VerifierResult, ...]:
    """Judge every verifier of ``task`` against ``workspace`` and the run's ``events``, in suite order.

    Args:
        env: the environment of command verifiers; ``None`` means ``scrubbed_env(os.environ)``.
        grace_s: how long a timed-out command's group gets between SIGTERM and SIGKILL.
        sandbox: run command verifiers inside this sandbox (``None``: as plain subprocesses).
        on_denied: called with a command verifier's id and what the sandbox refused it, when its output
            shows it.
    """
    root = real_root(workspace.path)
    command_env = dict(env) if env is not None else scrubbed_env(os.environ)
    after = _after_snapshot(workspace) if _has_tree_diff(task) else None
    results: list[VerifierResult] = []
    for verifier in task.verifiers:
        match verifier:
            case CommandVerifier():
                facts = _command_facts(verifier, root, command_env, grace_s, sandbox)
                results.append(judge_command(verifier, facts))
                if sandbox is not None and facts.started:
                    denied = denial_in(facts.stdout + "\n" + facts.stderr_excerpt, network=sandbox.network)
                    if denied is not None:
                        on_denied(verifier.id, denied)
            case FileEqualsVerifier() | FileContainsVerifier() | FileAbsentVerifier():
                results.append(judge_file(verifier, gather_file_facts(root, verifier.path)))
            case TreeDiffWithinVerifier():
                if isinstance(after, TreeSnapshot):
                    results.append(judge_tree_diff(verifier, workspace.before, after))
                else:
                    detail = f"cannot snapshot the workspace: {after}"
                    results.append(
                        VerifierResult(
                            id=verifier.id,
                            kind="tree-diff-within",
                            status=VerifierStatus.ERROR,
                            detail=detail,
                        )
                    )
            case ToolSequenceVerifier():
                results.append(judge_tool_sequence(verifier, events, agent))
            case _:  # a new kind in the suite model: mypy names it here, and a run never skips it
                assert_never(verifier)
    return tuple(results)


def _has_tree_diff(task: Task) -> bool:
    return any(isinstance(verifier, TreeDiffWithinVerifier) for verifier in task.verifiers)


def _after_snapshot(workspace: Workspace) -> TreeSnapshot | str:
    """The workspace's tree now, or why it could not be read."""
    try:
        return snapshot_tree(workspace.path)
    except OSError as error:
        return _os_cause(error)


def _os_cause(error: OSError) -> str:
    where = f": {error.filename}" if error.filename else ""
    return f"{error.strerror or error}{where}"


def _command_facts(
    verifier: CommandVerifier,
    root: str,
    env: Mapping[str, str],
    grace_s: float,
    sandbox: SandboxRun | None = None,
) -> CommandFacts:
    cwd, relative = root, "."
    if verifier.cwd is not None:
        try:
            resolved = resolve_in_workspace(root, verifier.cwd)
        except WorkspacePathError:
            return CommandFacts(
                started=False, start_error=f"cwd {verifier.cwd!r} resolves outside the workspace"
            )
        cwd, relative = resolved.absolute, resolved.relative
        if not os.path.isdir(cwd):
            return CommandFacts(started=False, start_error=f"working directory {cwd} does not exist")
    return run_argv(
        verifier.command,
        cwd=cwd,
        env=env,
        timeout_s=verifier.timeout_ms / 1000,
        grace_s=grace_s,
        sandbox=sandbox,
        sandbox_cwd=inside_path(relative, sandbox.workdir) if sandbox is not None else None,
    )


def run_argv(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout_s: float,
    grace_s: float = 0.5,
    max_output_bytes: int = MAX_OUTPUT_BYTES,
    sandbox: SandboxRun | None = None,
    sandbox_cwd: str | None = None,
) -> CommandFacts:
    """Run ``argv`` (no shell) in ``cwd`` and return what happened as ``CommandFacts``; never raises OSError.

    The process gets its own process group, which is killed (with its children) at ``timeout_s`` or when
    its output passes ``max_output_bytes``, and SIGKILLed after it exits (leftover background children);
    processes that left the group but still carry the command's mark are SIGKILLed as well. With a
    ``sandbox`` it runs inside it, in ``sandbox_cwd`` (default: the sandbox's workdir).
    """
    started = time.monotonic()
    mark = new_mark()
    wrapped = (
        contextlib.nullcontext(Launch(list(argv))) if sandbox is None else sandbox.command(argv, sandbox_cwd)
    )
    with wrapped as launch, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            process = launch.popen(cwd=cwd, env=marked(env, mark), stdout=out, stderr=err)
        except (OSError, ValueError) as error:  # ValueError: a NUL character in an argument
            return CommandFacts(started=False, start_error=_start_cause(error, argv, cwd))
        killed = supervise_group(
            process,
            (out, err),
            timeout_s=timeout_s,
            max_output_bytes=max_output_bytes,
            grace_s=grace_s,
            poll_s=_POLL_S,
            mark=mark,
            sandboxed=sandbox is not None,
        ).killed
        duration_ms = round((time.monotonic() - started) * 1000)
        stdout = _read_head(out, max_output_bytes)
        stderr = _read_tail(err, _STDERR_TAIL_BYTES)
    if sandbox is not None and (cause := _not_started_inside(process.returncode, stderr, argv)) is not None:
        return CommandFacts(started=False, start_error=cause)
    return CommandFacts(
        started=True,
        exit_code=None if killed else process.returncode,
        stdout=stdout,
        stderr_excerpt=stderr,
        timed_out=killed == "timeout",
        output_limit_exceeded=killed == "output",
        duration_ms=duration_ms,
    )


_EXEC_FAILED = "prlimit: failed to execute "


def _not_started_inside(code: int | None, stderr: str, argv: Sequence[str]) -> str | None:
    """Why the command could not start inside the sandbox (prlimit, which execs it, says so), or ``None``:
    the same ``error`` result as outside, not a failing check."""
    if code not in (126, 127) or not stderr.startswith(_EXEC_FAILED):
        return None
    program = argv[0] if argv else ""
    if "No such file or directory" in stderr:
        return f"executable {program!r} not found in the sandbox (only /usr, /bin, /lib* and /etc are there)"
    return f"executable {program!r} cannot be started in the sandbox: {stderr.strip().split(': ')[-1]}"


def _start_cause(error: OSError | ValueError, argv: Sequence[str], cwd: str) -> str:
    program = argv[0] if argv else ""
    if isinstance(error, ValueError):
        return f"{program!r}: cannot be started: {error}"
    if isinstance(error, FileNotFoundError) and error.filename == cwd:
        return f"working directory {cwd} does not exist"
    if isinstance(error, FileNotFoundError):
        return f"executable {program!r} not found (not on PATH, or no such file)"
    if isinstance(error, PermissionError):
        return f"executable {program!r}: permission denied"
    return f"{program!r}: {error.strerror or error}"


def _read_head(file: IO[bytes], limit: int) -> str:
    file.seek(0)
    return file.read(limit).decode("utf-8", "replace")


def _read_tail(file: IO[bytes], limit: int) -> str:
    size = os.fstat(file.fileno()).st_size
    file.seek(max(0, size - limit))
    return file.read(limit).decode("utf-8", "replace")


def gather_file_facts(root: str, path: str) -> FileFacts:
    """What is at ``path`` (relative to the workspace's real ``root``), every symlink followed inside it.

    Returns:
        ``FileUnusable`` when the path (or a link on it) leads outside the workspace or it cannot be read;
        ``FileMissing`` when nothing exists there; ``NotAFile`` for a directory, a dangling link or a
        special file; ``FileFound`` with the bytes of a regular file.
    """
    try:
        resolved = resolve_in_workspace(root, path)
    except WorkspacePathError:
        return FileUnusable(reason="resolves outside the workspace")
    try:
        if not os.path.lexists(os.path.join(root, path)):
            return FileMissing()
        try:
            mode = os.stat(resolved.absolute).st_mode
        except FileNotFoundError:
            return NotAFile(what="a dangling symlink")
        if stat.S_ISDIR(mode):
            return NotAFile(what="a directory")
        if not stat.S_ISREG(mode):
            return NotAFile(what="a special file")
        return FileFound(data=Path(resolved.absolute).read_bytes())
    except OSError as error:
        return FileUnusable(reason=f"cannot be read: {error.strerror or error}")
