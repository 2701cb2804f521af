"""Record and replay as lab plans: the hooks that wrap each run's provider, and recording a suite's cassettes.

- ``recording_plan`` wraps any provider plan (live or scripted): each run's provider becomes a
  ``RecordingProvider`` with the run's own fingerprint rules; once the lab ran each task once,
  ``write_recorded`` checks every cassette (secrets, sizes) and writes them all, or none. A run that ended
  error gets none, unless an injected fault ended it (``alisio.core.harness.faults.fault_that_ended``): its
  replay meets the same fault and ends the same way. With ``--faults`` the header keeps the run's faults
  (``faultRecord``: where each cut broke) and, when a cut after the first event ended it, what that call had
  received (``partialEvents``).
- ``replay_plan`` serves each task's cassette through a ``ReplayProvider``; a run that diverged (a differing
  call, an extra call, or recorded calls never made) ends error with reason ``replay_divergence`` and its
  record's ``divergence`` filled. The model and provider the report names are the recording's.
- ``load_cassettes`` reads the selected tasks' cassettes before the first run: a missing or invalid cassette
  is a ``CommandError`` naming the file, so nothing runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import msgspec
from returns.result import Failure, Success

from alisio.core.harness.events import Effect
from alisio.core.harness.faults import FaultHit, FaultSpec, fault_that_ended, spec_text
from alisio.core.harness.protocol import StreamEvent
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.lab.suites.suite import Task
from alisio.core.replay.cassette import (
    Cassette,
    CassetteHeader,
    RecordedCall,
    cut_points_problem,
    with_divergence,
)
from alisio.core.replay.fingerprint import Rules
from alisio.shell.errors import CommandError
from alisio.shell.harness.providers.base import Provider
from alisio.shell.harness.providers.recording import RecordingProvider
from alisio.shell.harness.providers.replay import ReplayProvider
from alisio.shell.lab.cassettes import (
    PendingCassette,
    cassette_path,
    read_cassette,
    refusals,
    write_cassettes,
)
from alisio.shell.lab.plans import ProviderPlan
from alisio.shell.lab.portable import PortableReplay
from alisio.shell.lab.suites import LoadedSuite

__all__ = [
    "BUNDLED_GRANTS",
    "RecordHook",
    "Recorded",
    "ReplayHook",
    "check_cut_points",
    "check_recorded_faults",
    "config_hash_warnings",
    "load_cassettes",
    "recording_plan",
    "replay_plan",
    "write_recorded",
]

BUNDLED_GRANTS = frozenset({Effect.READ, Effect.WRITE, Effect.PROCESS})
"""What the bundled cassettes are recorded with and what ``eval ci`` grants (--allow-write --allow-process)."""


@dataclass
class RecordHook:
    """Wraps each run's provider in a ``RecordingProvider`` and keeps what each task's run recorded."""

    recorded: dict[str, tuple[tuple[RecordedCall, ...], RunRecord]] = field(default_factory=dict)
    broken: dict[str, tuple[StreamEvent, ...]] = field(default_factory=dict)
    """Per task, what its last failed call had received (``RecordingProvider.broken``)."""

    def wrap(self, provider: Provider, task: Task, rules: Rules) -> Provider:
        return RecordingProvider(provider, rules)

    def finish(self, provider: Provider, task: Task, record: RunRecord) -> RunRecord:
        assert isinstance(provider, RecordingProvider)  # wrap made it
        self.recorded[task.id] = (provider.calls, record)
        self.broken[task.id] = provider.broken
        return record


class ReplayHook:
    """Gives each run's ``ReplayProvider`` the run's rules, and marks a run that diverged."""

    def wrap(self, provider: Provider, task: Task, rules: Rules) -> Provider:
        assert isinstance(provider, ReplayProvider)  # replay_plan's factory made it
        return provider.with_rules(rules)

    def finish(self, provider: Provider, task: Task, record: RunRecord) -> RunRecord:
        assert isinstance(provider, ReplayProvider)
        found = provider.divergence
        return record if found is None else with_divergence(record, found)


def recording_plan(plan: ProviderPlan) -> tuple[ProviderPlan, RecordHook]:
    """``plan`` with every run's provider recorded, and the hook that holds the recordings."""
    hook = RecordHook()
    return dataclasses.replace(plan, hook=hook), hook


