"""Properties of ``alisio.core.lab.plans.manifest``: plan.json round-trips, what a resume compares, torn lines, and
what a resume runs, keeps and sets apart."""

from __future__ import annotations

import msgspec
from hypothesis import example, given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.errors import ReportError
from alisio.core.lab.plans.manifest import (
    MANIFEST_SCHEMA_VERSION,
    ManifestAgent,
    RunManifest,
    decode_manifest,
    differences,
    encode_manifest,
    remaining,
    whole_lines,
)
from alisio.core.lab.reports.report import AnswerSource, Rates
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.lab.suites.schedule import RunSpec, plan_runs
from tests.property.strategies_lab import ks, seeds, task_id_lists
from tests.property.strategies_report import run_records

_text = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-./", min_size=1, max_size=12)
_task_id = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,11}", fullmatch=True)
_hash = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)

manifests = st.builds(
    RunManifest,
    run_id=_text,
    created_at=_text,
    suite_id=_text,
    suite_version=_text,
    suite_hash=_hash,
    suite_dir=st.none() | _text,
    tasks=st.lists(_task_id, min_size=1, max_size=4, unique=True).map(tuple),
    k=st.integers(min_value=1, max_value=20),
    seed=st.integers(min_value=0, max_value=2**32),
    mode=st.sampled_from(AnswerSource),
    cassette_dir=st.none() | _text,
    script=st.none() | _text,
    provider=_text,
    model=_text,
    endpoint=st.none() | _text,
    config_hash=_hash,
    granted=st.lists(st.sampled_from(["read", "write", "process", "external", "analysis"]), unique=True).map(
        tuple
    ),
    read_only=st.booleans(),
    allow_suite_full=st.booleans(),
    rates=st.none()
    | st.builds(
        Rates, input_rate=st.floats(0, 100, allow_nan=False), output_rate=st.floats(0, 100, allow_nan=False)
    ),
)

COMPARED = {
    "suite_id": "the suite id",
    "suite_version": "the suite version",
    "suite_hash": "the suite's content",
    "config_hash": "the configuration hash",
    "model": "the model",
    "endpoint": "the endpoint",
    "provider": "the provider",
    "mode": "the mode",
}


@given(manifests)
def test_plan_json_round_trips(manifest: RunManifest) -> None:
    """decode(encode(m)) == m; the bytes are one JSON document and a newline."""
    data = encode_manifest(manifest)
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    assert decode_manifest(data, "plan.json") == Success(manifest)


@given(manifests, st.integers(min_value=MANIFEST_SCHEMA_VERSION + 1, max_value=99))
def test_a_newer_schema_is_refused_naming_the_file(manifest: RunManifest, version: int) -> None:
    """A plan.json from a newer alisio is a ReportError naming the file and the version, never a guess."""
    newer = msgspec.structs.replace(manifest, schema_version=version)
    result = decode_manifest(encode_manifest(newer), "out/plan.json")
    assert isinstance(result, Failure)
    error = result.failure()
    assert isinstance(error, ReportError) and error.source == "out/plan.json"
    assert error.message.startswith(f"schemaVersion {version} was written by a newer alisio")


@given(st.binary(max_size=40))
@example(b"{}")
@example(b'{"runId": 3}')
def test_bytes_that_are_not_a_manifest_are_a_report_error(data: bytes) -> None:
    """Anything that is not a whole plan.json is a ReportError naming the file (no exception)."""
    result = decode_manifest(data, "plan.json")
    assert isinstance(result, Failure) and result.failure().source == "plan.json"


@given(manifests)
def test_a_manifest_differs_from_itself_in_nothing(manifest: RunManifest) -> None:
    """differences(m, m) is empty: a resume of an unchanged run goes on."""
    assert differences(manifest, manifest) == ()


@given(manifests, manifests)
def test_differences_name_each_compared_field_that_changed_and_nothing_else(
    stored: RunManifest, current: RunManifest
) -> None:
    """One line per compared field that differs (suite, configuration, provider, model, endpoint, mode), in
    that order; run id, time, tasks, k, seed, grants and paths are not compared."""
    lines = differences(stored, current)
    changed = [name for name in COMPARED if getattr(stored, name) != getattr(current, name)]
    assert len(lines) == len(changed)
    for line, name in zip(lines, changed, strict=True):
        assert line.startswith(COMPARED[name]) and " when the run started, " in line and line.endswith(" now")


