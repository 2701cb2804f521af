"""Record and replay end to end through the installed ``alisio``: ``eval record`` with the scripted provider,
``eval run --mode replay``, divergences (exit 2), secrets and size limits refused, and ``eval ci``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from alisio.core.agents.cassette import AgentCassetteHeader
from alisio.core.lab.reports.report import Report
from alisio.core.lab.runs.records import RunRecord, RunStatus
from alisio.core.replay.cassette import decode_cassette
from tests.integration import helpers
from tests.integration.helpers import FIX, NOOP, make_suite, task

ALISIO = Path(sys.executable).with_name("alisio")
RECORD = msgspec.json.Decoder(RunRecord)
REPORT = msgspec.json.Decoder(Report)
CHECKOUT_SUITES = Path(__file__).resolve().parents[3] / "suites"

STAMP = (
    'python3 -c "import datetime; '
    "print('now', datetime.datetime.now(datetime.UTC).isoformat(timespec='microseconds')[:26] + 'Z')\""
)
TIMESTAMP_RULE = {"pattern": r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z", "replace": "<TIMESTAMP>"}
STAMP_THEN_FIX: dict[str, Any] = {
    "turns": [{"toolCalls": [{"name": "bash", "arguments": {"command": STAMP}}]}, *FIX["turns"]]
}
# A key shape with a digit, as secrets.py's openai-key needs; not a real key.
FAKE_KEY = "sk-proj-" + "Zq7" * 10


def alisio(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command with an empty configuration, no key, no terminal and its own TMPDIR.

    ``eval ci`` without ``--out`` keeps its reports in a new temporary directory: under ``home/tmp`` it goes
    away with the test's tmp_path instead of piling up in /tmp.
    """
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    return helpers.alisio(home, *args, env={"TMPDIR": str(home / "tmp"), **(env or {})})


def record(
    home: Path, suite: Path, script: dict[str, Any], *args: str, **kw: Any
) -> subprocess.CompletedProcess[str]:
    """``alisio eval record calc-suite`` with ``script`` for every task."""
    path = home / "script.json"
    path.write_text(json.dumps(script))
    return alisio(
        home, "eval", "record", "calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write",
        "--allow-process", "--script", str(path), *args, **kw,
    )  # fmt: skip


