"""What pyproject.toml cannot say statically: the packages under the mapped folders, and the manual in the wheel
(docs/architecture.md, "One copy of every module").

pyproject.toml maps ``alisio`` (a namespace package: src/alisio holds __main__.py) to src/alisio, ``alisio.core``
to src/core and ``alisio.shell`` to src/shell (``package-dir``); the packages are every package under those
folders, found here so a new sub-package needs no edit. The manual (README.md and docs/*.md, which ``alisio help TOPIC`` prints) lives at the top of the checkout
and is copied into the built package as ``alisio/README.md`` and ``alisio/docs/*.md``; an editable install reads
it from the checkout (``alisio.shell.cli.manual``).
"""

import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

ROOTS = {"alisio.core": "src/core", "alisio.shell": "src/shell"}


def _packages() -> list[str]:
    found = ["alisio"]
    for name, folder in ROOTS.items():
        found += [name, *(f"{name}.{sub}" for sub in find_packages(folder))]
    return found


class _BuildPy(build_py):
    """build_py into a clean ``alisio`` (a module moved or removed since the last build must not ship from the
    build folder's old copy), then the manual copied into it (not in editable mode)."""

    def run(self) -> None:
        if not self.editable_mode:
            shutil.rmtree(Path(self.build_lib, "alisio"), ignore_errors=True)
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib, "alisio")
        self.mkpath(str(target / "docs"))
        self.copy_file("README.md", str(target / "README.md"))
        for page in sorted(Path("docs").glob("*.md")):
            self.copy_file(str(page), str(target / "docs" / page.name))


setup(packages=_packages(), cmdclass={"build_py": _BuildPy})
