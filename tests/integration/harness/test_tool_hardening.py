"""The tools against hostile input and a hostile workspace: nothing crashes, hangs, escapes or is left running.

Real temp workspaces, real FIFOs, sparse files, hard links, real bash and Python daemons, real slow servers.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import stat
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from alisio.core.harness.protocol import ToolCall
from alisio.core.harness.tooldefs import TOOL_NAMES, tool_definition
from alisio.shell.harness.tools.dispatch import MARK_SHOWN, ToolContext, ToolOutcome, execute_tool
from alisio.shell.harness.tools.processes import MARK_VARIABLE, marked, new_mark, stop_marked
from alisio.shell.lab.verifiers import run_argv

LINUX_PROC = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")


def call(ctx: ToolContext, name: str, **arguments: object) -> ToolOutcome:
    return execute_tool(ToolCall(id="call_1", name=name, arguments=json.dumps(arguments)), ctx)


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return fields.rsplit(")", 1)[1].split()[0] != "Z"


def wait_dead(pid: int, within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return ToolContext(workspace=workspace)


@pytest.fixture
def ws(ctx: ToolContext) -> Path:
    return Path(ctx.root)


# --- crashes: every failure is a tool result ------------------------------------------------------------------


def test_a_nul_byte_in_a_command_is_a_tool_error(ctx: ToolContext) -> None:
    """bash with a NUL character used to raise ValueError out of the harness; now the model reads why."""
    result = call(ctx, "bash", command="echo a\0b")
    assert not result.ok
    assert (
        result.output
        == "refused: the command contains a NUL character, which no program can receive; remove it"
    )


def test_a_path_nested_2000_levels_is_refused_cleanly(ctx: ToolContext, ws: Path) -> None:
    """os.makedirs recursed once per level (RecursionError at 2,000 levels): such a path is now refused with a
    reason, and nothing is created; a deep but reasonable path is created."""
    refused = call(ctx, "write_file", path="d/" * 2000 + "f.txt", content="deep\n")
    assert not refused.ok
    assert refused.output == (
        "refused: the path is nested 2000 directories deep; write_file creates files at most 128 directories deep"
    )
    assert list(ws.iterdir()) == []
    deep = "d/" * 128 + "f.txt"
    assert call(ctx, "write_file", path=deep, content="deep\n").ok
    assert (ws / deep).read_text() == "deep\n"
    assert call(ctx, "search", pattern="deep").output == f"{deep}:1: deep"


def test_analyze_reports_expressions_nested_too_deeply_to_compile(ctx: ToolContext, ws: Path) -> None:
    """compile() raises RecursionError or MemoryError on deep nesting; analyze reports each file as a problem."""
    (ws / "sum.py").write_text("x = " + "+".join(["1"] * 200_000) + "\n")
    (ws / "nots.py").write_text("x = " + "not " * 100_000 + "1\n")
    (ws / "fine.py").write_text("x = 1\n")
    result = call(ctx, "analyze")
    assert result.ok
    lines = result.output.split("\n")
    assert lines[0].startswith("nots.py:0:0: too deeply nested to compile (MemoryError")
    assert lines[1].startswith("sum.py:0:0: too deeply nested to compile (RecursionError")
    assert lines[2] == "2 problems in 3 Python files"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
"""Any JSON value: NUL, lone surrogates, huge and negative numbers, NaN, nested containers."""


@st.composite
def arguments_for(draw: st.DrawFn, name: str) -> str:
    """Raw arguments for tool ``name``: garbage, deep nesting, any-typed fields, or well-typed hostile values."""
    definition = tool_definition(name)
    assert definition is not None
    properties = json.loads(definition.parameters_json)["properties"]
    kind = draw(st.sampled_from(["garbage", "nested", "any", "typed", "typed"]))
    if kind == "garbage":
        return draw(st.text(max_size=40))
    if kind == "nested":
        depth = draw(st.integers(1, 20_000))
        return "[" * depth + "]" * depth
    fields = draw(st.lists(st.sampled_from([*properties, "extra"]), unique=True, max_size=4))
    if kind == "any":
        return json.dumps({field: draw(json_values) for field in fields}, ensure_ascii=draw(st.booleans()))
    values: dict[str, object] = {}
    for field in fields:
        if properties.get(field, {}).get("type") == "integer":
            values[field] = draw(st.integers(min_value=-(2**70), max_value=2**70))
        else:
            size = draw(st.sampled_from([10, 10, 200_000]))
            values[field] = draw(st.text(alphabet="ab/.\0 \n*\\é", max_size=size))
    if name == "bash" and "command" in values:
        # Any text, but as an argument of printf: the test must not run whatever bash makes of random text.
        values["command"] = "printf %s " + shlex.quote(str(values["command"]))
    return json.dumps(values)


fuzzed_calls = st.sampled_from(TOOL_NAMES).flatmap(lambda name: st.tuples(st.just(name), arguments_for(name)))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None)
@given(fuzzed_calls)
@example(("bash", json.dumps({"command": "echo \0"})))
@example(("write_file", json.dumps({"path": "a/" * 2000 + "b", "content": "x"})))
@example(("search", json.dumps({"pattern": "(" * 5000 + ")" * 5000})))
@example(("fetch_url", json.dumps({"url": "http://" + "a" * 300 + ".test/"})))
@example(("read_file", '{"path": "\\ud800"}'))
def test_any_arguments_to_any_tool_give_a_result_never_an_exception(
    ctx: ToolContext, case: tuple[str, str]
) -> None:
    """Whatever JSON (or not) the model sends to whichever tool, execute_tool returns a result it can read."""
    name, arguments = case
    ctx.deadline = time.monotonic() + 5
    ctx.tool_time_limit_s = 2
    ctx.fetch_transport = httpx.MockTransport(lambda request: httpx.Response(200, text="fetched"))
    outcome = execute_tool(ToolCall(id="c", name=name, arguments=arguments), ctx)
    assert isinstance(outcome, ToolOutcome)
    assert isinstance(outcome.output, str) and outcome.output
    assert ctx.process_mark not in outcome.output


# --- hangs and unbounded memory -----------------------------------------------------------------------------------


def test_read_file_refuses_a_fifo_at_once(ctx: ToolContext, ws: Path) -> None:
    """A FIFO with no writer used to block read_file forever; it is refused before anything waits on it."""
    os.mkfifo(ws / "pipe")
    started = time.monotonic()
    result = call(ctx, "read_file", path="pipe")
    assert time.monotonic() - started < 1
    assert not result.ok
    assert (
        result.output
        == "pipe is a FIFO (named pipe), not a regular file; read_file only handles regular files"
    )
    edit = call(ctx, "edit_file", path="pipe", old_string="a", new_string="b", sha256="0")
    assert not edit.ok and "not a regular file" in edit.output
    assert stat.S_ISFIFO(os.stat(ws / "pipe").st_mode)


def test_read_file_refuses_a_character_device(ctx: ToolContext, ws: Path) -> None:
    """A character device (a /dev/zero node in the workspace) would read forever; it is refused."""
    try:
        os.mknod(ws / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")
    result = call(ctx, "read_file", path="zero", limit=5)
    assert (
        result.output
        == "zero is a character device, not a regular file; read_file only handles regular files"
    )
    found = call(ctx, "search", pattern="x")
    assert found.output == "no matches for 'x' in 0 text files under ."


def test_search_and_analyze_skip_special_files(ctx: ToolContext, ws: Path) -> None:
    """A tree holding a FIFO is searched (the FIFO is skipped); searching the FIFO itself is refused."""
    (ws / "src").mkdir()
    os.mkfifo(ws / "src" / "pipe")
    os.mkfifo(ws / "src" / "fifo.py")
    (ws / "src" / "a.py").write_text("needle = 1\n")
    started = time.monotonic()
    assert call(ctx, "search", pattern="needle").output == "src/a.py:1: needle = 1"
    assert call(ctx, "analyze").output == "no problems found in 1 Python files"
    assert time.monotonic() - started < 2
    alone = call(ctx, "search", pattern="needle", path="src/pipe")
    assert alone.output == "src/pipe is a FIFO (named pipe); only regular files and directories are read"


CATASTROPHIC = r"^(a+)+$"


@pytest.mark.parametrize("where", ["main thread", "worker thread"])
def test_a_catastrophic_pattern_runs_in_linear_time_on_any_thread(
    ctx: ToolContext, ws: Path, where: str
) -> None:
    """^(a+)+$ on 'aaa...ab' takes exponential time in Python's re; search matches with RE2, so it answers at
    once with the right lines, on the main thread and on a --jobs worker alike (no signal-based limit)."""
    (ws / "a.txt").write_text("aaaa\n")
    (ws / "b.txt").write_text("a" * 100_000 + "b\n")
    results: list[ToolOutcome] = []
    started = time.monotonic()
    if where == "main thread":
        results.append(call(ctx, "search", pattern=CATASTROPHIC))
    else:
        worker = threading.Thread(target=lambda: results.append(call(ctx, "search", pattern=CATASTROPHIC)))
        worker.start()
        worker.join(timeout=30)
    assert time.monotonic() - started < 5
    (result,) = results
    assert (result.ok, result.timed_out, result.output) == (True, False, "a.txt:1: aaaa")


def test_a_pattern_that_needs_backtracking_is_a_tool_error(ctx: ToolContext, ws: Path) -> None:
    """A lookahead or a backreference cannot be matched in bounded time: a readable tool error, no search."""
    (ws / "a.txt").write_text("abab\n")
    result = call(ctx, "search", pattern=r"(ab)\1")
    assert not result.ok and "backreference is not supported" in result.output
    ahead = call(ctx, "search", pattern=r"a(?=b)")
    assert not ahead.ok and "lookahead is not supported" in ahead.output


def test_search_does_not_run_past_the_run_deadline(ctx: ToolContext, ws: Path) -> None:
    """When the run's maxWallMs has passed, search is not run and says why."""
    (ws / "b.txt").write_text("a\n")
    ctx.deadline = time.monotonic() - 0.1
    late = call(ctx, "search", pattern="a")
    assert late.timed_out and late.output == "not run: the run's time budget (maxWallMs) has run out"


