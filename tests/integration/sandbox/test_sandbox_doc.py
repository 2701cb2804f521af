"""docs/sandbox.md is true: every ``sh`` block runs from the checkout and exits 0; every ``$ ...`` line of a
``console`` block prints exactly the lines shown (stdout then stderr) and exits 1 (the refusal); the ``toml``
blocks are valid config.toml files."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "sandbox.md"
BIN = Path(sys.executable).parent
_FENCE = re.compile(r"^```(\S*)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def _blocks(language: str) -> list[str]:
    return [m.group(2) for m in _FENCE.finditer(DOC.read_text(encoding="utf-8")) if m.group(1) == language]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    env["ALISIO_CONFIG_HOME"] = str(tmp_path / "config")
    env["ALISIO_DATA_HOME"] = str(tmp_path / "data")
    (tmp_path / "config").mkdir(exist_ok=True)
    return env


@pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)
def test_every_sh_example_runs(tmp_path: Path) -> None:
    """Each ``sh`` block, run with ``bash -e -o pipefail`` from the checkout, exits 0."""
    blocks = _blocks("sh")
    assert len(blocks) == 3
    for block in blocks:
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", block],
            cwd=REPO, env=_env(tmp_path), capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, (block, done.stdout, done.stderr)


def test_the_refusal_prints_what_the_page_shows(tmp_path: Path) -> None:
    """The console example (no bwrap on PATH) prints the documented line and exits 1."""
    (console,) = _blocks("console")
    command, *expected = console.splitlines()
    assert command.startswith("$ PATH=/nonexistent alisio ")
    argv = command.removeprefix("$ PATH=/nonexistent alisio ").split()
    env = _env(tmp_path) | {"PATH": "/nonexistent"}
    done = subprocess.run(
        [str(BIN / "alisio"), *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert (done.stdout + done.stderr).splitlines() == expected


def test_the_toml_examples_are_valid_configurations(tmp_path: Path) -> None:
    """Each ``toml`` block, as config.toml, is a valid configuration with the sandbox it shows."""
    import tomllib

    from alisio.core.harness.config import parse_config

    for block in _blocks("toml"):
        config = parse_config(tomllib.loads(block), "config.toml").unwrap()
        assert str(config.lab.sandbox) == "bwrap"
