"""``eval run --resume`` of a live run: it resumes from what plan.json stored (endpoint, model), and the same
command line with ``--resume`` appended is accepted; only a flag that differs is refused, naming both values."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.helpers import alisio, make_suite, read_report, read_runs
from tests.integration.sse_server import Reply, SseServer


def _answer() -> Reply:
    return Reply.sse(
        {
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": "Done."}, "finish_reason": None}
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}},
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "config").mkdir()
    return tmp_path


@pytest.fixture
def server() -> Iterator[SseServer]:
    with SseServer() as running:
        yield running


def _started(home: Path, server: SseServer) -> tuple[list[str], Path]:
    """A live run of k=2 with --base-url and --model and no config.toml, its second record then lost."""
    suite = make_suite(home)
    out = home / "out"
    command = ["eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "2", "-j", "1",
               "--allow-write", "--base-url", server.base_url, "--model", "m-live", "--out", str(out)]  # fmt: skip
    server.enqueue(_answer(), _answer())
    first = alisio(home, *command)
    assert first.returncode == 0, first.stderr
    assert not (home / "config" / "config.toml").exists()
    lines = (out / "runs.jsonl").read_bytes().splitlines(keepends=True)
    (out / "runs.jsonl").write_bytes(lines[0])
    return command, out


def test_a_live_run_resumes_from_plan_json_without_flags_or_config(home: Path, server: SseServer) -> None:
    """--resume DIR alone: the stored endpoint and model are used (was: "config.toml: provider.baseUrl: no
    base URL" for a file that does not exist); the missing run goes to the same server."""
    _, out = _started(home, server)
    server.enqueue(_answer())
    resumed = alisio(home, "eval", "run", "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr
    assert len(server.requests) == 3 and server.requests[2].json()["model"] == "m-live"
    assert len(read_runs(out)) == 2
    assert read_report(out).conditions.endpoint == server.base_url.rstrip("/")


def test_the_same_command_line_is_accepted_and_only_differences_refused(
    home: Path, server: SseServer
) -> None:
    """-k 3, --seed 7 and --allow-process differ from plan.json: one line each with the stored and the given
    value, nothing run; --force is refused with why. The command that started the run, re-typed with
    --resume, is accepted and the missing run runs."""
    command, out = _started(home, server)
    before = (out / "runs.jsonl").read_bytes()
    changed = [*command[:6], "-k", "3", "--seed", "7", *command[8:], "--allow-process", "--force"]
    refused = alisio(home, *changed, "--resume", str(out))
    assert refused.returncode == 1
    lines = refused.stderr.splitlines()
    assert lines[:4] == [
        "alisio eval run: -k: the run started with 2, given 3",
        "alisio eval run: --seed: the run started with 0, given 7",
        "alisio eval run: --allow-process: the run started without it",
        "alisio eval run: --force: it replaces a report, and --resume continues this one; drop --force",
    ]
    assert lines[4].startswith(
        "alisio eval run: nothing was run: --resume continues the run as it was started"
    )
    other = alisio(home, *command[:-2], "--out", str(home / "elsewhere"), "--resume", str(out))
    assert other.returncode == 1
    assert f"--out: the run is in {out}, given {home / 'elsewhere'}" in other.stderr
    assert (out / "runs.jsonl").read_bytes() == before and len(server.requests) == 2
    plan = json.loads((out / "plan.json").read_text())
    assert (plan["k"], plan["endpoint"]) == (2, server.base_url.rstrip("/"))
    server.enqueue(_answer())
    resumed = alisio(home, *command, "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr
    assert len(read_runs(out)) == 2 and len(server.requests) == 3
