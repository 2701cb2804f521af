"""The options of the commands, in groups: Selection, Provider, Permissions, Output, Execution, Resume (and
Plan, ``alisio.shell.cli.plan_flags``; Sequential, ``alisio.shell.cli.seq_flags``).

The spec writes global flags after the sub-command (``alisio eval run X --allow-write``), so each command
declares the groups it uses. A group is a frozen dataclass whose fields are typer options, defined once; a
command takes the group as one parameter (``selection: SelectionFlags``) and ``grouped`` spreads its fields
into typer options and gathers them back into the dataclass for the call. The help shows each group as a panel.

A command that has no use for some options of a group, or says one in its own words, takes the group as
``Annotated[ProviderFlags, Take(omit=("agent",), help={"script": "..."})]``: the options it omits keep their
defaults, and every other option of the group is the command's. So an option is one edit: a field of its
group, which every command taking the group then has (``eval run``, ``eval record``, ``eval variants``, ``eval
plan`` and ``alisio run`` share the groups; docs/architecture.md, "Adding an option").

Metavars name what a value is (``N``, ``DIR``, ``FILE``, ``IDS``, ``URL``); ``alisio.shell.cli.style``
shows them instead of typer's type placeholders. Ranges are checked by ``check_min`` (a one-line usage
error, exit 1), not by typer, so the help shows no ``[x>=1]``.
Import only typer and the standard library here: ``alisio --help`` must stay fast.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from typer.models import OptionInfo

from alisio.core.harness.presets import PRESET_NAMES

__all__ = [
    "FAULTS_SPEC_HELP",
    "OUTPUT",
    "PERMISSIONS",
    "PROVIDER",
    "SELECTION",
    "BaseUrl",
    "Cwd",
    "ExecutionFlags",
    "ExecutorChoice",
    "ExecutorFlag",
    "Faults",
    "Force",
    "InputRate",
    "Jobs",
    "Json",
    "JsonLines",
    "Junit",
    "ModeFlag",
    "Model",
    "OptionalSuiteArg",
    "OutputFlags",
    "OutputRate",
    "PermissionFlags",
    "ProviderFlags",
    "ProviderPreset",
    "RayAddress",
    "ResumeFlags",
    "SandboxChoice",
    "SandboxFlag",
    "SelectionFlags",
    "SuiteArg",
    "Take",
    "check_min",
    "grouped",
    "option",
]

SELECTION = "Selection"
PROVIDER = "Provider"
PERMISSIONS = "Permissions"
OUTPUT = "Output"
EXECUTION = "Execution"


def option(*names: str, help: str, panel: str, metavar: str | None = None, **kwargs: Any) -> Any:
    return typer.Option(*names, help=help, rich_help_panel=panel, metavar=metavar, **kwargs)


CONTEXT_HELP = "Files and text added to every run, named by every report (docs/context-experiments.md)."
# --- options used alone -----------------------------------------------------------------------------------

Json = Annotated[
    bool, option("--json", help="Machine-readable JSON on stdout; messages go to stderr.", panel=OUTPUT)
]
JsonLines = Annotated[
    bool,
    option(
        "--json",
        help="Machine-readable JSON Lines on stdout (one JSON object per line, each as it is ready); messages "
        "go to stderr.",
        panel=OUTPUT,
    ),
]
AllowWrite = Annotated[
    bool, option("--allow-write", help="Grant the write effect (file edits).", panel=PERMISSIONS)
]
AllowProcess = Annotated[
    bool, option("--allow-process", help="Grant the process effect (bash).", panel=PERMISSIONS)
]
AllowExternal = Annotated[
    bool, option("--allow-external", help="Grant the external effect (network fetches).", panel=PERMISSIONS)
]
AllowAnalysis = Annotated[
    bool, option("--allow-analysis", help="Grant the analysis effect (static checks).", panel=PERMISSIONS)
]
ReadOnly = Annotated[
    bool,
    option("--read-only", help="Deny every effect but read, whatever else is granted.", panel=PERMISSIONS),
]
AllowSuiteFull = Annotated[
    bool, option("--allow-suite-full", help='Let tasks with mode "full" run.', panel=PERMISSIONS)
]
Model = Annotated[
    str | None,
    option("--model", help="Model name; overrides the configuration.", panel=PROVIDER, metavar="NAME"),
]
BaseUrl = Annotated[
    str | None,
    option(
        "--base-url",
        help="Base URL, with its version segment; overrides the configuration and the preset.",
        panel=PROVIDER,
        metavar="URL",
    ),
]
ProviderPreset = Annotated[
    str | None,
    option(
        "--provider",
        help=f"A provider preset: {', '.join(PRESET_NAMES)} (its base URL, api and key variable); overrides "
        "provider.preset.",
        panel=PROVIDER,
        metavar="NAME",
    ),
]
Script = Annotated[
    Path | None,
    option(
        "--script",
        help="Play scripted assistant turns instead of a model (testing): one JSON file for every run, "
        "or a directory of <task-id>.json.",
        panel=PROVIDER,
        metavar="FILE|DIR",
    ),
]
SuiteArg = Annotated[
    str | None,
    typer.Argument(
        help="A suite directory (or its suite.json), or a bundled suite's id or directory name (not needed "
        "when --suite-dir holds one suite).",
        show_default=False,
        metavar="SUITE",
    ),
]
Tasks = Annotated[
    str | None,
    option("--tasks", help="Only these tasks: id,id (or suite/id).", panel=SELECTION, metavar="IDS"),
]
Seed = Annotated[
    int,
    option(
        "--seed", help="Seed of the run order; each run gets seed + repetition.", panel=SELECTION, metavar="N"
    ),
]
SuiteDir = Annotated[
    Path | None,
    option(
        "--suite-dir",
        help="A suite, or a directory of suites, outside the bundled ones.",
        panel=SELECTION,
        metavar="DIR",
    ),
]
Yes = Annotated[
    bool,
    option("--yes", help="Accept a suite from outside the bundled ones without asking.", panel=SELECTION),
]
Quiet = Annotated[
    bool,
    option(
        "--quiet",
        "-q",
        help="Print only the final table and where the report went: no headline, no line per run.",
        panel=OUTPUT,
    ),
]
Junit = Annotated[
    Path | None,
    option(
        "--junit",
        help="Also write JUnit XML here (a testsuite per suite, a testcase per task) for CI test reports.",
        panel=OUTPUT,
        metavar="FILE",
    ),
]
Keep = Annotated[
    bool, option("--keep", help="Keep each run's temporary directory; print its path.", panel=OUTPUT)
]
Force = Annotated[
    bool, option("--force", help="Replace the report the --out directory already holds.", panel=OUTPUT)
]
InputRate = Annotated[
    float | None,
    option(
        "--input-rate", help="USD per million input tokens (with --output-rate).", panel=OUTPUT, metavar="USD"
    ),
]
OutputRate = Annotated[
    float | None,
    option(
        "--output-rate",
        help="USD per million output tokens (with --input-rate).",
        panel=OUTPUT,
        metavar="USD",
    ),
]
Cwd = Annotated[
    Path | None,
    typer.Option("--cwd", help="Workspace directory (default: the current directory).", metavar="DIR"),
]


def check_min(flag: str, value: float | None, minimum: float, maximum: float | None = None) -> None:
    """A usage error (``typer.BadParameter``, exit 1) when ``value`` is below ``minimum`` (or above
    ``maximum``)."""
    if value is not None and value < minimum:
        raise typer.BadParameter(f"{value} is below {minimum:g}", param_hint=f"'{flag}'")
    if value is not None and maximum is not None and value > maximum:
        raise typer.BadParameter(f"{value} is above {maximum:g}, the most allowed", param_hint=f"'{flag}'")


# --- groups -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SelectionFlags:
    """Selection: which tasks, how many repetitions, in which order, from where."""

    tasks: Tasks = None
    k: Annotated[
        int | None,
        option(
            "--k",
            "-k",
            help="Repetitions per task (default 5; 1 in replay; at most 10000).",
            panel=SELECTION,
            metavar="N",
            show_default=False,
        ),
    ] = None
    seed: Seed = 0
    suite_dir: SuiteDir = None
    yes: Yes = False


AgentFlag = Annotated[
    str | None,
    option(
        "--agent",
        help="Run every task with this agent of config.toml's \\[agents.NAME] (built-in or external: codex, "
        "opencode, aider, claude-code, gemini-cli, command; docs/agents.md); overrides a task's agent.",
        panel=PROVIDER,
        metavar="NAME",
    ),
]


FAULTS_SPEC_HELP = (
    "Inject provider faults into a share of the model calls, from a seed: KIND:RATE entries (429, 500, 503, "
    "stall, cut, slow) and settings seed=N, retry-after=S, drip-ms=MS, e.g. 429:0.1,cut:0.05,seed=7 "
    "(docs/faults.md)."
)
"""What every command's ``--faults`` says first (``eval variants`` and ``alisio run`` say the rest their way)."""
Faults = Annotated[
    str | None,
    option(
        "--faults",
        help=FAULTS_SPEC_HELP + " Recorded in each run and in the report's conditions.",
        panel=PROVIDER,
        metavar="SPEC",
    ),
]


