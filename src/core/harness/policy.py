"""Which effects a run may carry out: the policy, the ceiling of grants, and one pure decision per tool call.

Every tool has an effect (``alisio.core.harness.events.Effect``). Before a tool runs, the agent asks ``decide`` and does what
the decision says: run it (``Allow``), ask the user (``Ask``; headless, that is an ``approval_denied``
incident), or refuse it with a tool error the model sees (``Deny``).

The modes (``MODE_EFFECTS`` holds what each one runs by itself):

- ``ask``: ``read`` runs; every other effect not in ``allow`` asks;
- ``auto``: ``read`` and ``write`` run (workspace edits are what the mode is for); ``process``, ``external``
  and ``analysis`` run only when in ``allow``, otherwise they are refused without asking;
- ``full``: every effect runs.

The rules, in the order ``decide`` applies them (the first that matches wins):

1. ``read`` is always allowed (reading the workspace is what every task needs);
2. ``read_only`` denies every other effect;
3. an effect outside ``granted`` is denied. ``granted`` is the ceiling: for the lab, what the
   ``--allow-*`` flags grant; for ``alisio run``, every effect (a user is present to ask);
4. an effect the mode runs by itself (``MODE_EFFECTS``), in ``policy.allow`` or in ``session_grants`` (the
   user said "always" earlier in the run) is allowed;
5. otherwise mode ``ask`` asks and mode ``auto`` denies.

So no combination ever allows an effect that was not granted (except ``read``), and only mode ``ask`` asks.
Before the first run, ``check_task_policy`` rejects a policy that *needs* an effect the runner did not grant
(``needed_effects``: its ``allow``, plus ``write`` for mode ``auto`` unless ``read_only``) and a mode ``full``
without ``--allow-suite-full``: the grants cap a policy, they never silently trim it.
A policy is not a sandbox: once ``process`` is allowed, a command runs with the user's privileges.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.harness.events import Effect

ALL_EFFECTS: Final[frozenset[Effect]] = frozenset(Effect)
"""Every effect: the ceiling of ``alisio run``, where a user is present."""

GRANT_FLAGS: Final[Mapping[Effect, str]] = MappingProxyType(
    {
        Effect.WRITE: "--allow-write",
        Effect.PROCESS: "--allow-process",
        Effect.EXTERNAL: "--allow-external",
        Effect.ANALYSIS: "--allow-analysis",
    }
)
"""The lab's command-line flag that grants each effect (``read`` needs none)."""


class PolicyMode(StrEnum):
    """What runs without asking, and how the other effects outside ``allow`` are handled."""

    ASK = "ask"
    """Run ``read``; ask before each other effect outside ``allow`` (headless: deny, ``approval_denied``)."""
    AUTO = "auto"
    """Run ``read``, ``write`` and the effects in ``allow``; refuse the others without asking."""
    FULL = "full"
    """Run every granted effect (the lab also needs ``--allow-suite-full``)."""


MODE_EFFECTS: Final[Mapping[PolicyMode, frozenset[Effect]]] = MappingProxyType(
    {
        PolicyMode.ASK: frozenset({Effect.READ}),
        PolicyMode.AUTO: frozenset({Effect.READ, Effect.WRITE}),
        PolicyMode.FULL: ALL_EFFECTS,
    }
)
"""The effects each mode runs by itself, before ``allow`` adds any (still capped by the grants)."""


