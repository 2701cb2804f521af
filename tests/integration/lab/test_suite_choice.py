"""Which suite `alisio eval run <suite>` picks when --suite-dir and the bundled suites share a name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.helpers import FIX, make_suite, read_runs, write_script
from tests.integration.inprocess import alisio, in_process_home

ALISIO = Path(sys.executable).with_name("alisio")


def test_an_invalid_suite_dir_suite_is_reported_not_replaced_by_the_bundled_one(tmp_path: Path) -> None:
    """An invalid --suite-dir suite whose suiteId is a bundled one gives its violations, never the bundled run."""
    suite = tmp_path / "my-suite"
    (suite / "fixtures" / "t").mkdir(parents=True)
    (suite / "suite.json").write_text(
        json.dumps(
            {
                "schemaVersion": 1,
                "suiteId": "example",
                "suiteVersion": "1.0",
                "description": "an invalid copy named like the bundled example",
                "tasks": [],
            }
        )
    )
    env = {**os.environ, "ALISIO_CONFIG_HOME": str(tmp_path / "c"), "ALISIO_DATA_HOME": str(tmp_path / "d")}
    result = subprocess.run(
        [
            str(ALISIO),
            "eval",
            "run",
            "example",
            "--suite-dir",
            str(suite),
            "--yes",
            "--k",
            "1",
            "--script",
            str(tmp_path / "none.json"),
            "--allow-write",
            "--allow-process",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "suiteVersion" in result.stderr and "not semver" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "d" / "eval").exists() or not any((tmp_path / "d" / "eval").iterdir())


def test_record_refuses_a_cassette_dir_it_cannot_create_before_running_anything(tmp_path: Path) -> None:
    """A --cassette-dir that cannot be created (here under /proc, where even root cannot write) is refused first."""
    env = {**os.environ, "ALISIO_CONFIG_HOME": str(tmp_path / "c"), "ALISIO_DATA_HOME": str(tmp_path / "d")}
    checkout = Path(__file__).resolve().parents[3]
    result = subprocess.run(
        [
            str(ALISIO),
            "eval",
            "record",
            "smoke-coding",
            "--tasks",
            "fix-add",
            "--script",
            str(checkout / "suites" / "smoke-coding" / "scripts"),
            "--allow-write",
            "--allow-process",
            "--cassette-dir",
            "/proc/alisio-nope/c",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "--cassette-dir /proc/alisio-nope/c" in result.stderr and "nothing was run" in result.stderr
    assert "[1/1]" not in result.stderr


def test_two_suites_of_one_suite_dir_with_one_suite_id_are_refused_not_picked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two directories of --suite-dir declaring the same suiteId: naming the id is refused in one line that
    names both, before anything runs; naming one by its directory runs that one."""
    home = in_process_home(tmp_path, monkeypatch, capsys)
    for name in ("a", "b"):
        make_suite(home / "suites", suite_id="calc-suite").rename(home / "suites" / name)
    script = write_script(home / "fix.json", FIX)
    run = ["eval", "run", "--suite-dir", str(home / "suites"), "--yes", "--allow-write", "--allow-process",
           "-k", "1", "--script", str(script)]  # fmt: skip
    ambiguous = alisio(home, *run, "calc-suite", "--out", str(home / "out"))
    assert ambiguous.returncode == 1
    assert ambiguous.stderr == (
        f"alisio eval run: suite 'calc-suite' is ambiguous: 2 suites in {home / 'suites'} declare suiteId "
        f"'calc-suite' ({home / 'suites' / 'a'}, {home / 'suites' / 'b'}); give --suite-dir the one to run\n"
    )
    assert not (home / "out").exists()
    chosen = alisio(home, *run, "b", "--out", str(home / "out"))
    assert chosen.returncode == 0, chosen.stderr
    assert [r.status.value for r in read_runs(home / "out")] == ["pass"]
