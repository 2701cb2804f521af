"""alisio.shell.lab.suites and ``alisio eval validate`` on real suite directories (temp dirs, real symlinks)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Success

from alisio.core.lab.suites.suite import violations
from alisio.shell.cli.main import run_cli
from alisio.shell.lab.suites import discover_suites, load_suite

ALISIO = Path(sys.executable).with_name("alisio")
REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "suites" / "example"


def task(task_id: str = "t", **changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "id": task_id,
        "prompt": "Do the thing.",
        "fixture": f"fixtures/{task_id}",
        "budget": {"maxTurns": 5, "maxWallMs": 60000},
        "policy": {"mode": "auto", "allow": ["write"]},
        "verifiers": [{"kind": "file-contains", "id": "has", "path": "a.txt", "text": "done"}],
    }
    value.update(changes)
    return value


def write_suite(directory: Path, *tasks: dict[str, Any], raw: bytes | None = None, **top: Any) -> Path:
    """A suite directory with one fixture dir (holding a.txt) per task."""
    directory.mkdir(parents=True, exist_ok=True)
    tasks = tasks or (task(),)
    document = {"schemaVersion": 1, "suiteId": directory.name, "suiteVersion": "1.0.0", "description": "d"}
    document |= {"tasks": list(tasks), **top}
    for item in tasks:
        fixture = directory / str(item.get("fixture", "x"))
        if ".." not in fixture.parts and not fixture.exists():
            fixture.mkdir(parents=True)
            (fixture / "a.txt").write_text("todo\n")
    (directory / "suite.json").write_bytes(
        raw if raw is not None else json.dumps(document, indent=2).encode()
    )
    return directory


def validate(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[str]]:
    code = run_cli(["eval", "validate", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err.splitlines()


def test_the_example_suite_validates(capsys: pytest.CaptureFixture[str]) -> None:
    """suites/example is valid: one ok line with id, version and task count, exit 0."""
    code, out, err = validate(str(EXAMPLE), capsys=capsys)
    assert (code, err) == (0, [])
    assert out == f"ok example 1.0.0 (1 task) {EXAMPLE}\n"


def test_the_example_check_fails_on_the_bug_and_passes_once_fixed(tmp_path: Path) -> None:
    """check.py exits 1 on the shipped fixture and 0 after add is fixed, writing no __pycache__."""
    fixture = shutil.copytree(EXAMPLE / "fixtures" / "fix-add", tmp_path / "fix-add")
    run = subprocess.run(
        [sys.executable, "check.py"], cwd=fixture, capture_output=True, text=True, timeout=30
    )
    assert run.returncode == 1
    assert "add(2, 3) = -1, expected 5" in run.stdout
    calc = fixture / "src" / "calc.py"
    calc.write_text(calc.read_text().replace("return a - b", "return a + b"))
    run = subprocess.run(
        [sys.executable, "check.py"], cwd=fixture, capture_output=True, text=True, timeout=30
    )
    assert (run.returncode, run.stdout) == (0, "ok\n")
    assert not (fixture / "src" / "__pycache__").exists()


def test_an_unknown_field_typo_is_named_with_a_suggestion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'maxTurn' instead of 'maxTurns': both the unknown field and the missing one are reported."""
    suite = write_suite(tmp_path / "s", task("fix-add", budget={"maxTurn": 30, "maxWallMs": 1000}))
    code, out, err = validate(str(suite), capsys=capsys)
    source = suite / "suite.json"
    assert (code, out) == (1, "")
    assert err == [
        f"{source}: task fix-add: budget.maxTurn: unknown field (did you mean maxTurns?)",
        f"{source}: task fix-add: budget.maxTurns: required",
    ]


