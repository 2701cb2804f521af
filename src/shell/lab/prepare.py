"""Steps 1-6 of the lab's pipeline (``alisio.shell.lab.pipeline`` lists all ten and carries out 7-10): everything
checked before anything runs, and a command's plan previewed without running it (``--dry-run``, ``eval plan``).

``prepared`` does steps 1-6 and holds what they found (``Prepared``) for the block, closing the provider plan
after it: ``_checked`` steps 1-5 (configuration, suite, variants, preflight, outputs), then step 6 (the
sequential design, the sandbox, the provider plan, the external agents, the spending caps). ``Prepared.start``
is the command's ``LabStart`` once its run id and directory are known; ``plan_of`` its plan.
``preview_request`` does steps 1-6 and the plan for a command that is not to run: nothing is written and
nothing spent.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from alisio.core.harness.config import LabSettings, MeasuredConfig, config_hash
from alisio.core.harness.events import Effect
from alisio.core.harness.faults import spec_text
from alisio.core.harness.sandbox import SandboxKind
from alisio.core.lab.comparisons.variants import VariantsPlan, interleave
from alisio.core.lab.plans.manifest import RunManifest
from alisio.core.lab.plans.seq_run import sequential_plan
from alisio.core.lab.reports.report import AnswerSource
from alisio.core.lab.reports.seq_block import SequentialPlan
from alisio.core.lab.suites.schedule import RunSpec, plan_runs
from alisio.core.lab.suites.suite import Task
from alisio.shell.config_home import LoadedConfig, data_dir, load_config
from alisio.shell.errors import CommandError, expect
from alisio.shell.lab.agent_plan import (
    AgentPlan,
    agent_plan,
    agents_of,
    check_isolation,
    replay_placeholder,
    uses_external,
)
from alisio.shell.lab.contexts import LoadedContext, arm_contexts, check_context_agents, check_protected
from alisio.shell.lab.directory import created_at_for, run_id_for
from alisio.shell.lab.model import LabStart, Ui
from alisio.shell.lab.outputs import Checked, Output, check_outputs
from alisio.shell.lab.plans import ProviderPlan, check_sampling, live_plan, scripted_plan
from alisio.shell.lab.preflight import Agents, preflight
from alisio.shell.lab.request import ExecutorKind, LabMode, LabRequest
from alisio.shell.lab.resume import new_manifest
from alisio.shell.lab.run_one import Arm
from alisio.shell.lab.seq_watch import checked_sequential
from alisio.shell.lab.slices import check_planned, plan_manifest, sliced
from alisio.shell.lab.spend import check_spend, priced_arms
from alisio.shell.lab.suite_choice import SuiteChoice, bundled_suites_root, find_suite
from alisio.shell.lab.variants import read_variants
from alisio.shell.sandbox.bwrap import Sandbox, SandboxUnavailable, require_sandbox

__all__ = [
    "LIVE_JOBS",
    "Prepared",
    "Preview",
    "jobs_for",
    "plan_of",
    "prepared",
    "preview_request",
    "sandbox_for",
]


def _configuration(request: LabRequest) -> tuple[MeasuredConfig, LoadedConfig | None]:
    """The measured configuration and the loaded config file (``None`` with ``default_config``)."""
    if request.default_config:
        return MeasuredConfig(), None
    config = expect(load_config(request.env))
    return config.config.measured, config


def _selected(
    request: LabRequest,
    choice: SuiteChoice,
    measured: Sequence[tuple[str | None, MeasuredConfig]],
    agents: Mapping[str | None, Agents],
    sandboxed: bool,
) -> tuple[Task, ...]:
    """The tasks, once they may run under every arm's configuration (agents may differ between variants;
    ``sandboxed``: the command runs under ``--sandbox bwrap``, which some tasks need).

    A problem every arm shares is said once; otherwise each line names its variant.
    """
    selection, permissions = request.selection, request.permissions
    selected: tuple[Task, ...] = ()
    failing: list[tuple[str | None, tuple[str, ...]]] = []
    for variant, config in measured:
        try:
            selected = preflight(
                choice.loaded,
                selection.tasks,
                permissions.granted,
                read_only=permissions.read_only,
                allow_suite_full=permissions.allow_suite_full,
                measured=config,
                agents=agents[variant],
                sandboxed=sandboxed,
            )
        except CommandError as error:
            failing.append((variant, error.lines))
    if not failing:
        return selected
    if len(failing) == len(measured) and all(lines == failing[0][1] for _, lines in failing):
        raise CommandError(*failing[0][1])
    raise CommandError(*(f"variant {variant}: {line}" for variant, lines in failing for line in lines))


def _provider_plan(
    request: LabRequest,
    choice: SuiteChoice,
    tasks: tuple[Task, ...],
    measured: MeasuredConfig,
    loaded: LoadedConfig | None,
    say: Callable[[str], None],
    *,
    faulted: bool = False,
) -> ProviderPlan:
    """The provider of every run: the cassettes (replay), the script, or the configured provider.

    ``faulted``: some arm injects faults, so a script is served over HTTP (``scripted_plan``'s ``over_http``)."""
    if request.mode is LabMode.REPLAY and uses_external(request, tasks, loaded.external if loaded else ()):
        return replay_placeholder()  # the external agents' proxies serve their cassettes (agent_plan)
    if request.mode is LabMode.REPLAY:
        from alisio.shell.lab.cassettes import cassette_dir_for
        from alisio.shell.lab.record import (
            check_cut_points,
            check_recorded_faults,
            config_hash_warnings,
            load_cassettes,
            replay_plan,
        )

        directory = cassette_dir_for(choice.loaded.directory, request.cassette_dir)
        cassettes = load_cassettes(choice.loaded, tasks, directory)
        for warning in config_hash_warnings(cassettes, config_hash(measured)):
            say(warning)
        check_recorded_faults(cassettes, request.provider.faults)
        check_cut_points(cassettes, request.provider.faults, directory)
        return replay_plan(cassettes, request.provider.faults)
    options = request.provider
    if options.script is not None:
        timeout_ms = None if loaded is None else loaded.config.provider.timeout_ms
        return scripted_plan(options.script, tasks, options.model, over_http=faulted, timeout_ms=timeout_ms)
    if loaded is None:
        raise CommandError("a live run needs the configuration (pass --script to play scripted turns)")
    return live_plan(
        loaded, options.model, options.base_url, request.env, jobs_for(request, loaded), options.preset
    )


def sandbox_for(
    kind: SandboxKind | None, lab: LabSettings, env: Mapping[str, str], say: Callable[[str], None]
) -> tuple[SandboxKind, Sandbox | None]:
    """The sandbox a command asked for (``--sandbox``, else ``[lab] sandbox``, else none), checked here.

    Raises:
        CommandError: ``bwrap`` asked for and unavailable (one line: the install hint, or why it cannot run).
    """
    chosen = kind or lab.sandbox or SandboxKind.NONE
    if chosen is SandboxKind.NONE:
        return chosen, None
    try:
        sandbox = require_sandbox(lab.sandbox_limits(), env)
    except SandboxUnavailable as error:
        raise CommandError(str(error)) from None
    for warning in sandbox.warnings:
        say(warning)
    return chosen, sandbox


def plan_of(start: LabStart) -> tuple[RunSpec, ...]:
    """The plan: task x repetition in seeded order (repetition-major when sequential); every variant over
    the same slots, A,B then B,A."""
    task_ids = [task.id for task in start.tasks]
    ids = None if start.variants is None else [variant.id for variant in start.variants.variants]
    if start.sequential is not None:  # repetition-major: each task's outcomes grow in repetition order
        return sequential_plan(ids, task_ids, start.k, start.seed).unwrap()
    if ids is None:
        return plan_runs(task_ids, start.k, start.seed).unwrap()  # ids are unique and k >= 1 (checked)
    return interleave(ids, task_ids, start.k, start.seed).unwrap()


LIVE_JOBS = 4
"""Runs at once against a live provider when neither ``--jobs`` nor ``[lab] jobs`` says."""


def jobs_for(request: LabRequest, loaded: LoadedConfig | None) -> int:
    """``--jobs``, else ``[lab] jobs``, else 4 live and the number of CPUs for replay and scripted runs."""
    if request.jobs is not None:
        return request.jobs
    if loaded is not None and loaded.config.lab.jobs is not None:
        return loaded.config.lab.jobs
    if request.mode is LabMode.REPLAY or request.provider.script is not None:
        return os.cpu_count() or 1
    return LIVE_JOBS


def _arms(
    request: LabRequest,
    measured: MeasuredConfig,
    variants: VariantsPlan | None,
    run_id: str,
    root: Path,
    contexts: Mapping[str | None, LoadedContext],
) -> tuple[Arm, ...]:
    faults = request.provider.faults
    if variants is None:
        agent, context = request.provider.agent, contexts.get(None)
        arm = Arm(
            variant=None,
            measured=measured,
            directory=root,
            run_id=run_id,
            agent=agent,
            faults=faults,
            context=context,
        )
        return (arm,)
    return tuple(
        Arm(
            variant=v.id,
            measured=v.measured,
            directory=root / v.id,
            run_id=f"{run_id}/{v.id}",
            agent=v.agent or request.provider.agent,
            model=v.model,
            faults=v.faults if v.own_faults else faults,
            context=contexts.get(v.id),
        )
        for v in variants.variants
    )


def _checked(
    request: LabRequest, outputs: Sequence[Output]
) -> tuple[MeasuredConfig, LoadedConfig | None, SuiteChoice, VariantsPlan | None, tuple[Task, ...]]:
    """Steps 1-5: the configuration, the suite, the variants, the tasks and the outputs, all checked."""
    measured, loaded = _configuration(request)  # step 1
    choice = find_suite(request.selection.suite, request.selection.suite_dir, bundled_suites_root())  # step 2
    variants = None
    if request.variants_file is not None:  # step 3
        variants = read_variants(request.variants_file, measured, choice.loaded)
    configs = [(None, measured)] if variants is None else [(v.id, v.measured) for v in variants.variants]
    external = loaded.external if loaded is not None else ()
    chosen = {v.id: (v.agent, v.model) for v in variants.variants} if variants is not None else {}
    lab_sandbox = loaded.config.lab.sandbox if loaded is not None else None
    sandboxed = (request.sandbox or lab_sandbox) is SandboxKind.BWRAP
    tasks = _selected(request, choice, configs, agents_of(request, external, chosen), sandboxed)  # step 4
    _check_mcp(request, loaded)
    # step 5: the outputs table's rows, and the Ray address
    check_outputs(Checked(request, choice.loaded, tuple(variant for variant, _ in configs)), outputs)
    if request.executor is ExecutorKind.RAY and request.ray_address is not None:
        from alisio.shell.lab.ray_executor import check_address

        check_address(request.ray_address)
    return measured, loaded, choice, variants, tasks


def _check_mcp(request: LabRequest, loaded: LoadedConfig | None) -> None:
    """config.toml's MCP servers need ``--allow-process`` (each is a process) and this machine (a Ray worker
    does not get them); refused before the first run."""
    from alisio.core.harness.mcp import mcp_grant_problem

    if loaded is None or not loaded.config.mcp_servers:
        return
    if request.executor is ExecutorKind.RAY:
        raise CommandError(
            f"--executor ray: {loaded.path}: mcp.servers are not passed to Ray workers yet (remove them, or run "
            "on this machine); nothing was run"
        )
    ceiling = frozenset({Effect.READ}) if request.permissions.read_only else request.permissions.granted
    problem = mcp_grant_problem((server.name for server in loaded.config.mcp_servers), ceiling)
    if problem is not None:
        raise CommandError(f"{loaded.path}: mcp.servers: {problem}; nothing was run")


def _agents(
    request: LabRequest,
    loaded: LoadedConfig | None,
    choice: SuiteChoice,
    variants: VariantsPlan | None,
    tasks: Sequence[Task],
    plan: ProviderPlan,
    sandbox: Sandbox | None,
    say: Callable[[str], None],
) -> AgentPlan:
    """The external agents' runners of the command (``agent_plan``), checked for where they run
    (``check_isolation``: refused under a sandbox that cannot relay, a warning without one)."""
    from alisio.shell.lab.cassettes import cassette_dir_for

    source = str(loaded.path) if loaded is not None else "config.toml"
    external = loaded.external if loaded is not None else ()
    arm_agents = [request.provider.agent, *(v.agent for v in (variants.variants if variants else ()))]
    cassettes = cassette_dir_for(choice.loaded.directory, request.cassette_dir)
    suite = (choice.loaded.suite.suite_id, choice.loaded.suite.suite_version)
    if request.executor is ExecutorKind.RAY and plan.local_only:
        raise CommandError(
            f"--executor ray: {', '.join(plan.local_only)} is not passed to Ray workers yet (remove it, or run "
            "on this machine); nothing was run"
        )
    agents = agent_plan(request, external, source, tasks, arm_agents, plan, cassettes, suite)
    check_isolation(sorted(agents.runners), sandbox is not None, request.env, plan.key, say)
    return agents


def _check_faults(request: LabRequest, variants: VariantsPlan | None) -> bool:
    """Whether some arm injects faults; refused (one line) where faults cannot be injected.

    Raises:
        CommandError: a variant's faults with ``eval record`` or replay, ``cut`` faults with a replay of more
            than the recorded repetition (a cassette keeps where the recorded run's cuts broke, not where
            another schedule's would).
    """
    given = [("--faults", request.provider.faults)] + [
        (f"{request.variants_file}: variant {v.id}: faults", v.faults)
        for v in (variants.variants if variants is not None else ())
        if v.own_faults
    ]
    named = [name for name, spec in given if spec is not None]
    if not named:
        return False
    if request.mode in (LabMode.RECORD, LabMode.REPLAY):
        verb = "eval record" if request.mode is LabMode.RECORD else "a replay"
        if named[0] != "--faults":
            raise CommandError(f"{named[0]}: {verb} takes the command's --faults only, not a variant's")
        spec = request.provider.faults
        cuts = spec is not None and any(kind == "cut" and rate > 0 for kind, rate in spec.rates)
        further = request.selection.k > 1 or request.sequential is not None
        if cuts and request.mode is LabMode.REPLAY and further:
            raise CommandError(
                f"--faults {spec_text(spec)}: a replay with cut faults runs the recorded repetition only (-k 1): "
                "the cassette keeps where the recording's cuts broke, not where another repetition's would"
            )
    return True


def _contexts(
    request: LabRequest,
    loaded: LoadedConfig | None,
    choice: SuiteChoice,
    variants: VariantsPlan | None,
    tasks: Sequence[Task],
) -> dict[str | None, LoadedContext]:
    """Each arm's context read (``--context``, each variant's) and checked against the arm's agents."""
    contexts = arm_contexts(request.context_file, variants, request.variants_file)
    if not contexts:
        return contexts
    if request.executor is ExecutorKind.RAY:
        raise CommandError("--executor ray: contexts are not passed to Ray workers yet; nothing was run")
    arm_agents: dict[str | None, str | None] = {None: request.provider.agent}
    source: dict[str | None, str] = {None: str(request.context_file)}
    for v in variants.variants if variants is not None else ():
        arm_agents[v.id] = v.agent or request.provider.agent
        source[v.id] = f"{request.variants_file}: variant {v.id}"
    external = loaded.external if loaded is not None else ()
    ceiling = frozenset({Effect.READ}) if request.permissions.read_only else request.permissions.granted
    check_context_agents(contexts, arm_agents, tasks, external, source, ceiling)
    check_protected(contexts, tasks, choice.loaded.fixture_dir, source)
    return contexts


@dataclass(frozen=True)
class Prepared:
    """What steps 1-6 found: everything a command needs before its confirmation and its directory."""

    request: LabRequest
    measured: MeasuredConfig
    loaded: LoadedConfig | None
    choice: SuiteChoice
    variants: VariantsPlan | None
    tasks: tuple[Task, ...]
    sequential: SequentialPlan | None
    kind: SandboxKind
    sandbox: Sandbox | None
    plan: ProviderPlan
    agents: AgentPlan
    contexts: Mapping[str | None, LoadedContext] = dataclasses.field(default_factory=dict)
    """Each arm's context, its files read (``None``: the plain run's ``--context``; else by variant id)."""

    @property
    def subdirs(self) -> list[str]:
        return [] if self.variants is None else [v.id for v in self.variants.variants]

    def start(self, run_id: str, root: Path) -> LabStart:
        request, plan = self.request, self.plan
        arms = _arms(request, self.measured, self.variants, run_id, root, self.contexts)
        return LabStart(
            choice=self.choice,
            tasks=self.tasks,
            k=1 if request.mode is LabMode.RECORD else request.selection.k,
            seed=request.selection.seed,
            mode=AnswerSource.REPLAY if request.mode is LabMode.REPLAY else AnswerSource.LIVE,
            provider=plan,
            arms=priced_arms(arms, request, self.loaded, plan),
            variants=self.variants,
            root=root,
            jobs=jobs_for(request, self.loaded),
            agent_conditions=self.agents.conditions,
            agent_configs=self.agents.configs,
            sandbox=str(self.kind),
            label=request.output.label,
            sequential=self.sequential,
        )


@contextlib.contextmanager
def prepared(request: LabRequest, ui: Ui, outputs: Sequence[Output]) -> Iterator[Prepared]:
    """Steps 1-6; the provider plan is closed when the block ends."""
    from alisio.shell.lab.record import recording_plan

    measured, loaded, choice, variants, tasks = _checked(request, outputs)  # steps 1-5
    # step 6: the sequential design, the sandbox, the provider plan, the external agents, the spending caps
    contexts = _contexts(request, loaded, choice, variants, tasks)
    sequential = checked_sequential(request.sequential, variants, tasks, choice.loaded.suite)
    lab = loaded.config.lab if loaded is not None else LabSettings()
    kind, sandbox = sandbox_for(request.sandbox, lab, request.env, ui.say)
    faulted = _check_faults(request, variants)
    plan = _provider_plan(request, choice, tasks, measured, loaded, ui.say, faulted=faulted)
    if variants is not None:
        check_sampling(plan, [(v.id, v.measured) for v in variants.variants], str(request.variants_file))
    if request.mode is LabMode.RECORD:
        plan, _ = recording_plan(plan)
    try:
        agents = _agents(request, loaded, choice, variants, tasks, plan, sandbox, ui.say)
        plan = agents.plan or plan
        check_spend(request, plan, loaded, variants, tasks)
        yield Prepared(
            request,
            measured,
            loaded,
            choice,
            variants,
            tasks,
            sequential,
            kind,
            sandbox,
            plan,
            agents,
            contexts=contexts,
        )
    finally:
        plan.close()


@dataclass(frozen=True)
class Preview:
    """What a command would run (``--dry-run``, ``eval plan``): its start, its plan and plan.json."""

    start: LabStart
    plan: tuple[RunSpec, ...]
    """The whole plan, in order."""
    manifest: RunManifest
    data_root: Path


def preview_request(request: LabRequest, ui: Ui) -> Preview:
    """Steps 1-6 of ``request`` and its plan, without a confirmation, a report directory or a run: nothing is
    written and nothing spent. ``--out`` and ``--junit`` are not checked (nothing is written there).

    Raises:
        CommandError: what the command would refuse before its first run (one line each).
    """
    bare = dataclasses.replace(
        request, output=dataclasses.replace(request.output, out=None, junit=None, step_summary=False)
    )
    with prepared(bare, ui, ()) as ready:
        now = datetime.now(UTC)
        run_id = run_id_for(now)
        start = ready.start(run_id, request.output.out or Path(run_id))
        plan = plan_of(start)
        start = sliced(request, start, plan)
        current = plan_manifest(new_manifest(start, bare, run_id, created_at_for(now)), start, plan)
        check_planned(request, current)
        return Preview(start=start, plan=plan, manifest=current, data_root=data_dir(request.env))
