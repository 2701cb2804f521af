"""What names a run: the conditions that say who made a report's numbers, in one list every output reads.

A model's name does not say what ran: two runs of the same model through Codex and through Claude Code, or
through two scripts, are different measurements. ``NAMERS`` is the one list of the conditions that name a
run besides the suite, the provider and the model: the agent (its name, kind, version and settings
digest; ``alisio <version>`` for the built-in one), the ``--script`` digest, the injected provider faults
(``--faults``: the canonical spec) and the context (its label, its digest and what it adds:
``alisio.core.lab.reports.context``). Every output reads it
through ``run_naming``: the headline of ``eval run`` and ``eval variants``, ``eval runs``, ``eval show``,
report.md and report.html (a row each), the JUnit properties, the GitHub step summary, and ``eval compare``
and ``eval variants`` (``naming_differences``: "agent differs: A -> B", highlighted on the comparison page
as every differing condition is). A new condition is one more function in ``NAMERS`` (and its field in
``Conditions``); no output changes.

Rules this module keeps:

- A report written before the agent was recorded names it ``unknown (not recorded)``: it is read,
  compared and shown, never refused.
- A condition a run does not have (no script) is not shown in its report; in a comparison its side reads
  ``none`` (or ``not recorded`` where an older report could have had it), so a difference is always named.
- ``mode_text`` is the mode people read: ``scripted`` for a live run of the scripted provider (its
  statistics are a live run's), else the stored mode.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Final

from alisio.core.base import Frozen
from alisio.core.lab.reports.context import ContextCondition
from alisio.core.lab.reports.report import (
    DEFAULT_AGENT,
    MIXED_AGENTS,
    AgentCondition,
    AnswerSource,
    Conditions,
)

__all__ = [
    "NAMERS",
    "SCRIPTED",
    "UNKNOWN_AGENT",
    "NamedCondition",
    "agent_brief",
    "agent_text",
    "context_text",
    "mode_text",
    "naming_brief",
    "naming_differences",
    "run_naming",
    "script_digest",
]

SCRIPTED: Final = "scripted"
"""The provider id of ``--script`` runs, and the mode people read for them."""
UNKNOWN_AGENT: Final = "unknown (not recorded)"
"""The agent of a report written before reports recorded it."""
_DIGEST: Final = 16
"""Hex digits of a digest shown (the report.json keeps all 64)."""
_SHOWN_FILES: Final = 8
"""A context's files named in its condition's text (the rest counted)."""


class NamedCondition(Frozen, frozen=True, kw_only=True):
    """One condition that names a run, as every output shows it."""

    key: str
    """``agent``, ``script``: the JUnit property (``alisio.<key>``) and the ``eval runs --json`` key."""
    name: str
    """``Agent``, ``Script``: the row of the report's conditions."""
    value: str
    """The whole condition for people: what the report's row, the comparison and its warning show."""
    brief: str
    """A few words for one line (the headline, ``eval runs``, the step summary)."""
    present: bool = True
    """``False``: the run has no such condition (no script); ``value`` then says so for a comparison."""
    code: bool = False
    """``value`` is a digest, shown as code."""


def agent_text(agent: AgentCondition | None) -> str:
    """``alisio 0.4.0 (built-in)``, ``codex: codex-cli 0.171.0 (codex, settings 1a2b3c4d5e6f7a8b)``, or
    ``unknown (not recorded)`` for a report that predates it."""
    if agent is None:
        return UNKNOWN_AGENT
    if agent.kind == "builtin":
        builtin = f"alisio {agent.version} (built-in)"
        return builtin if agent.name == DEFAULT_AGENT else f"{agent.name}: {builtin}"
    if agent.kind == MIXED_AGENTS:
        return f"per task: {agent.name} ({agent.version})"
    settings = f", settings {agent.settings_hash[:_DIGEST]}" if agent.settings_hash else ""
    return f"{agent.name}: {agent.version} ({agent.kind}{settings})"