class Policy(Frozen, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A task's (or a run's) policy, as written in suite.json: ``{"mode": "auto", "allow": ["process"]}``."""

    mode: PolicyMode = PolicyMode.AUTO
    allow: frozenset[Effect] = frozenset()
    """Effects that run without asking (``read`` always does)."""
    read_only: bool = False
    """Deny every effect but ``read``, whatever ``mode`` and ``allow`` say."""


class DenyReason(StrEnum):
    """Why a decision denied an effect (the agent picks the incident from it)."""

    READ_ONLY = "read_only"
    NOT_GRANTED = "not_granted"
    """Outside the ceiling (the ``--allow-*`` flags): an ``effect_refused`` incident, no approval asked."""
    NOT_ALLOWED = "not_allowed"
    """Mode ``auto``, and the effect is neither ``write`` nor in ``allow``: an ``effect_refused`` incident."""


class Allow(Frozen, frozen=True, kw_only=True, tag="allow", tag_field="decision"):
    """Run the tool."""


class Ask(Frozen, frozen=True, kw_only=True, tag="ask", tag_field="decision"):
    """Ask the user first; without a terminal, deny with an ``approval_denied`` incident."""


class Deny(Frozen, frozen=True, kw_only=True, tag="deny", tag_field="decision"):
    """Do not run the tool; tell the model why (``denial_message``)."""

    reason: DenyReason


Decision = Allow | Ask | Deny

_ALLOW: Final = Allow()
_ASK: Final = Ask()
_DENY_READ_ONLY: Final = Deny(reason=DenyReason.READ_ONLY)
_DENY_NOT_GRANTED: Final = Deny(reason=DenyReason.NOT_GRANTED)
_DENY_NOT_ALLOWED: Final = Deny(reason=DenyReason.NOT_ALLOWED)


def decide(
    effect: Effect,
    policy: Policy,
    granted: frozenset[Effect],
    session_grants: frozenset[Effect] = frozenset(),
) -> Decision:
    """Decide whether a tool with ``effect`` may run now.

    Args:
        effect: the effect of the tool the model called.
        policy: the task's or the run's policy.
        granted: the ceiling (``ALL_EFFECTS`` for ``alisio run``; the ``--allow-*`` flags for the lab).
        session_grants: effects the user approved for the rest of this run.

    Returns:
        ``Allow``, ``Ask`` (only in mode ``ask``) or ``Deny`` with its reason; see the module docstring.
    """
    if effect is Effect.READ:
        return _ALLOW
    if policy.read_only:
        return _DENY_READ_ONLY
    if effect not in granted:
        return _DENY_NOT_GRANTED
    if effect in MODE_EFFECTS[policy.mode] or effect in policy.allow or effect in session_grants:
        return _ALLOW
    if policy.mode is PolicyMode.ASK:
        return _ASK
    return _DENY_NOT_ALLOWED


def denial_message(effect: Effect, reason: DenyReason) -> str:
    """The tool result the model sees when its call was denied: what was refused and why."""
    match reason:
        case DenyReason.READ_ONLY:
            why = "this run is read-only"
        case DenyReason.NOT_GRANTED:
            why = f"the {effect} effect was not granted to this run"
        case DenyReason.NOT_ALLOWED:
            why = f"the policy does not allow the {effect} effect (mode auto)"
    return f"denied by policy: {why}. Do not retry this call; continue with the tools you are allowed to use."


class PolicyError(Frozen, frozen=True, kw_only=True, tag="policy_error"):
    """A task policy that asks for more than the person running the suite granted."""

    message: str
    effect: Effect | None = None
    """The effect that was not granted, or ``None`` for mode ``full`` without ``--allow-suite-full``."""
    wanted_by: str = ""
    """What in the policy needs ``effect``: ``policy.allow``, or ``policy.mode "auto"`` (its writes)."""

    def __str__(self) -> str:
        return self.message

    def under_read_only(self) -> str:
        """The message when the ceiling is ``read`` alone because the runner passed ``--read-only``."""
        if self.effect is None:
            return self.message
        return f"{_needs(self.wanted_by, self.effect)}, which --read-only denies"


def needed_effects(policy: Policy) -> frozenset[Effect]:
    """The effects a policy needs granted before its first run (``read`` needs no grant).

    Its ``allow`` (asked for explicitly), plus ``write`` for mode ``auto`` unless ``read_only`` (editing the
    workspace is what the mode is for). Mode ``full`` needs no effect in particular: it runs whatever was
    granted, and needs ``--allow-suite-full`` instead.
    """
    mode_needs = (
        frozenset() if policy.read_only or policy.mode is PolicyMode.FULL else MODE_EFFECTS[policy.mode]
    )
    return (policy.allow | mode_needs) - {Effect.READ}


def check_task_policy(
    policy: Policy, granted: frozenset[Effect], allow_suite_full: bool
) -> Result[None, PolicyError]:
    """Check a task's policy against what its runner granted, before the first run.

    A suite can only equal or restrict the permissions of whoever runs it: an effect the policy needs
    (``needed_effects``) that was not granted rejects the task (it is never silently trimmed), and mode
    ``full`` needs ``allow_suite_full``.

    Returns:
        ``Success(None)``, or ``Failure(PolicyError)`` naming the first missing effect in ``Effect`` order (so
        the message is deterministic), what in the policy needs it, and the flag that would grant it.
    """
    needed = needed_effects(policy)
    for effect in Effect:
        if effect in needed and effect not in granted:
            wanted_by = "policy.allow" if effect in policy.allow else f'policy.mode "{policy.mode}"'
            message = f"{_needs(wanted_by, effect)}, which was not granted (pass {GRANT_FLAGS[effect]})"
            return Failure(PolicyError(message=message, effect=effect, wanted_by=wanted_by))
    if policy.mode is PolicyMode.FULL and not allow_suite_full:
        return Failure(PolicyError(message='policy.mode "full" needs --allow-suite-full'))
    return Success(None)


def _needs(wanted_by: str, effect: Effect) -> str:
    if wanted_by == "policy.allow":
        return f"policy.allow asks for the {effect} effect"
    return f"{wanted_by} needs the {effect} effect (it edits the workspace without asking)"
