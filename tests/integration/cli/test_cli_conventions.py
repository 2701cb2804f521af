"""The command line reads like a well-kept CLI, and re-running is safe (through the installed ``alisio``).

--version and -h everywhere, help without type placeholders and in workflow order, -k, the results table on
stdout, one message for a permission several tasks miss, --out that already holds a report refused unless
--force (files untouched), a locked report directory, and a refused key or an unreachable endpoint ending the
whole command at once with the report of what finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from alisio.core.lab.runs.records import RunStatus
from alisio.shell.cli.eval_app import COMMANDS as EVAL_COMMANDS
from tests.integration.helpers import (
    ALISIO,
    FIX,
    alisio,
    eval_run,
    make_suite,
    read_report,
    read_runs,
    run_dirs,
    task,
    write_script,
)
from tests.integration.sse_server import Reply, SseServer

PLACEHOLDERS = re.compile(r"<bool>|<str>|<int|<float|<path>|<list\[|\{[a-z_]+\}|\[x>=|\[x<=")
COMMANDS = [
    [],
    ["run"],
    ["eval"],
    ["eval", "init"],
    ["eval", "list"],
    ["eval", "validate"],
    ["eval", "selfcheck"],
    ["eval", "import"],
    ["eval", "run"],
    ["eval", "runs"],
    ["eval", "show"],
    ["eval", "record"],
    ["eval", "plan"],
    ["eval", "merge"],
    ["eval", "compare"],
    ["eval", "variants"],
    ["eval", "stability"],
    ["eval", "power"],
    ["eval", "export"],
    ["eval", "ci"],
]


def _digest(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def test_version_prints_the_installed_version(home: Path) -> None:
    """``alisio --version``: one line, the package version, exit 0."""
    from importlib.metadata import version

    result = alisio(home, "--version")
    assert (result.returncode, result.stdout) == (0, f"alisio {version('alisio')}\n")


@pytest.mark.parametrize("words", COMMANDS, ids=lambda words: " ".join(words) or "alisio")
def test_help_has_no_type_placeholders(home: Path, words: list[str]) -> None:
    """-h and --help print the same help, with metavars (N, DIR) instead of <bool>, <int range> or {suite}."""
    short = alisio(home, *words, "-h")
    long = alisio(home, *words, "--help")
    assert short.returncode == long.returncode == 0, short.stderr
    assert short.stdout == long.stdout
    assert not PLACEHOLDERS.search(short.stdout), PLACEHOLDERS.findall(short.stdout)


def test_eval_help_lists_the_commands_in_workflow_order_and_groups_options(home: Path) -> None:
    """init, list, validate, selfcheck, import, mock-endpoint, run, runs, show, diff, record, rejudge, plan, merge,
    compare, variants, stability, power, export, ci; run's options in panels."""
    listed = re.findall(r"^│ (\w[\w-]*) ", alisio(home, "eval", "-h").stdout, re.M)
    assert listed == [
        "init",
        "list",
        "validate",
        "selfcheck",
        "import",
        "mock-endpoint",
        "run",
        "runs",
        "show",
        "diff",
        "record",
        "rejudge",
        "plan",
        "merge",
        "compare",
        "variants",
        "stability",
        "power",
        "export",
        "ci",
    ]
    run_help = alisio(home, "eval", "run", "-h").stdout
    assert "Usage: alisio eval run [OPTIONS] [SUITE]" in run_help
    panels = re.findall(r"╭─ (\w+) ─", run_help)
    assert panels == [
        "Arguments",
        "Options",
        "Selection",
        "Provider",
        "Permissions",
        "Output",
        "Execution",
        "Sequential",
        "Plan",
    ]
    assert re.search(r"--k\s+-k\s+N\s", run_help)