def replay(home: Path, suite: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``alisio eval run calc-suite --mode replay --out OUT``."""
    return alisio(
        home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--mode", "replay",
        "--allow-write", "--allow-process", "--out", str(out), *args,
    )  # fmt: skip


def runs(directory: Path) -> list[RunRecord]:
    return [RECORD.decode(line) for line in (directory / "runs.jsonl").read_bytes().splitlines()]


def process_task(task_id: str, **overrides: Any) -> dict[str, Any]:
    return task(task_id, policy={"mode": "auto", "allow": ["write", "process"]}, **overrides)


# --- record, then replay ---------------------------------------------------------------------------------


def test_record_then_replay_passes_with_the_same_numbers(home: Path) -> None:
    """A recorded fix replays to pass with the live run's turns, tool calls and tokens; the report says replay."""
    suite = make_suite(home)
    recorded = record(home, suite, FIX)
    assert recorded.returncode == 0, recorded.stderr
    cassette = suite / "cassettes" / "fix-add.jsonl"
    assert f"wrote {cassette} (3 calls," in recorded.stderr
    header = decode_cassette(cassette.read_bytes(), str(cassette)).unwrap().header
    assert (header.suite_id, header.task_id, header.model, header.provider) == (
        "calc-suite",
        "fix-add",
        "scripted",
        "scripted",
    )
    script = home / "script.json"
    live = alisio(
        home, "eval", "run", "calc-suite", "--suite-dir", str(suite), "--yes", "--allow-write", "--k", "1",
        "--script", str(script), "--out", str(home / "live"),
    )  # fmt: skip
    assert live.returncode == 0, live.stderr
    result = replay(home, suite, home / "replay")
    assert result.returncode == 0, result.stderr
    (live_run,) = runs(home / "live")
    (replayed,) = runs(home / "replay")
    assert replayed.status is RunStatus.PASS and replayed.divergence is None
    strip = {"wall_ms": 0, "started_at": None}
    assert msgspec.structs.replace(replayed.measured, **strip) == msgspec.structs.replace(
        live_run.measured, **strip
    )
    assert (replayed.measured.turns, replayed.measured.tool_calls, replayed.measured.input_tokens) == (
        3,
        2,
        350,
    )
    report = REPORT.decode((home / "replay" / "report.json").read_bytes())
    assert (report.conditions.mode, report.conditions.k, report.conditions.provider) == (
        "replay",
        1,
        "scripted",
    )
    assert "Replay measures the harness, not the model" in (home / "replay" / "report.md").read_text()
    assert "configuration hash" not in result.stderr


def test_two_recordings_are_byte_identical(home: Path) -> None:
    """Recording the same task twice (different temporary workspaces, a timestamp normalised) gives equal bytes."""
    suite = make_suite(home, process_task("fix-add", replayNormalize=[TIMESTAMP_RULE]))
    first = record(home, suite, STAMP_THEN_FIX, "--cassette-dir", str(home / "a"))
    second = record(home, suite, STAMP_THEN_FIX, "--cassette-dir", str(home / "b"))
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    data = (home / "a" / "fix-add.jsonl").read_bytes()
    assert data == (home / "b" / "fix-add.jsonl").read_bytes()
    assert b"<TIMESTAMP>" in data and str(home).encode() not in data


def test_the_bundled_cassettes_rerecord_byte_identical(tmp_path: Path) -> None:
    """``make record-bundled`` (alisio.shell.cli.record_bundled) reproduces one committed cassette byte for byte."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "alisio.shell.cli.record_bundled",
            "--tasks",
            "tool-sequences/move-file",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    committed = CHECKOUT_SUITES / "tool-sequences" / "cassettes" / "move-file.jsonl"
    assert (tmp_path / "tool-sequences" / "move-file.jsonl").read_bytes() == committed.read_bytes()
    assert [p.name for p in tmp_path.rglob("*.jsonl")] == ["move-file.jsonl"]


def test_a_recorded_run_that_fails_is_recorded_with_a_warning(home: Path) -> None:
    """A script that fixes nothing: the cassette is written, stderr warns that the recorded run ended fail."""
    suite = make_suite(home)
    result = record(home, suite, NOOP)
    assert result.returncode == 0, result.stderr
    assert (suite / "cassettes" / "fix-add.jsonl").exists()
    assert "warning: task fix-add: the recorded run ended fail" in result.stderr


# --- divergence ------------------------------------------------------------------------------------------


def test_a_changed_fixture_diverges_at_the_tool_result(home: Path) -> None:
    """The file read returns other text: error replay_divergence at messages[2].tool.result, report written, exit 2;
    the first difference is the file's hash, so the lines that changed are shown too (stderr, report.md)."""
    suite = make_suite(home)
    assert record(home, suite, FIX).returncode == 0
    (suite / "fixtures" / "calc" / "src" / "calc.py").write_text("def add(a, b):\n    return a - b  # sic\n")
    result = replay(home, suite, home / "out")
    assert result.returncode == 2, result.stderr
    assert "divergence: task fix-add rep 0, call 1: messages[2].tool.result: expected '" in result.stderr
    # read_file shows the file's sha256 before its text: the hash is the first character that differs.
    assert "expected 'path: src/calc.py\\nsha256: " in result.stderr
    at = result.stderr.splitlines().index("  the file's hash differs; its lines (- recorded, + now):")
    assert result.stderr.splitlines()[at + 1 : at + 3] == [
        "  -    return a - b",
        "  +    return a - b  # sic",
    ]
    (record_,) = runs(home / "out")
    assert (record_.status, record_.reason) == (RunStatus.ERROR, "replay_divergence")
    assert record_.divergence is not None
    assert (record_.divergence.call_index, record_.divergence.field) == (1, "messages[2].tool.result")
    assert record_.divergence.changed == ("-    return a - b", "+    return a - b  # sic")
    markdown = (home / "out" / "report.md").read_text()
    assert "diverged: -    return a - b\ndiverged: +    return a - b  # sic\n" in markdown


def test_a_config_with_other_instructions_diverges_at_instructions_and_warns(home: Path) -> None:
    """ALISIO_CONFIG_HOME with different instructions: a config-hash warning, divergence at instructions, exit 2."""
    suite = make_suite(home)
    assert record(home, suite, FIX).returncode == 0
    (home / "config" / "config.toml").write_text('instructions = "Be brief."\n')
    result = replay(home, suite, home / "out")
    assert result.returncode == 2, result.stderr
    assert "warning: the configuration hash" in result.stderr and "fix-add" in result.stderr
    assert "call 0: instructions: expected 'You are alisio" in result.stderr
    assert "got 'Be brief.'" in result.stderr


def test_a_lower_turn_budget_leaves_recorded_calls_unmade(home: Path) -> None:
    """maxTurns lowered after recording: the run stops early and the calls it never made diverge at ``calls``."""
    suite = make_suite(home)
    assert record(home, suite, FIX).returncode == 0
    document = json.loads((suite / "suite.json").read_text())
    document["tasks"][0]["budget"]["maxTurns"] = 2
    (suite / "suite.json").write_text(json.dumps(document))
    result = replay(home, suite, home / "out")
    assert result.returncode == 2, result.stderr
    (record_,) = runs(home / "out")
    assert record_.divergence is not None
    assert (record_.divergence.call_index, record_.divergence.field) == (2, "calls")
    assert "2 calls made (1 recorded call was never made)" in result.stderr


def test_a_truncated_cassette_makes_an_extra_call(home: Path) -> None:
    """A cassette missing its last call: the harness's third call is an extra call, exit 2."""
    suite = make_suite(home)
    assert record(home, suite, FIX).returncode == 0
    cassette = suite / "cassettes" / "fix-add.jsonl"
    cassette.write_bytes(b"\n".join(cassette.read_bytes().splitlines()[:-1]) + b"\n")
    result = replay(home, suite, home / "out")
    assert result.returncode == 2, result.stderr
    assert "call 2: calls: expected '2 recorded calls', got 'an extra call #2" in result.stderr


def test_replay_normalize_hides_a_timestamp(home: Path) -> None:
    """A command printing the time replays cleanly with the timestamp rule, and diverges without it."""
    with_rule = make_suite(home / "a", process_task("fix-add", replayNormalize=[TIMESTAMP_RULE]))
    assert record(home, with_rule, STAMP_THEN_FIX).returncode == 0
    clean = replay(home, with_rule, home / "clean")
    assert clean.returncode == 0, clean.stderr
    without = make_suite(home / "b", process_task("fix-add"))
    assert record(home, without, STAMP_THEN_FIX).returncode == 0
    noisy = replay(home, without, home / "noisy")
    assert noisy.returncode == 2, noisy.stderr
    assert "call 1: messages[2].tool.result" in noisy.stderr


REDOS_RULE = {"pattern": r"(a+)+$", "replace": "<A>"}
MANY_A_THEN_FIX: dict[str, Any] = {
    "turns": [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "python3 -c \"print('a' * 5000 + '!')\""}}]},
        *FIX["turns"],
    ]
}


