"""What a lab command was asked, once its flags are parsed: one ``LabRequest``, four groups of options.

The groups are the CLI's help panels: ``Selection`` (which suite, tasks, repetitions, seed), ``ProviderOptions``
(where answers come from), ``Permissions`` (the runner's grants, the ceiling of every task's policy) and
``Output`` (where reports go and what is printed). ``eval run``, ``record``, ``variants``, ``ci`` and
``make record-bundled`` all build one and hand it to ``alisio.shell.lab.pipeline.run_request``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from alisio.core.harness.events import Effect
from alisio.core.harness.faults import FaultSpec
from alisio.core.harness.sandbox import SandboxKind
from alisio.core.lab.plans.manifest import RunManifest
from alisio.core.lab.plans.shards import ShardChoice
from alisio.core.lab.reports.report import Rates
from alisio.core.lab.reports.seq_block import SequentialPlan
from alisio.shell.errors import CommandError

__all__ = [
    "Caps",
    "ExecutorKind",
    "LabMode",
    "LabRequest",
    "Output",
    "Permissions",
    "ProviderOptions",
    "Selection",
    "rates_from",
]


class LabMode(StrEnum):
    """Where a command's answers come from, and what it leaves behind."""

    LIVE = "live"
    """The configured provider (or ``--script``): a measurement, reported."""
    REPLAY = "replay"
    """Each task's cassette: the harness only, reported."""
    RECORD = "record"
    """The configured provider (or ``--script``), each task once: cassettes are written, no report kept."""


class ExecutorKind(StrEnum):
    """How the planned runs are carried out (``--executor``)."""

    THREAD = "thread"
    """In this process: one after another with ``--jobs 1``, else on a pool of threads."""
    RAY = "ray"
    """Each run a Ray task, on a local Ray instance or the cluster at ``ray_address``."""


@dataclass(frozen=True)
class Selection:
    """Which suite, which tasks, how many repetitions, in which order."""

    suite: str
    """A suite id or the name of its directory."""
    tasks: tuple[str, ...] | None = None
    """``--tasks`` (``None``: every task)."""
    k: int = 5
    seed: int = 0
    suite_dir: Path | None = None
    yes: bool = False
    """Accept a ``--suite-dir`` suite without asking."""


@dataclass(frozen=True)
class ProviderOptions:
    """Where the model's answers come from (flags override config.toml)."""

    model: str | None = None
    base_url: str | None = None
    preset: str | None = None
    """``--provider NAME``: a provider preset (``alisio.core.harness.presets``)."""
    script: Path | None = None
    """Scripted assistant turns instead of a model: one file for every run, or a directory of <task>.json."""
    agent: str | None = None
    """``--agent NAME``: every task runs with this agent of the configuration (built-in or external)."""
    faults: FaultSpec | None = None
    """``--faults SPEC``: provider faults injected into every arm (a variant's own ``faults`` replaces it)."""


@dataclass(frozen=True)
class Permissions:
    """What the person running the command grants: every task's policy must stay within it."""

    write: bool = False
    process: bool = False
    external: bool = False
    analysis: bool = False
    read_only: bool = False
    allow_suite_full: bool = False

    @property
    def granted(self) -> frozenset[Effect]:
        """Read, plus each effect whose ``--allow-*`` flag is on; read only with ``--read-only``."""
        if self.read_only:
            return frozenset({Effect.READ})
        flags = {
            Effect.WRITE: self.write,
            Effect.PROCESS: self.process,
            Effect.EXTERNAL: self.external,
            Effect.ANALYSIS: self.analysis,
        }
        return frozenset({Effect.READ} | {effect for effect, on in flags.items() if on})


@dataclass(frozen=True)
class Output:
    """Where the report files go, and what is printed."""

    out: Path | None = None
    """Write the report files directly here (default: a new ``<dataDir>/eval/<runId>/``)."""
    force: bool = False
    """Replace the report an ``out`` directory already holds."""
    keep: bool = False
    """Keep each run's temporary workspace and print its path."""
    json: bool = False
    quiet: bool = False
    """Print only the final table (no headline, no line per run)."""
    junit: Path | None = None
    """``--junit FILE``: also write the results as JUnit XML (a row of ``alisio.shell.lab.outputs``)."""
    step_summary: bool = False
    """Append the Markdown summary to ``$GITHUB_STEP_SUMMARY`` when it is set (``eval run``, ``eval
    variants``; ``eval ci`` appends one summary of every suite itself)."""
    label: str | None = None
    """``--label TEXT``: a name for the run, kept in its conditions (``eval runs``, the headline, the report)."""
    register: bool = True
    """Register an ``out`` directory in the data directory (``eval runs`` lists it); ``eval ci`` does not."""


