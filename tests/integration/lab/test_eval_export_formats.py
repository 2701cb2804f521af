"""``alisio eval export --format atif|otlp-json`` through the installed command, on real scripted runs.

The ATIF files are validated against a JSON Schema written from Harbor's RFC (tests/fixtures/atif), plus the
RFC's cross-field rules; the OTLP lines are parsed with OpenTelemetry's own protobuf definitions
(opentelemetry-proto), and every ``gen_ai.*`` name checked against the semantic conventions' constants.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes

from alisio.core.lab.runs.records import RunRecord
from tests.integration.helpers import FIX, NOOP, alisio, eval_run, make_suite, read_runs, write_script

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "fixtures" / "atif" / "atif-v1.7.schema.json").read_text()
)
GEN_AI_NAMES = {value for name, value in vars(gen_ai_attributes).items() if name.startswith("GEN_AI_")}
FAILING_EDIT = {
    "turns": [
        {
            "text": "I will look first.",
            "toolCalls": [{"name": "read_file", "arguments": {"path": "src/calc.py"}}],
            "usage": {"inputTokens": 90, "outputTokens": 9, "cachedInputTokens": 40},
        },
        {
            "toolCalls": [
                {
                    "name": "edit_file",
                    "arguments": {"path": "src/calc.py", "old_string": "nope", "new_string": "x"},
                }
            ],
            "usage": {"inputTokens": 110, "outputTokens": 11},
        },
        {"text": "I could not fix it.", "usage": {"inputTokens": 120, "outputTokens": 6}},
    ]
}


def _job(home: Path, script: dict[str, Any], k: int = 2) -> Path:
    """A scripted job of the calc suite; its report directory."""
    suite = make_suite(home)
    out = home / "run"
    result = eval_run(
        home,
        suite,
        "--k",
        str(k),
        "--allow-write",
        "--out",
        str(out),
        script=write_script(home / "s.json", script),
    )
    assert result.returncode == 0, result.stderr
    return out


def _check_atif(trajectory: dict[str, Any], record: RunRecord, workspace_hint: str) -> None:
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(trajectory)
    steps = trajectory["steps"]
    assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
    assert steps[0]["source"] == "user" and steps[0]["message"] == "add in src/calc.py is wrong. Fix it."
    agent_only = {"model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics"}
    for step in steps:
        if step["source"] != "agent":
            assert not agent_only & step.keys()
        calls = {c["tool_call_id"] for c in step.get("tool_calls", [])}
        answered = {r.get("source_call_id") for r in step.get("observation", {}).get("results", [])}
        assert answered <= calls | {None}
    agent = [s for s in steps if s["source"] == "agent"]
    assert len(agent) == record.measured.turns
    assert sum(len(s.get("tool_calls", [])) for s in agent) == record.measured.tool_calls
    assert sum(s["metrics"]["prompt_tokens"] for s in agent) == record.measured.input_tokens
    assert sum(s["metrics"]["completion_tokens"] for s in agent) == record.measured.output_tokens
    assert trajectory["final_metrics"]["total_prompt_tokens"] == record.measured.input_tokens
    assert trajectory["extra"]["alisio"]["verdict"]["status"] == str(record.status)
    assert workspace_hint not in json.dumps(trajectory)


def test_atif_export_writes_a_valid_trajectory_per_run(tmp_path: Path) -> None:
    out = _job(tmp_path, FIX)
    result = alisio(tmp_path, "eval", "export", str(out), "--format", "atif", "--out", str(tmp_path / "atif"))
    assert result.returncode == 0, result.stderr
    assert f"wrote {tmp_path / 'atif'} (ATIF trajectories, 2 runs)" in result.stderr
    records = {r.repetition: r for r in read_runs(out)}
    assert sorted(
        p.relative_to(tmp_path / "atif").as_posix() for p in (tmp_path / "atif").rglob("*.json")
    ) == [
        "fix-add/0.json",
        "fix-add/1.json",
    ]
    for rep, record in records.items():
        trajectory = json.loads((tmp_path / "atif" / "fix-add" / f"{rep}.json").read_text())
        _check_atif(trajectory, record, str(tmp_path))
        assert trajectory["schema_version"] == "ATIF-v1.7"
        assert trajectory["agent"]["name"] == "alisio"
        edit = trajectory["steps"][2]["tool_calls"][0]
        assert (edit["function_name"], edit["arguments"]["new_string"]) == ("edit_file", "a + b")
        assert trajectory["steps"][1]["observation"]["results"][0]["content"].startswith("path: src/calc.py")
        assert trajectory["steps"][1]["timestamp"].endswith("Z")
        assert [v["id"] for v in trajectory["extra"]["alisio"]["verdict"]["verifiers"]] == ["check", "scope"]


def test_a_failing_run_keeps_its_cached_tokens_and_failed_tool_result(tmp_path: Path) -> None:
    out = _job(tmp_path, FAILING_EDIT, k=1)
    result = alisio(tmp_path, "eval", "export", str(out), "--format", "atif", "--out", str(tmp_path / "atif"))
    assert result.returncode == 0, result.stderr
    (record,) = read_runs(out)
    trajectory = json.loads((tmp_path / "atif" / "fix-add" / "0.json").read_text())
    _check_atif(trajectory, record, str(tmp_path))
    first, second = trajectory["steps"][1:3]
    assert first["metrics"]["cached_tokens"] == 40 and "cached_tokens" not in second["metrics"]
    assert second["observation"]["results"][0]["extra"]["ok"] is False
    assert trajectory["extra"]["alisio"]["verdict"]["status"] == "fail"


def _parsed(line: str) -> ExportTraceServiceRequest:
    """One OTLP/JSON line parsed with the protobuf definitions: hex ids to base64 first, as OTLP/JSON says
    ids are hex while protobuf's own JSON mapping reads bytes as base64."""
    data = json.loads(line)
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    message = ExportTraceServiceRequest()
    json_format.Parse(json.dumps(data), message)  # raises on any field the protocol does not have
    return message


