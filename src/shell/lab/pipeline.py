"""The Reliability Lab's orchestration: find the suite, check it may run, run the planned runs, report.

What ``alisio eval run`` does, in order (every decision is a call into the core):

1. ``find_suite``: the suite named by id or directory name, in ``--suite-dir`` (a suite or a directory of
   suites; third-party) first, then among the bundled suites of the source checkout (``suites/`` next to
   ``src/``; a wheel has none and says so).
2. ``preflight``: select the tasks (``alisio.core.lab.schedule.select_tasks``), check every task's policy against the
   granted effects (``alisio.core.harness.policy.check_task_policy``) and its agent against the configuration, all before the
   first run: a task that asks for more than was granted is rejected with the flag to pass, never trimmed.
3. ``confirm_third_party``: a ``--suite-dir`` suite is code that runs with the user's privileges: warn, and
   ask on a terminal; without one refuse unless ``--yes``.
4. ``run_lab``: plan the runs (``alisio.core.lab.schedule.plan_runs``), then for each: copy the fixture
   (``alisio.shell.lab.workspace``), run the agent headless (``alisio.shell.harness.agent``), judge (``alisio.shell.lab.verifiers``), build the
   ``RunRecord`` (``alisio.core.lab.outcome``) and append it to runs.jsonl at once, so a crash keeps the finished runs.
   Ctrl-C stops after the current workspace is cleaned; the report of the finished runs is still written.
   Finally ``alisio.core.lab.report.build_report`` and ``alisio.shell.lab.store.write_report_files``.

The provider is chosen once per command as a ``ProviderPlan`` whose ``factory`` gives each run its provider:
the same live provider for every run, a fresh scripted provider per run (``--script``), a replay of the task's
cassette. Record and replay add a ``RunHook``: it wraps each run's provider once the run's fingerprint rules
are known (the same rules the agent uses) and amends the run's record when it ends (replay's divergence).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Protocol

from returns.result import Failure, Success

from alisio.core.harness.agent_step import select_agent
from alisio.core.harness.budget import RunBudget
from alisio.core.harness.config import MeasuredConfig, config_hash
from alisio.core.harness.events import Effect
from alisio.core.harness.policy import Mode as PolicyMode
from alisio.core.harness.policy import Policy, check_task_policy
from alisio.core.lab.outcome import SetupError, record_from_run
from alisio.core.lab.records import RunRecord
from alisio.core.lab.report import Compaction, Conditions, Mode, Rates, Report, build_report
from alisio.core.lab.schedule import RunSpec, plan_runs, select_tasks
from alisio.core.lab.suite import Policy as TaskPolicy
from alisio.core.lab.suite import Task
from alisio.core.lab.suite import violations as suite_violations
from alisio.core.replay.fingerprint import Rules, path_rules
from alisio.shell.harness.providers.base import Provider
from alisio.shell.lab.store import RUNS_JSONL, write_report_files
from alisio.shell.lab.suites import LoadedSuite, SuiteEntry, discover_suites

__all__ = [
    "NO_BUNDLED",
    "LabError",
    "LabResult",
    "LabRun",
    "ProviderPlan",
    "RunHook",
    "SuiteChoice",
    "bundled_suites_root",
    "claim_run_dir",
    "confirm_third_party",
    "find_suite",
    "interactive_terminal",
    "preflight",
    "run_id_for",
    "run_lab",
    "task_policy",
]

NO_BUNDLED = (
    "no bundled suites: this is not a source checkout (they live in its suites/ directory); pass --suite-dir"
)


class LabError(Exception):
    """A usage or infrastructure problem found before the first run: ``lines`` are printed, exit 1."""

    def __init__(self, *lines: str) -> None:
        super().__init__(lines[0] if lines else "")
        self.lines = lines


# --- 1. the suite ------------------------------------------------------------------------------------------


def bundled_suites_root(package_file: Path | None = None) -> Path | None:
    """``suites/`` of the source checkout this package runs from, or ``None`` (an installed wheel).

    A checkout is recognised by this module at ``src/shell/lab/`` (symbolic links resolved) next to a
    ``pyproject.toml`` and a ``suites/`` directory.
    """
    here = (package_file or Path(__file__)).resolve()
    package = here.parent.parent
    root = package.parent.parent
    if (
        here.parent.name == "lab"
        and package.name == "shell"
        and package.parent.name == "src"
        and (root / "pyproject.toml").is_file()
    ):
        suites = root / "suites"
        return suites if suites.is_dir() else None
    return None


@dataclass(frozen=True)
class SuiteChoice:
    """The suite to run, and whether it came from ``--suite-dir`` (third-party code)."""

    loaded: LoadedSuite
    third_party: bool


def _entry_names(entry: SuiteEntry) -> set[str]:
    """The names a suite answers to: its directory name and its suiteId.

    An invalid suite still answers to the ``suiteId`` its raw suite.json declares, so that naming it gives its
    violations instead of silently falling back to a bundled suite with the same id.
    """
    names = {entry.directory.name}
    match entry.result:
        case Success(loaded):
            names.add(loaded.suite.suite_id)
        case Failure(_):
            names |= _declared_suite_id(entry.directory / "suite.json")
    return names


def _declared_suite_id(suite_json: Path) -> set[str]:
    """The ``suiteId`` a (possibly invalid) suite.json declares, if it can be read at all."""
    try:
        data = json.loads(suite_json.read_bytes())
    except (OSError, ValueError):
        return set()
    declared = data.get("suiteId") if isinstance(data, dict) else None
    return {declared} if isinstance(declared, str) else set()


def find_suite(ref: str, suite_dir: Path | None, bundled: Path | None) -> SuiteChoice:
    """The suite whose id or directory name is ``ref``: in ``suite_dir`` first, then among the bundled ones.

    Raises:
        LabError: no such suite (listing the known ones), a ``suite_dir`` that does not exist, or a matching
            suite that is invalid (every violation, with its file).
    """
    entries: list[tuple[SuiteEntry, bool]] = []
    if suite_dir is not None:
        if not suite_dir.exists():
            raise LabError(f"--suite-dir {suite_dir}: no such directory")
        entries += [(entry, True) for entry in discover_suites(suite_dir)]
    if bundled is not None:
        entries += [(entry, False) for entry in discover_suites(bundled)]
    for entry, third_party in entries:
        if ref not in _entry_names(entry):
            continue
        match entry.result:
            case Success(loaded):
                return SuiteChoice(loaded=loaded, third_party=third_party)
            case Failure(error):
                raise LabError(*(f"{error.source}: {line}" for line in suite_violations(error)))
    known = sorted({e.result.unwrap().suite.suite_id for e, _ in entries if isinstance(e.result, Success)})
    message = f"no suite {ref!r}"
    if known:
        message += f" (known: {', '.join(known)})"
    if bundled is None:
        message += (
            f"; {NO_BUNDLED}" if suite_dir is None else "; there are no bundled suites outside a checkout"
        )
    elif suite_dir is None:
        message += "; pass --suite-dir DIR for a suite outside the bundled ones"
    raise LabError(message)


# --- 2. before the first run -------------------------------------------------------------------------------


def task_policy(policy: TaskPolicy, read_only: bool) -> Policy:
    """The harness policy of a task (``--read-only`` restricts it further)."""
    return Policy(
        mode=PolicyMode(policy.mode),
        allow=frozenset(Effect(effect) for effect in policy.allow),
        read_only=policy.read_only or read_only,
    )


def preflight(
    loaded: LoadedSuite,
    wanted: Sequence[str] | None,
    granted: frozenset[Effect],
    *,
    read_only: bool,
    allow_suite_full: bool,
    measured: MeasuredConfig,
) -> tuple[Task, ...]:
    """The selected tasks, once every one of them may run as asked.

    Raises:
        LabError: an unknown task id (listing the known ones), and one line per task whose policy asks for an
            effect that was not granted (with the flag to pass), needs ``--allow-suite-full``, or names an
            agent the configuration does not have.
    """
    selected = select_tasks(loaded.suite, wanted)
    if isinstance(selected, Failure):
        raise LabError(str(selected.failure()))
    tasks: tuple[Task, ...] = selected.unwrap()
    problems: list[str] = []
    ceiling = frozenset({Effect.READ}) if read_only else granted
    for task in tasks:
        match check_task_policy(task_policy(task.policy, False), ceiling, allow_suite_full):
            case Failure(error):
                message = error.under_read_only() if read_only else error.message
                problems.append(f"task {task.id}: {message}")
            case _:
                pass
        if isinstance(select_agent(measured, task.agent), Failure):
            problems.append(
                f"task {task.id}: agent {task.agent!r} is not a main agent of the configuration "
                f"(define [agents.{task.agent}] in config.toml)"
            )
    if problems:
        noun = "task" if len(problems) == 1 else "tasks"
        raise LabError(*problems, f"nothing was run: fix or grant the {noun} above")
    return tasks


def confirm_third_party(
    choice: SuiteChoice, *, yes: bool, interactive: bool, say: Callable[[str], None], ask: Callable[[], str]
) -> None:
    """Warn about a ``--suite-dir`` suite; ask on a terminal unless ``yes``; refuse without one.

    Raises:
        LabError: not confirmed, or no terminal to ask and no ``--yes``.
    """
    if not choice.third_party:
        return
    suite = choice.loaded.suite
    say(
        f"warning: suite {suite.suite_id} comes from --suite-dir ({choice.loaded.directory}): its verifier "
        "commands and the tools it enables run with your privileges, not sandboxed. "
        "Only run suites you trust."
    )
    if yes:
        return
    if not interactive:
        raise LabError(
            "refusing to run a --suite-dir suite without a terminal to confirm it; pass --yes to accept it"
        )
    if ask().strip().lower() not in ("y", "yes"):
        raise LabError("not confirmed; nothing was run")


# --- 3. the runs -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProviderPlan:
    """The provider of a command: what the report names, and how each run gets its provider."""

    id: str
    model: str
    factory: Callable[[Task, RunSpec], Provider]
    """The provider for one run (the same live provider every time; a fresh scripted one per run)."""
    close: Callable[[], None]
    key: str | None = None
    """The API key, only to keep it out of the environment of commands; never stored."""
    hook: RunHook | None = None
    """Record and replay: wraps each run's provider and sees each run's record (``None``: neither)."""


class RunHook(Protocol):
    """What record and replay add to a run (``alisio.shell.replay.record``)."""

    def wrap(self, provider: Provider, task: Task, rules: Rules) -> Provider:
        """The provider the run uses, given the factory's and the run's fingerprint rules."""
        ...

    def finish(self, provider: Provider, task: Task, record: RunRecord) -> RunRecord:
        """The run's record once it ended (``provider`` is what ``wrap`` returned); replay adds divergence."""
        ...