def test_duplicate_task_and_verifier_ids_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A repeated task id names the index; a repeated verifier id names the task and the verifier."""
    check = {"kind": "file-absent", "id": "check", "path": "b.txt"}
    suite = write_suite(tmp_path / "s", task("a"), task("b", verifiers=[check, check]), task("a"))
    code, _, err = validate(str(suite), capsys=capsys)
    source = suite / "suite.json"
    assert code == 1
    assert err == [
        f'{source}: task b: verifiers[1].id: duplicate verifier id "check"',
        f'{source}: tasks[2].id: duplicate task id "a"',
    ]


def test_a_repeated_key_is_refused_naming_the_task_and_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """maxTurns written twice (5, then 500) is refused, not run with the last one; a repeated suiteId too."""
    suite = write_suite(tmp_path / "s")
    text = (suite / "suite.json").read_text()
    text = text.replace('"maxTurns": 5,', '"maxTurns": 5, "maxTurns": 500,', 1)
    text = text.replace('"suiteId": "s",', '"suiteId": "s", "suiteId": "other",', 1)
    (suite / "suite.json").write_text(text)
    code, out, err = validate(str(suite), capsys=capsys)
    source = suite / "suite.json"
    assert (code, out) == (1, "")
    assert err == [
        f"{source}: suiteId: duplicate key (only one value may be given)",
        f"{source}: task t: budget.maxTurns: duplicate key (only one value may be given)",
    ]


def test_a_bad_regex_in_replay_normalize_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An invalid replayNormalize pattern names the task, the rule index and the regex error; so does one
    that needs backtracking (it could hang eval record); a nested quantifier is fine (RE2 never backtracks)."""
    rules = [
        {"pattern": r"\d+", "replace": "<N>"},
        {"pattern": "([a-z]", "replace": "x"},
        {"pattern": r"(\w+)=\1", "replace": "x"},
        {"pattern": r"pid (?=\d)", "replace": "x"},
        {"pattern": r"^(a+)+$", "replace": "x"},
    ]
    suite = write_suite(tmp_path / "s", task(replayNormalize=rules))
    code, _, err = validate(str(suite), capsys=capsys)
    source = suite / "suite.json"
    assert code == 1
    assert err == [
        f"{source}: task t: replayNormalize[1].pattern: invalid regular expression: missing ): ([a-z]",
        f"{source}: task t: replayNormalize[2].pattern: invalid regular expression: a backreference is not "
        "supported (it needs backtracking, which cannot be bounded): invalid escape sequence: \\1",
        f"{source}: task t: replayNormalize[3].pattern: invalid regular expression: lookahead is not "
        "supported (it needs backtracking, which cannot be bounded): invalid perl operator: (?=",
    ]


def test_a_symlink_escaping_a_fixture_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A symlink inside a fixture pointing outside the suite is an error naming the link."""
    outside = tmp_path / "outside"
    outside.mkdir()
    suite = write_suite(tmp_path / "s")
    (suite / "fixtures" / "t" / "secrets").symlink_to(outside)
    code, _, err = validate(str(suite), capsys=capsys)
    assert code == 1
    assert err == [
        f'{suite / "suite.json"}: task t: fixture: "fixtures/t/secrets" is a symlink that escapes the task directory'
    ]


def test_a_symlink_from_one_fixture_into_another_escapes_the_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Inside the suite is not enough: a fixture's links must stay inside that fixture."""
    suite = write_suite(tmp_path / "s", task("a"), task("b"))
    (suite / "fixtures" / "a" / "peek").symlink_to(suite / "fixtures" / "b" / "a.txt")
    code, _, err = validate(str(suite), capsys=capsys)
    assert code == 1
    assert err == [
        f'{suite / "suite.json"}: task a: fixture: "fixtures/a/peek" is a symlink that escapes the task directory'
    ]


def test_a_fixture_that_is_a_symlink_out_of_the_suite_is_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fixture directory itself may not resolve outside the suite."""
    outside = tmp_path / "outside"
    outside.mkdir()
    suite = write_suite(tmp_path / "s", task(fixture="fixtures/elsewhere"))
    shutil.rmtree(suite / "fixtures" / "elsewhere")
    (suite / "fixtures" / "elsewhere").symlink_to(outside)
    code, _, err = validate(str(suite), capsys=capsys)
    assert code == 1
    assert err == [f"{suite / 'suite.json'}: task t: fixture: escapes the suite directory through a symlink"]


def test_symlinks_that_stay_inside_are_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A link inside a fixture to a file of the same fixture, and a fixture linked within the suite, are fine."""
    suite = write_suite(tmp_path / "s", task("a"), task("b", fixture="fixtures/alias"))
    (suite / "fixtures" / "a" / "same").symlink_to("a.txt")
    shutil.rmtree(suite / "fixtures" / "alias")
    (suite / "fixtures" / "alias").symlink_to("a", target_is_directory=True)
    code, out, err = validate(str(suite), capsys=capsys)
    assert (code, err) == (0, [])
    assert out == f"ok s 1.0.0 (2 tasks) {suite}\n"


