"""``eval run|variants --resume DIR|RUN_ID [--retry-errors]``: continue a run in its own report directory.

- The directory's plan.json (``alisio.core.lab.plans.manifest``, written before the first run of every ``eval
  run``) says what the run was asked: suite, tasks, k, seed, mode, provider, model, endpoint, grants. The
  command rebuilds that request (``resume_request``; a live run's endpoint and model come from plan.json, so
  it resumes without the flags or the config.toml it started with, ``resumed_base_url``); the pipeline
  compares what it would measure now with what plan.json recorded and refuses (exit 1, naming each
  difference) when the suite content, the configuration hash, the model or the endpoint changed.
- runs.jsonl keeps its records; only the planned runs without a record run (``prepare_resume``). A torn last
  line (a kill in the middle of a write) is dropped with a warning. With ``--retry-errors`` the runs that ended
  ``error`` run again: their old records move to ``retried/runs.jsonl`` (kept, counted nowhere), their
  transcripts to ``retried/runs/<task>/<rep>.jsonl`` (``<rep>.2.jsonl``... when the run is retried again).
- An ``eval variants`` job keeps plan.json at its root, with the variants file and each variant's id,
  configuration hash, model and agent (``ManifestVariant``); its records are in each variant's directory
  (``<root>/<variant>/runs.jsonl``), read, kept and set apart per variant.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import version
from pathlib import Path

import msgspec
from returns.result import Success

from alisio.core.harness.config import config_hash
from alisio.core.harness.endpoint import endpoint_of
from alisio.core.harness.events import Effect
from alisio.core.harness.faults import parse_faults, spec_text
from alisio.core.harness.sandbox import SandboxKind
from alisio.core.lab.plans.manifest import (
    ManifestAgent,
    ManifestVariant,
    RunManifest,
    decode_manifest,
    differences,
    encode_manifest,
    measurement_differences,
    remaining,
    whole_lines,
)
from alisio.core.lab.reports.naming import script_digest
from alisio.core.lab.runs.records import RunRecord, RunStatus, decode_runs, encode_runs
from alisio.core.lab.runs.transcript import transcript_path
from alisio.core.lab.runs.workspace_diff import diff_path
from alisio.core.lab.suites.schedule import RunSpec
from alisio.shell.config_home import load_config
from alisio.shell.errors import CommandError, expect
from alisio.shell.lab.model import LabStart, Resumed
from alisio.shell.lab.request import LabMode, LabRequest, Output, Permissions, ProviderOptions, Selection
from alisio.shell.lab.store import PLAN_JSON, RUNS_JSONL, read_regular, write_bytes_atomic
from alisio.shell.lab.stored import report_dir, run_directory, variants_of

__all__ = [
    "PLAN_JSON",
    "RETRIED",
    "check_kind",
    "manifest_request",
    "new_manifest",
    "plan_file",
    "prepare_resume",
    "read_manifest",
    "resume_request",
    "resume_target",
    "resumed_base_url",
    "write_manifest",
]

RETRIED = "retried"


def resume_target(ref: str, data_root: Path) -> Path:
    """The directory ``ref`` names (a path, or a run id under ``<dataDir>/eval``) that holds plan.json: a
    plain run's report directory, or the root of a variants job (which holds no report of its own).

    Raises:
        CommandError: no such directory or run, or it holds no plan.json.
    """
    directory = run_directory(ref, data_root)
    if (directory / PLAN_JSON).is_file():
        return directory
    if (directory.parent / PLAN_JSON).is_file() and (directory / RUNS_JSONL).is_file():
        raise CommandError(
            f"--resume {ref}: {directory} is one variant of the eval variants job in {directory.parent}: "
            f"continue the job with alisio eval variants --resume {directory.parent}"
        )
    if not variants_of(directory):
        directory = report_dir(ref, data_root, "resume")  # no report here, or no such run directory
    raise CommandError(
        f"--resume {ref}: {directory} holds no {PLAN_JSON}, so it cannot be resumed "
        "(eval run and eval variants write it before the first run; older reports have none)"
    )


def check_kind(stored: RunManifest, ref: str, directory: Path, *, variants: bool) -> None:
    """Refuse ``eval run --resume`` of a variants job, and ``eval variants --resume`` of a plain run, naming
    the command that continues it.

    Raises:
        CommandError: the other command's plan.json (nothing was run).
    """
    if variants and not stored.variants:
        raise CommandError(
            f"--resume {ref}: {directory} is a plain eval run, not a variants job: continue it with "
            f"alisio eval run --resume {ref}"
        )
    if not variants and stored.variants:
        raise CommandError(
            f"--resume {ref}: {directory} is an eval variants job: continue it with "
            f"alisio eval variants --resume {ref}"
        )


def read_manifest(directory: Path) -> RunManifest:
    """plan.json of ``directory``; an unreadable or invalid one is a ``CommandError`` naming it."""
    path = directory / PLAN_JSON
    try:
        data = read_regular(path)
    except OSError as error:
        raise CommandError(f"{path}: cannot read: {error.strerror or error}") from None
    manifest = expect(decode_manifest(data, str(path)))
    return manifest


def write_manifest(directory: Path, manifest: RunManifest) -> None:
    """Write plan.json atomically (before the first run)."""
    write_bytes_atomic(directory / PLAN_JSON, encode_manifest(manifest))


def resumed_base_url(stored: RunManifest, given: str | None, env: Mapping[str, str]) -> str | None:
    """The base URL a resumed live run uses: ``--base-url`` when given; else the configured one when it still
    names the endpoint plan.json stored (it may carry a password the endpoint leaves out); else that endpoint,
    so that a run started with ``--base-url`` and no config.toml resumes without either."""
    if given is not None or stored.mode == "replay" or stored.script is not None or stored.endpoint is None:
        return given
    match load_config(env):
        case Success(loaded) if loaded.config.provider.base_url:
            if endpoint_of(loaded.config.provider.base_url) == stored.endpoint:
                return None
    return stored.endpoint


def resume_request(
    directory: Path,
    *,
    model: str | None,
    base_url: str | None,
    retry_errors: bool,
    preset: str | None = None,
    output: Output,
    jobs: int | None,
    env: Mapping[str, str],
    sandbox: SandboxKind | None = None,
    variants_file: Path | None = None,
) -> LabRequest:
    """The request that continues the run of ``directory`` (its suite, tasks, k, seed, mode, grants and
    sandbox; a ``sandbox`` given that differs from the stored one is refused by the manifest check). A
    variants job reads ``variants_file`` when given (the file moved), else the one plan.json names; the
    pipeline refuses variants that measure something else now."""
    stored = read_manifest(directory)
    request = manifest_request(
        stored,
        model=model,
        base_url=base_url,
        preset=preset,
        output=Output(
            out=directory, keep=output.keep, json=output.json, quiet=output.quiet, label=stored.label
        ),
        jobs=jobs,
        env=env,
        sandbox=sandbox,
        variants_file=variants_file,
    )
    return dataclasses.replace(request, resume=directory, retry_errors=retry_errors)


def _stored_provider(
    stored: RunManifest,
    model: str | None,
    base_url: str | None,
    preset: str | None,
    script: Path | None,
    env: Mapping[str, str],
) -> ProviderOptions:
    """The provider plan.json ``stored`` names (its model, script, agent and faults), with the flags given."""
    return ProviderOptions(
        model=model or (stored.model if stored.script is None else None),
        base_url=resumed_base_url(stored, base_url, env),
        preset=preset,
        script=script or (Path(stored.script) if stored.script else None),
        agent=stored.agent,
        faults=None if stored.faults is None else expect(parse_faults(stored.faults), "plan.json: faults"),
    )


def manifest_request(
    stored: RunManifest,
    *,
    model: str | None,
    base_url: str | None,
    preset: str | None,
    output: Output,
    jobs: int | None,
    env: Mapping[str, str],
    sandbox: SandboxKind | None = None,
    variants_file: Path | None = None,
    suite_dir: Path | None = None,
    script: Path | None = None,
    cassette_dir: Path | None = None,
    context_file: Path | None = None,
) -> LabRequest:
    """The request that runs what plan.json ``stored`` says (a resume's, or ``eval run --plan FILE``'s):
    its suite, tasks, k, seed, mode, grants, sandbox, agent and shard. ``suite_dir``, ``script``,
    ``cassette_dir`` and ``variants_file`` say where those are now when given (their content is checked by
    the pipeline); else where plan.json says."""
    granted = set(stored.granted)
    if variants_file is None and stored.variants_file is not None:
        variants_file = Path(stored.variants_file)
    return LabRequest(
        selection=Selection(
            suite=stored.suite_id,
            tasks=stored.tasks,
            k=stored.k,
            seed=stored.seed,
            suite_dir=suite_dir or (Path(stored.suite_dir) if stored.suite_dir else None),
            yes=True,  # confirmed when the run or the plan started
        ),
        mode=LabMode.REPLAY if stored.mode == "replay" else LabMode.LIVE,
        provider=_stored_provider(stored, model, base_url, preset, script, env),
        permissions=Permissions(
            write="write" in granted,
            process="process" in granted,
            external="external" in granted,
            analysis="analysis" in granted,
            read_only=stored.read_only,
            allow_suite_full=stored.allow_suite_full,
        ),
        output=output,
        variants_file=variants_file,
        context_file=context_file or (Path(stored.context_file) if stored.context_file else None),
        cassette_dir=cassette_dir or (Path(stored.cassette_dir) if stored.cassette_dir else None),
        rates=stored.rates,
        env=env,
        jobs=jobs,
        sandbox=sandbox if sandbox is not None else SandboxKind(stored.sandbox),
        sequential=stored.sequential,
        shard=stored.shard.choice() if stored.shard is not None else None,
    )


def _records(path: Path, say: Callable[[str], None]) -> tuple[RunRecord, ...]:
    try:
        data = read_regular(path)
    except FileNotFoundError:
        return ()
    except OSError as error:
        raise CommandError(f"{path}: cannot read: {error.strerror or error}") from None
    whole, torn = whole_lines(data)
    if torn:
        say(
            f"warning: {path}: the last line was cut off (a write was interrupted); it is dropped and that run runs again"
        )
        write_bytes_atomic(path, whole)
    records = expect(
        decode_runs(whole, str(path)), "", "nothing was run: the runs of this directory cannot be read"
    )
    return records


def retried_transcript(retried: Path, name: str) -> Path:
    """Where a set-apart run's transcript goes: ``retried/runs/<task>/<rep>.jsonl`` the first time the run is
    retried, ``<rep>.2.jsonl``, ``<rep>.3.jsonl``... after (the n-th record of that run in
    retried/runs.jsonl), so a second ``--retry-errors`` never overwrites the first one's evidence."""
    target = retried / name
    number = 1
    while target.exists():
        number += 1
        target = retried / name.replace(".jsonl", f".{number}.jsonl")
    return target


