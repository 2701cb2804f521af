"""The tools end to end: real temp workspaces, real bash subprocesses, a real local HTTP server."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import re
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from alisio.core.harness.protocol import ToolCall
from alisio.shell.harness.tools.bash import read_output
from alisio.shell.harness.tools.dispatch import ToolContext, ToolOutcome, execute_tool
from tests.integration.servers import QuietServer, serving

SLACK_S = 10.0
"""How long a call that must be cut short may take on a loaded machine: far below the 30-60 s it would take
if it were not cut (a wall-clock bound as tight as the cut itself fails under load, not on a bug)."""


def call(ctx: ToolContext, name: str, **arguments: object) -> ToolOutcome:
    return execute_tool(ToolCall(id="call_1", name=name, arguments=json.dumps(arguments)), ctx)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace and a sibling directory outside it."""
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    return workspace, outside


@pytest.fixture
def ctx(layout: tuple[Path, Path]) -> ToolContext:
    return ToolContext(workspace=layout[0])


# --- malformed calls ------------------------------------------------------------------------------------------


def test_malformed_calls_are_tool_errors_not_crashes(ctx: ToolContext) -> None:
    """Invalid JSON, an unknown tool and an unknown argument each come back as ok=False with a clear message."""
    bad_json = execute_tool(ToolCall(id="1", name="read_file", arguments='{"path": '), ctx)
    assert not bad_json.ok and "not valid JSON" in bad_json.output
    unknown = execute_tool(ToolCall(id="2", name="delete_everything", arguments="{}"), ctx)
    assert not unknown.ok and "unknown tool 'delete_everything'" in unknown.output
    extra = call(ctx, "list_dir", path=".", recursive=True)
    assert not extra.ok and "unknown field `recursive`" in extra.output


# --- paths ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["../outside/new.txt", "../outside/secret.txt", "a/../../outside/x.txt"])
def test_dotdot_escape_is_refused_and_nothing_is_written(
    ctx: ToolContext, layout: tuple[Path, Path], path: str
) -> None:
    """A path that climbs out with .. is refused for writing and reading; nothing outside changes."""
    _, outside = layout
    before = sorted(p.name for p in outside.iterdir())
    result = call(ctx, "write_file", path=path, content="pwned")
    assert not result.ok and "outside the workspace" in result.output
    assert sorted(p.name for p in outside.iterdir()) == before
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert not call(ctx, "read_file", path=path).ok


