"""Where a context's ``home`` files land in an external agent's private run directory: ``home_path``.

Each preset gives its agent a private HOME (``<run>/home``) and XDG directories (``presets.XDG_DIRS``:
``~/.config`` is ``XDG_CONFIG_HOME``, ``<run>/xdg-config``, where OpenCode's ``~/.config/opencode/`` is), and
some move their own directory elsewhere, as their record's ``places.moved`` says: Claude Code's ``~/.claude``
is ``CLAUDE_CONFIG_DIR`` (``<run>/claude``), Codex's ``~/.codex`` is ``CODEX_HOME`` (``<run>/codex-home``). A
context names destinations as a user would under ``~`` (``.claude/skills/pdf/SKILL.md``, ``.codex/AGENTS.md``);
this maps them to where the agent looks (``user_path`` maps back), and ``instructions_text`` says where an
agent reads its instructions, from its record's ``places``.
"""

from __future__ import annotations

from alisio.core.agents.presets import PRESETS, XDG_DIRS

__all__ = ["home_path", "instructions_text", "user_path"]


def home_path(kind: str, path: str) -> str:
    """``path`` (relative to ``~``, normalised) as a path relative to the agent's run directory (``kind``: an
    agent's kind; one without a preset, a command agent, has only the private HOME and XDG directories)."""
    preset = PRESETS.get(kind)  # type: ignore[call-overload]
    moved = preset.places.moved if preset is not None else ()
    for prefix, there in (*moved, *((under, there) for _, under, there in XDG_DIRS)):
        if path == prefix or path.startswith(f"{prefix}/"):
            return f"{there}{path[len(prefix) :]}"
    return f"home/{path}"


def user_path(kind: str, path: str) -> str:
    """``path`` (relative to the agent's run directory) as a user names it under ``~``: ``home_path``'s
    inverse (``codex-home/AGENTS.md`` -> ``.codex/AGENTS.md``)."""
    preset = PRESETS.get(kind)  # type: ignore[call-overload]
    moved = preset.places.moved if preset is not None else ()
    for prefix, there in (*moved, *((under, there) for _, under, there in XDG_DIRS), ("", "home")):
        if path == there or path.startswith(f"{there}/"):
            return f"{prefix}{path[len(there) :]}".lstrip("/")
    return path


def instructions_text(kind: str) -> str:
    """Where an external agent of ``kind`` reads its instructions, in words (the refusal of a context's
    ``system`` names them), from its record's ``places``.

    >>> instructions_text("codex")
    'AGENTS.md in the workspace, or ~/.codex/AGENTS.md (home ".codex/AGENTS.md")'
    """
    preset = PRESETS.get(kind)  # type: ignore[call-overload]
    if preset is None:
        return "its own instruction files (put them in the workspace or its HOME)"
    places = preset.places
    if places.instructions is None or places.workspace_instructions is None:
        return (
            "files named on its command line only: put the text in a workspace file and name it in the prompt"
        )
    home = user_path(kind, places.instructions)
    return f'{places.workspace_instructions} in the workspace, or ~/{home} (home "{home}")'