def _arm_records(directories: Mapping[str | None, Path], say: Callable[[str], None]) -> tuple[RunRecord, ...]:
    """The records of every arm's runs.jsonl (a plain run's one, or each variant's).

    Raises:
        CommandError: a runs.jsonl cannot be read, or holds a record of another variant (nothing was run).
    """
    found: list[RunRecord] = []
    for variant, directory in directories.items():
        records = _records(directory / RUNS_JSONL, say)
        stray = next((r for r in records if r.variant != variant), None)
        if stray is not None:
            theirs = f"variant {stray.variant}" if stray.variant else "a plain run"
            raise CommandError(
                f"{directory / RUNS_JSONL}: a record of {theirs} (task {stray.task_id} rep {stray.repetition}) "
                f"among the runs of {f'variant {variant}' if variant else 'a plain run'}",
                "nothing was run: the runs of this directory cannot be read",
            )
        found += records
    return tuple(found)


def _set_apart(
    directory: Path, kept: Sequence[RunRecord], apart: Sequence[RunRecord], earlier: Sequence[RunRecord]
) -> None:
    """Move one arm's errored records (and their transcripts) to retried/, keeping the others in runs.jsonl.

    Raises:
        CommandError: a file cannot be written or moved.
    """
    try:
        write_bytes_atomic(directory / RETRIED / RUNS_JSONL, encode_runs((*earlier, *apart)))
        write_bytes_atomic(directory / RUNS_JSONL, encode_runs(kept))
        for record in apart:  # its transcript goes with its record, and its kept diff (none for most errors)
            name = transcript_path(record.task_id, record.repetition)
            target = retried_transcript(directory / RETRIED, name)
            diff = directory / diff_path(record.task_id, record.repetition)
            for source, moved in ((directory / name, target), (diff, target.with_suffix(".workspace.json"))):
                if source.is_file():
                    moved.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(source, moved)
    except OSError as error:
        raise CommandError(
            f"{directory}: cannot set the errored runs apart: {error.strerror or error}"
        ) from None


