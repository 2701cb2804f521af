"""``alisio eval mock-endpoint``: the installed command as a real process, spoken to over real HTTP.

- Its stdout's first line is the base URL; alisio's own clients of the three wire APIs (``alisio run
  --provider openai_compat|openai|anthropic``: Chat Completions, Responses, Anthropic Messages) fix a copy of
  smoke-coding's fix-add against its default answers; stderr logs each request; Ctrl-C stops it with 130 and
  the count, SIGTERM with 143.
- ``--script``: the turn a request gets is how many assistant turns its conversation holds, ``{shell}`` is the
  agent's shell tool, past the last turn is an HTTP 500 that says so, a ``failure`` is its HTTP status, a turn
  without usage reports none (raw HTTP, streamed and not, on each API).
- Bad input: an invalid script and a taken port are one line each, exit 1.
- Slow: a real agent CLI (Codex) fixes fix-add against the command, through ``eval run``, with the network
  cut (``unshare -n``, loopback only).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from alisio.shell.agents.setup import agents_bin
from tests.integration.helpers import ALISIO, ROOT, command_env, write_config

FIXTURE = ROOT / "suites" / "smoke-coding" / "fixtures" / "fix-add"
BASH = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}


@contextmanager
def serving(
    home: Path, *args: str | Path, cwd: Path | None = None
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``alisio eval mock-endpoint ARGS`` running (in ``cwd``), and the base URL its stdout printed first."""
    process = subprocess.Popen(
        [str(ALISIO), "eval", "mock-endpoint", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=command_env(home),
        cwd=cwd,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), url
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def stop(process: subprocess.Popen[str], signum: int = signal.SIGINT) -> tuple[int, str]:
    """Send ``signum``; the exit code and all of stderr."""
    process.send_signal(signum)
    _, err = process.communicate(timeout=30)
    return process.returncode, err


def test_alisios_own_clients_of_each_api_fix_fix_add_against_the_default(tmp_path: Path) -> None:
    """Chat Completions, Responses, Anthropic Messages: each ``alisio run`` fixes its copy; each request is
    logged on stderr; Ctrl-C exits 130 saying how many requests it answered."""
    with serving(tmp_path) as (process, url):
        for api in ("openai-chat", "openai-responses", "anthropic"):
            home = tmp_path / api
            write_config(home, f'[provider]\napi = "{api}"\nbaseUrl = "{url}"\nmodel = "m"\n')
            shutil.copytree(FIXTURE, home / "copy")
            done = subprocess.run(
                [str(ALISIO), "run", "Fix add in src/calc.py.", "--cwd", str(home / "copy"), "--policy", "auto",
                 "--allow-write", "--allow-process"],
                capture_output=True, text=True, timeout=120, env=command_env(home), check=False,
            )  # fmt: skip
            assert done.returncode == 0, (api, done.stderr)
            assert "return a + b" in (home / "copy" / "src" / "calc.py").read_text(), api
            assert subprocess.run(["python3", "check.py"], cwd=home / "copy", check=False).returncode == 0
        code, err = stop(process)
    assert code == 130, err
    lines = err.splitlines()
    assert lines[0].startswith(
        f"serving OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and Gemini API at {url}, with the answers"
    )
    served = [line for line in lines if line.startswith("POST ")]
    assert [line.split(":")[0] for line in served] == [
        "POST /v1/chat/completions", "POST /v1/chat/completions",
        "POST /v1/responses", "POST /v1/responses",
        "POST /v1/messages", "POST /v1/messages",
    ]  # fmt: skip
    assert "openai-chat, model m, turn 1 (" in served[0] and "-> tool call bash" in served[0]
    assert "turn 2 (" in served[1] and "after a tool result) -> text 'Fixed: add returns a + b.'" in served[1]
    assert "anthropic, model m, turn 1" in served[4]
    assert lines[-1] == "stopped after 6 requests"
    assert "Traceback" not in err


SCRIPT = {
    "turns": [
        {
            "text": "Fixing it.",
            "toolCalls": [{"name": "{shell}", "arguments": {"command": "echo fixed"}}],
            "usage": {"inputTokens": 7, "outputTokens": 3, "cachedInputTokens": 2},
        },
        {"text": "Done."},
        {"failure": {"kind": "rate_limited", "message": "slow down"}},
    ]
}


def chat(url: str, messages: list[dict[str, Any]], tools: list[Any], stream: bool = False) -> httpx.Response:
    body = {"model": "m", "messages": messages, "tools": tools, "stream": stream}
    return httpx.post(f"{url}/chat/completions", json=body, timeout=30)


def test_a_script_answers_each_conversation_by_its_turn_on_every_api(tmp_path: Path) -> None:
    """The turn is the number of assistant turns already in the conversation, whatever else was asked;
    ``{shell}`` becomes the offered shell tool in its own argument shape; usage as the turn says, or none."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    user = {"role": "user", "content": "go"}
    assistant = {"role": "assistant", "content": "x"}
    with serving(tmp_path, "--script", script) as (process, url):
        first = chat(url, [user], [BASH]).json()
        call = first["choices"][0]["message"]["tool_calls"][0]
        assert call["function"] == {
            "name": "bash",
            "arguments": '{"command": "echo fixed"}',
        }
        assert first["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10,
                                  "prompt_tokens_details": {"cached_tokens": 2}}  # fmt: skip
        again = chat(url, [user], [BASH]).json()  # another run, at its own first turn
        assert again["choices"][0]["message"]["tool_calls"][0]["id"] == call["id"] == "call_1_1"
        second = chat(url, [user, assistant, {"role": "tool", "content": "ok"}], [BASH], stream=True)
        assert second.headers["content-type"] == "text/event-stream"
        assert '"content": "Done."' in second.text and "usage" not in second.text  # no usage: none reported
        limited = chat(url, [user, assistant, user, assistant], [BASH])
        assert (limited.status_code, limited.json()["error"]["message"]) == (429, "rate_limited: slow down")
        past = chat(url, [user, assistant] * 3, [BASH])
        assert past.status_code == 500
        assert (
            past.json()["error"]["message"]
            == f"mock-endpoint: {script} has 3 turns; this conversation asks for turn 4"
        )
        codex = httpx.post(f"{url}/responses", json={"model": "m", "input": [{"role": "user", "content": "go"}],
                           "tools": [{"type": "function", "name": "exec_command"}]}, timeout=30).json()  # fmt: skip
        (item,) = codex["output"][:1]
        assert (item["name"], json.loads(item["arguments"])) == ("exec_command", {"cmd": "echo fixed"})
        claude = httpx.post(f"{url}/messages", json={"model": "m", "messages": [user], "stream": True,
                            "tools": [{"name": "Bash", "input_schema": {}}]}, timeout=30).text  # fmt: skip
        assert '"name": "Bash"' in claude and '"cache_read_input_tokens": 2' in claude
        title = chat(url, [user], []).json()["choices"][0]["message"]  # no tools offered: the text only
        assert (title["content"], "tool_calls" in title) == ("Fixing it.", False)
        code, err = stop(process, signal.SIGTERM)
    assert code == 143, err
    assert err.splitlines()[-1] == "stopped after 8 requests"


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    """An invalid script names the file and the field; a taken port names the port; exit 1, no traceback."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"turns": [{"txt": "hi"}]}))
    env = command_env(tmp_path)
    done = subprocess.run([str(ALISIO), "eval", "mock-endpoint", "--script", str(bad)], capture_output=True,
                          text=True, timeout=60, env=env, check=False)  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    assert (
        done.stderr
        == f"alisio eval mock-endpoint: {bad}: invalid script: Object contains unknown field `txt` - at `$.turns[0]`\n"
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = subprocess.run([str(ALISIO), "eval", "mock-endpoint", "--port", str(port)], capture_output=True,
                              text=True, timeout=60, env=env, check=False)  # fmt: skip
    assert busy.returncode == 1 and busy.stdout == ""
    assert (
        busy.stderr
        == f"alisio eval mock-endpoint: --port {port}: cannot listen on 127.0.0.1: Address already in use\n"
    )


def _netns_works() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    done = subprocess.run(
        ["unshare", "-n", "ip", "link", "set", "lo", "up"], capture_output=True, check=False
    )
    return done.returncode == 0


DRIVER = """ip link set lo up
"$ALISIO" eval mock-endpoint --port 8765 > "$OUT/url" 2> "$OUT/endpoint.log" &
pid=$!
tries=0
until [ -s "$OUT/url" ] || [ $tries -ge 300 ]; do sleep 0.1; tries=$((tries + 1)); done
timeout 400 "$ALISIO" eval run smoke-coding --tasks fix-add --k 1 --agent cx --base-url "$(cat "$OUT/url")" \\
    --allow-write --allow-process --out "$OUT/report" > "$OUT/run.out" 2> "$OUT/run.err"
echo $? > "$OUT/run.rc"
kill -TERM $pid
wait $pid
echo $? > "$OUT/endpoint.rc"
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_codex_fixes_fix_add_against_the_command(tmp_path: Path) -> None:
    """The real Codex CLI (.agents/bin, ``make agents``), in ``eval run --agent``, against ``alisio eval
    mock-endpoint``'s default, with the network cut: the run passes, the endpoint logged Codex's Responses
    calls, and SIGTERM stopped it with 143 (a background job of a script ignores SIGINT)."""
    binary = shutil.which(
        "codex", path=os.pathsep.join(filter(None, [os.environ.get("PATH"), str(agents_bin() or "")]))
    )
    if binary is None:
        pytest.skip("Codex is not installed (make agents)")
    if not _netns_works():
        pytest.skip("no network namespace can be made here (unshare -n)")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text(
        f'[provider]\nmodel = "m"\n\n[agents.cx]\nkind = "codex"\nbinary = "{binary}"\n'
    )
    env = {**command_env(tmp_path), "ALISIO": str(ALISIO), "OUT": str(tmp_path)}
    done = subprocess.run(["unshare", "-n", "sh", "-c", DRIVER], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_err = (tmp_path / "run.err").read_text()
    assert (tmp_path / "run.rc").read_text().strip() == "0", run_err
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert (report["summary"]["passes"], report["summary"]["runs"]) == (1, 1), run_err
    log = (tmp_path / "endpoint.log").read_text()
    assert (tmp_path / "endpoint.rc").read_text().strip() == "143", log
    assert "POST /v1/responses: openai-responses, model m, turn 1" in log and "tool call exec_command" in log
    assert log.splitlines()[-1].startswith("stopped after ")
