"""The lab's one pipeline: every lab command is one ``LabRequest`` through ``run_request``.

``eval run``, ``eval record``, ``eval variants``, ``eval ci`` and ``make record-bundled`` are thin callers:
they build a request, hand it here with a ``Ui`` (how to talk to the person), and show the ``LabOutcome``.
The steps, in order, and the module that does each:

1. configuration: config.toml (``alisio.shell.config_home``), or the defaults for ``eval ci`` and
   record-bundled;
2. the suite: found by id or directory name (``suite_choice.find_suite``);
3. the variants file, when there is one (``variants.read_variants``): each variant is an arm;
4. preflight: the selected tasks, and every task's policy and agent against the grants and each arm's
   configuration (``preflight.preflight``), before anything runs;
5. outputs: every row of the outputs table that applies is checked (``outputs.check_outputs``): ``--out``
   (refused when it holds a report, unless ``--force``), the cassette directory, ``--junit``; nothing is
   removed yet (step 8);
6. the provider plan: live, ``--script``, or the cassettes of replay (``plans``, ``alisio.shell.lab.record``);
   record wraps it to keep every call;
7. confirmation of a third-party suite (``suite_choice.confirm_third_party``);
8. the report directory, claimed and locked for the command's life (``directory``); with ``--force``, the
   report it held is removed now, under the lock;
9. the run loop (``runner.run_loop``): every planned run through ``run_one.run_one`` and an executor, each
   record appended to its arm's runs.jsonl as it finishes; a sequential command's feed skips the runs of a
   task that has stopped (``seq_watch``);
10. outputs: each arm's report (``alisio.core.lab.report_build``), then every row of the outputs table that
    applies is written (``outputs.write_outputs``): each arm's runs.jsonl, report.json, report.md and
    report.html, the comparison of the variants, the cassettes of a recording, ``--junit``, the step summary;
    a signal then waits until they are written (``deferred``), and the command ends interrupted.

Nothing is run until steps 1-8 have passed: every problem they find is a ``CommandError`` (exit 1). After the
first run, Ctrl-C, a signal, a refused key, an unreachable endpoint or a full disk stop the loop, and the
report of the finished runs is still written, marked interrupted.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

from alisio.core.harness.config import LabSettings, MeasuredConfig, config_hash
from alisio.core.harness.sandbox import SandboxKind
from alisio.core.lab.comparisons.variants import VariantsPlan, interleave
from alisio.core.lab.records import RunRecord
from alisio.core.lab.report import AnswerSource
from alisio.core.lab.report_build import build_report
from alisio.core.lab.seq_run import sequential_plan
from alisio.core.lab.suites.schedule import RunSpec, plan_runs
from alisio.core.lab.suites.suite import Task
from alisio.shell.config_home import LoadedConfig, data_dir, load_config
from alisio.shell.errors import CommandError, expect
from alisio.shell.harness.providers.base import GIVE_UP_MARK
from alisio.shell.lab.agent_plan import AgentPlan, agent_plan, agents_of, replay_placeholder, uses_external
from alisio.shell.lab.agents import AgentRunner
from alisio.shell.lab.conditions import arm_conditions
from alisio.shell.lab.deferred import held_signals
from alisio.shell.lab.directory import claim_run_dir, clear_out, created_at_for, lock_directory, run_id_for
from alisio.shell.lab.model import ArmResult, LabOutcome, LabStart, Resumed, Ui
from alisio.shell.lab.outputs import (
    OUTPUTS,
    Checked,
    Done,
    Output,
    check_outputs,
    report_files,
    write_outputs,
)
from alisio.shell.lab.plans import ProviderPlan, check_sampling, live_plan, scripted_plan
from alisio.shell.lab.preflight import Agents, preflight
from alisio.shell.lab.registry import register_directory
from alisio.shell.lab.request import ExecutorKind, LabMode, LabRequest
from alisio.shell.lab.resume import plan_file, read_manifest
from alisio.shell.lab.run_one import Arm, Finished, RunContext, run_one
from alisio.shell.lab.runner import Executor, RunsLog, SerialExecutor, ThreadExecutor, run_loop
from alisio.shell.lab.seq_watch import checked_sequential, sequential_feed, with_sequential
from alisio.shell.lab.spend import CapState, check_spend, priced_arms
from alisio.shell.lab.stale import owned_prefix, remove_stale
from alisio.shell.lab.suite_choice import SuiteChoice, bundled_suites_root, confirm_third_party, find_suite
from alisio.shell.lab.variants import compare_arms, read_variants
from alisio.shell.sandbox.bwrap import Sandbox, SandboxUnavailable, require_sandbox

__all__ = ["ArmResult", "LabOutcome", "LabStart", "Ui", "run_request", "sandbox_for"]


# --- 1-5: before anything runs ------------------------------------------------------------------------------


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
) -> ProviderPlan:
    """The provider of every run: the cassettes (replay), the script, or the configured provider."""
    if request.mode is LabMode.REPLAY and uses_external(request, tasks, loaded.external if loaded else ()):
        return replay_placeholder()  # the external agents' proxies serve their cassettes (agent_plan)
    if request.mode is LabMode.REPLAY:
        from alisio.shell.lab.cassettes import cassette_dir_for
        from alisio.shell.lab.record import config_hash_warnings, load_cassettes, replay_plan

        cassettes = load_cassettes(
            choice.loaded, tasks, cassette_dir_for(choice.loaded.directory, request.cassette_dir)
        )
        for warning in config_hash_warnings(cassettes, config_hash(measured)):
            say(warning)
        return replay_plan(cassettes)
    options = request.provider
    if options.script is not None:
        return scripted_plan(options.script, tasks, options.model)
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


# --- 8: the report directory --------------------------------------------------------------------------------


@contextlib.contextmanager
def _report_directory(
    request: LabRequest, now: datetime, subdirs: Sequence[str], files: Sequence[str]
) -> Iterator[tuple[str, Path]]:
    """The run id and the report directory, claimed and locked for the block (temporary for a recording).

    ``--force`` removes the report ``--out`` holds only once the lock is held: a command still writing
    there refuses this one, and keeps every record it wrote.
    """
    run_id = run_id_for(now)
    if request.mode is LabMode.RECORD:
        directory = Path(tempfile.mkdtemp(prefix=owned_prefix("record")))
        try:
            yield run_id, directory
        finally:
            shutil.rmtree(directory, ignore_errors=True)  # a recording is not a measurement
        return
    if request.resume is not None:
        directory = request.resume
        run_id = read_manifest(directory).run_id  # a resumed run keeps its id
    elif request.output.out is not None:
        directory = request.output.out
        if request.output.register:
            register_directory(data_dir(request.env), directory)  # eval runs lists it, its id names it
    else:
        run_id, directory = claim_run_dir(data_dir(request.env), run_id, request.env)
    with lock_directory(directory):
        if request.resume is None and request.output.out is not None and request.output.force:
            clear_out(directory, "--out", subdirs, files)
        yield run_id, directory


# --- 9-10: the runs and the reports ---------------------------------------------------------------------------


def _stop_reason(plan: ProviderPlan) -> Callable[[RunRecord], str | None]:
    """Says when a finished run shows every further run is pointless: a refused key, an unreachable endpoint."""
    where = f" at {plan.endpoint}" if plan.endpoint else ""

    def reason(record: RunRecord) -> str | None:
        detail = record.errors[-1] if record.errors else record.reason
        if record.reason == "provider_auth":
            if plan.key_source is not None:
                return f"the provider{where} refused the API key from {plan.key_source}: {detail}"
            return f"the provider{where} refused the request and no API key is configured: {detail}"
        if record.reason == "provider_rate_limited" and GIVE_UP_MARK in (detail or ""):
            return f"the provider{where} refused every request with HTTP 429 for {GIVE_UP_MARK}: {detail}"
        # a stream that broke off mid-way reached the endpoint: only a failure to connect stops everything
        if record.reason == "provider_network" and "mid-stream" not in (detail or ""):
            return f"the provider{where} cannot be reached after the retries: {detail}"
        return None

    return reason


def _specs(start: LabStart) -> tuple[RunSpec, ...]:
    """The plan: task x repetition in seeded order (repetition-major when sequential); every variant over
    the same slots, A,B then B,A."""
    task_ids = [task.id for task in start.tasks]
    ids = None if start.variants is None else [variant.id for variant in start.variants.variants]
    if start.sequential is not None:  # repetition-major: each task's outcomes grow in repetition order
        return sequential_plan(ids, task_ids, start.k, start.seed).unwrap()
    if ids is None:
        return plan_runs(task_ids, start.k, start.seed).unwrap()  # ids are unique and k >= 1 (checked)
    return interleave(ids, task_ids, start.k, start.seed).unwrap()


def _arm_results(
    start: LabStart,
    records: Sequence[RunRecord],
    stopped: str | None,
    capped: str | None,
    created_at: str,
    retried: Mapping[str | None, int],
    data_root: Path,
) -> tuple[ArmResult, ...]:
    """Each arm's report, from its finished records (plan order)."""
    results = []
    planned = len(start.tasks) * start.k
    for arm in start.arms:
        mine = tuple(record for record in records if record.variant == arm.variant)
        conditions = arm_conditions(start, arm, created_at)
        report = build_report(
            mine,
            conditions,
            planned_runs=planned,
            interrupted=stopped is not None,
            stopped=stopped,
            capped=capped,
            retried=retried.get(arm.variant, 0),
        )
        report = with_sequential(start.sequential, report, records, arm.variant, [t.id for t in start.tasks])
        show_as = _show_as(arm.directory, conditions.run_id, data_root)
        results.append(ArmResult(arm=arm, records=mine, report=report, show_as=show_as))
    return tuple(results)


