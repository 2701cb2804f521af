"""The adversarial review's defects (issue 15), each through the installed command.

Real subprocesses where a signal or an exit code matters, real local servers for hostile providers.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration import helpers
from tests.integration.helpers import ALISIO, FIX, make_suite, task, write_script


def alisio(home: Path | None, *args: str | Path, **options: Any) -> subprocess.CompletedProcess[str]:
    """The installed command in a new process: these cases are about what the process does."""
    return helpers.alisio(home, *args, process=True, **options)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "config").mkdir()
    return tmp_path


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(ALISIO_CONFIG_HOME=str(home / "config"), ALISIO_DATA_HOME=str(home / "data"))
    return env


class Ran:
    """What an in-process run of the CLI did (for cases where no signal or process boundary matters)."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def cli(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., Ran]:
    """``cli(*args)``: the CLI run in this process (same code path as the installed command, no start-up)."""
    from alisio.shell.cli.main import run_cli

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("ALISIO_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("ALISIO_DATA_HOME", str(home / "data"))
    monkeypatch.chdir(home)

    def run(*args: str) -> Ran:
        capsys.readouterr()
        code = run_cli(list(args))
        captured = capsys.readouterr()
        return Ran(code, captured.out, captured.err)

    return run


def _wait_for(path: Path, process: subprocess.Popen[str], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline and process.poll() is None, "the command ended early"
        time.sleep(0.05)


SLEEPER = {
    "turns": [{"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]}, {"text": "done"}]
}
PROCESS = {"mode": "auto", "allow": ["write", "process"]}


def _run_args(suite: Path, script: Path, out: Path, *more: str) -> list[str]:
    return ["eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1", "--allow-write",
            "--allow-process", "--script", str(script), "--out", str(out), *more]  # fmt: skip


# --- 1, 2: --force ----------------------------------------------------------------------------------------


def test_force_into_a_directory_being_written_removes_nothing(home: Path) -> None:
    """Item 1: while a command writes --out DIR, `--out DIR --force` is refused before it removes anything:
    the first command's plan.json survives the refusal, and even a SIGKILL of the first command after it."""
    suite = make_suite(home, task("slow", policy=PROCESS))
    script = write_script(home / "slow.json", SLEEPER)
    out = home / "out"
    first = subprocess.Popen(
        [str(ALISIO), *_run_args(suite, script, out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(home), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_for(out / "plan.json", first)
        plan = (out / "plan.json").read_bytes()
        second = alisio(home, *_run_args(suite, script, out, "--force"))
        assert second.returncode == 1
        assert "is being written by another alisio command" in second.stderr
        assert (out / "plan.json").read_bytes() == plan
        assert (out / "runs.jsonl").exists()
    finally:
        first.kill()
        first.communicate(timeout=30)
    assert (out / "plan.json").read_bytes() == plan  # the killed run can still be resumed


def test_force_refuses_a_directory_holding_files_no_report_wrote(home: Path, cli: Callable[..., Ran]) -> None:
    """Item 2: `--out . --force` in a project whose runs/2024/important.csv is its own: refused in one line
    naming that file, exit 1, every file kept; a directory holding only a report is replaced."""
    suite = make_suite(home)
    script = write_script(home / "f.json", FIX)
    project = home / "project"
    args = ["eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1", "--allow-write",
            "--script", str(script), "--out", str(project)]  # fmt: skip
    assert cli(*args).returncode == 0
    (project / "runs" / "2024").mkdir()
    (project / "runs" / "2024" / "important.csv").write_text("keep me\n")
    (project / "notes.txt").write_text("mine\n")
    before = sorted(str(p.relative_to(project)) for p in project.rglob("*"))
    forced = cli(*args, "--force")
    assert forced.returncode == 1
    lines = [line for line in forced.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "holds files no alisio report wrote" in lines[0], forced.stderr
    assert "notes.txt" in lines[0] and "runs/2024" in lines[0]
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*")) == before
    assert (project / "runs" / "2024" / "important.csv").read_text() == "keep me\n"
    (project / "notes.txt").unlink()
    (project / "runs" / "2024" / "important.csv").unlink()
    (project / "runs" / "2024").rmdir()
    replaced = cli(*args, "--force")
    assert replaced.returncode == 0, replaced.stderr
    assert len((project / "runs.jsonl").read_bytes().splitlines()) == 1


# --- 4, 18, 9: one redaction, control sequences escaped -----------------------------------------------------

DEPLOY = "deploy-value-0123456789abcdef"
GHP = "ghp_" + "A1b2C3d4E5" * 4
SK_PROJ = "sk-proj-" + "abcdefghij" * 3
HOSTILE = f"token {DEPLOY} gh {GHP} key {SK_PROJ} url https://bob:hunter2pass@example.com/x \x1b]0;owned\x07\x1b[2J end"


def _hostile_suite(home: Path) -> Path:
    """A suite whose check prints credentials and terminal control sequences as the verifier's detail."""
    suite = make_suite(home, task("leaky", verifiers=[
        {"kind": "command", "id": "check", "command": ["python3", "leak.py"], "timeoutMs": 30000}]))  # fmt: skip
    (suite / "fixtures" / "calc" / "leak.py").write_text(f"import sys\nprint({HOSTILE!r})\nsys.exit(1)\n")
    return suite


def _clean(text: str) -> None:
    for secret in (DEPLOY, GHP, SK_PROJ, "hunter2pass"):
        assert secret not in text
    assert "\x1b" not in text and "\x07" not in text


def test_every_output_redacts_the_same_text_and_escapes_control_sequences(home: Path) -> None:
    """Items 4 and 9: a verifier's detail holding DEPLOY_TOKEN's value, ghp_ and sk-proj- shapes, a URL
    password, ESC]0;title BEL and ESC[2J: the progress line, eval show, report.md, report.html and JUnit
    hold none of them; eval export refuses the run, naming the field, never the value."""
    suite = _hostile_suite(home)
    script = write_script(home / "n.json", {"turns": [{"text": "done"}]})
    out = home / "out"
    env = _env(home) | {"DEPLOY_TOKEN": DEPLOY}
    args = ["eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1", "--allow-write", "--script", str(script),
            "--out", str(out), "--junit", str(home / "junit.xml")]  # fmt: skip
    run = subprocess.run(
        [str(ALISIO), *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert run.returncode == 0, run.stderr
    assert "<redacted: credential DEPLOY_TOKEN>" in run.stderr
    _clean(run.stderr)
    for path in (out / "report.md", out / "report.html", home / "junit.xml"):
        _clean(path.read_text())
    show = subprocess.run([str(ALISIO), "eval", "show", str(out)], capture_output=True, text=True, env=env,
                          timeout=60, check=False)  # fmt: skip
    assert show.returncode == 0, show.stderr
    assert "<redacted: github-token>" in show.stdout and "<redacted: openai-key>" in show.stdout
    assert "<redacted: credential DEPLOY_TOKEN>" in show.stdout and "\\x1b]0;owned\\x07" in show.stdout
    _clean(show.stdout)
    export = subprocess.run([str(ALISIO), "eval", "export", str(out), "--out", str(home / "b.json")],
                            capture_output=True, text=True, env=env, timeout=60, check=False)  # fmt: skip
    assert export.returncode == 1 and not (home / "b.json").exists()
    _clean(export.stderr)


def test_a_provider_echoing_the_basic_authorization_header_is_redacted(home: Path) -> None:
    """Item 18: with baseUrl http://user:password@host/v1 the provider echoes `Authorization: Basic <base64 of
    user:password>` as its answer: the transcript, report.html, report.md and eval show hold only
    `<redacted: basic-credential>`."""
    import base64

    from tests.integration.sse_server import Reply, SseServer

    basic = base64.b64encode(b"alice:s3cret-pass").decode()
    echo = f"you sent Authorization: Basic {basic}"
    with SseServer() as server:
        server.enqueue(Reply.sse(
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": echo}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}},
        ))  # fmt: skip
        url = server.base_url.replace("http://", "http://alice:s3cret-pass@")
        (home / "config" / "config.toml").write_text(f'[provider]\nbaseUrl = "{url}"\nmodel = "m"\n')
        suite = make_suite(home)
        out = home / "out"
        run = alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1",
                     "--allow-write", "--out", str(out))  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert server.requests[0].headers["authorization"] == f"Basic {basic}"  # what the echo shows
    show = alisio(home, "eval", "show", str(out))
    assert show.returncode == 0, show.stderr
    assert "<redacted: basic-credential>" in show.stdout
    for text in (show.stdout, (out / "runs" / "fix-add" / "0.jsonl").read_text(), (out / "report.html").read_text(),
                 (out / "report.md").read_text(), run.stderr):  # fmt: skip
        assert basic not in text and "s3cret-pass" not in text


# --- 10: Markdown injection ------------------------------------------------------------------------------

INJECTION = "bad key\n\n# Owned heading\n<img src=http://evil.example/t.png> <script>alert(1)</script> [x](http://evil.example) \x1b]0;title\x07\x1b[2J"


def test_a_providers_401_message_cannot_inject_markdown_or_html(home: Path) -> None:
    """Item 10: a 401 whose message holds a heading, <img> and <script>: the Interrupted notice of report.md
    and of $GITHUB_STEP_SUMMARY shows it as inert text on one line, and the terminal line has no raw newline
    of it."""
    from tests.integration.sse_server import Reply, SseServer

    suite = make_suite(home)
    summary = home / "summary.md"
    with SseServer() as server:
        server.enqueue(Reply.json({"error": {"message": INJECTION}}, status=401))
        (home / "config" / "config.toml").write_text(
            f'[provider]\nbaseUrl = "{server.base_url}"\nmodel = "m"\n'
        )
        env = _env(home) | {"GITHUB_STEP_SUMMARY": str(summary)}
        run = subprocess.run(
            [str(ALISIO), "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "3", "-j", "1",
             "--allow-write", "--out", str(home / "out")],
            capture_output=True, text=True, env=env, timeout=120, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert run.returncode == 1, run.stderr
    assert "Owned heading" in run.stderr and "\x1b" not in run.stderr and "\x07" not in run.stderr  # item 9
    for text in ((home / "out" / "report.md").read_text(), summary.read_text()):
        assert "\x1b" not in text
        assert "Interrupted" in text
        assert not any(line.startswith("# Owned") for line in text.splitlines())
        assert "<img" not in text and "<script" not in text and "](http://evil" not in text
        assert "&lt;img src=http://evil.example/t.png>" in text
        assert "&lt;script>" in text and "\\n\\n# Owned heading" in text


def test_a_task_id_with_newlines_cannot_break_a_comparison_table(home: Path) -> None:
    """Item 10: report.json given to compare whose task id holds newlines and a pipe: the step summary's
    table keeps one row per task, the id shown with visible \\n."""
    suite = make_suite(home)
    script = write_script(home / "f.json", FIX)
    out = home / "out"
    assert alisio(home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1",
                  "--allow-write", "--script", str(script), "--out", str(out)).returncode == 0  # fmt: skip
    document = json.loads((out / "report.json").read_text())
    document["tasks"][0]["taskId"] = "fix-add\n| evil | row |\n## Heading"
    forged = home / "forged.json"
    forged.write_text(json.dumps(document))
    summary = home / "summary.md"
    env = _env(home) | {"GITHUB_STEP_SUMMARY": str(summary)}
    done = subprocess.run([str(ALISIO), "eval", "compare", str(forged), str(forged)], capture_output=True,
                          text=True, env=env, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    for text in (summary.read_text(), done.stdout):
        lines = text.splitlines()
        assert not any(line.startswith(("| evil", "## Heading")) for line in lines)
        assert any("fix-add\\n\\| evil \\| row \\|\\n## Heading" in line for line in lines)


# --- 19: ids read back are validated ---------------------------------------------------------------------


def test_a_task_id_read_from_runs_jsonl_cannot_leave_the_report_directory(
    home: Path, cli: Callable[..., Ran]
) -> None:
    """Item 19: runs.jsonl whose taskId is ../../private: eval show and eval export refuse it in one line
    naming runs.jsonl and the field, exit 1; nothing outside the report directory is read or bundled."""
    suite = make_suite(home)
    script = write_script(home / "f.json", FIX)
    out = home / "out"
    assert cli("eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1",
                  "--allow-write", "--script", str(script), "--out", str(out)).returncode == 0  # fmt: skip
    private = home / "private"
    private.mkdir()
    private_transcript = (
        (out / "runs" / "fix-add" / "0.jsonl").read_text().replace("Fixed add.", "PRIVATE-TEXT")
    )
    (private / "0.jsonl").write_text(private_transcript)
    record = json.loads((out / "runs.jsonl").read_text())
    record["taskId"] = "../../private"
    (out / "runs.jsonl").write_text(json.dumps(record) + "\n")
    for args in (["eval", "show", str(out)], ["eval", "show", str(out), "--json"],
                 ["eval", "export", str(out), "--out", str(home / "bundle.json")]):  # fmt: skip
        done = cli(*args)
        assert done.returncode == 1, (args, done.stdout)
        assert "PRIVATE-TEXT" not in done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        assert "runs.jsonl" in done.stderr and "$.taskId" in done.stderr, done.stderr
    assert not (home / "bundle.json").exists()


# --- 5: output files are regular files or new names --------------------------------------------------------


def test_output_files_never_replace_a_device_fifo_or_link(home: Path, cli: Callable[..., Ran]) -> None:
    """Item 5: --junit, compare --html and export --out --force naming a FIFO or a link to /dev/null are
    refused in one line (exit 1); the FIFO stays a FIFO and /dev/null a character device."""
    import stat

    suite = make_suite(home)
    script = write_script(home / "f.json", FIX)
    out = home / "out"
    assert cli("eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1",
                  "--allow-write", "--script", str(script), "--out", str(out)).returncode == 0  # fmt: skip
    fifo = home / "fifo"
    os.mkfifo(fifo)
    null_link = home / "null"
    null_link.symlink_to("/dev/null")
    for args in (
        ["eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1", "--allow-write",
         "--script", str(script), "--out", str(home / "o2"), "--junit", str(fifo)],
        ["eval", "compare", str(out), str(out), "--html", str(null_link)],
        ["eval", "export", str(out), "--out", str(fifo), "--force"],
        ["eval", "export", str(out), "--out", str(null_link), "--force"],
    ):  # fmt: skip
        done = cli(*args)
        assert done.returncode == 1, (args, done.stderr)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "is not a regular file" in lines[0], done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and null_link.is_symlink()
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert not (home / "o2" / "runs.jsonl").exists()  # refused before the first run


# --- 13: special files where reports are read or written ---------------------------------------------------


def test_report_readers_refuse_fifos_and_devices_at_once(home: Path) -> None:
    """Item 13: report.json or runs.jsonl as a FIFO, report.json linked to /dev/zero: compare, export and show
    exit 1 at once with one line naming the file; $GITHUB_STEP_SUMMARY naming a FIFO does not hang eval run
    (its report is written, the summary is refused in one line)."""
    suite = make_suite(home)
    script = write_script(home / "f.json", FIX)
    run_args = ["eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "1", "--allow-write",
                "--script", str(script)]  # fmt: skip
    fifo = home / "summary-fifo"
    os.mkfifo(fifo)
    env = _env(home) | {"GITHUB_STEP_SUMMARY": str(fifo)}
    out = home / "out"
    run = subprocess.run([str(ALISIO), *run_args, "--out", str(out)], capture_output=True, text=True, env=env,
                         timeout=30, check=False, stdin=subprocess.DEVNULL)  # fmt: skip
    assert run.returncode == 1 and (out / "report.json").is_file()
    assert f"$GITHUB_STEP_SUMMARY {fifo}: cannot append" in run.stderr and "not a regular file" in run.stderr
    for name, make, args in (
        ("report.json", "fifo", ["eval", "compare", "{broken}", str(out)]),
        ("runs.jsonl", "fifo", ["eval", "show", "{broken}"]),
        ("report.json", "zero", ["eval", "export", "{broken}", "--out", str(home / "b.json")]),
    ):
        broken = home / f"broken-{name}-{make}"
        shutil.copytree(out, broken)
        (broken / name).unlink()
        if make == "fifo":
            os.mkfifo(broken / name)
        else:
            (broken / name).symlink_to("/dev/zero")
        started = time.monotonic()
        done = alisio(home, *(arg.format(broken=broken) for arg in args), timeout=20)
        assert time.monotonic() - started < 10
        assert done.returncode == 1, (args, done.stderr)
        assert f"{broken / name}" in done.stderr and "not a regular file" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


# --- 14: k bounded, plan.json validated ------------------------------------------------------------------


def test_k_has_an_upper_bound_and_plan_json_is_validated_on_load(home: Path, cli: Callable[..., Ran]) -> None:
    """Item 14: --k 100000000 is a one-line usage error (at most 10000); a plan.json with k 0, k -3 or seed -1
    makes --resume exit 1 in one line naming plan.json and the field, never a traceback."""
    suite = make_suite(home)
    script = write_script(home / "f.json", FIX)
    out = home / "out"
    base = [
        "eval",
        "run",
        "calc-suite",
        "--suite-dir",
        str(suite),
        "--yes",
        "--allow-write",
        "--script",
        str(script),
    ]
    huge = cli(*base, "--k", "100000000", "--out", str(out))
    assert huge.returncode == 1 and "Traceback" not in huge.stderr
    assert "100000000 is above 10000" in huge.stderr and not out.exists()
    assert cli(*base, "--k", "1", "--out", str(out)).returncode == 0
    plan = json.loads((out / "plan.json").read_text())
    for field, value, message in (("k", 0, "$.k"), ("k", -3, "$.k"), ("seed", -1, "$.seed"),
                                  ("tasks", ["../x"], "$.tasks[0]")):  # fmt: skip
        (out / "plan.json").write_text(json.dumps(plan | {field: value}))
        done = cli("eval", "run", "--resume", str(out))
        assert done.returncode == 1, done.stderr
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "plan.json" in lines[0] and message in lines[0], done.stderr


# --- 15: names too long ------------------------------------------------------------------------------------


def test_a_path_component_over_255_bytes_is_one_line(home: Path, cli: Callable[..., Ran]) -> None:
    """Item 15: a run id or report path with a 300-byte component: show, export, --resume and compare exit 1
    with one line, never `OSError: [Errno 36]`."""
    long = "x" * 300
    path = f"{home}/{long}/report.json"
    for args in (["eval", "show", long], ["eval", "export", path, "--out", str(home / "b.json")],
                 ["eval", "run", "--resume", long], ["eval", "compare", path, path]):  # fmt: skip
        done = cli(*args)
        assert done.returncode == 1, (args, done.stderr)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
        assert "255" in lines[0] or "too long" in lines[0], lines[0]


# --- 11: signals outside the run loop --------------------------------------------------------------------


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_a_signal_before_the_run_loop_says_so_with_its_exit_code(home: Path, sig: int, code: int) -> None:
    """Item 11: a signal while the command waits before its first run (here at the confirmation prompt of a
    --suite-dir suite on a terminal, after suite hashing) gives `interrupted; nothing was run` and 128 + the
    signal, not a silent 130."""
    import pty
    import select

    suite = make_suite(home)
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [str(ALISIO), "eval", "run", "calc-suite", "--suite-dir", str(suite), "-k", "1", "--allow-write",
         "--script", str(write_script(home / "f.json", FIX))],
        stdin=slave, stderr=slave, stdout=subprocess.PIPE, env=_env(home),
    )  # fmt: skip
    os.close(slave)
    seen = b""
    signalled = False
    while True:
        ready, _, _ = select.select([master], [], [], 30)
        if not ready:
            process.kill()
            raise AssertionError(f"no output from the terminal: {seen!r}")
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if not signalled and b"[y/N]" in seen:
            process.send_signal(sig)
            signalled = True
    assert process.wait(timeout=30) == code
    os.close(master)
    assert "alisio eval run: interrupted; nothing was run" in seen.decode(errors="replace")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_eval_runs_says_so_with_its_exit_code(home: Path, sig: int, code: int) -> None:
    """Item 11: SIGINT or SIGTERM while `eval runs` is listing (held in its output: 40 stored runs with 3 kB
    labels and a stdout pipe the test does not read until the pipe is full) gives `interrupted` on one line
    and 128 + the signal, no traceback."""
    import fcntl
    import termios

    report = json.loads(
        (Path(__file__).resolve().parents[3] / "examples/reports/baseline/report.json").read_text()
    )
    report["conditions"]["label"] = "x" * 3000  # a 3 kB row: 40 of them are more than a pipe holds
    for i in range(40):
        copy = home / "data" / "eval" / f"2026-01-01T00-{i // 60:02d}-{i % 60:02d}-000Z"
        copy.mkdir(parents=True)
        (copy / "report.json").write_text(json.dumps(report))
    process = subprocess.Popen(
        [str(ALISIO), "eval", "runs"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(home)
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    pending = bytearray(4)
    while time.monotonic() < deadline:  # until the pipe is full: eval runs is blocked writing its table
        fcntl.ioctl(process.stdout.fileno(), termios.FIONREAD, pending)
        if int.from_bytes(pending, sys.byteorder) >= 65536:
            break
        assert process.poll() is None, "eval runs ended before its output filled the pipe"
        time.sleep(0.01)
    else:
        raise AssertionError("eval runs did not fill its stdout pipe within 60 s")
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == code, stderr
    text = stderr.decode()
    assert "Traceback" not in text
    assert text.strip().splitlines()[-1].startswith("alisio eval runs: interrupted"), text


def test_a_signal_while_the_reports_are_written_waits_for_them(tmp_path: Path) -> None:
    """Item 11: SIGTERM (then Ctrl-C) that arrives while the reports are written is held until they are
    written, and the outcome says interrupted with SIGTERM's code (the pipeline's `held_signals`)."""
    from alisio.shell.errors import Terminated
    from alisio.shell.lab.deferred import held_signals
    from alisio.shell.lab.store import write_bytes_atomic

    with held_signals() as held:
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
        write_bytes_atomic(tmp_path / "report.json", b"{}\n")
    assert (tmp_path / "report.json").read_bytes() == b"{}\n"
    assert held.signals == [signal.SIGTERM, signal.SIGINT]
    assert isinstance(held.interrupt, Terminated) and held.interrupt.signum == signal.SIGTERM
    assert (
        signal.getsignal(signal.SIGTERM) is not None
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )


def test_sigterm_while_a_resume_writes_the_reports_leaves_them_whole(
    home: Path, cli: Callable[..., Ran]
) -> None:
    """Item 11, in a real process: SIGTERM sent the moment a resume of a finished run starts rewriting its
    files (the first new file in the report directory) is held until every report is written: exit 143,
    one `interrupted` line and the report path on stderr, no traceback, and runs.jsonl, report.json,
    report.md and report.html all whole. (Before the fix: exit 130, nothing on stderr, no report files.)"""
    suite = make_suite(home)
    out = home / "out"
    done = cli("eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "2", "--allow-write",
               "--script", str(write_script(home / "f.json", FIX)), "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    for _attempt in range(3):  # a signal that comes after the process ended (a missed window) is tried again
        before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
        process = subprocess.Popen(
            [str(ALISIO), "eval", "run", "--resume", str(out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(home),
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            changed = [p for p in out.iterdir() if p.name not in before or _mtime(p) != before[p.name]]
            if changed:
                process.send_signal(signal.SIGTERM)
                break
            time.sleep(0.001)
        _, stderr = process.communicate(timeout=120)
        if process.returncode != 0:
            break
    text = stderr.decode()
    assert process.returncode == 143, text
    assert "Traceback" not in text and f"report: {out / 'report.md'}" in text, text
    assert "interrupted (SIGTERM) while the reports were written: they were written in full first" in text, (
        text
    )
    assert len((out / "runs.jsonl").read_text().splitlines()) == 2
    report = json.loads((out / "report.json").read_text())
    assert report["summary"]["judged"] == 2
    assert (out / "report.md").read_text().startswith("# ")
    assert (out / "report.html").read_text().rstrip().endswith("</html>")
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:  # a temporary file already renamed
        return None


# --- 12: resume refuses what would mix measurements ---------------------------------------------------------


def test_resume_refuses_another_harness_script_or_configuration(home: Path, cli: Callable[..., Ran]) -> None:
    """Item 12: plan.json records the harness version and the --script content; a resume refuses, naming
    what differs, when the harness version differs, the script file changed, or a kept record's configHash
    is not plan.json's; every file is left as it was."""
    suite = make_suite(home)
    script = write_script(home / "f.json", FIX)
    out = home / "out"
    assert cli("eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "2",
                  "--allow-write", "--script", str(script), "--out", str(out)).returncode == 0  # fmt: skip
    plan = json.loads((out / "plan.json").read_text())
    assert len(plan["scriptHash"]) == 64 and plan["harnessVersion"]
    runs = (out / "runs.jsonl").read_text()

    def refused(why: str) -> None:
        done = cli("eval", "run", "--resume", str(out))
        assert done.returncode == 1, done.stderr
        assert why in done.stderr and "nothing was run" in done.stderr, done.stderr
        assert (out / "runs.jsonl").read_text() == lines_now

    lines_now = runs
    (out / "plan.json").write_text(json.dumps(plan | {"harnessVersion": "0.0.1"}))
    refused("the harness version differs: 0.0.1 when the run started")
    (out / "plan.json").write_text(json.dumps(plan))
    write_script(script, {"turns": [{"text": "other"}]})
    refused("the --script content differs")
    write_script(script, FIX)
    first, second = runs.splitlines()
    record = json.loads(first)
    record["configHash"] = "0" * 64
    lines_now = json.dumps(record) + "\n" + second + "\n"
    (out / "runs.jsonl").write_text(lines_now)
    refused("1 record of runs.jsonl (first: task fix-add rep ")
    (out / "runs.jsonl").write_text(runs)
    lines_now = runs
    assert cli("eval", "run", "--resume", str(out)).returncode == 0


# --- 17: --retry-errors twice --------------------------------------------------------------------------------


def test_retry_errors_twice_keeps_every_transcript(home: Path, cli: Callable[..., Ran]) -> None:
    """Item 17: runs that error, retried twice: retried/runs.jsonl holds 4 records and retried/runs/ their 4
    transcripts (<rep>.jsonl, then <rep>.2.jsonl), none overwritten; --force still sees them as ours."""
    suite = make_suite(home)
    broken = {"turns": [{"toolCalls": [{"name": "read_file", "arguments": {"path": "src/calc.py"}}]}]}
    script = write_script(home / "s.json", broken)
    out = home / "out"
    first = cli("eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "2", "--allow-write",
                "--script", str(script), "--out", str(out))  # fmt: skip
    assert first.returncode == 1
    originals = {p.name: p.read_bytes() for p in (out / "runs" / "fix-add").iterdir()}
    for _ in range(2):
        assert cli("eval", "run", "--resume", str(out), "--retry-errors").returncode == 1
    assert len((out / "retried" / "runs.jsonl").read_text().splitlines()) == 4
    kept = sorted(p.name for p in (out / "retried" / "runs" / "fix-add").iterdir())
    assert kept == ["0.2.jsonl", "0.jsonl", "1.2.jsonl", "1.jsonl"]
    for name, data in originals.items():  # the first retry's evidence is the original runs' transcripts
        assert (out / "retried" / "runs" / "fix-add" / name).read_bytes() == data
    from alisio.shell.lab.outputs import REPORT_FILES
    from alisio.shell.lab.owned import foreign_entries

    assert foreign_entries(out, REPORT_FILES) == []


# --- 16: eval power's edge cases -------------------------------------------------------------------------


def test_eval_power_bounds_its_inputs_and_its_search(cli: Callable[..., Ran]) -> None:
    """Item 16: tiny valid-looking values and huge task counts are one line naming the flag and its bound,
    exit 1, at once; the search for the fewest tasks stops at 10000 tasks and says so."""
    base = ["eval", "power", "--baseline-rate", "0.5"]
    for args, line in (
        (["--detect", "1e-300"], "--detect: the change to detect must be at least 0.0001"),
        (["--detect", "0.1", "--alpha", "1e-300"], "--alpha: must be in [1e-06, 0.5], got 1e-300"),
        (["--detect", "0.1", "--power", "1e-298"], "--power: must be in [0.01, 0.999999], got 1e-298"),
        (
            ["--detect", "0.1", "--tasks", "100000000000000000000"],
            "--tasks: expected a whole number of tasks",
        ),
    ):
        started = time.monotonic()
        done = cli(*base, *args)
        assert time.monotonic() - started < 2
        assert (
            done.returncode == 1 and done.stderr.strip() == f"alisio eval power: {line}"
        ) or line in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    started = time.monotonic()
    far = cli(*base, "--detect", "0.001", "--tasks", "10000", "--task-sd", "1")
    assert far.returncode == 0 and time.monotonic() - started < 5
    assert "more than 10000 tasks would be needed" in far.stdout and "e-" not in far.stdout
    low = cli(*base, "--detect", "0.1", "--power", "0.01")
    assert low.returncode == 0 and "with 1% power" in low.stdout


# --- 3: a signal reaches runs blocked in a provider request --------------------------------------------------


class _SilentServer:
    """Accepts connections, reads each request, then sends the response headers (or not) and nothing more."""

    def __init__(self, headers: bool) -> None:
        import socket
        import threading

        self.headers = headers
        self.requests = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(conn)
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            self.requests += 1
            if self.headers:
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                )

    def close(self) -> None:
        self.listener.close()
        for conn in self.connections:
            conn.close()


@pytest.mark.parametrize("headers", [True, False], ids=["headers-then-nothing", "nothing"])
def test_sigterm_with_jobs_cancels_requests_in_flight(home: Path, headers: bool) -> None:
    """Item 3: --jobs 3, every run blocked in a provider request (after the headers, or before them):
    SIGTERM ends the command in seconds, not after the 30 s grace or the server's answer, with exit 143 and
    the report written, marked interrupted."""
    server = _SilentServer(headers)
    try:
        (home / "config" / "config.toml").write_text(
            f'[provider]\nbaseUrl = "{server.base_url}"\nmodel = "m"\n'
        )
        suite = make_suite(home)
        out = home / "out"
        process = subprocess.Popen(
            [str(ALISIO), "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "-k", "3", "-j", "3",
             "--allow-write", "--out", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(home), stdin=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while server.requests < 3:
            assert time.monotonic() < deadline and process.poll() is None, "the runs did not all start"
            time.sleep(0.05)
        time.sleep(0.3)
        signalled = time.monotonic()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
        took = time.monotonic() - signalled
    finally:
        server.close()
    assert process.returncode == 143, stderr
    assert took < 8, f"took {took:.1f} s after SIGTERM"
    report = json.loads((out / "report.json").read_text())
    assert report["interrupted"] is True
    assert "Traceback" not in stderr


# --- 8: the stale-workspace sweep removes only what is provably ours and dead -------------------------------


def test_the_sweep_removes_only_directories_provably_ours_and_dead(tmp_path: Path) -> None:
    """Item 8: of the alisio-* directories in TMPDIR, only those of this boot and PID namespace whose process
    is gone (or whose PID now names a process started at another time) are removed; another namespace's, an
    older alisio's (no mark) and a live process's stay."""
    from alisio.shell.stale import owned_prefix, process_mark, remove_stale, start_time

    if not process_mark():
        pytest.skip("no /proc here (macOS): a directory is judged by its PID alone")
    child = subprocess.Popen(["true"])
    child.wait()
    dead, me = child.pid, os.getpid()
    mark = process_mark()
    names = {
        f"alisio-{dead}@{mark}.12345-task-a": False,  # ours, its process gone: removed
        f"alisio-{me}@{mark}.{int(start_time(me)) + 1}-task-b": False,  # our PID, reused: removed
        f"alisio-{dead}@{'0' * 12}.12345-task-c": True,  # another PID namespace: kept
        f"alisio-{dead}-task-d": True,  # an older alisio's, no mark: kept
        owned_prefix("task-e") + "x": True,  # this live process's: kept
    }
    for name in names:
        (tmp_path / name).mkdir()
    remove_stale(tmp_path)
    assert {name: (tmp_path / name).exists() for name in names} == names


def _pid_namespace_runner() -> list[str] | None:
    for argv in (["unshare", "--pid", "--fork", "--mount-proc"], ["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc"]):  # fmt: skip
        if shutil.which(argv[0]) is None:
            continue
        probe = subprocess.run(
            [*argv, "sh", "-c", "echo $$"], capture_output=True, text=True, timeout=10, check=False
        )
        if probe.returncode == 0 and probe.stdout.strip() in ("1", "2"):
            return argv
    return None


def test_a_run_in_another_pid_namespace_keeps_its_workspace(home: Path) -> None:
    """Item 8: a run in another PID namespace sharing TMPDIR (a container with a shared /tmp) is working in
    its workspace; a command started outside sweeps TMPDIR and leaves that workspace alone."""
    runner = _pid_namespace_runner()
    if runner is None:
        pytest.skip(
            "neither unshare --pid nor bwrap --unshare-pid works here (needs user namespaces or root)"
        )
    temp = home / "tmp"
    temp.mkdir()
    env = _env(home) | {"TMPDIR": str(temp)}
    suite = make_suite(home, task("slow", policy=PROCESS))
    # inside, PIDs start at 1 (alive outside: kernel threads); burn PIDs so that the inner command gets one
    # that names no process outside, as a container's PIDs do
    target = next(
        p for p in range(300, 1 << 22) if not any(Path(f"/proc/{q}").exists() for q in range(p - 5, p + 5))
    )
    burn = f'while :; do /bin/true & c=$!; wait $c; [ "$c" -ge {target - 1} ] && break; done; "$@"'
    inner = subprocess.Popen(
        [*runner, "sh", "-c", burn, "sh", str(ALISIO),
         *_run_args(suite, write_script(home / "slow.json", SLEEPER), home / "inner")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not [p for p in temp.iterdir() if p.name.startswith("alisio-")]:
            assert time.monotonic() < deadline and inner.poll() is None, (
                inner.stderr.read() if inner.stderr else ""
            )
            time.sleep(0.05)
        (workspace,) = [p for p in temp.iterdir() if p.name.startswith("alisio-")]
        assert not Path(
            f"/proc/{workspace.name.split('-')[1].split('@')[0]}"
        ).exists()  # its PID is dead here
        outer = subprocess.run(
            [str(ALISIO), *_run_args(suite, write_script(home / "f.json", FIX), home / "outer")],
            capture_output=True, text=True, env=env, timeout=60, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert outer.returncode in (0, 1), outer.stderr  # the scripted fix, whatever its verdict
        assert workspace.is_dir(), "the sweep removed a live run's workspace of another PID namespace"
    finally:
        os.killpg(inner.pid, signal.SIGKILL)  # the namespace's processes with it
        inner.communicate(timeout=30)
