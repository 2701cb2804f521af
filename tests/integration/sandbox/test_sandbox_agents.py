"""External agents under ``--sandbox bwrap`` through the real CLI and real bubblewrap, with the test agent
(``fake_agent.py``) against the scripted endpoint: the agent reaches the model through its proxy's relay and
nothing else, writes nowhere but the copy (each attempt checked from outside), leaves no process behind, and a
sandboxed recording replays without divergence. The real CLIs sandboxed are in test_real_agents.py (slow).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path

import pytest

from alisio.shell.agents.mock_endpoint import FIX_COMMAND, MockEndpoint
from tests.integration.agents.test_external_agents import (
    FAKE,
    SECRET,
    _agent,
    _agent_exit,
    _config,
    _records,
    _suite,
    _task,
)
from tests.integration.helpers import alisio
from tests.integration.sandbox.test_sandbox import Listener

pytestmark = [
    pytest.mark.xdist_group("external-agents"),
    pytest.mark.skipif(
        shutil.which("bwrap") is None,
        reason="bubblewrap is not installed (apt-get install bubblewrap; .ci/run installs it)",
    ),
]
ESCAPE = '["ESCAPE_PORTS", "ESCAPE_PATHS"]'


MARK = "ALISIO_TEST_RUN"
"""A variable passed to this test's agents: their processes are told from other tests' sandboxed ones (the
other xdist worker may be running its own sandboxed commands at the same moment)."""


def _sandboxed_processes(token: str) -> list[int]:
    """Host processes of this test's sandboxed agent runs (HOME below the sandbox's /home/sandbox, and
    ``MARK`` set to ``token``)."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"HOME=/home/sandbox/home" in environ and f"{MARK}={token}".encode() in environ:
            found.append(int(name))
    return found