def test_a_catastrophic_normalize_pattern_records_and_replays_in_bounded_time(home: Path) -> None:
    """(a+)+$ over a tool result of 5000 'a' and a '!': Python's re backtracks for longer than the universe
    has existed; RE2 normalizes it at once, so record and replay both finish, and replay passes."""
    suite = make_suite(home, process_task("fix-add", replayNormalize=[REDOS_RULE]))
    recorded = record(home, suite, MANY_A_THEN_FIX)
    assert recorded.returncode == 0, recorded.stderr
    replayed = replay(home, suite, home / "out")
    assert replayed.returncode == 0, replayed.stderr
    assert [run.status for run in runs(home / "out")] == [RunStatus.PASS]


def test_a_task_without_a_cassette_is_refused_before_the_first_run(home: Path) -> None:
    """No cassette: exit 1 naming the missing file; nothing is run, no report directory."""
    suite = make_suite(home)
    result = replay(home, suite, home / "out")
    assert result.returncode == 1
    assert f"task fix-add: {suite / 'cassettes' / 'fix-add.jsonl'}: no such cassette" in result.stderr
    assert "Traceback" not in result.stderr and not (home / "out").exists()


def test_an_agent_cassette_given_to_eval_ci_says_what_it_is_and_how_to_replay_it(home: Path) -> None:
    """An external agent's cassette (agent-cassette/v1) where ci expects the built-in agent's: one line naming
    the file, what it is and the command that replays it (not msgspec's "Invalid enum value"); exit 1."""
    suite = make_suite(home)
    header = AgentCassetteHeader(
        format="agent-cassette/v1", suite_id="calc-suite", suite_version="1.0.0", task_id="fix-add",
        agent="mine", kind="command", api="openai-chat", model="m", provider="openai_compat",
    )  # fmt: skip
    cassettes = home / "agent-cassettes"
    cassettes.mkdir()
    (cassettes / "fix-add.jsonl").write_bytes(msgspec.json.encode(header) + b"\n")
    result = alisio(home, "eval", "ci", "--suite-dir", str(suite), "--yes", "--cassette-dir", str(cassettes))
    assert result.returncode == 1
    assert (
        f"alisio eval ci: calc-suite: task fix-add: {cassettes / 'fix-add.jsonl'}:1: an external agent's "
        "cassette (agent-cassette/v1, agent mine), not the built-in agent's cassette/v1: replay it with eval run "
        "--mode replay --agent mine\n"
    ) in result.stderr
    assert (
        "nothing was run: record them with alisio eval record, or run only the recorded tasks"
        in result.stderr
    )
    assert "Invalid enum value" not in result.stderr and "Traceback" not in result.stderr


