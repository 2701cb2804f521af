"""Real agent CLIs (``make agents``: Codex, OpenCode, Claude Code, Gemini CLI, aider) against the scripted
endpoint with the network cut (``unshare -n``, loopback only).

The Codex (Responses API), OpenCode (Chat Completions), Claude Code (Anthropic Messages) and Gemini CLI (the
Gemini API) tests record smoke-coding's fix-add (``eval record --agent``), then replay it from another
temporary path (``--mode replay``): the replayed run passes (the fixture was fixed), has no divergence, and
its model calls and tokens equal the endpoint's own log of the recording. Skipped, saying why, where the agent
is not installed or a network namespace cannot be made. One record-then-replay per agent (aider: one live
run), on the smallest task; measured on the shared 2-core machine: Codex 25 s, Claude Code 15 s, OpenCode
38-44 s, Gemini CLI 55-60 s, aider 7-24 s. Under ``--sandbox bwrap`` each agent records and replays again
(aider: and a replay of a changed fixture diverges, exit 2; 15-33 s; Gemini CLI 79 s). Marked ``slow``:
``make test`` leaves them out, ``make test-slow`` (run by ``.ci/run`` after ``make agents``) runs them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from alisio.shell.agents.setup import agents_bin

ALISIO = Path(sys.executable).with_name("alisio")
HERE = Path(__file__).resolve().parents[1]
SUITE = HERE.parents[1] / "suites" / "smoke-coding"

pytestmark = [pytest.mark.xdist_group("real-agents"), pytest.mark.slow]


def _netns_works() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    done = subprocess.run(
        ["unshare", "-n", "ip", "link", "set", "lo", "up"], capture_output=True, check=False
    )
    return done.returncode == 0


def _binary(name: str) -> str | None:
    extra = agents_bin()
    path = os.pathsep.join(filter(None, [os.environ.get("PATH", ""), str(extra) if extra else ""]))
    return shutil.which(name, path=path)


def _in_netns(tmp: Path, name: str, *args: str) -> dict[str, Any]:
    """Run ``alisio ARGS`` and the endpoint in a fresh network namespace; the driver's log."""
    log = tmp / f"{name}.json"
    driver = 'ip link set lo up && exec "$0" "$@"'
    command = [
        "unshare",
        "-n",
        "sh",
        "-c",
        driver,
        sys.executable,
        str(HERE / "netns_driver.py"),
        str(log),
        "--",
    ]
    env = {
        **{k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"},
        "ALISIO_CONFIG_HOME": str(tmp / "config"),
    }
    env["ALISIO_DATA_HOME"] = str(tmp / "data")
    done = subprocess.run(
        [*command, str(ALISIO), *args], capture_output=True, text=True, check=False, env=env, timeout=900
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(log.read_text())
    return result


def _setup(tmp_path: Path, kind: str, sandbox: str = "none") -> list[str]:
    """config.toml with ``[agents.a]`` of ``kind``, a copy of smoke-coding without cassettes; the flags
    (``sandbox``: ``--sandbox``)."""
    (tmp_path / "config").mkdir()
    config = f'[provider]\nmodel = "m"\n\n[agents.a]\nkind = "{kind}"\n'
    (tmp_path / "config" / "config.toml").write_text(config)
    suite = tmp_path / "suite"
    shutil.copytree(SUITE, suite, ignore=shutil.ignore_patterns("cassettes"))  # replayed from suite-2
    return _flags(suite, sandbox)


def _flags(suite: Path, sandbox: str) -> list[str]:
    """The flags of every run here: fix-add of ``suite`` with ``[agents.a]``, ``--sandbox sandbox``."""
    return [
        "--suite-dir",
        str(suite),
        "--yes",
        "--tasks",
        "fix-add",
        "--agent",
        "a",
        "--allow-write",
        "--allow-process",
        "--sandbox",
        sandbox,
    ]


def _check(report: dict[str, Any], calls: list[dict[str, Any]], kind: str) -> None:
    """The run passed (the fixture was fixed) and its model calls and tokens are the endpoint's log."""
    task = report["tasks"][0]
    assert (task["passes"], task["judged"]) == (1, 1), report
    measured = report["summary"]["measured"]
    assert measured["turns"] == len(calls) > 0
    assert measured["tokens"]["input"] == sum(c["usage"]["prompt_tokens"] for c in calls)
    assert measured["tokens"]["output"] == sum(c["usage"]["completion_tokens"] for c in calls)
    assert report["conditions"]["agent"]["kind"] == kind


def _record_then_replay(tmp_path: Path, kind: str, sandbox: str = "none") -> list[dict[str, Any]]:
    """Record fix-add with the agent of ``kind``, replay it from another path; the recording's calls."""
    common = _setup(tmp_path, kind, sandbox)
    recorded = _in_netns(
        tmp_path, "record", "eval", "record", "smoke-coding", *common, "--base-url", "{base_url}"
    )
    assert recorded["rc"] == 0, recorded["stderr"]
    assert (tmp_path / "suite" / "cassettes" / "a" / "fix-add.jsonl").is_file()
    out = tmp_path / "replayed"
    moved = tmp_path / "suite-2"
    shutil.copytree(tmp_path / "suite", moved)  # another path: another workspace path, too
    common[common.index(str(tmp_path / "suite"))] = str(moved)
    args = ("eval", "run", "smoke-coding", *common, "--mode", "replay", "--out", str(out))
    replayed = _in_netns(tmp_path, "replay", *args)
    assert replayed["rc"] == 0, replayed["stderr"]
    assert replayed["calls"] == []  # the replay reached no endpoint
    report = json.loads((out / "report.json").read_text())
    _check(report, recorded["calls"], kind)
    assert report["conditions"]["sandbox"] == sandbox
    calls: list[dict[str, Any]] = recorded["calls"]
    return calls


@pytest.mark.skipif(
    not _netns_works(), reason="needs unshare -n (root, or user namespaces) to cut the network"
)
@pytest.mark.skipif(_binary("opencode") is None, reason="OpenCode is not installed (make agents)")
def test_opencode_fixes_fix_add_and_replays_clean(tmp_path: Path) -> None:
    """OpenCode fixes fix-add; the replay from another path has no divergence and counts every call the
    endpoint saw while recording (its title call included)."""
    calls = _record_then_replay(tmp_path, "opencode")
    assert sum(1 for call in calls if not call["tools"]) == 1  # the title call


@pytest.mark.skipif(
    not _netns_works(), reason="needs unshare -n (root, or user namespaces) to cut the network"
)
@pytest.mark.skipif(_binary("codex") is None, reason="Codex is not installed (make agents)")
def test_codex_fixes_fix_add_and_replays_clean(tmp_path: Path) -> None:
    """Codex (Responses API) fixes fix-add with its ``exec_command`` tool; the replay from another path has
    no divergence (its per-run noise normalised) and counts every call the endpoint saw while recording."""
    calls = _record_then_replay(tmp_path, "codex")
    assert {call["path"] for call in calls} == {"/v1/responses"}
    _exports_carry_the_agent(tmp_path, tmp_path / "replayed", "codex", calls)


def _exports_carry_the_agent(tmp: Path, run: Path, kind: str, calls: list[dict[str, Any]]) -> None:
    """``eval export --format atif`` and ``otlp-json`` of an external agent's run: its name and version, one
    agent step (one chat span) per model call the endpoint saw, its tool calls from the recorded answers."""
    env = {**os.environ, "ALISIO_CONFIG_HOME": str(tmp / "config"), "ALISIO_DATA_HOME": str(tmp / "data")}
    for fmt in ("atif", "otlp-json"):
        done = subprocess.run(
            [str(ALISIO), "eval", "export", str(run), "--format", fmt, "--out", str(tmp / fmt)],
            capture_output=True, text=True, check=False, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    report = json.loads((run / "report.json").read_text())
    trajectory = json.loads((tmp / "atif" / "fix-add" / "0.json").read_text())
    agent = report["conditions"]["agent"]
    assert (trajectory["agent"]["name"], trajectory["agent"]["version"]) == (agent["name"], agent["version"])
    assert trajectory["agent"]["extra"]["kind"] == kind
    steps = [s for s in trajectory["steps"] if s["source"] == "agent"]
    assert len(steps) == len(calls)
    assert sum(s["metrics"]["prompt_tokens"] for s in steps) == sum(
        c["usage"]["prompt_tokens"] for c in calls
    )
    assert any(s.get("tool_calls") for s in steps) and not any("observation" in s for s in steps)
    (line,) = (tmp / "otlp-json" / "traces.jsonl").read_text().splitlines()
    spans = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert sum(s["name"].startswith("chat ") for s in spans) == len(calls)
    assert spans[0]["name"] == f"invoke_agent {agent['name']}"
    assert len(calls) == 2  # the tool call, then the final answer


@pytest.mark.skipif(
    not _netns_works(), reason="needs unshare -n (root, or user namespaces) to cut the network"
)
@pytest.mark.skipif(_binary("aider") is None, reason="aider is not installed (make agents)")
def test_aider_fixes_fix_add(tmp_path: Path) -> None:
    """aider edits with a SEARCH/REPLACE block (no tool calls); its calls and tokens are the endpoint's.

    Live only: aider orders its chat's files by a set of absolute paths, so a replay from another workspace
    path sends them in another order (a divergence at ``messages[7].content``; docs/agents.md says so)."""
    common = _setup(tmp_path, "aider")
    out = tmp_path / "live"
    args = ("eval", "run", "smoke-coding", *common, "--k", "1", "--base-url", "{base_url}", "--out", str(out))
    live = _in_netns(tmp_path, "live", *args)
    assert live["rc"] == 0, live["stderr"]
    _check(json.loads((out / "report.json").read_text()), live["calls"], "aider")


@pytest.mark.skipif(
    not _netns_works(), reason="needs unshare -n (root, or user namespaces) to cut the network"
)
@pytest.mark.skipif(_binary("claude") is None, reason="Claude Code is not installed (make agents)")
def test_claude_code_fixes_fix_add_and_replays_clean(tmp_path: Path) -> None:
    """Claude Code (Anthropic Messages) fixes fix-add with its ``Bash`` tool; the replay from another path has
    no divergence and counts every call the endpoint saw while recording."""
    calls = _record_then_replay(tmp_path, "claude-code")
    assert {call["path"].split("?")[0] for call in calls} == {"/v1/messages"}


@pytest.mark.skipif(
    not _netns_works(), reason="needs unshare -n (root, or user namespaces) to cut the network"
)
@pytest.mark.skipif(_binary("gemini") is None, reason="Gemini CLI is not installed (make agents)")
def test_gemini_cli_fixes_fix_add_and_replays_clean(tmp_path: Path) -> None:
    """Gemini CLI (the Gemini API) fixes fix-add with its ``run_shell_command`` tool; the replay from another
    path has no divergence (its call ids, date and process group normalised) and counts every call the
    endpoint saw while recording: the tool call and the answer, nothing of its own."""
    calls = _record_then_replay(tmp_path, "gemini-cli")
    # it posts to /v1beta/models/m:streamGenerateContent?alt=sse; the proxy sends it on under --base-url
    assert [call["path"] for call in calls] == ["/v1/models/m:streamGenerateContent?alt=sse"] * 2


NEEDS_BWRAP = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)
NEEDS_NETNS = pytest.mark.skipif(
    not _netns_works(), reason="needs unshare -n (root, or user namespaces) to cut the network"
)


@NEEDS_BWRAP
@NEEDS_NETNS
@pytest.mark.parametrize(
    ("kind", "binary", "calls"),
    [
        ("opencode", "opencode", 3),
        ("codex", "codex", 2),
        ("claude-code", "claude", None),
        ("gemini-cli", "gemini", 2),
    ],
)
def test_a_real_agent_in_the_sandbox_fixes_fix_add_and_replays_clean(
    tmp_path: Path, kind: str, binary: str, calls: int | None
) -> None:
    """Under --sandbox bwrap (no network: the proxy's unix socket and the relay inside are its only way out)
    each agent fixes fix-add through the proxy, its report counts the endpoint's log, and the recording
    replays from another path without divergence (aider: the next test)."""
    if _binary(binary) is None:
        pytest.skip(f"{kind} is not installed (make agents)")
    recorded = _record_then_replay(tmp_path, kind, "bwrap")
    if calls is not None:
        assert len(recorded) == calls


@NEEDS_BWRAP
@NEEDS_NETNS
@pytest.mark.skipif(_binary("aider") is None, reason="aider is not installed (make agents)")
def test_aider_in_the_sandbox_replays_clean_and_a_changed_fixture_diverges(tmp_path: Path) -> None:
    """Under --sandbox bwrap aider fixes fix-add in one call and its recording replays from another path
    without divergence: inside, the workspace is always /workspace, so the order of its chat's files (a set
    of absolute paths) is the same in every run. Then the fixture changes under the cassette (one word of
    src/calc.py's docstring): aider sends the file's text to the model, so the replay stops at that call,
    exit 2, naming the task, the call and the field."""
    recorded = _record_then_replay(tmp_path, "aider", "bwrap")
    assert len(recorded) == 1 and not recorded[0]["tools"]  # one answer with a SEARCH/REPLACE block
    calc = tmp_path / "suite-2" / "fixtures" / "fix-add" / "src" / "calc.py"
    calc.write_text(calc.read_text().replace("invoice module", "billing module"))
    out = tmp_path / "diverged"
    flags = _flags(tmp_path / "suite-2", "bwrap")
    args = ("eval", "run", "smoke-coding", *flags, "--mode", "replay", "--out", str(out))
    diverged = _in_netns(tmp_path, "diverged", *args)
    assert diverged["rc"] == 2, diverged["stderr"]
    field = "divergence: task fix-add rep 0, call 0: messages[7].content"  # the message with src/calc.py
    assert f"{field}: expected '…tic helpers for the invoice" in diverged["stderr"], diverged["stderr"]
    assert "got '…tic helpers for the billing module" in diverged["stderr"], diverged["stderr"]
    task = json.loads((out / "report.json").read_text())["tasks"][0]
    assert (task["passes"], task["errored"]) == (0, 1)  # an error run, never a pass
    assert task["errorReasons"] == [{"name": "replay_divergence", "count": 1}]
    assert diverged["calls"] == []  # a replay reaches no endpoint, diverged or not


MARKDOWN_PROMPT = (
    "---\ntitle: fix-add\n---\n- The function add in src/calc.py is wrong: add(2, 3) returns -1.\n- Fix it."
)


def _with_prompt(tmp_path: Path, kind: str, prompt: str) -> list[str]:
    """``_setup``, with fix-add's prompt replaced by ``prompt``."""
    common = _setup(tmp_path, kind)
    suite_json = tmp_path / "suite" / "suite.json"
    document = json.loads(suite_json.read_text())
    next(task for task in document["tasks"] if task["id"] == "fix-add")["prompt"] = prompt
    suite_json.write_text(json.dumps(document))
    return common


@NEEDS_NETNS
@pytest.mark.parametrize(
    ("kind", "binary", "prompt"),
    [
        ("codex", "codex", MARKDOWN_PROMPT),
        ("codex", "codex", "-"),  # what Codex reads as "the prompt is on stdin"
        ("opencode", "opencode", MARKDOWN_PROMPT),
        ("claude-code", "claude", MARKDOWN_PROMPT),
        ("gemini-cli", "gemini", MARKDOWN_PROMPT),
        ("gemini-cli", "gemini", "-p fix add"),  # what it would read as its prompt option
        ("aider", "aider", MARKDOWN_PROMPT),
        ("aider", "aider", "--fix=add"),  # one word: argparse would take it for an option
    ],
)
def test_a_prompt_that_starts_with_a_dash_reaches_the_model_as_text(
    tmp_path: Path, kind: str, binary: str, prompt: str
) -> None:
    """fix-add's prompt as Markdown with front matter and a list (it starts with ``---``, then lines with
    ``-``), or a word starting with ``-``: each real agent sends it to the model as it is (OpenCode no longer
    in quotes), never reading it as an option, and fixes the fixture."""
    if _binary(binary) is None:
        pytest.skip(f"{kind} is not installed (make agents)")
    common = _with_prompt(tmp_path, kind, prompt)
    out = tmp_path / "live"
    args = ("eval", "run", "smoke-coding", *common, "--k", "1", "--base-url", "{base_url}", "--out", str(out))
    live = _in_netns(tmp_path, "live", *args)
    assert live["rc"] == 0, live["stderr"]
    _check(json.loads((out / "report.json").read_text()), live["calls"], kind)
    # a whole JSON string, as it is (aider adds its edit rules to the same message, after it)
    text = json.dumps(prompt)[:-1] if kind == "aider" else json.dumps(prompt)
    sent = [text in call["body"] for call in live["calls"]]
    assert any(sent), live["calls"][0]["body"]
    assert all(seen for seen, call in zip(sent, live["calls"], strict=True) if call["tools"])  # each turn


@pytest.mark.parametrize(
    ("kind", "binary", "prompt"),
    [
        ("aider", "aider", "!touch started.txt"),
        ("aider", "aider", "/run touch started.txt"),
        ("gemini-cli", "gemini", "/help"),
    ],
)
def test_an_agent_is_never_given_a_prompt_it_would_run_as_its_own_command(
    tmp_path: Path, kind: str, binary: str, prompt: str
) -> None:
    """aider runs a message starting with ``!`` (a shell command) or ``/`` as its own command, Gemini CLI one
    starting with ``/``, and never sends it to the model: such a run is an error naming why, exit 1, and the
    agent is never started."""
    if _binary(binary) is None:
        pytest.skip(f"{kind} is not installed (make agents)")
    common = _with_prompt(tmp_path, kind, prompt)
    out = tmp_path / "refused"
    env = {
        **os.environ,
        "ALISIO_CONFIG_HOME": str(tmp_path / "config"),
        "ALISIO_DATA_HOME": str(tmp_path / "d"),
    }
    args = ("eval", "run", "smoke-coding", *common, "--k", "1", "--base-url", "http://127.0.0.1:9/v1")
    done = subprocess.run(
        [str(ALISIO), *args, "--out", str(out)], capture_output=True, text=True, env=env,
        stdin=subprocess.DEVNULL, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    why = f"{kind} would run a prompt that starts with {prompt[0]!r} as one of its own commands"
    assert why in done.stderr, done.stderr
    task = json.loads((out / "report.json").read_text())["tasks"][0]
    assert (task["passes"], task["errored"]) == (0, 1)
    assert task["errorReasons"] == [{"name": "agent_start", "count": 1}]
    events = [json.loads(line) for line in (out / "runs" / "fix-add" / "0.jsonl").read_text().splitlines()]
    assert "agent_exit" not in {event["type"] for event in events}  # the agent never ran
