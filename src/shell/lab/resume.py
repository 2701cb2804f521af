"""``eval run --resume DIR|RUN_ID [--retry-errors]``: continue a run in its own report directory.

- The directory's plan.json (``alisio.core.lab.manifest``, written before the first run of every ``eval
  run``) says what the run was asked: suite, tasks, k, seed, mode, provider, model, endpoint, grants. The
  command rebuilds that request (``resume_request``; a live run's endpoint and model come from plan.json, so
  it resumes without the flags or the config.toml it started with, ``resumed_base_url``); the pipeline
  compares what it would measure now with what plan.json recorded and refuses (exit 1, naming each
  difference) when the suite content, the configuration hash, the model or the endpoint changed.
- runs.jsonl keeps its records; only the planned runs without a record run (``prepare_resume``). A torn last
  line (a kill in the middle of a write) is dropped with a warning. With ``--retry-errors`` the runs that ended
  ``error`` run again: their old records move to ``retried/runs.jsonl`` (kept, counted nowhere).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from returns.result import Failure, Success

from alisio.core.harness.config import config_hash
from alisio.core.harness.endpoint import endpoint_of
from alisio.core.harness.events import Effect
from alisio.core.lab.manifest import (
    RunManifest,
    decode_manifest,
    differences,
    encode_manifest,
    remaining,
    whole_lines,
)
from alisio.core.lab.records import RunRecord, decode_runs, encode_runs
from alisio.core.lab.schedule import RunSpec
from alisio.core.lab.transcript import transcript_path
from alisio.shell.config_home import load_config
from alisio.shell.lab.errors import LabError
from alisio.shell.lab.model import LabStart, Resumed
from alisio.shell.lab.request import LabRequest, Output, Permissions, ProviderOptions, RunMode, Selection
from alisio.shell.lab.store import RUNS_JSONL, write_bytes_atomic
from alisio.shell.lab.stored import report_dir

__all__ = [
    "PLAN_JSON",
    "RETRIED",
    "prepare_resume",
    "read_manifest",
    "resume_request",
    "resume_target",
    "resumed_base_url",
    "write_manifest",
]

PLAN_JSON = "plan.json"
RETRIED = "retried"


def resume_target(ref: str, data_root: Path) -> Path:
    """The report directory ``ref`` names (a path, or a run id under ``<dataDir>/eval``) that holds plan.json.

    Raises:
        LabError: no such directory or run, or it holds no plan.json.
    """
    directory = report_dir(ref, data_root, "resume")
    if not (directory / PLAN_JSON).is_file():
        raise LabError(
            f"--resume {ref}: {directory} holds no {PLAN_JSON}, so it cannot be resumed "
            "(eval run writes it before the first run; variants runs and older reports have none)"
        )
    return directory


def read_manifest(directory: Path) -> RunManifest:
    """plan.json of ``directory``; an unreadable or invalid one is a ``LabError`` naming it."""
    path = directory / PLAN_JSON
    try:
        data = path.read_bytes()
    except OSError as error:
        raise LabError(f"{path}: cannot read: {error.strerror or error}") from None
    match decode_manifest(data, str(path)):
        case Failure(error):
            raise LabError(str(error))
        case decoded:
            manifest: RunManifest = decoded.unwrap()
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
    output: Output,
    jobs: int | None,
    env: Mapping[str, str],
) -> LabRequest:
    """The request that continues the run of ``directory`` (its suite, tasks, k, seed, mode and grants)."""
    stored = read_manifest(directory)
    granted = set(stored.granted)
    return LabRequest(
        selection=Selection(
            suite=stored.suite_id,
            tasks=stored.tasks,
            k=stored.k,
            seed=stored.seed,
            suite_dir=Path(stored.suite_dir) if stored.suite_dir else None,
            yes=True,  # confirmed when the run started
        ),
        mode=RunMode.REPLAY if stored.mode == "replay" else RunMode.LIVE,
        provider=ProviderOptions(
            model=model or (stored.model if stored.script is None else None),
            base_url=resumed_base_url(stored, base_url, env),
            script=Path(stored.script) if stored.script else None,
        ),
        permissions=Permissions(
            write="write" in granted,
            process="process" in granted,
            external="external" in granted,
            analysis="analysis" in granted,
            read_only=stored.read_only,
            allow_suite_full=stored.allow_suite_full,
        ),
        output=Output(
            out=directory, keep=output.keep, json=output.json, quiet=output.quiet, label=stored.label
        ),
        cassette_dir=Path(stored.cassette_dir) if stored.cassette_dir else None,
        rates=stored.rates,
        env=env,
        jobs=jobs,
        resume=directory,
        retry_errors=retry_errors,
    )


def _records(path: Path, say: Callable[[str], None]) -> tuple[RunRecord, ...]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ()
    except OSError as error:
        raise LabError(f"{path}: cannot read: {error.strerror or error}") from None
    whole, torn = whole_lines(data)
    if torn:
        say(
            f"warning: {path}: the last line was cut off (a write was interrupted); it is dropped and that run runs again"
        )
        write_bytes_atomic(path, whole)
    match decode_runs(whole, str(path)):
        case Failure(error):
            raise LabError(str(error), "nothing was run: the runs of this directory cannot be read")
        case decoded:
            records: tuple[RunRecord, ...] = decoded.unwrap()
    return records


def prepare_resume(
    directory: Path,
    stored: RunManifest,
    plan: Sequence[RunSpec],
    retry_errors: bool,
    say: Callable[[str], None],
) -> Resumed:
    """Read runs.jsonl, set apart the errored runs to retry, and say what is left to run.

    Raises:
        LabError: runs.jsonl or retried/runs.jsonl cannot be read or written.
    """
    todo, kept, apart = remaining(plan, _records(directory / RUNS_JSONL, say), retry_errors)
    retried_path = directory / RETRIED / RUNS_JSONL
    earlier = _records(retried_path, say)
    if apart:
        try:
            write_bytes_atomic(retried_path, encode_runs((*earlier, *apart)))
            write_bytes_atomic(directory / RUNS_JSONL, encode_runs(kept))
            for record in apart:  # its transcript goes with its record
                name = transcript_path(record.task_id, record.repetition)
                if (directory / name).is_file():
                    (directory / RETRIED / name).parent.mkdir(parents=True, exist_ok=True)
                    os.replace(directory / name, directory / RETRIED / name)
        except OSError as error:
            raise LabError(
                f"{directory}: cannot set the errored runs apart: {error.strerror or error}"
            ) from None
    return Resumed(stored=stored, todo=todo, kept=kept, retried=len(earlier) + len(apart))


def _manifest(start: LabStart, request: LabRequest, run_id: str, created_at: str) -> RunManifest:
    """plan.json of a new run: what it was asked and what it measures."""
    loaded = start.choice.loaded
    suite_dir = request.selection.suite_dir
    script = request.provider.script
    permissions = request.permissions
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
        label=request.output.label,
    )


def plan_file(
    request: LabRequest,
    start: LabStart,
    plan: Sequence[RunSpec],
    run_id: str,
    created_at: str,
    say: Callable[[str], None],
) -> Resumed | None:
    """Write plan.json for a new plain run; on resume, check it still holds and say what is left to run.

    Raises:
        LabError: on resume, what differs from plan.json (nothing was run).
    """
    if request.mode is RunMode.RECORD or start.variants is not None:
        return None  # resume continues plain eval runs only
    current = _manifest(start, request, run_id, created_at)
    if request.resume is None:
        write_manifest(start.root, current)
        return None
    stored = read_manifest(request.resume)
    problems = differences(stored, current)
    if problems:
        raise LabError(
            *problems, "nothing was run: a resumed run must measure what the run started measuring"
        )
    return prepare_resume(request.resume, stored, plan, request.retry_errors, say)
