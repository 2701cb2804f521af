"""``/dev`` inside ``--sandbox bwrap`` through the real CLI: ``/dev/shm`` is a tmpfs bounded by
``sandboxTmpBytes`` like ``/tmp`` (bwrap's own is a directory of an unbounded tmpfs, half the RAM), the rest
of ``/dev`` is read-only, and shared memory still works below the bound."""

from __future__ import annotations

import json
from pathlib import Path

from alisio.core.lab.runs.records import RunStatus
from tests.integration.sandbox.test_sandbox import RECORD, _tool_outputs, alisio, needs_bwrap

TMP_BYTES = 2 << 20


@needs_bwrap
def test_dev_shm_is_bounded_by_sandbox_tmp_bytes_and_dev_is_read_only(tmp_path: Path) -> None:
    """Writing 3 MiB to /dev/shm stops at 2 MiB (``sandboxTmpBytes``) with "No space left on device", as in
    /tmp; a new file in /dev is refused (read-only); a semaphore (in /dev/shm) works once there is room."""
    commands = [
        "head -c 3145728 /dev/zero > /dev/shm/fill; echo rc=$?; wc -c < /dev/shm/fill; rm /dev/shm/fill",
        "head -c 3145728 /dev/zero > /tmp/fill; echo rc=$?; wc -c < /tmp/fill; rm /tmp/fill",
        "echo x > /dev/new; echo rc=$?; echo y > /dev/null && echo null-ok",
        "python3 -c 'import multiprocessing as m; m.Lock(); print(\"lock ok\")'",
    ]
    calls = [{"name": "bash", "arguments": {"command": c, "timeout_ms": 20000}} for c in commands]
    script = {"turns": [{"toolCalls": [call]} for call in calls] + [{"text": "done"}]}
    (tmp_path / "script.json").write_text(json.dumps(script))
    suite = tmp_path / "shm"
    (suite / "fixtures" / "empty").mkdir(parents=True)
    (suite / "fixtures" / "empty" / "README").write_text("empty\n")
    task = {
        "id": "shm",
        "prompt": "Fill /dev/shm.",
        "fixture": "fixtures/empty",
        "budget": {"maxTurns": 10, "maxWallMs": 60000},
        "policy": {"mode": "auto", "allow": ["process"]},
        "verifiers": [{"kind": "command", "id": "true", "command": ["true"], "timeoutMs": 20000}],
    }
    document = {"schemaVersion": 1, "suiteId": "shm", "suiteVersion": "1.0.0", "description": "shm"}
    (suite / "suite.json").write_text(json.dumps({**document, "tasks": [task]}))
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text(f"[lab]\nsandboxTmpBytes = {TMP_BYTES}\n")
    (tmp_path / "real-home").mkdir()
    done = alisio(
        tmp_path, "eval", "run", "shm", "--suite-dir", str(suite), "--yes", "--k", "1", "--out",
        str(tmp_path / "out"), "--script", str(tmp_path / "script.json"), "--allow-write", "--allow-process", "--sandbox",
        "bwrap",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (line,) = (tmp_path / "out" / "runs.jsonl").read_bytes().splitlines()
    assert RECORD.decode(line).status is RunStatus.PASS
    shm, tmp, dev, lock = _tool_outputs(tmp_path / "out" / "runs" / "shm" / "0.jsonl")
    for written in (shm, tmp):
        assert "No space left on device" in written and "rc=1" in written, written
        assert str(TMP_BYTES) in written.split(), written  # stopped exactly at the bound
    assert "Read-only file system" in dev and "rc=1" in dev and "null-ok" in dev, dev
    assert "lock ok" in lock, lock