def load_cassettes(loaded: LoadedSuite, tasks: tuple[Task, ...], directory: Path) -> dict[str, Cassette]:
    """The cassette of every task in ``tasks``, read from ``directory``.

    Raises:
        CommandError: one line per missing or invalid cassette (the file, and the line for an invalid one), or a
            cassette recorded for another suite, task or suiteVersion (a bumped suiteVersion says a fixture
            or a verifier changed, so the recording no longer pins this suite: record it again).
    """
    cassettes: dict[str, Cassette] = {}
    problems: list[str] = []
    suite_id, suite_version = loaded.suite.suite_id, loaded.suite.suite_version
    for task in tasks:
        path = cassette_path(directory, task.id)
        match read_cassette(path):
            case Failure(error):
                problems.append(f"task {task.id}: {error}")
            case Success(cassette):
                header = cassette.header
                if (header.suite_id, header.task_id) != (suite_id, task.id):
                    problems.append(
                        f"task {task.id}: {path}: recorded for {header.suite_id}/{header.task_id}, "
                        f"not {suite_id}/{task.id}"
                    )
                elif header.suite_version != suite_version:
                    problems.append(
                        f"task {task.id}: {path}: recorded under suiteVersion {header.suite_version}, "
                        f"the suite is {suite_version}"
                    )
                cassettes[task.id] = cassette
    if problems:
        hint = "record them with alisio eval record, or run only the recorded tasks (eval run --tasks)"
        raise CommandError(*problems, f"nothing was run: {hint}")
    return cassettes


class _Header(Protocol):
    @property
    def faults(self) -> str | None: ...


class _Recorded(Protocol):
    """A cassette: the built-in agent's or an external agent's."""

    @property
    def header(self) -> _Header: ...


def check_recorded_faults(cassettes: Mapping[str, _Recorded], faults: FaultSpec | None) -> None:
    """Refused unless every cassette (the built-in agent's or an external agent's) was recorded under the
    command's ``--faults`` (both without any): a replay injects its recording's faults at the same calls, so
    the spec is part of what it reproduces.

    Raises:
        CommandError: one line per cassette recorded under another spec, naming both.
    """
    given = spec_text(faults)
    differing = [
        f"task {task}: recorded with --faults {cassette.header.faults or 'none'}, replayed with --faults {given}"
        for task, cassette in sorted(cassettes.items())
        if (cassette.header.faults or "none") != given
    ]
    if differing:
        raise CommandError(
            *differing, "nothing was run: replay with the spec the cassettes were recorded with"
        )


def check_cut_points(cassettes: Mapping[str, Cassette], faults: FaultSpec | None, directory: Path) -> None:
    """Refused unless each of the built-in agent's cassettes recorded with ``cut`` faults keeps where each cut
    broke (``cut_points_problem``; an external agent's proxy cuts the recorded answer's own bytes again).

    Raises:
        CommandError: one line per cassette without its cut points, naming its file (in ``directory``).
    """
    uncut = [
        f"task {task}: {cassette_path(directory, task)}: {problem}"
        for task, cassette in sorted(cassettes.items())
        if (problem := cut_points_problem(cassette.header, faults)) is not None
    ]
    if uncut:
        raise CommandError(*uncut, "nothing was run")


def replay_plan(cassettes: Mapping[str, Cassette], faults: FaultSpec | None = None) -> ProviderPlan:
    """Each run gets a fresh replay of its task's cassette; the report names the recording's provider and model.

    ``faults``: the recording's spec (``check_recorded_faults``): each call meets the faults it met when recorded
    (``alisio.shell.harness.providers.faulted_replay``).

    Raises:
        CommandError: the cassettes were recorded with different models (the model is part of every request, so
            one run would diverge at ``model`` whatever the harness does).
    """
    models = sorted({cassette.header.model for cassette in cassettes.values()})
    if len(models) > 1:
        raise CommandError(
            f"the selected cassettes were recorded with different models ({', '.join(models)}): "
            "replay them separately with --tasks"
        )
    providers = sorted({cassette.header.provider for cassette in cassettes.values()})

    def factory(task: Task, _spec: object) -> ReplayProvider:
        if faults is not None:
            from alisio.shell.harness.providers.faulted_replay import FaultedReplayProvider

            return FaultedReplayProvider(cassettes[task.id])
        return ReplayProvider(cassettes[task.id])

    plan_id, model = "+".join(providers) or "replay", models[0] if models else "replay"
    return ProviderPlan(
        id=plan_id,
        model=model,
        factory=factory,
        close=lambda: None,
        hook=ReplayHook(),
        portable=PortableReplay(id=plan_id, model=model, cassettes=dict(cassettes), faults=faults),
    )