def test_a_cassette_of_another_suite_version_is_refused_before_the_first_run(home: Path) -> None:
    """A cassette recorded under suiteVersion 1.0.0 does not replay a suite bumped to 1.1.0: exit 1 naming
    the file and both versions, nothing run, no report directory."""
    suite = make_suite(home, process_task("fix-add"))
    assert record(home, suite, FIX).returncode == 0
    document = json.loads((suite / "suite.json").read_text())
    (suite / "suite.json").write_text(json.dumps({**document, "suiteVersion": "1.1.0"}))
    result = replay(home, suite, home / "out")
    assert result.returncode == 1, result.stderr
    cassette = suite / "cassettes" / "fix-add.jsonl"
    assert f"task fix-add: {cassette}: recorded under suiteVersion 1.0.0, the suite is 1.1.0" in result.stderr
    assert "Traceback" not in result.stderr and not (home / "out").exists()


# --- refusals --------------------------------------------------------------------------------------------


def test_record_read_only_refuses_a_writing_task_before_the_first_run(home: Path) -> None:
    """record --read-only with a task that needs write: exit 1 naming the task and --read-only; nothing runs."""
    suite = make_suite(home)
    result = record(home, suite, FIX, "--read-only")
    assert result.returncode == 1, result.stderr
    assert "task fix-add" in result.stderr and "which --read-only denies" in result.stderr
    assert "recording" not in result.stderr and "Traceback" not in result.stderr
    assert not (suite / "cassettes").exists() and result.stdout == ""


@pytest.mark.parametrize(
    ("secret", "env", "kind"),
    [
        (FAKE_KEY, {}, "looks like an OpenAI key"),
        (
            "hunter2-correct-horse",
            {"DEPLOY_TOKEN": "hunter2-correct-horse"},
            "holds the value of DEPLOY_TOKEN",
        ),
    ],
)
def test_a_secret_in_the_prompt_refuses_the_cassette(
    home: Path, secret: str, env: dict[str, str], kind: str
) -> None:
    """A key shape or a credential's exact value in the prompt: exit 1 naming task and field, no value, no file."""
    suite = make_suite(home, task("fix-add", prompt=f"Fix add. Use {secret} if needed."))
    result = record(home, suite, FIX, env=env)
    assert result.returncode == 1
    assert f"refusing to write a cassette: task fix-add: calls[0].request.messages[0].content: {kind}" in (
        result.stderr
    )
    assert "no cassette was written" in result.stderr
    assert secret not in result.stderr and secret not in result.stdout
    assert not (suite / "cassettes").exists()


