"""The distribution: one top-level import package, ``alisio``, with ``alisio.core`` and ``alisio.shell``.

The wheel is built for real (``pip wheel``) and imported from its own contents with site processing off, so
the checkout's editable install (which puts ``src`` on the path) cannot make the test pass by accident.
"""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _wheel(tmp_path: Path) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("alisio-*.whl")
    return wheel


def test_the_wheel_installs_alisio_core_and_shell_and_no_top_level_core(tmp_path: Path) -> None:
    """``import alisio.core.stats`` works from the wheel; ``import core`` and ``import shell`` do not."""
    wheel = _wheel(tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"alisio"}
    assert (
        "alisio/core/lab/stats.py" in names
        and "alisio/core/stats.py" in names
        and "alisio/shell/cli/main.py" in names
    )
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    path = f"{unpacked}:{sysconfig.get_paths()['purelib']}"  # the dependencies, without processing .pth files
    probe = (
        "import importlib.util, alisio.core.lab.stats as s; "
        "from alisio.core.stats import wilson_interval; "
        "assert wilson_interval(7, 10) == s.wilson_interval(7, 10); "
        "print(s.__file__); "
        "print(importlib.util.find_spec('core'), importlib.util.find_spec('shell'))"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", probe],
        env={"PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith(str(unpacked))
    assert second == "None None"


def test_no_source_imports_a_top_level_core_or_shell() -> None:
    """Every import in src, tests, bench and examples names alisio.core / alisio.shell, never core / shell."""
    pattern = re.compile(r"^\s*(from|import)\s+(core|shell)\b", re.M)
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("src/core", "src/shell", "tests", "bench", "examples")
        for path in (ROOT / folder).rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_library_statistics_answer_as_the_labs() -> None:
    """``alisio.core.stats`` offers the statistics docs/compare-and-statistics.md shows, with the lab's answers."""
    from alisio.core.stats import pass_at_k_estimate, pass_hat_k_estimate, suite_rate, wilson_interval

    interval = wilson_interval(3, 5)
    assert interval is not None and (round(interval.low, 6), round(interval.high, 6)) == (0.230724, 0.882379)
    assert wilson_interval(0, 0) is None
    assert round(pass_at_k_estimate(10, 5, 5) or 0, 9) == 0.996031746
    assert round(pass_hat_k_estimate(10, 5, 5) or 0, 9) == 0.003968254
    rate = suite_rate([3, 5, 0, 2], [5, 5, 5, 5])
    assert rate is not None and rate.mean == 0.5


def test_a_wheel_user_can_write_and_run_a_first_suite(tmp_path: Path) -> None:
    """From the built wheel (no checkout, no bundled suites): eval init DIR writes a starter suite, and the
    command it prints runs it: fix-add passes, fix-mul fails, with the check's reason."""
    import os
    import shlex

    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(_wheel(tmp_path / "dist")).extractall(unpacked)
    env = {
        "PYTHONPATH": f"{unpacked}:{sysconfig.get_paths()['purelib']}",
        "ALISIO_CONFIG_HOME": str(tmp_path / "config"),
        "ALISIO_DATA_HOME": str(tmp_path / "data"),
        "PATH": os.environ["PATH"],
    }
    (tmp_path / "config").mkdir()
    entry = "import sys; from alisio.shell.cli.main import main; sys.argv[0] = 'alisio'; main()"

    def alisio(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-S", "-c", entry, *args], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip

    made = alisio("eval", "init", "my-suite")
    assert made.returncode == 0, made.stderr
    assert made.stderr.startswith("wrote a starter suite in my-suite (2 tasks: fix-add, fix-mul)\n")
    (command,) = [line.strip() for line in made.stderr.splitlines() if "--script" in line]
    words = shlex.split(command)
    assert words[:3] == ["alisio", "eval", "run"]
    ran = alisio(*words[1:], "--yes")
    assert ran.returncode == 0, ran.stderr
    rows = {line.split()[0]: line.split()[1] for line in ran.stdout.splitlines()[1:]}
    assert rows == {"fix-add": "3/3", "fix-mul": "0/3"}
    assert "mul(2, 3) = 4, expected 6" in ran.stderr
    assert alisio("eval", "validate", "my-suite").returncode == 0
    again = alisio("eval", "init", "my-suite")
    assert (again.returncode, again.stderr) == (
        1,
        "alisio eval init: my-suite: already exists and is not an empty directory: name a new one\n",
    )


def test_make_demo_installs_the_runtime_only_and_make_test_everything(tmp_path: Path) -> None:
    """On a fresh machine make demo installs alisio without the test tools and Ray; make test installs both."""
    import shutil

    if shutil.which("make") is None:
        pytest.skip("make is not installed")

    def planned(target: str) -> list[str]:
        done = subprocess.run(["make", "-n", target, f"VENV={tmp_path / 'venv'}"], cwd=ROOT, capture_output=True,
                              text=True, timeout=60, check=True)  # fmt: skip
        return [
            line for line in done.stdout.splitlines() if "pip install" in line and "--upgrade pip" not in line
        ]

    assert [line.split()[-1] for line in planned("demo")] == ["."]
    assert [line.split()[-1] for line in planned("test")] == ["'.[dev,ray]'"]
