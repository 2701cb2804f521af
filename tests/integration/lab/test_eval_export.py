"""``alisio eval export`` through the installed command, on run directories written by the core and alisio.shell.lab.store."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import msgspec
import pytest

from alisio.core.lab.runs.records import Incident, RunRecord, VerifierResult, VerifierStatus
from tests.integration.helpers import RUN_ID, Lab
from tests.property.strategies_report import task_runs

ALISIO = Path(sys.executable).with_name("alisio")
REPO = Path(__file__).resolve().parents[3]
OPENAI_KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zQ7"


def leaky_records(lab: Lab) -> list[RunRecord]:
    """Two runs whose texts hold the home dir, a temporary dir, the run dir, the data dir and other paths."""
    tmp = tempfile.gettempdir()
    first, second = task_runs("fix-add", 1, 1)
    check = VerifierResult(
        id="check",
        kind="command",
        status=VerifierStatus.FAIL,
        detail=f"exit 1: {lab.home}/projects/calc/check.py: AssertionError: 3/5 cases",
    )
    first = msgspec.structs.replace(
        first,
        errors=(
            "bash: /usr/bin/python3: not found",
            f"kept {tmp}/alisio-fix-add-k3j_x9q/src/calc.py",
            f"see {lab.data}/eval/older-run/report.json and http://127.0.0.1:8080/v1",
        ),
        incidents=(Incident(kind="compaction", message=f"checkpoint in {lab.run_dir()}/runs.jsonl"),),
    )
    return [first, msgspec.structs.replace(second, verifiers=(check,))]


def test_export_writes_one_scrubbed_bundle(tmp_path: Path) -> None:
    """Exit 0; the file is the spec's bundle; every absolute path is a placeholder; the numbers are kept."""
    lab = Lab(tmp_path)
    records = leaky_records(lab)
    run_dir = lab.write_run(records)
    result = lab.export(RUN_ID, "--out", lab.out)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert f"wrote {lab.out} (2 runs)" in result.stderr
    assert "read the bundle before you share it" in result.stderr

    text = lab.out.read_text()
    bundle = json.loads(text)
    assert list(bundle) == ["schemaVersion", "report", "runs", "markdown"]
    assert bundle["schemaVersion"] == 1
    assert str(tmp_path) not in text and tempfile.gettempdir() + "/" not in text
    errors = bundle["runs"][0]["errors"]
    assert errors == [
        "bash: <path>: not found",
        "kept <tmp>/alisio-fix-add-k3j_x9q/src/calc.py",
        "see <data-dir>/eval/older-run/report.json and http://127.0.0.1:8080/v1",
    ]
    assert bundle["runs"][0]["incidents"][0]["message"] == "checkpoint in <run-dir>/runs.jsonl"
    detail = bundle["runs"][1]["verifiers"][0]["detail"]
    assert detail == "exit 1: <home>/projects/calc/check.py: AssertionError: 3/5 cases"
    task = bundle["report"]["tasks"][0]
    assert (task["taskId"], task["passes"], task["judged"]) == ("fix-add", 1, 2)
    assert bundle["report"]["conditions"]["runId"] == RUN_ID
    # report.md lists the failing run with its verifier's detail: exported with the path scrubbed too
    markdown = (run_dir / "report.md").read_text()
    assert f"{lab.home}/projects/calc/check.py" in markdown
    assert bundle["markdown"] == markdown.replace(str(lab.home), "<home>")
    assert [r["status"] for r in bundle["runs"]] == ["pass", "fail"]


def test_a_key_in_a_verifier_detail_refuses_and_names_the_field(tmp_path: Path) -> None:
    """An OpenAI-shaped key: exit 1, the field named, the value shown nowhere, no file written."""
    lab = Lab(tmp_path)
    records = task_runs("fix-add", 2)
    leak = VerifierResult(
        id="check", kind="command", status=VerifierStatus.FAIL, detail=f"stdout: OPENAI_API_KEY={OPENAI_KEY}"
    )
    records[1] = msgspec.structs.replace(records[1], verifiers=(leak,))
    lab.write_run(records)
    result = lab.export(RUN_ID, "--out", lab.out)
    assert result.returncode == 1
    assert "alisio eval export: runs[1].verifiers[0].detail: looks like an OpenAI key" in result.stderr
    assert "1 field looks like a secret (value not shown); nothing was written" in result.stderr
    assert OPENAI_KEY not in result.stdout + result.stderr and OPENAI_KEY[:12] not in result.stderr
    assert not lab.out.exists()
    assert list(lab.out.parent.iterdir()) == []


