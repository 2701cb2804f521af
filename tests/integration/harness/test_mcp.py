"""The built-in agent as an MCP client, end to end through the installed ``alisio``: a real stdio MCP server
(``tests/fixtures/mcp/docs_server.py``, written with the ``mcp`` package) configured in config.toml's
``[mcp.servers.docs]``; its tools offered as ``mcp__docs__<tool>`` to a local model server, called, recorded
as tool events; refused without ``--allow-process``; record and replay clean; the server stopped at the end
(also at a tool timeout and on SIGINT) and run inside the sandbox under ``--sandbox bwrap``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration import helpers
from tests.integration.helpers import FIX, make_suite, read_runs, task, write_config
from tests.integration.script_model import script_server

SERVER = Path(__file__).resolve().parents[2] / "fixtures" / "mcp" / "docs_server.py"
LOOKUP: dict[str, Any] = {"name": "mcp__docs__lookup", "arguments": {"topic": "naming"}}
LOOK_THEN_FIX: dict[str, Any] = {"turns": [{"toolCalls": [LOOKUP]}, *FIX["turns"]]}


def alisio(home: Path, *args: str | Path, **kw: Any) -> subprocess.CompletedProcess[str]:
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    env = {"TMPDIR": str(home / "tmp"), "MCP_PID_FILE": str(home / "server.pid"), **kw.pop("env", {})}
    return helpers.alisio(home, *args, env=env, **kw)


def configure(home: Path) -> None:
    write_config(home, f'[mcp.servers.docs]\ncommand = ["{sys.executable}", "{SERVER}"]\n')


def process_task(**overrides: Any) -> dict[str, Any]:
    rules = [{"type": "before", "first": "read_file", "then": "edit_file"}]
    verifiers = [*task("fix-add")["verifiers"], {"kind": "tool-sequence", "id": "order", "rules": rules}]
    fields = {"policy": {"mode": "auto", "allow": ["write", "process"]}, "verifiers": verifiers, **overrides}
    return task(str(fields.pop("id", "fix-add")), **fields)


def transcript(out: Path) -> list[dict[str, Any]]:
    (path,) = (out / "runs").rglob("*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_the_servers_tools_are_offered_called_and_recorded(home: Path) -> None:
    """The model is offered mcp__docs__add/lookup/sleep/where with the server's schemas after the harness's
    tools; its call reaches the server, the answer comes back as the tool message, the transcript holds the
    call (name, arguments) and its result, and the server is gone when the command returns."""
    configure(home)
    suite = make_suite(home, process_task())
    server, _ = script_server([LOOK_THEN_FIX], [0])
    with server:
        out = home / "out"
        result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", suite, "--yes", "--allow-write",
                        "--allow-process", "--k", "1", "--base-url", server.base_url, "--model", "m", "--out", out)  # fmt: skip
        requests = [request.json() for request in server.requests]
    assert result.returncode == 0, result.stderr
    names = [tool["function"]["name"] for tool in requests[0]["tools"]]
    assert names[-4:] == ["mcp__docs__add", "mcp__docs__lookup", "mcp__docs__sleep", "mcp__docs__where"]
    assert names[:-4] == ["read_file", "list_dir", "search", "write_file", "edit_file", "bash", "fetch_url",
                          "analyze"]  # fmt: skip
    add = next(
        tool["function"] for tool in requests[0]["tools"] if tool["function"]["name"] == "mcp__docs__add"
    )
    assert add["description"] == "Add two integers."
    assert add["parameters"]["required"] == ["a", "b"]
    assert add["parameters"]["properties"]["a"]["type"] == "integer"
    answer = [m for m in requests[1]["messages"] if m["role"] == "tool"]
    assert answer[0]["content"] == "functions are snake_case"
    (record,) = read_runs(out)
    assert record.status == "pass"
    events = transcript(out)
    call = next(e for e in events if e["type"] == "tool_call" and e["name"] == "mcp__docs__lookup")
    assert json.loads(call["arguments"]) == {"topic": "naming"} and call["effect"] == "process"
    done = next(e for e in events if e["type"] == "tool_result" and e["callId"] == call["callId"])
    assert done["ok"] is True and done["outputExcerpt"] == "functions are snake_case"
    assert gone(int((home / "server.pid").read_text()))


def test_tool_sequence_rules_name_mcp_tools(home: Path) -> None:
    """A rule names an MCP tool as offered: the lookup came before the edit (holds), the lookup was never
    called (fails, naming the call)."""
    configure(home)
    before = {"type": "before", "first": "mcp__docs__lookup", "then": "edit_file"}
    looked = {"kind": "tool-sequence", "id": "looked-first", "rules": [before]}
    never = {
        "kind": "tool-sequence",
        "id": "no-lookup",
        "rules": [{"type": "never", "tool": "mcp__docs__lookup"}],
    }
    suite = make_suite(
        home,
        process_task(id="looked", verifiers=[looked]),
        process_task(id="never", verifiers=[never]),
    )
    script = helpers.write_script(home / "s.json", LOOK_THEN_FIX)
    result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", suite, "--yes", "--allow-write",
                    "--allow-process", "--k", "1", "--script", script, "--out", home / "out")  # fmt: skip
    assert result.returncode == 0, result.stderr
    records = {record.task_id: record for record in read_runs(home / "out")}
    assert records["looked"].status == "pass"
    assert records["never"].status == "fail"
    (verdict,) = records["never"].verifiers
    assert verdict.status == "fail" and "mcp__docs__lookup" in verdict.detail


def test_without_allow_process_the_servers_are_refused_before_the_first_run(home: Path) -> None:
    configure(home)
    suite = make_suite(home, task("fix-add"))
    script = helpers.write_script(home / "s.json", FIX)
    result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", suite, "--yes", "--allow-write",
                    "--script", script, "--out", home / "out")  # fmt: skip
    assert result.returncode == 1
    assert "mcp.servers: the MCP servers (docs) each run a process: grant the process effect with " \
        "--allow-process" in result.stderr  # fmt: skip
    assert "nothing was run" in result.stderr and "Traceback" not in result.stderr
    assert not (home / "out").exists() and not (home / "server.pid").exists()


def test_alisio_run_read_only_refuses_the_servers(home: Path) -> None:
    configure(home)
    script = helpers.write_script(home / "s.json", FIX)
    workspace = home / "ws"
    workspace.mkdir()
    result = alisio(home, "run", "look", "--script", script, "--cwd", workspace, "--read-only")
    assert result.returncode == 1
    assert "config.toml: mcp.servers: the MCP servers (docs) each run a process" in result.stderr
    assert not (home / "server.pid").exists()


def test_a_server_that_cannot_start_ends_the_run_with_a_line_naming_it(home: Path) -> None:
    write_config(home, f'[mcp.servers.broken]\ncommand = ["{sys.executable}", "-c", "import sys; '
                       f"sys.stderr.write('no database here'); sys.exit(3)\"]\n")  # fmt: skip
    script = helpers.write_script(home / "s.json", FIX)
    workspace = home / "ws"
    workspace.mkdir()
    result = alisio(home, "run", "look", "--script", script, "--cwd", workspace, "--json")
    assert result.returncode == 1, result.stderr
    end = json.loads(result.stdout.splitlines()[-1])
    assert end["type"] == "run_end" and end["reason"] == "mcp_start"
    assert end["message"].startswith("MCP server 'broken' (")
    assert "no database here" in end["message"]


def test_record_then_replay_is_clean_and_a_changed_server_diverges(home: Path) -> None:
    """Replay offers the same tools and runs the server again: the same answers replay clean; a server that
    now answers otherwise diverges at the request after its result (exit 2)."""
    configure(home)
    suite = make_suite(home, process_task())
    script = helpers.write_script(home / "s.json", LOOK_THEN_FIX)
    common = ("--suite-dir", suite, "--yes", "--allow-write", "--allow-process")
    recorded = alisio(home, "eval", "record", "calc-suite", *common, "--script", script)
    assert recorded.returncode == 0, recorded.stderr
    replayed = alisio(home, "eval", "run", "calc-suite", *common, "--mode", "replay", "--out", home / "r1")
    assert replayed.returncode == 0, replayed.stderr
    (record,) = read_runs(home / "r1")
    assert record.status == "pass" and record.divergence is None
    assert record.measured.tool_calls == 3
    changed = alisio(home, "eval", "run", "calc-suite", *common, "--mode", "replay", "--out", home / "r2",
                     env={"MCP_DOCS_VARIANT": "2"})  # fmt: skip
    assert changed.returncode == 2, changed.stderr
    (diverged,) = read_runs(home / "r2")
    assert diverged.divergence is not None


def test_a_call_past_its_time_limit_fails_and_the_server_is_stopped(home: Path) -> None:
    configure(home)
    (home / "config" / "config.toml").write_text(
        (home / "config" / "config.toml").read_text() + "[tools]\nbashTimeoutMs = 1000\n"
    )
    slow = {"turns": [{"toolCalls": [{"name": "mcp__docs__sleep", "arguments": {"seconds": 30}}]},
                      {"text": "done"}]}  # fmt: skip
    script = helpers.write_script(home / "s.json", slow)
    workspace = home / "ws"
    workspace.mkdir()
    started = time.monotonic()
    result = alisio(home, "run", "wait", "--script", script, "--cwd", workspace, "--json", "--policy", "full")
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 20
    events = [json.loads(line) for line in result.stdout.splitlines()]
    done = next(e for e in events if e["type"] == "tool_result")
    assert done["ok"] is False and "did not answer within 1 s" in done["outputExcerpt"]
    assert any(e["type"] == "incident" and e["kind"] == "tool_timeout" for e in events)
    assert gone(int((home / "server.pid").read_text()))


def test_sigint_during_a_call_stops_the_server(home: Path) -> None:
    configure(home)
    slow = {"turns": [{"toolCalls": [{"name": "mcp__docs__sleep", "arguments": {"seconds": 60}}]},
                      {"text": "done"}]}  # fmt: skip
    script = helpers.write_script(home / "s.json", slow)
    workspace = home / "ws"
    workspace.mkdir()
    (home / "tmp").mkdir()
    env = helpers.command_env(home, {"MCP_PID_FILE": str(home / "server.pid"), "TMPDIR": str(home / "tmp")})
    process = subprocess.Popen([str(helpers.ALISIO), "run", "wait", "--script", str(script), "--cwd",
                                str(workspace), "--json", "--policy", "full"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        assert time.monotonic() < deadline and process.poll() is None, "the call never started"
        if (home / "server.pid").exists() and (home / "server.pid").read_text():
            break
        time.sleep(0.05)
    pid = int((home / "server.pid").read_text())
    time.sleep(1.5)  # the sleep call is in flight
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode != 0
    assert json.loads(out.splitlines()[-1])["reason"] == "interrupted"
    assert gone(pid), err


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
@pytest.mark.parametrize("under_tmp", [False, True])
def test_under_the_sandbox_the_server_runs_inside_it(home: Path, under_tmp: bool) -> None:
    """The server's files are bound read-only where they are, also under /tmp (a checkout or a venv there, as
    CI's clone: the sandbox's own /tmp hid them and the server could not start)."""
    configure(home)
    if under_tmp:
        assert str(home).startswith("/tmp/")
        server = home / "server" / "docs_server.py"
        server.parent.mkdir()
        shutil.copy(SERVER, server)
        write_config(home, f'[mcp.servers.docs]\ncommand = ["{sys.executable}", "{server}"]\n')
    script = helpers.write_script(home / "s.json", {"turns": [
        {"toolCalls": [{"name": "mcp__docs__where", "arguments": {}}]}, {"text": "done"}]})  # fmt: skip
    workspace = home / "ws"
    workspace.mkdir()
    result = alisio(
        home,
        "run",
        "where",
        "--script",
        script,
        "--cwd",
        workspace,
        "--json",
        "--sandbox",
        "bwrap",
        "--policy",
        "full",
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    done = next(e for e in events if e["type"] == "tool_result")
    assert done["ok"] is True, done
    assert done["outputExcerpt"] == "cwd=/workspace host=sandbox"


def test_the_ray_executor_is_refused_rather_than_run_without_the_servers(home: Path) -> None:
    configure(home)
    suite = make_suite(home, process_task())
    script = helpers.write_script(home / "s.json", FIX)
    result = alisio(home, "eval", "run", "calc-suite", "--suite-dir", suite, "--yes", "--allow-write",
                    "--allow-process", "--script", script, "--executor", "ray", "--out", home / "out")  # fmt: skip
    assert result.returncode == 1
    assert (
        "--executor ray: " in result.stderr
        and "mcp.servers are not passed to Ray workers yet" in result.stderr
    )
    assert not (home / "out").exists()
