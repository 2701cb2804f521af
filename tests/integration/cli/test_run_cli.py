"""``alisio run`` end to end against a real local OpenAI-compatible SSE server.

The command runs in this process (``tests.integration.helpers.alisio``), which gives the installed command's
answer; what needs a real process runs the installed one: Ctrl-C (a signal), and a pseudo-terminal on stdin,
stderr or stdout.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from alisio.core.harness.events import BudgetStopped, Event, RunEnded, RunStarted, ToolCalled
from tests.integration.helpers import ALISIO, alisio, command_env, write_config
from tests.integration.sse_server import Reply, SseServer

SECRET = "sk-test-SECRETKEY-0123456789abcdef"
EVENTS = msgspec.json.Decoder(Event)


def text_reply(text: str, usage: bool = True) -> Reply:
    chunks: list[object] = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    if usage:
        chunks.append(
            {"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}}
        )
    return Reply.sse(*chunks)


def tool_reply(name: str, arguments: dict[str, object], call_id: str = "call_1") -> Reply:
    call = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
    args = json.dumps(arguments)
    return Reply.sse(
        {
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}, "finish_reason": None}
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": args[:5]}}]},
                    "finish_reason": None,
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": args[5:]}}]},
                    "finish_reason": None,
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 80, "completion_tokens": 12, "total_tokens": 92}},
    )


@pytest.fixture
def server() -> Iterator[SseServer]:
    with SseServer() as running:
        yield running


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "hello.txt").write_text("hello from the workspace\n")
    return root


def run(
    tmp_path: Path,
    *args: str,
    key: str | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``alisio run *args`` with tmp_path's configuration and data directory (its transcript goes there), no
    API key but ``key``, and stdin holding ``input`` (not a terminal)."""
    extra = {**(env or {}), **({} if key is None else {"OPENAI_API_KEY": key})}
    return alisio(tmp_path, "run", *args, env=extra, input=input)


def to_server(workspace: Path, server: SseServer, model: str = "m") -> tuple[str, ...]:
    """The flags that point a run at ``workspace`` and at the local server's ``model``."""
    return ("--cwd", str(workspace), "--base-url", server.base_url, "--model", model)