def test_an_oversized_cassette_is_refused(home: Path) -> None:
    """A 300 KB prompt makes a cassette over 256 KB: refused with the limit, nothing written, exit 1."""
    suite = make_suite(home, task("fix-add", prompt="Fix add. " + "x" * 300_000))
    result = record(home, suite, FIX)
    assert result.returncode == 1
    assert "over the 256.0 KB limit per cassette" in result.stderr
    assert not (suite / "cassettes").exists()


# --- eval ci ---------------------------------------------------------------------------------------------


def test_eval_ci_replays_the_bundled_cassettes(home: Path) -> None:
    """The checkout's cassettes all replay cleanly and pass: exit 0, suites without cassettes skipped."""
    result = alisio(home, "eval", "ci", "--out", str(home / "ci"), "--json")
    assert result.returncode == 0, result.stderr
    assert "long-context 1.0.0: skipped (no cassettes" in result.stderr
    assert "tool-sequences 1.0.0: 6 cassettes replayed: 6 pass, 0 diverged" in result.stderr
    assert "smoke-coding 1.2.0: 4 cassettes replayed: 4 pass, 0 diverged" in result.stderr
    for suite in ("tool-sequences", "smoke-coding"):
        assert (home / "ci" / suite / "report.json").exists() and (home / "ci" / suite / "report.md").exists()
    summary = json.loads(result.stdout)
    assert summary["exitCode"] == 0
    statuses = {s["suiteId"]: s["status"] for s in summary["suites"]}
    assert statuses["long-context"] == "skipped" and statuses["tool-sequences"] == "replayed"


def test_eval_ci_ignores_the_users_configuration(home: Path) -> None:
    """A config.toml with other instructions does not reach eval ci: it still exits 0."""
    (home / "config" / "config.toml").write_text('instructions = "Be brief."\n')
    result = alisio(home, "eval", "ci", "--out", str(home / "ci"))
    assert result.returncode == 0, result.stderr


def _ci_suites(home: Path) -> Path:
    """A directory with calc-suite (one recorded task) and quiet-suite (no cassettes)."""
    root = home / "suites"
    suite = make_suite(root)
    make_suite(root, suite_id="quiet-suite")
    assert record(home, suite, FIX).returncode == 0
    return root


def test_eval_ci_exit_codes(home: Path) -> None:
    """0 when clean; 2 when a fixture changed; 1 when a recorded task does not pass; 1 with nothing to replay."""
    root = _ci_suites(home)
    suite = root / "calc-suite"
    clean = alisio(home, "eval", "ci", "--suite-dir", str(root), "--yes")
    assert clean.returncode == 0, clean.stderr
    assert "quiet-suite 1.0.0: skipped (no cassettes" in clean.stderr
    calc = suite / "fixtures" / "calc" / "src" / "calc.py"
    original = calc.read_text()
    calc.write_text(original + "# changed\n")
    diverged = alisio(home, "eval", "ci", "--suite-dir", str(root), "--yes")
    assert diverged.returncode == 2, diverged.stderr
    assert "divergence: task fix-add, call 1: messages[2].tool.result" in diverged.stderr
    calc.write_text(original)
    assert record(home, suite, NOOP).returncode == 0
    failing = alisio(home, "eval", "ci", "--suite-dir", str(root), "--yes")
    assert failing.returncode == 1, failing.stderr
    assert "not passing: task fix-add: fail" in failing.stderr
    empty = alisio(home, "eval", "ci", "--suite-dir", str(root / "quiet-suite"), "--yes")
    assert empty.returncode == 1
    assert "nothing was replayed" in empty.stderr