def test_a_credential_from_the_environment_is_found(tmp_path: Path) -> None:
    """MY_SERVICE_TOKEN's exact value inside an error message refuses the export, naming the variable."""
    lab = Lab(tmp_path)
    records = task_runs("fix-add", 1)
    records[0] = msgspec.structs.replace(records[0], errors=("curl -u me:abcd1234efgh https://svc/x: 403",))
    lab.write_run(records)
    result = lab.export(RUN_ID, "--out", lab.out)
    assert result.returncode == 0, result.stderr
    lab.out.unlink()
    result = lab.export(RUN_ID, "--out", lab.out, MY_SERVICE_TOKEN="abcd1234efgh")
    assert result.returncode == 1
    assert "runs[0].errors[0]: holds the value of MY_SERVICE_TOKEN" in result.stderr
    assert "abcd1234efgh" not in result.stdout + result.stderr
    assert not lab.out.exists()


def test_the_configured_api_key_variable_is_a_credential_whatever_its_name(tmp_path: Path) -> None:
    """provider.apiKeyEnv names a variable without a credential word: its value is still looked for."""
    lab = Lab(tmp_path)
    (lab.config / "config.toml").write_text('[provider]\napiKeyEnv = "LLM_CRED_VAR"\n')
    records = task_runs("fix-add", 1)
    records[0] = msgspec.structs.replace(records[0], errors=("echo zz-not-shaped-99",))
    lab.write_run(records)
    result = lab.export(RUN_ID, "--out", lab.out, LLM_CRED_VAR="zz-not-shaped-99")
    assert result.returncode == 1
    assert "runs[0].errors[0]: holds the value of LLM_CRED_VAR" in result.stderr
    assert "zz-not-shaped-99" not in result.stderr


def test_an_existing_file_needs_force(tmp_path: Path) -> None:
    """Without --force an existing FILE is left alone (exit 1); with --force it is replaced."""
    lab = Lab(tmp_path)
    lab.write_run(task_runs("fix-add", 1))
    lab.out.write_text("mine")
    refused = lab.export(RUN_ID, "--out", lab.out)
    assert refused.returncode == 1
    assert f"--out {lab.out}: already exists; pass --force to overwrite it" in refused.stderr
    assert lab.out.read_text() == "mine"
    forced = lab.export(RUN_ID, "--out", lab.out, "--force")
    assert forced.returncode == 0, forced.stderr
    assert json.loads(lab.out.read_text())["schemaVersion"] == 1
    assert [p.name for p in lab.out.parent.iterdir()] == ["run.json"]


@pytest.mark.parametrize("run_id", ["../x", "..", ".", "x y", "a/..", "a/b/c", "/abs", "a//b", "a/", "./a"])
def test_an_invalid_run_id_is_refused(tmp_path: Path, run_id: str) -> None:
    """A '.' or '..' segment, more than two segments, an empty segment or other characters: refused before
    reading, in words that say what it is (a path with no report, a path that does not exist)."""
    lab = Lab(tmp_path)
    lab.write_run(task_runs("fix-add", 1))
    empty = tmp_path / "cwd" / "inner"  # '..' and '.' name directories that hold no report from here
    empty.mkdir(parents=True)
    result = lab.export(run_id, "--out", lab.out, cwd=empty)
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1, result.stderr
    # a path is "no such directory" or "no report here"; a name that is neither a path nor a run id says both
    if run_id in (".", ".."):
        assert (
            result.stderr == f"alisio eval export: {run_id}: no report here (no report.json or runs.jsonl)\n"
        )
    elif run_id in ("x y", "a/.."):
        assert result.stderr.startswith(f"alisio eval export: {run_id}: no such directory, and not a run id")
        assert f"invalid run id {run_id!r}" in result.stderr
    else:
        assert result.stderr == f"alisio eval export: {run_id}: no such directory\n"
    assert not lab.out.exists()


def test_a_missing_run_names_the_directory_and_the_recent_runs(tmp_path: Path) -> None:
    """A run id that does not exist: one line naming <dataDir>/eval and the most recent run ids."""
    lab = Lab(tmp_path)
    nothing = lab.export("nope", "--out", lab.out)
    assert nothing.returncode == 1
    assert nothing.stderr == (
        f"alisio eval export: no run nope in {lab.data / 'eval'}; the directory does not exist\n"
    )
    lab.write_run(task_runs("a", 1), run_id="2026-01-01T00-00-00-000Z")
    lab.write_run(task_runs("a", 1), run_id="2026-01-02T00-00-00-000Z")
    result = lab.export("nope", "--out", lab.out)
    assert result.returncode == 1
    assert result.stderr == (
        f"alisio eval export: no run nope in {lab.data / 'eval'}; "
        "most recent: 2026-01-02T00-00-00-000Z, 2026-01-01T00-00-00-000Z\n"
    )
    assert not lab.out.exists()


