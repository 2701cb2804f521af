"""The layout rules of the source (docs/architecture.md), checked on the real import graph and files.

- no import cycle between modules, type-only imports included: a module never imports (directly or through
  others) a module that imports it back. The core's packages are also acyclic among themselves (the
  import-linter contract), and the shell's packages are floors that import only downwards (another one);
- no module over 600 lines;
- no private name (``_x``) imported from another module;
- no function over 60 lines.
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