def test_absolute_paths_only_inside(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """An absolute path inside the workspace works; one outside is refused."""
    workspace, outside = layout
    assert call(ctx, "write_file", path=str(workspace / "in.txt"), content="ok\n").ok
    assert (workspace / "in.txt").read_text() == "ok\n"
    refused = call(ctx, "read_file", path=str(outside / "secret.txt"))
    assert not refused.ok and "outside the workspace" in refused.output


def test_symlinks_leading_outside_are_refused(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """A symlinked directory or file pointing outside, or a dangling link to outside, cannot be read or written
    through; the outside stays untouched."""
    workspace, outside = layout
    (workspace / "dirlink").symlink_to(outside, target_is_directory=True)
    (workspace / "filelink").symlink_to(outside / "secret.txt")
    (workspace / "dangling").symlink_to(outside / "not-yet.txt")
    for path in ("dirlink/new.txt", "dirlink/secret.txt", "filelink", "dangling"):
        result = call(ctx, "write_file", path=path, content="pwned")
        assert not result.ok and "outside the workspace" in result.output, path
    assert not call(ctx, "read_file", path="filelink").ok
    assert not call(ctx, "list_dir", path="dirlink").ok
    assert not call(ctx, "edit_file", path="filelink", old_string="top", new_string="no").ok
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "top secret\n"
    found = call(ctx, "search", pattern="secret")
    assert found.ok and "top secret" not in found.output


def test_symlink_inside_the_workspace_is_followed(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """A link to a file inside the workspace reads the target, and every spelling shares one read record."""
    workspace, _ = layout
    (workspace / "real.txt").write_text("hello\n")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    assert call(ctx, "read_file", path="alias.txt").ok
    assert list(ctx.read_hashes) == ["real.txt"]
    assert call(ctx, "edit_file", path="./x/../real.txt", old_string="hello", new_string="bye").ok
    assert (workspace / "real.txt").read_text() == "bye\n"


def test_symlinked_workspace_root_works(tmp_path: Path) -> None:
    """A workspace reached through a symlink is resolved once; relative paths work inside it."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    ctx = ToolContext(workspace=tmp_path / "link")
    assert call(ctx, "write_file", path="a.txt", content="x").ok
    assert (tmp_path / "real" / "a.txt").read_text() == "x"


# --- read_file --------------------------------------------------------------------------------------------------


def test_read_file_shows_text_and_hash(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """read_file returns a header with the whole file's sha256 and line range, then the text verbatim."""
    data = b"one\ntwo\r\nthree"
    (layout[0] / "f.txt").write_bytes(data)
    result = call(ctx, "read_file", path="f.txt")
    assert result.ok
    assert result.output == f"path: f.txt\nsha256: {sha(data)}\nlines: 1-3 of 3\n---\none\ntwo\r\nthree"
    assert ctx.read_hashes == {"f.txt": sha(data)}
    part = call(ctx, "read_file", path="f.txt", offset=2, limit=1)
    assert part.output.endswith("lines: 2-2 of 3\n---\ntwo\r\n")
    past = call(ctx, "read_file", path="f.txt", offset=9)
    assert not past.ok and "has 3 lines" in past.output


def test_read_file_cuts_long_files_at_a_line(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """A file longer than read_max_chars is cut at a line boundary and says which offset reads on."""
    ctx.read_max_chars = 25
    (layout[0] / "long.txt").write_text("".join(f"line {i:03}\n" for i in range(1, 11)))  # 9 chars per line
    result = call(ctx, "read_file", path="long.txt")
    assert "lines: 1-2 of 10\n" in result.output
    assert "offset=3" in result.output
    assert result.output.endswith("---\nline 001\nline 002\n")
    window = call(ctx, "read_file", path="long.txt", offset=4, limit=5)
    assert (
        "lines: 4-5 of 10\n[cut at 25 characters: call read_file with offset=6 to read on]\n" in window.output
    )
    assert window.output.endswith("---\nline 004\nline 005\n")
    (layout[0] / "wide.txt").write_text("w" * 100 + "\nnext\n")
    wide = call(ctx, "read_file", path="wide.txt")
    assert wide.output.endswith("lines: 1-1 of 2\n[line 1 cut at 25 characters]\n---\n" + "w" * 25 + "\n")


def test_read_file_refuses_binary_and_directories(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """Binary, non-UTF-8, missing files and directories are explained, and nothing is recorded as read."""
    workspace, _ = layout
    (workspace / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    (workspace / "latin1.txt").write_bytes("café".encode("latin-1"))
    (workspace / "sub").mkdir()
    assert "binary file" in call(ctx, "read_file", path="img.png").output
    assert "not UTF-8" in call(ctx, "read_file", path="latin1.txt").output
    assert "use list_dir" in call(ctx, "read_file", path="sub").output
    assert "file not found: nope.txt" in call(ctx, "read_file", path="nope.txt").output
    assert ctx.read_hashes == {}


# --- write_file and edit_file -------------------------------------------------------------------------------------


def test_write_creates_parents_and_records_hash(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """write_file creates missing directories, reports the new sha256 and records it as this run's view."""
    result = call(ctx, "write_file", path="a/b/c.txt", content="héllo\n")
    data = "héllo\n".encode()
    assert result.ok
    assert result.output == f"created a/b/c.txt ({len(data)} bytes); sha256: {sha(data)}"
    assert (layout[0] / "a/b/c.txt").read_bytes() == data
    assert ctx.read_hashes["a/b/c.txt"] == sha(data)


def test_write_under_a_file_names_the_file_in_the_way(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """write_file to c.txt/d (or c.txt/e/f) when c.txt is a file: a workspace-relative message, nothing written."""
    (layout[0] / "c.txt").write_text("keep\n")
    for path in ("c.txt/d", "c.txt/e/f"):
        result = call(ctx, "write_file", path=path, content="x")
        assert not result.ok
        assert result.output == f"c.txt is a file, so {path} cannot be created"
        assert str(layout[0]) not in result.output
    (layout[0] / "sub").mkdir()
    (layout[0] / "sub" / "g.txt").write_text("")
    assert call(ctx, "write_file", path="sub/g.txt/h", content="x").output == (
        "sub/g.txt is a file, so sub/g.txt/h cannot be created"
    )
    assert (layout[0] / "c.txt").read_text() == "keep\n"
    # any other OS error names the path as the model gave it, relative to the workspace
    assert call(ctx, "read_file", path="c.txt/d").output == "read_file failed: Not a directory: c.txt/d"


@pytest.fixture
def source(layout: tuple[Path, Path]) -> Path:
    path = layout[0] / "m.py"
    path.write_text("def add(a, b):\n    return a - b\n\nx = 1\nx = 1\nx = 1\n")
    return path


def test_edit_of_an_unread_existing_file_is_refused(ctx: ToolContext, source: Path) -> None:
    """Editing a file this run never read, without a sha256, is refused and tells the model to read it first."""
    before = source.read_text()
    result = call(ctx, "edit_file", path="m.py", old_string="a - b", new_string="a + b")
    assert not result.ok
    assert "has not been read in this run" in result.output and "read_file it first" in result.output
    assert source.read_text() == before


def test_edit_with_the_right_sha256_needs_no_read(ctx: ToolContext, source: Path) -> None:
    """Passing the file's current sha256 stands in for a read."""
    result = call(
        ctx, "edit_file", path="m.py", old_string="a - b", new_string="a + b", sha256=sha(source.read_bytes())
    )
    assert result.ok
    assert "    return a + b\n" in source.read_text()


def test_stale_sha256_is_refused(ctx: ToolContext, source: Path) -> None:
    """A sha256 from before the file changed refuses the edit and leaves the file as it is."""
    assert call(ctx, "read_file", path="m.py").ok
    old_hash = ctx.read_hashes["m.py"]
    source.write_text(source.read_text() + "y = 2\n")
    changed = source.read_text()
    result = call(ctx, "edit_file", path="m.py", old_string="a - b", new_string="a + b", sha256=old_hash)
    assert not result.ok
    assert "changed since the sha256 you passed" in result.output
    assert sha(changed.encode()) in result.output
    assert source.read_text() == changed


def test_change_after_read_is_refused_without_sha256(ctx: ToolContext, source: Path) -> None:
    """A file changed (here by a bash command) after this run read it must be read again before an edit."""
    assert call(ctx, "read_file", path="m.py").ok
    assert call(ctx, "bash", command="echo '# touched' >> m.py").ok
    result = call(ctx, "edit_file", path="m.py", old_string="a - b", new_string="a + b")
    assert not result.ok and "read_file it again" in result.output
    assert call(ctx, "read_file", path="m.py").ok
    assert call(ctx, "edit_file", path="m.py", old_string="a - b", new_string="a + b").ok


def test_absent_and_ambiguous_old_string(ctx: ToolContext, source: Path) -> None:
    """An absent old_string and one found 3 times are refused, saying which; the file is unchanged."""
    before = source.read_text()
    assert call(ctx, "read_file", path="m.py").ok
    absent = call(ctx, "edit_file", path="m.py", old_string="a * b", new_string="a + b")
    assert not absent.ok and "was not found in m.py" in absent.output
    ambiguous = call(ctx, "edit_file", path="m.py", old_string="x = 1", new_string="x = 2")
    assert not ambiguous.ok and "appears 3 times in m.py" in ambiguous.output
    assert source.read_text() == before


def test_successful_edit_records_new_hash(ctx: ToolContext, source: Path) -> None:
    """An edit replaces exactly the one occurrence, reports its line, and a second edit needs no new read."""
    assert call(ctx, "read_file", path="m.py").ok
    first = call(ctx, "edit_file", path="m.py", old_string="a - b", new_string="a + b")
    assert first.ok and "at line 2" in first.output
    assert ctx.read_hashes["m.py"] == sha(source.read_bytes())
    assert first.output.endswith(sha(source.read_bytes()))
    assert call(ctx, "edit_file", path="m.py", old_string="def add", new_string="def plus").ok
    assert source.read_text() == "def plus(a, b):\n    return a + b\n\nx = 1\nx = 1\nx = 1\n"


def test_write_then_edit_without_read(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """A file this run wrote can be edited without reading it: the run knows its content."""
    assert call(ctx, "write_file", path="n.txt", content="alpha\r\nbeta\r\n").ok
    assert call(ctx, "edit_file", path="n.txt", old_string="beta", new_string="gamma").ok
    assert (layout[0] / "n.txt").read_bytes() == b"alpha\r\ngamma\r\n"


def test_edit_of_a_missing_file_says_to_write_it(ctx: ToolContext) -> None:
    """edit_file does not create files; the message points to write_file."""
    result = call(ctx, "edit_file", path="new.txt", old_string="a", new_string="b")
    assert not result.ok and "use write_file" in result.output


# --- list_dir, search, analyze ---------------------------------------------------------------------------------------


def test_list_dir_sorted_with_slashes(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """Entries are sorted, directories end with /, and a file or missing path is explained."""
    workspace, _ = layout
    (workspace / "b.txt").write_text("")
    (workspace / "a").mkdir()
    (workspace / "C.md").write_text("")
    assert call(ctx, "list_dir", path=".").output == "C.md\na/\nb.txt"
    assert call(ctx, "list_dir", path="a").output == "a: (empty directory)"
    assert "use read_file" in call(ctx, "list_dir", path="b.txt").output
    assert "directory not found" in call(ctx, "list_dir", path="zzz").output


def test_search_reports_path_line_text_and_skips_noise(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """Matches come as path:line: text in path order, lines counted as read_file counts them (CRLF and form
    feeds included); .git, node_modules and binary files are skipped."""
    workspace, _ = layout
    (workspace / "src").mkdir()
    (workspace / "src/b.py").write_bytes(b"x = 1\fstill line 1\r\nTODO: fix\r\n")
    (workspace / "a.txt").write_text("TODO first\n")
    for skipped in (".git", "node_modules"):
        (workspace / skipped).mkdir()
        (workspace / skipped / "f.txt").write_text("TODO hidden\n")
    (workspace / "bin.dat").write_bytes(b"TODO\0binary")
    result = call(ctx, "search", pattern=r"TODO\b.*$")
    assert result.output == "a.txt:1: TODO first\nsrc/b.py:2: TODO: fix"
    assert call(ctx, "search", pattern="TODO", path="src").output == "src/b.py:2: TODO: fix"
    assert call(ctx, "search", pattern="zzz").output == "no matches for 'zzz' in 2 text files under ."
    bad = call(ctx, "search", pattern="(")
    assert not bad.ok and "invalid regular expression" in bad.output


def test_search_says_which_files_were_too_large_to_search(
    ctx: ToolContext, layout: tuple[Path, Path]
) -> None:
    """A file over 1 MiB is not searched, and the result names it instead of answering a bare "no matches"."""
    (layout[0] / "build.log").write_text("ok\n" * 400_000 + "ERROR: disk full\n")
    (layout[0] / "small.txt").write_text("ERROR: small\n")
    alone = call(ctx, "search", pattern="ERROR", path="build.log")
    assert alone.output.startswith("no matches for 'ERROR' in 0 text files under build.log\n")
    assert "[not searched: 1 file over 1 MiB: build.log;" in alone.output
    both = call(ctx, "search", pattern="ERROR").output.split("\n")
    assert both[0] == "small.txt:1: ERROR: small"
    assert both[1].startswith("[not searched: 1 file over 1 MiB: build.log;")


def test_search_stops_at_the_match_limit(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """At most search_max_matches lines are returned, and the result says it stopped."""
    ctx.search_max_matches = 5
    (layout[0] / "many.txt").write_text("hit\n" * 50)
    lines = call(ctx, "search", pattern="hit").output.split("\n")
    assert lines[:5] == [f"many.txt:{i}: hit" for i in range(1, 6)]
    assert lines[5] == "[stopped after 5 matches; narrow the pattern or the path]"
    assert len(lines) == 6


def test_analyze_reports_syntax_errors(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """analyze names each file that does not compile with line and column, and counts the files checked."""
    workspace, _ = layout
    assert call(ctx, "analyze").output == "no Python files under ."
    (workspace / "ok.py").write_text("x = 1\n")
    assert call(ctx, "analyze").output == "no problems found in 1 Python files"
    (workspace / "pkg").mkdir()
    (workspace / "pkg/bad.py").write_text("def f(:\n    pass\n")
    result = call(ctx, "analyze")
    assert result.ok
    assert re.match(r"pkg/bad\.py:1:\d+: SyntaxError: ", result.output)
    assert result.output.endswith("1 problems in 2 Python files")
    assert call(ctx, "analyze", path="ok.py").output == "no problems found in 1 Python files"
    (workspace / "warn.py").write_text('import re\nPATTERN = "\\d+"\n')
    warned = call(ctx, "analyze", path="warn.py").output
    assert warned.startswith("warn.py:2:0: warning: invalid escape sequence")


# --- bash -----------------------------------------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def test_bash_returns_exit_code_and_merged_output(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """The command runs in the workspace; stdout and stderr arrive merged in order, with the exit code."""
    result = call(ctx, "bash", command="echo one; echo two >&2; echo three; pwd; exit 3")
    assert not result.ok and not result.timed_out
    assert result.output == f"exit code: 3\none\ntwo\nthree\n{os.path.realpath(layout[0])}\n"
    assert call(ctx, "bash", command="true").output == "exit code: 0\n(no output)"


def test_bash_stdin_is_empty(ctx: ToolContext) -> None:
    """A command that reads stdin gets end-of-file at once instead of hanging."""
    result = call(ctx, "bash", command="cat; echo done", timeout_ms=5000)
    assert result.ok and result.output == "exit code: 0\ndone\n"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_bash_timeout_kills_child_and_grandchild(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """At timeout_ms the whole process group dies (the backgrounded sleep too) and the call returns quickly."""
    started = time.monotonic()
    result = call(ctx, "bash", command="echo $$ > pgid; sleep 60 & echo $! > bg; sleep 60", timeout_ms=300)
    elapsed = time.monotonic() - started
    assert result.timed_out and not result.ok
    assert re.match(r"killed after \d+ ms: the command passed its timeout of 300 ms\n", result.output)
    assert 0.3 <= elapsed < SLACK_S  # killed at its timeout, not after the 60 s sleep
    pgid = int((layout[0] / "pgid").read_text())
    background = int((layout[0] / "bg").read_text())
    deadline = time.monotonic() + 2
    while (_alive(background) or _group_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(background)
    assert _group_members(pgid) == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_background_job_cannot_hang_the_call(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """A command that leaves a background process holding its output returns at once; the process is killed."""
    started = time.monotonic()
    result = call(ctx, "bash", command="sleep 60 & echo $! > bg; echo started", timeout_ms=30_000)
    assert time.monotonic() - started < SLACK_S  # neither the 30 s timeout nor the 60 s sleep
    assert result.ok and result.output.startswith("exit code: 0\nstarted\n")
    assert "left running in the background were stopped" in result.output  # the model is told
    background = int((layout[0] / "bg").read_text())
    deadline = time.monotonic() + 2
    while _alive(background) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(background)


def test_a_command_without_background_jobs_gets_no_note(ctx: ToolContext) -> None:
    """A command that leaves nothing running returns its exit code and output, with no note about jobs."""
    result = call(ctx, "bash", command="sleep 0.01 & wait; echo done")
    assert result.ok and result.output == "exit code: 0\ndone\n"


def test_deadline_kills_a_running_command(ctx: ToolContext) -> None:
    """When the run's deadline comes before the timeout, the command is killed then and says why."""
    ctx.deadline = time.monotonic() + 0.3
    started = time.monotonic()
    result = call(ctx, "bash", command="sleep 60")
    assert time.monotonic() - started < SLACK_S  # killed at the deadline, not after the 60 s sleep
    assert result.timed_out and "maxWallMs" in result.output
    late = call(ctx, "bash", command="echo should-not-run")
    assert late.timed_out and late.output.startswith("not run:") and "should-not-run" not in late.output


def test_long_output_keeps_head_and_tail_with_exact_cut(ctx: ToolContext) -> None:
    """Output past the limit keeps the first and last halves and says exactly how many characters were cut."""
    expected = "".join(f"{i}\n" for i in range(1, 20001))
    result = call(ctx, "bash", command="seq 1 20000")
    cut = len(expected) - 20_000
    assert (
        result.output
        == f"exit code: 0\n{expected[:10_000]}\n[... {cut} characters cut ...]\n{expected[-10_000:]}"
    )


def test_runaway_output_is_killed(ctx: ToolContext) -> None:
    """A command that floods its output past bash_max_output_bytes is killed and told to redirect."""
    ctx.bash_max_output_bytes = 200_000
    ctx.bash_output_limit_chars = 100
    started = time.monotonic()
    result = call(ctx, "bash", command="yes", timeout_ms=20_000)
    assert time.monotonic() - started < 5
    assert not result.ok
    assert result.output.startswith("killed: the output passed 200000 bytes")
    assert re.search(r"\[\.\.\. \d+ characters cut \.\.\.\]", result.output)


def test_cut_count_is_exact_without_decoding_everything() -> None:
    """Past the decode threshold, the characters between head and tail are counted exactly (UTF-8 aware)."""
    text = "a" * 100 + "é" * 5000 + "b" * 100
    with tempfile.TemporaryFile() as file:
        file.write(text.encode())
        kept = read_output(file, 100, 900)
    assert kept == "a" * 50 + f"\n[... {len(text) - 100} characters cut ...]\n" + "b" * 50


def test_bash_environment_has_no_secrets(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """By default the provider's key and other secret-looking variables are not visible to commands."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("ALISIO_HARMLESS", "visible")
    fresh = ToolContext(workspace=tmp_path)
    output = call(fresh, "bash", command="env").output
    assert "sk-should-not-leak" not in output
    assert "ALISIO_HARMLESS=visible" in output
    assert "GIT_PAGER=cat" in output


def test_read_file_turn_is_cheap(ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    """A read_file call of a small file costs well under the 2 ms per-turn harness budget."""
    (layout[0] / "f.py").write_text("x = 1\n" * 200)
    calls = [ToolCall(id=str(i), name="read_file", arguments='{"path": "f.py"}') for i in range(300)]
    started = time.process_time()  # CPU time: what a call costs, not how busy the machine is
    for tool_call in calls:
        execute_tool(tool_call, ctx)
    per_call_ms = (time.process_time() - started) * 1000 / len(calls)
    assert per_call_ms < 2.0


# --- fetch_url ---------------------------------------------------------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: ClassVar[dict[str, tuple[int, str, bytes]]] = {
        "/text": (200, "text/plain; charset=utf-8", "héllo from the server\n".encode()),
        "/json": (200, "application/json", b'{"a": 1}'),
        "/image": (200, "image/png", b"\x89PNG\r\n\x1a\n\0\0"),
        "/missing": (404, "text/plain", b"no such page"),
        "/big": (200, "text/plain", b"z" * 50_000),
    }

    def do_GET(self) -> None:
        if self.path == "/slow":
            self.server.closing.wait(60)  # type: ignore[attr-defined]  # a QuietServer: ends at its close
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/text")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        status, content_type, body = self.routes.get(self.path, (200, "text/plain", b"slow"))
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serving(QuietServer(_Handler)) as httpd:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"


def test_fetch_text_and_json(ctx: ToolContext, server: str) -> None:
    """A text or JSON response comes back with status, content type, final URL and the decoded body."""
    text = call(ctx, "fetch_url", url=f"{server}/redirect")
    assert text.ok
    assert text.output == (
        f"status: 200\ncontent-type: text/plain; charset=utf-8\nurl: {server}/text\n---\nhéllo from the server\n"
    )
    assert call(ctx, "fetch_url", url=f"{server}/json").output.endswith('---\n{"a": 1}')


def test_fetch_reads_at_most_max_bytes_through_an_injected_transport() -> None:
    """fetch_text over an httpx.MockTransport: a long text body is cut at max_bytes and says so."""
    import httpx

    from alisio.shell.harness.tools.fetch import fetch_text

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/plain"}, content=b"x" * 5000)

    result = fetch_text(
        "https://example.test/big", timeout_s=5, max_bytes=100, transport=httpx.MockTransport(handler)
    )
    assert result.ok
    assert result.output == (
        "status: 200\ncontent-type: text/plain\nurl: https://example.test/big\n---\n"
        + "x" * 100
        + "\n[cut: only the first 100 bytes were read]"
    )


def test_fetch_refusals_and_failures(ctx: ToolContext, server: str) -> None:
    """Binary content, a 404, a non-http URL, a refused connection and a timeout are each a clear tool error."""
    image = call(ctx, "fetch_url", url=f"{server}/image")
    assert not image.ok and "image/png, which is not text" in image.output
    missing = call(ctx, "fetch_url", url=f"{server}/missing")
    assert not missing.ok and missing.output.startswith("status: 404") and "no such page" in missing.output
    assert "not an http:// or https:// URL" in call(ctx, "fetch_url", url="file:///etc/passwd").output
    with socket.socket() as probe:  # a port bound (so no other test takes it) that nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = call(ctx, "fetch_url", url=f"http://127.0.0.1:{probe.getsockname()[1]}/")
    assert not closed.ok and "failed" in closed.output
    ctx.fetch_timeout_s = 0.3
    started = time.monotonic()
    slow = call(ctx, "fetch_url", url=f"{server}/slow")
    assert time.monotonic() - started < SLACK_S  # the server would answer after 60 s
    assert not slow.ok and "timed out after 0.3 s" in slow.output


def test_fetch_body_is_capped(ctx: ToolContext, server: str) -> None:
    """Only fetch_max_bytes of the body are read, and the result says so."""
    ctx.fetch_max_bytes = 1000
    result = call(ctx, "fetch_url", url=f"{server}/big")
    assert result.ok
    body = result.output.split("---\n", 1)[1]
    assert body == "z" * 1000 + "\n[cut: only the first 1000 bytes were read]"