def _show_as(directory: Path, run_id: str, data_root: Path) -> str | None:
    """``None`` (the run id names it) for a report stored in the data directory under its run id; else the
    directory's absolute path, which ``eval show`` takes as well (a report written with ``--out``)."""
    stored = data_root / "eval" / run_id
    try:
        if directory.resolve() == stored.resolve():
            return None
    except OSError:
        pass
    return str(directory.absolute())


def _in_plan_order(plan: Sequence[RunSpec], *groups: Sequence[RunRecord]) -> tuple[RunRecord, ...]:
    index = {(spec.variant, spec.task_id, spec.repetition): i for i, spec in enumerate(plan)}
    records = [record for group in groups for record in group]
    return tuple(sorted(records, key=lambda r: index.get((r.variant, r.task_id, r.repetition), len(index))))


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


def _executor(request: LabRequest, start: LabStart, ctx: RunContext, ui: Ui, planned: int) -> Executor:
    """Ray tasks with ``--executor ray``; else one run at a time on this thread for ``--jobs 1`` (or a single
    run), else a pool of threads."""
    if request.executor is ExecutorKind.RAY:
        from alisio.shell.lab.ray_executor import RayExecutor

        return RayExecutor(
            ctx,
            start.arms,
            jobs=start.jobs,
            address=request.ray_address,
            on_start=ui.on_run_start,
            on_end=ui.on_run_end,
        )
    jobs = start.jobs
    return SerialExecutor() if jobs == 1 or planned == 1 else ThreadExecutor(jobs)