def test_eval_ci_says_one_cassette_and_leaves_no_temporary_directory(home: Path) -> None:
    """One cassette reads "the 1 cassette"; without --out no alisio-eval-ci-* directory is left in the temp
    dir, whether the replay passed or nothing could be replayed, and the verdict says no report was kept."""
    root = _ci_suites(home)
    tmp = home / "ci-tmp"
    tmp.mkdir()
    clean = alisio(
        home, "eval", "ci", "--suite-dir", str(root / "calc-suite"), "--yes", env={"TMPDIR": str(tmp)}
    )
    assert clean.returncode == 0, clean.stderr
    assert list(tmp.iterdir()) == []
    assert clean.stderr.splitlines()[-1] == (
        "alisio eval ci: the 1 cassette replayed cleanly and passed (no report kept: --out DIR keeps them)"
    )
    assert "calc-suite 1.0.0: 1 cassette replayed: 1 pass, 0 diverged, 0 not passing\n" in clean.stderr
    (home / "config" / "config.toml").write_text("[agents.helper]\ninstructions = 'x'\n")
    agent = task("fix-add", agent="helper")
    suite = make_suite(home / "agent-suites", agent)
    assert record(home, suite, FIX).returncode == 0
    broken = alisio(
        home, "eval", "ci", "--suite-dir", str(suite), "--yes", "--json", env={"TMPDIR": str(tmp)}
    )
    assert broken.returncode == 1
    assert (
        "agent 'helper' is not a main agent of the configuration (define [agents.helper] in config.toml)"
    ) in broken.stderr
    assert broken.stderr.splitlines()[-1] == (
        "alisio eval ci: 1 problem: exit 1 (no report kept: --out DIR keeps them)"
    )
    assert json.loads(broken.stdout)["reports"] is None
    assert list(tmp.iterdir()) == []


def test_eval_ci_cassette_dir_needs_a_single_suite(home: Path) -> None:
    """--cassette-dir over a directory of two suites is a usage error (exit 1); over one suite it replays."""
    root = _ci_suites(home)
    both = alisio(home, "eval", "ci", "--suite-dir", str(root), "--cassette-dir", str(root), "--yes")
    assert both.returncode == 1 and "--cassette-dir needs a single suite" in both.stderr
    one = alisio(
        home, "eval", "ci", "--suite-dir", str(root / "calc-suite"), "--cassette-dir",
        str(root / "calc-suite" / "cassettes"), "--yes",
    )  # fmt: skip
    assert one.returncode == 0, one.stderr


def test_quick_start_replay_of_tool_sequences(home: Path) -> None:
    """The spec's quick start: eval run tool-sequences --mode replay with an empty config passes 6/6, exit 0."""
    result = alisio(
        home, "eval", "run", "tool-sequences", "--mode", "replay", "--allow-write", "--allow-process",
        "--out", str(home / "out"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert [r.status for r in runs(home / "out")] == [RunStatus.PASS] * 6


def test_the_old_record_bundled_address_names_the_new_one() -> None:
    """``python -m alisio.shell.replay.bundled`` (the earlier address) records nothing and says where to go."""
    result = subprocess.run(
        [sys.executable, "-m", "alisio.shell.replay.bundled", "--tasks", "x"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1
    assert "python -m alisio.shell.cli.record_bundled" in result.stderr


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (bwrap) for --sandbox bwrap")
def test_eval_ci_warns_once_per_suite_dir_suite_and_says_the_sandbox(home: Path) -> None:
    """``eval ci --suite-dir --yes`` warned twice per suite, the first time "not sandboxed" even under
    ``--sandbox bwrap``: now once, in the words of how the commands run."""
    suite = make_suite(home)
    assert record(home, suite, FIX).returncode == 0
    boxed = alisio(home, "eval", "ci", "--suite-dir", str(suite), "--yes", "--sandbox", "bwrap",
                   "--out", str(home / "b"))  # fmt: skip
    assert boxed.returncode == 0, boxed.stderr
    assert boxed.stderr.count("is not a bundled suite") == 1
    assert "run in the bwrap sandbox (a shared kernel, not a VM)" in boxed.stderr
    assert "not sandboxed" not in boxed.stderr