def test_read_file_with_a_limit_reads_only_that_window_of_a_3_gb_file(ctx: ToolContext, ws: Path) -> None:
    """A 3 GB (sparse) file: limit 5 streams five lines; memory stays small; no sha256, so no blind edit."""
    big = ws / "big.log"
    with open(big, "wb") as file:
        file.write(b"".join(f"line {n}\n".encode() for n in range(1, 10_001)))
    os.truncate(big, 3 << 30)
    if os.stat(big).st_blocks * 512 > 64 << 20:
        big.unlink()
        pytest.skip("this file system does not keep sparse files")
    tracemalloc.start()
    try:
        result = call(ctx, "read_file", path="big.log", offset=2, limit=5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20
    assert result.ok
    assert result.output == (
        "path: big.log\nsha256: not computed (the file has 3221225472 bytes, more than the 16777216 read_file "
        "reads whole; edit_file cannot change it: use bash)\nlines: 2-6 (the total was not counted)\n---\n"
        "line 2\nline 3\nline 4\nline 5\nline 6\n"
    )
    assert ctx.read_hashes == {}
    edit = call(ctx, "edit_file", path="big.log", old_string="line 2", new_string="x", sha256="0")
    assert edit.output.startswith("big.log is larger than the 16777216 bytes edit_file changes")
    ctx.tool_time_limit_s = 0.3  # an offset past 3 GB of zeros would stream the whole file: stopped on time
    started = time.monotonic()
    far = call(ctx, "read_file", path="big.log", offset=10**9)
    assert time.monotonic() - started < 1.5
    assert (
        far.timed_out and far.output == "read_file was stopped after 0.3 s: it passed its time limit of 0.3 s"
    )


def test_read_file_of_a_large_file_without_a_limit_is_cut_and_counts_to_the_end(
    ctx: ToolContext, ws: Path
) -> None:
    """Past file_max_bytes the window is cut at read_max_chars; a window that reaches the end knows the total."""
    ctx.file_max_bytes = 1000
    ctx.read_max_chars = 50
    (ws / "l.txt").write_text("".join(f"row {n:04}\n" for n in range(1, 201)))  # 9 characters per line
    head = call(ctx, "read_file", path="l.txt")
    assert (
        "lines: 1-5 (the total was not counted)\n[cut at 50 characters: call read_file with offset=6"
        in head.output
    )
    tail = call(ctx, "read_file", path="l.txt", offset=199)
    assert tail.output.endswith("lines: 199-200 of 200\n---\nrow 0199\nrow 0200\n")
    past = call(ctx, "read_file", path="l.txt", offset=500)
    assert past.output == "offset 500 is past the end of l.txt, which has 200 lines"


class _Trickle(threading.Thread):
    """A server that answers each connection one byte every ``gap_s`` (headers or body), for a bounded time."""

    def __init__(self, headers_first: bool, gap_s: float = 0.5, max_s: float = 8.0) -> None:
        super().__init__(daemon=True)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.headers_first = headers_first
        self.gap_s = gap_s
        self.max_s = max_s

    def run(self) -> None:
        connection, _ = self.listener.accept()
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n"
        stop = time.monotonic() + self.max_s
        with connection:
            if self.headers_first:
                connection.sendall(head)
                payload = b"z" * 100_000
            else:
                payload = head
            for byte in payload:
                if time.monotonic() > stop:
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(self.gap_s)


@pytest.fixture
def trickle_servers() -> Iterator[list[_Trickle]]:
    servers: list[_Trickle] = []
    yield servers
    for server in servers:
        server.listener.close()


@pytest.mark.parametrize("headers_first", [True, False], ids=["slow-body", "slow-headers"])
def test_fetch_url_is_bounded_in_total_time_against_a_trickling_server(
    ctx: ToolContext, trickle_servers: list[_Trickle], headers_first: bool
) -> None:
    """One byte every 0.5 s never trips a read timeout; the call still ends at fetch_timeout_s."""
    server = _Trickle(headers_first)
    trickle_servers.append(server)
    server.start()
    ctx.fetch_timeout_s = 1.5
    started = time.monotonic()
    result = call(ctx, "fetch_url", url=f"http://127.0.0.1:{server.port}/drip")
    assert time.monotonic() - started < 3.5
    assert not result.ok
    assert result.output == f"fetching http://127.0.0.1:{server.port}/drip timed out after 1.5 s"


def test_fetch_url_never_echoes_a_password_in_a_url(ctx: ToolContext) -> None:
    """A URL with user:password is shown redacted in every result (refusal, failure, success)."""
    with socket.socket() as probe:  # bound (no other test takes the port), not listening: refused
        probe.bind(("127.0.0.1", 0))
        failed = call(ctx, "fetch_url", url=f"http://alice:hunter2@127.0.0.1:{probe.getsockname()[1]}/x")
    assert "hunter2" not in failed.output and "http://<redacted>@127.0.0.1" in failed.output
    ctx.fetch_transport = httpx.MockTransport(
        lambda request: httpx.Response(200, text="the page", headers={"content-type": "text/plain"})
    )
    fetched = call(ctx, "fetch_url", url="https://bob:s3cr3t-pass@example.test/page")
    assert fetched.ok and "s3cr3t-pass" not in fetched.output
    assert fetched.output.endswith("url: https://<redacted>@example.test/page\n---\nthe page")
    refused = call(ctx, "fetch_url", url="ftp://carol:pw123456@example.test/")
    assert "pw123456" not in refused.output


# --- escapes and leaks ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["edit_file", "write_file"])
def test_a_hard_link_to_an_outside_file_is_never_written_through(
    ctx: ToolContext, ws: Path, tool: str
) -> None:
    """A granted bash can hard-link a file outside into the workspace; changing the workspace name replaces it
    (a new file renamed over the name), so the outside file keeps its content."""
    outside = ws.parent / "outside.txt"
    outside.write_text("precious = 1\n")
    os.link(outside, ws / "linked.txt")
    assert call(ctx, "read_file", path="linked.txt").ok
    if tool == "edit_file":
        result = call(
            ctx, "edit_file", path="linked.txt", old_string="precious = 1", new_string="precious = 2"
        )
    else:
        result = call(ctx, "write_file", path="linked.txt", content="precious = 2\n")
    assert result.ok, result.output
    assert outside.read_text() == "precious = 1\n"
    assert (ws / "linked.txt").read_text() == "precious = 2\n"
    assert os.stat(outside).st_nlink == 1
    assert [p.name for p in ws.iterdir()] == ["linked.txt"]  # no temporary file left


def test_a_replaced_file_keeps_its_permissions(ctx: ToolContext, ws: Path) -> None:
    """An executable script stays executable after edit_file and write_file replace it."""
    script = ws / "run.sh"
    script.write_text("echo one\n")
    script.chmod(0o750)
    assert call(ctx, "read_file", path="run.sh").ok
    assert call(ctx, "edit_file", path="run.sh", old_string="one", new_string="two").ok
    assert stat.S_IMODE(os.stat(script).st_mode) == 0o750
    assert call(ctx, "write_file", path="run.sh", content="echo three\n").ok
    assert stat.S_IMODE(os.stat(script).st_mode) == 0o750
    assert call(ctx, "bash", command="./run.sh").output == "exit code: 0\nthree\n"


DAEMON = """python3 - <<'EOF'
import os, sys, time
ready_r, ready_w = os.pipe()
if os.fork():
    os.read(ready_r, 1)  # return only once the daemon runs
    sys.exit(0)
os.setsid()
if os.fork():
    os._exit(0)
with open("daemon.pid", "w") as out:
    out.write(str(os.getpid()))
os.write(ready_w, b"x")
time.sleep(60)
EOF
echo launched"""


@LINUX_PROC
def test_a_double_forked_setsid_daemon_is_stopped_and_named(ctx: ToolContext, ws: Path) -> None:
    """A daemon that left the command's process group (setsid, double fork) still carries the run's mark: it is
    killed when the command returns, and the result says so."""
    result = call(ctx, "bash", command=DAEMON, timeout_ms=20_000)
    pid = int((ws / "daemon.pid").read_text())
    assert wait_dead(pid)
    assert result.ok
    assert result.output.startswith(
        "exit code: 0\nlaunched\n\n[stopped 1 process the command had left running"
    )
    assert f"python3 (pid {pid})" in result.output


@LINUX_PROC
def test_a_command_verifier_daemon_is_stopped_too(tmp_path: Path) -> None:
    """run_argv (command verifiers) marks its command the same way: the daemon does not outlive the verifier."""
    facts = run_argv(["bash", "-c", DAEMON], cwd=str(tmp_path), env=dict(os.environ), timeout_s=20)
    assert facts.exit_code == 0
    assert wait_dead(int((tmp_path / "daemon.pid").read_text()))


@LINUX_PROC
def test_stop_marked_stops_only_the_processes_carrying_the_mark(tmp_path: Path) -> None:
    """Two sleeps in their own sessions, one marked: only that one is stopped and reported."""
    import subprocess

    mark = new_mark()
    mine = subprocess.Popen(["sleep", "60"], env=marked(os.environ, mark), start_new_session=True)
    other = subprocess.Popen(["sleep", "60"], env=marked(os.environ, new_mark()), start_new_session=True)
    try:
        stopped = stop_marked(mark)
        assert [(p.pid, p.name) for p in stopped] == [(mine.pid, "sleep")]
        assert mine.wait(timeout=5) == -9
        assert other.poll() is None
        assert stop_marked(mark) == ()
    finally:
        other.kill()
        other.wait()


def test_the_mark_is_never_shown_to_the_model(ctx: ToolContext) -> None:
    """A command printing its environment shows <run-mark>, the same in every run (replay compares it)."""
    result = call(ctx, "bash", command=f"echo ${MARK_VARIABLE}")
    assert result.output == f"exit code: 0\n{MARK_SHOWN}\n"