def test_help_does_not_load_markdown_yet_typer_still_can() -> None:
    """--help skips rich.markdown and rich.traceback (100 ms); both still load, real, when anything uses them."""
    script = (
        "import sys\n"
        "from alisio.shell.cli.main import run_cli\n"
        "assert run_cli(['--help']) == 0\n"
        "assert 'rich.markdown' not in sys.modules and 'rich.traceback' not in sys.modules\n"
        "import typer.rich_utils as help_module\n"
        "import rich.markdown, rich.traceback\n"
        "assert type(help_module.Markdown('**x**')) is rich.markdown.Markdown\n"
        "assert help_module.Traceback.from_exception.__self__ is rich.traceback.Traceback\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout.splitlines()[-1:]) == (0, ["ok"]), result.stderr


EVAL_MODULES = {module.rsplit(".", 1)[1] for module, _ in EVAL_COMMANDS.values()}


@pytest.mark.parametrize(
    ("argv", "loaded"),
    [
        (["--help"], {"run_cmd"}),  # the help lists run's own help line
        (["eval", "--help"], EVAL_MODULES),
        (["eval", "run", "--help"], {"eval_run"}),
        (["run", "--help"], {"run_cmd"}),
    ],
    ids=["alisio", "eval", "eval run", "run"],
)
def test_a_command_module_is_imported_only_when_its_command_is_used(
    argv: list[str], loaded: set[str]
) -> None:
    """``alisio --help`` imports no eval command's module, ``alisio eval run`` only eval_run (start-up time)."""
    script = (
        "import json, sys\n"
        "from alisio.shell.cli.main import run_cli\n"
        f"code = run_cli({argv!r})\n"
        "print(json.dumps([code, sorted(m for m in sys.modules if m.startswith('alisio.shell.cli.'))]))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    code, modules = json.loads(result.stdout.splitlines()[-1])
    imported = {module.rsplit(".", 1)[1] for module in modules}
    assert (code, imported & (EVAL_MODULES | {"run_cmd"})) == (0, loaded), result.stderr


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [(["rnu"], "'run'"), (["eval", "rnu"], "'run'"), (["eval", "rusn"], "'run', 'runs'")],
)
def test_a_mistyped_command_is_named_with_the_close_ones(
    home: Path, argv: list[str], suggestion: str
) -> None:
    """Commands are built on first use; the suggestion still considers every command."""
    result = alisio(home, *argv)
    assert result.returncode == 1
    assert f"No such command {argv[-1]!r}. Did you mean {suggestion}?" in result.stderr


def test_short_k_and_the_table_on_stdout(home: Path) -> None:
    """-k 2 runs two repetitions; the results table goes to stdout, progress and paths to stderr."""
    suite = make_suite(home)
    result = eval_run(home, suite, "-k", "2", "--allow-write", script=write_script(home / "f.json", FIX))
    assert result.returncode == 0, result.stderr
    assert read_report(run_dirs(home)[0]).conditions.k == 2
    assert result.stdout.splitlines()[0].split() == [
        "task",
        "pass/judged",
        "success",
        "rate",
        "pass@2",
        "pass^2",
        "error",
        "tokens",
        "wall",
        "median",
    ]
    assert "fix-add  2/2" in result.stdout
    assert "[2/2] fix-add rep " in result.stderr and "pass/judged" not in result.stderr


def test_a_missing_permission_of_several_tasks_is_one_line(home: Path) -> None:
    """Three tasks that need --allow-process: one line listing them, exit 1, nothing run."""
    policy = {"mode": "auto", "allow": ["write", "process"]}
    suite = make_suite(home, task("a", policy=policy), task("b", policy=policy), task("c"))
    result = eval_run(home, suite, "--allow-write", script=write_script(home / "f.json", FIX))
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if "process" in line]
    assert len(lines) == 1 and lines[0].startswith("alisio eval run: tasks a, b: "), result.stderr
    assert "--allow-process" in lines[0]
    assert run_dirs(home) == []


@pytest.mark.parametrize("command", ["run", "variants"])
def test_out_holding_a_report_is_refused_unless_force(home: Path, command: str) -> None:
    """A second command into the same --out: exit 1, every file untouched; with --force it replaces it."""
    suite = make_suite(home)
    script = write_script(home / "f.json", FIX)
    out = home / "out"
    args = ["--allow-write", "--script", str(script), "--k", "1", "--out", str(out)]
    if command == "variants":
        compare = home / "compare.json"
        compare.write_text(
            json.dumps(
                {
                    "suite": "calc-suite",
                    "variants": [
                        {"id": "a", "overrides": {}},
                        {"id": "b", "overrides": {"compaction.threshold": 0.6}},
                    ],
                }
            )
        )
        args += ["--variants", str(compare)]
    base = ["eval", command, "calc-suite", "--suite-dir", str(suite), "--yes"]
    first = alisio(home, *base, *args)
    assert first.returncode == 0, first.stderr
    before = _digest(out)
    second = alisio(home, *base, *args)
    assert second.returncode == 1
    assert f"--out {out} already holds a report" in second.stderr and "--force" in second.stderr
    assert _digest(out) == before
    forced = alisio(home, *base, *args, "--force")
    assert forced.returncode == 0, forced.stderr
    runs = out / ("a" if command == "variants" else ".") / "runs.jsonl"
    assert len(runs.read_bytes().splitlines()) == 1  # replaced, not appended to


def test_eval_ci_out_holding_reports_is_refused_unless_force(home: Path) -> None:
    """eval ci --out twice: the second is refused, untouched; --force replaces the suites' reports."""
    out = home / "ci"
    first = alisio(home, "eval", "ci", "--out", str(out), timeout=300)
    assert first.returncode == 0, first.stderr
    before = _digest(out)
    second = alisio(home, "eval", "ci", "--out", str(out))
    assert second.returncode == 1 and "already holds a report" in second.stderr
    assert _digest(out) == before
    assert alisio(home, "eval", "ci", "--out", str(out), "--force", timeout=300).returncode == 0


