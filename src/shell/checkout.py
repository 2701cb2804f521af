"""The source checkout alisio runs from (an editable install), or ``None`` (an installed wheel).

A checkout is recognised by the shell's folder, ``src/shell``, next to the checkout's ``pyproject.toml``. The
bundled suites (``suites/``) and the pinned agent CLIs (``.agents/bin``, ``make agents``) live there.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["checkout_root"]


def checkout_root(module_file: Path | None = None) -> Path | None:
    """The checkout that holds ``module_file`` (a module of the shell; default this one), or ``None``."""
    here = (module_file or Path(__file__)).resolve()
    for folder in here.parents:
        if folder.name == "shell" and folder.parent.name == "src":
            root = folder.parent.parent
            return root if (root / "pyproject.toml").is_file() else None
    return None
