"""eval diff, eval rejudge and the tamper check with a real agent CLI (Claude Code, the quickest here: about
15 s a run) against the scripted endpoint, with the network cut (``unshare -n``, loopback only).

Three live runs of smoke-coding's fix-add: the endpoint's tool call fixes add (pass), multiplies instead
(fail), or rewrites check.py to print success (fail, ``verifier_tampered``). ``eval diff`` names the agent's
``Bash`` call (``bash`` through the preset's tool map) and the command that differs; ``eval rejudge`` of the
tampering run applies its kept workspace (check.py included) to a fresh copy and finds the tampering again.
Skipped, saying why, where Claude Code is not installed or a network namespace cannot be made. Marked
``slow``: ``make test-slow`` runs it.
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
WRONG = "sed -i 's/return a - b/return a * b/' src/calc.py"
TAMPER = "printf 'print(\"ok\")\\n' > check.py"

pytestmark = [pytest.mark.xdist_group("real-agents"), pytest.mark.slow]


def _claude() -> str | None:
    extra = agents_bin()
    path = os.pathsep.join(filter(None, [os.environ.get("PATH", ""), str(extra) if extra else ""]))
    return shutil.which("claude", path=path)


def _netns() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    done = subprocess.run(
        ["unshare", "-n", "ip", "link", "set", "lo", "up"], capture_output=True, check=False
    )
    return done.returncode == 0


def _live(tmp: Path, name: str, suite: Path, command: str | None) -> Path:
    """One live run of fix-add with Claude Code, the endpoint's tool call running ``command``; its report."""
    out = tmp / name
    args = ["eval", "run", "smoke-coding", "--suite-dir", str(suite), "--yes", "--tasks", "fix-add", "--agent",
            "a", "--allow-write", "--allow-process", "--k", "1", "--base-url", "{base_url}", "--out", str(out)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env |= {"ALISIO_CONFIG_HOME": str(tmp / "config"), "ALISIO_DATA_HOME": str(tmp / "data")}
    if command is not None:
        env["ALISIO_TEST_ENDPOINT_COMMAND"] = command
    log = tmp / f"{name}.json"
    driver = 'ip link set lo up && exec "$0" "$@"'
    netns = [
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
    done = subprocess.run(
        [*netns, str(ALISIO), *args], capture_output=True, text=True, check=False, env=env, timeout=900
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(log.read_text())
    assert result["rc"] == 0, result["stderr"]
    return out


def _alisio(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env |= {"ALISIO_CONFIG_HOME": str(tmp / "config"), "ALISIO_DATA_HOME": str(tmp / "data")}
    return subprocess.run(
        [str(ALISIO), *args], capture_output=True, text=True, check=False, env=env, timeout=300
    )


@pytest.mark.skipif(not _netns(), reason="needs unshare -n (root, or user namespaces) to cut the network")
@pytest.mark.skipif(_claude() is None, reason="Claude Code is not installed (make agents)")
def test_claude_code_runs_diffed_tamper_checked_and_judged_again(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text(
        '[provider]\nmodel = "m"\n\n[agents.a]\nkind = "claude-code"\n'
    )
    suite = tmp_path / "suite"
    shutil.copytree(SUITE, suite, ignore=shutil.ignore_patterns("cassettes"))
    good = _live(tmp_path, "good", suite, None)
    bad = _live(tmp_path, "bad", suite, WRONG)
    tampered = _live(tmp_path, "tampered", suite, TAMPER)
    statuses = [json.loads((run / "runs.jsonl").read_text())["status"] for run in (good, bad, tampered)]
    assert statuses == ["pass", "fail", "fail"]

    diff = _alisio(tmp_path, "eval", "diff", str(good), str(bad))
    assert diff.returncode == 0, diff.stderr
    assert "first divergence at step 1: A bash, B bash" in diff.stdout
    assert "    command: \"sed -i 's/return a - b/return a + b/' src/calc.py\" -> " in diff.stdout
    assert "'s/return a - b/return a * b/'" in diff.stdout
    assert "description" not in diff.stdout.split("steps (")[0]  # Claude Code's note is not part of the key

    record = json.loads((tampered / "runs.jsonl").read_text())
    assert record["reason"] == "verifier_tampered"
    assert any(
        i["kind"] == "verifier_tampered" and "changed check.py" in i["message"] for i in record["incidents"]
    )
    assert record["workspace"]["kept"] is True

    again = _alisio(tmp_path, "eval", "rejudge", str(tampered), "--suite-dir", str(suite), "--yes", "--out",
                    str(tmp_path / "again"))  # fmt: skip
    assert again.returncode == 0, again.stderr
    judged = json.loads((tmp_path / "again" / "runs.jsonl").read_text())
    assert (judged["status"], judged["reason"]) == ("fail", "verifier_tampered")
    assert "0 verdicts changed" in again.stdout