def agent_brief(agent: AgentCondition | None) -> str:
    """``alisio 0.4.0``, ``codex (codex-cli 0.171.0)``, ``reviewer (alisio 0.4.0)``, ``unknown``."""
    if agent is None:
        return "unknown"
    if agent.kind == "builtin":
        builtin = f"alisio {agent.version}"
        return builtin if agent.name == DEFAULT_AGENT else f"{agent.name} ({builtin})"
    if agent.kind == MIXED_AGENTS:
        return f"per task ({agent.name})"
    return f"{agent.name} ({agent.version})"


def _agent(c: Conditions) -> NamedCondition:
    return NamedCondition(key="agent", name="Agent", value=agent_text(c.agent), brief=agent_brief(c.agent))


def _script(c: Conditions) -> NamedCondition:
    if c.script_hash is None:
        absent = "not recorded" if c.provider == SCRIPTED else "none"
        return NamedCondition(key="script", name="Script", value=absent, brief="", present=False)
    brief = f"script {c.script_hash[:_DIGEST]}"
    return NamedCondition(key="script", name="Script", value=c.script_hash, brief=brief, code=True)


def _faults(c: Conditions) -> NamedCondition:
    if c.faults is None:
        return NamedCondition(key="faults", name="Faults", value="none", brief="", present=False)
    return NamedCondition(key="faults", name="Faults", value=c.faults, brief=f"faults {c.faults}", code=True)


def context_text(context: ContextCondition | None) -> str:
    """``agents-md (3f2a...: workspace AGENTS.md)``, or ``none``: the label, the digest and what it adds."""
    if context is None:
        return "none"
    parts = [f"{f.area} {f.path}" for f in context.files[:_SHOWN_FILES]]
    if len(context.files) > _SHOWN_FILES:
        parts.append(f"{len(context.files) - _SHOWN_FILES} more files")
    if context.system_sha256 is not None:
        parts.append(f"system text ({context.system_chars} chars)")
    parts += [f"mcp {name}" for name in context.mcp]
    return f"{context.label} ({context.digest[:_DIGEST]}: {', '.join(parts)})"


def _context(c: Conditions) -> NamedCondition:
    if c.context is None:
        return NamedCondition(key="context", name="Context", value="none", brief="", present=False)
    brief = f"context {c.context.label} {c.context.digest[:_DIGEST]}"
    return NamedCondition(key="context", name="Context", value=context_text(c.context), brief=brief)


NAMERS: Final[tuple[Callable[[Conditions], NamedCondition], ...]] = (_agent, _script, _faults, _context)
"""The conditions that name a run, in the order outputs show them: add one here (and its field in
``Conditions``) and every output shows it and every comparison names its difference."""


def run_naming(c: Conditions) -> tuple[NamedCondition, ...]:
    """Every naming condition of ``c``, present or not (outputs that list rows keep the present ones)."""
    return tuple(namer(c) for namer in NAMERS)


def naming_brief(c: Conditions) -> str:
    """The present naming conditions in a few words: ``codex (codex-cli 0.171.0)``, ``alisio 0.4.0, script
    1a2b3c4d5e6f7a8b``."""
    return ", ".join(named.brief for named in run_naming(c) if named.present)


def naming_differences(baseline: Conditions, candidate: Conditions) -> list[str]:
    """``agent differs: codex: codex-cli 0.171.0 (codex) -> claude-code: 2.1.197 (claude-code)``: one line per
    naming condition whose value differs between the two sides."""
    return [
        f"{old.key} differs: {old.value} -> {new.value}"
        for old, new in zip(run_naming(baseline), run_naming(candidate), strict=True)
        if old.value != new.value
    ]


def mode_text(c: Conditions) -> str:
    """The mode people read: ``scripted`` for a live run of the scripted provider, else ``live`` or
    ``replay``."""
    return SCRIPTED if c.mode is AnswerSource.LIVE and c.provider == SCRIPTED else str(c.mode)


def script_digest(scripts: Iterable[tuple[str, bytes]]) -> str:
    """The sha256 of ``--script``'s content: each (task id, or ``""`` for one file; its bytes) in order."""
    digest = hashlib.sha256()
    for task_id, data in scripts:
        digest.update(f"{task_id}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()
