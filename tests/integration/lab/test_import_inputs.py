"""An import's source is read as every other input is: regular files of bounded size. Through the installed
``alisio eval import``: a HumanEval file that is ``/dev/zero`` (a ``MemoryError`` traceback under a
memory limit, the OOM killer without), a FIFO (hung), a ``.gz`` that decompresses past the cap (a gzip bomb),
and an Exercism exercise whose config or test file is a FIFO (hung) are each one line naming the file and why,
exit 1, nothing written."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from alisio.shell.lab.importers import MAX_SOURCE_BYTES
from tests.integration.helpers import ALISIO, command_env

FIFO = "it is a FIFO (named pipe), not a regular file"


def _import(tmp_path: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    done = subprocess.run(
        [str(ALISIO), "eval", "import", "--yes", *map(str, args), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, env=command_env(tmp_path), stdin=subprocess.DEVNULL, timeout=60,
        check=False,
    )  # fmt: skip
    assert time.monotonic() - started < 30
    assert done.returncode == 1, done.stderr
    assert not (tmp_path / "out").exists() and "Traceback" not in done.stderr
    return done


@pytest.mark.parametrize("kind", ["device", "fifo", "bomb"])
def test_a_humaneval_source_that_is_a_device_a_fifo_or_a_gzip_bomb_is_refused(
    tmp_path: Path, kind: str
) -> None:
    source = tmp_path / ("HumanEval.jsonl.gz" if kind == "bomb" else "HumanEval.jsonl")
    if kind == "device":
        source = Path("/dev/zero")  # named itself: a link to it is refused as leaving the source
        why = "it is a character device, not a regular file"
    elif kind == "fifo":
        os.mkfifo(source)
        why = FIFO
    else:
        source.write_bytes(gzip.compress(b"\n" * (MAX_SOURCE_BYTES + 1), compresslevel=1))
        why = f"it decompresses to more than {MAX_SOURCE_BYTES >> 20} MiB, the most an import reads"
    done = _import(tmp_path, "humaneval", source)
    assert done.stderr == f"alisio eval import: {source}: cannot read: {why}\n"


def _exercise(track: Path) -> Path:
    directory = track / "exercises" / "practice" / "add"
    (directory / ".meta").mkdir(parents=True)
    (directory / ".docs").mkdir()
    (directory / ".docs" / "instructions.md").write_text("# Instructions\n\nAdd.\n")
    (directory / "add.py").write_text("def add(a, b):\n    pass\n")
    (directory / ".meta" / "example.py").write_text("def add(a, b):\n    return a + b\n")
    files = {"solution": ["add.py"], "test": ["add_test.py"], "example": [".meta/example.py"]}
    (directory / ".meta" / "config.json").write_text(json.dumps({"files": files}))
    return directory


def test_an_exercism_file_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    track = tmp_path / "python"
    directory = _exercise(track)
    os.mkfifo(directory / "add_test.py")
    done = _import(tmp_path, "exercism", track)
    config = directory / ".meta" / "config.json"
    assert done.stderr == (
        f"alisio eval import: {directory / 'add_test.py'}: named in {config} (files.test) but cannot be read: "
        f"{FIFO}\n"
    )
    config.unlink()
    os.mkfifo(config)
    again = _import(tmp_path, "exercism", track)
    assert again.stderr == f"alisio eval import: {config}: cannot read: {FIFO}\n"
