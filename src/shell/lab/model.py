"""The pipeline's values: how it talks to the person (``Ui``), what it is about to run (``LabStart``), and
what it did (``LabOutcome``, each arm's ``ArmResult``); ``Resumed``, what a resume runs and keeps."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from alisio.core.exit_codes import ExitCode
from alisio.core.lab.comparisons.variants import VariantsComparison, VariantsPlan
from alisio.core.lab.judges.outcome import exit_code_for
from alisio.core.lab.plans.manifest import RunManifest
from alisio.core.lab.plans.shards import ShardChoice
from alisio.core.lab.reports.report import AgentCondition, AnswerSource, Report
from alisio.core.lab.reports.seq_block import SequentialPlan
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.suites.schedule import RunSpec
from alisio.core.lab.suites.suite import Task
from alisio.shell.errors import Terminated
from alisio.shell.lab.plans import ProviderPlan
from alisio.shell.lab.run_one import Arm
from alisio.shell.lab.suite_choice import SuiteChoice

if TYPE_CHECKING:
    from alisio.core.harness.events import Event
    from alisio.shell.lab.record import Recorded

__all__ = ["ArmResult", "LabOutcome", "LabStart", "Resumed", "Ui"]


@dataclass(frozen=True)
class Ui:
    """How the pipeline talks to the person running the command (the CLI builds it)."""

    say: Callable[[str], None]
    """One line for people (stderr)."""
    ask: Callable[[str], str]
    """Asks a question on the terminal and returns the answer line."""
    interactive: bool
    """Whether a person can answer (stdin and stderr are terminals)."""
    on_start: Callable[[LabStart], None] = lambda start: None
    """Called once, just before the first run."""
    on_record: Callable[[RunRecord, int, int], None] = lambda record, done, total: None
    """Called with each finished record, how many have finished, and how many are planned."""
    on_run_start: Callable[[RunSpec], None] = lambda spec: None
    """Called as each run starts (on the thread that runs it)."""
    on_run_end: Callable[[RunSpec], None] = lambda spec: None
    """Called as each run ends, finished or not (on the thread that ran it)."""
    on_event: Callable[[RunSpec, Event], None] = lambda spec, event: None
    """Called with each event of a run as it happens (on the thread that runs it; not from Ray workers)."""


@dataclass(frozen=True)
class Resumed:
    """What a resume runs and keeps."""

    stored: RunManifest
    todo: tuple[RunSpec, ...]
    kept: tuple[RunRecord, ...]
    retried: Mapping[str | None, int]
    """How many records each arm's retried/runs.jsonl holds (this resume's and earlier ones'), by variant."""
    reused: tuple[RunRecord, ...] = ()
    """``--reuse``: the records taken from a stored run (in ``kept`` too), which no run repeats."""


@dataclass(frozen=True)
class LabStart:
    """What the command is about to run, once every check passed."""

    choice: SuiteChoice
    tasks: tuple[Task, ...]
    k: int
    seed: int
    mode: AnswerSource
    provider: ProviderPlan
    arms: tuple[Arm, ...]
    variants: VariantsPlan | None
    root: Path
    """The report directory (the variants' root; a temporary directory for a recording)."""
    jobs: int = 1
    """Runs at once."""
    agent_conditions: Mapping[str, AgentCondition] = field(default_factory=dict)
    """The external agents the command uses: name, kind and version (``alisio.shell.lab.agent_plan``)."""
    agent_configs: Mapping[str, str] = field(default_factory=dict)
    """The sha256 of each external agent's settings, by name (kept in plan.json for a resume)."""
    sandbox: str = "none"
    """Where commands run: ``none`` or ``bwrap``."""
    label: str | None = None
    """``--label TEXT``: the run's name, in its conditions."""
    sequential: SequentialPlan | None = None
    """The sequential design (``k`` is then its ``max_k``); ``None``: every planned run runs."""
    shard: ShardChoice | None = None
    """``--shard I/N``: the slice of the plan this command runs."""
    owned: tuple[RunSpec, ...] | None = None
    """The shard's runs, in plan order (``None``: the whole plan)."""

    @property
    def planned(self) -> int:
        """How many runs the command plans, over every arm (a shard: its own)."""
        if self.owned is not None:
            return len(self.owned)
        return len(self.tasks) * self.k * len(self.arms)


@dataclass(frozen=True)
class ArmResult:
    """One arm's finished records (plan order) and its report."""

    arm: Arm
    records: tuple[RunRecord, ...]
    report: Report
    show_as: str | None = None
    """What ``eval show`` is given to open its runs: ``None`` for the run id, else the report's directory."""


@dataclass(frozen=True)
class LabOutcome:
    """What the command did: each arm's report, a comparison or cassettes, and whether it stopped early."""

    start: LabStart
    arms: tuple[ArmResult, ...]
    comparison: VariantsComparison | None
    recorded: tuple[Recorded, ...]
    interrupted: KeyboardInterrupt | None
    stopped: str | None
    resumed: Resumed | None = None
    """What a resume found (``None`` for a new run)."""
    notes: tuple[str, ...] = ()
    """What the outputs wrote that the command prints after its result unless ``--quiet`` (``junit: FILE``)."""
    problems: tuple[str, ...] = ()
    """The CI outputs (``--junit``, the step summary) that could not be written, one line each."""

    @property
    def records(self) -> tuple[RunRecord, ...]:
        """Every finished record, arm after arm."""
        return tuple(record for arm in self.arms for record in arm.records)

    @property
    def exit_code(self) -> ExitCode:
        """130/143/129 when interrupted, 1 when stopped early, 2 on a divergence, 1 when a run errored, else 0."""
        if self.interrupted is not None:
            interrupt = self.interrupted
            return (
                ExitCode.for_signal(interrupt.signum)
                if isinstance(interrupt, Terminated)
                else ExitCode.INTERRUPTED
            )
        if self.stopped is not None:
            return ExitCode.FAILURE
        return exit_code_for(self.records)
