"""What the integration tests share: the CLI runner, the calc suite and its scripts, report readers.

- ``alisio(home, *args)``: the ``alisio`` command with an empty configuration under ``home`` (config and
  data in it), no API key and no terminal; it returns a ``subprocess.CompletedProcess`` (exit code,
  stdout, stderr). It runs in this process (``run_command_line`` with the environment, the working directory
  and the standard streams swapped for the call), which gives the same answer as the installed command
  without paying its start-up; ``process=True`` (or ``alisio_process``) runs the installed command for what
  needs a real process: signals, the process's own exit status, concurrency between commands, packaging.
- ``make_suite``, ``task``, ``write_script``, ``FIX``, ``NOOP``: a suite over a buggy ``add`` (check.py must
  pass, only src/calc.py may change) and scripted turns that fix it or do nothing.
- ``write_config(home, text)``: the config.toml that ``alisio(home, ...)`` reads.
- ``read_runs``, ``read_report``, ``run_dirs``: what a command wrote.

The local provider server is ``tests.integration.sse_server``; the fixtures are in ``conftest.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec

from alisio.core.lab.reports.report import Report
from alisio.core.lab.runs.records import RunRecord

ROOT = Path(__file__).resolve().parents[2]
ALISIO = Path(sys.executable).with_name("alisio")
RECORD = msgspec.json.Decoder(RunRecord)
REPORT = msgspec.json.Decoder(Report)

BUGGY = "def add(a, b):\n    return a - b\n"
CHECK = (
    "import sys\n"
    "sys.dont_write_bytecode = True\n"
    "sys.path.insert(0, 'src')\n"
    "from calc import add\n"
    "ok = add(2, 3) == 5 and add(-1, 1) == 0\n"
    "print('ok' if ok else 'add is wrong')\n"
    "sys.exit(0 if ok else 1)\n"
)
FIX = {
    "turns": [
        {
            "toolCalls": [{"name": "read_file", "arguments": {"path": "src/calc.py"}}],
            "usage": {"inputTokens": 100, "outputTokens": 10},
        },
        {
            "toolCalls": [
                {
                    "name": "edit_file",
                    "arguments": {"path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"},
                }
            ],
            "usage": {"inputTokens": 120, "outputTokens": 12},
        },
        {"text": "Fixed add.", "usage": {"inputTokens": 130, "outputTokens": 5}},
    ]
}
NOOP = {"turns": [{"text": "Nothing to do.", "usage": {"inputTokens": 50, "outputTokens": 4}}]}


def task(task_id: str, **overrides: Any) -> dict[str, Any]:
    """A task over the buggy-calc fixture: check.py must pass and only src/calc.py may change."""
    value: dict[str, Any] = {
        "id": task_id,
        "prompt": "add in src/calc.py is wrong. Fix it.",
        "fixture": "fixtures/calc",
        "budget": {"maxTurns": 10, "maxWallMs": 60000},
        "policy": {"mode": "auto", "allow": ["write"]},
        "verifiers": [
            {"kind": "command", "id": "check", "command": ["python3", "check.py"], "timeoutMs": 30000},
            {"kind": "tree-diff-within", "id": "scope", "allowed": ["src/calc.py"]},
        ],
    }
    value.update(overrides)
    return value


def make_suite(root: Path, *tasks: dict[str, Any], suite_id: str = "calc-suite") -> Path:
    """Write a suite directory with the buggy-calc fixture and ``tasks``; returns the suite directory."""
    suite = root / suite_id
    (suite / "fixtures" / "calc" / "src").mkdir(parents=True)
    (suite / "fixtures" / "calc" / "src" / "calc.py").write_text(BUGGY)
    (suite / "fixtures" / "calc" / "check.py").write_text(CHECK)
    document = {
        "schemaVersion": 1,
        "suiteId": suite_id,
        "suiteVersion": "1.0.0",
        "description": "Fix a wrong add.",
        "tasks": list(tasks) or [task("fix-add")],
    }
    (suite / "suite.json").write_text(json.dumps(document))
    return suite


def write_script(path: Path, script: dict[str, Any]) -> Path:
    path.write_text(json.dumps(script))
    return path


def write_config(home: Path, text: str) -> Path:
    """``home``'s config.toml (the configuration ``alisio(home, ...)`` reads) holding ``text``; its path."""
    config = home / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)
    return config


