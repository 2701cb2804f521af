"""``make typecheck``: mypy over alisio, the tests and the benchmarks, each module under its import name.

mypy names a module by its path below a search folder, and alisio's three packages live in three folders
(pyproject.toml's ``package-dir``: ``alisio`` is src/alisio, ``alisio.core`` src/core, ``alisio.shell``
src/shell), a mapping mypy cannot read from the configuration nor from setuptools' editable import finder. So this
builds the tree mypy can read, ``build/typecheck/alisio`` (generated, outside src: src/alisio's files and
folder links to src/core and src/shell), runs mypy on it with pyproject.toml's configuration, and writes each path
of its output as the source's path. Arguments are passed to mypy.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / "build" / "typecheck"
PACKAGES = {
    "alisio": ROOT / "src" / "alisio",
    "alisio/core": ROOT / "src" / "core",
    "alisio/shell": ROOT / "src" / "shell",
}


def _link(link: Path, target: Path) -> None:
    if link.is_symlink() and link.readlink() == target:
        return
    if link.is_symlink() or link.is_file():
        link.unlink()
    link.symlink_to(target)


def build_tree() -> None:
    """build/typecheck/alisio: a link to each file of src/alisio, and core/ and shell/ linked to their folders."""
    package = TREE / "alisio"
    package.mkdir(parents=True, exist_ok=True)
    wanted = {path.name for path in PACKAGES["alisio"].iterdir() if path.is_file()}
    for stale in package.iterdir():
        if stale.name not in wanted | {"core", "shell"}:
            stale.unlink()
    for name in wanted:
        _link(package / name, PACKAGES["alisio"] / name)
    for name in ("core", "shell"):
        _link(package / name, PACKAGES[f"alisio/{name}"])


def main() -> int:
    build_tree()
    done = subprocess.run(
        [sys.executable, "-m", "mypy", *sys.argv[1:]], cwd=ROOT, capture_output=True, text=True, check=False
    )
    prefix = os.path.relpath(TREE / "alisio", ROOT) + "/"
    for stream, text in ((sys.stdout, done.stdout), (sys.stderr, done.stderr)):
        for sub in ("core", "shell"):
            text = text.replace(f"{prefix}{sub}/", f"src/{sub}/")
        stream.write(text.replace(prefix, "src/alisio/"))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