def test_paths_with_dotdot_or_absolute_are_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """fixture and verifier paths must be relative without '..' (even one that stays inside); each bad one is
    reported at its field, and only a path that climbs out is said to escape."""
    verifiers = [
        {"kind": "tree-diff-within", "id": "scope", "allowed": ["src/", "../up.txt", "src/../x.py"]},
        {"kind": "file-equals", "id": "eq", "path": "/etc/passwd", "sha256": "0" * 64},
    ]
    suite = write_suite(tmp_path / "s", task("fix-add", verifiers=verifiers, fixture="../fix-add"))
    code, _, err = validate(str(suite), capsys=capsys)
    source = suite / "suite.json"
    assert code == 1
    assert err == [
        f"{source}: task fix-add: fixture: path escapes the suite directory (a .. segment)",
        f"{source}: task fix-add: verifiers[0].allowed[1]: path escapes the task directory (a .. segment)",
        f"{source}: task fix-add: verifiers[0].allowed[2]: contains a .. segment (not allowed, even inside the "
        "task directory; write the path without ..)",
        f"{source}: task fix-add: verifiers[1].path: absolute path (paths are relative to the task directory)",
    ]


def test_a_missing_fixture_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fixture directory that does not exist is an error at load time."""
    suite = write_suite(tmp_path / "s")
    shutil.rmtree(suite / "fixtures" / "t")
    code, _, err = validate(str(suite), capsys=capsys)
    assert (code, err) == (1, [f'{suite / "suite.json"}: task t: fixture: "fixtures/t" does not exist'])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"schemaVersion": 1,', "not valid JSON: input data was truncated"),
        (b'{"suiteId": "\xff"}', "not valid UTF-8 (byte 13)"),
        (b"[1, 2]", "a suite.json must hold a JSON object"),
    ],
)
def test_unreadable_content_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    """Not JSON, not UTF-8, not an object: exactly one line, naming the file."""
    suite = write_suite(tmp_path / "s", raw=content)
    code, _, err = validate(str(suite), capsys=capsys)
    assert (code, err) == (1, [f"{suite / 'suite.json'}: {message}"])


def test_a_suite_json_that_cannot_be_read_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A suite.json that is a directory cannot be read: one line, no traceback."""
    (tmp_path / "s" / "suite.json").mkdir(parents=True)
    code, _, err = validate(str(tmp_path / "s"), capsys=capsys)
    assert (code, err) == (1, [f"{tmp_path / 's' / 'suite.json'}: cannot read: Is a directory"])


def test_a_path_without_suites_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A directory with no suite.json anywhere, or a path that does not exist, exits 1 with one line."""
    code, _, err = validate(str(tmp_path), capsys=capsys)
    assert (code, err) == (1, [f"{tmp_path}: no suite.json here or in its immediate sub-directories"])
    code, _, err = validate(str(tmp_path / "nope"), capsys=capsys)
    assert (code, err) == (
        1,
        [f"{tmp_path / 'nope'}: cannot read: No such file or directory"],
    )


def test_a_directory_of_suites_lists_each_and_a_broken_one_does_not_hide_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Validating a directory of suites reports every suite; one broken suite makes the exit 1."""
    write_suite(tmp_path / "good")
    write_suite(tmp_path / "bad", suiteVersion="1.2")
    (tmp_path / "not-a-suite").mkdir()
    code, out, err = validate(str(tmp_path), capsys=capsys)
    assert code == 1
    assert out == f"ok good 1.0.0 (1 task) {tmp_path / 'good'}\n"
    assert err == [
        f'{tmp_path / "bad" / "suite.json"}: suiteVersion: "1.2" is not semver (MAJOR.MINOR.PATCH, as in 1.0.0 or 2.1.0-rc.1)'
    ]
    entries = discover_suites(tmp_path)
    assert [entry.directory.name for entry in entries] == ["bad", "good"]
    assert [type(entry.result) for entry in entries] == [Failure, Success]