def run_dirs(home: Path) -> list[Path]:
    """The report directories under ``home``'s data directory, oldest first."""
    root = home / "data" / "eval"
    return sorted(root.iterdir()) if root.exists() else []


def read_runs(directory: Path) -> list[RunRecord]:
    return [RECORD.decode(line) for line in (directory / "runs.jsonl").read_bytes().splitlines()]


def read_report(directory: Path) -> Report:
    return REPORT.decode((directory / "report.json").read_bytes())


def wait_until_sleeping(pid_file: Path, process: subprocess.Popen[str], timeout_s: float = 60) -> int:
    """Wait until the pid a run's command wrote to ``pid_file`` (``echo $$ > FILE; exec sleep N``) runs
    ``sleep``, while ``process`` (the alisio command) is still running; that pid. A test that signals a run
    "inside its sleep" waits for this, not for a fixed time, which a loaded machine can outlast."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(OSError, ValueError):
            pid = int(pid_file.read_text())
            if Path(f"/proc/{pid}/comm").read_text().strip() == "sleep":
                return pid
        assert time.monotonic() < deadline and process.poll() is None, f"no sleeping command in {pid_file}"
        time.sleep(0.02)


# --- the CLI -------------------------------------------------------------------------------------------------


def command_env(
    home: Path | None, env: Mapping[str, str] | None = None, without: tuple[str, ...] = ()
) -> dict[str, str]:
    """This environment without an API key (nor the variables named in ``without``); with ``home``, an empty
    configuration (``home/config``) and a data directory (``home/data``); ``env`` is applied last."""
    environ = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY" and k not in without}
    if home is not None:
        environ["ALISIO_CONFIG_HOME"] = str(home / "config")
        environ["ALISIO_DATA_HOME"] = str(home / "data")
    environ.update(env or {})
    return environ


def alisio_process(
    home: Path | None,
    *args: str | Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
    input: str | None = None,
    without: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """The installed ``alisio`` command in a new process (see the module docstring)."""
    return subprocess.run(
        [str(ALISIO), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=command_env(home, env, without),
        cwd=cwd,
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
    )


@contextlib.contextmanager
def _swapped(environ: Mapping[str, str], cwd: Path | None, stdin: str) -> Iterator[dict[str, str]]:
    """For the block: ``environ`` as the environment, ``cwd`` as the working directory, and standard streams
    that are not terminals (stdin holds ``stdin``); fills the dict with what stdout and stderr received."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    out, err = io.BytesIO(), io.BytesIO()
    written: dict[str, str] = {}
    os.environ.clear()
    os.environ.update(environ)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    if cwd is not None:
        os.chdir(cwd)
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    try:
        yield written
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        written["stdout"] = out.getvalue().decode("utf-8", "replace")
        written["stderr"] = err.getvalue().decode("utf-8", "replace")
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        tempfile.tempdir = None