class ModeFlag(StrEnum):
    """``--mode``: live (the configured provider) or replay (cassettes)."""

    LIVE = "live"
    REPLAY = "replay"


@dataclass(frozen=True)
class ProviderFlags:
    """Provider: where the answers come from, and which agent asks."""

    model: Model = None
    base_url: BaseUrl = None
    preset: ProviderPreset = None
    script: Script = None
    agent: AgentFlag = None
    mode: Annotated[
        ModeFlag,
        option(
            "--mode", help="live (a provider) or replay (cassettes).", panel=PROVIDER, metavar="live|replay"
        ),
    ] = ModeFlag.LIVE
    cassette_dir: Annotated[
        Path | None,
        option(
            "--cassette-dir",
            help="Cassettes to replay (default <suite>/cassettes).",
            panel=PROVIDER,
            metavar="DIR",
        ),
    ] = None
    faults: Faults = None
    context: Annotated[
        Path | None, option("--context", help=CONTEXT_HELP, panel=PROVIDER, metavar="FILE")
    ] = None


@dataclass(frozen=True)
class PermissionFlags:
    """Permissions: the effects granted (``alisio run`` puts them in the policy's allow; the lab's tasks must stay
    within them)."""

    allow_write: AllowWrite = False
    allow_process: AllowProcess = False
    allow_external: AllowExternal = False
    allow_analysis: AllowAnalysis = False
    read_only: ReadOnly = False
    allow_suite_full: AllowSuiteFull = False

    def granted(self) -> dict[str, bool]:
        """``{"write": on, ...}``, each effect's ``--allow-*`` flag."""
        return {
            "write": self.allow_write,
            "process": self.allow_process,
            "external": self.allow_external,
            "analysis": self.allow_analysis,
        }


