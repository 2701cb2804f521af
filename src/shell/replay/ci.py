"""``eval ci``: replay every cassette of every suite (bundled, or ``--suite-dir``), one lab request per suite.

Each suite with cassettes (``<suite>/cassettes/*.jsonl``, or ``--cassette-dir``, which needs a single suite)
is one ``LabRequest`` through the lab's pipeline: mode replay, k = 1, the tasks that have a cassette,
``--allow-write --allow-process`` granted and the default configuration (the user's config.toml is never
read), the report in ``<root>/<suite-id>/``. A suite without cassettes is skipped; a suite whose request
fails before its first run (an orphan or invalid cassette, a refused task) is a problem, and the others still
run. ``--suite-dir`` suites outside the bundled ones are third-party code: all of them are confirmed before the
first replay.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from returns.result import Failure, Success

from alisio.core.harness.sandbox import SandboxKind
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.lab.suites.suite import violations
from alisio.shell.errors import CommandError
from alisio.shell.lab.cassettes import cassette_dir_for
from alisio.shell.lab.model import LabOutcome, Ui
from alisio.shell.lab.pipeline import run_request
from alisio.shell.lab.request import ExecutorKind, LabMode, LabRequest, Output, Permissions, Selection
from alisio.shell.lab.suite_choice import (
    NO_BUNDLED,
    SuiteChoice,
    bundled_suites_root,
    confirm_third_party,
    is_bundled,
)
from alisio.shell.lab.suites import LoadedSuite, discover_suites

__all__ = [
    "CiOutcome",
    "SuiteReplay",
    "ci_suites",
    "replay_all",
    "replay_suite",
]

CI_PERMISSIONS = Permissions(write=True, process=True)
"""What the bundled cassettes are recorded with and what ``eval ci`` grants."""


@dataclass(frozen=True)
class SuiteReplay:
    """What happened to one suite: skipped, a problem before its first replay, or its outcome."""

    loaded: LoadedSuite
    cassettes: Path
    problems: tuple[str, ...] = ()
    outcome: LabOutcome | None = None

    @property
    def records(self) -> tuple[RunRecord, ...]:
        return self.outcome.records if self.outcome is not None else ()


@dataclass
class CiOutcome:
    """Every suite's replay, in order."""

    suites: list[SuiteReplay] = field(default_factory=list)

    @property
    def diverged(self) -> int:
        return sum(r.divergence is not None for s in self.suites for r in s.records)

    @property
    def not_passing(self) -> int:
        return sum(
            r.status is not RunStatus.PASS and r.divergence is None for s in self.suites for r in s.records
        )

    @property
    def problems(self) -> int:
        return sum(bool(s.problems) for s in self.suites)

    @property
    def replayed(self) -> int:
        return sum(len(s.records) for s in self.suites)


def ci_suites(
    suite_dir: Path | None, cassette_dir: Path | None, yes: bool, ui: Ui, *, sandboxed: bool = False
) -> list[LoadedSuite]:
    """The suites to replay, every third-party one confirmed before the first replay; with ``yes`` there is
    nothing to ask, and the warning is the one each suite's replay gives (once per suite).

    Raises:
        CommandError: no bundled suites outside a checkout, a missing ``suite_dir``, an invalid suite (every
            violation), no suite at all, ``cassette_dir`` with more than one suite, or a refused confirmation.
    """
    root = suite_dir if suite_dir is not None else bundled_suites_root()
    if root is None:
        raise CommandError(NO_BUNDLED)
    if not root.exists():
        raise CommandError(f"--suite-dir {root}: no such directory")
    loaded: list[LoadedSuite] = []
    problems: list[str] = []
    for entry in discover_suites(root):
        match entry.result:
            case Success(suite):
                loaded.append(suite)
            case Failure(error):
                problems += [f"{error.source}: {line}" for line in violations(error)]
    if problems:
        raise CommandError(*problems)
    if not loaded:
        raise CommandError(f"{root}: no suite found: nothing to replay")
    if cassette_dir is not None and len(loaded) != 1:
        names = ", ".join(s.suite.suite_id for s in loaded)
        raise CommandError(f"--cassette-dir needs a single suite (pass --suite-dir SUITE); found {names}")
    if suite_dir is not None and not yes:
        for suite in loaded:
            choice = SuiteChoice(
                loaded=suite, third_party=not is_bundled(suite.directory, bundled_suites_root())
            )
            confirm_third_party(
                choice,
                yes=yes,
                interactive=ui.interactive,
                say=ui.say,
                ask=lambda: ui.ask("Replay it? [y/N] "),
                sandboxed=sandboxed,
            )
    return loaded


def replay_suite(
    loaded: LoadedSuite,
    suite_dir: Path | None,
    cassette_dir: Path | None,
    root: Path,
    env: Mapping[str, str],
    ui: Ui,
    jobs: int | None = None,
    *,
    executor: ExecutorKind = ExecutorKind.THREAD,
    ray_address: str | None = None,
    sandbox: SandboxKind | None = None,
) -> SuiteReplay:
    """Replay one suite's cassettes into ``root/<suite-id>`` through the lab's pipeline."""
    suite = loaded.suite
    directory = cassette_dir_for(loaded.directory, cassette_dir)
    ids = sorted(path.stem for path in directory.glob("*.jsonl")) if directory.is_dir() else []
    if not ids:
        return SuiteReplay(loaded=loaded, cassettes=directory)
    known = {task.id for task in suite.tasks}
    orphans = [
        f"{directory / (name + '.jsonl')}: no task {name} in suite {suite.suite_id}"
        for name in ids
        if name not in known
    ]
    if orphans:
        return SuiteReplay(loaded=loaded, cassettes=directory, problems=tuple(orphans))
    request = LabRequest(
        selection=Selection(
            suite=str(loaded.directory.name), tasks=tuple(ids), k=1, suite_dir=suite_dir, yes=True
        ),
        mode=LabMode.REPLAY,
        permissions=CI_PERMISSIONS,
        output=Output(out=root / suite.suite_id, register=False),
        cassette_dir=cassette_dir,
        default_config=True,
        env=env,
        jobs=jobs,
        executor=executor,
        ray_address=ray_address,
        sandbox=sandbox,
    )
    try:
        outcome = run_request(request, ui)
    except CommandError as error:
        return SuiteReplay(loaded=loaded, cassettes=directory, problems=error.lines)
    return SuiteReplay(loaded=loaded, cassettes=directory, outcome=outcome)


def replay_all(
    suites: list[LoadedSuite],
    suite_dir: Path | None,
    cassette_dir: Path | None,
    root: Path,
    env: Mapping[str, str],
    ui: Ui,
    on_suite: Callable[[SuiteReplay], None],
    jobs: int | None = None,
    *,
    executor: ExecutorKind = ExecutorKind.THREAD,
    ray_address: str | None = None,
    sandbox: SandboxKind | None = None,
) -> CiOutcome:
    """Replay every suite in turn (``on_suite`` sees each); stops after one that was interrupted."""
    outcome = CiOutcome()
    for loaded in suites:
        replay = replay_suite(
            loaded,
            suite_dir,
            cassette_dir,
            root,
            env,
            ui,
            jobs,
            executor=executor,
            ray_address=ray_address,
            sandbox=sandbox,
        )
        outcome.suites.append(replay)
        on_suite(replay)
        if replay.outcome is not None and replay.outcome.interrupted is not None:
            break
    return outcome
