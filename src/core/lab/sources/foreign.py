"""Results from other harnesses as the lab's runs: Inspect AI logs and Harbor job directories.

So that ``eval compare`` and ``eval stability`` (and ``eval power --from`` once it exists: issue 30) give
their verdicts on results alisio did not run, each foreign result becomes a ``RunRecord`` and its log's facts a ``Conditions``; the report is
then built as for any run (``alisio.core.lab.reports.report_build``), every statistic recomputed from the runs.

**Inspect AI** (a ``.eval`` log, or a ``.json`` one: a header and its samples). Each sample is a task, each
epoch a repetition (``epoch - 1``). The score: ``C`` (correct) passes, ``I`` (incorrect) and ``N`` (no
answer) fail; a boolean, or a number that is 0 or 1, is pass or fail as it says; any other value (``P``,
partial credit, 0.7) is not pass/fail and needs ``--pass-threshold T`` (a score >= T passes; ``P`` counts 0.5,
as Inspect's own ``value_to_float`` does). With more than one scorer, ``--scorer NAME`` picks one. A sample
with an error is an ``error`` run (not judged, as alisio's own); one that hit a limit and did not pass is
``budget_exceeded``. The conditions: the suite is the task (``task_version`` its version; the content hash
covers the task, its version, dataset and sample ids and its scorers), the model is the log's, the agent is
the plan's solvers (kind ``inspect``, Inspect's version), the configuration hash covers the plan, the
generate config and the model and task arguments; k is the epochs.

**Harbor** (a job directory: one ``result.json`` per trial in its sub-directories, and the job's
``config.json``). Each trial is a run of its ``task_name``; a task's trials are its repetitions, in the order
they started. The reward (``verifier_result.rewards``; ``reward`` or the only key, else ``--scorer``) of 1
passes and 0 fails, anything else needs ``--pass-threshold``; a trial with no reward but an exception is an
``error`` run. The conditions: the suite is the job's dataset (or ``harbor-job``), its content hash covers
the tasks' checksums, the agent is the trial's ``agent_info`` (name, version; kind ``harbor``), the model its
``model_info``. Harbor's result.json keeps no turns or tool calls: they are 0 there.

Pure: the shell reads the files (``alisio.shell.lab.foreign``) and hands their decoded JSON here.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Final

from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.lab.reports.report import AgentCondition, AnswerSource, CompactionSettings, Conditions
from alisio.core.lab.runs.records import (
    ID_PATTERN,
    Incident,
    Measured,
    RunRecord,
    RunStatus,
    VerifierResult,
    VerifierStatus,
)

__all__ = ["ForeignRuns", "Scoring", "harbor_runs", "inspect_runs", "pass_value"]

_INSPECT_LETTERS: Final = {"C": 1.0, "I": 0.0, "N": 0.0, "P": 0.5}
_ID: Final = re.compile(ID_PATTERN)
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]")
_NO_COMPACTION: Final = CompactionSettings(threshold=1.0, max_context_chars=0)
"""Other harnesses' compaction is not known: the same placeholder on every foreign report."""

JsonObject = Mapping[str, object]


class Scoring(Frozen, frozen=True, kw_only=True):
    """How a foreign score becomes pass or fail: ``--scorer`` and ``--pass-threshold``."""

    scorer: str | None = None
    pass_threshold: float | None = None