def _execute(
    request: LabRequest,
    start: LabStart,
    ctx: RunContext,
    ui: Ui,
    created_at: str,
    resumed: Resumed | None,
    outputs: Sequence[Output],
) -> LabOutcome:
    """Run the plan (what a resume left of it), write the reports, then the comparison or the cassettes."""
    by_task = {task.id: task for task in start.tasks}
    by_arm = {arm.variant: arm for arm in start.arms}
    plan = _specs(start)
    todo = plan if resumed is None else resumed.todo

    def run(spec: RunSpec) -> Finished:
        ui.on_run_start(spec)
        try:
            return run_one(ctx, by_arm[spec.variant], by_task[spec.task_id], spec)
        finally:
            ui.on_run_end(spec)

    log = RunsLog({arm.variant: arm.directory for arm in start.arms})
    spent = CapState(request.caps, {arm.variant: arm.rates for arm in start.arms})
    try:
        kept = () if resumed is None else resumed.kept
        loop = run_loop(
            sequential_feed(start.sequential, todo, list(by_task), kept),
            run,
            _executor(request, start, ctx, ui, len(todo)),
            log,
            on_record=ui.on_record,
            stop_reason=_stop_reason(ctx.provider),
            drain=spent.add,
        )
    finally:
        log.close()
    records = _in_plan_order(plan, kept, loop.records)
    retried = {} if resumed is None else resumed.retried
    with held_signals() as held:  # a signal now waits until the reports are written
        capped = spent.reached if loop.stopped is not None and loop.stopped == spent.line else None
        arms = _arm_results(start, records, loop.stopped, capped, created_at, retried, data_dir(request.env))
        comparison = None
        if start.variants is not None:
            comparison = compare_arms(start.variants, [arm.report for arm in arms])
        done = Done(request, start, ctx, loop, arms, comparison, ui.say)
        write_outputs(done, outputs)  # step 10
    return LabOutcome(
        start=start,
        arms=arms,
        comparison=comparison,
        recorded=done.recorded,
        interrupted=loop.interrupted or held.interrupt,
        stopped=loop.stopped,
        resumed=resumed,
        notes=tuple(done.notes),
        problems=tuple(done.problems),
    )