def alisio(
    home: Path | None,
    *args: str | Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
    input: str | None = None,
    process: bool = False,
    without: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """``alisio *args`` as the installed command answers it, run in this process (``process=True``: in a new
    one); ``timeout`` only bounds a new process; ``without`` names variables taken out of the environment."""
    if process:
        return alisio_process(home, *args, env=env, cwd=cwd, timeout=timeout, input=input, without=without)
    from alisio.shell.cli.main import app, run_command_line

    argv = [str(arg) for arg in args]
    with _swapped(command_env(home, env, without), cwd, input or "") as written:
        try:
            code = run_command_line(app, argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    return subprocess.CompletedProcess(["alisio", *argv], code, written["stdout"], written["stderr"])


def eval_run(
    home: Path, suite_dir: Path, *args: str | Path, script: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``alisio eval run calc-suite --suite-dir ... --yes`` plus ``args``."""
    extra = ["--script", str(script)] if script is not None else []
    return alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite_dir), "--yes", *extra, *args)


# --- shared by more than one test module ---------------------------------------------------------------


def write(directory: Path, records: list[RunRecord], **cond: object) -> Path:
    """A report directory written by the shell from ``records`` (conditions from the property strategies)."""
    from alisio.core.lab.reports.report_build import build_report
    from alisio.shell.lab.outputs import write_report_files
    from tests.property.strategies_report import conditions

    report = build_report(records, conditions(**cond))  # type: ignore[arg-type]
    write_report_files(directory, report, records)
    return directory


def variants(home: Path, suite_dir: Path, compare: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``alisio eval variants calc-suite --suite-dir ... --yes --variants compare`` plus ``args``."""
    return alisio(
        home,
        "eval",
        "variants",
        "calc-suite",
        "--suite-dir",
        suite_dir,
        "--yes",
        "--variants",
        compare,
        *args,
    )


def refused(home: Path, result: subprocess.CompletedProcess[str]) -> str:
    """Exit 1, one message, no traceback, nothing run and no directory written."""
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert not (home / "data").exists() and not (home / "out").exists()
    assert result.stdout == ""
    return result.stderr


SPEC_EXAMPLE = """{
  "schemaVersion": 1,
  "suiteId": "my-suite",
  "suiteVersion": "1.0.0",
  "description": "Small coding tasks.",
  "tasks": [
    {
      "id": "fix-add",
      "prompt": "The function add in src/math.py is wrong. Fix it. Change only src/math.py.",
      "fixture": "fixtures/fix-add",
      "budget": { "maxTurns": 30, "maxTokens": 200000, "maxWallMs": 120000, "maxToolCalls": 40 },
      "policy": { "mode": "auto", "allow": ["process"] },
      "verifiers": [
        {
          "kind": "command",
          "id": "check",
          "command": ["python3", "check.py"],
          "timeoutMs": 30000
        },
        { "kind": "tree-diff-within", "id": "scope", "allowed": ["src/math.py"] }
      ],
      "tags": ["coding"]
    }
  ]
}
"""
"""The spec's example suite.json, word for word but for the Python file names and check command."""


SPEC_MATH = "def add(a, b):\n    return a - b\n"


SPEC_CHECK = '''"""Checks add in src/math.py (loaded by path: "import math" would find the standard library's)."""
import importlib.util
import sys

sys.dont_write_bytecode = True
spec = importlib.util.spec_from_file_location("task_math", "src/math.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
cases = [((2, 3), 5), ((-4, 1), -3), ((10, -10), 0)]
failing = [f"add{args} = {module.add(*args)}, expected {want}" for args, want in cases if module.add(*args) != want]
print(" | ".join(failing) or "ok")
sys.exit(1 if failing else 0)
'''


RUN_ID = "2026-10-13T12-00-00-000Z"
"""The run id of the report directories ``Lab.write_run`` writes by default."""


class Lab:
    """A home directory with a data directory in it, and the environment that points alisio at them."""

    def __init__(self, tmp_path: Path) -> None:
        self.home = tmp_path / "home"
        self.data = self.home / ".local" / "state" / "alisio"
        self.config = tmp_path / "config"
        self.config.mkdir()
        self.out = tmp_path / "share" / "run.json"
        self.out.parent.mkdir()
        self.env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(self.home),
            "ALISIO_DATA_HOME": str(self.data),
            "ALISIO_CONFIG_HOME": str(self.config),
        }

    def run_dir(self, run_id: str = RUN_ID) -> Path:
        return self.data / "eval" / run_id

    def write_run(
        self, records: list[RunRecord], run_id: str = RUN_ID, provider: str = "openai_compat"
    ) -> Path:
        """Write report.json, runs.jsonl and report.md of a run, built with the core's own functions."""
        from alisio.core.lab.reports.report_build import build_report
        from alisio.shell.lab.outputs import write_report_files
        from tests.property.strategies_report import conditions

        cond = msgspec.structs.replace(conditions(), provider=provider, run_id=run_id)
        write_report_files(self.run_dir(run_id), build_report(records, cond), records)
        return self.run_dir(run_id)

    def export(
        self, *args: str | Path, cwd: Path = ROOT, **extra_env: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(ALISIO), "eval", "export", *map(str, args)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=cwd,
            env={**self.env, **extra_env},
        )