def test_a_sandboxed_agent_reaches_the_model_through_its_proxy_and_nothing_else(tmp_path: Path) -> None:
    """Each agent run is sandboxed and still passes through the proxy; the report's counts equal the
    endpoint's log; a direct connection and a write outside the copy fail inside and leave no trace outside."""
    marked = f'["{MARK}"]'
    agents = _agent("esc", "--mode", "escape", env=ESCAPE) + _agent("hang", "--mode", "hang", env=marked)
    agents += _agent("r", "--api", "openai-responses", api='"openai-responses"')
    agents += _agent("loop", "--model", "loop")
    agents += '[agents.gone]\nkind = "command"\ncommand = ["/nonexistent/agent", "{prompt}"]\n'
    _config(tmp_path, agents)
    tasks = [
        _task("esc", "esc"),
        _task("hang", "hang", maxWallMs=1500),
        _task("r", "r"),
        _task("gone", "gone"),
        _task("turns", "loop", maxTurns=3),
    ]
    suite = _suite(tmp_path, tasks)
    token = secrets.token_hex(6)
    home_file = Path.home() / f"alisio-escape-{token}"
    outside = tmp_path / f"outside-{token}"
    listener = Listener("127.0.0.1")
    out = tmp_path / "out"
    with MockEndpoint() as endpoint:
        port = endpoint.base_url.rsplit(":", 1)[1].split("/")[0]
        env = {
            "OPENAI_API_KEY": SECRET,
            "ESCAPE_PORTS": f"{port},{listener.port}",
            "ESCAPE_PATHS": f"{outside},{home_file},../../escape-{token},/etc/escape-{token}",
            MARK: token,
        }
        args = ["eval", "run", "agents-suite", "--suite-dir", str(suite), "--yes", "--k", "1", "--jobs", "2"]
        args += ["--base-url", endpoint.base_url, "--allow-write", "--allow-process", "--sandbox", "bwrap"]
        done = alisio(tmp_path, *args, "--out", str(out), env=env)
        log = endpoint.model_calls
    assert done.returncode == 1, done.stderr  # the agent that cannot start is an error run
    assert "sandbox bwrap)" in done.stderr
    records = _records(out)
    status = {task_id: (r.status.value, r.reason) for task_id, r in records.items()}
    assert status == {
        "esc": ("pass", None),
        "hang": ("budget_exceeded", "maxWallMs"),
        "r": ("pass", None),
        "gone": ("error", "agent_start"),
        "turns": ("budget_exceeded", "maxTurns"),
    }
    assert (
        "cannot start /nonexistent/agent: No such file or directory (in the sandbox)"
        in records["gone"].errors[0]
    )
    # every model call went through the proxy: the report counts exactly what the endpoint received, and
    # nothing past maxTurns reached it
    assert sum(r.measured.turns for r in records.values()) == len(log) == 2 + 2 + 3
    assert records["turns"].measured.turns == 3
    assert sum(r.measured.input_tokens or 0 for r in records.values()) == 100 * len(log)
    assert {r.headers["authorization"] for r in log} == {f"Bearer {SECRET}"}  # the proxy added the key
    seen = json.loads(_agent_exit(out, "esc")["stdout"].splitlines()[0])
    assert seen["connect"] == {port: "Connection refused", str(listener.port): "Connection refused"}
    assert listener.connections == 0
    assert seen["write"] == {
        str(outside): "No such file or directory",
        str(home_file): "No such file or directory",
        f"../../escape-{token}": "Read-only file system",
        f"/etc/escape-{token}": "Read-only file system",
    }
    denied = [i.message for i in records["esc"].incidents if i.kind == "sandbox_denied"]
    assert denied == [
        "agent esc: the sandbox refused a write outside the workspace (read-only file system); "
        "a network connection (no network in the sandbox)"
    ]
    assert not [i for i in records["r"].incidents if i.kind == "sandbox_denied"]
    assert not outside.exists() and not home_file.exists() and not Path(f"/etc/escape-{token}").exists()
    assert not list(Path("/tmp").glob(f"escape-{token}")) and not list(tmp_path.rglob(f"escape-{token}"))
    assert (seen["cwd"], seen["hostname"], seen["pid"]) == ("/workspace", "sandbox", 3)
    assert seen["env"] == {
        "HOME": "/home/sandbox/home",
        "OPENAI_BASE_URL": "http://127.0.0.1:4141/v1",
        "XDG_CONFIG_HOME": "/home/sandbox/xdg-config",
        "XDG_DATA_HOME": "/home/sandbox/xdg-data",
        "XDG_STATE_HOME": "/home/sandbox/xdg-state",
        "XDG_CACHE_HOME": "/home/sandbox/xdg-cache",
    }
    assert _agent_exit(out, "hang")["killed"] == "maxWallMs"
    assert _sandboxed_processes(token) == []  # the hung agent's detached `setsid sleep` died with its sandbox
    report = json.loads((out / "report.json").read_text())
    assert report["conditions"]["sandbox"] == "bwrap"


def test_a_sandboxed_agent_run_records_then_replays_from_another_path_without_divergence(
    tmp_path: Path,
) -> None:
    """A recording made in the sandbox replays in it, from another copy of the suite, with no divergence and
    no endpoint, and replays outside it too: the agent's tool output names its workspace and HOME, which
    fingerprint as ``<workspace>`` and ``<run>`` in and out of the sandbox (``/workspace`` only as a path:
    ``</workspace_roots>`` stays). Its counts are the recording's endpoint log."""
    _config(tmp_path, _agent("fake", "--api", "openai-responses", api='"openai-responses"'))
    suite = _suite(tmp_path / "a", [_task("fix", "fake")])
    common = ["--yes", "--agent", "fake", "--allow-write", "--allow-process"]
    shown = f'{FIX_COMMAND}; echo "$PWD </workspace_roots> $HOME"'
    with MockEndpoint(command=shown) as endpoint:
        recorded = alisio(
            tmp_path, "eval", "record", "agents-suite", "--suite-dir", str(suite), *common, "--sandbox", "bwrap",
            "--base-url", endpoint.base_url, env={"OPENAI_API_KEY": SECRET},
        )  # fmt: skip
        log = endpoint.model_calls
    assert recorded.returncode == 0, recorded.stderr
    cassette = (suite / "cassettes" / "fake" / "fix.jsonl").read_text()
    assert "<workspace> </workspace_roots> <run>/home" in cassette and SECRET not in cassette
    moved = tmp_path / "b" / "agents-suite"
    shutil.copytree(suite, moved)
    for sandbox in ("bwrap", "none"):
        out = tmp_path / f"out-{sandbox}"
        replayed = alisio(
            tmp_path, "eval", "run", "agents-suite", "--suite-dir", str(moved), *common, "--sandbox", sandbox,
            "--mode", "replay", "--out", str(out),
        )  # fmt: skip
        assert replayed.returncode == 0, (sandbox, replayed.stderr)
        record = _records(out)["fix"]
        assert (record.status.value, record.divergence) == ("pass", None), sandbox
        assert record.measured.turns == len(log) == 2