@dataclass(frozen=True)
class LabRun:
    """Everything ``run_lab`` needs, decided before the first run."""

    loaded: LoadedSuite
    tasks: tuple[Task, ...]
    k: int
    seed: int
    mode: Mode
    provider: ProviderPlan
    measured: MeasuredConfig
    granted: frozenset[Effect]
    read_only: bool
    keep: bool
    directory: Path
    """Where report.json, report.md and runs.jsonl go (created and empty)."""
    run_id: str
    created_at: str
    harness_version: str = field(default_factory=lambda: _installed_version())
    rates: Rates | None = None
    tool_env: Mapping[str, str] | None = None
    """The environment of ``bash`` commands and command verifiers (``None``: the tools' default)."""


@dataclass(frozen=True)
class LabResult:
    """The finished records (in run order), their report, and whether Ctrl-C stopped the command."""

    records: tuple[RunRecord, ...]
    report: Report
    directory: Path
    interrupted: bool


def run_id_for(now: datetime) -> str:
    """The run id of a command started at ``now``: ``2026-10-13T12-00-00-000Z`` (UTC, filesystem-safe)."""
    utc = now.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H-%M-%S-") + f"{utc.microsecond // 1000:03d}Z"


def granted_effects(flags: Mapping[str, bool]) -> frozenset[Effect]:
    """Read plus the effects whose ``--allow-*`` flag is on (``{"write": True, ...}``)."""
    return frozenset({Effect.READ} | {Effect(name) for name, on in flags.items() if on})


def rates_from(input_rate: float | None, output_rate: float | None) -> Rates | None:
    """``--input-rate`` and ``--output-rate`` as Rates (``None`` when neither); one without the other fails."""
    if (input_rate is None) != (output_rate is None):
        raise LabError("--input-rate and --output-rate go together: pass both or neither")
    if input_rate is None or output_rate is None:
        return None
    return Rates(input_rate=input_rate, output_rate=output_rate)


def created_at_for(now: datetime) -> str:
    """``now`` as a report's createdAt: ``2026-10-13T12:00:00.000Z`` (UTC, milliseconds)."""
    return now.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _installed_version() -> str:
    from importlib.metadata import version

    return version("alisio")


def claim_run_dir(root: Path, run_id: str) -> tuple[str, Path]:
    """Create ``root/run_id`` (``-2``, ``-3``... appended while it exists) and return the id and directory."""
    root.mkdir(parents=True, exist_ok=True)
    candidate, number = run_id, 1
    while True:
        try:
            (root / candidate).mkdir()
            return candidate, root / candidate
        except FileExistsError:
            number += 1
            candidate = f"{run_id}-{number}"


def _conditions(lab: LabRun) -> Conditions:
    suite = lab.loaded.suite
    return Conditions(
        suite_id=suite.suite_id,
        suite_version=suite.suite_version,
        suite_hash=lab.loaded.content_hash,
        harness_version=lab.harness_version,
        config_hash=config_hash(lab.measured),
        provider=lab.provider.id,
        model=lab.provider.model,
        mode=lab.mode,
        k=lab.k,
        seed=lab.seed,
        compaction=Compaction(
            threshold=lab.measured.compaction.threshold,
            max_context_chars=lab.measured.limits.max_context_chars,
        ),
        rates=lab.rates,
        run_id=lab.run_id,
        created_at=lab.created_at,
    )


def _run_one(lab: LabRun, task: Task, spec: RunSpec, say: Callable[[str], None]) -> RunRecord:
    """Copy the fixture, run the agent, judge: the run's record (infrastructure failures are ``error``)."""
    from alisio.shell.harness.agent import AgentSetup, run_agent
    from alisio.shell.lab.verifiers import run_verifiers
    from alisio.shell.lab.workspace import WorkspaceError, prepare_workspace

    measured_hash = config_hash(lab.measured)
    try:
        with prepare_workspace(
            lab.loaded.fixture_dir(task),
            fixture_git=task.fixture_git,
            keep=lab.keep,
            prefix=f"alisio-{task.id}-",
        ) as workspace:
            if workspace.kept:
                say(f"  kept {task.id} #{spec.repetition + 1}: {workspace.path}")
            rules = path_rules(str(workspace.path), str(workspace.path.resolve()))
            rules += tuple((rule.pattern, rule.replace) for rule in task.replay_normalize)
            provider = lab.provider.factory(task, spec)
            if lab.provider.hook is not None:
                provider = lab.provider.hook.wrap(provider, task, rules)
            budget = task.budget
            result = run_agent(
                AgentSetup(
                    prompt=task.prompt,
                    workspace=workspace.path,
                    provider=provider,
                    model=lab.provider.model,
                    measured=lab.measured,
                    policy=task_policy(task.policy, lab.read_only),
                    granted=lab.granted,
                    budget=RunBudget(
                        max_turns=budget.max_turns,
                        max_wall_ms=budget.max_wall_ms,
                        max_tokens=budget.max_tokens,
                        max_tool_calls=budget.max_tool_calls,
                    ),
                    agent=task.agent,
                    approver=None,
                    normalize_rules=rules,
                    harness_version=lab.harness_version,
                    config_hash=measured_hash,
                    env=lab.tool_env,
                )
            )
            verifiers = run_verifiers(task, workspace, result.events, env=lab.tool_env)
    except WorkspaceError as error:
        setup = SetupError(reason=error.reason, message=str(error))
        return record_from_run(spec, (), None, None, (), config_hash=measured_hash, setup_error=setup)
    record = record_from_run(
        spec,
        result.events,
        result.outcome,
        result.reason,
        verifiers,
        config_hash=measured_hash,
        error=result.message if result.outcome == "error" else None,
    )
    hook = lab.provider.hook
    return record if hook is None else hook.finish(provider, task, record)


def run_lab(
    lab: LabRun,
    *,
    say: Callable[[str], None],
    on_record: Callable[[RunRecord, int, int], None] = lambda record, index, total: None,
) -> LabResult:
    """Run every planned run of ``lab`` and write the three report files into ``lab.directory``.

    Args:
        say: prints one line for people (stderr).
        on_record: called with each finished record, its 1-based index and the number of runs.

    Returns:
        The records, the report, and ``interrupted`` when Ctrl-C stopped it (the current run is dropped,
        its workspace removed; the finished runs are reported).
    """
    from msgspec.json import Encoder

    plan = plan_runs([task.id for task in lab.tasks], lab.k, lab.seed).unwrap()  # ids are unique, k >= 1
    by_id = {task.id: task for task in lab.tasks}
    records: list[RunRecord] = []
    interrupted = False
    encoder = Encoder()
    runs = open_runs(lab.directory)
    with runs:
        for index, spec in enumerate(plan, start=1):
            try:
                record = _run_one(lab, by_id[spec.task_id], spec, say)
                records.append(record)
                _append(runs, encoder.encode(record) + b"\n")
                on_record(record, index, len(plan))
            except KeyboardInterrupt:
                interrupted = True
                say(f"interrupted: writing the report of the {len(records)} finished runs")
                break
    report = build_report(records, _conditions(lab), planned_runs=len(plan), interrupted=interrupted)
    write_report_files(lab.directory, report, records)
    return LabResult(records=tuple(records), report=report, directory=lab.directory, interrupted=interrupted)


def unwritable_dir(directory: Path, flag: str) -> str | None:
    """Why ``directory`` cannot be created or written, checked before the first run, creating nothing.

    The first ancestor that exists must be a directory this process may write into.
    """
    existing = directory
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        return f"{flag} {directory}: {existing} is not a directory; nothing was run"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{flag} {directory}: {existing} is not writable; nothing was run"
    # os.access says yes to root everywhere (even /proc): a probe directory made and removed is the real test.
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".alisio-probe-", dir=existing))
    except OSError as error:
        why = error.strerror or str(error)
        return f"{flag} {directory}: {existing} is not writable ({why}); nothing was run"
    return None


def open_runs(directory: Path) -> IO[bytes]:
    """runs.jsonl opened for writing in ``directory`` (created), or a ``LabError`` before the first run."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        return (directory / RUNS_JSONL).open("wb")
    except OSError as error:
        why = error.strerror or str(error)
        raise LabError(f"{directory}: cannot write the report there ({why}); nothing was run") from None


def _append(handle: IO[bytes], line: bytes) -> None:
    handle.write(line)
    handle.flush()
    os.fsync(handle.fileno())


def interactive_terminal() -> bool:
    """Whether a person can answer on this terminal (stdin and stderr are both terminals)."""
    return sys.stdin.isatty() and sys.stderr.isatty()