@dataclass(frozen=True)
class OutputFlags:
    """Output: where the report goes and what is printed."""

    out: Annotated[
        Path | None,
        option("--out", help="Write the report files directly here.", panel=OUTPUT, metavar="DIR"),
    ] = None
    force: Force = False
    keep: Keep = False
    json_output: JsonLines = False
    quiet: Quiet = False
    junit: Junit = None
    input_rate: InputRate = None
    output_rate: OutputRate = None
    label: Annotated[
        str | None,
        option(
            "--label",
            help="A name for the run, shown in eval runs, the headline and the report.",
            panel=OUTPUT,
            metavar="TEXT",
        ),
    ] = None


F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Take:
    """How a command takes a group (``Annotated[Group, Take(...)]``): the options it has no use for (``omit``:
    they keep their defaults), and those it describes in its own words (``help``, ``metavar``: by field name).
    Every other option of the group is the command's."""

    omit: tuple[str, ...] = ()
    help: Mapping[str, str] = field(default_factory=dict)
    metavar: Mapping[str, str] = field(default_factory=dict)


def _reworded(annotation: Any, help: str | None, metavar: str | None) -> Any:
    """``Annotated[T, typer option]`` with the option's help and metavar replaced (``None``: kept)."""
    base, *extras = typing.get_args(annotation)
    infos = []
    for extra in extras:
        info = copy.copy(extra)
        if isinstance(extra, OptionInfo):
            info.help = extra.help if help is None else help
            info.metavar = extra.metavar if metavar is None else metavar
        infos.append(info)
    return Annotated[(base, *infos)]


def _group_params(cls: type[Any], take: Take) -> tuple[list[inspect.Parameter], list[str]]:
    """The typer parameters of the group ``cls`` as ``take`` takes it, and their field names."""
    field_hints = typing.get_type_hints(cls, include_extras=True)
    fields = dataclasses.fields(cls)
    unknown = (set(take.omit) | set(take.help) | set(take.metavar)) - {f.name for f in fields}
    if unknown:
        raise TypeError(f"Take names no option of {cls.__name__}: {', '.join(sorted(unknown))}")
    params = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=f.default,
            annotation=_reworded(field_hints[f.name], take.help.get(f.name), take.metavar.get(f.name))
            if f.name in take.help or f.name in take.metavar
            else field_hints[f.name],
        )
        for f in fields
        if f.name not in take.omit
    ]
    return params, [param.name for param in params]