def prepare_resume(
    directories: Mapping[str | None, Path],
    stored: RunManifest,
    plan: Sequence[RunSpec],
    records: Sequence[RunRecord],
    retry_errors: bool,
    say: Callable[[str], None],
) -> Resumed:
    """From the arms' ``records``, set apart the errored runs to retry (per arm directory), and say what is
    left to run.

    Raises:
        CommandError: a runs.jsonl or retried/runs.jsonl cannot be read or written.
    """
    todo, kept, apart = remaining(plan, records, retry_errors)
    retried: dict[str | None, int] = {}
    for variant, directory in directories.items():
        earlier = _records(directory / RETRIED / RUNS_JSONL, say)
        mine = [r for r in apart if r.variant == variant]
        if mine:
            _set_apart(directory, [r for r in kept if r.variant == variant], mine, earlier)
        retried[variant] = len(earlier) + len(mine)
    return Resumed(stored=stored, todo=todo, kept=kept, retried=retried)


def new_manifest(start: LabStart, request: LabRequest, run_id: str, created_at: str) -> RunManifest:
    """plan.json of a new run: what it was asked and what it measures."""
    loaded = start.choice.loaded
    suite_dir = request.selection.suite_dir
    script = request.provider.script
    permissions = request.permissions
    contexts = {a.variant: a.context.condition.digest for a in start.arms if a.context is not None}
    return RunManifest(
        run_id=run_id,
        created_at=created_at,
        suite_id=loaded.suite.suite_id,
        suite_version=loaded.suite.suite_version,
        suite_hash=loaded.content_hash,
        suite_dir=str(suite_dir.resolve()) if suite_dir is not None and start.choice.third_party else None,
        tasks=tuple(task.id for task in start.tasks),
        k=start.k,
        seed=start.seed,
        mode=start.mode,
        cassette_dir=str(request.cassette_dir.resolve()) if request.cassette_dir is not None else None,
        script=str(script.resolve()) if script is not None else None,
        provider=start.provider.id,
        model=start.provider.model,
        endpoint=start.provider.endpoint,
        config_hash=config_hash(start.arms[0].measured),
        granted=tuple(str(effect) for effect in Effect if effect in permissions.granted),
        read_only=permissions.read_only,
        allow_suite_full=permissions.allow_suite_full,
        rates=request.rates,
        agent=request.provider.agent,
        harness_version=version("alisio"),
        script_hash=script_hash(script, tuple(task.id for task in start.tasks)),
        sandbox=start.sandbox,
        label=request.output.label,
        faults=None if request.provider.faults is None else spec_text(request.provider.faults),
        agents=tuple(
            ManifestAgent(name=name, kind=c.kind, version=c.version, config=start.agent_configs.get(name, ""))
            for name, c in sorted(start.agent_conditions.items())
        ),
        sequential=start.sequential,
        variants_file=str(request.variants_file.resolve())
        if start.variants and request.variants_file
        else None,
        variants=tuple(
            ManifestVariant(
                id=v.id,
                config_hash=v.config_hash,
                model=v.model,
                agent=v.agent,
                overrides=v.overrides,
                faults=None if arm.faults is None else spec_text(arm.faults),
                context=contexts.get(v.id),
            )
            for v, arm in (zip(start.variants.variants, start.arms, strict=True) if start.variants else ())
        ),
        context_file=str(request.context_file.resolve()) if request.context_file is not None else None,
        context=contexts.get(None) if start.variants is None else None,
    )


