"""The layout rules of the source (docs/architecture.md), checked on the real import graph and files.

- no import cycle between modules, type-only imports included: a module never imports (directly or through
  others) a module that imports it back. The core's packages are also acyclic among themselves (the
  import-linter contract), and the shell's packages are floors that import only downwards (another one);
- no module over 600 lines;
- no private name (``_x``) imported from another module;
- no function over 60 lines;
- the shell's floors (import-linter's layers contract) name every package of the shell;
- docs/architecture.md's module map has a line for every module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

SRC = Path(__file__).resolve().parents[2] / "src"
MAX_LINES = 600


def _sources() -> list[Path]:
    return sorted(path for path in SRC.rglob("*.py") if path.parts[len(SRC.parts)] in {"core", "shell"})


def test_no_module_imports_a_module_that_imports_it_back() -> None:
    graph = grimp.build_graph(
        "alisio.core", "alisio.shell", include_external_packages=False, exclude_type_checking_imports=False
    )
    cycles = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            chain = graph.find_shortest_chain(importer=imported, imported=module)
            if chain is not None:
                cycles.add(" -> ".join((module, *chain)))
    assert not cycles, "\n".join(sorted(cycles))


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(path.relative_to(SRC)): n
        for path in _sources()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, long


def test_no_private_name_is_imported_across_modules() -> None:
    imported = [
        f"{path.relative_to(SRC)}:{node.lineno}: {alias.name} from {node.module}"
        for path in _sources()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("alisio")
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]
    assert not imported, imported


MAX_FUNCTION_LINES = 60


def test_no_function_is_over_60_lines() -> None:
    """A function that long does several things; split it (docs/architecture.md)."""
    long = [
        f"{path.relative_to(SRC)}:{node.lineno}: {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in _sources()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, long


def test_the_shell_floors_name_every_shell_package() -> None:
    """import-linter's layers contract lists every package of the shell, so none sits outside the floors."""
    import tomllib

    config = tomllib.loads((SRC.parent / "pyproject.toml").read_text())
    (floors,) = [
        contract["layers"]
        for contract in config["tool"]["importlinter"]["contracts"]
        if contract["type"] == "layers" and not contract.get("containers")
    ]
    packages = {f"alisio.shell.{path.parent.name}" for path in (SRC / "shell").glob("*/__init__.py")}
    assert packages == set(floors)


def _mapped_modules(text: str) -> set[str]:
    """The modules docs/architecture.md's module map names, as paths under the repository (``src/core/x.py``).

    The map is a tree: a folder is ``name/`` and its entries are indented two spaces more; a line names one
    module (``name.py``, then its description) or several (``a.py, b.py,``, on as many lines as they take).
    """
    start = text.index("```text\n", text.index("## The module map")) + len("```text\n")
    folders: list[str] = []
    mapped = set()
    for line in text[start : text.index("```\n", start)].splitlines():
        level = (len(line) - len(line.lstrip(" "))) // 2
        head = line.strip().split("  ")[0]
        names = [name.strip() for name in head.split(",") if name.strip()]
        if len(names) == 1 and names[0].endswith("/"):
            folders = [*folders[:level], names[0].rstrip("/")]
        mapped |= {"/".join([*folders[:level], name]) for name in names if name.endswith(".py")}
    return mapped


def test_the_module_map_has_a_line_for_every_module() -> None:
    """docs/architecture.md's module map names every module of src (``__init__.py`` aside) and no other."""
    mapped = _mapped_modules((SRC.parent / "docs" / "architecture.md").read_text())
    modules = {str(path.relative_to(SRC.parent)) for path in SRC.rglob("*.py") if path.name != "__init__.py"}
    assert sorted(modules - mapped) == [], "modules without a line in the map"
    assert sorted(mapped - modules) == [], "lines of the map for modules that do not exist"
