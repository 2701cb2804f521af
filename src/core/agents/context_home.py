"""Where a context's ``home`` files land in an external agent's private run directory: ``home_path``.

Each preset gives its agent a private HOME (``<run>/home``) and XDG directories (``presets.XDG_DIRS``:
``~/.config`` is ``XDG_CONFIG_HOME``, ``<run>/xdg-config``, where OpenCode's ``~/.config/opencode/`` is), and
some move their own directory elsewhere, as their record's ``places.moved`` says: Claude Code's ``~/.claude``
is ``CLAUDE_CONFIG_DIR`` (``<run>/claude``), Codex's ``~/.codex`` is ``CODEX_HOME`` (``<run>/codex-home``). A
context names destinations as a user would under ``~`` (``.claude/skills/pdf/SKILL.md``, ``.codex/AGENTS.md``);
this maps them to where the agent looks.
"""

from __future__ import annotations

from alisio.core.agents.presets import PRESETS, XDG_DIRS

__all__ = ["home_path"]


def home_path(kind: str, path: str) -> str:
    """``path`` (relative to ``~``, normalised) as a path relative to the agent's run directory (``kind``: an
    agent's kind; one without a preset, a command agent, has only the private HOME and XDG directories)."""
    preset = PRESETS.get(kind)  # type: ignore[call-overload]
    moved = preset.places.moved if preset is not None else ()
    for prefix, there in (*moved, *((under, there) for _, under, there in XDG_DIRS)):
        if path == prefix or path.startswith(f"{prefix}/"):
            return f"{there}{path[len(prefix) :]}"
    return f"home/{path}"