class ForeignRuns(Frozen, frozen=True, kw_only=True):
    """A foreign result as the lab's: its conditions and its runs."""

    conditions: Conditions
    records: tuple[RunRecord, ...]


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def _object(value: object) -> JsonObject:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def pass_value(value: object) -> float | None:
    """A score as a number in [0, 1] where it can be read as one (``None`` when it cannot)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text.upper() in _INSPECT_LETTERS:
            return _INSPECT_LETTERS[text.upper()]
        if text.lower() in ("yes", "true"):
            return 1.0
        if text.lower() in ("no", "false"):
            return 0.0
        try:
            return float(text)
        except ValueError:
            return None
    return None


def _passed(value: object, scoring: Scoring, where: str) -> Result[bool, str]:
    number = pass_value(value)
    if number is None:
        return Failure(
            f"{where}: the score {value!r} is not a number or a pass/fail value; alisio compares pass/fail"
        )
    if scoring.pass_threshold is not None:
        return Success(number >= scoring.pass_threshold)
    if number in (0.0, 1.0):
        return Success(number == 1.0)
    return Failure(
        f"{where}: the score {value!r} is not pass/fail; pass --pass-threshold T (a score >= T passes, "
        "e.g. --pass-threshold 1 for full credit only)"
    )


def _task_ids(names: Sequence[str], where: str) -> Result[dict[str, str], str]:
    """Each foreign task name as a task id (characters a task id may not hold become ``_``), all distinct."""
    ids: dict[str, str] = {}
    for name in names:
        safe = _UNSAFE.sub("_", name)[:128] or "_"
        safe = safe if _ID.match(safe) else f"t{safe}"[:128]
        if safe in ids.values() and ids.get(name) != safe:
            return Failure(f"{where}: samples {name!r} and another both read as task id {safe!r}; rename one")
        ids[name] = safe
    return Success(ids)


def _chosen(scores: JsonObject, scoring: Scoring, where: str) -> Result[tuple[str, object], str]:
    """The scorer to judge by, and its score."""
    if scoring.scorer is not None:
        if scoring.scorer not in scores:
            return Failure(f"{where}: no scorer {scoring.scorer!r} (scorers: {', '.join(sorted(scores))})")
        return Success((scoring.scorer, scores[scoring.scorer]))
    if len(scores) != 1:
        names = ", ".join(sorted(scores)) or "none"
        return Failure(f"{where}: {len(scores)} scorers ({names}); pass --scorer NAME to judge by one")
    ((name, score),) = scores.items()
    return Success((name, score))


class _Run(Frozen, frozen=True, kw_only=True):
    """What every record of one foreign run shares, whatever its status."""

    task_id: str
    repetition: int
    measured: Measured
    config_hash: str = ""

    def record(
        self,
        status: RunStatus,
        *,
        reason: str | None = None,
        verifiers: tuple[VerifierResult, ...] = (),
        incidents: tuple[Incident, ...] = (),
        errors: tuple[str, ...] = (),
    ) -> RunRecord:
        return RunRecord(
            task_id=self.task_id,
            repetition=self.repetition,
            seed=0,
            status=status,
            reason=reason,
            verifiers=verifiers,
            measured=self.measured,
            incidents=incidents,
            errors=errors,
            config_hash=self.config_hash,
        )


def _inspect_measured(sample: JsonObject) -> Measured:
    usage = [_object(u) for u in _object(sample.get("model_usage")).values()]
    messages = [_object(m) for m in _list(sample.get("messages"))]
    assistant = [m for m in messages if m.get("role") == "assistant"]
    calls = sum(len(_list(m.get("tool_calls"))) for m in assistant)

    def total(key: str) -> int | None:
        values = [_int(u.get(key)) for u in usage]
        return sum(v for v in values if v is not None) if any(v is not None for v in values) else None

    seconds = sample.get("total_time")
    turns = _int(sample.get("turn_count"))
    return Measured(
        wall_ms=int(seconds * 1000) if isinstance(seconds, int | float) and seconds >= 0 else 0,
        turns=turns if turns is not None else len(assistant),
        tool_calls=calls,
        compactions=0,
        usage_complete=bool(usage)
        and total("input_tokens") is not None
        and total("output_tokens") is not None,
        input_tokens=total("input_tokens"),
        output_tokens=total("output_tokens"),
        cached_input_tokens=total("input_tokens_cache_read"),
        reasoning_tokens=total("reasoning_tokens"),
    )


def _inspect_record(
    sample: JsonObject, task_id: str, scoring: Scoring, where: str, config_hash: str
) -> Result[RunRecord, str]:
    epoch = _int(sample.get("epoch")) or 1
    measured = _inspect_measured(sample)
    run = _Run(task_id=task_id, repetition=epoch - 1, measured=measured, config_hash=config_hash)
    error = _object(sample.get("error"))
    if error:
        message = (
            str(error.get("message", "error")).splitlines()[0][:500] if error.get("message") else "error"
        )
        return Success(run.record(RunStatus.ERROR, reason="inspect_error", errors=(message,)))
    scores = _object(sample.get("scores"))
    match _chosen(scores, scoring, where):
        case Failure(problem):
            return Failure(problem)
        case Success((name, score)):
            pass
    score = _object(score)
    match _passed(score.get("value"), scoring, f"{where}: scorer {name}"):
        case Failure(problem):
            return Failure(problem)
        case Success(passed):
            pass
    detail = str(score.get("explanation") or score.get("answer") or "")[:2000]
    verifier = VerifierResult(
        id=_UNSAFE.sub("_", name), kind="inspect-score", status=VerifierStatus.PASS if passed else VerifierStatus.FAIL,
        detail=f"score {score.get('value')!r}" + (f": {detail}" if detail else ""),
    )  # fmt: skip
    limit = _object(sample.get("limit"))
    status = RunStatus.PASS if passed else RunStatus.BUDGET_EXCEEDED if limit else RunStatus.FAIL
    incidents = (Incident(kind="limit", message=f"Inspect's {limit.get('type', '')} limit"),) if limit else ()
    reason = str(limit.get("type", "limit")) if status is RunStatus.BUDGET_EXCEEDED else None
    return Success(run.record(status, reason=reason, verifiers=(verifier,), incidents=incidents))


def inspect_runs(
    header: JsonObject, samples: Sequence[JsonObject], scoring: Scoring, source: str
) -> Result[ForeignRuns, str]:
    """An Inspect AI log's samples as runs, and its header as conditions (see the module rules)."""
    spec = _object(header.get("eval"))
    if not spec.get("task"):
        return Failure(f"{source}: not an Inspect log (its header has no eval.task)")
    if not samples:
        return Failure(f"{source}: the log holds no samples (was it written with --no-log-samples?)")
    names = sorted({str(s.get("id")) for s in samples})
    plan = _object(header.get("plan"))
    config_hash = _digest(
        {k: spec.get(k) for k in ("model_generate_config", "model_args", "task_args")}
        | {"plan": plan.get("steps")}
    )
    records: list[RunRecord] = []
    match _task_ids(names, source):
        case Failure(problem):
            return Failure(problem)
        case Success(ids):
            pass
    for sample in samples:
        where = f"{source}: sample {sample.get('id')} epoch {sample.get('epoch')}"
        match _inspect_record(sample, ids[str(sample.get("id"))], scoring, where, config_hash):
            case Failure(problem):
                return Failure(problem)
            case Success(record):
                records.append(record)
    dataset = _object(spec.get("dataset"))
    model = str(spec.get("model") or "unknown")
    version = str(_object(spec.get("packages")).get("inspect_ai") or "unknown")
    solvers = [
        str(_object(step).get("solver")) for step in _list(plan.get("steps")) if _object(step).get("solver")
    ]
    scorers = [str(_object(s).get("name")) for s in _list(spec.get("scorers"))]
    suite_hash = _digest(
        {"task": spec.get("task"), "version": spec.get("task_version"), "dataset": dataset.get("name"),
         "location": dataset.get("location"), "samples": names, "scorers": scorers, "args": spec.get("task_args")}
    )  # fmt: skip
    conditions = Conditions(
        suite_id=str(spec.get("task")),
        suite_version=str(spec.get("task_version", 0)),
        suite_hash=suite_hash,
        harness_version=f"inspect_ai {version}",
        config_hash=config_hash,
        provider=model.split("/", 1)[0],
        model=model,
        mode=AnswerSource.LIVE,
        k=max(r.repetition for r in records) + 1,
        seed=0,
        compaction=_NO_COMPACTION,
        run_id=str(spec.get("eval_id") or spec.get("run_id") or "inspect"),
        created_at=str(spec.get("created") or ""),
        agent=AgentCondition(name="+".join(solvers) or "inspect", kind="inspect", version=version),
        label=f"Inspect AI log {source.rsplit('/', 1)[-1]}",
    )
    return Success(ForeignRuns(conditions=conditions, records=tuple(records)))