@dataclass(frozen=True)
class Caps:
    """``--max-total-tokens`` and ``--max-cost-usd`` (``None``: not given)."""

    max_total_tokens: int | None = None
    max_cost_usd: float | None = None

    @property
    def any(self) -> bool:
        """Whether a cap was given."""
        return self.max_total_tokens is not None or self.max_cost_usd is not None

    @property
    def flag(self) -> str:
        """The first cap given, as its flag (``--max-total-tokens``), for one-line refusals."""
        return "--max-total-tokens" if self.max_total_tokens is not None else "--max-cost-usd"


@dataclass(frozen=True)
class LabRequest:
    """One lab command, fully described: the pipeline needs nothing else."""

    selection: Selection
    mode: LabMode = LabMode.LIVE
    provider: ProviderOptions = field(default_factory=ProviderOptions)
    permissions: Permissions = field(default_factory=Permissions)
    output: Output = field(default_factory=Output)
    cassette_dir: Path | None = None
    """Replay: where cassettes are read; record: where they are written (default ``<suite>/cassettes``)."""
    variants_file: Path | None = None
    """``eval variants``: the compare.json file (``None``: one arm, the configuration as it is)."""
    context_file: Path | None = None
    """``--context FILE``: the files and text every run gets (``alisio.shell.lab.contexts``); ``eval
    variants`` declares a context per variant in compare.json instead."""
    rates: Rates | None = None
    """``--input-rate``/``--output-rate`` (they win over config.toml's ``[prices."MODEL"]``)."""
    caps: Caps = field(default_factory=Caps)
    """``--max-total-tokens``/``--max-cost-usd``: no new run starts once one is reached."""
    default_config: bool = False
    """Use the default measured configuration and never read config.toml (``eval ci``, record-bundled)."""
    jobs: int | None = None
    """Runs at once (``None``: ``[lab] jobs`` of config.toml, else 4 live, the CPUs for replay and scripted)."""
    executor: ExecutorKind = ExecutorKind.THREAD
    ray_address: str | None = None
    """``--executor ray``: the cluster to join (``--ray-address``, else ``RAY_ADDRESS``); ``None`` starts a
    local Ray instance for the command."""
    resume: Path | None = None
    """``eval run --resume``: the report directory of the run to continue (its plan.json says what it runs)."""
    retry_errors: bool = False
    """With ``resume``: also run again the runs that ended ``error`` (their records are kept apart)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """The environment (config home, data home, credentials to keep out of commands and cassettes)."""
    sandbox: SandboxKind | None = None
    """``--sandbox``: where commands run (``None``: ``[lab] sandbox`` of config.toml, else ``none``)."""
    sequential: SequentialPlan | None = None
    """``--sequential`` or ``--until-width``: stop each task when its statistic decides (``selection.k`` is
    then the design's ``max_k``); ``None``: run every planned run."""
    shard: ShardChoice | None = None
    """``--shard I/N``: run only this slice of the plan (``alisio.core.lab.plans.shards``); ``None``: all of it."""
    planned: RunManifest | None = None
    """``--plan FILE``: the plan ``eval plan`` wrote, which what this command would run must match."""
    planned_from: Path | None = None
    """The ``--plan`` file, for messages."""
    reuse: str | None = None
    """``--reuse RUN|DIR``: take the stored runs whose fingerprint matches instead of running them."""
    dry_run: bool = False
    """``--dry-run``: print the plan and an estimate of what it would spend; run nothing."""


def rates_from(input_rate: float | None, output_rate: float | None) -> Rates | None:
    """``--input-rate`` and ``--output-rate`` as Rates (``None`` when neither).

    Raises:
        CommandError: one without the other, or a negative rate.
    """
    if (input_rate is None) != (output_rate is None):
        raise CommandError("--input-rate and --output-rate go together: pass both or neither")
    if input_rate is None or output_rate is None:
        return None
    if input_rate < 0 or output_rate < 0:
        raise CommandError("--input-rate and --output-rate are USD per million tokens: 0 or more")
    return Rates(input_rate=input_rate, output_rate=output_rate)