def test_otlp_export_parses_with_the_official_protobuf_definitions(tmp_path: Path) -> None:
    out = _job(tmp_path, FIX)
    result = alisio(
        tmp_path, "eval", "export", str(out), "--format", "otlp-json", "--out", str(tmp_path / "otlp")
    )
    assert result.returncode == 0, result.stderr
    records = sorted(read_runs(out), key=lambda r: r.repetition)
    lines = (tmp_path / "otlp" / "traces.jsonl").read_text().splitlines()
    assert len(lines) == len(records) == 2
    for line, record in zip(lines, records, strict=True):
        request = _parsed(line)
        (resource_spans,) = request.resource_spans
        assert resource_spans.schema_url == "https://opentelemetry.io/schemas/1.44.0"
        spans = resource_spans.scope_spans[0].spans
        assert all(len(s.trace_id) == 16 and len(s.span_id) == 8 for s in spans)
        names = [s.name for s in spans]
        assert names == [
            "invoke_agent alisio",
            "chat scripted",
            "execute_tool read_file",
            "chat scripted",
            "execute_tool edit_file",
            "chat scripted",
        ]
        attributes = [{a.key: a.value for a in s.attributes} for s in spans]
        used = {key for attrs in attributes for key in attrs if key.startswith("gen_ai.")}
        used |= {a.key for s in spans for e in s.events for a in e.attributes if a.key.startswith("gen_ai.")}
        assert used <= GEN_AI_NAMES, used - GEN_AI_NAMES
        root = attributes[0]
        assert root["gen_ai.agent.name"].string_value == "alisio"
        assert root["alisio.task.id"].string_value == "fix-add"
        assert root["gen_ai.usage.input_tokens"].int_value == record.measured.input_tokens == 350
        chats = [a for a in attributes if a["gen_ai.operation.name"].string_value == "chat"]
        assert sum(a["gen_ai.usage.output_tokens"].int_value for a in chats) == record.measured.output_tokens
        verdict = spans[0].events[0]
        assert verdict.name == "gen_ai.evaluation.result"
        labels = {a.key: a.value for a in verdict.attributes}
        assert labels["gen_ai.evaluation.score.label"].string_value == "pass"
        assert labels["gen_ai.evaluation.score.value"].double_value == 1.0
        assert all(s.parent_span_id == spans[0].span_id for s in spans[1:])
    again = tmp_path / "again"
    assert (
        alisio(tmp_path, "eval", "export", str(out), "--format", "otlp-json", "--out", str(again)).returncode
        == 0
    )
    assert (again / "traces.jsonl").read_text() == "\n".join(lines) + "\n"  # the same ids every time


def test_export_formats_refuse_what_they_must_and_write_nothing(tmp_path: Path) -> None:
    out = _job(tmp_path, NOOP, k=1)
    target = tmp_path / "atif"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    refused = alisio(tmp_path, "eval", "export", str(out), "--format", "atif", "--out", str(target))
    assert refused.returncode == 1
    assert f"--out {target}: is a directory that is not empty; pass --force to replace it" in refused.stderr
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]
    inside = alisio(tmp_path, "eval", "export", str(out), "--format", "otlp-json", "--out", str(out / "x"))
    assert inside.returncode == 1 and "is inside the run directory it exports" in inside.stderr
    bad = alisio(tmp_path, "eval", "export", str(out), "--format", "xml", "--out", str(tmp_path / "x"))
    assert bad.returncode == 1
    assert "--format xml: not a format; use one of bundle, atif, otlp-json" in bad.stderr
    replaced = alisio(
        tmp_path, "eval", "export", str(out), "--format", "atif", "--out", str(target), "--force"
    )
    assert replaced.returncode == 0, replaced.stderr
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()) == [
        "fix-add/0.json"
    ]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".atif.")]  # no staging left behind


@pytest.mark.parametrize("fmt", ["atif", "otlp-json"])
def test_a_key_in_a_run_refuses_every_format(tmp_path: Path, fmt: str) -> None:
    key = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zQ7"
    suite = make_suite(tmp_path)
    check = suite / "fixtures" / "calc" / "check.py"
    check.write_text(f"import sys\nprint('token: {key[:8]}' + '{key[8:]}')\nsys.exit(1)\n")
    run = eval_run(
        tmp_path,
        suite,
        "--k",
        "1",
        "--allow-write",
        "--out",
        str(tmp_path / "run"),
        script=write_script(tmp_path / "s.json", NOOP),
    )
    assert run.returncode == 0, run.stderr
    result = alisio(
        tmp_path, "eval", "export", str(tmp_path / "run"), "--format", fmt, "--out", str(tmp_path / "t")
    )
    assert result.returncode == 1
    assert "runs[0].verifiers[0].detail: looks like an OpenAI key" in result.stderr
    assert key not in result.stderr and not (tmp_path / "t").exists()