def test_two_commands_cannot_write_one_report_directory(home: Path) -> None:
    """While one command writes --out DIR, a second one into DIR is refused at once (exit 1), the first goes on."""
    policy = {"mode": "auto", "allow": ["write", "process"]}
    suite = make_suite(home, task("slow", policy=policy))
    slow = {
        "turns": [{"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 3"}}]}, {"text": "done"}]
    }
    script = write_script(home / "slow.json", slow)
    out = home / "out"
    args = [
        "eval",
        "run",
        "calc-suite",
        "--suite-dir",
        str(suite),
        "--yes",
        "-k",
        "1",
        "--allow-write",
        "--allow-process",
    ]
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(ALISIO_CONFIG_HOME=str(home / "config"), ALISIO_DATA_HOME=str(home / "data"))
    first = subprocess.Popen(
        [str(ALISIO), *args, "--script", str(script), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while not (out / "runs.jsonl").exists():
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.05)
    second = alisio(home, *args, "--script", str(script), "--out", str(out), "--force")
    assert second.returncode == 1
    assert "is being written by another alisio command" in second.stderr
    _, stderr = first.communicate(timeout=60)
    assert first.returncode == 0, stderr
    assert len(read_runs(out)) == 1


def test_a_refused_key_ends_the_whole_command(home: Path) -> None:
    """HTTP 401: after the first run the command stops: exit 1, one line naming the key's variable, the
    report of what finished written and marked interrupted."""
    suite = make_suite(home)
    with SseServer() as server:
        server.enqueue(*[Reply.json({"error": {"message": "Incorrect API key"}}, status=401)] * 5)
        env_key = {"MY_KEY_FOR_TEST": "sk-test-not-a-real-key-0123456789"}
        (home / "config" / "config.toml").write_text(
            f'[provider]\nbaseUrl = "{server.base_url}"\nmodel = "m"\napiKeyEnv = "MY_KEY_FOR_TEST"\n'
        )
        result = subprocess.run(
            [str(ALISIO), "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "5", "-j", "1", "--allow-write"],
            capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL,
            env={**os.environ, **env_key, "ALISIO_CONFIG_HOME": str(home / "config"), "ALISIO_DATA_HOME": str(home / "data")},
        )  # fmt: skip
        assert len(server.requests) == 1
    assert result.returncode == 1, result.stderr
    assert "refused the API key from MY_KEY_FOR_TEST" in result.stderr
    assert "sk-test-not-a-real-key" not in result.stderr
    directory = run_dirs(home)[0]
    (record,) = read_runs(directory)
    assert (record.status, record.reason) == (RunStatus.ERROR, "provider_auth")
    report = read_report(directory)
    assert (report.interrupted, report.planned_runs, report.summary.runs) == (True, 5, 1)
    assert report.stopped is not None and "MY_KEY_FOR_TEST" in report.stopped
    assert report.conditions.endpoint == server.base_url.rstrip("/")
    assert "Interrupted after 1 of 5 planned runs (the provider at " in (directory / "report.md").read_text()


def test_an_unreachable_endpoint_ends_the_whole_command(home: Path) -> None:
    """Nothing listens: after the retries of the first run the command stops (exit 1), not five times over."""
    suite = make_suite(home)
    result = eval_run(
        home, suite, "-k", "5", "--allow-write", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"
    )
    assert result.returncode == 1
    assert (
        "stopped (the provider at http://127.0.0.1:9/v1 cannot be reached after the retries" in result.stderr
    )
    report = read_report(run_dirs(home)[0])
    assert (report.interrupted, report.summary.runs, report.conditions.endpoint) == (
        True,
        1,
        "http://127.0.0.1:9/v1",
    )


def test_a_password_in_the_base_url_is_written_nowhere(home: Path) -> None:
    """http://user:pass@host/v1 that cannot be reached: the password is in no output, report, record,
    transcript or export, and the report's endpoint has no user or password."""
    suite = make_suite(home)
    secret = "s3cret-Pa55word"
    url = f"http://someone:{secret}@127.0.0.1:9/v1"
    result = eval_run(home, suite, "-k", "1", "--allow-write", "--base-url", url, "--model", "m")
    assert result.returncode == 1
    assert secret not in result.stdout + result.stderr and "someone" not in result.stderr
    (directory,) = run_dirs(home)
    for path in directory.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path
    assert read_report(directory).conditions.endpoint == "http://127.0.0.1:9/v1"
    bundle = home / "bundle.json"
    exported = alisio(home, "eval", "export", str(directory), "--out", str(bundle))
    assert exported.returncode == 0, exported.stderr
    assert secret not in bundle.read_text()