def test_json_output_holds_every_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--json prints one document on stdout: validity, ids, task counts, content hashes and errors."""
    write_suite(tmp_path / "good", task("a"), task("b"))
    write_suite(tmp_path / "bad", task(policy={"mode": "auto", "allow": ["netwrok"]}))
    code, out, err = validate(str(tmp_path), "--json", capsys=capsys)
    document = json.loads(out)
    assert code == 1
    bad, good = document["suites"]
    assert document["valid"] is False
    assert good["valid"] is True
    assert (good["suiteId"], good["suiteVersion"], good["tasks"]) == ("good", "1.0.0", 2)
    assert len(good["contentHash"]) == 64
    message = (
        'task t: policy.allow[0]: unknown effect "netwrok" (expected write, process, external or analysis)'
    )
    assert bad["errors"] == [message]
    assert err == [f"{bad['source']}: {message}"]


def test_the_content_hash_follows_fixture_files_not_metadata(tmp_path: Path) -> None:
    """Editing a fixture file changes the content hash; editing the description does not."""
    suite = write_suite(tmp_path / "s")
    first = load_suite(suite).unwrap().content_hash
    assert load_suite(suite / "suite.json").unwrap().content_hash == first
    document = json.loads((suite / "suite.json").read_text())
    (suite / "suite.json").write_text(json.dumps({**document, "description": "other words"}))
    assert load_suite(suite).unwrap().content_hash == first
    (suite / "fixtures" / "t" / "a.txt").write_text("changed\n")
    assert load_suite(suite).unwrap().content_hash != first
    (suite / "fixtures" / "t" / "new.txt").write_text("")
    assert len({first, load_suite(suite).unwrap().content_hash}) == 2


def test_all_violations_of_a_broken_suite_are_listed(tmp_path: Path) -> None:
    """load_suite reports every violation, listable one per line with violations()."""
    broken = task(
        "x",
        budget={"maxTurns": 0},
        verifiers=[{"kind": "command", "id": "c", "command": ["python3"], "timeoutMs": 700000}],
    )
    error = load_suite(write_suite(tmp_path / "s", broken)).failure()
    assert violations(error) == (
        "task x: budget.maxTurns: at least 1",
        "task x: budget.maxWallMs: required",
        "task x: verifiers[0].timeoutMs: at most 600000",
    )


def test_the_installed_command_exits_1_with_the_error_on_stderr(tmp_path: Path) -> None:
    """Through the installed alisio: invalid suite -> exit 1, the violation on stderr, nothing on stdout."""
    suite = write_suite(tmp_path / "s", task(policy={"mode": "yolo"}))
    run = subprocess.run(
        [str(ALISIO), "eval", "validate", str(suite), str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1
    assert run.stdout == f"ok example 1.0.0 (1 task) {EXAMPLE}\n"
    assert (
        run.stderr
        == f'{suite / "suite.json"}: task t: policy.mode: unknown mode "yolo" (expected ask, auto or full)\n'
    )
    assert "Traceback" not in run.stderr


def test_absurd_budgets_are_rejected_before_they_reach_a_timer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """maxWallMs above 2**31 - 1 and counts above 2**53 - 1 are violations, not a crash mid-run."""
    budget = {"maxTurns": 10**36, "maxWallMs": 2**31, "maxTokens": 2**53, "maxToolCalls": 2**53 - 1}
    rule = {"type": "max-calls", "tool": "bash", "max": 10**20}
    verifiers = [{"kind": "tool-sequence", "id": "seq", "rules": [rule]}]
    suite = write_suite(tmp_path / "s", task("t", budget=budget, verifiers=verifiers))
    code, _, err = validate(str(suite), capsys=capsys)
    source = suite / "suite.json"
    assert code == 1
    assert f"{source}: task t: budget.maxTurns: at most 9007199254740991" in err
    assert f"{source}: task t: budget.maxWallMs: at most 2147483647" in err
    assert f"{source}: task t: budget.maxTokens: at most 9007199254740991" in err
    assert f"{source}: task t: verifiers[0].rules[0].max: at most 9007199254740991" in err
    assert not any("maxToolCalls" in line for line in err)


def test_malformed_documents_are_one_line_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A JSON array, deep nesting and an out-of-range float: exit 1, one line naming the file, no traceback."""
    cases = {
        "array": (b"[1, 2]", "a suite.json must hold a JSON object"),
        "deep": (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
        "bigfloat": (b'{"schemaVersion": 1e400}', "not valid JSON"),
    }
    for name, (raw, what) in cases.items():
        suite = write_suite(tmp_path / name, raw=raw)
        code, out, err = validate(str(suite), capsys=capsys)
        assert (code, out) == (1, ""), name
        assert len(err) == 1 and str(suite / "suite.json") in err[0] and what in err[0], (name, err)


def test_a_utf8_bom_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Editors on Windows save a BOM: the suite still validates, with the same content hash as without it."""
    plain = write_suite(tmp_path / "plain")
    bom = write_suite(tmp_path / "bom", raw=b"\xef\xbb\xbf" + (plain / "suite.json").read_bytes())
    code, out, _ = validate(str(bom), capsys=capsys)
    assert code == 0 and out.startswith("ok plain 1.0.0")
    hashes = [load_suite(d).map(lambda loaded: loaded.content_hash) for d in (plain, bom)]
    assert isinstance(hashes[0], Success) and hashes[0] == hashes[1]


# --- hostile file systems (issue 9) ----------------------------------------------------------------------


def undecodable(directory: Path, name: bytes, *, folder: bool = False) -> Path:
    """Create a file (or directory) whose name is ``name``, bytes that are not UTF-8 (skip where the file
    system refuses such names)."""
    path = Path(os.fsdecode(bytes(directory) + b"/" + name))
    try:
        path.mkdir() if folder else path.write_text("x\n")
    except OSError as error:
        pytest.skip(f"this file system refuses names that are not UTF-8: {error}")
    return path


def test_a_fixture_file_name_that_is_not_utf8_is_a_suite_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate: exit 1, one line naming the file with the bad bytes escaped; --json still prints."""
    suite = write_suite(tmp_path / "s")
    undecodable(suite / "fixtures" / "t", b"bad\xff\xfename.txt")
    code, out, err = validate(str(suite), capsys=capsys)
    assert (code, out) == (1, "")
    assert err == [
        f"{suite / 'suite.json'}: task t: fixture: fixtures/t/bad\\xff\\xfename.txt: the name is not valid "
        "UTF-8 (rename it; undecodable bytes shown as \\xNN)"
    ]
    code, out, _ = validate(str(suite), "--json", capsys=capsys)
    assert code == 1 and json.loads(out)["valid"] is False


def test_a_directory_with_a_bad_name_is_reported_once_not_walked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A directory named with bad bytes is one problem; the files below it are not listed one by one."""
    suite = write_suite(tmp_path / "s")
    folder = undecodable(suite / "fixtures" / "t", b"dir\x80", folder=True)
    for index in range(3):
        (folder / f"inner{index}.txt").write_text("x")
    code, _, err = validate(str(suite), capsys=capsys)
    assert code == 1
    assert [line.split(": ")[3] for line in err] == ["fixtures/t/dir\\x80"]


def test_eval_list_shows_the_suite_with_a_bad_name_as_invalid_and_lists_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One suite with an undecodable fixture name, another in a directory with one: list exits 0, the
    first is invalid, the second listed with its path escaped, in text and in JSON."""
    write_suite(tmp_path / "good")
    bad = write_suite(tmp_path / "bad")
    undecodable(bad / "fixtures" / "t", b"\xff")
    oddly_named = undecodable(tmp_path, b"odd\xfe", folder=True)
    write_suite(oddly_named, suiteId="odd")
    assert run_cli(["eval", "list", "--suite-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert (
        f"bad  invalid: {bad / 'suite.json'}: task t: fixture: fixtures/t/\\xff: the name is not valid UTF-8"
        in ("\n".join(lines))
    )
    assert f"good  1.0.0  1 task  d  ({tmp_path / 'good'})" in lines
    assert f"odd  1.0.0  1 task  d  ({tmp_path}/odd\\xfe)" in lines
    assert run_cli(["eval", "list", "--suite-dir", str(tmp_path), "--json"]) == 0
    rows = {row["path"]: row["valid"] for row in json.loads(capsys.readouterr().out)["suites"]}
    assert (rows[str(bad)], rows[str(tmp_path / "good")], rows[f"{tmp_path}/odd\\xfe"]) == (False, True, True)


def test_eval_run_refuses_a_suite_with_a_bad_name_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """eval run: exit 1, the same one line, no traceback, no report directory."""
    monkeypatch.setenv("ALISIO_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ALISIO_DATA_HOME", str(tmp_path / "data"))
    suite = write_suite(tmp_path / "suites" / "s")
    undecodable(suite / "fixtures" / "t", b"\xc3")
    code = run_cli(["eval", "run", "s", "--suite-dir", str(suite.parent), "--yes", "--allow-write"])
    err = capsys.readouterr().err
    assert code == 1
    assert "task t: fixture: fixtures/t/\\xc3: the name is not valid UTF-8" in err
    assert "Traceback" not in err and not (tmp_path / "data").exists()


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "oversized"])
def test_a_suite_json_that_is_not_a_bounded_regular_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """A FIFO (which would block), a link to /dev/zero (endless) and a 17 MiB file: one line, exit 1."""
    suite = write_suite(tmp_path / "s")
    target = suite / "suite.json"
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dev-zero":
        target.symlink_to("/dev/zero")
    else:
        with target.open("wb") as file:
            file.truncate(17 << 20)
    code, _, err = validate(str(suite), capsys=capsys)
    what = "larger than 16 MiB (the limit of a suite.json)" if kind == "oversized" else "not a regular file"
    assert code == 1 and len(err) == 1 and err[0].startswith(f"{target}: {what}")