@given(manifests, _hash)
def test_a_changed_hash_is_shown_by_its_first_16_characters(manifest: RunManifest, other: str) -> None:
    """A 64-hex hash is shown by its prefix of 16, both sides."""
    current = msgspec.structs.replace(manifest, config_hash=other)
    lines = differences(manifest, current)
    if other == manifest.config_hash:
        assert lines == ()
    else:
        assert lines == (
            f"the configuration hash (the measured configuration changed) differs: "
            f"{manifest.config_hash[:16]} when the run started, {other[:16]} now",
        )


@given(
    st.lists(st.binary(min_size=1, max_size=8).filter(lambda b: b"\n" not in b), max_size=5),
    st.binary(max_size=8),
)
def test_whole_lines_drops_only_a_torn_last_line(lines: list[bytes], tail: bytes) -> None:
    """Whole lines are kept byte for byte; a last line without its newline is dropped, and said so."""
    whole = b"".join(line + b"\n" for line in lines)
    torn = tail.replace(b"\n", b"")
    assert whole_lines(whole) == (whole, False)
    assert whole_lines(whole + torn) == (whole, bool(torn))


def key(run: RunSpec | RunRecord) -> tuple[str | None, str, int]:
    return (run.variant, run.task_id, run.repetition)


def _record(spec: RunSpec, status: RunStatus, base: RunRecord) -> RunRecord:
    return msgspec.structs.replace(
        base, task_id=spec.task_id, repetition=spec.repetition, variant=spec.variant, status=status
    )


@given(
    task_id_lists.filter(bool),
    ks,
    seeds,
    st.data(),
    st.booleans(),
)
def test_a_resume_runs_what_is_missing_keeps_the_rest_and_sets_errors_apart(
    tasks: list[str], k: int, seed: int, data: st.DataObject, retry_errors: bool
) -> None:
    """Every planned run is run again or kept, never both; kept records come once, in plan order; with
    --retry-errors an error record is set apart and its run is run again; a record outside the plan or a
    second record of a run is dropped."""
    plan = plan_runs(tasks, k, seed).unwrap()
    base = data.draw(run_records(lean=True))
    done = data.draw(st.lists(st.sampled_from(plan), max_size=len(plan) + 2))
    statuses = data.draw(st.lists(st.sampled_from(RunStatus), min_size=len(done), max_size=len(done)))
    records = [_record(spec, status, base) for spec, status in zip(done, statuses, strict=True)]
    stranger = _record(RunSpec(task_id="not-planned", repetition=0, seed=0), RunStatus.PASS, base)
    todo, kept, apart = remaining(plan, [*records, stranger], retry_errors)
    order = [key(spec) for spec in plan]
    kept_keys = [key(record) for record in kept]
    assert kept_keys == [run for run in order if run in set(kept_keys)]  # plan order, once each
    assert [key(spec) for spec in todo] == [run for run in order if run not in set(kept_keys)]  # the rest
    given_for = {run: [r for r in records if key(r) == run] for run in order}
    for record in kept:
        assert record in given_for[key(record)]
        assert not (retry_errors and record.status is RunStatus.ERROR)
    for run, records_of_run in given_for.items():
        usable = [r for r in records_of_run if not (retry_errors and r.status is RunStatus.ERROR)]
        assert (run in kept_keys) == bool(usable)  # a run with a usable record is not run again
    assert all(record.status is RunStatus.ERROR for record in apart)
    assert retry_errors or apart == ()
    assert stranger not in kept and stranger not in apart


_agents = st.lists(
    st.builds(
        ManifestAgent,
        name=st.sampled_from(["a", "b", "c"]),
        kind=st.sampled_from(["codex", "command"]),
        version=st.sampled_from(["1", "2"]),
        config=st.sampled_from(["x" * 64, "y" * 64]),
    ),
    max_size=3,
    unique_by=lambda agent: agent.name,
).map(tuple)


@given(manifests, _agents, _agents)
def test_a_resume_names_each_external_agent_that_changed(
    manifest: RunManifest, before: tuple[ManifestAgent, ...], after: tuple[ManifestAgent, ...]
) -> None:
    """With the agents kept in plan.json, each one used then or now whose kind, version or settings differ
    (or that is used only then or only now) is one line naming it; none kept (older plan.json): none."""
    stored = msgspec.structs.replace(manifest, agents=before)
    lines = differences(stored, msgspec.structs.replace(manifest, agents=after))
    old, new = {a.name: a for a in before}, {a.name: a for a in after}
    expected = 0
    for name in old.keys() | new.keys():
        if name not in old or name not in new:
            expected += 1
        else:
            expected += sum(
                getattr(old[name], f) != getattr(new[name], f) for f in ("kind", "version", "config")
            )
    assert len(lines) == (expected if before else 0)
    assert all(line.startswith("agent ") and line.endswith(" now") for line in lines)
