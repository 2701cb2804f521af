"""Every ``__all__`` in src is in step with its module and with what the other modules import from it.

- each name in a module's ``__all__`` exists in the module (defined or imported there);
- each public name another module of src, tests or bench imports from it (``from alisio.x import name``) is
  in its ``__all__``: ``__all__`` is the module's whole public surface, so a reader (and a star import) sees
  what the rest of the code relies on. Sub-modules imported from a package are not names of its ``__all__``.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["alisio", *parts])


def _sources() -> dict[str, Path]:
    return {
        _module_name(path): path
        for folder in ("core", "shell")
        for path in sorted((SRC / folder).rglob("*.py"))
    }


def _all_of(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "__all__"
        ):
            return list(ast.literal_eval(node.value)) if node.value is not None else None
    return None


def _defined(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _imports(paths: list[Path]) -> dict[str, set[tuple[str, str]]]:
    """module -> {(name, importer)} over every ``from alisio.x import name`` in ``paths``."""
    found: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("alisio."):
                for alias in node.names:
                    found[node.module].add((alias.name, str(path.relative_to(ROOT))))
    return found


def test_every_name_in_an_all_exists_in_its_module() -> None:
    missing = []
    for module, path in _sources().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        exported = _all_of(tree)
        if exported is not None:
            missing += [f"{module}.{name}" for name in exported if name not in _defined(tree)]
    assert missing == []


def test_every_public_name_imported_from_a_module_is_in_its_all() -> None:
    sources = _sources()
    users = [
        path
        for folder in ("src/core", "src/shell", "tests", "bench")
        for path in (ROOT / folder).rglob("*.py")
    ]
    imported = _imports(users)
    missing = set()
    for module, names in imported.items():
        path = sources.get(module)
        if path is None:
            continue
        exported = _all_of(ast.parse(path.read_text(encoding="utf-8")))
        if exported is None:
            continue
        for name, importer in names:
            if name == "*" or name.startswith("_") or f"{module}.{name}" in sources:
                continue
            if name not in exported:
                missing.add(f"{module}.{name} (imported by {importer})")
    assert sorted(missing) == []
