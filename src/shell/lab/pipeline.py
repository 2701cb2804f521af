"""The lab's one pipeline: every lab command is one ``LabRequest`` through ``run_request``.

``eval run``, ``eval record``, ``eval variants``, ``eval ci`` and ``make record-bundled`` are thin callers:
they build a request, hand it here with a ``Ui`` (how to talk to the person), and show the ``LabOutcome``.
The steps, in order, and the module that does each (steps 1-6 are ``alisio.shell.lab.prepare``'s; each is
marked ``# step N`` where the code does it). Before them, the workspaces of killed commands are removed
(``alisio.shell.stale``).

1. configuration: config.toml (``alisio.shell.config_home``), or the defaults for ``eval ci`` and
   record-bundled;
2. the suite: found by id or directory name (``suite_choice.find_suite``);
3. the variants file, when there is one (``variants.read_variants``): each variant is an arm;
4. preflight: the selected tasks, and every task's policy, agent and sandbox needs against the grants and each
   arm's configuration (``preflight.preflight``);
5. outputs: every row of the outputs table that applies is checked (``outputs.check_outputs``): ``--out``
   (refused when it holds a report, unless ``--force``), the cassette directory, ``--junit``; nothing is
   removed yet (step 8); the Ray address of ``--executor ray`` is reached (``ray_executor.check_address``);
6. what the runs need: the sequential design against the suite (``seq_watch.checked_sequential``), the sandbox
   (``prepare.sandbox_for``), the provider plan: live, ``--script``, or the cassettes of replay (``plans``,
   ``alisio.shell.lab.record``), each variant's sampling checked against it, and wrapped by record to keep
   every call; the external agents' runners (``agent_plan``, their isolation checked); the spending caps
   (``spend.check_spend``);
7. confirmation of a third-party suite (``suite_choice.confirm_third_party``);
8. the report directory, claimed and locked for the command's life (``directory``); with ``--force``, the
   report it held is removed now, under the lock; then (not for ``eval record``) the plan: a shard's slice of
   it (``slices``), a ``--plan`` file checked against it, an earlier output of the same shard taken over,
   plan.json written or checked on resume (``resume``), the runs ``--reuse`` takes (``reuse``);
9. the run loop (``runner.run_loop``): every planned run through ``run_one.run_one`` and an executor, each
   record appended to its arm's runs.jsonl as it finishes, the spending caps counted; a sequential command's
   feed skips the runs of a task that has stopped (``seq_watch``); a refused key or an unreachable endpoint
   stops it;
10. outputs: from here a signal waits until they are written (``deferred``), and the command ends
    interrupted; each arm's report (``alisio.core.lab.reports.report_build``, with its sequential stops, the
    suite's self-check and its origin), the comparison of the variants, then every row of the outputs table
    that applies is written (``outputs.write_outputs``): each arm's runs.jsonl, report.json, report.md and
    report.html, the comparison files, the cassettes of a recording, ``--junit``, the step summary.

Nothing is run until steps 1-8 have passed: every problem they find is a ``CommandError`` (exit 1). After the
first run, Ctrl-C, a signal, a refused key, an unreachable endpoint or a full disk stop the loop, and the
report of the finished runs is still written, marked interrupted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import msgspec

from alisio.core.lab.plans.manifest import RunManifest
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.suites.schedule import RunSpec
from alisio.shell.agents.seam import AgentRunner
from alisio.shell.config_home import data_dir
from alisio.shell.harness.providers.base import GIVE_UP_MARK
from alisio.shell.lab.conditions import arm_conditions
from alisio.shell.lab.deferred import held_signals
from alisio.shell.lab.directory import created_at_for, report_directory
from alisio.shell.lab.model import ArmResult, LabOutcome, LabStart, Resumed, Ui
from alisio.shell.lab.outputs import OUTPUTS, Done, Output, report_files, write_outputs
from alisio.shell.lab.plans import ProviderPlan
from alisio.shell.lab.prepare import plan_of, prepared, sandbox_for
from alisio.shell.lab.request import ExecutorKind, LabMode, LabRequest
from alisio.shell.lab.resume import new_manifest, plan_file
from alisio.shell.lab.reuse import reuse_runs
from alisio.shell.lab.run_one import Finished, RunContext, run_one
from alisio.shell.lab.runner import Executor, RunsLog, SerialExecutor, ThreadExecutor, run_loop
from alisio.shell.lab.selfcheck_store import with_suite_checks
from alisio.shell.lab.seq_watch import sequential_feed, with_sequential
from alisio.shell.lab.slices import (
    arm_origin,
    check_planned,
    plan_manifest,
    planned_for,
    sliced,
    take_over_shard,
)
from alisio.shell.lab.spend import CapState
from alisio.shell.lab.suite_choice import SuiteChoice, confirm_third_party
from alisio.shell.lab.variants import compare_arms
from alisio.shell.sandbox.bwrap import Sandbox
from alisio.shell.stale import remove_stale

__all__ = ["ArmResult", "LabOutcome", "LabStart", "Ui", "run_request", "sandbox_for"]


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


def _arm_results(
    start: LabStart,
    records: Sequence[RunRecord],
    stopped: str | None,
    capped: str | None,
    created_at: str,
    resumed: Resumed | None,
    manifest: RunManifest | None,
    env: Mapping[str, str],
) -> tuple[ArmResult, ...]:
    """Each arm's report, from its finished records (plan order)."""
    results = []
    retried = {} if resumed is None else resumed.retried
    data_root = data_dir(env)
    for arm in start.arms:
        mine = tuple(record for record in records if record.variant == arm.variant)
        conditions = arm_conditions(start, arm, created_at)
        report = build_report(
            mine,
            conditions,
            planned_runs=planned_for(start, arm.variant),
            interrupted=stopped is not None,
            stopped=stopped,
            capped=capped,
            retried=retried.get(arm.variant, 0),
        )
        report = with_sequential(start.sequential, report, records, arm.variant, [t.id for t in start.tasks])
        report = with_suite_checks(report, data_root, start.choice.loaded)
        report = msgspec.structs.replace(report, origin=arm_origin(manifest, arm.variant, mine))
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
    manifest: RunManifest | None,
) -> LabOutcome:
    """Run the plan (what a resume left of it), write the reports, then the comparison or the cassettes."""
    by_task = {task.id: task for task in start.tasks}
    by_arm = {arm.variant: arm for arm in start.arms}
    plan = plan_of(start) if start.owned is None else start.owned
    todo = plan if resumed is None else resumed.todo

    def run(spec: RunSpec) -> Finished:
        ui.on_run_start(spec)
        try:
            return run_one(ctx, by_arm[spec.variant], by_task[spec.task_id], spec)
        finally:
            ui.on_run_end(spec)

    log = RunsLog({arm.variant: arm.directory for arm in start.arms})
    spent = CapState(request.caps, {arm.variant: arm.rates for arm in start.arms})
    try:  # step 9
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
    with held_signals() as held:  # step 10: a signal now waits until the reports are written
        capped = spent.reached if loop.stopped is not None and loop.stopped == spent.line else None
        arms = _arm_results(start, records, loop.stopped, capped, created_at, resumed, manifest, request.env)
        comparison = None
        if start.variants is not None and start.shard is None:  # a shard draws no verdict
            comparison = compare_arms(start.variants, [arm.report for arm in arms])
        done = Done(request, start, ctx, loop, arms, comparison, ui.say)
        write_outputs(done, outputs)
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


