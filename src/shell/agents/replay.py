"""Record and replay of an external agent's model calls (``alisio.core.agents.cassette``).

- ``CassetteReplayer``: the proxy's answers in replay mode, matched by normalised request (the first call not
  played yet with the same fingerprint, so calls an agent makes at once may come in either order); the
  recorded response has ``<workspace>`` put back as this run's workspace path;
- ``recorded_cassette``: a finished run's calls as a cassette (requests normalised, responses with the
  workspace path as ``<workspace>``): the calls that reached the provider, as it answered them (under
  ``--faults``, a call an injected fault answered is left out, and a cut one keeps the whole answer: the
  replay meets the same faults, ``alisio.shell.agents.faults``);
- ``read_agent_cassettes`` / ``write_agent_cassettes``: ``<cassettes>/<agent>/<task>.jsonl``, every one read
  before the first run (a missing or unreadable one is a ``CommandError``); written only when none is refused,
  each atomically.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from returns.result import Failure, Success

from alisio.core.agents.cassette import (
    AGENT_CASSETTE_FORMAT,
    MAX_AGENT_CASSETTE_BYTES,
    AgentCall,
    AgentCassette,
    AgentCassetteHeader,
    decode_agent_cassette,
    encode_agent_cassette,
    match_agent_call,
)
from alisio.core.agents.run import normalized_body, request_fingerprint
from alisio.core.lab.runs.records import Divergence
from alisio.core.lab.suites.suite import Task
from alisio.core.replay.cassette import divergence_message
from alisio.core.replay.fingerprint import WORKSPACE, Rules
from alisio.shell.agents.proxy import Call
from alisio.shell.errors import CommandError

__all__ = [
    "CassetteReplayer",
    "agent_cassette_path",
    "read_agent_cassettes",
    "recorded_cassette",
    "write_agent_cassettes",
]

MAX_CASSETTE_BYTES = 1 << 30
"""The most an agent's cassette may hold when read (as a report file): a FIFO or ``/dev/zero`` is refused."""


def agent_cassette_path(directory: Path, agent: str, task_id: str) -> Path:
    """``<cassettes>/<agent>/<task>.jsonl``."""
    return directory / agent / f"{task_id}.jsonl"


class CassetteReplayer:
    """Serves one run's model calls from its cassette; keeps the first divergence."""

    def __init__(self, cassette: AgentCassette, rules: Rules, workspace: str) -> None:
        self.cassette, self.rules, self.workspace = cassette, rules, workspace
        self.played: set[int] = set()
        self.divergence: Divergence | None = None
        self._lock = threading.Lock()

    def answer(self, body: bytes) -> tuple[int, str, bytes] | str:
        request = normalized_body(body, self.rules)
        fingerprint = request_fingerprint(body, self.rules)
        with self._lock:
            match match_agent_call(self.cassette, frozenset(self.played), request, fingerprint):
                case Success(call):
                    self.played.add(call.call)
                    response = call.response.replace(WORKSPACE, self.workspace)
                    return call.status, call.content_type, response.encode()
                case Failure(divergence):
                    self.divergence = self.divergence or divergence
                    return f"diverged at {divergence_message(divergence)}"
        raise AssertionError("unreachable")  # pragma: no cover


def recorded_cassette(
    header: AgentCassetteHeader, calls: Sequence[Call], rules: Rules, workspace_rules: Rules
) -> AgentCassette:
    """A finished run's calls as a cassette (see the module docstring for what is kept and normalised)."""
    reached = [call for call in calls if not call.injected]
    recorded = tuple(
        AgentCall(
            call=index,
            path="",
            request=normalized_body(call.request, rules),
            fingerprint=request_fingerprint(call.request, rules),
            status=call.status,
            content_type=call.content_type,
            response=normalized_body(call.response if call.whole is None else call.whole, workspace_rules),
        )
        for index, call in enumerate(reached)
    )
    return AgentCassette(header=header, calls=recorded)


def read_agent_cassettes(directory: Path, agent: str, tasks: Sequence[Task]) -> dict[str, AgentCassette]:
    """Every selected task's cassette for ``agent``.

    Raises:
        CommandError: a missing or unreadable cassette (naming the file and how to record it), one line each.
    """
    from alisio.shell.harness.bounded_read import read_bounded

    found: dict[str, AgentCassette] = {}
    problems: list[str] = []
    for task in tasks:
        path = agent_cassette_path(directory, agent, task.id)
        try:
            data = read_bounded(path, MAX_CASSETTE_BYTES, "a cassette")  # never a FIFO or /dev/zero
        except OSError as error:
            why = error.strerror or str(error)
            problems.append(f"{path}: {why} (record it with eval record --agent {agent} --tasks {task.id})")
            continue
        match decode_agent_cassette(data, str(path)):
            case Success(cassette):
                found[task.id] = cassette
            case Failure(problem):
                problems.append(str(problem))
    if problems:
        raise CommandError(*problems, "nothing was run")
    return found


def write_agent_cassettes(
    directory: Path,
    agent: str,
    cassettes: dict[str, AgentCassette],
    known: tuple[tuple[str, str], ...],
    say: Callable[[str], None],
) -> list[tuple[str, Path, int, int]]:
    """Write each cassette (none when one is refused); ``(task, path, calls, size)`` of each written.

    Raises:
        CommandError: a cassette holds a credential of the environment, exceeds the size limit, or cannot be
            written (nothing is written then).
    """
    encoded = {task_id: encode_agent_cassette(cassette) for task_id, cassette in sorted(cassettes.items())}
    problems = [
        f"task {task_id}: the cassette holds the value of {name}"
        for task_id, data in encoded.items()
        for name, value in known
        if value and value.encode() in data
    ]
    problems += [
        f"task {task_id}: the cassette is {len(data) >> 10} KB, over the {MAX_AGENT_CASSETTE_BYTES >> 20} MB limit"
        for task_id, data in encoded.items()
        if len(data) > MAX_AGENT_CASSETTE_BYTES
    ]
    if problems:
        raise CommandError(
            *(f"refusing to write a cassette: {line}" for line in problems), "no cassette was written"
        )
    written = []
    try:
        for task_id, data in encoded.items():
            path = agent_cassette_path(directory, agent, task_id)
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_suffix(".jsonl.tmp")
            temporary.write_bytes(data)
            temporary.replace(path)
            written.append((task_id, path, len(cassettes[task_id].calls), len(data)))
    except OSError as error:
        raise CommandError(f"cannot write the cassettes in {directory}: {error.strerror or error}") from None
    say(f"{len(written)} {AGENT_CASSETTE_FORMAT} cassette(s) of agent {agent} in {directory / agent}")
    return written