def grouped(func: F) -> F:
    """``func`` with each dataclass-typed parameter (a group, or ``Annotated[group, Take(...)]``) spread into its
    fields (typer options) for typer.

    The wrapper typer sees has the flat signature; it gathers the values back into each dataclass (an omitted
    option at its default) and calls ``func`` with them. Field names are unique across a command's groups
    (typer passes them by name): a clash raises ``TypeError`` when the command is defined.
    """
    hints = typing.get_type_hints(func, include_extras=True)
    flat: list[inspect.Parameter] = []
    groups: list[tuple[str, type[Any], list[str]]] = []
    for name, param in inspect.signature(func).parameters.items():
        hint = hints[name]
        cls, take = hint, Take()
        if typing.get_origin(hint) is Annotated:
            cls, *extras = typing.get_args(hint)
            take = next((extra for extra in extras if isinstance(extra, Take)), take)
        if isinstance(cls, type) and dataclasses.is_dataclass(cls):
            params, names = _group_params(cls, take)
            flat += params
            groups.append((name, cls, names))
        else:
            flat.append(param.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hint))
    clash = sorted({p.name for p in flat if [q.name for q in flat].count(p.name) > 1})
    if clash:
        raise TypeError(f"{func.__name__}: options named twice across its groups: {', '.join(clash)}")

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> Any:
        for name, cls, names in groups:
            kwargs[name] = cls(**{field: kwargs.pop(field) for field in names})
        return func(**kwargs)

    del wrapper.__wrapped__  # typer reads the flat signature below, not func's
    signature = inspect.Signature(flat, return_annotation=hints.get("return", inspect.Signature.empty))
    setattr(wrapper, "__signature__", signature)  # noqa: B010 (functools' wrapper type has no such attribute)
    wrapper.__annotations__ = {param.name: param.annotation for param in flat}
    return typing.cast(F, wrapper)


MaxTotalTokens = Annotated[
    int | None,
    option(
        "--max-total-tokens",
        help="Start no new run once the finished runs reported this many main-loop tokens (input + output); "
        "the runs in flight finish.",
        panel=EXECUTION,
        metavar="N",
        show_default=False,
    ),
]
MaxCostUsd = Annotated[
    float | None,
    option(
        "--max-cost-usd",
        help="Start no new run once the finished runs cost this much at the model's rates (--input-rate and "
        '--output-rate, or \\[prices."MODEL"] in config.toml); the runs in flight finish.',
        panel=EXECUTION,
        metavar="USD",
        show_default=False,
    ),
]
Jobs = Annotated[
    int | None,
    option(
        "--jobs",
        "-j",
        help="Runs at once (default: \\[lab] jobs in config.toml, else 4 live, the number of CPUs for replay "
        "and scripted runs).",
        panel=EXECUTION,
        metavar="N",
        show_default=False,
    ),
]


class ExecutorChoice(StrEnum):
    """``--executor``: threads of this process, or Ray tasks."""

    THREAD = "thread"
    RAY = "ray"


ExecutorFlag = Annotated[
    ExecutorChoice,
    option(
        "--executor",
        help="thread (this machine) or ray (each run a Ray task: a local Ray instance, or the cluster of "
        "--ray-address; needs pip install 'alisio\\[ray]').",
        panel=EXECUTION,
        metavar="thread|ray",
    ),
]
RayAddress = Annotated[
    str | None,
    option(
        "--ray-address",
        help="With --executor ray: join this Ray cluster (HOST:PORT of its head; default RAY_ADDRESS, "
        "else a local Ray instance is started for the command).",
        panel=EXECUTION,
        metavar="ADDR",
        show_default=False,
    ),
]


class SandboxChoice(StrEnum):
    """``--sandbox``: where the agent's commands and the command verifiers run."""

    NONE = "none"
    BWRAP = "bwrap"


SandboxFlag = Annotated[
    SandboxChoice | None,
    option(
        "--sandbox",
        help="Where bash commands, external agents and command verifiers run: none (as you: an agent can read "
        "the API key from alisio only when alisio runs as root) or bwrap (bubblewrap: read-only root, the "
        "copy at /workspace, no network unless external is granted, limits; refused when it cannot run). "
        "Default: \\[lab] sandbox in config.toml, else none.",
        panel=EXECUTION,
        metavar="bwrap|none",
        show_default=False,
    ),
]


@dataclass(frozen=True)
class ExecutionFlags:
    """Execution: how many runs at once, and where."""

    jobs: Jobs = None
    executor: ExecutorFlag = ExecutorChoice.THREAD
    ray_address: RayAddress = None
    sandbox: SandboxFlag = None
    max_total_tokens: MaxTotalTokens = None
    max_cost_usd: MaxCostUsd = None


OptionalSuiteArg = Annotated[
    str | None,
    typer.Argument(
        help="A suite directory (or its suite.json), or a bundled suite's id or directory name (not needed "
        "when --suite-dir holds one suite; not with --resume).",
        show_default=False,
        metavar="SUITE",
    ),
]


@dataclass(frozen=True)
class ResumeFlags:
    """Resume: continue a run in its own report directory."""

    resume: Annotated[
        str | None,
        option(
            "--resume",
            help="Continue this run (its report directory, a variants job's root, or its run id): only the "
            "planned runs without a record run, then the reports are rewritten.",
            panel=SELECTION,
            metavar="DIR|RUN_ID",
        ),
    ] = None
    retry_errors: Annotated[
        bool,
        option(
            "--retry-errors",
            help="With --resume: also run again the runs that ended error (their records are kept apart).",
            panel=SELECTION,
        ),
    ] = False