def script_hash(script: Path | None, task_ids: Sequence[str]) -> str | None:
    """The sha256 of the ``--script`` content: the file, or each selected task's file of a directory (a
    missing one counts as empty: the plan already refused it)."""
    if script is None:
        return None
    files = (
        [(task_id, script / f"{task_id}.json") for task_id in task_ids] if script.is_dir() else [("", script)]
    )

    def content(path: Path) -> bytes:
        try:
            return read_regular(path)
        except OSError:
            return b""

    return script_digest((task_id, content(path)) for task_id, path in files)


def _refuse_mixed(
    stored: RunManifest,
    current: RunManifest,
    records: Sequence[RunRecord],
    retry_errors: bool,
    directory: Path,
) -> RunManifest:
    """Refuse a resume whose harness, script or kept records would mix measurements (one line each); with no
    record kept (``--retry-errors`` of a run whose runs all errored), plan.json takes the current harness
    version and script, which the new records measure. Returns plan.json as it now stands.

    Raises:
        CommandError: what differs (nothing was run).
    """
    kept = [r for r in records if not (retry_errors and r.status is RunStatus.ERROR)]
    problems = measurement_differences(stored, current, kept)
    if problems:
        raise CommandError(
            *problems, "nothing was run: a resumed run must measure what the run started measuring"
        )
    now = (current.harness_version, current.script_hash)
    if not kept and (stored.harness_version, stored.script_hash) != now:
        stored = msgspec.structs.replace(stored, harness_version=now[0], script_hash=now[1])
        write_manifest(directory, stored)
    return stored