def test_a_large_fixture_file_is_hashed_in_bounded_memory(tmp_path: Path) -> None:
    """validate (and run, which loads suites the same way) on a fixture with a 256 MiB sparse file: the
    process peaks no more than a few MiB above the same suite without the file (it read the whole file at once
    before). Measured against that baseline, not a fixed figure: the interpreter and its imports alone weigh
    differently from one machine to the next."""

    def peak_mib(suite: Path) -> float:
        with subprocess.Popen(
            [str(ALISIO), "eval", "validate", str(suite)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ) as process:
            _, status, usage = os.wait4(process.pid, 0)  # the rusage of this child alone
            process.returncode = os.waitstatus_to_exitcode(status)
        assert process.returncode == 0
        return usage.ru_maxrss / 1024  # kilobytes on Linux

    suite = write_suite(tmp_path / "s")
    baseline = peak_mib(suite)
    with (suite / "fixtures" / "t" / "big.bin").open("wb") as file:
        file.truncate(256 << 20)
    peak = peak_mib(suite)
    assert peak - baseline < 32, (
        f"eval validate peaked {peak - baseline:.0f} MiB higher with a 256 MiB fixture file"
    )


def test_a_fixture_holding_a_fifo_or_a_socket_is_refused_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A FIFO or a socket in a fixture could not be copied into a run's workspace (every run ended error
    ``fixture_copy`` while validate said ok): validate and eval run name each entry, and nothing runs."""
    monkeypatch.setenv("ALISIO_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ALISIO_DATA_HOME", str(tmp_path / "data"))
    suite = write_suite(tmp_path / "suites" / "s")
    os.mkfifo(suite / "fixtures" / "t" / "pipe")
    monkeypatch.chdir(
        suite / "fixtures" / "t"
    )  # a socket path is limited to 108 bytes: bind it by a short one
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind("sock")
        monkeypatch.chdir(tmp_path)
        code, _, err = validate(str(suite), capsys=capsys)
        assert code == 1
        tail = ": a fixture holds only directories, regular files and symlinks (a run could not copy it)"
        assert err == [
            f'{suite / "suite.json"}: task t: fixture: "fixtures/t/pipe" is a FIFO (named pipe){tail}',
            f'{suite / "suite.json"}: task t: fixture: "fixtures/t/sock" is a socket{tail}',
        ]
        code = run_cli(["eval", "run", "s", "--suite-dir", str(suite.parent), "--yes", "--allow-write"])
        err_lines = capsys.readouterr().err.splitlines()
    assert code == 1
    assert err_lines[0].endswith('task t: fixture: "fixtures/t/pipe" is a FIFO (named pipe)' + tail)
    assert not (tmp_path / "data").exists()