def test_a_custom_endpoint_provider_id_is_replaced_everywhere(tmp_path: Path) -> None:
    """A provider id holding the endpoint URL becomes custom-endpoint in the report, the runs and the Markdown."""
    lab = Lab(tmp_path)
    provider = "https://my-host.example/v1"
    records = task_runs("fix-add", 1)
    records[0] = msgspec.structs.replace(records[0], errors=(f"POST {provider}/chat/completions: 503",))
    run_dir = lab.write_run(records, provider=provider)
    assert provider in (run_dir / "report.md").read_text()
    result = lab.export(RUN_ID, "--out", lab.out)
    assert result.returncode == 0, result.stderr
    text = lab.out.read_text()
    assert "my-host" not in text
    bundle = json.loads(text)
    assert bundle["report"]["conditions"]["provider"] == "custom-endpoint"
    assert bundle["runs"][0]["errors"] == ["POST custom-endpoint/chat/completions: 503"]
    assert "custom-endpoint" in bundle["markdown"]


def test_a_missing_parent_directory_or_a_directory_out_is_refused(tmp_path: Path) -> None:
    """--out in a missing directory, naming a directory, or inside the run directory: exit 1, nothing changed."""
    lab = Lab(tmp_path)
    lab.write_run(task_runs("fix-add", 1))
    missing = tmp_path / "nowhere" / "run.json"
    result = lab.export(RUN_ID, "--out", missing)
    assert result.returncode == 1
    assert f"the directory {missing.parent} does not exist; create it first" in result.stderr
    assert not missing.parent.exists()
    result = lab.export(RUN_ID, "--out", lab.out.parent)
    assert result.returncode == 1 and "is a directory" in result.stderr
    report = lab.run_dir() / "report.json"
    before = report.read_bytes()
    result = lab.export(RUN_ID, "--out", report, "--force")
    assert result.returncode == 1 and "is inside the run directory it exports" in result.stderr
    assert report.read_bytes() == before


def test_unreadable_report_files_are_named(tmp_path: Path) -> None:
    """A run directory without runs.jsonl names that file; without report.md the Markdown is rendered again."""
    lab = Lab(tmp_path)
    records = task_runs("fix-add", 1)
    run_dir = lab.write_run(records)
    markdown = (run_dir / "report.md").read_text()
    (run_dir / "report.md").unlink()
    result = lab.export(RUN_ID, "--out", lab.out)
    assert result.returncode == 0, result.stderr
    assert json.loads(lab.out.read_text())["markdown"] == markdown
    (run_dir / "runs.jsonl").unlink()
    result = lab.export(RUN_ID, "--out", tmp_path / "share" / "again.json")
    assert result.returncode == 1
    assert result.stderr == f"alisio eval export: {run_dir / 'runs.jsonl'}: no such file\n"


def test_out_is_required(tmp_path: Path) -> None:
    """Without --out it is a usage error: exit 1, not click's 2."""
    lab = Lab(tmp_path)
    result = lab.export(RUN_ID)
    assert result.returncode == 1
    assert "--out" in result.stderr


def test_one_variant_of_a_variants_run_exports_and_the_root_says_how(tmp_path: Path) -> None:
    """<runId>/<variant> exports that variant; the bare variants root names the variants to pick from."""
    lab = Lab(tmp_path)
    lab.write_run(task_runs("fix-add", 2), run_id=f"{RUN_ID}/baseline")
    lab.write_run(task_runs("fix-add", 3), run_id=f"{RUN_ID}/early")
    (lab.run_dir() / "comparison.json").write_text("{}")
    root = lab.export(RUN_ID, "--out", lab.out)
    assert root.returncode == 1
    assert root.stderr == (
        f"alisio eval export: {RUN_ID} is a variants run with one report per variant: export one of "
        f"{RUN_ID}/baseline, {RUN_ID}/early\n"
    )
    assert not lab.out.exists()
    result = lab.export(f"{RUN_ID}/early", "--out", lab.out)
    assert result.returncode == 0, result.stderr
    assert f"wrote {lab.out} (3 runs)" in result.stderr
    bundle = json.loads(lab.out.read_text())
    assert bundle["report"]["conditions"]["runId"] == f"{RUN_ID}/early"
    assert bundle["report"]["tasks"][0]["runs"] == 3
    assert len(bundle["runs"]) == 3
    missing = lab.export(f"{RUN_ID}/nope", "--out", lab.out)
    assert missing.returncode == 1 and f"no run {RUN_ID}/nope in" in missing.stderr