def config_hash_warnings(cassettes: Mapping[str, Cassette], current: str) -> list[str]:
    """One warning when the measured configuration's hash differs from the one some cassettes recorded."""
    differing = sorted(task for task, c in cassettes.items() if c.header.config_hash != current)
    if not differing:
        return []
    recorded = sorted({cassettes[task].header.config_hash[:16] for task in differing})
    noun = "cassette" if len(differing) == 1 else "cassettes"
    return [
        f"warning: the configuration hash {current[:16]} differs from the one recorded in the {noun} of "
        f"{', '.join(differing)} ({', '.join(recorded)}): your configuration changes what the provider "
        "receives; for bundled cassettes point ALISIO_CONFIG_HOME at an empty directory"
    ]


@dataclass(frozen=True)
class Recorded:
    """One cassette written by ``record_cassettes``."""

    task_id: str
    path: Path
    calls: int
    size: int
    status: RunStatus
    reason: str | None


def _ended_by(record: RunRecord | None) -> FaultHit | None:
    """The injected fault that ended ``record``'s run in error (``None``: it did not end error, or not so)."""
    if record is None or record.status is not RunStatus.ERROR or record.faults is None:
        return None
    return fault_that_ended(record.faults.calls, record.faults.hits, record.reason)


def _errored_line(task_id: str, record: RunRecord) -> str:
    """Why an errored run gets no cassette: every replay of it would reproduce the infrastructure error (a
    call with no event, a dropped stream), not the harness."""
    detail = f": {record.errors[0]}" if record.errors else ""
    return (
        f"task {task_id}: no cassette written: the run ended error ({record.reason}){detail}; a replay would "
        "only repeat it: record the task again"
    )


def _task_cassette(
    task_id: str, hook: RecordHook, header: CassetteHeader, path: Path, say: Callable[[str], None]
) -> PendingCassette | None:
    """The cassette of the task's recorded run, to be written at ``path``; ``None`` (and ``say`` says why) for a
    run that made no call or ended error, unless an injected fault ended it (its replay meets it again)."""
    calls, record = hook.recorded.get(task_id, ((), None))
    fault = _ended_by(record)
    if not calls and fault is None:
        why = f" ({record.reason})" if record is not None and record.reason else ""
        say(f"warning: task {task_id}: the run made no provider call{why}: no cassette")
        return None
    if record is not None and record.status is RunStatus.ERROR and fault is None:
        say(_errored_line(task_id, record))
        return None
    broke_mid_answer = fault is not None and fault.kind == "cut" and bool(fault.events)
    task_header = msgspec.structs.replace(
        header,
        task_id=task_id,
        served_models=() if record is None else record.measured.served_models,
        system_fingerprints=() if record is None else record.measured.system_fingerprints,
        fault_record=None if record is None else record.faults,
        partial_events=hook.broken.get(task_id, ()) if broke_mid_answer else (),
    )
    return PendingCassette(task_id=task_id, path=path, cassette=Cassette(header=task_header, calls=calls))


def write_recorded(
    loaded: LoadedSuite,
    tasks: tuple[Task, ...],
    hook: RecordHook,
    header: CassetteHeader,
    directory: Path,
    known: tuple[tuple[str, str], ...],
    say: Callable[[str], None],
) -> tuple[Recorded, ...]:
    """Write the cassette of every task ``hook`` recorded a call for, into ``directory``: all, or none (a task
    whose run ended error gets none, unless an injected fault ended it, and ``say`` tells why in one line).

    Args:
        header: the cassette header every task shares (its ``task_id`` is replaced per task).
        known: the exact credentials of the environment, which no cassette may hold.

    Raises:
        CommandError: a cassette holds a secret or exceeds a size limit (one line each, naming the task and the
            field, never the value), or a cassette cannot be written. Nothing is written then.
    """
    pending = [
        item
        for task in tasks
        if (item := _task_cassette(task.id, hook, header, cassette_path(directory, task.id), say)) is not None
    ]
    problems = refusals(pending, known)
    if problems:
        raise CommandError(
            *(f"refusing to write a cassette: {line}" for line in problems), "no cassette was written"
        )
    try:
        write_cassettes(pending)
    except OSError as error:
        raise CommandError(f"cannot write the cassettes in {directory}: {error.strerror or error}") from None
    return tuple(
        Recorded(
            task_id=item.task_id,
            path=item.path,
            calls=len(item.cassette.calls),
            size=len(item.data),
            status=hook.recorded[item.task_id][1].status,
            reason=hook.recorded[item.task_id][1].reason,
        )
        for item in pending
    )