def _context(
    request: LabRequest,
    choice: SuiteChoice,
    plan: ProviderPlan,
    ui: Ui,
    agents: Mapping[str, AgentRunner],
    sandbox: Sandbox | None,
    mcp_servers: Mapping[str, tuple[str, ...]],
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
        mcp_servers=mcp_servers,
    )


def _planned(
    request: LabRequest,
    start: LabStart,
    run_id: str,
    now: datetime,
    subdirs: Sequence[str],
    outputs: Sequence[Output],
    ui: Ui,
) -> tuple[LabStart, RunManifest | None, Resumed | None]:
    """Step 8 after the directory: the plan (a shard's slice of it), a ``--plan`` file checked, the shard's
    earlier output taken over, plan.json written or checked, and what a resume or ``--reuse`` keeps."""
    if request.mode is LabMode.RECORD:
        return start, None, None
    plan = plan_of(start)
    start = sliced(request, start, plan)
    current = plan_manifest(new_manifest(start, request, run_id, created_at_for(now)), start, plan)
    check_planned(request, current)
    take_over_shard(request, start.root, current, subdirs, report_files(outputs), ui.say)
    mine = plan if start.owned is None else start.owned
    resumed = plan_file(request, start, current, mine, ui.say)
    resumed = reuse_runs(request, start, current, resumed, mine, ui.say)
    return start, current if resumed is None else resumed.stored, resumed


def run_request(request: LabRequest, ui: Ui, outputs: Sequence[Output] = OUTPUTS) -> LabOutcome:
    """Carry out one lab command: check everything, run every planned run, write the reports (``outputs``: the
    table of what the command writes, ``alisio.shell.lab.outputs.OUTPUTS``).

    Raises:
        CommandError: a problem found before the first run (nothing ran), one line each.
        LabStopped: the reports or cassettes could not be written after the runs (naming why).
        KeyboardInterrupt: Ctrl-C or a signal before the first run (nothing ran).
    """
    remove_stale()  # workspaces of killed commands (only those whose process is gone)
    with prepared(request, ui, outputs) as ready:  # steps 1-6
        confirm_third_party(  # step 7
            ready.choice,
            yes=request.selection.yes,
            interactive=ui.interactive,
            say=ui.say,
            ask=functools.partial(ui.ask, "Run it? [y/N] "),
            sandboxed=ready.sandbox is not None,
        )
        now = datetime.now(UTC)
        subdirs = ready.subdirs
        with report_directory(request, now, subdirs, report_files(outputs)) as (run_id, root):  # step 8
            start = ready.start(run_id, root)
            start, current, resumed = _planned(request, start, run_id, now, subdirs, outputs, ui)
            ui.on_start(start)
            created_at = created_at_for(now) if resumed is None else resumed.stored.created_at
            servers = {s.name: s.command for s in ready.loaded.config.mcp_servers} if ready.loaded else {}
            ctx = _context(
                request, ready.choice, ready.plan, ui, ready.agents.runners, ready.sandbox, servers
            )
            return _execute(request, start, ctx, ui, created_at, resumed, outputs, current)  # steps 9-10