def _arms(
    request: LabRequest, measured: MeasuredConfig, variants: VariantsPlan | None, run_id: str, root: Path
) -> tuple[Arm, ...]:
    if variants is None:
        agent = request.provider.agent
        return (Arm(variant=None, measured=measured, directory=root, run_id=run_id, agent=agent),)
    return tuple(
        Arm(
            variant=v.id,
            measured=v.measured,
            directory=root / v.id,
            run_id=f"{run_id}/{v.id}",
            agent=v.agent or request.provider.agent,
            model=v.model,
        )
        for v in variants.variants
    )


def _context(
    request: LabRequest,
    choice: SuiteChoice,
    plan: ProviderPlan,
    ui: Ui,
    agents: Mapping[str, AgentRunner],
    sandbox: Sandbox | None,
) -> RunContext:
    """What every run of the command shares: the suite, the provider, the grants, the tools' environment."""
    from alisio.shell.harness.tools.dispatch import tool_env
    from alisio.shell.lab.cassettes import credentials_of

    return RunContext(
        loaded=choice.loaded,
        provider=plan,
        granted=request.permissions.granted,
        read_only=request.permissions.read_only,
        keep=request.output.keep,
        harness_version=version("alisio"),
        tool_env=tool_env(request.env, plan.key),
        say=ui.say,
        on_event=ui.on_event,
        credentials=credentials_of(request.env, plan.key),
        agents=agents,
        sandbox=sandbox,
    )


def _checked(
    request: LabRequest, outputs: Sequence[Output]
) -> tuple[MeasuredConfig, LoadedConfig | None, SuiteChoice, VariantsPlan | None, tuple[Task, ...]]:
    """Steps 1-5: the configuration, the suite, the variants, the tasks and the outputs, all checked."""
    measured, loaded = _configuration(request)
    choice = find_suite(request.selection.suite, request.selection.suite_dir, bundled_suites_root())
    variants = None
    if request.variants_file is not None:
        variants = read_variants(request.variants_file, measured, choice.loaded)
    configs = [(None, measured)] if variants is None else [(v.id, v.measured) for v in variants.variants]
    external = loaded.external if loaded is not None else ()
    chosen = {v.id: (v.agent, v.model) for v in variants.variants} if variants is not None else {}
    lab_sandbox = loaded.config.lab.sandbox if loaded is not None else None
    sandboxed = (request.sandbox or lab_sandbox) is SandboxKind.BWRAP
    tasks = _selected(request, choice, configs, agents_of(request, external, chosen), sandboxed)
    check_outputs(Checked(request, choice.loaded, tuple(variant for variant, _ in configs)), outputs)
    if request.executor is ExecutorKind.RAY and request.ray_address is not None:
        from alisio.shell.lab.ray_executor import check_address

        check_address(request.ray_address)
    return measured, loaded, choice, variants, tasks