def test_a_run_reads_a_file_and_prints_the_final_text(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """Two turns (read_file, then text): exit 0, the final text on stdout, one progress line per tool call."""
    server.enqueue(tool_reply("read_file", {"path": "hello.txt"}), text_reply("The file greets you."))
    result = run(tmp_path, "What does hello.txt say?", *to_server(workspace, server, "m1"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The file greets you.\n"
    assert "• read_file" in result.stderr
    assert len(server.requests) == 2
    second = server.requests[1].json()
    assert second["model"] == "m1" and second["stream"] is True
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 1 and "hello from the workspace" in tool_messages[0]["content"]
    assert "authorization" not in server.requests[0].headers


def test_run_start_records_the_configured_provider_id(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """config.toml's [provider] id (a label such as "deepseek") is the provider run_start records, as eval does."""
    write_config(tmp_path, '[provider]\nid = "deepseek"\n')
    server.enqueue(text_reply("done"))
    result = run(tmp_path, "hi", *to_server(workspace, server, "m1"), "--json")
    assert result.returncode == 0, result.stderr
    first = EVENTS.decode(result.stdout.splitlines()[0])
    assert isinstance(first, RunStarted) and first.provider == "deepseek"


def test_json_streams_the_event_log_as_decodable_lines(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """--json: every stdout line decodes to an event, numbered in order, from run_start to run_end."""
    server.enqueue(tool_reply("read_file", {"path": "hello.txt"}), text_reply("done"))
    result = run(tmp_path, "read it", *to_server(workspace, server, "m1"), "--json")
    assert result.returncode == 0, result.stderr
    events = [EVENTS.decode(line) for line in result.stdout.splitlines()]
    kinds = [type(event).__name__ for event in events]
    assert kinds == [
        "RunStarted",
        "ProviderRequested",
        "ProviderResponded",
        "ToolCalled",
        "ToolResulted",
        "ProviderRequested",
        "ProviderResponded",
        "RunEnded",
    ]
    assert [event.seq for event in events] == list(range(len(events)))
    end = events[-1]
    assert end.outcome == "completed" and end.final_text == "done" and end.turns == 2  # type: ignore[union-attr]
    assert events[2].usage.input_tokens == 80  # type: ignore[union-attr]
    assert str(workspace) not in result.stdout.split("\n")[1]  # fingerprints are of normalised requests


def test_a_run_keeps_its_transcript_and_ends_with_a_usage_line(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """alisio run stores its transcript under <dataDir>/run/<runId>/, which eval show opens, and its last
    stderr line is the usage: tokens over the calls, turns, tool calls and time."""
    server.enqueue(tool_reply("read_file", {"path": "hello.txt"}), text_reply("It greets."))
    result = run(tmp_path, "Read it", *to_server(workspace, server, "m1"))
    assert result.returncode == 0, result.stderr
    *_, where, usage = result.stderr.splitlines()
    assert re.fullmatch(r"usage: 180 in, 19 out tokens over 2 calls; 2 turns, 1 tool call, \d+\.\d s", usage)
    (kept,) = (tmp_path / "data" / "run").iterdir()
    assert where == f"transcript: {kept} (alisio eval show opens it)"
    shown = alisio(tmp_path, "eval", "show", kept)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"alisio run {kept.name}: completed; 180 in, 19 out tokens over 2 calls")
    assert "> read_file" in shown.stdout and "It greets." in shown.stdout


def test_a_401_exits_1_with_one_line_and_never_the_key(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """A rejected key: exit 1, a single stderr line naming the failure, the key nowhere in the output."""
    server.enqueue(Reply.json({"error": {"message": f"Incorrect API key provided: {SECRET}"}}, status=401))
    result = run(tmp_path, "hi", *to_server(workspace, server, "m1"), key=SECRET)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 3, result.stderr  # the error, where the transcript went, the usage line
    assert "provider_auth" in lines[0] and lines[1].startswith("transcript: ")
    assert re.fullmatch(r"usage: tokens not reported; 1 turn, 0 tool calls, \d+\.\d s", lines[2])
    assert SECRET not in result.stderr and SECRET not in result.stdout
    assert "Traceback" not in result.stderr
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


def test_eval_show_of_a_run_ended_by_the_provider_shows_its_message_without_the_key(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """A 401 whose message echoes the key: the run_end event keeps the provider's message (redacted), and
    eval show of the kept run prints it under the header, as the run printed it; the key is in no file."""
    from tests.integration.helpers import alisio

    server.enqueue(Reply.json({"error": {"message": f"Incorrect API key provided: {SECRET}"}}, status=401))
    home = {"ALISIO_CONFIG_HOME": str(tmp_path / "config"), "ALISIO_DATA_HOME": str(tmp_path / "data")}
    args = ("run", "hi", "--cwd", str(workspace), "--base-url", server.base_url, "--model", "m1")
    result = alisio(None, *args, env={**home, "OPENAI_API_KEY": SECRET})
    assert result.returncode == 1, result.stderr
    printed = result.stderr.splitlines()[0].removeprefix("alisio run: error (provider_auth): ")
    assert printed.startswith(
        f"HTTP 401 from {server.base_url}/chat/completions: Incorrect API key provided: "
    )
    (kept,) = (tmp_path / "data" / "run").iterdir()
    (end,) = [
        e
        for e in map(EVENTS.decode, (kept / "transcript.jsonl").read_bytes().splitlines())
        if isinstance(e, RunEnded)
    ]
    assert (end.outcome, end.reason, end.message) == ("error", "provider_auth", printed)
    shown = alisio(None, "eval", "show", str(kept), env=home)
    assert shown.returncode == 0, shown.stderr
    header, why, *_ = shown.stdout.splitlines()
    assert header.startswith(f"alisio run {kept.name}: error (provider_auth); tokens not reported; 1 turn")
    assert why == f"why: {printed}"
    assert SECRET not in shown.stdout + result.stderr + (kept / "transcript.jsonl").read_text()


def test_no_configuration_and_no_base_url_is_one_clear_line(workspace: Path, tmp_path: Path) -> None:
    """Without a config file, --base-url is required: exit 1, one line naming provider.baseUrl."""
    result = run(tmp_path, "hi", "--cwd", str(workspace), "--model", "m1")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "provider.baseUrl" in result.stderr


def test_an_unknown_config_key_names_the_file_and_key(workspace: Path, tmp_path: Path) -> None:
    """A typo in config.toml: exit 1, one line with the file and the dotted key."""
    write_config(tmp_path, "[limits]\nmaxContextChar = 10\n")
    result = run(
        tmp_path, "hi", "--cwd", str(workspace), "--base-url", "http://127.0.0.1:9/v1", "--model", "m"
    )
    assert result.returncode == 1
    assert "config.toml" in result.stderr and "limits.maxContextChar" in result.stderr
    assert "Traceback" not in result.stderr


def test_without_a_terminal_ask_denies_and_the_file_is_not_written(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """Policy ask with stdin not a terminal: the write is denied headless (approval_denied), nothing written."""
    server.enqueue(
        tool_reply("write_file", {"path": "new.txt", "content": "x"}), text_reply("I could not write.")
    )
    result = run(tmp_path, "write", *to_server(workspace, server), "--json")
    assert result.returncode == 0, result.stderr
    events = [EVENTS.decode(line) for line in result.stdout.splitlines()]
    approvals = [e for e in events if type(e).__name__ == "ApprovalDecided"]
    assert len(approvals) == 1 and approvals[0].granted is False and approvals[0].by == "headless"  # type: ignore[union-attr]
    assert [e.kind for e in events if type(e).__name__ == "IncidentRaised"] == ["approval_denied"]  # type: ignore[union-attr]
    assert not (workspace / "new.txt").exists()
    denied = next(m for m in server.requests[1].json()["messages"] if m["role"] == "tool")["content"]
    assert "denied" in denied


def test_allow_write_lets_the_write_run_without_asking(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """--allow-write puts write in the policy's allow: the file is written and no approval is asked."""
    server.enqueue(tool_reply("write_file", {"path": "new.txt", "content": "x\n"}), text_reply("written"))
    result = run(tmp_path, "write", *to_server(workspace, server), "--allow-write", "--json")
    assert result.returncode == 0, result.stderr
    assert (workspace / "new.txt").read_text() == "x\n"
    assert "ApprovalDecided" not in {
        type(EVENTS.decode(line)).__name__ for line in result.stdout.splitlines()
    }


def test_a_budget_stop_exits_0_and_says_which(server: SseServer, workspace: Path, tmp_path: Path) -> None:
    """--max-turns 1 with a model that keeps calling tools: exit 0, stderr names maxTurns."""
    server.enqueue(
        tool_reply("read_file", {"path": "hello.txt"}), tool_reply("read_file", {"path": "hello.txt"})
    )
    result = run(tmp_path, "loop", *to_server(workspace, server), "--max-turns", "1")
    assert result.returncode == 0, result.stderr
    assert "budget maxTurns exceeded" in result.stderr
    assert result.stdout == ""
    assert len(server.requests) == 1


def test_an_unknown_agent_is_a_usage_error(server: SseServer, workspace: Path, tmp_path: Path) -> None:
    """--agent naming no configured agent: exit 1, one line, no provider call."""
    result = run(tmp_path, "hi", *to_server(workspace, server), "--agent", "nobody")
    assert result.returncode == 1
    assert "nobody" in result.stderr and result.stderr.count("\n") == 1
    assert server.requests == []


def run_on_terminal(tmp_path: Path, answer: bytes, *args: str) -> tuple[int, str, str]:
    """Run ``alisio run`` with stdin and stderr on a pseudo-terminal, answering the first question."""
    import pty
    import select

    master, slave = pty.openpty()
    process = subprocess.Popen(
        [str(ALISIO), "run", *args],
        stdin=slave,
        stderr=slave,
        stdout=subprocess.PIPE,
        env=command_env(tmp_path),
    )
    os.close(slave)
    seen = b""
    answered = False
    while True:
        ready, _, _ = select.select([master], [], [], 30)
        if not ready:
            process.kill()
            raise AssertionError(f"no output from the terminal: {seen!r}")
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
        if not answered and b"[y/N/always]" in seen:
            os.write(master, answer)
            answered = True
    assert process.stdout is not None
    stdout = process.stdout.read().decode()
    code = process.wait(timeout=30)
    os.close(master)
    return code, stdout, seen.decode(errors="replace")


@pytest.mark.parametrize(("answer", "written"), [(b"y\n", True), (b"\n", False)])
def test_on_a_terminal_ask_asks_and_obeys_the_answer(
    server: SseServer, workspace: Path, tmp_path: Path, answer: bytes, written: bool
) -> None:
    """Policy ask on a terminal: the write is put to the user; y runs it, Enter (the default, No) denies it."""
    server.enqueue(tool_reply("write_file", {"path": "new.txt", "content": "x"}), text_reply("finished"))
    code, stdout, terminal = run_on_terminal(tmp_path, answer, "write", *to_server(workspace, server))
    assert code == 0, terminal
    assert "allow write_file (write)" in terminal
    assert stdout == "finished\n"
    assert (workspace / "new.txt").exists() is written


def test_the_approval_prompt_shows_the_arguments_as_sent(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """An edit whose old_string starts with four spaces: the prompt shows each line after a margin, the
    leading whitespace kept (was: collapsed to one line), and a terminal escape in it shown escaped."""
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    edit = {"path": "calc.py", "old_string": "    return a - b", "new_string": "    return a + b  \x1b[2J"}
    server.enqueue(tool_reply("edit_file", edit), text_reply("done"))
    code, _, terminal = run_on_terminal(tmp_path, b"\n", "fix", *to_server(workspace, server))
    assert code == 0, terminal
    lines = terminal.replace("\r\n", "\n").splitlines()
    at = lines.index("allow edit_file (write)?")
    assert lines[at + 1 : at + 7] == [
        "  path: calc.py",
        "  old_string: (1 line)",
        "    |     return a - b",
        "  new_string: (1 line)",
        "    |     return a + b  \\x1b[2J",
        "[y/N/always] ",
    ]


def test_a_hung_provider_stops_the_run_at_max_wall_ms(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """A server that sends headers then stays silent for 20 s: --max-wall-ms 1500 stops the run within seconds."""
    hung = text_reply("too late")
    server.enqueue(Reply(body=hung.body, pieces=(hung.body,), pause_s=20.0))
    started = time.monotonic()
    result = run(tmp_path, "hi", *to_server(workspace, server), "--max-wall-ms", "1500", "--json")
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert took < 10.0
    events = [EVENTS.decode(line) for line in result.stdout.splitlines()]
    stops = [e for e in events if isinstance(e, BudgetStopped)]
    assert len(stops) == 1 and stops[0].budget == "maxWallMs" and stops[0].limit == 1500
    assert 1500 <= stops[0].value < 5000
    end = events[-1]
    assert isinstance(end, RunEnded) and end.outcome == "budget_exceeded" and end.reason == "maxWallMs"
    assert "budget maxWallMs exceeded" in result.stderr


def test_max_tool_calls_stops_before_the_call_past_the_limit(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """--max-tool-calls 1 with a model calling a tool each turn: one tool runs, then maxToolCalls stops the run."""
    server.enqueue(
        tool_reply("read_file", {"path": "hello.txt"}), tool_reply("read_file", {"path": "hello.txt"}, "c2")
    )
    result = run(tmp_path, "loop", *to_server(workspace, server), "--max-tool-calls", "1", "--json")
    assert result.returncode == 0, result.stderr
    events = [EVENTS.decode(line) for line in result.stdout.splitlines()]
    assert sum(isinstance(e, ToolCalled) for e in events) == 1
    stop = next(e for e in events if isinstance(e, BudgetStopped))
    assert (stop.budget, stop.limit, stop.value) == ("maxToolCalls", 1, 2)
    assert "budget maxToolCalls exceeded" in result.stderr


def test_ctrl_c_during_bash_kills_its_group_and_exits_130_with_one_line(
    workspace: Path, tmp_path: Path
) -> None:
    """SIGINT while bash runs a command and a background child: both die, exit 130, one line, the log ends."""
    pids = tmp_path / "pids"
    command = f"sleep 300 & echo $! > {pids}; sleep 301"
    (tmp_path / "script.json").write_text(
        json.dumps({"turns": [{"toolCalls": [{"name": "bash", "arguments": {"command": command}}]}]})
    )
    args = ["run", "sleep", "--cwd", str(workspace), "--script", str(tmp_path / "script.json")]
    process = subprocess.Popen(
        [str(ALISIO), *args, "--policy", "full", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=command_env(tmp_path),
        text=True,
    )
    deadline = time.monotonic() + 20
    while not (pids.exists() and pids.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    background = int(pids.read_text())
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=20)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == (
        "alisio run: interrupted; a running command and its children were stopped"
    )
    end = EVENTS.decode(stdout.splitlines()[-1])
    assert isinstance(end, RunEnded) and end.outcome == "error" and end.reason == "interrupted"
    gone_by = time.monotonic() + 5  # SIGKILL is delivered asynchronously: give a loaded machine a moment
    while alive(background) and time.monotonic() < gone_by:
        time.sleep(0.05)
    assert not alive(background)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a killed child nobody reaped yet is a zombie, which counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def test_the_key_is_never_in_bash_output_whatever_its_variable_is_called(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """provider.apiKeyEnv = "MY_LLM" (no secret-looking name): bash sees no MY_LLM, the key is nowhere."""
    write_config(tmp_path, '[provider]\napiKeyEnv = "MY_LLM"\n')
    server.enqueue(tool_reply("bash", {"command": "echo key=$MY_LLM; env"}), text_reply("done"))
    env = {"MY_LLM": SECRET, "COPY_OF_IT": SECRET}
    result = run(tmp_path, "env", *to_server(workspace, server), "--policy", "full", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    tool_output = next(m for m in server.requests[1].json()["messages"] if m["role"] == "tool")["content"]
    assert "key=\n" in tool_output and "PATH=" in tool_output
    (kept,) = (tmp_path / "data" / "run").glob("*/transcript.jsonl")
    for text in (tool_output, result.stdout, result.stderr, kept.read_text()):
        assert SECRET not in text


def test_a_prompt_of_dash_is_read_from_standard_input(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """``alisio run -`` sends what stdin holds as the task; an empty one is one line, exit 1."""
    server.enqueue(text_reply("ok"))
    piped = run(tmp_path, "-", *to_server(workspace, server), input="Fix the bug\nin add.\n")
    assert piped.returncode == 0, piped.stderr
    assert server.requests[0].json()["messages"][-1] == {"role": "user", "content": "Fix the bug\nin add.\n"}
    empty = run(tmp_path, "-", *to_server(workspace, server), input="  \n")
    assert empty.returncode == 1 and "prompt is empty" in empty.stderr and empty.stderr.count("\n") == 1
    assert len(server.requests) == 1


def test_a_workspace_that_does_not_exist_is_one_line(tmp_path: Path) -> None:
    """--cwd naming no directory: exit 1, one line saying it does not exist."""
    result = run(tmp_path, "hi", "--cwd", str(tmp_path / "nope"), "--base-url", "http://127.0.0.1:9/v1")
    assert result.returncode == 1
    assert result.stderr == f"alisio run: --cwd {tmp_path / 'nope'}: no such directory\n"


def test_a_password_in_the_base_url_is_in_no_output(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """--base-url http://user:pass@host: the provider error on stderr and the --json event log never hold the
    password (it is still sent, as HTTP basic auth)."""
    server.enqueue(Reply.json({"error": {"message": "bad credentials"}}, status=401))
    base_url = server.base_url.replace("http://", "http://alice:hunter2-pw@")
    result = run(tmp_path, "hi", "--cwd", str(workspace), "--base-url", base_url, "--model", "m1", "--json")
    assert result.returncode == 1
    assert "hunter2-pw" not in result.stderr + result.stdout
    assert "http://<redacted>@127.0.0.1" in result.stderr
    assert "Traceback" not in result.stderr
    assert server.requests[0].headers["authorization"].startswith("Basic ")


def test_max_response_bytes_from_the_configuration_caps_a_response(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """provider.maxResponseBytes = 2048 in config.toml: a 10 KB answer ends the run with provider_too_large."""
    write_config(tmp_path, "[provider]\nmaxResponseBytes = 2048\n")
    server.enqueue(text_reply("x" * 10_000))
    result = run(tmp_path, "hi", *to_server(workspace, server, "m1"))
    assert result.returncode == 1
    assert result.stderr.startswith(
        "alisio run: error (provider_too_large): the response from http://127.0.0.1"
    )
    assert "passed 2048 bytes (provider.maxResponseBytes)" in result.stderr


def test_a_config_that_is_a_symlink_to_dev_zero_does_not_hang_alisio_run(
    workspace: Path, tmp_path: Path
) -> None:
    """config.toml -> /dev/zero: one line naming the file and what it is, exit 1, at once."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").symlink_to("/dev/zero")
    started = time.monotonic()
    result = run(
        tmp_path, "hi", "--cwd", str(workspace), "--base-url", "http://127.0.0.1:9/v1", "--model", "m"
    )
    assert time.monotonic() - started < 20
    assert result.returncode == 1
    assert result.stderr == (
        f"alisio run: {tmp_path / 'config' / 'config.toml'}: cannot read: it is a character device, "
        "not a regular file\n"
    )


HOSTILE = "\x1b]0;pwned\x07Done.\x1b[2J Key: " + SECRET + "\ttab"


def _run_on_a_terminal(tmp_path: Path, *args: str, key: str) -> tuple[int, str]:
    """``alisio run *args`` with stdout a pseudo-terminal (stderr and stdin not): (exit code, stdout)."""
    import pty

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(ALISIO), "run", *args],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env=command_env(tmp_path, {"OPENAI_API_KEY": key}),
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return process.wait(timeout=60), b"".join(chunks).decode()


def test_the_final_text_is_escaped_on_a_terminal_and_kept_for_a_pipe(
    server: SseServer, workspace: Path, tmp_path: Path
) -> None:
    """A final text with a window-title sequence, a clear-screen and the key: on a terminal it prints
    escaped (no ESC byte reaches the screen) and redacted; to a pipe it keeps the model's bytes (ESC, BEL
    and tab) with only the key redacted."""
    args = ("hi", *to_server(workspace, server, "m1"))
    server.enqueue(text_reply(HOSTILE))
    code, screen = _run_on_a_terminal(tmp_path, *args, key=SECRET)
    assert code == 0
    assert "\x1b" not in screen and "\x07" not in screen and SECRET not in screen
    assert "\\x1b]0;pwned\\x07Done.\\x1b[2J Key: " in screen and "\ttab" in screen
    server.enqueue(text_reply(HOSTILE))
    piped = run(tmp_path, *args, key=SECRET)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.startswith("\x1b]0;pwned\x07Done.\x1b[2J Key: ") and piped.stdout.endswith("\ttab\n")
    assert SECRET not in piped.stdout