def _reward(trial: JsonObject, scoring: Scoring, where: str) -> Result[tuple[str, object] | None, str]:
    rewards = _object(_object(trial.get("verifier_result")).get("rewards"))
    if not rewards:
        return Success(None)
    if scoring.scorer is None and "reward" in rewards:
        return Success(("reward", rewards["reward"]))
    chosen: Result[tuple[str, object] | None, str] = _chosen(rewards, scoring, where)
    return chosen


def _harbor_measured(trial: JsonObject) -> Measured:
    agent = _object(trial.get("agent_result"))
    inputs, outputs = _int(agent.get("n_input_tokens")), _int(agent.get("n_output_tokens"))
    return Measured(
        wall_ms=0,
        turns=0,
        tool_calls=0,
        compactions=0,
        usage_complete=inputs is not None and outputs is not None,
        input_tokens=inputs,
        output_tokens=outputs,
        cached_input_tokens=_int(agent.get("n_cache_tokens")),
    )


def _harbor_record(
    trial: JsonObject, task_id: str, rep: int, scoring: Scoring, where: str
) -> Result[RunRecord, str]:
    run = _Run(task_id=task_id, repetition=rep, measured=_harbor_measured(trial))
    match _reward(trial, scoring, where):
        case Failure(problem):
            return Failure(problem)
        case Success(None):
            exception = _object(trial.get("exception_info"))
            kind = str(exception.get("exception_type") or "no_reward")
            message = str(exception.get("exception_message") or "the trial has no verifier reward")[:500]
            return Success(run.record(RunStatus.ERROR, reason=kind, errors=(message,)))
        case Success((name, value)):
            pass
    match _passed(value, scoring, f"{where}: reward {name}"):
        case Failure(problem):
            return Failure(problem)
        case Success(passed):
            status = VerifierStatus.PASS if passed else VerifierStatus.FAIL
            verifier = VerifierResult(
                id=_UNSAFE.sub("_", name), kind="harbor-reward", status=status, detail=f"reward {value!r}"
            )
            return Success(run.record(RunStatus.PASS if passed else RunStatus.FAIL, verifiers=(verifier,)))
    raise AssertionError("unreachable")  # pragma: no cover