def plan_file(
    request: LabRequest,
    start: LabStart,
    current: RunManifest,
    plan: Sequence[RunSpec],
    say: Callable[[str], None],
) -> Resumed | None:
    """Write plan.json (``current``) for a new run or variants job (at its root); on resume, check it still
    holds and say what is left of ``plan`` (a shard's: its slice) to run.

    Raises:
        CommandError: on resume, what differs from plan.json (nothing was run).
    """
    if request.mode is LabMode.RECORD:
        return None  # a recording is not a measurement: nothing to resume
    if request.resume is None:
        write_manifest(start.root, current)
        return None
    stored = read_manifest(request.resume)
    problems = differences(stored, current)
    if problems:
        raise CommandError(
            *problems, "nothing was run: a resumed run must measure what the run started measuring"
        )
    directories = {arm.variant: arm.directory for arm in start.arms}
    records = _arm_records(directories, say)
    stored = _refuse_mixed(
        stored, current, records, request.retry_errors, request.resume
    )  # before anything moves
    if current.sequential is not None and current.sequential != stored.sequential:
        # a larger --max-k (the CLI allows no other change): the same e-processes, looked at longer
        stored = msgspec.structs.replace(stored, k=current.k, sequential=current.sequential)
        write_manifest(request.resume, stored)
    return prepare_resume(directories, stored, plan, records, request.retry_errors, say)
