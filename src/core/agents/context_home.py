"""Where a context's ``home`` files land in an external agent's private run directory: ``home_path``.

Each preset gives its agent a private HOME (``<run>/home``) and XDG directories, and some move their own
directory elsewhere: Claude Code's ``~/.claude`` is ``CLAUDE_CONFIG_DIR`` (``<run>/claude``), Codex's
``~/.codex`` is ``CODEX_HOME`` (``<run>/codex-home``), and ``~/.config`` is ``XDG_CONFIG_HOME``
(``<run>/xdg-config``: OpenCode's ``~/.config/opencode/``). A context names destinations as a user would
under ``~`` (``.claude/skills/pdf/SKILL.md``, ``.codex/AGENTS.md``); this maps them to where the agent looks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["HOME_DIRS", "home_path"]

HOME_DIRS: Final[Mapping[str, Mapping[str, str]]] = {
    "claude-code": {".claude": "claude"},
    "codex": {".codex": "codex-home"},
}
"""Per agent kind: a directory under ``~`` -> the run directory's directory that replaces it."""
_XDG: Final[Mapping[str, str]] = {
    ".config": "xdg-config",
    ".local/share": "xdg-data",
    ".local/state": "xdg-state",
    ".cache": "xdg-cache",
}


def home_path(kind: str, path: str) -> str:
    """``path`` (relative to ``~``, normalised) as a path relative to the agent's run directory."""
    for prefix, moved in (*HOME_DIRS.get(kind, {}).items(), *_XDG.items()):
        if path == prefix or path.startswith(f"{prefix}/"):
            return f"{moved}{path[len(prefix) :]}"
    return f"home/{path}"