def _harbor_conditions(
    job: JsonObject, ordered: Sequence[tuple[str, JsonObject]], k: int, source: str
) -> Conditions:
    """A Harbor job's conditions: its dataset, its tasks' checksums, the trials' agent and model."""
    first = ordered[0][1]
    agent = _object(first.get("agent_info"))
    model = _object(agent.get("model_info"))
    datasets = [_object(d) for d in _list(job.get("datasets"))]
    dataset = next(
        (str(d.get("name") or d.get("path")) for d in datasets if d.get("name") or d.get("path")),
        "harbor-job",
    )
    checksums = {str(t.get("task_name")): t.get("task_checksum") for _, t in ordered}
    started = sorted(str(t.get("started_at")) for _, t in ordered if t.get("started_at"))
    return Conditions(
        suite_id=dataset.rstrip("/").rsplit("/", 1)[-1] or "harbor-job",
        suite_version=str(next((d.get("version") for d in datasets if d.get("version")), "unknown")),
        suite_hash=_digest(checksums),
        harness_version="harbor",
        config_hash=_digest({"agent": job.get("agents"), "environment": job.get("environment")}),
        provider=str(model.get("provider") or "unknown"),
        model=str(model.get("name") or "unknown"),
        mode=AnswerSource.LIVE,
        k=k,
        seed=0,
        compaction=_NO_COMPACTION,
        run_id=str(job.get("job_name") or source.rstrip("/").rsplit("/", 1)[-1]),
        created_at=started[0] if started else "",
        agent=AgentCondition(
            name=str(agent.get("name") or "unknown"),
            kind="harbor",
            version=str(agent.get("version") or "unknown"),
        ),
        label=f"Harbor job {source.rstrip('/').rsplit('/', 1)[-1]}",
    )


def harbor_runs(
    job: JsonObject, trials: Sequence[tuple[str, JsonObject]], scoring: Scoring, source: str
) -> Result[ForeignRuns, str]:
    """A Harbor job's trials (each ``(its directory name, its result.json)``) as runs (see the module rules)."""
    if not trials:
        return Failure(f"{source}: no trial result.json in the job directory")
    ordered = sorted(
        trials, key=lambda t: (str(t[1].get("task_name")), str(t[1].get("started_at") or ""), t[0])
    )
    match _task_ids(sorted({str(t.get("task_name")) for _, t in ordered}), source):
        case Failure(problem):
            return Failure(problem)
        case Success(ids):
            pass
    records: list[RunRecord] = []
    seen: dict[str, int] = {}
    for name, trial in ordered:
        task = str(trial.get("task_name"))
        rep = seen.get(task, 0)
        seen[task] = rep + 1
        match _harbor_record(trial, ids[task], rep, scoring, f"{source}: trial {name}"):
            case Failure(problem):
                return Failure(problem)
            case Success(record):
                records.append(record)
    agents = {
        (str(_object(t.get("agent_info")).get("name")), str(_object(t.get("agent_info")).get("version")))
        for _, t in ordered
    }
    if len(agents) > 1:
        return Failure(
            f"{source}: trials of {len(agents)} agents in one job; compare one agent's trials at a time"
        )
    conditions = _harbor_conditions(job, ordered, max(seen.values()), source)
    return Success(ForeignRuns(conditions=conditions, records=tuple(records)))