def test_a_prompt_or_model_naming_a_host_file_binds_nothing_into_the_sandbox(tmp_path: Path) -> None:
    """D3: a hostile task whose prompt is the path of a host secret (a stand-in home's ``.ssh/id_rsa``), and a
    model that names another host file, given to a command agent as arguments: outside the sandbox the agent
    reads both (they are real); inside, neither exists, while the script its configured command names is
    bound and runs. The run passes either way."""
    secret = tmp_path / "stand-in-home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text("stand-in private key")
    named = tmp_path / "model-secret.txt"
    named.write_text("model secret")
    command = json.dumps(["python3", str(FAKE), "--mode", "read", "--model", "{model}", "{prompt}"])
    _config(tmp_path, f'[agents.peek]\nkind = "command"\ncommand = {command}\n')
    suite = _suite(tmp_path, [{**_task("peek", "peek"), "prompt": str(secret)}])
    seen = {}
    for sandbox in ("none", "bwrap"):
        out = tmp_path / f"out-{sandbox}"
        with MockEndpoint() as endpoint:
            done = alisio(
                tmp_path, "eval", "run", "agents-suite", "--suite-dir", str(suite), "--yes", "--allow-write",
                "--allow-process", "--base-url", endpoint.base_url, "--model", str(named), "--sandbox", sandbox,
                "--out", str(out), env={"OPENAI_API_KEY": SECRET},
            )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert _records(out)["peek"].status.value == "pass"
        seen[sandbox] = json.loads(_agent_exit(out, "peek")["stdout"].splitlines()[0])
    assert seen["none"] == {str(secret): secret.read_text(), str(named): "model secret"}
    assert seen["bwrap"] == {
        str(secret): "No such file or directory",
        str(named): "No such file or directory",
    }


def test_agent_files_binds_the_install_tree_and_the_paths_of_its_command(tmp_path: Path) -> None:
    """An executable outside /usr runs by its real path with its venv (and that venv's base Python) or its
    topmost node_modules bound; one the sandbox has runs as it is; the existing absolute paths its configured
    command names are bound (``command_paths``, before substitution), never an argument a run put in, nor the
    sandbox's own mount points."""
    from alisio.core.agents.external import command_paths
    from alisio.shell.sandbox.agents import agent_files

    python = tmp_path / "python" / "bin"
    python.mkdir(parents=True)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {python}\n")
    script = venv / "bin" / "agent"
    script.write_text(f"#!{venv}/bin/python\n")
    script.chmod(0o755)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "agent").symlink_to(script)
    first = ("agent", "--config", str(tmp_path / "agent.toml"), "/tmp")
    argv, binds = agent_files(list(first), f"{tmp_path / 'bin'}:/usr/bin", command_paths(first))
    assert argv == [str(script), "--config", str(tmp_path / "agent.toml"), "/tmp"]
    assert binds == (str(tmp_path / "python"), str(venv))  # the config file does not exist: nothing to bind
    cli = tmp_path / "npm" / "node_modules" / "pkg" / "node_modules" / "dep" / "cli.js"
    cli.parent.mkdir(parents=True)
    cli.write_text("#!/usr/bin/env node\n")
    assert agent_files([str(cli)], "/usr/bin") == ([str(cli)], (str(tmp_path / "npm" / "node_modules"),))
    mine = tmp_path / "my-agent.py"
    mine.write_text("print()\n")
    secret = tmp_path / "secret"
    secret.write_text("key")
    template = (
        "python3",
        str(mine),
        "/workspace",
        "{prompt}",
        f"{tmp_path}/{{model}}",
        "--file={prompt_file}",
    )
    assert command_paths(template) == (str(mine), "/workspace")
    run = ["python3", str(mine), "/workspace", str(secret), str(secret), f"--file={secret}"]
    assert agent_files(run, f"{tmp_path / 'bin'}:/usr/bin", command_paths(template)) == (run, (str(mine),))