def _agents(
    request: LabRequest,
    loaded: LoadedConfig | None,
    choice: SuiteChoice,
    variants: VariantsPlan | None,
    tasks: Sequence[Task],
    plan: ProviderPlan,
    sandbox: Sandbox | None,
) -> AgentPlan:
    """The external agents' runners of the command (``agent_plan``). Under a sandbox each agent runs in it with
    the proxy's relay, which needs the sandbox's ``/usr/bin/python3``: without it the command refuses (never
    an agent run unsandboxed)."""
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
    if sandbox is not None and agents.runners:
        from alisio.shell.sandbox.agents import relay_problem

        problem = relay_problem()
        if problem is not None:
            names = ", ".join(sorted(agents.runners))
            raise CommandError(f"{problem} (external agents {names}); nothing was run")
    return agents


def run_request(request: LabRequest, ui: Ui, outputs: Sequence[Output] = OUTPUTS) -> LabOutcome:
    """Carry out one lab command: check everything, run every planned run, write the reports (``outputs``: the
    table of what the command writes, ``alisio.shell.lab.outputs.OUTPUTS``).

    Raises:
        CommandError: a problem found before the first run (nothing ran), one line each.
        LabStopped: the reports or cassettes could not be written after the runs (naming why).
        KeyboardInterrupt: Ctrl-C or a signal before the first run (nothing ran).
    """
    from alisio.shell.lab.record import recording_plan

    remove_stale()  # workspaces of killed commands (only those whose process is gone)
    measured, loaded, choice, variants, tasks = _checked(request, outputs)
    sequential = checked_sequential(request.sequential, variants, tasks, choice.loaded.suite)
    lab = loaded.config.lab if loaded is not None else LabSettings()
    kind, sandbox = sandbox_for(request.sandbox, lab, request.env, ui.say)
    plan = _provider_plan(request, choice, tasks, measured, loaded, ui.say)
    if variants is not None:
        check_sampling(plan, [(v.id, v.measured) for v in variants.variants], str(request.variants_file))
    if request.mode is LabMode.RECORD:
        plan, _ = recording_plan(plan)
    try:
        agents = _agents(request, loaded, choice, variants, tasks, plan, sandbox)
        plan = agents.plan or plan
        check_spend(request, plan, loaded, variants, tasks)
        confirm_third_party(
            choice,
            yes=request.selection.yes,
            interactive=ui.interactive,
            say=ui.say,
            ask=functools.partial(ui.ask, "Run it? [y/N] "),
            sandboxed=sandbox is not None,
        )
        now = datetime.now(UTC)
        subdirs = [] if variants is None else [v.id for v in variants.variants]
        with _report_directory(request, now, subdirs, report_files(outputs)) as (run_id, root):
            start = LabStart(
                choice=choice,
                tasks=tasks,
                k=1 if request.mode is LabMode.RECORD else request.selection.k,
                seed=request.selection.seed,
                mode=AnswerSource.REPLAY if request.mode is LabMode.REPLAY else AnswerSource.LIVE,
                provider=plan,
                arms=priced_arms(_arms(request, measured, variants, run_id, root), request, loaded, plan),
                variants=variants,
                root=root,
                jobs=jobs_for(request, loaded),
                agent_conditions=agents.conditions,
                agent_configs=agents.configs,
                sandbox=str(kind),
                label=request.output.label,
                sequential=sequential,
            )
            resumed = plan_file(request, start, _specs(start), run_id, created_at_for(now), ui.say)
            ui.on_start(start)
            created_at = created_at_for(now) if resumed is None else resumed.stored.created_at
            ctx = _context(request, choice, plan, ui, agents.runners, sandbox)
            return _execute(request, start, ctx, ui, created_at, resumed, outputs)
    finally:
        plan.close()
